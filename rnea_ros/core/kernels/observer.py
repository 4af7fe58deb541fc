"""The arithmetic of one momentum-observer step (:mod:`rnea_ros.core.observer`).

:func:`observer_step` does a whole sample in one call: the measured efforts (gathered, checked),
the model terms p = M qd and beta = C^T qd - g (:func:`momentum_terms`), the friction
(:func:`subtract_friction`), the residual (:func:`residual_step`), the restarts and the largest
|r| so far, into the observer's preallocated state.  Each kernel states its numpy form, which the
tests compare it to.

**The model terms in O(n).**  The observer needs C^T qd, not C.  With ``M = sum_i J_i^T I_i
J_i`` over the bodies (root-frame Jacobians J_i and inertias I_i, RBDA §2.15), ``Mdot = C +
C^T`` and ``C qd = sum_i J_i^T (I_i Jdot_i qd + v_i x* I_i v_i)`` (the RNEA at qdd = 0, without
gravity), the derivative of ``I_i = X I X^T`` (``Idot_i = v_i x* I_i - I_i v_i x``) cancels all
but one term of ``Mdot qd - C qd``:

    C^T qd = sum_i Jdot_i^T h_i,    h_i = I_i v_i (the body's spatial momentum),

which per joint j (motion subspace S_j of body j, Sdot_j = v_j x S_j in body j's frame) is
``(C^T qd)_j = (v_j x S_j)^T h^c_j = -S_j^T (v_j x* h^c_j)`` with the momentum ``h^c_j`` of
body j's subtree; likewise ``p_j = (M qd)_j = S_j^T h^c_j`` and ``g_j = S_j^T f^c_j`` with the
subtree's gravity force ``f^c_j`` (f_i = I_i a_i for the acceleration a_0 = -gravity moved to
body i).  One forward pass (v_i, a_i, h_i, f_i in body frames, as the RNEA's) and one backward
pass (the composites h^c, f^c moved to the parents) give p, C^T qd and g, in about the time of
one RNEA, where the Coriolis matrix costs O(n^2).  It is ``C^T qd = Mdot qd - C qd``, the
identity behind the observer (De Luca & Mattone 2005; Haddadin et al. 2017), for any C with
``Mdot = C + C^T`` (the Christoffel one of ``coriolis_matrix``, Pinocchio's
``computeCoriolisMatrix``): C qd is the same for all.  The rotor inertia adds ``armature qd`` to
p.
"""

import math

import numba
from numba import types

from rnea_ros.core.friction import FS_NEG, FS_POS, FV_NEG, FV_POS, FX, OFF
from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels.body import (add_force_to_parent, inertia_times, joint_placement,
                                        motion_to_body)
from rnea_ros.core.kernels.jit import (check_state, INLINE, MAT, model_tables, OPTS, VEC,
                                       workspace_tables)
from rnea_ros.core.layout import (ARMATURE, AXIS, IV, KIND, PARENT, STATUS_OK, STATUS_OVERFLOW,
                                  W_A, W_F, W_V, W_X)

# The RNEA rows of the observer's own workspace (it has no external wrench): transform and v as
# the RNEA's, a the gravity acceleration alone, then the composite momentum and gravity force.
W_H, W_G = W_F, W_X
_EFFORT = types.Array(types.float64, 1, 'C', readonly=True)    # writable or not (message views)
_INDEX = types.Array(types.intp, 1, 'C', readonly=True)

# observer_step: the rows of ``state`` (nv columns each) and the entries of ``scalars``.  R is
# the observer's residual, OUT what it reports: R, or R low-passed once more (FILTER > 0).
R, P, BETA, TAU, P_NEW, BETA_NEW, TAU_NEW, GAINS, LARGEST, OUT, STATE_ROWS = range(11)
(T, STARTED, STEP, BAD, MAX_GAP, HELD, FRICTION, OFFSET, TANH, MAX_EFFORT, FILTER,
 SCALARS) = range(12)
# The friction table of observer_step: the 6 columns of rnea_ros.core.friction, then per joint
# the velocity scales v_s (BAND_COLUMN) and v_st (STRIBECK_COLUMN).
BAND_COLUMN, STRIBECK_COLUMN, FRICTION_COLUMNS = 6, 7, 8
# observer_step's outcomes: the sample was used (r valid) ...
STEP_OK, STEP_START, STEP_BACK, STEP_GAP = 0, 1, 2, 3
# ... or not (state unchanged, except STEP_OVERFLOW: restarted); STEP_TERMS + a kernel status.
STEP_TIME, STEP_SAME, STEP_PARTIAL, STEP_EFFORT, STEP_FRICTION, STEP_OVERFLOW = range(10, 16)
STEP_TERMS = 100


@numba.njit(**INLINE)
def momentum_forward(ints, reals, q, qd, ws):
    """Forward pass (module doc): per body, in its frame, v, a = X a_parent, h = I v, f = I a."""
    nb = ints.shape[0]
    a00, a01, a02 = ws[nb, 0], ws[nb, 1], ws[nb, 2]
    a03, a04, a05 = ws[nb, 3], ws[nb, 4], ws[nb, 5]
    for b in range(nb):
        joint_placement(ints, reals, q, b, ws)
    for b in range(nb):
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        if lam < 0:
            motion_to_body(ws, b, a00, a01, a02, a03, a04, a05, W_A)
        else:
            motion_to_body(ws, b, ws[lam, W_A], ws[lam, W_A + 1], ws[lam, W_A + 2],
                           ws[lam, W_A + 3], ws[lam, W_A + 4], ws[lam, W_A + 5], W_A)
        if kind == FREE_FLYER:
            for r in range(6):
                ws[b, W_V + r] = qd[iv + r]
        else:
            if lam < 0:
                for r in range(6):
                    ws[b, W_V + r] = 0.0
            else:
                motion_to_body(ws, b, ws[lam, W_V], ws[lam, W_V + 1], ws[lam, W_V + 2],
                               ws[lam, W_V + 3], ws[lam, W_V + 4], ws[lam, W_V + 5], W_V)
            sd = qd[iv]
            col = W_V + 3 if kind == REVOLUTE else W_V      # v += S qd
            ws[b, col] += reals[b, AXIS] * sd
            ws[b, col + 1] += reals[b, AXIS + 1] * sd
            ws[b, col + 2] += reals[b, AXIS + 2] * sd
        h = inertia_times(reals, b, ws[b, W_V], ws[b, W_V + 1], ws[b, W_V + 2],
                          ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5])
        f = inertia_times(reals, b, ws[b, W_A], ws[b, W_A + 1], ws[b, W_A + 2],
                          ws[b, W_A + 3], ws[b, W_A + 4], ws[b, W_A + 5])
        for r in range(6):
            ws[b, W_H + r] = h[r]
            ws[b, W_G + r] = f[r]


@numba.njit(**INLINE)
def momentum_backward(ints, reals, qd, ws, p, beta):
    """Backward pass (module doc): p = S^T h^c + armature qd, beta = -S^T (v x* h^c) - S^T f^c."""
    for b in range(ints.shape[0] - 1, -1, -1):
        kind = ints[b, KIND]
        iv = ints[b, IV]
        h0, h1, h2 = ws[b, W_H], ws[b, W_H + 1], ws[b, W_H + 2]
        h3, h4, h5 = ws[b, W_H + 3], ws[b, W_H + 4], ws[b, W_H + 5]
        vx, vy, vz = ws[b, W_V], ws[b, W_V + 1], ws[b, W_V + 2]
        ox, oy, oz = ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5]
        # c = -(v x* h) = [h_lin x o; h_lin x v + h_ang x o]
        c0, c1, c2 = h1 * oz - h2 * oy, h2 * ox - h0 * oz, h0 * oy - h1 * ox
        c3 = h1 * vz - h2 * vy + h4 * oz - h5 * oy
        c4 = h2 * vx - h0 * vz + h5 * ox - h3 * oz
        c5 = h0 * vy - h1 * vx + h3 * oy - h4 * ox
        if kind == FREE_FLYER:
            c = (c0, c1, c2, c3, c4, c5)
            for r in range(6):
                p[iv + r] = ws[b, W_H + r]
                beta[iv + r] = c[r] - ws[b, W_G + r]
        else:
            ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
            if kind == REVOLUTE:            # S = [0; u]
                p[iv] = ux * h3 + uy * h4 + uz * h5
                beta[iv] = (ux * (c3 - ws[b, W_G + 3]) + uy * (c4 - ws[b, W_G + 4])
                            + uz * (c5 - ws[b, W_G + 5]))
            else:                           # S = [u; 0]
                p[iv] = ux * h0 + uy * h1 + uz * h2
                beta[iv] = (ux * (c0 - ws[b, W_G]) + uy * (c1 - ws[b, W_G + 1])
                            + uz * (c2 - ws[b, W_G + 2]))
            p[iv] += reals[b, ARMATURE] * qd[iv]
        lam = ints[b, PARENT]
        if lam >= 0:
            add_force_to_parent(ws, b, h0, h1, h2, h3, h4, h5, ws, lam, W_H)
            add_force_to_parent(ws, b, ws[b, W_G], ws[b, W_G + 1], ws[b, W_G + 2],
                                ws[b, W_G + 3], ws[b, W_G + 4], ws[b, W_G + 5], ws, lam, W_G)


@numba.njit(types.int64(VEC, VEC, VEC, VEC, VEC, VEC), **OPTS)
def momentum_terms(model, buffer, q, qd, p, beta):
    """Write p = M(q) qd (rotor inertia included) and beta = C^T(q, qd) qd - g(q); a status.

    ``buffer``: a workspace buffer whose a_0 is -gravity (its RNEA rows are overwritten).  numpy
    form: ``p = mass_matrix(q) @ qd``, ``beta = coriolis_matrix(q, qd).T @ qd -
    gravity_torques(q)``.  Returns check_state's status, or STATUS_OVERFLOW when p or beta is
    not finite.
    """
    ints, reals = model_tables(model)
    status = check_state(ints, q, qd, qd)
    if status != STATUS_OK:
        return status
    ws = workspace_tables(buffer, ints.shape[0])[0]
    momentum_forward(ints, reals, q, qd, ws)
    momentum_backward(ints, reals, qd, ws, p, beta)
    for j in range(p.shape[0]):
        if not (math.isfinite(p[j]) and math.isfinite(beta[j])):
            return STATUS_OVERFLOW
    return STATUS_OK


@numba.njit(types.int64(MAT, VEC, types.int64, types.boolean, VEC), **OPTS)
def subtract_friction(table, qd, offset, tanh_law, beta):
    """Subtract the joint friction of :mod:`rnea_ros.core.friction` from beta[offset:].

    Per joint j (velocity v = qd[offset + j], table row j: the 6 friction columns, then v_s and
    v_st): ``s = clip(v / v_s, -1, 1)`` (or ``tanh(v / v_s)``), ``tau_f = Fv(v) v + (Fs(v) + Fx
    exp(-(v / v_st)^2)) s + off`` with the coefficients of v's direction (qd > 0: the + ones).
    numpy form: ``beta[offset:] -= friction_effort(table[:, :6], qd[offset:], table[:, 6], law,
    table[:, 7])``.
    """
    bad = 0
    for j in range(table.shape[0]):
        v = qd[offset + j]
        x = v / table[j, BAND_COLUMN]
        if tanh_law:
            s = math.tanh(x)
        else:
            s = min(1.0, max(-1.0, x))
        if v > 0.0:
            fv, fs = table[j, FV_POS], table[j, FS_POS]
        else:
            fv, fs = table[j, FV_NEG], table[j, FS_NEG]
        if table[j, FX] != 0.0:
            y = v / table[j, STRIBECK_COLUMN]
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


@numba.njit(types.void(VEC, types.float64, types.float64, VEC), **OPTS)
def output_step(r, bandwidth, h, out):
    """Advance the reported residual: out = r (bandwidth 0) or out = b out + (1 - b) r.

    ``b = exp(-bandwidth h)``: a first-order low-pass of r with the input held over the step,
    exact for any h.  numpy form: ``out[:] = r if bandwidth == 0 else r + b * (out - r)``.
    """
    if bandwidth == 0.0:
        for j in range(r.shape[0]):
            out[j] = r[j]
        return
    b = math.exp(-bandwidth * h)
    for j in range(r.shape[0]):
        out[j] = r[j] + b * (out[j] - r[j])


@numba.njit(types.int64(VEC, VEC, VEC, VEC, _EFFORT, _INDEX, types.float64, MAT, VEC, MAT),
            **OPTS)
def observer_step(model, buffer, q, qd, effort, index, t, state, scalars, friction):
    """Use one sample at time t: efforts, p, beta, friction, r; return STEP_* (see the top).

    ``state``: the rows R, P, BETA, TAU (of the last sample used), P_NEW, BETA_NEW, TAU_NEW
    (scratch), GAINS, LARGEST (max |OUT_j| since the caller last cleared it) and OUT (the
    reported residual: R, or with FILTER > 0 R low-passed by :func:`output_step`), nv columns
    each; ``scalars``: T (time of the last sample used), STARTED, STEP (the last step h), BAD
    (an effort's index), then the settings MAX_GAP, HELD, FRICTION, OFFSET, TANH (friction:
    :func:`subtract_friction`, with the table ``friction``), MAX_EFFORT and FILTER (1/s).
    ``effort[index[k]]`` is the effort of the k-th of the last ``len(index)`` velocity
    coordinates (those before are 0).

    In order: a non-finite or repeated t (STEP_TIME, STEP_SAME), an index outside effort
    (STEP_PARTIAL), an effort not finite or above MAX_EFFORT (STEP_EFFORT, its index in BAD),
    :func:`momentum_terms` (STEP_TERMS + its status) and the friction (STEP_FRICTION) leave
    the state as it was.  Then the first sample (STEP_START), time going back (STEP_BACK) or a
    step above MAX_GAP (STEP_GAP) start the observer with r = 0 (and OUT = 0); any other
    sample advances r by :func:`residual_step` and OUT by :func:`output_step` (STEP_OK, or
    STEP_OVERFLOW when r is not finite: r = 0 and the next sample starts again).  A used
    sample becomes the last one and updates LARGEST.
    """
    nv = state.shape[1]
    if not math.isfinite(t):
        return STEP_TIME
    started = scalars[STARTED] != 0.0
    if started and t == scalars[T]:
        return STEP_SAME
    m = index.shape[0]
    first = nv - m
    if first < 0:
        return STEP_PARTIAL
    tau = state[TAU_NEW]
    bound = scalars[MAX_EFFORT]
    for k in range(m):
        i = index[k]
        if i < 0 or i >= effort.shape[0]:
            return STEP_PARTIAL
        x = effort[i]
        if not abs(x) <= bound:
            scalars[BAD] = i
            return STEP_EFFORT
        tau[first + k] = x
    for j in range(first):
        tau[j] = 0.0
    status = momentum_terms(model, buffer, q, qd, state[P_NEW], state[BETA_NEW])
    if status != STATUS_OK:
        return STEP_TERMS + status
    if scalars[FRICTION] != 0.0 and subtract_friction(
            friction, qd, int(scalars[OFFSET]), scalars[TANH] != 0.0, state[BETA_NEW]):
        return STEP_FRICTION
    h = t - scalars[T]
    outcome = STEP_OK if started else STEP_START
    if started and h < 0.0:
        outcome = STEP_BACK
    elif started and h > scalars[MAX_GAP]:
        outcome = STEP_GAP
    scalars[STEP] = h
    r, out = state[R], state[OUT]
    if outcome != STEP_OK:
        for j in range(nv):
            r[j] = 0.0
            out[j] = 0.0
    elif residual_step(state[P_NEW], state[P], state[BETA_NEW], state[BETA], tau, state[TAU],
                       state[GAINS], h, scalars[HELD] != 0.0, r):
        for j in range(nv):
            r[j] = 0.0
            out[j] = 0.0
        scalars[STARTED] = 0.0
        return STEP_OVERFLOW
    else:
        output_step(r, scalars[FILTER], h, out)
    scalars[T] = t
    scalars[STARTED] = 1.0
    largest = state[LARGEST]
    for j in range(nv):
        state[P, j] = state[P_NEW, j]
        state[BETA, j] = state[BETA_NEW, j]
        state[TAU, j] = tau[j]
        a = abs(out[j])
        if a > largest[j]:
            largest[j] = a
    return outcome


@numba.njit(types.int64(VEC, VEC, VEC), **OPTS)
def exceed(r, thresholds, out):
    """Write |r| into out; return how many entries exceed their threshold.

    numpy form: ``out[:] = abs(r); (out > thresholds).sum()``.  -1 (nothing written) when the
    three lengths differ.
    """
    if r.shape[0] != thresholds.shape[0] or out.shape[0] != thresholds.shape[0]:
        return -1
    count = 0
    for j in range(r.shape[0]):
        a = abs(r[j])
        out[j] = a
        if a > thresholds[j]:
            count += 1
    return count


@numba.njit(types.int64(VEC, VEC, types.float64, VEC, VEC, types.float64, types.float64, VEC,
                        VEC, VEC), **OPTS)
def exceed_gated(r, qd, t, moving, reversal, band, hold, slow_until, thresholds, out):
    """Write |r| and each joint's threshold at time t; return how many entries exceed it.

    A joint is in its reversal window while ``|qd_j| < band`` (or qd_j is not finite) and for
    ``hold`` s after: ``slow_until_j`` (the state, -inf at the start) becomes ``t + hold``
    whenever it is slow.  Its threshold is ``reversal_j`` inside the window, ``moving_j``
    outside.  numpy form: ``slow = ~(abs(qd) >= band); slow_until[slow] = t + hold;
    thresholds[:] = where(t <= slow_until, reversal, moving); out[:] = abs(r);
    (out > thresholds).sum()``.  -1 (nothing written) when the lengths differ.
    """
    n = r.shape[0]
    if qd.shape[0] != n or moving.shape[0] != n or reversal.shape[0] != n or \
            slow_until.shape[0] != n or thresholds.shape[0] != n or out.shape[0] != n:
        return -1
    count = 0
    for j in range(n):
        if not abs(qd[j]) >= band:
            slow_until[j] = t + hold
        th = reversal[j] if t <= slow_until[j] else moving[j]
        thresholds[j] = th
        a = abs(r[j])
        out[j] = a
        if a > th:
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
