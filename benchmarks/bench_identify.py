"""Benchmark: ``rnea-ros identify`` on 60 s of 1 kHz joint states of a 7-DoF arm (panda).

Writes a bag (mcap) of the panda "truth" (nominal URDF with masses +-20 %, COM +-2 cm, inertias
+-30 %, friction and rotor inertia; seed 7) following config/excitation_panda.yaml twice, with
0.05 N m effort noise, then times ``rnea-ros identify BAG --urdf panda.urdf --out ...`` run in
this process (bag reading, derivatives, regressor, WLS, consistent fit, URDF writing).  The
first run compiles/loads the numba kernels; the figure is the second run.  Target: <= 30 s on
2 cores.  Usage: python benchmarks/bench_identify.py [--seconds 60] [--rate 1000]
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


def main():
    """Write the bag, run identify twice, print the times."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--seconds', type=float, default=60.0)
    parser.add_argument('--rate', type=float, default=1000.0)
    args = parser.parse_args()
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
