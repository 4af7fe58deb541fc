"""Writing the report of ``rnea-ros identify``: the summary (JSON), its text and the plots."""

import os

import numpy as np

from rnea_ros.analysis.identification import Accumulator, predict
from rnea_ros.core import friction as fr


def residual_rms(model, x, data, joints):
    """Return the per-joint RMS of measured - predicted efforts (x: parameters or result)."""
    Q, QD, QDD, E = data
    P = predict(model, x, Q, QD, QDD)
    off = model.nv - model.njoints
    return np.sqrt(np.mean((E[:, off + joints] - P[:, off + joints]) ** 2, axis=0))


def _scale_value(value):
    """Return a velocity scale for the summary: a float, or a list per joint."""
    return [float(v) for v in value] if isinstance(value, tuple) else float(value)


def summarise(model, result, x_nom, train, validation):
    """Return the report as a JSON-ready dict.

    ``train`` and ``validation`` (or None): the :class:`Accumulator` of the samples (the
    residuals come from its sums: no samples kept), or (Q, QD, QDD, E) arrays.
    """
    joints = result.moving
    names = [model.joint_names[j] for j in joints]
    fm = result.friction_model
    out = {'robot': model.name, 'samples': result.samples, 'moving_joints': names,
           'robot_joints': list(model.joint_names),
           'condition_number': result.condition, 'warnings': list(result.warnings),
           'friction_model': {'name': fm.name, 'law': fm.law,
                              'velocity_scale': _scale_value(fm.scale),
                              'stribeck_velocity': _scale_value(fm.stribeck_velocity),
                              'parameters': list(fm.parameter_names)},
           'friction_models': result.selection,
           'weak_parameters': result.weak,
           'base_parameters': [{'name': n, 'value': float(v), 'sigma_percent': float(s),
                                'consistent_value': float(c), 'data_share': float(d)}
                               for n, v, s, c, d in zip(result.base_names, result.beta,
                                                        result.sigma_percent,
                                                        result.beta_consistent,
                                                        result.data_share)],
           'joints': {model.joint_names[j]: _joint_row(model, result, j) for j in joints},
           'residual_rms': {}, 'held_out': result.holdout, 'prior': result.prior,
           'recording_offsets': result.recording_offsets, 'filtering': result.filtering}
    for label, data in (('training', train), ('validation', validation)):
        if data is None:
            continue
        if not isinstance(data, Accumulator):    # arrays: their sums (the same figures)
            sums = Accumulator(model, [result.friction_model])
            sums.add(*data)
            data = sums
        nominal = data.residual_rms(x_nom, joints)
        identified = data.residual_rms(result, joints)
        effort = data.effort_rms(joints)
        out['residual_rms'][label] = {
            n: {'nominal': float(a), 'identified': float(b), 'effort_rms': float(e)}
            for n, a, b, e in zip(names, nominal, identified, effort)}
    return out


def _joint_row(model, result, j):
    """Return one joint's identified terms: Fv, Fs (positive side), Fv-, Fs-, Fx, Ia, offset."""
    t = result.friction_table[j]
    row = {'Fv': float(t[fr.FV_POS]), 'Fs': float(t[fr.FS_POS]), 'Fv-': float(t[fr.FV_NEG]),
           'Fs-': float(t[fr.FS_NEG]), 'Fx': float(t[fr.FX]), 'Ia': float(result.armature[j]),
           'offset': float(t[fr.OFF])}
    if result.friction_model.crosstalk:          # the sensor's (rnea_ros.core.sensor)
        row['crosstalk'] = [float(c) for c in result.sensor_crosstalk[j]]
    combined = result.armature_combined.get(model.joint_names[j])
    if combined:
        row['Ia_identifiable_only_as'] = combined
    return row


def text_report(summary):
    """Return the report as text."""
    lines = [f"robot {summary['robot']}: {summary['samples']} samples, moving joints "
             f"{', '.join(summary['moving_joints'])}",
             f"condition number of the base regressor: {summary['condition_number']:.4g}"]
    lines += [f'WARNING: {w}' for w in summary['warnings']]
    for label, table in summary['residual_rms'].items():
        lines.append(f'residual RMS on {label} data (N m or N): nominal -> identified '
                     '(effort RMS)')
        for name, row in table.items():
            lines.append(f"  {name:<24} {row['nominal']:10.4f} -> {row['identified']:10.4f}   "
                         f"({row['effort_rms']:.4f})")
    models = summary.get('friction_models') or []
    if models:
        held = summary.get('held_out') or {}
        where = ('recordings left out in turn' if held.get('data', '').startswith('recordings')
                 else 'held-out blocks of the training data')
        lines.append(f'friction models, RMS error on {where} (N m or N), * = chosen (the '
                     'simplest within one standard error of the best, the noise column; "per '
                     'joint": that law with the v_s that predicts each joint best, if better '
                     'beyond the noise), x = not admissible (predicts the moving joints > 2 % '
                     'worse than the best):')
        joints = list(models[0]['holdout_rms'])
        lines.append(f"  {'model':<18}" + ''.join(f'{n[-12:]:>13}' for n in joints)
                     + '   score (moving joints)')
        for m in models:
            mark = '*' if m['chosen'] else (' ' if m.get('admissible', True) else 'x')
            lines.append(f"{mark} {m['name']:<18}"
                         + ''.join(f"{m['holdout_rms'][n]:13.4f}" for n in joints)
                         + f"   {m['score']:.4g} ({m.get('score_moving', m['score']):.4g})"
                         + f"  noise {m.get('noise', 0.0):.3g}")
    filtering = summary.get('filtering')
    if filtering and filtering.get('cutoff_hz'):
        scores = ', '.join(f'{k} {v:.4g}' for k, v in filtering['scores'].items())
        how = ('as measured (parallel filtering did not predict better)'
               if not filtering['parallel'] else
               'parallel filtering (every column and the effort low-passed at '
               f"{filtering['cutoff_hz']:.3g} Hz, then decimated)")
        lines.append(f'equations fitted: {how}; held-out scores {scores}')
    offsets = summary.get('recording_offsets') or {}
    if offsets and len(next(iter(offsets.values()))['recordings']) > 1:
        lines.append('effort offsets per training recording (N m or N), deployed: the median '
                     "(fit: the fit's common constant, where Coulomb terms take up a constant)")
        for name, o in offsets.items():
            lines.append(f'  {name:<24} ' + ' '.join('       -' if v is None else f'{v:8.4f}'
                                                     for v in o['recordings'])
                         + f"   -> {o['deployed']:8.4f} (spread {o['spread']:.3g})"
                         + (' fit' if o.get('deployed_as') == 'fit' else ''))
    fm = summary['friction_model']
    v_s, v_st = fm['velocity_scale'], fm['stribeck_velocity']
    per_joint = isinstance(v_s, list)
    lines.append(f"friction model {fm['name']}: tau_f = Fv(qd) qd + (Fs(qd) + Fx e(qd)) s(qd) "
                 f"+ offset, s = {'clip' if fm['law'] == 'linear' else 'tanh'}(qd / "
                 f"{'v_s' if per_joint else format(v_s, 'g')}), e = exp(-(qd / "
                 f"{'v_st' if per_joint else format(v_st, 'g')})^2)")
    if per_joint:
        lines.append('  per joint v_s / v_st (rad/s or m/s): ' + ', '.join(
            f'{name} {a:g}/{b:g}' for name, a, b in zip(summary['robot_joints'], v_s, v_st)))
    lines.append('joint friction and rotor inertia: Fv+/Fv- (N m s/rad), Fs+/Fs- and Fx (N m), '
                 'Ia (kg m^2), offset (N m)' + ('; torque sensor crosstalk u, w (% of the '
                                                'bending moments)' if 'Xu' in fm.get(
                                                    'parameters', ()) else ''))
    flagged = []
    for name, p in summary['joints'].items():
        mark = ''
        crosstalk = ('  crosstalk ' + ' '.join(f'{100 * c:+.2f} %' for c in p['crosstalk'])
                     if 'crosstalk' in p else '')
        if 'Ia_identifiable_only_as' in p:
            mark = ' (Ia: see note)'
            flagged.append(f"  {name}: only the sum {p['Ia_identifiable_only_as']} is "
                           'identifiable; Ia is its share kept near the nominal')
        lines.append(f"  {name:<24} Fv {p['Fv']:8.4f}/{p['Fv-']:8.4f}  Fs {p['Fs']:8.4f}/"
                     f"{p['Fs-']:8.4f}  Fx {p['Fx']:7.4f}  Ia {p['Ia']:8.4f}  "
                     f"offset {p['offset']:8.4f}{mark}{crosstalk}")
    if flagged:
        lines.append('note: rotor inertia that only a sum with link inertias determines:')
        lines += flagged
    lines.append(f"base parameters ({len(summary['base_parameters'])}): WLS value, %sigma, "
                 'physically consistent value, share decided by the data')
    for p in summary['base_parameters']:
        lines.append(f"  {p['value']:12.5g} {p['sigma_percent']:8.2f}% "
                     f"{p['consistent_value']:12.5g} {100 * p['data_share']:4.0f}%"
                     f"  {p['name']}")
    return '\n'.join(lines)


def plot(model, result, x_nom, data, out_dir, label, step=1):
    """Write measured / nominal / identified efforts of the moving joints to a PNG; return it.

    ``data``: (Q, QD, QDD, E) of every ``step``-th sample (an :class:`Excerpt`).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    Q, QD, QDD, E = data[:4]
    off = model.nv - model.njoints
    P_nom = predict(model, x_nom, Q, QD, QDD)
    P_id = predict(model, result, Q, QD, QDD)
    n = result.moving.size
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.9 * n), sharex=True, squeeze=False)
    for k, j in enumerate(result.moving):
        ax = axes[k][0]
        ax.plot(E[:, off + j], 'k', lw=1.0, label='measured')
        ax.plot(P_nom[:, off + j], 'C0', lw=0.8, label='nominal URDF')
        ax.plot(P_id[:, off + j], 'C1--', lw=0.8, label='identified')
        ax.set_ylabel(model.joint_names[j], fontsize=7)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    axes[-1][0].set_xlabel('sample' if step == 1 else f'sample (1 in {step} shown)')
    fig.tight_layout()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f'identify_{label}.png')
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path
