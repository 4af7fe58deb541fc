"""Vector kernels of a control cycle: bounded merge, mimic joints, guarded clamp, range check.

A control loop at 1 kHz spends more on small numpy calls than on the RNEA itself: each call on a
short vector costs about a microsecond, two to three on a busy machine with cold caches.  These
kernels each do in one dispatcher call what took four to eight numpy calls in the node's cycle
(merge a joint state, move mimic joints, check and clamp the efforts, check the joint limits).
Every kernel states its numpy form, which the tests compare it to.  NaN fails every bound
(``abs(x) <= b`` is False).
"""

import numba
from numba import types

from rnea_ros.core.kernels.jit import OPTS

_OUT = types.Array(types.float64, 1, 'A')      # contiguous or not (views of a bigger state)
_VEC = types.Array(types.float64, 1, 'A', readonly=True)     # inputs: writable or not
_IDX = types.Array(types.intp, 1, 'A', readonly=True)
_MASK = types.Array(types.boolean, 1, 'A', readonly=True)


@numba.njit(types.intp(_VEC, _IDX, _OUT, _IDX, types.float64), **OPTS)
def scatter_bounded(values, src, out, dst, bound):
    """Write ``out[dst] = values[src]`` if every ``|values| <= bound``; return -1.

    Otherwise write nothing and return the index of the first value out of bound (or NaN).
    numpy form: ``bad = ~(np.abs(values) <= bound)``; ``bad.argmax()`` if ``bad.any()``.
    """
    for i in range(values.shape[0]):
        if not abs(values[i]) <= bound:
            return i
    for k in range(src.shape[0]):
        out[dst[k]] = values[src[k]]
    return -1


@numba.njit(types.intp(_VEC, _VEC, types.float64, _OUT), **OPTS)
def clamp_bounded(values, limits, bound, out):
    """Write ``clip(values, -limits, limits)`` into ``out``; return how many entries it changed.

    If any ``|values| > bound`` (or NaN), write nothing and return -1: the guard before a
    command.  numpy form: ``np.clip(values, -limits, limits, out)``,
    ``np.count_nonzero(out != values)``.
    """
    n = values.shape[0]
    for i in range(n):
        if not abs(values[i]) <= bound:
            return -1
    clamped = 0
    for i in range(n):
        x = values[i]
        if x > limits[i]:
            x = limits[i]
            clamped += 1
        elif x < -limits[i]:
            x = -limits[i]
            clamped += 1
        out[i] = x
    return clamped


@numba.njit(types.intp(_VEC, _VEC, _VEC, _VEC, _VEC), **OPTS)
def first_outside(q, qd, lower, upper, vmax):
    """Return the first i with q[i] outside [lower[i], upper[i]] or |qd[i]| > vmax[i], or -1.

    NaN counts as outside.  numpy form: ``~((lower <= q) & (q <= upper) & (abs(qd) <= vmax))``.
    """
    for i in range(q.shape[0]):
        if not (lower[i] <= q[i] <= upper[i] and abs(qd[i]) <= vmax[i]):
            return i
    return -1


@numba.njit(types.void(_OUT, _IDX, _IDX, _VEC, _VEC, _MASK), **OPTS)
def follow_drivers(values, joint, driver, multiplier, offset, mask):
    """Set ``values[joint[k]] = multiplier[k] * values[driver[k]] + offset[k]`` where ``mask``.

    ``mask`` is indexed by joint (a mimic joint follows only when no message names it).  numpy
    form, rows in order: ``m = mask[joint]``; ``values[joint[m]] = multiplier[m] *
    values[driver[m]] + offset[m]``.
    """
    for k in range(joint.shape[0]):
        if mask[joint[k]]:
            values[joint[k]] = multiplier[k] * values[driver[k]] + offset[k]
