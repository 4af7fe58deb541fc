"""Benchmark: ``rnea-ros identify`` time and peak memory against the recording's length.

Writes bags (mcap) of the panda "truth" (nominal URDF with masses +-20 %, COM +-2 cm, inertias
+-30 %, rotor inertia, sigmoid friction, effort offsets; seed 7) following
config/excitation_panda.yaml, logged as real loggers do (:func:`identification_data.
realworld_recording`: about 1 kHz, stamps 0.7 to 8.8 ms apart, 6 % duplicate rows, noise;
the gripper not recorded), 30 s pieces written one after the other for long recordings.
Each ``rnea-ros identify BAG --urdf panda.urdf --out ...`` runs in its own process (numba
kernels cached beforehand); wall time and that process's peak resident memory (``wait4``
ru_maxrss) are printed per length.  Targets: one hour (3.6 M rows) in <= 120 s and <= 500 MB.
``--accuracy [SEED ...]`` prints instead the validation and gravity errors of the identified
model on simulated data (see :func:`accuracy`).

Usage: python benchmarks/bench_identify.py [--minutes 0.5 5 30] [--hour] [--accuracy 1 2 3]
"""

import argparse
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'test'))

from identification_data import (measured, realworld_recording, states_along,  # noqa: E402,I100
                                 truth_model)
import numpy as np  # noqa: E402
from rnea_ros.analysis.analyze import JointStateWriter  # noqa: E402
from rnea_ros.analysis.excitation import FourierTrajectory  # noqa: E402
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


def write_log(path, seconds, seed=7):
    """Write ``seconds`` of the logged panda to a bag, 30 s pieces at a time; return rows."""
    rows = 0
    with JointStateWriter(path, realworld_recording('panda', seed, 1.0).names) as writer:
        for k in range(int(np.ceil(seconds / 30.0))):
            piece = realworld_recording('panda', seed, min(30.0, seconds - 30.0 * k),
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
    args = parser.parse_args()
    if args.accuracy is not None:
        accuracy(args.accuracy or [1, 2, 3, 4, 5])
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
