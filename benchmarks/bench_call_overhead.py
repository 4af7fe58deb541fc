"""Benchmark: the fixed costs behind the README's Speed section, each printed with its method.

- numba's dispatcher cost per array argument: trivial kernels (compiled like rnea_ros's, no
  reference-counting runtime) taking 1 to 6 arrays; the slope of the per-call time;
- the call path of an ur5 ``inverse_dynamics`` call: its RNEA kernel called through numba's
  dispatcher and through its compiled entry point (``core.checks.entry_point``, what the plain
  call uses), ``numpy.empty`` of the result, and the rest (the Python wrapper and its checks);
- the cost of releasing and retaking the GIL: the 6-array kernel with and without ``nogil``;
- the wake-up of numba's worker threads: ``inverse_dynamics_batch`` (ur5, 128 rows = 2 blocks)
  right after another batch, and after 0.1 s idle (the workers have gone to sleep);
- ``from rnea_ros import inverse_dynamics`` (the first use, which loads the kernels) in a fresh
  interpreter: with an empty ``NUMBA_CACHE_DIR`` (the kernels compile: the first import after
  installation) and again with that cache filled.

Per-call times are the best of ``--repeats`` interleaved blocks (a shared machine's load only
ever adds time); the wake-up is the median after-idle batch minus the best back-to-back batch;
import times are medians of ``--imports`` fresh interpreters.  Each figure is also given
relative to a peer timed in the same process (an ur5 ``inverse_dynamics`` call).
Usage: python benchmarks/bench_call_overhead.py [--repeats 31] [--imports 3]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numba
from numba import types
from numba.core import options as numba_options
import numpy as np

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

from rnea_ros import inverse_dynamics, inverse_dynamics_batch, RobotModel  # noqa: E402
from rnea_ros.core import kernels  # noqa: E402
from rnea_ros.core.checks import entry_point  # noqa: E402
from robots import random_state, urdf_path  # noqa: E402

_VEC = types.Array(types.float64, 1, 'C')
# compiled like rnea_ros's kernels: without numba's reference-counted runtime (if numba has it)
_OPTS = {'error_model': 'numpy',
         **({'_nrt': False} if hasattr(numba_options.DefaultOptions, '_nrt') else {})}


def _kernels(nogil):
    """Return kernels taking 1..6 float64 vectors (index = number of arrays)."""
    def k1(a):
        return a[0]

    def k2(a, b):
        return a[0] + b[0]

    def k3(a, b, c):
        return a[0] + c[0]

    def k4(a, b, c, d):
        return a[0] + d[0]

    def k5(a, b, c, d, e):
        return a[0] + e[0]

    def k6(a, b, c, d, e, f):
        return a[0] + f[0]

    out = {}
    for n, fn in enumerate((k1, k2, k3, k4, k5, k6), start=1):
        out[n] = numba.njit(types.float64(*([_VEC] * n)), nogil=nogil, **_OPTS)(fn)
    return out


def per_call(fn, args, calls):
    """Return seconds per call of fn(*args) over a block of calls."""
    t0 = time.perf_counter()
    for _ in range(calls):
        fn(*args)
    return (time.perf_counter() - t0) / calls


def dispatcher_and_gil(repeats, calls=20000):
    """Return (ns per array argument, ns for nogil, ns per inverse_dynamics call on ur5)."""
    plain, nogil = _kernels(False), _kernels(True)
    arrays = [np.zeros(3) for _ in range(6)]
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    q, qd, qdd = random_state(model, np.random.default_rng(0))
    times = {n: [] for n in plain}
    t_gil, t_nogil, t_id = [], [], []
    for _ in range(repeats):                      # interleaved: load hits all alike
        for n, fn in plain.items():
            times[n].append(per_call(fn, arrays[:n], calls))
        t_gil.append(times[6][-1])
        t_nogil.append(per_call(nogil[6], arrays, calls))
        t_id.append(per_call(inverse_dynamics, (model, q, qd, qdd), calls // 4))
    n = np.arange(1, 7)
    best = np.array([min(times[k]) for k in n])
    slope = np.polyfit(n, best, 1)[0]
    gil = min(t_nogil) - min(t_gil)
    return slope * 1e9, gil * 1e9, min(t_id) * 1e9


def call_path(repeats, calls=2000):
    """Return ns per call of the parts of an ur5 inverse_dynamics call (see the module doc).

    Small blocks, many of them (each repeat times every part ten times), best block kept: a
    machine shared with other jobs only ever adds time.
    """
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    q, qd, qdd = random_state(model, np.random.default_rng(0))
    out = np.empty(model.nv)
    km, buf = model.kernel_model, model.default_workspace.buffer
    parts = {'call': (inverse_dynamics, (model, q, qd, qdd)),
             'dispatcher': (kernels.rnea, (km, buf, q, qd, qdd, out)),
             'entry': (entry_point(kernels.rnea), (km, buf, q, qd, qdd, out)),
             'empty': (np.empty, (model.nv,))}
    best = dict.fromkeys(parts, float('inf'))
    for _ in range(repeats * 10):
        for name, (fn, args) in parts.items():
            best[name] = min(best[name], per_call(fn, args, calls))
    return {name: t * 1e9 for name, t in best.items()}


def batch_wake_up(repeats, rows=128, idle=0.1):
    """Return (ms per batch right after another, ms after idle) on ur5."""
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    rng = np.random.default_rng(1)
    Q, QD, QDD = (np.ascontiguousarray(x) for x in
                  zip(*[random_state(model, rng) for _ in range(rows)]))
    inverse_dynamics_batch(model, Q, QD, QDD)
    hot, cold = [], []
    for _ in range(repeats):
        time.sleep(idle)
        t0 = time.perf_counter()
        inverse_dynamics_batch(model, Q, QD, QDD)
        t1 = time.perf_counter()
        inverse_dynamics_batch(model, Q, QD, QDD)
        t2 = time.perf_counter()
        cold.append(t1 - t0)
        hot.append(t2 - t1)
    return min(hot) * 1e3, statistics.median(cold) * 1e3


# ``import rnea_ros`` alone loads nothing (its API is imported on first use): time the import
# of the first algorithm, which loads (or compiles) the kernels.
_IMPORT = ('import time; t = time.perf_counter(); from rnea_ros import inverse_dynamics; '
           'print(time.perf_counter() - t)')


def import_times(imports):
    """Return (s first import with an empty numba cache, s import with the cache filled)."""
    cold, warm = [], []
    for _ in range(imports):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, NUMBA_CACHE_DIR=cache, PYTHONPATH=ROOT)
            for out in (cold, warm):
                run = subprocess.run([sys.executable, '-c', _IMPORT], env=env, cwd=ROOT,
                                     capture_output=True, text=True, check=True)
                out.append(float(run.stdout.strip().splitlines()[-1]))
    return statistics.median(cold), statistics.median(warm)


def main():
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--repeats', type=int, default=31)
    parser.add_argument('--imports', type=int, default=3)
    args = parser.parse_args()
    per_arg, gil, call = dispatcher_and_gil(args.repeats)
    path = call_path(args.repeats)
    hot, cold = batch_wake_up(args.repeats)
    first, cached = import_times(args.imports)
    print(f'numba {numba.__version__}, {numba.get_num_threads()} threads, threading layer '
          f'{numba.threading_layer()}; best of {args.repeats} repeats, median of '
          f'{args.imports} imports')
    print('| cost | measured | relative to |')
    print('|---|---|---|')
    print(f'| numba dispatcher, per array argument | {per_arg:.0f} ns | '
          f'{per_arg / call:.3f} of an ur5 `inverse_dynamics` call ({call:.0f} ns) |')
    c = path['call']
    print(f'| ur5 `inverse_dynamics`, plain call (small blocks) | {c:.0f} ns | |')
    print(f'| its RNEA kernel through numba\'s dispatcher | {path["dispatcher"]:.0f} ns | '
          f'{path["dispatcher"] / c:.2f} of that call |')
    print(f'| the same kernel through its entry point (what the call uses) | '
          f'{path["entry"]:.0f} ns | {path["entry"] / c:.2f} of that call |')
    print(f'| `numpy.empty(nv)` for tau | {path["empty"]:.0f} ns | {path["empty"] / c:.2f} |')
    rest = c - path['entry'] - path['empty']
    print(f'| the rest: Python wrapper and its checks | {rest:.0f} ns | {rest / c:.2f} |')
    print(f'| releasing and retaking the GIL (`nogil`) | {gil:.0f} ns | '
          f'{gil / call:.3f} of an ur5 call ({call:.0f} ns) |')
    print(f'| batch wake-up (ur5, 128 rows after 0.1 s idle minus right after a batch) | '
          f'{cold - hot:.2f} ms | {cold:.2f} ms vs {hot:.2f} ms |')
    print(f'| first `from rnea_ros import inverse_dynamics` (empty numba cache: compiles) | '
          f'{first:.1f} s | {first / cached:.0f}x the cached import |')
    print(f'| the same import with the cache filled | {cached:.2f} s | |')


if __name__ == '__main__':
    main()
