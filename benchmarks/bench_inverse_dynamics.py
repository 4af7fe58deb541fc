"""Benchmark: rnea_ros inverse dynamics against Pinocchio's rnea, both called from Python.

For each robot (panda, ur5, talos_reduced) with a fixed and a floating base, times per call
``inverse_dynamics`` and ``pinocchio.rnea`` (interleaved, median of many repeats of a block of
calls on random states), ``inverse_dynamics_batch`` per sample on the same states (``--calls``
rows) and on ten times as many rows, and ``forward_dynamics`` against ``pinocchio.aba``; prints
a table and ratios.  The batches run between the per-call blocks, so numba's worker threads have
usually gone to sleep and each batch pays their wake-up (about 0.3 ms on the 2-core VM measured):
the small batch shows that cost, the large one the throughput.
Usage: python benchmarks/bench_inverse_dynamics.py [--repeats 31] [--calls 2000]
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'test'))

from rnea_ros import (forward_dynamics, inverse_dynamics, inverse_dynamics_batch,  # noqa: E402
                      RobotModel)
from robots import PinocchioOracle, random_state, urdf_path  # noqa: E402

ROBOTS = ['panda', 'ur5', 'talos_reduced']


def time_block(fn, args_list):
    """Return seconds per call of fn over a block of argument tuples."""
    t0 = time.perf_counter()
    for args in args_list:
        fn(*args)
    return (time.perf_counter() - t0) / len(args_list)


def bench(robot, floating, repeats, calls):
    """Return the model and median seconds: RNEA ours, Pinocchio, batch/sample, ABA ours, Pin."""
    path = urdf_path(robot)
    model = RobotModel.from_urdf_file(path, floating_base=floating)
    oracle = PinocchioOracle(model, path)
    pin, pm, pd = oracle.pin, oracle.pm, oracle.pd
    rng = np.random.default_rng(0)
    states = [random_state(model, rng) for _ in range(calls)]
    ours_args = [(model, q, qd, qdd) for q, qd, qdd in states]
    pin_args = [(pm, pd, *oracle.to_pin(q, qd, qdd)) for q, qd, qdd in states]
    Q, QD, QDD = (np.ascontiguousarray(x) for x in zip(*states))
    big = [random_state(model, rng) for _ in range(10 * calls)]
    BQ, BQD, BQDD = (np.ascontiguousarray(x) for x in zip(*big))
    inverse_dynamics_batch(model, Q, QD, QDD)
    fd_args = [(model, q, qd, qdd) for q, qd, qdd in states]
    aba_args = [(pm, pd, *oracle.to_pin(q, qd, np.zeros(model.nv))[:2], pin_tau(oracle, qdd))
                for q, qd, qdd in states]
    t_ours, t_pin, t_batch, t_big, t_fd, t_aba = [], [], [], [], [], []
    for _ in range(repeats):                      # interleaved, so load hits both alike
        t_ours.append(time_block(inverse_dynamics, ours_args))
        t_pin.append(time_block(pin.rnea, pin_args))
        t0 = time.perf_counter()
        inverse_dynamics_batch(model, Q, QD, QDD)
        t_batch.append((time.perf_counter() - t0) / calls)
        t_fd.append(time_block(forward_dynamics, fd_args))
        t_aba.append(time_block(pin.aba, aba_args))
        t0 = time.perf_counter()
        inverse_dynamics_batch(model, BQ, BQD, BQDD)
        t_big.append((time.perf_counter() - t0) / len(big))
    return model, [statistics.median(t) for t in (t_ours, t_pin, t_batch, t_big, t_fd, t_aba)]


def pin_tau(oracle, tau):
    """Return our effort vector in Pinocchio's velocity order."""
    out = np.zeros(oracle.pm.nv)
    out[oracle.vidx] = tau
    return out


def main():
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=31)
    parser.add_argument('--calls', type=int, default=2000)
    args = parser.parse_args()
    import numba
    print(f'numba threads: {numba.get_num_threads()}, {args.repeats} repeats x {args.calls} '
          'calls, median per call (us)')
    n, big = args.calls, 10 * args.calls
    header = ('| robot | base | nv | rnea_ros per call | Pinocchio per call | ratio | '
              f'batch of {n} per sample | ratio | batch of {big} per sample | ratio | '
              'FD (ABA) | Pinocchio aba | ratio |')
    print(header)
    print('|' + '---|' * 13)
    for robot in ROBOTS:
        for floating in (False, True):
            model, (ours, pin, batch, batch_big, fd, aba) = bench(robot, floating,
                                                                  args.repeats, args.calls)
            print(f'| {robot} | {"floating" if floating else "fixed"} | {model.nv} | '
                  f'{ours * 1e6:.2f} | {pin * 1e6:.2f} | {ours / pin:.2f}x | '
                  f'{batch * 1e6:.2f} | {batch / pin:.2f}x | '
                  f'{batch_big * 1e6:.2f} | {batch_big / pin:.2f}x | '
                  f'{fd * 1e6:.2f} | {aba * 1e6:.2f} | {fd / aba:.2f}x |')


if __name__ == '__main__':
    main()
