"""The demo's figures, verdict, printed before/after table and plots (no ROS)."""
import numpy as np
from rnea_ros.demo import analysis
from rnea_ros.demo import story

TARGET_FACTOR = 10.0        # identified vs nominal: drift and tracking RMS at least 10x smaller
CONTROLLED = ('nominal_gravity', 'nominal_tracking', 'excitation', 'identified_gravity',
              'identified_tracking')
SCENES = ('push_identified', 'push_nominal', 'push_reaction', 'grasp_unknown', 'grasp_estimate',
          'grasp_committed')
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
                       for label in CONTROLLED + SCENES if label in records}
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
    if summary.get('scenes'):
        lines.append(format_scenes(summary['scenes']))
    if 'plots' in summary:
        lines.append('plots: ' + ', '.join(summary['plots'].values()))
    return '\n'.join(lines)


def _ms(value):
    return 'missed' if value is None else '{:.0f} ms'.format(1e3 * value)


def _threshold_text(threshold):
    """Return the thresholds a quiet residual is judged by ('< threshold 2' or gated)."""
    if isinstance(threshold, dict):
        return 'thresholds {:.2g}-{:.2g} moving, {:.2g}-{:.2g} in reversals'.format(
            min(threshold['moving']), max(threshold['moving']), min(threshold['reversal']),
            max(threshold['reversal']))
    return '< threshold {:g}'.format(float('nan') if threshold is None else threshold)


def format_scenes(scenes):
    """Return the scenes' table (push: nominal vs identified; grasp) and their verdicts."""
    lines = []
    push = {label: scenes.get('push_' + label) for label in ('nominal', 'identified')}
    if push['identified']:
        scene = push['identified']
        lines.append('Push: {:.0f} N on {} at {:g} s for {:g} s during tracking, observer: '
                     '{}'.format(scene['magnitude_n'], scene['link'], scene['start_s'],
                                 scene['duration_s'],
                                 scene['source'] or 'NONE (the node publishes no estimate)'))
        rows = [['detection delay'] + [_ms(push[k]['detection_delay_s']) if push[k] else '-'
                                       for k in ('nominal', 'identified')] + ['<= 20 ms'],
                ['false alarms over {:.0f} s'.format(scene['observed_s'])] + [
                    str(push[k]['false_alarms']) if push[k] else '-'
                    for k in ('nominal', 'identified')] + ['0'],
                ['time in collision without contact'] + [
                    '{:.0f} %'.format(100 * push[k]['alarm_fraction_without_contact'])
                    if push[k] else '-' for k in ('nominal', 'identified')] + ['0 %']]
        if scene.get('quiet_residual_max') is not None:
            rows.append(['largest |external torque| without contact (N m)'] + [
                '{:.2f}'.format(push[k]['quiet_residual_max'])
                if push[k] and push[k].get('quiet_residual_max') is not None else '-'
                for k in ('nominal', 'identified')] + [_threshold_text(scene.get('threshold'))])
        if 'torque' in scene:
            rows.append(['joint torque error after 50 ms, worst / bound'] + [
                '{:.2f}'.format(push[k]['torque']['worst_error_over_bound'])
                if push[k] and 'torque' in push[k] else '-'
                for k in ('nominal', 'identified')] + ['<= 1 (5 % or 0.2 N m)'])
        if 'wrench' in scene:
            rows.append(['wrench error: force, moment (relative)'] + [
                '{:.1f} %, {:.1f} %'.format(100 * push[k]['wrench']['force_relative'],
                                            100 * push[k]['wrench']['moment_relative'])
                if push[k] and 'wrench' in push[k] else '-'
                for k in ('nominal', 'identified')] + ['<= 10 %'])
        lines.append(analysis.format_table(['', 'nominal URDF', 'identified', 'target'], rows))
        lines.append('push targets (identified): ' + _verdict_text(scene.get('verdict', {})))
    reaction = scenes.get('push_reaction')
    if reaction:
        motion = reaction.get('reaction_motion') or {}
        still = motion.get('time_to_still_s')
        lines.append(
            'Reaction {}: push at {:g} s detected after {}; the arm ({:.2f} rad/s at detection) '
            'still {} after it, moved {} mrad'.format(
                reaction['reaction'], reaction['start_s'], _ms(reaction['detection_delay_s']),
                motion.get('speed_at_detection', float('nan')),
                'never' if still is None else '{:.0f} ms'.format(1e3 * still),
                '{:.1f}'.format(1e3 * motion['max_displacement']) if motion else '-'))
    grasp = scenes.get('grasp')
    if grasp:
        truth = grasp['truth']
        lines.append('Grasp: {:.3g} kg at COM {} m on {}'.format(
            truth['mass_kg'], truth['com_m'], grasp['link']))
        if 'estimate' in grasp:
            lines.append('  estimate {:.3f} kg (error {:.2f} %), COM error {:.1f} mm'.format(
                grasp['estimate']['mass_kg'], 100 * grasp['mass_relative_error'],
                1e3 * grasp['com_error_m']))
        else:
            lines.append('  no estimate: {}'.format(grasp.get('message')))
        drift = grasp['drift_rad']
        lines.append('  gravity compensation, max drift (mrad): no payload {}, payload unknown '
                     '{}, payload committed {}'.format(*[
                         '{:.3g}'.format(1e3 * drift[key]) if key in drift else '-'
                         for key in ('no_payload', 'payload_unknown', 'payload_committed')]))
        if 'drift_ratio_committed' in grasp:
            lines.append('  committed / no payload: {:.2f}x; judged against max(no payload, '
                         '{:.3g} mrad): {:.2f}x (target <= 2x)'.format(
                             grasp['drift_ratio_committed'],
                             1e3 * grasp.get('drift_floor_rad', 0.0),
                             grasp.get('drift_ratio_judged', grasp['drift_ratio_committed'])))
        lines.append('grasp targets: ' + _verdict_text(grasp.get('verdict', {})))
    return '\n'.join(lines)


def _verdict_text(verdict):
    if not verdict:
        return 'not measured'
    return ', '.join('{} {}'.format(key.replace('_', ' '), 'met' if met else 'MISSED')
                     for key, met in verdict.items())


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
