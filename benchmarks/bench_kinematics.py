"""Benchmark: coriolis_matrix, frame_placement and frame_jacobian against Pinocchio, from Python.

For each robot (panda, ur5, talos_reduced) with a fixed and a floating base, times per call

- ``coriolis_matrix`` against ``pinocchio.computeCoriolisMatrix``;
- ``frame_placement`` of a tool frame against ``pinocchio.forwardKinematics`` followed by
  ``pinocchio.updateFramePlacement`` (what a Pinocchio user calls for one frame's placement);
- ``frame_jacobian`` ('LOCAL') of the same frame against ``pinocchio.computeFrameJacobian``;

on random states, in interleaved blocks of calls (a time is the best block of the repeats, a
ratio the median over repeats of the ratio of two blocks timed one after the other, so that a
shared machine's load drift cancels), as ``bench_inverse_dynamics.py``.  Prints the table in
the README's format.
``--clock cpu`` times the blocks on the thread's CPU time (not inflated by a loaded machine's
waits for a core).
Usage: python benchmarks/bench_kinematics.py [--repeats 31] [--calls 2000] [--robots ur5,panda]
       [--clock wall|cpu]
"""

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'test'))

from rnea_ros import (coriolis_matrix, frame_jacobian, frame_placement,  # noqa: E402
                      RobotModel)
from robots import PinocchioOracle, random_state, urdf_path  # noqa: E402

ROBOTS = ['panda', 'ur5', 'talos_reduced']
TOOL = {'panda': 'panda_hand', 'ur5': 'tool0', 'talos_reduced': 'gripper_left_base_link'}


CLOCK = time.perf_counter      # --clock cpu: time.thread_time (see main)


def time_block(fn, args_list):
    """Return seconds per call of fn over a block of argument tuples (on CLOCK)."""
    t0 = CLOCK()
    for args in args_list:
        fn(*args)
    return (CLOCK() - t0) / len(args_list)


def bench(robot, floating, repeats, calls):
    """Return the model and, per function, (ours best, Pinocchio best, median paired ratio)."""
    path = urdf_path(robot)
    model = RobotModel.from_urdf_file(path, floating_base=floating)
    oracle = PinocchioOracle(model, path)
    pin, pm, pd = oracle.pin, oracle.pm, oracle.pd
    link = TOOL[robot]
    fid = pm.getFrameId(link, pin.FrameType.BODY)
    rng = np.random.default_rng(0)
    states = [random_state(model, rng)[:2] for _ in range(calls)]
    pin_states = [oracle.to_pin(q, qd, qd)[:2] for q, qd in states]

    def pin_placement(q):
        pin.forwardKinematics(pm, pd, q)
        return pin.updateFramePlacement(pm, pd, fid)

    pairs = {
        'coriolis': (coriolis_matrix, [(model, q, qd) for q, qd in states],
                     pin.computeCoriolisMatrix, [(pm, pd, q, v) for q, v in pin_states]),
        'placement': (frame_placement, [(model, q, link) for q, _ in states],
                      pin_placement, [(q,) for q, _ in pin_states]),
        'jacobian': (frame_jacobian, [(model, q, link) for q, _ in states],
                     pin.computeFrameJacobian,
                     [(pm, pd, q, fid, pin.ReferenceFrame.LOCAL) for q, _ in pin_states]),
    }
    out = {}
    for name, (ours, ours_args, theirs, their_args) in pairs.items():
        t_ours, t_pin = [], []
        for _ in range(repeats):                  # interleaved, so load hits both alike
            t_ours.append(time_block(ours, ours_args))
            t_pin.append(time_block(theirs, their_args))
        out[name] = (min(t_ours), min(t_pin),
                     statistics.median(np.array(t_ours) / np.array(t_pin)))
    return model, out


def us(seconds):
    """Return a README table cell in microseconds."""
    return f'{seconds * 1e6:.2f} µs'


def main():
    """Run the benchmark and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=31)
    parser.add_argument('--calls', type=int, default=2000)
    parser.add_argument('--robots', default=','.join(ROBOTS))
    parser.add_argument('--clock', choices=('wall', 'cpu'), default='wall',
                        help='cpu: time the per-call blocks on the CPU time of this thread, which '
                        'does not count the time the thread waits for a core on a loaded '
                        'machine (caches shared with other jobs still slow it)')
    args = parser.parse_args()
    global CLOCK
    CLOCK = time.thread_time if args.clock == 'cpu' else time.perf_counter
    print(f'{args.repeats} repeats x {args.calls} calls, {args.clock} clock; times: best of the '
          'repeats; ratios: median of the per-repeat ratios of neighbouring blocks')
    print('| robot | base | nv | `coriolis_matrix` | `computeCoriolisMatrix` | ratio | '
          '`frame_placement` | `forwardKinematics` + `updateFramePlacement` | ratio | '
          '`frame_jacobian` | `computeFrameJacobian` | ratio |')
    print('|' + '---|' * 12)
    for robot in args.robots.split(','):
        for floating in (False, True):
            model, res = bench(robot, floating, args.repeats, args.calls)
            cells = ' | '.join(f'{us(a)} | {us(b)} | {r:.2f}x' for a, b, r in res.values())
            print(f'| {robot} | {"floating" if floating else "fixed"} | {model.nv} | {cells} |')


if __name__ == '__main__':
    main()
