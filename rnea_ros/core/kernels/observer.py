"""The vector arithmetic of one momentum-observer step (:mod:`rnea_ros.core.observer`).

Two calls instead of some twenty numpy calls on short vectors per sample; each kernel states its
numpy form, which the tests compare it to.  They return 0, or 1 when a result is not finite.
"""

import math

import numba
from numba import types

from rnea_ros.core.kernels.jit import MAT, OPTS, VEC


@numba.njit(types.int64(MAT, VEC, VEC, VEC, VEC, VEC), **OPTS)
def momentum_and_beta(C, qd, g, armature, p, beta):
    """Add the rotor inertia to p = M qd and write beta = C^T qd - g.

    numpy form: ``p += armature * qd; beta[:] = C.T @ qd - g``.
    """
    n = qd.shape[0]
    bad = 0
    for j in range(n):
        p[j] += armature[j] * qd[j]
        s = -g[j]
        for i in range(n):
            s += C[i, j] * qd[i]
        beta[j] = s
        if not (math.isfinite(s) and math.isfinite(p[j])):
            bad = 1
    return bad


@numba.njit(types.int64(VEC, VEC, VEC, VEC, VEC, VEC, VEC, types.float64, types.boolean, VEC),
            **OPTS)
def residual_step(p, p_prev, beta, beta_prev, tau, tau_prev, gains, h, held, r):
    """Advance r = a r + (1 - a) tau_hat, a = exp(-K h) (see rnea_ros.core.observer).

    numpy form: ``hat = (p - p_prev) / h - (beta + beta_prev) / 2 - (tau if held else
    (tau + tau_prev) / 2)``; ``a = exp(-gains * h)``; ``r[:] = hat + a * (r - hat)``.
    """
    bad = 0
    for j in range(p.shape[0]):
        effort = tau[j] if held else 0.5 * (tau[j] + tau_prev[j])
        hat = (p[j] - p_prev[j]) / h - 0.5 * (beta[j] + beta_prev[j]) - effort
        x = hat + math.exp(-gains[j] * h) * (r[j] - hat)
        r[j] = x
        if not math.isfinite(x):
            bad = 1
    return bad
