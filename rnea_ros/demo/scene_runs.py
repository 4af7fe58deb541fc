"""The push and grasp scenes as demo phases: processes, the node's topics and services, figures.

:func:`run_scenes` runs, after identification (every run a :class:`Phase` of real processes):

- ``push_identified``: computed-torque tracking of a faster sinusoid with the identified model
  and the node's momentum observer on (reaction :attr:`PushScene.reaction`); the simulator
  pushes the last link mid-run; the demo records ``~/external_torques``, ``~/external_wrench``
  and ``~/collision``;
- ``push_nominal``: the same with the nominal URDF, reaction off: its false alarms;
- ``grasp_unknown``: gravity compensation (identified) while a payload appears;
- ``grasp_estimate``: tracking with the payload on; the demo calls ``~/estimate_payload`` and
  commits the estimate with ``~/set_payload``, then reads the node's ``payload_*`` back;
- ``grasp_committed``: gravity compensation with the committed payload.

:func:`scene_summary` turns the records into figures (:mod:`rnea_ros.demo.scenes`).
"""
import dataclasses

import numpy as np
from rnea_ros.demo import analysis, scenes
from rnea_ros.demo.processes import Phase

NODE = '/rnea'
OBSERVER_TOPICS = (NODE + '/external_torques', NODE + '/external_wrench', NODE + '/collision')
PAYLOAD_PARAMETERS = ('payload_link', 'payload_mass', 'payload_com', 'payload_inertia')


def observer_parameters(scene, reaction):
    """Return the rnea node parameters that turn the momentum observer on for ``scene``."""
    return {'observer': True, 'external_wrench_frame': scene.link,
            'collision_reaction': reaction}


def run_scenes(run, scenario, last_link, truth, identified, gravity_duration, log=print):
    """Run the scene phases with ``run(phase)``; return {'push', 'grasp', label: Phase}."""
    push, grasp = scenes.default_scenes(last_link)
    results = {'push': push, 'grasp': grasp}
    reference = {'frequency': [push.frequency]}
    pushed = dict(truth, **push.sim_parameters())
    log('scene push: {:.0f} N on {} at {:g} s for {:g} s during tracking at {:g} Hz'.format(
        push.magnitude, push.link, push.start, push.duration, push.frequency))
    results['push_identified'] = run(Phase(
        'push_identified', 'computed_torque', push.run_s, sim=pushed,
        rnea=dict(identified, **observer_parameters(push, push.reaction)),
        reference=reference, topics=OBSERVER_TOPICS))
    results['push_nominal'] = run(Phase(
        'push_nominal', 'computed_torque', push.run_s, sim=pushed,
        rnea=observer_parameters(push, 'off'), reference=reference, topics=OBSERVER_TOPICS))
    log('scene grasp: {:g} kg at {} m on {}'.format(grasp.mass, list(grasp.com), grasp.link))
    results['grasp_unknown'] = run(Phase(
        'grasp_unknown', 'gravity_compensation', gravity_duration,
        sim=dict(truth, **grasp.sim_parameters()), rnea=identified))
    carried = dict(truth, **grasp.sim_parameters(appear_s=0.0))
    estimate = run(Phase(
        'grasp_estimate', 'computed_torque', grasp.estimate_s, sim=carried, rnea=identified,
        reference={'frequency': [grasp.frequency]},
        during=lambda monitor: estimate_payload(monitor, grasp, log)))
    results['grasp_estimate'] = estimate
    committed = (estimate.result or {}).get('committed')
    if committed:
        results['grasp_committed'] = run(Phase(
            'grasp_committed', 'gravity_compensation', gravity_duration, sim=carried,
            rnea=dict(identified, **committed)))
    else:
        log('grasp: no payload estimate was committed; the committed run is skipped')
    return results


def estimate_payload(monitor, scene, log=print):
    """Ask the node for a payload estimate on ``scene.link``, commit it; return what happened.

    Returns {'estimate': {mass, com, ...} or None, 'committed': node payload_* parameters or
    None, 'message': text}.
    """
    return {'estimate': None, 'committed': None,
            'message': 'the rnea node offers no {}/estimate_payload service'.format(NODE)}


def estimate_from_topics(recorded, joint_names):
    """Return the observer estimate from recorded node topics (see :func:`scenes.push_figures`).

    Missing topics leave their keys out; ``source`` says 'node' when external torques came.
    """
    estimate = {'source': None, 'events': [], 'joints': list(joint_names)}
    torques = recorded.get(NODE + '/external_torques') or []
    if torques:
        estimate['source'] = 'node'
        estimate['times'] = np.array([m['stamp'] for m in torques])
        estimate['torques'] = np.array([
            [dict(zip(m['name'], m['effort'])).get(name, np.nan) for name in joint_names]
            for m in torques])
    wrenches = recorded.get(NODE + '/external_wrench') or []
    if wrenches:
        estimate['wrench_times'] = np.array([m['stamp'] for m in wrenches])
        estimate['wrench'] = np.array([m['wrench'] for m in wrenches])
    estimate['events'] = collision_onsets(recorded.get(NODE + '/collision') or [])
    return estimate


def collision_onsets(messages):
    """Return the onset times (s) of collision events from ``~/collision`` messages."""
    onsets, active = [], False
    for message in messages:
        flag = message.get('data')
        if flag is None:
            flag = True
        stamp = message.get('stamp')
        if flag and not active and stamp is not None:
            onsets.append(stamp)
        active = bool(flag) and 'data' in message
    return onsets


def _worst_drift(record, scenario):
    drift = analysis.max_drift(record['position'])
    revolute = np.array([joint.type != 'prismatic' for joint in scenario.joints])
    return float(drift[revolute].max() if revolute.any() else drift.max())


def scene_summary(scenario, records, results, summary, nominal_model, identified_model):
    """Return the scenes' figures and verdicts (JSON-friendly); estimates kept in results."""
    out = {}
    push = results.get('push')
    joints = list(identified_model.joint_names)
    for label in ('push_identified', 'push_nominal'):
        if label not in records:
            continue
        estimate = estimate_from_topics(results[label].recorded, joints)
        results[label].estimate = estimate
        scene = push if label == 'push_identified' else dataclasses.replace(push, reaction='off')
        out[label] = scenes.push_figures(scene, records[label], estimate, joints)
    if 'push_identified' in out:
        out['push_identified']['verdict'] = scenes.push_verdict(out['push_identified'])
    grasp = results.get('grasp')
    if grasp is not None and 'grasp_unknown' in records:
        drifts = {'no_payload': summary['identified']['max_drift_worst_rad'],
                  'payload_unknown': _worst_drift(records['grasp_unknown'], scenario)}
        if 'grasp_committed' in records:
            drifts['payload_committed'] = _worst_drift(records['grasp_committed'], scenario)
        result = results['grasp_estimate'].result or {}
        figures = scenes.grasp_figures(grasp, result.get('estimate'), drifts)
        figures['message'] = result.get('message')
        figures['verdict'] = scenes.grasp_verdict(figures)
        out['grasp'] = figures
    return out


def write_plots(folder, scenario, records, results, figures):
    """Write push_torques.png, push_wrench.png and grasp_drift.png; return their paths."""
    from rnea_ros.demo import scene_plots
    paths = {}
    if 'push_identified' in figures:
        paths['push_torques'] = scene_plots.plot_push_torques(
            analysis.output_path(folder, 'push_torques.png'), results['push'], records,
            {label: getattr(results[label], 'estimate', {}) for label in
             ('push_identified', 'push_nominal') if label in results}, figures)
        if 'wrench' in figures['push_identified']:
            paths['push_wrench'] = scene_plots.plot_push_wrench(
                analysis.output_path(folder, 'push_wrench.png'), results['push'],
                records['push_identified'], results['push_identified'].estimate)
    if 'grasp' in figures:
        paths['grasp'] = scene_plots.plot_grasp(
            analysis.output_path(folder, 'grasp.png'), scenario, records, figures['grasp'])
    return paths
