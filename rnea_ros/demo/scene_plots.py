"""Plots of the push and grasp scenes (matplotlib, Agg; no ROS)."""
import textwrap

import numpy as np
from rnea_ros.demo import analysis
from rnea_ros.demo.scenes import wrench_in_link

WINDOW_BEFORE_S = 0.3
WINDOW_AFTER_S = 0.7


def _pyplot():
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    return pyplot


def plot_push_torques(path, scene, records, estimates, figures):
    """Write applied vs estimated external joint torques around the push, one plot per joint.

    Every joint of the record is shown, those the push does not load too (the panda's joint 7
    and fingers: what the observer reads there is its error).  ``estimates``: {label: estimate
    dict} (identified, nominal); the push window is shaded, detections of the identified model
    drawn as a vertical line.
    """
    record = records['push_identified']
    names = list(record['joint_names'])
    time = np.asarray(record['time'])
    truth = np.asarray(record['external_torque'])
    columns = np.arange(len(names))
    pyplot, figure, axes = analysis._figure_grid(len(columns))
    start, end = scene.start, scene.start + scene.duration
    shown = (time >= start - WINDOW_BEFORE_S) & (time <= end + WINDOW_AFTER_S)
    delay = figures['push_identified'].get('detection_delay_s')
    for axis, column in zip(axes, columns):
        axis.axvspan(start, end, color='0.9')
        axis.plot(time[shown], truth[shown, column], 'k', linewidth=1.8, label='applied J^T f')
        for label, estimate in estimates.items():
            if estimate.get('torques') is None:
                continue
            times = np.asarray(estimate['times'])
            keep = (times >= start - WINDOW_BEFORE_S) & (times <= end + WINDOW_AFTER_S)
            index = list(estimate.get('joints', names)).index(names[column])
            axis.plot(times[keep], np.asarray(estimate['torques'])[keep, index],
                      '-' if 'identified' in label else '--', linewidth=1.0,
                      label='observer, ' + label.replace('push_', '') + ' model')
        if delay is not None:
            axis.axvline(start + delay, color='r', linewidth=0.8, label='collision detected')
        axis.set_title(names[column], fontsize=9)
        axis.set_ylabel('N m', fontsize=8)
        axis.tick_params(labelsize=7)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=6, loc='best')
    title = 'Push: {:.0f} N on {} ({:g} s), external joint torques'.format(
        scene.magnitude, scene.link, scene.duration)
    return analysis._finish(pyplot, figure, axes, path, title)


def plot_push_wrench(path, scene, record, estimate):
    """Write the applied vs estimated wrench at the pushed link (its frame) around the push."""
    pyplot = _pyplot()
    time = np.asarray(record['time'])
    start, end = scene.start, scene.start + scene.duration
    shown = (time >= start - WINDOW_BEFORE_S) & (time <= end + WINDOW_AFTER_S)
    force = np.asarray(record['external_force'])[shown]
    rotation = np.asarray(record['external_rotation'])[shown]
    pushed = np.all(np.isfinite(rotation), axis=1)
    applied = np.zeros((shown.sum(), 6))
    applied[pushed] = wrench_in_link(force[pushed], scene.point, rotation[pushed])
    times = np.asarray(estimate['wrench_times'])
    keep = (times >= start - WINDOW_BEFORE_S) & (times <= end + WINDOW_AFTER_S)
    wrench = np.asarray(estimate['wrench'])[keep]
    figure, axes = pyplot.subplots(1, 2, figsize=(11, 3.6))
    labels = ('x', 'y', 'z')
    for side, (axis, unit) in enumerate(zip(axes, ('force (N)', 'moment (N m)'))):
        axis.axvspan(start, end, color='0.9')
        for k in range(3):
            line, = axis.plot(time[shown], applied[:, 3 * side + k], linewidth=1.8,
                              label='applied ' + labels[k])
            axis.plot(times[keep], wrench[:, 3 * side + k], '--', color=line.get_color(),
                      linewidth=1.0, label='estimated ' + labels[k])
        axis.set_ylabel(unit)
        axis.set_xlabel('simulated time (s)')
        axis.grid(alpha=0.3)
        axis.legend(fontsize=6, ncol=2)
    figure.suptitle('Push: wrench at {} (link frame), applied vs observer'.format(scene.link))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return path


def plot_push_reaction(path, scene, record, figures, columns):
    """Write joint speeds and displacement around the push of the reaction run."""
    pyplot = _pyplot()
    time = np.asarray(record['time'])
    start, end = scene.start, scene.start + scene.duration
    shown = (time >= start - WINDOW_BEFORE_S) & (time <= end + WINDOW_AFTER_S)
    names = list(record['joint_names'])
    velocity = np.asarray(record['velocity'])[shown][:, columns]
    position = np.asarray(record['position'])[shown][:, columns]
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(11, 3.6))
    for k, column in enumerate(columns):
        left.plot(time[shown], velocity[:, k], linewidth=1.0, label=names[column])
        right.plot(time[shown], (position[:, k] - position[0, k]) * analysis.MILLI,
                   linewidth=1.0)
    delay = figures.get('detection_delay_s')
    for axis, unit in ((left, 'joint velocity (rad/s)'), (right, 'from the pose at the plot '
                                                          'start (mrad)')):
        axis.axvspan(start, end, color='0.9')
        if delay is not None:
            axis.axvline(start + delay, color='r', linewidth=0.8)
        axis.set_ylabel(unit, fontsize=8)
        axis.set_xlabel('simulated time (s)')
        axis.grid(alpha=0.3)
    left.legend(fontsize=6, ncol=2)
    figure.suptitle('Push during tracking, collision_reaction {}: detected (red), the arm is '
                    'held'.format(scene.reaction))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return path


def plot_grasp(path, scenario, records, figures):
    """Write the worst-joint drift of the three gravity-compensation runs and the estimate."""
    pyplot = _pyplot()
    figure, (left, right) = pyplot.subplots(1, 2, figsize=(12, 4),
                                            gridspec_kw={'width_ratios': [3, 2]})
    revolute = np.array([joint.type != 'prismatic' for joint in scenario.joints])
    runs = (('identified_gravity', 'no payload'),
            ('grasp_unknown', 'payload appears, not estimated'),
            ('grasp_committed', 'payload estimated and committed'))
    for label, text in runs:
        if label not in records:
            continue
        record = records[label]
        position = np.asarray(record['position'])[:, revolute]
        drift = np.abs(position - position[0]).max(axis=1)
        left.semilogy(record['time'], np.maximum(drift * analysis.MILLI, 1e-4), label=text)
    left.set_xlabel('simulated time (s)')
    left.set_ylabel('worst joint drift (mrad)')
    left.set_title('gravity compensation, identified model', fontsize=9)
    left.grid(alpha=0.3, which='both')
    left.legend(fontsize=7)
    right.axis('off')
    truth = figures['truth']
    lines = ['payload on {}'.format(figures['link']),
             'truth: {:.3f} kg, COM {} mm'.format(
                 truth['mass_kg'], ', '.join('{:.0f}'.format(1e3 * v) for v in truth['com_m']))]
    if 'estimate' in figures:
        estimate = figures['estimate']
        lines += ['estimate: {:.3f} kg, COM {} mm'.format(
                      estimate['mass_kg'],
                      ', '.join('{:.0f}'.format(1e3 * v) for v in estimate['com_m'])),
                  'mass error {:.2f} %, COM error {:.1f} mm'.format(
                      100 * figures['mass_relative_error'], 1e3 * figures['com_error_m'])]
    else:
        lines.append('no estimate: {}'.format(figures.get('message')))
    if 'drift_ratio_committed' not in figures and figures.get('message'):
        lines += textwrap.wrap('not committed: ' + figures['message'], 48)
    for key, text in (('drift_ratio_unknown', 'drift, payload unknown'),
                      ('drift_ratio_committed', 'drift, payload committed')):
        if key in figures:
            lines.append('{}: {:.2f}x the no-payload drift'.format(text, figures[key]))
    right.text(0.0, 0.95, '\n'.join(lines), va='top', fontsize=9, family='monospace',
               transform=right.transAxes)
    figure.suptitle('Grasp: a payload of unknown mass and COM on the last link')
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return path
