"""Figures and plots of the demo from simulator records (pure numpy/matplotlib, no ROS).

A record is what ``mujoco_sim`` writes with ``record_file``: per physics step the simulated
time, joint positions, velocities, applied efforts and the age of the applied command.
"""
import os

import numpy as np

MILLI = 1e3


def load_record(path):
    """Return a simulator record (.npz) as a dict of arrays and numbers."""
    with np.load(path) as data:
        record = {key: data[key] for key in data.files}
    for key in ('joint_names', 'command_joints'):
        record[key] = [str(name) for name in record[key]]
    for key in ('steps', 'commands_received', 'commands_while_running', 'commands_rejected',
                'lock_step_timeouts', 'sync_timeouts', 'overruns', 'clamp_count'):
        if key in record:
            record[key] = int(record[key])
    return record


def unit_labels(joint_types):
    """Return the milli-unit per joint: 'mrad' for rotary joints, 'mm' for prismatic ones."""
    return ['mm' if kind == 'prismatic' else 'mrad' for kind in joint_types]


def max_drift(positions):
    """Return per joint the largest distance from the first position."""
    positions = np.asarray(positions, dtype=float)
    return np.abs(positions - positions[0]).max(axis=0)


def tracking_errors(times, positions, profile):
    """Return (errors, rms, max) of ``profile(t) - q(t)`` per joint over the recorded steps."""
    reference, _, _ = profile.sample(times)
    errors = reference - np.asarray(positions, dtype=float)
    rms = np.sqrt(np.mean(errors ** 2, axis=0))
    return errors, rms, np.abs(errors).max(axis=0)


def command_figures(record):
    """Return command rate (per simulated and per wall second) and command ages of a run."""
    sim_time = float(record['time'][-1] - record['time'][0])
    wall_time = float(record['wall_time'][-1] - record['wall_time'][0])
    ages = np.asarray(record['command_age'][1:], dtype=float)
    finite = ages[np.isfinite(ages)]
    step = float(np.median(np.diff(record['time']))) if len(ages) else 0.0
    commands = record.get('commands_while_running', record.get('commands_received', 0))
    return {
        'simulated_s': sim_time,
        'wall_s': wall_time,
        'real_time_factor': sim_time / wall_time if wall_time > 0 else float('inf'),
        'commands': commands,
        'command_rate_hz': commands / sim_time if sim_time else 0.0,
        # the record is taken after each step, so a command answering the previous joint
        # state is one step old
        'steps_with_latest_command': float(np.mean(ages <= 1.5 * step)) if len(ages) else 0.0,
        'command_age_p99_ms': float(np.percentile(finite, 99) * MILLI) if finite.size else None,
        'command_age_max_ms': float(finite.max() * MILLI) if finite.size else None,
        'lock_step_timeouts': record.get('lock_step_timeouts', 0),
        'sync_timeouts': record.get('sync_timeouts', 0),
        'overruns': record.get('overruns', 0),
    }


def _number(text):
    try:
        return float(text)
    except (TypeError, ValueError):
        return np.nan


def diagnostics_figures(samples):
    """Summarize the rnea node's /diagnostics samples (dicts of key -> text value).

    Samples from before the node computed anything (output rate 0) are left out; returns the
    median output rate and mean compute time and the largest compute time.
    """
    keys = ('output_rate_hz', 'compute_mean_us', 'compute_max_us')
    table = np.array([[_number(sample.get(key)) for key in keys] for sample in samples]
                     ).reshape(-1, len(keys))
    running = table[table[:, 0] > 0]

    def pick(column, reduce):
        values = running[:, column]
        values = values[np.isfinite(values)]
        return float(reduce(values)) if values.size else None
    return {
        'samples': len(samples),
        'output_rate_hz': pick(0, np.median),
        'compute_mean_us': pick(1, np.median),
        'compute_max_us': pick(2, np.max),
    }


def format_table(header, rows):
    """Return a plain-text table with aligned columns."""
    table = [header] + [[str(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    lines = ['  '.join(cell.rjust(width) if i else cell.ljust(width)
                       for i, (cell, width) in enumerate(zip(row, widths))) for row in table]
    lines.insert(1, '  '.join('-' * width for width in widths))
    return '\n'.join(lines)


def _figure_grid(count):
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    columns = 3 if count > 4 else 2 if count > 1 else 1
    rows = int(np.ceil(count / columns))
    figure, axes = pyplot.subplots(rows, columns, figsize=(4.2 * columns, 2.6 * rows),
                                   sharex=True, squeeze=False)
    for axis in axes.flat[count:]:
        axis.set_visible(False)
    return pyplot, figure, axes.flat


def _finish(pyplot, figure, axes, path, title, xlabel='simulated time (s)'):
    for axis in list(axes)[-3:]:
        axis.set_xlabel(xlabel, fontsize=8)
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return path


def plot_drift(path, records, names):
    """Write the deviation from the start pose per joint: nominal vs identified vs zero torque."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot
    figure, axes = pyplot.subplots(1, 3, figsize=(15, 4))
    panels = (('nominal_gravity', 'gravity compensation, NOMINAL URDF (mrad / mm)'),
              ('identified_gravity', 'gravity compensation, IDENTIFIED model (mrad / mm)'),
              ('zero_torque', 'zero torque: the arm falls (mrad / mm)'))
    for axis, (label, title) in zip(axes, panels):
        record = records[label]
        for index, name in enumerate(names):
            axis.plot(record['time'], (record['position'][:, index] -
                                       record['position'][0, index]) * MILLI,
                      linewidth=1.0, label=name)
        axis.set_title(title, fontsize=9)
        axis.set_xlabel('simulated time (s)')
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=6, loc='best')
    figure.suptitle('Drift from the start pose (MuJoCo robot with model error)')
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    pyplot.close(figure)
    return path


def plot_errors(path, errors, names, units):
    """Write tracking errors per joint for each model: ``errors`` = {label: (times, E)}."""
    pyplot, figure, axes = _figure_grid(len(names))
    for index, (axis, name) in enumerate(zip(axes, names)):
        for label, (times, values) in errors.items():
            axis.plot(times, values[:, index] * MILLI, linewidth=0.9, label=label)
        axis.set_title(name, fontsize=9)
        axis.set_ylabel('error ({})'.format(units[index]), fontsize=8)
        axis.tick_params(labelsize=7)
        axis.grid(alpha=0.3)
    axes[0].legend(fontsize=7, loc='best')
    return _finish(pyplot, figure, axes, path,
                   'Computed-torque tracking error: nominal URDF vs identified model')


def plot_effort_validation(path, predictions, units, names):
    """Write measured vs predicted efforts on validation data: {label: (t, E, P, order)}."""
    pyplot, figure, axes = _figure_grid(len(names))
    for index, (axis, name) in enumerate(zip(axes, names)):
        measured_drawn = False
        for label, (times, measured, predicted, order) in predictions.items():
            if name not in order:
                continue
            column = order.index(name)
            if not measured_drawn:
                axis.plot(times, measured[:, column], 'k', linewidth=1.6, label='measured')
                measured_drawn = True
            axis.plot(times, predicted[:, column], linewidth=0.9,
                      label='predicted, ' + label)
        axis.set_title(name, fontsize=9)
        axis.set_ylabel('N' if units[index] == 'mm' else 'N m', fontsize=8)
        axis.tick_params(labelsize=7)
    axes[0].legend(fontsize=7, loc='best')
    return _finish(pyplot, figure, axes, path,
                   'Validation data: measured efforts vs predicted by each model')


def output_path(folder, name):
    """Return ``folder/name``, creating the folder."""
    os.makedirs(folder, exist_ok=True)
    return os.path.join(folder, name)
