#!/usr/bin/env python3
"""Benchmark (issue 28): the physical terms real arms' held-out runs ask for.

On the real recordings of ``../shared/realdata`` (see ``doc/measured/real_robots.md``), the same
held-out folds as ``bench_real_robots.py``, one plain least-squares fit per variant of the
model, each predicting the run it did not see:

- ``rigid+friction``: the standard inertial parameters of every body (pulled toward the nominal
  URDF's by a ridge of weight ``--ridge``), and per joint an offset, a Coulomb term on the
  sign of the stored velocity, a viscous term and rotor inertia (the authors' Kinova law);
- ``+tilt``: the same, plus a gravity direction tilted from the URDF's (two shared numbers:
  the horizontal components of the base-frame gravity, as a mounting tilt would give);
- ``+crosstalk stator`` / ``+crosstalk rotor``: the same as the first, plus per joint two
  coefficients of the torque sensor's crosstalk from the bending moments of the joint
  (:mod:`rnea_ros.core.sensor`), on the parent side or the child side of the joint.

The added columns are computed with the nominal URDF (the gravity torques and the reaction
wrenches); the fits are linear.  Stored q, qd, qdd, edges trimmed, torque in the URDF's sign
(as ``bench_real_robots.py`` evaluates).  Not ``rnea-ros identify``: this says which term the
data supports before identify fits it.  Prints per fold the per-joint held-out RMS of each
variant and the authors' model, pooled figures, the joint-folds each variant improves, and
the crosstalk coefficients fitted on every run of an arm.
"""

import argparse
import os
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, '..'), os.path.join(HERE, '..', 'test')]

import real_robots as rr  # noqa: E402

from rnea_ros.core.dynamics import inverse_dynamics_batch, reaction_wrenches  # noqa: E402
from rnea_ros.core.model import RobotModel  # noqa: E402
from rnea_ros.core.regressor import inertial_parameters, regressor_batch  # noqa: E402
from rnea_ros.core.sensor import bending_moments  # noqa: E402

VARIANTS = ('rigid+friction', '+tilt', '+crosstalk stator', '+crosstalk rotor')
G = 9.81
EXTRA = {'rigid+friction': 0, '+tilt': 2, '+crosstalk stator': 2, '+crosstalk rotor': 2}


def columns(model, run, robot):
    """Return the evaluated run's torque and every variant's column blocks (one model pass)."""
    Q, QD, QDD, tau, names = rr.evaluation(robot, run)
    if list(model.joint_names) != names:
        raise ValueError(f'model joints {model.joint_names} differ from the columns {names}')
    n, nj = Q.shape
    Y = regressor_batch(model, Q, QD, QDD).reshape(n, nj, -1)
    F = np.zeros((n, nj, 4 * nj))
    for j in range(nj):
        F[:, j, 4 * j:4 * j + 4] = np.column_stack([np.ones(n), np.sign(QD[:, j]), QD[:, j],
                                                    QDD[:, j]])
    zero = np.zeros_like(QD)
    tilt = np.stack([inverse_dynamics_batch(model, Q, zero, zero, gravity=g)
                     for g in ((-G, 0.0, 0.0), (0.0, -G, 0.0))], axis=-1)
    W = np.array([reaction_wrenches(model, q, qd, qdd) for q, qd, qdd in zip(Q, QD, QDD)])
    cross = {}
    for side in ('stator', 'rotor'):
        m = bending_moments(model, Q, W, side)
        X = np.zeros((n, nj, 2 * nj))
        for j in range(nj):
            X[:, j, 2 * j:2 * j + 2] = m[:, j]
        cross[side] = X
    base = np.concatenate([Y, F], axis=2)
    blocks = {'rigid+friction': base, '+tilt': np.concatenate([base, tilt], axis=2),
              '+crosstalk stator': np.concatenate([base, cross['stator']], axis=2),
              '+crosstalk rotor': np.concatenate([base, cross['rotor']], axis=2)}
    return tau, blocks


def filtered(A, tau, robot, run, cutoff):
    """Return (A, tau) low-passed alike (parallel filtering), or as given for cutoff 0."""
    if not cutoff:
        return A, tau
    from scipy.signal import butter, sosfiltfilt
    dt = float(np.median(np.diff(rr.load(robot, run)['t'])))
    sos = butter(4, cutoff, fs=1.0 / dt, output='sos')
    return sosfiltfilt(sos, A, axis=0), sosfiltfilt(sos, tau, axis=0)


def fit(parts, phi0, ridge, extra_ridge=0.0, extra=0):
    """Return the least-squares coefficients of stacked (A, tau) with the ridge toward phi0.

    The last ``extra`` columns (the variant's added terms) are pulled toward zero with weight
    ``extra_ridge`` times their RMS column norm (scale-free).
    """
    A = np.vstack([a.reshape(-1, a.shape[2]) for a, _ in parts])
    y = np.concatenate([t.reshape(-1) for _, t in parts])
    w = np.zeros(A.shape[1])
    w[:phi0.size] = ridge * np.sqrt(y.size)
    if extra:
        w[-extra:] = extra_ridge * np.sqrt(np.sum(A[:, -extra:] ** 2, axis=0))
    target = np.zeros(A.shape[1])
    target[:phi0.size] = phi0
    return np.linalg.lstsq(np.vstack([A, np.diag(w)]), np.concatenate([y, w * target]),
                           rcond=None)[0]


def main():
    """Run the folds and print the tables."""
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument('--robots', nargs='+', choices=sorted(rr.ROBOTS), default=sorted(rr.ROBOTS))
    p.add_argument('--ridge', type=float, default=0.01,
                   help='weight of the pull of the inertial parameters toward the URDF')
    p.add_argument('--cutoff', type=float, default=0.0,
                   help='low-pass the training equations and torques alike, Hz (0: no)')
    p.add_argument('--extra-ridge', type=float, default=0.1,
                   help='pull of the added terms toward zero, relative to their column norms')
    args = p.parse_args()
    if rr.folder() is None:
        print(rr.MISSING + '; nothing measured')
        return 0
    start = time.perf_counter()
    print(f'realdata: {rr.folder()}; ridge {args.ridge:g}, extra ridge {args.extra_ridge:g}, '
          f'cutoff {args.cutoff:g} Hz; held-out RMS of (model - measured), N m')
    counts = {v: [0, 0] for v in VARIANTS[1:]}
    for robot in args.robots:
        model = RobotModel.from_urdf_file(rr.urdf_path(robot))
        phi0 = inertial_parameters(model)
        data = {r: columns(model, r, robot) for r in rr.ROBOTS[robot].runs}
        pooled = {v: [] for v in VARIANTS + ('authors',)}
        for _, train, run in (f for f in rr.FOLDS if f[0] == robot):
            tau = data[run][0]
            rms = {}
            for v in VARIANTS:
                c = fit([filtered(data[r][1][v], data[r][0], robot, r, args.cutoff)
                         for r in train], phi0, args.ridge,
                        args.extra_ridge, EXTRA[v] * (1 if v == '+tilt' else model.njoints))
                rms[v] = np.sqrt(np.mean((data[run][1][v] @ c - tau) ** 2, axis=0))
            rms['authors'] = rr.rms_errors(robot, run, {'authors': 'authors'})['authors']
            counts_here = run not in rr.ROBOTS[robot].authors_trained
            print(f'\n{rr.fold_name(robot, train, run)}'
                  + ('' if counts_here else ' (authors trained on this run)'))
            print('  joint         ' + ''.join(f'{v:>19}' for v in VARIANTS + ('authors',)))
            for j, name in enumerate(model.joint_names):
                cells = ''.join(f'{rms[v][j]:19.3f}' for v in VARIANTS + ('authors',))
                print(f'  {name:14}' + cells)
            for v in VARIANTS + ('authors',):
                pooled[v].append(rms[v] ** 2 * tau.shape[0])
            for v in VARIANTS[1:]:
                counts[v][0] += int(np.sum(rms[v] < rms['rigid+friction']))
                counts[v][1] += len(model.joint_names)
        rows = sum(data[r][0].shape[0] for _, _, r in (f for f in rr.FOLDS if f[0] == robot))
        print(f'\n{robot}: pooled over its folds')
        for v in VARIANTS + ('authors',):
            print(f'  {v:19}' + ' '.join(f'{x:6.3f}' for x in
                                         np.sqrt(np.sum(pooled[v], axis=0) / rows)))
        every = [(data[r][1][v], data[r][0]) for r in rr.ROBOTS[robot].runs
                 for v in ('+crosstalk stator',)]
        c = fit(every, phi0, args.ridge, args.extra_ridge,
                2 * model.njoints)[-2 * model.njoints:].reshape(-1, 2)
        print('  crosstalk (stator side) fitted on every run, % of the bending moments: '
              + '; '.join(f'{n} {100 * a:+.2f} {100 * b:+.2f}'
                          for n, (a, b) in zip(model.joint_names, c)))
        tilt = fit([(data[r][1]['+tilt'], data[r][0]) for r in rr.ROBOTS[robot].runs], phi0,
                   args.ridge, args.extra_ridge, 2)[-2:]
        print(f'  tilt fitted on every run: {np.degrees(np.arctan(np.hypot(*tilt))):.2f} deg')
    print('\njoint-folds a variant predicts better than rigid+friction: '
          + ', '.join(f'{v} {a} of {b}' for v, (a, b) in counts.items()))
    print(f'total {time.perf_counter() - start:.1f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
