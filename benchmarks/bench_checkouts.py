"""Benchmark: per-call inverse_dynamics / forward_dynamics of two checkouts, alternated.

For a refactoring whose speed must not change: each round runs one subprocess per checkout
(order swapped every round, so neither always runs on a warmer or quieter machine), each timing
blocks of 500 calls on random states of panda and talos_reduced, fixed and floating base.
Prints per case the minimum over all blocks and rounds (the figure least disturbed by other load
on a shared machine) and the median of the per-round medians.
Usage: python benchmarks/bench_checkouts.py OLD_CHECKOUT NEW_CHECKOUT [--rounds 4]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
sys.path.insert(0, sys.argv[1])
sys.path.insert(0, sys.argv[1] + '/test')
import numpy as np
from rnea_ros import forward_dynamics, inverse_dynamics, RobotModel
from robots import random_state, urdf_path
out = {}
for robot in ('panda', 'talos_reduced'):
    for floating in (False, True):
        model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
        rng = np.random.default_rng(0)
        states = [random_state(model, rng) for _ in range(500)]
        for name, fn in (('ID', inverse_dynamics), ('FD', forward_dynamics)):
            fn(model, *states[0])
            times = []
            for _ in range(41):
                t0 = time.perf_counter()
                for q, qd, x in states:
                    fn(model, q, qd, x)
                times.append((time.perf_counter() - t0) / len(states) * 1e6)
            key = f'{robot} {"floating" if floating else "fixed"} {name}'
            out[key] = (min(times), statistics.median(times))
print(json.dumps(out))
"""


def run(checkout):
    """Return {case: (min us, median us)} of one subprocess importing rnea_ros from checkout."""
    result = subprocess.run([sys.executable, '-c', CHILD, os.path.abspath(checkout)],
                            capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main():
    """Alternate the two checkouts and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('old')
    parser.add_argument('new')
    parser.add_argument('--rounds', type=int, default=4)
    args = parser.parse_args()
    results = {'old': [], 'new': []}
    for r in range(args.rounds):
        order = ('old', 'new') if r % 2 == 0 else ('new', 'old')
        for which in order:
            results[which].append(run(getattr(args, which)))
    print(f'{args.rounds} rounds, per call (us): min over all blocks | median of round medians')
    print('| case | old min | new min | new/old | old median | new median |')
    print('|---|---|---|---|---|---|')
    for case in results['old'][0]:
        old_min = min(r[case][0] for r in results['old'])
        new_min = min(r[case][0] for r in results['new'])
        old_med = statistics.median(r[case][1] for r in results['old'])
        new_med = statistics.median(r[case][1] for r in results['new'])
        print(f'| {case} | {old_min:.3f} | {new_min:.3f} | {new_min / old_min:.2f}x | '
              f'{old_med:.3f} | {new_med:.3f} |')


if __name__ == '__main__':
    main()
