"""Benchmark: rnea_ros inverse dynamics against Pinocchio's rnea, both called from Python.

For each robot (panda, ur5, talos_reduced) with a fixed and a floating base, times per call
``inverse_dynamics`` and ``pinocchio.rnea`` (interleaved blocks of calls on random states; a
time is the best block of the repeats, a ratio the median over repeats of the ratio of two
blocks timed one after the other, so that a shared machine's load drift cancels),
``inverse_dynamics_batch`` per sample on the same states (``--calls`` rows) and on ten times as
many rows, and ``forward_dynamics`` against ``pinocchio.aba``; prints a table and ratios.  The
batches run between the per-call blocks, so numba's worker threads have usually gone to sleep
and each batch pays their wake-up (``bench_call_overhead.py`` measures it):
the small batch shows that cost, the large one the throughput.  The batch runs on ``--threads``
numba threads (default: all cores) while Pinocchio's rnea is one thread: the batch ratios are
"N-thread batch vs single-thread Pinocchio"; ``--threads 1`` measures the single-thread batch.
The table is printed in the README's format (``make bench`` prints it as the README shows it).
With ``--clock cpu`` the per-call blocks are timed on the thread's CPU time (the batches stay on
the wall clock), which a loaded machine's waits for a core do not inflate.
Usage: python benchmarks/bench_inverse_dynamics.py [--repeats 31] [--calls 2000] [--threads N]
       [--robots ur5,panda] [--clock wall|cpu]
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


CLOCK = time.perf_counter      # --clock cpu: time.thread_time (see main)


def time_block(fn, args_list):
    """Return seconds per call of fn over a block of argument tuples (on CLOCK)."""
    t0 = CLOCK()
    for args in args_list:
        fn(*args)
    return (CLOCK() - t0) / len(args_list)


def bench(robot, floating, repeats, calls):
    """Return the model, best seconds and median paired ratios (see the module doc).

    Times: RNEA ours, Pinocchio, batch/sample (small, large), ABA ours, Pinocchio's aba, each
    the best of the repeats; ratios: ours/Pinocchio, batches/Pinocchio, ABA ours/Pinocchio's,
    each the median over repeats of the ratio of blocks timed next to each other.
    """
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
    times = [min(t) for t in (t_ours, t_pin, t_batch, t_big, t_fd, t_aba)]
    ratios = [statistics.median(np.array(a) / np.array(b)) for a, b in
              ((t_ours, t_pin), (t_batch, t_pin), (t_big, t_pin), (t_fd, t_aba))]
    return model, times, ratios


def pin_tau(oracle, tau):
    """Return our effort vector in Pinocchio's velocity order."""
    out = np.zeros(oracle.pm.nv)
    out[oracle.vidx] = tau
    return out


def us(seconds):
    """Return a README table cell in microseconds."""
    return f'{seconds * 1e6:.2f} µs'


def main():
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=31)
    parser.add_argument('--calls', type=int, default=2000)
    parser.add_argument('--threads', type=int, default=None,
                        help='numba threads for the batch (default: all cores)')
    parser.add_argument('--robots', default=','.join(ROBOTS))
    parser.add_argument('--clock', choices=('wall', 'cpu'), default='wall',
                        help='cpu: time the per-call blocks on the CPU time of this thread, which '
                        'does not count the time the thread waits for a core on a loaded '
                        'machine (caches shared with other jobs still slow it)')
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == 'cpu' else time.perf_counter
    import numba
    if args.threads:
        numba.set_num_threads(args.threads)
    threads = numba.get_num_threads()
    print(f'numba threads: {threads}, {args.repeats} repeats x {args.calls} calls, {args.clock} '
          'clock; times: best of the repeats; ratios: median of the per-repeat ratios of '
          'neighbouring blocks; '
          f'batch ratios: {threads}-thread batch vs single-thread Pinocchio')
    n, big = args.calls, 10 * args.calls
    vs = f'ratio ({threads}-thread batch vs 1-thread Pinocchio)'
    print('| robot | base | nv | `inverse_dynamics` | `pinocchio.rnea` | ratio | '
          f'batch ({n}, {threads} threads) per sample | {vs} | '
          f'batch ({big}, {threads} threads) per sample | {vs} | '
          '`forward_dynamics` | `pinocchio.aba` | ratio |')
    print('|' + '---|' * 13)
    for robot in args.robots.split(','):
        for floating in (False, True):
            model, times, ratios = bench(robot, floating, args.repeats, args.calls)
            ours, pin, batch, batch_big, fd, aba = times
            r_call, r_batch, r_big, r_fd = ratios
            print(f'| {robot} | {"floating" if floating else "fixed"} | {model.nv} | '
                  f'{us(ours)} | {us(pin)} | {r_call:.2f}x | '
                  f'{us(batch)} | {r_batch:.2f}x | '
                  f'{us(batch_big)} | {r_big:.2f}x | '
                  f'{us(fd)} | {us(aba)} | {r_fd:.2f}x |')


if __name__ == '__main__':
    main()
