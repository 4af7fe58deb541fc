"""Benchmark: the joint-torque regressor against Pinocchio's computeJointTorqueRegressor.

For panda, ur5 and talos_reduced (fixed base), times per call ``regressor`` and
``pinocchio.computeJointTorqueRegressor`` (interleaved, median over repeats of a block of calls
on random states) and ``regressor_batch`` per sample on ``--batch`` rows, into a new array and
into a reused ``out`` (as Pinocchio reuses its data); prints a table and
the ratios against Pinocchio (targets: per call <= 1.0x, batch per sample <= 0.3x); the medians
and, for a machine shared with other jobs, the minima over the repeats.
Usage: python benchmarks/bench_regressor.py [--repeats 21] [--calls 500] [--batch 5000]
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'test'))

from rnea_ros.core.model import RobotModel  # noqa: E402
from rnea_ros.core.regressor import regressor, regressor_batch  # noqa: E402
from robots import PinocchioOracle, random_state, urdf_path  # noqa: E402

ROBOTS = ['panda', 'ur5', 'talos_reduced']


def time_block(fn, args_list):
    """Return seconds per call of fn over a block of argument tuples."""
    t0 = time.perf_counter()
    for args in args_list:
        fn(*args)
    return (time.perf_counter() - t0) / len(args_list)


def bench(robot, repeats, calls, batch):
    """Return the model and median seconds: ours per call, Pinocchio per call, batch/sample."""
    path = urdf_path(robot)
    model = RobotModel.from_urdf_file(path)
    oracle = PinocchioOracle(model, path)
    pin, pm, pd = oracle.pin, oracle.pm, oracle.pd
    rng = np.random.default_rng(0)
    states = [random_state(model, rng) for _ in range(calls)]
    ours = [(model, q, qd, qdd) for q, qd, qdd in states]
    theirs = [(pm, pd, *oracle.to_pin(q, qd, qdd)) for q, qd, qdd in states]
    big = [random_state(model, rng) for _ in range(batch)]
    Q, QD, QDD = (np.ascontiguousarray(x) for x in zip(*big))
    regressor_batch(model, Q[:100], QD[:100], QDD[:100])
    out = regressor_batch(model, Q, QD, QDD)      # reused like Pinocchio's data
    t_ours, t_pin, t_batch, t_reused = [], [], [], []
    for _ in range(repeats):                       # interleaved, so load hits both alike
        t_ours.append(time_block(regressor, ours))
        t_pin.append(time_block(pin.computeJointTorqueRegressor, theirs))
        t0 = time.perf_counter()
        regressor_batch(model, Q, QD, QDD)
        t_batch.append((time.perf_counter() - t0) / batch)
        t0 = time.perf_counter()
        regressor_batch(model, Q, QD, QDD, out=out)
        t_reused.append((time.perf_counter() - t0) / batch)
    series = (t_ours, t_pin, t_batch, t_reused)
    return model, [statistics.median(t) for t in series], [min(t) for t in series]


def main():
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=21)
    parser.add_argument('--calls', type=int, default=500)
    parser.add_argument('--batch', type=int, default=5000)
    args = parser.parse_args()
    print(f'{"robot":<15} {"stat":<7} {"nv":>3} {"cols":>5} {"ours us":>8} {"pin us":>8} '
          f'{"ratio":>6} {"batch us/sample":>16} {"ratio":>6} {"batch out= us/sample":>21} '
          f'{"ratio":>6}')
    for robot in ROBOTS:
        model, *stats = bench(robot, args.repeats, args.calls, args.batch)
        for label, (ours, pin, batch, reused) in zip(('median', 'minimum'), stats):
            print(f'{robot:<15} {label:<7} {model.nv:>3} {10 * model.nbodies:>5} '
                  f'{ours * 1e6:8.2f} {pin * 1e6:8.2f} {ours / pin:6.2f} {batch * 1e6:16.2f} '
                  f'{batch / pin:6.2f} {reused * 1e6:21.2f} {reused / pin:6.2f}')
    print(f'load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores')


if __name__ == '__main__':
    main()
