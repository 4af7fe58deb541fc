"""``rnea-ros identify`` and ``rnea-ros excite``: from recordings to an identified URDF.

``rnea-ros identify BAG [BAG ...] --urdf NOMINAL.urdf --out IDENTIFIED.urdf
[--params-out PARAMS.yaml] [--topic /joint_states] [--validate BAG] [--report DIR] [--json]``

1. reads ``sensor_msgs/JointState`` (positions, velocities, efforts) from each bag (mcap or
   sqlite3, :func:`rnea_ros.analysis.analyze.read_joint_states`); velocities missing from a bag
   are differentiated from positions, accelerations always from velocities
   (:func:`rnea_ros.analysis.analyze.smoothed_derivative`, Savitzky-Golay);
2. identifies the base parameters by weighted least squares, then a physically consistent
   full set with friction and rotor inertia (:mod:`rnea_ros.analysis.identification`);
3. writes IDENTIFIED.urdf (:func:`rnea_ros.analysis.output.identified_urdf`) and PARAMS.yaml
   (node parameters ``friction_joints``, ``friction_viscous``, ``friction_coulomb``,
   ``armature`` for ``params_file:=``), each to a temporary file renamed into place, and only
   after everything succeeded;
4. reports the residual RMS per joint with the nominal and identified models, on the training
   data and on ``--validate`` data, the condition number and the base parameters with %sigma
   (text, or ``--json``; plots into ``--report DIR``).

The nominal model includes the URDF's ``<dynamics damping friction>``.  Bad input (no efforts,
too few samples, data that excites no joint) ends with a message and exit status 2.

``rnea-ros excite --urdf U --duration 30 --out traj.yaml [--joints ...] [--seed N]`` designs an
excitation trajectory (:mod:`rnea_ros.analysis.excitation`).
"""

import json
import os

import numpy as np

from rnea_ros.analysis.analyze import model_order, read_joint_states, smoothed_derivative
from rnea_ros.analysis.identification import identify, predict
from rnea_ros.analysis.output import identified_urdf, node_parameters, write_atomic
from rnea_ros.core import friction as fr
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import inertial_parameters, joint_parameters


def load_samples(bags, model, topic, window=21, order=2):
    """Return (Q, QD, QDD, E) of all bags in model order (derivatives per bag)."""
    parts = []
    for bag in bags:
        t, names, Q, QD, E = read_joint_states(bag, topic)
        if E is None:
            raise ValueError(f'bag {bag!r}: the joint states on {topic!r} carry no efforts; '
                             'identification needs measured efforts')
        cols = model_order(names, model)
        Q, E = Q[:, cols], E[:, cols]
        QD = smoothed_derivative(t, Q, window, order) if QD is None else QD[:, cols]
        QDD = smoothed_derivative(t, QD, window, order)
        parts.append((Q, QD, QDD, E))
    return tuple(np.concatenate([p[k] for p in parts]) for k in range(4))


def residual_rms(model, x, data, joints):
    """Return the per-joint RMS of measured - predicted efforts (x: parameters or result)."""
    Q, QD, QDD, E = data
    P = predict(model, x, Q, QD, QDD)
    off = model.nv - model.njoints
    return np.sqrt(np.mean((E[:, off + joints] - P[:, off + joints]) ** 2, axis=0))


def summarise(model, result, x_nom, train, validation):
    """Return the report as a JSON-ready dict."""
    joints = result.moving
    names = [model.joint_names[j] for j in joints]
    fm = result.friction_model
    out = {'robot': model.name, 'samples': result.samples, 'moving_joints': names,
           'condition_number': result.condition, 'warnings': list(result.warnings),
           'friction_model': {'name': fm.name, 'law': fm.law, 'velocity_scale': fm.scale,
                              'stribeck_velocity': fm.stribeck_velocity,
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
           'residual_rms': {}}
    for label, data in (('training', train), ('validation', validation)):
        if data is None:
            continue
        nominal = residual_rms(model, x_nom, data, joints)
        identified = residual_rms(model, result, data, joints)
        effort = np.sqrt(np.mean(data[3][:, model.nv - model.njoints + joints] ** 2, axis=0))
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
        lines.append('friction models, RMS error on held-out blocks of the training data '
                     '(N m or N), * = chosen (the simplest within 2 % of the best):')
        joints = list(models[0]['holdout_rms'])
        lines.append(f"  {'model':<18}" + ''.join(f'{n[-12:]:>13}' for n in joints))
        for m in models:
            mark = '*' if m['chosen'] else ' '
            lines.append(f"{mark} {m['name']:<18}"
                         + ''.join(f"{m['holdout_rms'][n]:13.4f}" for n in joints))
    fm = summary['friction_model']
    lines.append(f"friction model {fm['name']}: tau_f = Fv(qd) qd + (Fs(qd) + Fx e(qd)) s(qd) "
                 f"+ offset, s = {'clip' if fm['law'] == 'linear' else 'tanh'}(qd / "
                 f"{fm['velocity_scale']:g}), e = exp(-(qd / {fm['stribeck_velocity']:g})^2)")
    lines.append('joint friction and rotor inertia: Fv+/Fv- (N m s/rad), Fs+/Fs- and Fx (N m), '
                 'Ia (kg m^2), offset (N m)')
    flagged = []
    for name, p in summary['joints'].items():
        mark = ''
        if 'Ia_identifiable_only_as' in p:
            mark = ' (Ia: see note)'
            flagged.append(f"  {name}: only the sum {p['Ia_identifiable_only_as']} is "
                           'identifiable; Ia is its share kept near the nominal')
        lines.append(f"  {name:<24} Fv {p['Fv']:8.4f}/{p['Fv-']:8.4f}  Fs {p['Fs']:8.4f}/"
                     f"{p['Fs-']:8.4f}  Fx {p['Fx']:7.4f}  Ia {p['Ia']:8.4f}  "
                     f"offset {p['offset']:8.4f}{mark}")
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


def plot(model, result, x_nom, data, out_dir, label):
    """Write measured / nominal / identified efforts of the moving joints to a PNG; return it."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    Q, QD, QDD, E = data
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
    axes[-1][0].set_xlabel('sample')
    fig.tight_layout()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f'identify_{label}.png')
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def run_identify(args):
    """Run ``rnea-ros identify``; return the exit code."""
    try:
        with open(args.urdf, encoding='utf-8') as f:
            xml = f.read()
    except OSError as e:
        raise ValueError(f'cannot read URDF file {args.urdf!r}: {e.strerror}') from None
    model = RobotModel.from_urdf_string(xml, friction_from_urdf=True)
    train = load_samples(args.bags, model, args.topic, args.window)
    validation = (load_samples([args.validate], model, args.topic, args.window)
                  if args.validate else None)
    result = identify(model, *train, band=args.band, prior=args.prior,
                      friction=getattr(args, 'friction', 'auto'))
    x_nom = np.concatenate([inertial_parameters(model), joint_parameters(model)])
    summary = summarise(model, result, x_nom, train, validation)
    urdf_text = identified_urdf(xml, model, result.phi, result.joint_params)
    RobotModel.from_urdf_string(urdf_text)                    # it must load back
    params_text = node_parameters(model, result) if args.params_out else None
    plots = []
    if args.report:
        plots.append(plot(model, result, x_nom, train, args.report, 'training'))
        if validation is not None:
            plots.append(plot(model, result, x_nom, validation, args.report, 'validation'))
        write_atomic(os.path.join(args.report, 'identify.json'), json.dumps(summary, indent=2))
    write_atomic(args.out, urdf_text)
    if params_text is not None:
        write_atomic(args.params_out, params_text)
    summary['outputs'] = {'urdf': args.out, 'params': args.params_out, 'plots': plots}
    print(json.dumps(summary, indent=2) if args.json else text_report(summary))
    return 0


def add_identify_arguments(parser):
    """Add the ``identify`` options to an argparse (sub)parser."""
    parser.add_argument('bags', nargs='+', metavar='BAG', help='rosbag2 recordings (training)')
    parser.add_argument('--urdf', required=True, help='nominal URDF')
    parser.add_argument('--out', required=True, help='identified URDF to write')
    parser.add_argument('--params-out', help='node parameter YAML (friction, armature)')
    parser.add_argument('--topic', default='/joint_states', help='JointState topic')
    parser.add_argument('--validate', metavar='BAG', help='recording for validation')
    parser.add_argument('--report', metavar='DIR', help='folder for plots and identify.json')
    parser.add_argument('--band', type=float, default=0.05,
                        help='|qd| below which a joint equation is left out (stick-slip), rad/s')
    parser.add_argument('--friction', default='auto',
                        choices=('auto', 'coulomb', 'asymmetric', 'tanh'),
                        help='friction model: auto (chosen by held-out prediction error, the '
                        'default), coulomb, asymmetric or tanh (README: Identify the real '
                        'robot)')
    parser.add_argument('--prior', type=float, default=1.0,
                        help='weight of the pull toward the nominal parameters (default 1)')
    parser.add_argument('--window', type=int, default=21,
                        help='samples per Savitzky-Golay window for derivatives (default 21)')
    parser.add_argument('--json', action='store_true', help='print JSON')


def run_excite(args):
    """Run ``rnea-ros excite``; return the exit code."""
    from rnea_ros.analysis.excitation import optimise_excitation
    model = RobotModel.from_urdf_file(args.urdf)
    joints = [j for token in (args.joints or []) for j in token.replace(',', ' ').split()]
    traj = optimise_excitation(model, duration=args.duration, joints=joints or None,
                               base_frequency=args.base_frequency, harmonics=args.harmonics,
                               seed=args.seed, restarts=args.restarts,
                               iterations=args.iterations)
    traj.to_yaml(args.out)
    print(f'wrote {args.out}: {len(traj.joints)} joints, {traj.duration:g} s, f = '
          f'{traj.base_frequency:g} Hz, {traj.harmonics} harmonics, condition number '
          f"{traj.info['condition_number']:.4g}, peak effort "
          f"{100 * traj.info['max_effort_ratio']:.0f} % of the limits")
    return 0


def add_excite_arguments(parser):
    """Add the ``excite`` options to an argparse (sub)parser."""
    parser.add_argument('--urdf', required=True, help='URDF of the robot')
    parser.add_argument('--duration', type=float, default=30.0, help='seconds (default 30)')
    parser.add_argument('--out', required=True, help='trajectory YAML to write')
    parser.add_argument('--joints', nargs='*', help='joints to excite (default: all moving)')
    parser.add_argument('--seed', type=int, default=0, help='random seed (default 0)')
    parser.add_argument('--harmonics', type=int, default=5, help='harmonics (default 5)')
    parser.add_argument('--base-frequency', type=float,
                        help='Hz (default: periods of about 10 s fitting the duration)')
    parser.add_argument('--restarts', type=int, default=16,
                        help='random coefficient sets tried first (default 16)')
    parser.add_argument('--iterations', type=int, default=10,
                        help='L-BFGS-B iterations refining the best (default 10)')
