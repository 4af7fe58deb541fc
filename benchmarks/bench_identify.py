"""Benchmark: ``rnea-ros identify`` time and peak memory against the recording's length.

Writes bags (mcap) of the panda "truth" (nominal URDF with masses +-20 %, COM +-2 cm, inertias
+-30 %, rotor inertia, sigmoid friction, effort offsets; seed 7) following
config/excitation_panda.yaml, logged as real loggers do
(:func:`identification_data.realworld_recording`: 1.0 ms mean interval, stamps 0.7 to 8.8 ms
apart, 6 % duplicate rows, noise; the gripper not recorded), 30 s pieces written one after the
other for long recordings.
Each ``rnea-ros identify BAG --urdf panda.urdf --out ...`` runs in its own process (numba
kernels cached beforehand); wall time and that process's peak resident memory (``wait4``
ru_maxrss) are printed per length.  Targets: one hour (3.6 M rows) in <= 120 s and <= 500 MB,
with every conditioned sample in the fit (identify streams them into
:class:`rnea_ros.analysis.identification.Accumulator`; only the anti-aliased decimation to
200 Hz thins the 1 kHz grid, whatever the length), so peak memory must stay flat with length.
``--accuracy [SEED ...]`` prints instead the validation and gravity errors of the identified
model on simulated data (see :func:`accuracy`); ``--realworld`` issue 21's targets on
real-looking logs of the panda, xarm7 and ur5 (see :func:`realworld`).

Usage: python benchmarks/bench_identify.py [--minutes 0.5 5 30] [--hour] [--accuracy 1 2 3]
       [--realworld]
"""

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'test'))

from identification_data import (measured, realworld_recording, states_along,  # noqa: E402,I100
                                 truth_model, XARM7)
import numpy as np  # noqa: E402
from rnea_ros.analysis.excitation import FourierTrajectory  # noqa: E402
from rnea_ros.analysis.recordings import JointStateWriter  # noqa: E402
from rnea_ros.core.model import RobotModel  # noqa: E402
from robots import urdf_path  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
EXCITATION = os.path.join(ROOT, 'config', 'excitation_panda.yaml')


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


REALWORLD = (
    [('panda', s, f) for s, f in ((1, 'sigmoid'), (2, 'asymmetric'), (3, 'sigmoid'),
                                  (4, 'stribeck'), (5, 'asymmetric'), (6, 'coulomb'),
                                  (7, 'sigmoid'))]
    + [(XARM7, s, f) for s, f in ((2, 'stribeck'), (3, 'sigmoid'), (5, 'asymmetric'),
                                  (7, 'stribeck'), (8, 'sigmoid'), (11, 'sigmoid'))]
    + [('ur5', 3, 'sigmoid'), ('ur5', 4, 'asymmetric')])


def realworld(cases=REALWORLD):
    """Print issue 21's targets per case: default identify on real-looking logs.

    Training: 30 s of :func:`identification_data.realworld_recording` (about 1 kHz, jittered
    stamps, 6 % duplicates, offsets, the friction law named, panda without its gripper);
    validation: the same robot on another motion (harmonics reversed, 70 % speed), other
    noise.  Columns: the worst joint's validation error over its bound max(3 % of its effort
    RMS, 0.1 N m) (target <= 1), gravity error at 50 poses over the largest gravity effort
    (target <= 1 %), every inertial consistent, condition number, cutoffs chosen.
    """
    import json
    from rnea_ros.analysis.cli import main as cli
    from rnea_ros.analysis.identification import is_physically_consistent
    from rnea_ros.core.dynamics import gravity_torques
    from rnea_ros.core.regressor import inertial_parameters
    print(f"{'robot':>6} {'seed':>4} {'friction':>10} {'err/bound':>9} {'gravity':>8} "
          f"{'consistent':>10} {'cond':>6} {'cutoffs Hz':>11}")
    for robot, seed, law in cases:
        with tempfile.TemporaryDirectory() as folder:
            train = realworld_recording(robot, seed=seed, friction=law)
            traj = train.traj
            other = FourierTrajectory(traj.joints, traj.base_frequency, traj.duration, traj.q0,
                                      0.7 * traj.a[:, ::-1], -0.7 * traj.b)
            check = realworld_recording(robot, seed=seed, friction=law, traj=other,
                                        noise_seed=100 + seed)
            out, text = os.path.join(folder, 'id.urdf'), io.StringIO()
            with contextlib.redirect_stdout(text), contextlib.redirect_stderr(io.StringIO()):
                code = cli(['identify', train.write(os.path.join(folder, 't')), '--urdf',
                            train.urdf, '--out', out, '--validate',
                            check.write(os.path.join(folder, 'c')), '--json'])
            name = os.path.basename(robot).split('.')[0]
            if code:
                print(f'{name:>6} {seed:4d} {law:>10} exit {code}')
                continue
            summary = json.loads(text.getvalue())
            ratio = max(r['identified'] / max(0.03 * r['effort_rms'], 0.1)
                        for r in summary['residual_rms']['validation'].values())
            model = RobotModel.from_urdf_file(out)
            ok = all(is_physically_consistent(p)
                     for p in inertial_parameters(model).reshape(-1, 10) if p[0] > 0)
            rng = np.random.default_rng(seed)
            Q = check.clean[1][rng.integers(0, check.t.size, 50)]
            g_true = np.array([gravity_torques(train.truth, q) for q in Q])
            g_id = np.array([gravity_torques(model, q) for q in Q])
            gravity = 100.0 * np.abs(g_id - g_true).max() / np.abs(g_true).max()
            cut = list(next(iter(summary['signals'].values()))['cutoff_hz'].values())
            print(f'{name:>6} {seed:4d} {law:>10} {ratio:9.2f} {gravity:7.3f}% {str(ok):>10} '
                  f"{summary['condition_number']:6.3g} {min(cut):5.2f}-{max(cut):4.2f}",
                  flush=True)


def write_log(path, seconds, seed=7, rate=1046.0):
    """Write ``seconds`` of the logged panda to a bag, 30 s pieces at a time; return rows.

    ``rate`` 1046 Hz with the logger's gaps gives a mean interval of 1.0 ms (3.6 M rows/hour).
    """
    rows = 0
    with JointStateWriter(path, realworld_recording('panda', seed, 1.0).names) as writer:
        for k in range(int(np.ceil(seconds / 30.0))):
            piece = realworld_recording('panda', seed, min(30.0, seconds - 30.0 * k), rate,
                                        start=100.0 + 30.0 * k)
            writer.write(piece.t, piece.Q, piece.QD, piece.E)
            rows += piece.t.size
    return rows


def run_identify(bag, out):
    """Run identify in a child process; return (wall s, CPU s, peak RSS MB, exit code)."""
    command = [sys.executable, '-m', 'rnea_ros.analysis.cli', 'identify', bag, '--urdf',
               urdf_path('panda'), '--out', out, '--json']
    t0 = time.perf_counter()
    child = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - t0
    child.returncode = os.waitstatus_to_exitcode(status)
    err = child.stderr.read().decode()
    child.stderr.close()
    if child.returncode:
        print(err)
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0, child.returncode


def main():
    """Write the bags, run identify on each, print the table (or --accuracy figures)."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--minutes', type=float, nargs='*', default=[0.5, 5.0, 30.0],
                        help='recording lengths (default 0.5 5 30)')
    parser.add_argument('--hour', action='store_true', help='add the one-hour recording')
    parser.add_argument('--accuracy', type=int, nargs='*', metavar='SEED',
                        help='instead: accuracy on simulated data for these truth seeds')
    parser.add_argument('--realworld', action='store_true',
                        help="instead: issue 21's targets on real-looking logs (see realworld)")
    args = parser.parse_args()
    if args.accuracy is not None:
        accuracy(args.accuracy or [1, 2, 3, 4, 5])
        return
    if args.realworld:
        realworld()
        return
    minutes = list(args.minutes) + ([60.0] if args.hour else [])
    with tempfile.TemporaryDirectory() as folder:
        warm = os.path.join(folder, 'warm')
        write_log(warm, 5.0)
        run_identify(warm, os.path.join(folder, 'warm.urdf'))    # numba caches are loaded
        print(f"{'length':>8} {'rows':>10} {'write s':>8} {'identify s':>11} {'CPU s':>8} "
              f"{'peak MB':>8} exit")
        for m in minutes:
            bag = os.path.join(folder, f'log{m:g}')
            t0 = time.perf_counter()
            rows = write_log(bag, 60.0 * m)
            written = time.perf_counter() - t0
            wall, cpu, rss, code = run_identify(bag, os.path.join(folder, 'id.urdf'))
            print(f'{m:6g} min {rows:10d} {written:8.1f} {wall:11.1f} {cpu:8.1f} {rss:8.0f} '
                  f'{code}', flush=True)
            subprocess.run(['rm', '-rf', bag], check=True)
        print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; targets: '
              '1 h in <= 120 s, <= 500 MB')


if __name__ == '__main__':
    main()
