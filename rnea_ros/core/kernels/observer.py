"""The arithmetic of one momentum-observer step (:mod:`rnea_ros.core.observer`).

:func:`model_terms` computes every model term of a sample in one call (p = M qd, g, C and
beta = C^T qd - g, by the RNEA and Coriolis kernels), :func:`residual_step` advances r: two calls
instead of some twenty numpy calls on short vectors per sample.  Each kernel states its numpy
form, which the tests compare it to.  They return 0, or 1 when a result is not finite.
"""

import math

import numba
from numba import types

from rnea_ros.core.friction import FS_NEG, FS_POS, FV_NEG, FV_POS, FX, OFF
from rnea_ros.core.kernels.coriolis import coriolis
from rnea_ros.core.kernels.jit import MAT, OPTS, VEC
from rnea_ros.core.kernels.rnea import rnea

# model_terms: which kernel failed (added to its status).
TERMS_P, TERMS_G, TERMS_C, TERMS_BETA = 1000, 2000, 3000, 4000


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


@numba.njit(types.int64(VEC, VEC, VEC, VEC, VEC, VEC, VEC, MAT, VEC, VEC, VEC, VEC), **OPTS)
def model_terms(model, ws_p, ws_g, ws_c, q, qd, zero, C, g, armature, p, beta):
    """Write p = M(q) qd, g(q), C(q, qd) and beta = C^T qd - g in one call.

    ``ws_p``: a workspace buffer with a_0 = 0 (RNEA(q, 0, qd) = M_rb qd), ``ws_g`` one with
    a_0 = -gravity, ``ws_c`` any; ``zero`` nv zeros.  numpy form: ``p = M qd`` (rotor inertia
    included), ``g = RNEA(q, 0, 0)``, ``C = coriolis_matrix(q, qd)``, ``beta = C.T @ qd - g``.
    Returns 0, TERMS_P / TERMS_G / TERMS_C + the kernel's status, or TERMS_BETA when p or beta
    is not finite.
    """
    status = rnea(model, ws_p, q, zero, qd, p)
    if status:
        return TERMS_P + status
    status = rnea(model, ws_g, q, zero, zero, g)
    if status:
        return TERMS_G + status
    status = coriolis(model, ws_c, q, qd, C)
    if status:
        return TERMS_C + status
    if momentum_and_beta(C, qd, g, armature, p, beta):
        return TERMS_BETA
    return 0


@numba.njit(types.int64(MAT, VEC, types.int64, types.float64, types.boolean, types.float64,
                        VEC), **OPTS)
def subtract_friction(table, qd, offset, band, tanh_law, stribeck_velocity, beta):
    """Subtract the joint friction of :mod:`rnea_ros.core.friction` from beta[offset:].

    Per joint j (velocity v = qd[offset + j], table row j): ``s = clip(v / band, -1, 1)`` (or
    ``tanh(v / band)``), ``tau_f = Fv(v) v + (Fs(v) + Fx exp(-(v / v_st)^2)) s + off`` with the
    coefficients of v's direction (qd > 0: the + ones).  numpy form: ``beta[offset:] -=
    friction_effort(table, qd[offset:], band, law, stribeck_velocity)``.
    """
    bad = 0
    for j in range(table.shape[0]):
        v = qd[offset + j]
        x = v / band
        if tanh_law:
            s = math.tanh(x)
        else:
            s = min(1.0, max(-1.0, x))
        if v > 0.0:
            fv, fs = table[j, FV_POS], table[j, FS_POS]
        else:
            fv, fs = table[j, FV_NEG], table[j, FS_NEG]
        if table[j, FX] != 0.0:
            y = v / stribeck_velocity
            fs += table[j, FX] * math.exp(-y * y)
        b = beta[offset + j] - (fv * v + fs * s + table[j, OFF])
        beta[offset + j] = b
        if not math.isfinite(b):
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


@numba.njit(types.int64(VEC, VEC, VEC), **OPTS)
def exceed(r, thresholds, out):
    """Write |r| into out; return how many entries exceed their threshold.

    numpy form: ``out[:] = abs(r); (out > thresholds).sum()``.
    """
    count = 0
    for j in range(r.shape[0]):
        a = abs(r[j])
        out[j] = a
        if a > thresholds[j]:
            count += 1
    return count


@numba.njit(types.int64(MAT, VEC, types.float64, MAT, MAT, VEC, VEC), **OPTS)
def damped_least_squares(J, r, damping, A, V, b, F):
    """Write F = (J J^T + l^2 I)^-1 J r, l^2 = max(0, damping^2 - s_min^2); return sweeps.

    The eigenvalues mu = s^2 of the 6x6 A = J J^T come from cyclic Jacobi rotations (Golub &
    Van Loan, Matrix Computations: the symmetric Jacobi method), so that
    F = sum_i v_i (v_i . b) / (mu_i + l^2) with b = J r; a direction with mu_i + l^2 = 0
    (damping 0 and J rank deficient) contributes nothing, as in the smallest-norm solution.
    numpy form: ``U, s, Vt = svd(J, full_matrices=False)``;
    ``F = U @ (s / (s**2 + l2) * (Vt @ r))``.  Returns -1 when the rotations do not converge
    (not finite input).
    """
    m, n = J.shape
    for i in range(m):
        s = 0.0
        for k in range(n):
            s += J[i, k] * r[k]
        b[i] = s
        for j in range(m):
            s = 0.0
            for k in range(n):
                s += J[i, k] * J[j, k]
            A[i, j] = s
            V[i, j] = 1.0 if i == j else 0.0
    sweeps = 0
    while True:
        off, scale = 0.0, 0.0
        for p in range(m):
            scale += A[p, p] * A[p, p]
            for q in range(p + 1, m):
                off += A[p, q] * A[p, q]
        if not math.isfinite(off + scale):
            return -1
        if off <= 1e-30 * scale or sweeps >= 50:
            break
        sweeps += 1
        for p in range(m):
            for q in range(p + 1, m):
                apq = A[p, q]
                if apq == 0.0:
                    continue
                theta = (A[q, q] - A[p, p]) / (2.0 * apq)
                t = (1.0 if theta >= 0.0 else -1.0) / (abs(theta) + math.sqrt(theta * theta
                                                                              + 1.0))
                c = 1.0 / math.sqrt(t * t + 1.0)
                s = t * c
                for k in range(m):              # A <- A G (columns p, q)
                    akp, akq = A[k, p], A[k, q]
                    A[k, p] = c * akp - s * akq
                    A[k, q] = s * akp + c * akq
                for k in range(m):              # A <- G^T A (rows p, q)
                    apk, aqk = A[p, k], A[q, k]
                    A[p, k] = c * apk - s * aqk
                    A[q, k] = s * apk + c * aqk
                for k in range(m):              # V <- V G
                    vkp, vkq = V[k, p], V[k, q]
                    V[k, p] = c * vkp - s * vkq
                    V[k, q] = s * vkp + c * vkq
    if sweeps >= 50:
        return -1
    for i in range(m):                          # eigenvalues, sorted ascending, into F
        mu = max(A[i, i], 0.0)
        k = i
        while k > 0 and F[k - 1] > mu:
            F[k] = F[k - 1]
            k -= 1
        F[k] = mu
    mu_max = F[m - 1]
    mu_min = F[m - min(m, n)]                   # the smallest of the min(6, nv) of J's
    lam2 = max(0.0, damping * damping - mu_min)
    for i in range(m):
        F[i] = 0.0
    for i in range(m):
        d = max(A[i, i], 0.0) + lam2
        if d <= 1e-14 * mu_max or d == 0.0:
            continue
        s = 0.0
        for k in range(m):
            s += V[k, i] * b[k]
        s /= d
        for k in range(m):
            F[k] += V[k, i] * s
    return sweeps
