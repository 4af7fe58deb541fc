"""The demo's figures, verdict, printed before/after table and plots (no ROS)."""
import numpy as np
from rnea_ros.demo import analysis
from rnea_ros.demo import story

TARGET_FACTOR = 10.0        # identified vs nominal: drift and tracking RMS at least 10x smaller
CONTROLLED = ('nominal_gravity', 'nominal_tracking', 'excitation', 'identified_gravity',
              'identified_tracking')
# Free-running figures mean something only when the simulator kept real time and applied fresh
# commands; lock-step ones unless the simulator had to step without its command too often.
MIN_REAL_TIME_FACTOR = 0.9
MAX_COMMAND_AGE_P99_MS = 2.0
MAX_LOCK_STEP_MISSES = 0.001    # fraction of steps
MAX_FACTOR = 1e6                # reported when the identified figure is 0


def _worst(values, revolute):
    values = np.asarray(values, dtype=float)
    return float(values[revolute].max()) if revolute.any() else float(values.max())


def summarize(scenario, records, diagnostics, lock_step):
    """Return the demo's figures as a JSON-friendly dict (with the verdict)."""
    revolute = np.array([joint.type != 'prismatic' for joint in scenario.joints])
    summary = {
        'robot': scenario.urdf_file, 'joints': scenario.joint_names,
        'joint_types': [joint.type for joint in scenario.joints],
        'start_pose': scenario.pose.tolist(), 'lock_step': bool(lock_step),
        'reference': {'profile': 'sinusoid', 'amplitude': scenario.amplitudes.tolist(),
                      'frequency_hz': scenario.frequency, 'kp': scenario.kp,
                      'kd': scenario.kd},
        'zero_torque': {'max_deviation': analysis.max_drift(
            records['zero_torque']['position']).tolist()},
    }
    for model in ('nominal', 'identified'):
        drift = analysis.max_drift(records[model + '_gravity']['position'])
        _, rms, worst = analysis.tracking_errors(records[model + '_tracking']['time'],
                                                 records[model + '_tracking']['position'],
                                                 scenario.profile())
        summary[model] = {
            'max_drift': drift.tolist(), 'max_drift_worst_rad': _worst(drift, revolute),
            'rms_error': rms.tolist(), 'max_error': worst.tolist(),
            'rms_error_worst_rad': _worst(rms, revolute)}
    summary['runs'] = {label: {'commands': analysis.command_figures(records[label]),
                               'node': diagnostics[label]}
                       for label in CONTROLLED if label in records}
    summary['verdict'] = verdict(summary)
    return summary


def _factor(before, after):
    """Return before / after, at most MAX_FACTOR (after may be 0)."""
    return float(min(before / after, MAX_FACTOR)) if after > 0 else MAX_FACTOR


def verdict(summary):
    """Return the improvement factors, whether they meet the target and whether they count."""
    nominal, identified = summary['nominal'], summary['identified']
    factors = {
        'gravity_drift': _factor(nominal['max_drift_worst_rad'],
                                 identified['max_drift_worst_rad']),
        'tracking_rms': _factor(nominal['rms_error_worst_rad'],
                                identified['rms_error_worst_rad'])}
    reasons = []
    for label, run in summary['runs'].items():
        commands = run['commands']
        if summary['lock_step']:
            steps = max(commands['simulated_s'] * 1000.0, 1.0)
            misses = commands['lock_step_timeouts'] + commands['sync_timeouts']
            if misses > MAX_LOCK_STEP_MISSES * steps:
                reasons.append('{}: {} lock-step waits timed out'.format(label, misses))
            continue
        if commands['real_time_factor'] < MIN_REAL_TIME_FACTOR:
            reasons.append('{}: real-time factor {:.2f} < {}'.format(
                label, commands['real_time_factor'], MIN_REAL_TIME_FACTOR))
        age = commands['command_age_p99_ms']
        if age is None or age > MAX_COMMAND_AGE_P99_MS:
            reasons.append('{}: command age p99 {} ms > {} ms'.format(
                label, 'n/a' if age is None else '{:.1f}'.format(age), MAX_COMMAND_AGE_P99_MS))
    return {'factors': factors, 'target_factor': TARGET_FACTOR,
            'met': all(f >= TARGET_FACTOR for f in factors.values()),
            'meaningful': not reasons, 'reasons': reasons}


def validation_figures(record, nominal_model, identified_model):
    """Return the effort residual RMS per joint of both models on the validation record."""
    figures = {}
    for label, model in (('nominal', nominal_model), ('identified', identified_model)):
        _, measured, predicted, names = story.effort_prediction(record, model)
        figures[label] = dict(zip(names, story.residual_rms(measured, predicted).tolist()))
        figures['effort_rms'] = dict(zip(names, np.sqrt(np.mean(measured ** 2,
                                                                axis=0)).tolist()))
    return figures


def format_summary(summary):
    """Return the printed report: the before/after table, per-joint figures and the verdict."""
    units = analysis.unit_labels(summary['joint_types'])
    nominal, identified = summary['nominal'], summary['identified']
    factors = summary['verdict']['factors']
    lines = ['Before/after (worst revolute joint; lock-step: {}):'.format(summary['lock_step'])]
    rows = [['gravity compensation: max drift over {:g} s (mrad)'.format(
                summary['gravity_duration_s']),
             '{:.3g}'.format(1e3 * nominal['max_drift_worst_rad']),
             '{:.3g}'.format(1e3 * identified['max_drift_worst_rad']),
             '{:.3g}x'.format(factors['gravity_drift'])],
            ['computed torque: tracking RMS error over {:g} s (mrad)'.format(
                summary['duration_s']),
             '{:.3g}'.format(1e3 * nominal['rms_error_worst_rad']),
             '{:.3g}'.format(1e3 * identified['rms_error_worst_rad']),
             '{:.3g}x'.format(factors['tracking_rms'])]]
    validation = summary.get('validation')
    if validation:
        rows.append(['validation effort residual RMS, worst joint (N m or N)',
                     '{:.3g}'.format(max(validation['nominal'].values())),
                     '{:.3g}'.format(max(validation['identified'].values())),
                     '{:.3g}x'.format(_factor(max(validation['nominal'].values()),
                                              max(validation['identified'].values())))])
    lines.append(analysis.format_table(['', 'nominal URDF', 'identified', 'better by'], rows))
    joint_rows = []
    for index, name in enumerate(summary['joints']):
        row = [name, units[index]]
        for key in ('max_drift', 'rms_error'):
            row += ['{:.3g}'.format(1e3 * nominal[key][index]),
                    '{:.3g}'.format(1e3 * identified[key][index])]
        row.append('{:.0f}'.format(1e3 * summary['zero_torque']['max_deviation'][index]))
        if validation:
            row += ['{:.3g}'.format(validation['nominal'].get(name, np.nan)),
                    '{:.3g}'.format(validation['identified'].get(name, np.nan))]
        joint_rows.append(row)
    header = ['joint', 'unit', 'drift nominal', 'drift identified', 'RMS nominal',
              'RMS identified', 'zero torque: fell by']
    if validation:
        header += ['effort resid. nominal', 'effort resid. identified']
    lines.append(analysis.format_table(header, joint_rows))
    for label, run in summary['runs'].items():
        commands, node = run['commands'], run['node']
        lines.append(
            '{}: {:.1f} s simulated in {:.1f} s (real-time factor {:.2f}), {:.0f} commands/s, '
            '{:.1f}% of steps with the newest command (age p99 {} ms), lock-step timeouts {}; '
            'rnea node compute {} us mean'.format(
                label, commands['simulated_s'], commands['wall_s'], commands['real_time_factor'],
                commands['command_rate_hz'], 100 * commands['steps_with_latest_command'],
                _fmt(commands['command_age_p99_ms']), commands['lock_step_timeouts'],
                _fmt(node['compute_mean_us'])))
    verdict_ = summary['verdict']
    if not verdict_['meaningful']:
        lines.append('FIGURES NOT MEANINGFUL (rerun in lock-step, the default): ' +
                     '; '.join(verdict_['reasons']))
    else:
        lines.append('Identified vs nominal: drift {:.3g}x, tracking RMS {:.3g}x smaller '
                     '(target >= {:.0f}x) {}'.format(
                         factors['gravity_drift'], factors['tracking_rms'],
                         verdict_['target_factor'], 'PASS' if verdict_['met'] else 'FAIL'))
    if 'plots' in summary:
        lines.append('plots: ' + ', '.join(summary['plots'].values()))
    return '\n'.join(lines)


def _fmt(value, digits=1):
    return 'n/a' if value is None else '{:.{}f}'.format(value, digits)


def write_plots(folder, scenario, records, nominal_model, identified_model):
    """Write drift, tracking-error and effort-validation plots; return their paths."""
    names = scenario.joint_names
    units = analysis.unit_labels([joint.type for joint in scenario.joints])
    errors = {}
    for model in ('nominal', 'identified'):
        record = records[model + '_tracking']
        errors[model] = (record['time'], analysis.tracking_errors(
            record['time'], record['position'], scenario.profile())[0])
    predictions = {}
    for label, model in (('nominal', nominal_model), ('identified', identified_model)):
        times, measured, predicted, order = story.effort_prediction(
            records['nominal_tracking'], model)
        predictions[label] = (times, measured, predicted, order)
    path = analysis.output_path
    return {
        'drift': analysis.plot_drift(path(folder, 'gravity_drift.png'), records, names),
        'tracking_error': analysis.plot_errors(path(folder, 'tracking_error.png'), errors, names,
                                               units),
        'effort_validation': analysis.plot_effort_validation(
            path(folder, 'effort_validation.png'), predictions, units, names),
    }
