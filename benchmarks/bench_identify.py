"""Benchmark: ``rnea-ros identify`` on 60 s of 1 kHz joint states of a 7-DoF arm (panda).

Writes a bag (mcap) of the panda "truth" (nominal URDF with masses +-20 %, COM +-2 cm, inertias
+-30 %, friction and rotor inertia; seed 7) following config/excitation_panda.yaml twice, with
0.05 N m effort noise, then times ``rnea-ros identify BAG --urdf panda.urdf --out ...`` run in
this process (bag reading, derivatives, regressor, WLS, consistent fit, URDF writing).  The
first run compiles/loads the numba kernels; the figure is the second run.  Target: <= 30 s on
2 cores.  ``--accuracy [SEED ...]`` prints instead the validation and gravity errors of the
identified model on simulated data (see :func:`accuracy`).
Usage: python benchmarks/bench_identify.py [--seconds 60] [--rate 1000] [--accuracy 1 2 3]
"""

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'test'))

from identification_data import measured, states_along, truth_model  # noqa: E402,I100
import numpy as np  # noqa: E402
from rnea_ros.analysis.analyze import write_joint_states  # noqa: E402
from rnea_ros.analysis.cli import main as cli  # noqa: E402
from rnea_ros.analysis.excitation import FourierTrajectory  # noqa: E402
from rnea_ros.core.model import RobotModel  # noqa: E402
from robots import urdf_path  # noqa: E402

EXCITATION = os.path.join(os.path.dirname(__file__), '..', 'config', 'excitation_panda.yaml')


def accuracy(seeds, noise=0.05):
    """Print, per truth seed, the validation error and gravity error of the identified model.

    Training: the excitation, 30 s at 200 Hz, efforts + ``noise`` N m; validation: another
    motion (harmonics of a reversed, b negated, 70 % speed) without noise; gravity at 50 poses.
    """
    from rnea_ros.analysis.identification import identify, is_physically_consistent, predict
    from rnea_ros.analysis.output import identified_urdf
    from rnea_ros.core.dynamics import gravity_torques
    panda = urdf_path('panda')
    with open(panda, encoding='utf-8') as f:
        xml = f.read()
    nominal = RobotModel.from_urdf_file(panda)
    traj = FourierTrajectory.from_yaml(EXCITATION)
    val = FourierTrajectory(traj.joints, traj.base_frequency, traj.duration, traj.q0,
                            0.7 * traj.a[:, ::-1], -0.7 * traj.b)
    print('seed  cond  max(val err / effort RMS)  worst joint err N m  max gravity err / max '
          'gravity  consistent')
    for seed in seeds:
        truth = truth_model('panda', seed)
        rng = np.random.default_rng(100 + seed)
        Q, QD, QDD = states_along(nominal, traj, np.arange(0.0, traj.duration, 1 / 200.0))
        result = identify(nominal, Q, QD, QDD, measured(truth, Q, QD, QDD, noise, rng))
        Qv, QDv, QDDv = states_along(nominal, val, np.arange(0.0, val.duration, 1 / 100.0))
        Ev = measured(truth, Qv, QDv, QDDv, 0.0, rng)
        err = np.sqrt(np.mean((predict(nominal, result.parameters(), Qv, QDv, QDDv) - Ev) ** 2,
                              axis=0))[:7]
        rms = np.sqrt(np.mean(Ev ** 2, axis=0))[:7]
        ident = RobotModel.from_urdf_string(identified_urdf(xml, nominal, result.phi,
                                                            result.joint_params))
        poses = states_along(nominal, val, rng.uniform(0, val.duration, 50))[0]
        g_true = np.array([gravity_torques(truth, q)[:7] for q in poses])
        g_id = np.array([gravity_torques(ident, q)[:7] for q in poses])
        ok = all(is_physically_consistent(result.phi[10 * b:10 * b + 10])
                 for b in range(nominal.nbodies))
        gravity = np.abs(g_id - g_true).max() / np.abs(g_true).max()
        print(f'{seed:4d}  {result.condition:4.0f}  {np.max(err / rms) * 100:24.2f} %  '
              f'{err.max():19.4f}  {gravity * 100:27.3f} %  {ok}')


def main():
    """Write the bag, run identify twice, print the times (or --accuracy figures)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=60.0)
    parser.add_argument('--rate', type=float, default=1000.0)
    parser.add_argument('--accuracy', type=int, nargs='*', metavar='SEED',
                        help='instead: accuracy on simulated data for these truth seeds')
    args = parser.parse_args()
    if args.accuracy is not None:
        accuracy(args.accuracy or [1, 2, 3, 4, 5])
        return
    panda = urdf_path('panda')
    nominal = RobotModel.from_urdf_file(panda)
    traj = FourierTrajectory.from_yaml(EXCITATION)
    t = np.arange(0.0, args.seconds, 1.0 / args.rate)
    Q, QD, QDD = states_along(nominal, traj, t)
    E = measured(truth_model('panda', 7), Q, QD, QDD, 0.05, np.random.default_rng(0))
    with tempfile.TemporaryDirectory() as folder:
        bag = os.path.join(folder, 'bag')
        t0 = time.perf_counter()
        write_joint_states(bag, t + 100.0, list(nominal.joint_names), Q, QD, E)
        print(f'wrote {len(t)} samples ({args.seconds:g} s at {args.rate:g} Hz) in '
              f'{time.perf_counter() - t0:.1f} s')
        for run in ('first (numba kernels load)', 'second'):
            t0, c0 = time.perf_counter(), time.process_time()
            with contextlib.redirect_stdout(io.StringIO()):     # the report is not timed output
                code = cli(['identify', bag, '--urdf', panda, '--out',
                            os.path.join(folder, 'identified.urdf'), '--json'])
            elapsed, cpu = time.perf_counter() - t0, time.process_time() - c0
            print(f'identify, {run}: {elapsed:.1f} s wall, {cpu:.1f} s CPU (all threads), '
                  f'exit {code}')
        print(f'identify on {len(t)} samples of a 7-DoF arm: {elapsed:.1f} s wall, {cpu:.1f} s '
              f'CPU, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores '
              '(target <= 30 s)', )


if __name__ == '__main__':
    main()
