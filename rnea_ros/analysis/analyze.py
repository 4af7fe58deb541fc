"""Model against measurement: recorded joint states (rosbag2) versus the rigid-body model.

``rnea-ros analyze BAG --urdf FILE`` reads ``sensor_msgs/JointState`` messages (positions,
velocities, efforts) from a rosbag2 recording (mcap or sqlite3; :mod:`rnea_ros.analysis.
recordings`, no ROS installation needed; model joints the recording lacks, a gripper say, are
held still at 0 or ``--fixed joint=value``, as identify holds them), and for every sample:

1. conditions the signals as ``rnea-ros identify`` does (:mod:`rnea_ros.analysis.signals`):
   logger duplicates dropped, a uniform time grid, the noise band estimated from the velocity
   spectrum, zero-phase low-pass velocities and their derivative as accelerations (positions
   are differentiated when a bag has no velocities); ``--cutoff HZ`` or a Savitzky-Golay
   ``--window N`` override the estimate;
2. computes the model efforts with :func:`inverse_dynamics_batch` (friction-free rigid body);
3. prints per-joint RMS and maximum of the residual (measured - model);
4. fits, by linear least squares on all joints at once, the residual as
   ``m * Y_m(q, qd, qdd) + Fv_j qd_j + Fs_j sign(qd_j) + off_j``: a payload mass m at a named link
   (default: the deepest link moved by a revolute joint, e.g. a wrist flange; centre of mass
   given, default the link origin; Y_m is the exact effort of a 1 kg point mass there, by
   linearity of the dynamics in the inertial parameters), and per joint viscous (Fv) and
   Coulomb (Fs) friction and an effort offset, with identify's estimation path
   (:func:`fit_friction_payload`: the core's friction law, equations slower than 0.05 rad/s
   left out as stick-slip, Fv and Fs >= 0).  Fit quality: R^2 of the residual explained,
   standard errors from the covariance sigma^2 (A^T A)^-1 (they assume independent samples, so
   they are optimistic).  :func:`payload_support` says when the data does not support a
   payload at all (a model error rather than a payload);
   With ``--fit-com`` the centre of mass c is fitted too: Gauss-Newton on c, each round fitting
   m and a first-moment correction dh = m dc (columns (Y(c + d e_k) - Y(c - d e_k)) / 2d, exact
   for the first moment) around the current c; the payload is a point mass (its own
   inertia about its COM is neglected);
5. writes one PNG per joint: measured, model and model + fit efforts over time.
"""

import json
import os

import numpy as np

from rnea_ros.analysis import arguments as arg
from rnea_ros.analysis import signals
from rnea_ros.analysis.conditioning import parse_fixed
from rnea_ros.analysis.identification import (FrictionModel, STICK_BAND, SYMMETRIC,
                                              usable_equations)
from rnea_ros.analysis.recordings import held_joints, model_order, read_joint_states
from rnea_ros.core.dynamics import inverse_dynamics_batch
from rnea_ros.core.friction import STRIBECK_VELOCITY
from rnea_ros.core.payload import model_with_payload, Payload
from rnea_ros.core.payload_estimation import default_payload_link
from rnea_ros.core.urdf import lock_joints, read_urdf


# -- signal processing --------------------------------------------------------------------------

def smoothed_derivative(t, x, window=11, order=2):
    """Return dx/dt at every sample by local least-squares polynomials (Savitzky-Golay).

    Each sample's window holds ``window`` consecutive samples centred on it (shifted inside the
    record at its ends); a polynomial of ``order`` in the real time offsets is fitted to x and
    its slope at the sample is returned.  x is (N,) or (N, n).
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float)
    n = t.size
    w = min(int(window), n)
    order = min(int(order), w - 1)
    if w < 2 or order < 1:
        raise ValueError('need at least 2 samples and order >= 1 to differentiate')
    start = np.clip(np.arange(n) - w // 2, 0, n - w)
    idx = start[:, None] + np.arange(w)
    h = np.median(np.diff(t)) or 1.0
    dt = (t[idx] - t[:, None]) / h
    V = dt[..., None] ** np.arange(order + 1)                        # (n, w, p)
    G = np.linalg.solve(np.einsum('nwi,nwj->nij', V, V), V.transpose(0, 2, 1))   # (n, p, w)
    slope = G[:, 1, :] / h                                           # weights of dx/dt
    return np.einsum('nw,nw...->n...', slope, x[idx])


# -- the analysis --------------------------------------------------------------------------------

def payload_regressor(urdf_xml, model, Q, QD, QDD, link, com, gravity=None):
    """Return (N, nv) efforts of a 1 kg point mass at ``com`` of ``link`` (exact, by linearity)."""
    loaded = model_with_payload(urdf_xml, Payload(link, 1.0, com),
                                floating_base=model.floating_base,
                                joint_names=model.joint_names)
    return (inverse_dynamics_batch(loaded, Q, QD, QDD, gravity=gravity)
            - inverse_dynamics_batch(model, Q, QD, QDD, gravity=gravity))


def first_moment_regressor(urdf_xml, model, Q, QD, QDD, link, gravity=None, d=0.1):
    """Return (N, nv, 3): the efforts per unit first moment h = m c of a payload on ``link``.

    Central differences of 1 kg point masses at +-d along each axis: the second-moment terms
    (even in d) cancel, so the columns are exact.
    """
    cols = []
    for k in range(3):
        offset = np.zeros(3)
        offset[k] = d
        plus = payload_regressor(urdf_xml, model, Q, QD, QDD, link, offset, gravity)
        minus = payload_regressor(urdf_xml, model, Q, QD, QDD, link, -offset, gravity)
        cols.append((plus - minus) / (2.0 * d))
    return np.stack(cols, axis=2)


def _fit_point_mass(urdf_xml, model, Q, QD, QDD, R, link, com, gravity, fit, rounds=4):
    """Fit mass and centre of mass of a point payload (Gauss-Newton on the com); see module."""
    H = first_moment_regressor(urdf_xml, model, Q, QD, QDD, link, gravity)
    for _ in range(rounds):
        Y = payload_regressor(urdf_xml, model, Q, QD, QDD, link, com, gravity)
        fit = fit_friction_payload(R, QD, np.concatenate([Y[:, :, None], H], axis=2),
                                   model.coulomb_band, law=model.friction_law)
        if not fit['payload_mass'] > 0.0:
            raise ValueError('the fitted payload mass is not positive: no centre of mass')
        com = com + fit['payload_first_moment'] / fit['payload_mass']
    fit['payload_com'] = com
    return fit, com


def fit_friction_payload(R, QD, Y, band=0.01, stick=STICK_BAND, law='linear'):
    """Fit R ~ m Y + Fv qd + Fs s(qd) + off per joint; return a dict of estimates.

    R, QD are (N, n) residuals and velocities, Y the (N, n) or (N, n, p) payload regressor
    (None: no payload term; with p = 4 the columns are m and h = m c).  The friction columns
    and the stick-slip rule are identify's (:mod:`rnea_ros.analysis.identification`: the
    symmetric law of :mod:`rnea_ros.core.friction` with sign scale ``band``, equations with
    ``|qd_j| < stick`` left out, Fv and Fs kept >= 0): one estimation path.  Returns the
    estimates, their standard errors, R^2 of the residual explained (on the equations used) and
    the residual left after the fit (all samples).
    """
    from scipy.optimize import lsq_linear
    N, n = R.shape
    k = 0
    blocks = []
    if Y is not None:
        Y = Y.reshape(N, n, -1)
        k = Y.shape[2]
        blocks.append(Y.reshape(N * n, k))
    fm = FrictionModel('coulomb', law, band, STRIBECK_VELOCITY, SYMMETRIC)
    F = fm.columns(QD, np.zeros_like(QD))[..., :3]            # (N, n, [Fv, Fs, off])
    eye = np.eye(n)
    for c in range(3):
        blocks.append((F[:, :, c, None] * eye).reshape(N * n, n))
    A = np.hstack(blocks)
    b = R.reshape(N * n)
    use = usable_equations(QD, stick).reshape(N * n)
    lower = np.full(A.shape[1], -np.inf)
    lower[k:k + 2 * n] = 0.0                                  # Fv, Fs >= 0
    Au, bu = A[use], b[use]
    x = lsq_linear(Au, bu, bounds=(lower, np.inf), lsmr_tol='auto').x if use.any() \
        else np.zeros(A.shape[1])
    left = bu - Au @ x
    dof = max(Au.shape[0] - A.shape[1], 1)
    sigma2 = left @ left / dof
    cov = sigma2 * np.linalg.pinv(Au.T @ Au)
    stderr = np.sqrt(np.maximum(np.diag(cov), 0.0))
    total = np.sum((bu - bu.mean()) ** 2)
    after = (b - A @ x).reshape(N, n)
    return {
        'payload_mass': float(x[0]) if Y is not None else None,
        'payload_mass_stderr': float(stderr[0]) if Y is not None else None,
        'payload_com': x[1:4] / x[0] if k == 4 else None,
        'payload_first_moment': x[1:4] if k == 4 else None,
        'payload_first_moment_stderr': stderr[1:4] if k == 4 else None,
        'viscous': x[k:k + n], 'viscous_stderr': stderr[k:k + n],
        'coulomb': x[k + n:k + 2 * n], 'coulomb_stderr': stderr[k + n:k + 2 * n],
        'offset': x[k + 2 * n:], 'offset_stderr': stderr[k + 2 * n:],
        'r2': float(1.0 - left @ left / total) if total > 0 else float('nan'),
        'rss': float(left @ left), 'equations': int(use.sum()),
        'rms_after': np.sqrt(np.mean(after ** 2, axis=0)),
        'fitted': (A @ x).reshape(N, n),
    }


def payload_support(R, QD, Y, fit, band=0.01, law='linear'):
    """Return (supported, reasons, details): whether the data supports a payload at all.

    A payload explains the rigid-body residual with one mass at one place, the same for every
    joint.  When the residual is a model error instead (the URDF's inertials), a payload term
    still takes some mass: then it explains little of what friction and offsets leave, and the
    joints disagree on the mass (each joint's own fit).  Supported when the mass is positive
    beyond 3 standard errors, the payload term removes at least half of the residual that
    friction and offsets leave, and the joints whose payload column is strong agree on the
    mass within 25 %.
    """
    none = fit_friction_payload(R, QD, None, band, law=law)
    explained = 1.0 - fit['rss'] / none['rss'] if none['rss'] > 0 else 0.0
    Y = Y.reshape(R.shape[0], R.shape[1], -1)[:, :, 0]
    strength = np.sqrt(np.mean(Y ** 2, axis=0))
    strong = np.flatnonzero(strength >= 0.2 * strength.max())
    masses = []
    for j in strong:
        one = fit_friction_payload(R[:, [j]], QD[:, [j]], Y[:, [j]], band, law=law)
        masses.append(one['payload_mass'])
    masses = np.array(masses)
    m, sd = fit['payload_mass'], fit['payload_mass_stderr']
    spread = float(np.ptp(masses) / abs(m)) if m and masses.size > 1 else 0.0
    reasons = []
    if not m > 3.0 * sd:
        reasons.append(f'the mass {m:.4g} kg is not positive beyond 3 standard errors')
    if explained < 0.5:
        reasons.append(f'the payload term explains only {100 * explained:.0f} % of the '
                       'residual that friction and offsets leave')
    if spread > 0.25:
        reasons.append(f'the joints disagree on its mass ({masses.min():.3g} to '
                       f'{masses.max():.3g} kg)')
    details = {'explained': float(explained), 'joint_masses': masses.tolist(),
               'joints': strong.tolist(), 'spread': spread}
    return not reasons, reasons, details


def analyze(urdf_xml, t, names, Q, QD, E, payload_link=None, payload_com=(0.0, 0.0, 0.0),
            window=None, order=2, gravity=None, fit_payload=True, fit_com=False, cutoff=None,
            fixed=None):
    """Run the analysis on arrays (bag order ``names``); return a dict of results (see module).

    The signals are conditioned as identify's (:func:`rnea_ros.analysis.signals.condition`:
    duplicates dropped, uniform grid, estimated or given ``cutoff``, or a Savitzky-Golay
    ``window``); the results are on that grid.  Model joints the recording lacks are held
    still at ``fixed`` ({joint: position}, default 0): the robot is analysed with them locked
    (:func:`rnea_ros.core.urdf.lock_joints`), and ``held`` in the result names them.
    """
    if E is None:
        raise ValueError('the joint states carry no efforts: nothing to compare with')
    model = model_with_payload(urdf_xml)
    if model.floating_base:
        raise ValueError('analyze supports fixed-base robots only')
    held = held_joints(names, model, fixed)
    if held:
        urdf_xml = lock_joints(urdf_xml, held)
        model = model_with_payload(urdf_xml)
    cols = model_order(names, model)
    (t, Q, QD, QDD, E), signal_report = signals.condition(
        t, Q[:, cols], None if QD is None else QD[:, cols], E[:, cols], model.joint_names,
        cutoff=cutoff, window=window, decimation=1)
    TAU = inverse_dynamics_batch(model, Q, QD, QDD, gravity=gravity)
    R = E - TAU
    link = payload_link or default_payload_link(model)
    if fit_payload and link not in model.link_names:
        raise ValueError(f"payload link '{link}' is not a link of the robot")
    Y, com = None, np.asarray(payload_com, dtype=float)
    if fit_payload:
        Y = payload_regressor(urdf_xml, model, Q, QD, QDD, link, com, gravity)
    fit = fit_friction_payload(R, QD, Y, model.coulomb_band, law=model.friction_law)
    if fit_payload and fit_com:
        fit, com = _fit_point_mass(urdf_xml, model, Q, QD, QDD, R, link, com, gravity, fit)
        Y = payload_regressor(urdf_xml, model, Q, QD, QDD, link, com, gravity)
    if fit_payload:
        fit['payload_supported'], fit['payload_reasons'], fit['payload_check'] = \
            payload_support(R, QD, Y, fit, model.coulomb_band, model.friction_law)
    return {'model': model, 't': t - t[0], 'Q': Q, 'QD': QD, 'QDD': QDD, 'E': E, 'TAU': TAU,
            'residual': R, 'rms': np.sqrt(np.mean(R ** 2, axis=0)),
            'max': np.max(np.abs(R), axis=0), 'payload_link': link if fit_payload else None,
            'payload_com': tuple(com.tolist()), 'com_fitted': bool(fit_com and fit_payload),
            'fit': fit, 'window': window, 'order': order, 'signals': signal_report,
            'held': held}


def held_lines(held):
    """Return the report line naming the joints held still, if any (analyze and observe)."""
    if not held:
        return []
    return ['joints not in the recording, held still (locked in the model): '
            + ', '.join(f'{j} = {v:g}' for j, v in held.items())]


def report(result):
    """Return the analysis as readable text."""
    model, fit = result['model'], result['fit']
    t = result['t']
    lines = [f'{model!r}: {t.size} samples over {t[-1]:.3f} s']
    lines += result['signals'].lines()
    lines += held_lines(result['held'])
    lines += ['', 'residual = measured - model effort (rigid body, no friction, no payload)',
              f"{'joint':<24}{'rms':>10}{'max':>10}{'Fv':>10}{'+-':>8}{'Fs':>10}{'+-':>8}"
              f"{'offset':>10}{'rms after':>11}"]
    for j, name in enumerate(model.joint_names):
        lines.append(f"{name:<24}{result['rms'][j]:10.4f}{result['max'][j]:10.4f}"
                     f"{fit['viscous'][j]:10.4f}{fit['viscous_stderr'][j]:8.4f}"
                     f"{fit['coulomb'][j]:10.4f}{fit['coulomb_stderr'][j]:8.4f}"
                     f"{fit['offset'][j]:10.4f}{fit['rms_after'][j]:11.4f}")
    lines.append('units: N m (N for prismatic joints); Fv in N m s/rad, Fs and offset in N m; '
                 f'equations with |qd| < {STICK_BAND} rad/s left out of the fit (stick-slip), '
                 'as in rnea-ros identify')
    if fit['payload_mass'] is not None:
        com = ', '.join(f'{c:.4f}' for c in result['payload_com'])
        how = 'fitted' if result['com_fitted'] else 'given'
        if fit.get('payload_supported', True):
            lines.append(f"payload at {result['payload_link']} (com [{com}] m, {how}): "
                         f"{fit['payload_mass']:.4f} +- {fit['payload_mass_stderr']:.4f} kg")
        else:
            lines.append(f"no payload supported at {result['payload_link']} (com [{com}] m, "
                         f"{how}): a payload term would take {fit['payload_mass']:.4f} kg, "
                         f"but {'; '.join(fit['payload_reasons'])}. The residual is a model "
                         'error (the URDF inertials, or a payload elsewhere or with another '
                         'centre of mass: try --fit-com), not this payload; rnea-ros identify '
                         'fits the whole model.')
    lines.append(f"fit: R^2 = {fit['r2']:.5f} of the residual explained; standard errors "
                 'assume independent samples')
    return '\n'.join(lines)


def summary(result):
    """Return the analysis as a JSON-friendly dict."""
    fit, names = result['fit'], result['model'].joint_names
    per_joint = {n: {'rms': result['rms'][j], 'max': result['max'][j],
                     'viscous': fit['viscous'][j], 'viscous_stderr': fit['viscous_stderr'][j],
                     'coulomb': fit['coulomb'][j], 'coulomb_stderr': fit['coulomb_stderr'][j],
                     'offset': fit['offset'][j], 'offset_stderr': fit['offset_stderr'][j],
                     'rms_after_fit': fit['rms_after'][j]} for j, n in enumerate(names)}
    joints = {n: {k: float(v) for k, v in d.items()} for n, d in per_joint.items()}
    return {'samples': int(result['t'].size), 'joints': joints,
            'signals': result['signals'].to_dict(), 'held_joints': result['held'],
            'payload': {'link': result['payload_link'],
                        'com': [float(c) for c in result['payload_com']],
                        'com_fitted': result['com_fitted'],
                        'mass': fit['payload_mass'], 'mass_stderr': fit['payload_mass_stderr'],
                        'supported': fit.get('payload_supported'),
                        'not_supported_because': fit.get('payload_reasons'),
                        'check': fit.get('payload_check')},
            'r2': fit['r2']}


def plot(result, out_dir):
    """Write one PNG per joint (measured, model, model + fit) and an overview; return paths."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    model, t = result['model'], result['t']
    E, TAU, fitted = result['E'], result['TAU'], result['fit']['fitted']
    paths = []
    n = len(model.joint_names)
    cols = 2 if n > 1 else 1
    rows = (n + cols - 1) // cols
    overview, axes = plt.subplots(rows, cols, figsize=(11, 2.4 * rows), squeeze=False,
                                  sharex=True)
    for j, name in enumerate(model.joint_names):
        fig, ax = plt.subplots(figsize=(8, 3.2))
        for target in (ax, axes[j // cols][j % cols]):
            target.plot(t, E[:, j], 'k', lw=1.2, label='measured')
            target.plot(t, TAU[:, j], 'C0', lw=1.0, label='model (rigid body)')
            target.plot(t, TAU[:, j] + fitted[:, j], 'C1--', lw=1.0,
                        label='model + fitted friction/payload')
            target.set_title(name, fontsize=9)
            target.set_ylabel('effort (N)' if model.joint_types[j] == 'prismatic'
                              else 'effort (N m)')
            target.grid(alpha=0.3)
        ax.set_xlabel('time (s)')
        ax.legend(fontsize=8)
        fig.tight_layout()
        path = os.path.join(out_dir, f'effort_{name}.png')
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    for k in range(n, rows * cols):
        axes[k // cols][k % cols].axis('off')
    axes[0][0].legend(fontsize=7)
    for ax in axes[-1]:
        ax.set_xlabel('time (s)')
    overview.tight_layout()
    path = os.path.join(out_dir, 'efforts.png')
    overview.savefig(path, dpi=80)
    plt.close(overview)
    return [path] + paths


# -- command line --------------------------------------------------------------------------------

def add_arguments(parser):
    """Add the ``analyze`` options to an argparse (sub)parser."""
    arg.add_recording(parser)
    arg.add_fixed(parser)
    parser.add_argument('--out', type=arg.OUTPUT_FOLDER,
                        help='folder for PNG plots (default: no plots)')
    parser.add_argument('--payload-link', type=arg.NAME, help='link for the payload estimate '
                        '(default: the deepest link moved by a revolute joint)')
    parser.add_argument('--payload-com', nargs=3, type=arg.FINITE, default=(0.0, 0.0, 0.0),
                        metavar=('X', 'Y', 'Z'), help='payload centre of mass in that link, m '
                        '(any sign; default 0 0 0, the link origin)')
    parser.add_argument('--fit-com', action='store_true',
                        help='fit the payload centre of mass too (else --payload-com is used)')
    parser.add_argument('--no-payload', action='store_true', help='fit friction only')
    parser.add_argument('--cutoff', type=arg.CUTOFF, metavar='HZ',
                        help='low-pass cutoff for velocities and accelerations (default: '
                             'estimated per joint from the recording, and printed)')
    parser.add_argument('--window', type=arg.WINDOW, metavar='N',
                        help='instead of the low-pass: Savitzky-Golay derivative over N >= 3 '
                             'samples (the earlier default was 11)')
    parser.add_argument('--order', type=arg.POSITIVE_INT, default=2,
                        help='Savitzky-Golay polynomial order (default 2)')
    parser.add_argument('--json', action='store_true', help='print JSON')


def run(args):
    """Run ``rnea-ros analyze``; return the exit code."""
    urdf_xml = read_urdf(args.urdf)
    t, names, Q, QD, E = read_joint_states(args.bag, args.topic)
    fixed = parse_fixed(args.fixed, model_with_payload(urdf_xml))
    result = analyze(urdf_xml, t, names, Q, QD, E, payload_link=args.payload_link,
                     payload_com=args.payload_com, window=args.window, order=args.order,
                     fit_payload=not args.no_payload, fit_com=args.fit_com, cutoff=args.cutoff,
                     fixed=fixed)
    paths = plot(result, args.out) if args.out else []
    if args.json:
        out = summary(result)
        out['plots'] = paths
        print(json.dumps(out, indent=2))
    else:
        print(report(result))
        for path in paths:
            print(f'plot: {path}')
    return 0


def main(argv=None):
    """Run the analysis as ``python -m rnea_ros.analysis.analyze`` (``rnea-ros analyze``)."""
    parser = arg.OneLineParser(prog='rnea-ros analyze', description=__doc__.split('\n')[0])
    add_arguments(parser)
    parser.set_defaults(func=run)
    return arg.run_command(parser, argv)


if __name__ == '__main__':
    raise SystemExit(main())
