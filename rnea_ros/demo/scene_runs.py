"""The push and grasp scenes as demo phases: processes, the node's topics and services, figures.

:func:`run_scenes` runs, after identification (every run a :class:`Phase` of real processes):

- ``push_identified``: computed-torque tracking of a faster sinusoid with the identified model
  and the node's momentum observer on (collision reaction off: the estimate is judged while
  the arm keeps tracking); the simulator pushes the last link mid-run; the demo records
  ``~/external_torques``, ``~/external_wrench`` and ``~/collision``;
- ``push_nominal``: the same with the nominal URDF: its false alarms;
- ``push_reaction``: a short run with the identified model and collision_reaction ``hold``;
- ``grasp_unknown``: gravity compensation (identified) while a payload appears;
- ``grasp_estimate``: tracking a slow sinusoid of wider swing (:attr:`GraspScene.amplitude`),
  the wrist out of phase (:meth:`GraspScene.frequencies`), with the payload on; the demo
  calls ``~/estimate_payload`` and commits the estimate with ``~/set_payload``, then reads the
  node's ``payload_*`` back;
- ``grasp_committed``: gravity compensation with the committed payload.

:func:`scene_summary` turns the records into figures (:mod:`rnea_ros.demo.scenes`).
"""
import os
import time

import numpy as np
from rnea_ros.demo import analysis, scenes
from rnea_ros.demo.processes import Phase
from rnea_ros.sim.sim_launch import reference_amplitudes

NODE = '/rnea'
OBSERVER_TOPICS = (NODE + '/external_torques', NODE + '/external_wrench', NODE + '/collision')
PAYLOAD_PARAMETERS = ('payload_link', 'payload_mass', 'payload_com', 'payload_inertia')


def observer_parameters(scene, reaction, thresholds=None):
    """Return the rnea node parameters that turn the momentum observer on for ``scene``.

    The same gains and collision settings as the offline library run
    (:func:`scenes.observe_offline`); efforts 'held', as the simulator reports them.
    ``thresholds``: {'moving': [...], 'reversal': [...]} (:func:`story.tune_thresholds`):
    thresholds gated by velocity reversals; None: :data:`scenes.COLLISION_THRESHOLD` on every
    joint.
    """
    gated = {'collision_thresholds': [float(v) for v in thresholds['moving']],
             'collision_reversal_thresholds': [float(v) for v in thresholds['reversal']]} \
        if thresholds else {'collision_thresholds': [scenes.COLLISION_THRESHOLD]}
    return dict({'observer_enabled': True, 'observer_gains': [scenes.OBSERVER_GAIN],
                 'observer_effort_sampling': 'held',
                 'collision_hysteresis': scenes.COLLISION_HYSTERESIS,
                 'collision_min_duration': scenes.COLLISION_MIN_DURATION,
                 'collision_reaction': reaction, 'external_wrench_frame': scene.link}, **gated)


def run_scenes(run, scenario, last_link, truth, identified, gravity_duration, log=print,
               thresholds=None):
    """Run the scene phases with ``run(phase)``; return {'push', 'grasp', label: Phase}.

    ``thresholds``: the collision thresholds of the push scenes (:func:`observer_parameters`),
    the same for the identified and the nominal model.
    """
    push, grasp = scenes.default_scenes(last_link)
    results = {'push': push, 'grasp': grasp, 'thresholds': thresholds}
    reference = {'frequency': [push.frequency]}
    pushed = dict(truth, **push.sim_parameters())
    log('scene push: {:.0f} N on {} at {:g} s for {:g} s during tracking at {:g} Hz'.format(
        push.magnitude, push.link, push.start, push.duration, push.frequency))
    results['push_identified'] = run(Phase(
        'push_identified', 'computed_torque', push.run_s, sim=pushed,
        rnea=dict(identified, **observer_parameters(push, push.reaction, thresholds)),
        reference=reference, topics=OBSERVER_TOPICS))
    results['push_nominal'] = run(Phase(
        'push_nominal', 'computed_torque', push.run_s, sim=pushed,
        rnea=observer_parameters(push, 'off', thresholds), reference=reference,
        topics=OBSERVER_TOPICS))
    short = push.reaction_scene('hold')
    results['push_reaction'] = run(Phase(
        'push_reaction', 'computed_torque', short.run_s, sim=dict(truth, **short.sim_parameters()),
        rnea=dict(identified, **observer_parameters(short, short.reaction, thresholds)),
        reference=reference, topics=OBSERVER_TOPICS))
    results['reaction'] = short
    log('scene grasp: {:g} kg at {} m on {}'.format(grasp.mass, list(grasp.com), grasp.link))
    results['grasp_unknown'] = run(Phase(
        'grasp_unknown', 'gravity_compensation', gravity_duration,
        sim=dict(truth, **grasp.sim_parameters()), rnea=identified))
    carried = dict(truth, **grasp.sim_parameters(appear_s=0.0))
    estimate = run(Phase(
        'grasp_estimate', 'computed_torque', grasp.estimate_s, sim=carried,
        rnea=dict(identified, **payload_estimation_parameters(grasp)),
        reference={'frequency': grasp.frequencies(scenario.joints),
                   'amplitude': reference_amplitudes(scenario.joints, scenario.pose,
                                                     grasp.amplitude).tolist()},
        during=lambda monitor, simulator: estimate_payload(monitor, grasp, simulator, log)))
    results['grasp_estimate'] = estimate
    committed = (estimate.result or {}).get('committed')
    if committed:
        results['grasp_committed'] = run(Phase(
            'grasp_committed', 'gravity_compensation', gravity_duration, sim=carried,
            rnea=dict(identified, **committed)))
    else:
        log('grasp: no payload estimate was committed; the committed run is skipped')
    return results


def payload_estimation_parameters(scene):
    """Return the rnea node parameters of its payload estimation for ``scene`` (motion mode)."""
    return {'payload_estimation.link': scene.link, 'payload_estimation.mode': 'motion',
            'payload_estimation.duration': float(scene.motion_s),
            'payload_estimation.timeout': 1800.0}


def estimate_payload(monitor, scene, simulator=None, log=print, timeout=1800.0):
    """Ask the node for a payload estimate on ``scene.link``, commit it; return what happened.

    ``~/estimate_payload`` (std_srvs/SetBool, data true) starts it; the demo follows
    ``~/payload_estimation`` (diagnostic_msgs/DiagnosticStatus) until it succeeds or is
    refused, commits an accepted estimate with ``~/set_payload`` (no parameters) and reads the
    node's ``payload_*`` parameters back. Returns {'estimate': {mass, com, ...} or None,
    'committed': payload_* parameters or None, 'message': text}.
    """
    status_topic = NODE + '/payload_estimation'
    monitor.record_topics([status_topic], timeout=5.0)
    response = monitor.call(NODE + '/estimate_payload', 'std_srvs/srv/SetBool', {'data': True})
    if response is None:
        monitor.stop_recording(settle=0.0)
        return {'estimate': None, 'committed': None,
                'message': 'the rnea node offers no {}/estimate_payload service'.format(NODE)}
    if not response.success:
        monitor.stop_recording(settle=0.0)
        return {'estimate': None, 'committed': None,
                'message': 'estimate_payload refused: ' + response.message}
    log('  ' + response.message)
    deadline = time.monotonic() + timeout
    final = None
    while time.monotonic() < deadline and final is None:
        time.sleep(0.2)
        for message in list(monitor.recorded.get(status_topic, [])):
            values = status_values(message)
            if values.get('state') in ('succeeded', 'refused', 'cancelled'):
                final = dict(values, message=message['fields'].get('message', ''))
        if simulator is not None and simulator.poll() is not None and final is None:
            time.sleep(2.0)
            simulator = None      # one last look after the simulator stopped
            deadline = min(deadline, time.monotonic() + 3.0)
    monitor.stop_recording(settle=0.0)
    if final is None:
        return {'estimate': None, 'committed': None,
                'message': 'the payload estimation did not finish'}
    estimate = parse_estimate(final)
    if final['state'] != 'succeeded':
        return {'estimate': estimate, 'committed': None,
                'message': '{}: {}'.format(final['state'], final['message'])}
    log('  ' + final['message'])
    commit = monitor.call(NODE + '/set_payload',
                          'rcl_interfaces/srv/SetParametersAtomically', {'parameters': []})
    if commit is None or not commit.result.successful:
        return {'estimate': estimate, 'committed': None, 'message': 'commit failed: {}'.format(
            'no answer' if commit is None else commit.result.reason)}
    committed = monitor.get_parameters(NODE, PAYLOAD_PARAMETERS)
    return {'estimate': estimate, 'committed': committed, 'message': final['message']}


def status_values(message):
    """Return the key/value pairs of a flattened DiagnosticStatus message as a dict."""
    fields = message.get('fields', {})
    return {item['key']: item['value'] for item in fields.get('values', [])}


def parse_estimate(values):
    """Return {mass, com, mass_sigma, com_sigma, ...} from the estimation status values."""
    def numbers(text):
        return [float(v) for v in text.strip('[]').split(',') if v.strip()]
    if 'mass' not in values:
        return None
    estimate = {'mass': float(values['mass']), 'com': numbers(values.get('com', '[]')),
                'source': 'node (~/estimate_payload)'}
    for key in ('mass_sigma', 'residual_rms', 'fit_rms'):
        if key in values:
            estimate[key] = float(values[key])
    for key in ('com_sigma', 'inertia', 'inertia_sigma'):
        if key in values:
            estimate[key] = numbers(values[key])
    for key in ('point_mass', 'inertia_note', 'reason', 'ok'):
        if key in values:
            estimate[key] = values[key]
    return estimate


def _stamped_after(messages, start):
    return [m for m in messages if m.get('stamp', np.inf) > start + 1e-9]


def estimate_from_topics(recorded, joint_names, start=0.0):
    """Return the observer estimate from recorded node topics (see :func:`scenes.push_figures`).

    Missing topics leave their keys out; ``source`` says 'node' when external torques came.
    Messages stamped at or before ``start`` (the simulator's first time) are left out: they
    answer the states the simulator republishes while it holds the arm still before the run
    (stamp 0).  Those states carry no efforts (nothing is applied), so the node's observer is
    suspended then and raises nothing; it used to read the frozen arm's gravity load as a push,
    and a collision raised before the run latched the reaction of the scene.
    """
    estimate = {'source': None, 'events': [], 'clears': [], 'joints': list(joint_names)}
    torques = _stamped_after(recorded.get(NODE + '/external_torques') or [], start)
    if torques:
        estimate['source'] = 'node'
        estimate['times'] = np.array([m['stamp'] for m in torques])
        estimate['torques'] = np.array([
            [dict(zip(m['name'], m['effort'])).get(name, np.nan) for name in joint_names]
            for m in torques])
    wrenches = _stamped_after(recorded.get(NODE + '/external_wrench') or [], start)
    if wrenches:
        estimate['wrench_times'] = np.array([m['stamp'] for m in wrenches])
        estimate['wrench'] = np.array([m['wrench'] for m in wrenches])
    collisions = recorded.get(NODE + '/collision') or []
    estimate['events'] = [t for t in collision_onsets(collisions) if t > start + 1e-9]
    estimate['clears'] = [t for t in collision_onsets(collisions, 'clear') if t > start + 1e-9]
    return estimate


def collision_onsets(messages, kind='collision'):
    """Return the times (s) of collision events (``kind`` 'clear': their ends) on ``~/collision``.

    A DiagnosticStatus event (values ``event`` = collision or clear, ``stamp`` = the joint
    state's time) or the rising edge of a std_msgs/Bool with a stamp (no clears).
    """
    onsets, active = [], False
    for message in messages:
        if 'fields' in message:
            values = status_values(message)
            if values.get('event') == kind and 'stamp' in values:
                onsets.append(float(values['stamp']))
            continue
        if kind != 'collision':
            continue
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


def save_estimate(path, estimate):
    """Write an observer estimate (node or library) as .npz next to the simulator records."""
    arrays = {key: np.asarray(value) for key, value in estimate.items()
              if key in ('times', 'torques', 'joints', 'events', 'clears', 'wrench_times',
                         'wrench')}
    np.savez(path, source=str(estimate.get('source')), **arrays)


def scene_summary(scenario, records, results, summary, nominal_model, identified_model,
                  folder=None):
    """Return the scenes' figures and verdicts (JSON-friendly); estimates kept in results."""
    out = {}
    push = results.get('push')
    joints = list(identified_model.joint_names)
    models = {'push_identified': identified_model, 'push_nominal': nominal_model,
              'push_reaction': identified_model}
    scene_of = {'push_identified': push, 'push_nominal': push,
                'push_reaction': results.get('reaction')}
    revolute = [joint.name for joint in scenario.joints if joint.type != 'prismatic']
    for label in ('push_identified', 'push_nominal', 'push_reaction'):
        if label not in records:
            continue
        scene, record = scene_of[label], records[label]
        estimate = estimate_from_topics(results[label].recorded, joints, record['time'][0])
        thresholds = results.get('thresholds')
        if estimate['source'] is None:
            window = (scene.start - 0.5, scene.start + scene.duration + 1.0)
            estimate = scenes.observe_offline(
                record, models[label], scene.link, window,
                **({'thresholds': thresholds['moving'],
                    'reversal_thresholds': thresholds['reversal']} if thresholds else {}))
        results[label].estimate = estimate
        out[label] = scenes.push_figures(scene, record, estimate, joints, revolute)
        if thresholds:
            out[label]['threshold'] = {'moving': thresholds['moving'],
                                       'reversal': thresholds['reversal']}
        if folder:
            save_estimate(os.path.join(folder, 'records', label + '_observer.npz'), estimate)
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
    """Write push_torques.png, push_wrench.png, push_reaction.png, grasp.png; return paths."""
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
    if 'push_reaction' in figures:
        columns = [k for k, joint in enumerate(scenario.joints) if joint.type != 'prismatic']
        paths['push_reaction'] = scene_plots.plot_push_reaction(
            analysis.output_path(folder, 'push_reaction.png'), results['reaction'],
            records['push_reaction'], figures['push_reaction'], columns)
    if 'grasp' in figures:
        paths['grasp'] = scene_plots.plot_grasp(
            analysis.output_path(folder, 'grasp.png'), scenario, records, figures['grasp'])
    return paths
