"""Numba kernel of the articulated-body algorithm (RBDA §7.3, Table 7.1): forward dynamics.

:func:`aba` computes what :func:`rnea_ros.core.reference.aba` computes (tests compare them) in
three passes over the model's flat tables, one function each: :func:`velocity_pass`,
:func:`articulated_pass`, :func:`acceleration_pass`.  Per-body results live in the workspace's
ABA rows (columns ``B_*`` of :mod:`rnea_ros.core.layout`), scratch matrices in its last two rows.
"""

import numba
from numba import types
import numpy as np

from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels.body import (add_force_to_parent, bias_force, joint_placement,
                                        motion_to_body)
from rnea_ros.core.kernels.jit import (all_finite, check_state, INLINE, model_tables, OPTS, VEC,
                                       workspace_tables)
from rnea_ros.core.layout import (ARMATURE, AXIS, B_C, B_DINV, B_IA, B_PA, B_U, B_u, H, I_O, IV,
                                  KIND, MASS, PARENT, STATUS_OK, STATUS_OVERFLOW,
                                  STATUS_SINGULAR, W_A, W_P, W_V)


@numba.njit(**INLINE)
def congruence_to_parent(ws, b, M, wa, lam, R, rot, T, Y):
    """wa[lam, IA] += X^T M X for the transform X = [[E, -E [p]], [0, E]] of body b.

    With M = [[A, B], [B^T, C]] symmetric and A', B', C' = E^T (A, B, C) E (rotated to the
    parent), P = [p], Y = A' P and Z = P B':
    X^T M X = [[A', B' - Y], [(B' - Y)^T, C' + Z + Z^T - P Y]]  (P^T = -P, A' = A'^T).
    R, rot, T, Y are scratch arrays (3x3, 3x3x3, 3x3, 3x3).
    """
    for r in range(3):
        for k in range(3):
            R[r, k] = ws[b, 3 * r + k]          # R = parent_R_body = E^T
    for blk in range(3):                       # rot[blk] = R Mblk R^T for A, B, C
        r0 = 0 if blk < 2 else 3
        c0 = 0 if blk == 0 else 3
        for r in range(3):
            for k in range(3):                 # T = Mblk R^T
                T[r, k] = (M[r0 + r, c0] * R[k, 0] + M[r0 + r, c0 + 1] * R[k, 1]
                           + M[r0 + r, c0 + 2] * R[k, 2])
        for r in range(3):
            for k in range(3):
                rot[blk, r, k] = R[r, 0] * T[0, k] + R[r, 1] * T[1, k] + R[r, 2] * T[2, k]
    px, py, pz = ws[b, W_P], ws[b, W_P + 1], ws[b, W_P + 2]
    for r in range(3):                         # Y = A' P: column k of P is p x e_k
        Y[r, 0] = rot[0, r, 1] * pz - rot[0, r, 2] * py
        Y[r, 1] = rot[0, r, 2] * px - rot[0, r, 0] * pz
        Y[r, 2] = rot[0, r, 0] * py - rot[0, r, 1] * px
    for k in range(3):                         # T = Z = P B', then T - P Y (column k)
        z0 = py * rot[1, 2, k] - pz * rot[1, 1, k]
        z1 = pz * rot[1, 0, k] - px * rot[1, 2, k]
        z2 = px * rot[1, 1, k] - py * rot[1, 0, k]
        T[0, k] = z0
        T[1, k] = z1
        T[2, k] = z2
        rot[2, 0, k] += z0 - (py * Y[2, k] - pz * Y[1, k])
        rot[2, 1, k] += z1 - (pz * Y[0, k] - px * Y[2, k])
        rot[2, 2, k] += z2 - (px * Y[1, k] - py * Y[0, k])
    for r in range(3):
        for k in range(3):
            top_right = rot[1, r, k] - Y[r, k]
            wa[lam, B_IA + 6 * r + k] += rot[0, r, k]
            wa[lam, B_IA + 6 * r + 3 + k] += top_right
            wa[lam, B_IA + 6 * (3 + k) + r] += top_right
            wa[lam, B_IA + 6 * (3 + r) + 3 + k] += rot[2, r, k] + T[k, r]


@numba.njit(**OPTS)
def cholesky_inverse(D, n, L, out, x):
    """Write D^-1 (D n x n symmetric) into out via Cholesky; return False if not positive."""
    scale = 1.0
    for i in range(n):
        scale = max(scale, abs(D[i, i]))
    for i in range(n):
        for j in range(i + 1):
            s = D[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                if s <= 1e-12 * scale:
                    return False
                L[i, i] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    for c in range(n):
        for i in range(n):
            x[i] = 0.0
        x[c] = 1.0
        for i in range(n):
            s = x[i]
            for k in range(i):
                s -= L[i, k] * x[k]
            x[i] = s / L[i, i]
        for i in range(n - 1, -1, -1):
            s = x[i]
            for k in range(i + 1, n):
                s -= L[k, i] * x[k]
            x[i] = s / L[i, i]
        for i in range(n):
            out[i, c] = x[i]
    return True


@numba.njit(**INLINE)
def velocity_pass(ints, reals, q, qd, ws, wa):
    """Pass 1 (root to leaves): v_i, c_i = v_i x vJ, IA_i = I_i, pA_i = v_i x* I_i v_i - f_ext."""
    for b in range(ints.shape[0]):
        joint_placement(ints, reals, q, b, ws)
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        j0 = j1 = j2 = j3 = j4 = j5 = 0.0          # vJ = S qd
        if kind == FREE_FLYER:
            j0, j1, j2, j3, j4, j5 = qd[iv], qd[iv + 1], qd[iv + 2], qd[iv + 3], qd[iv + 4], \
                qd[iv + 5]
        elif kind == REVOLUTE:
            j3, j4, j5 = reals[b, AXIS] * qd[iv], reals[b, AXIS + 1] * qd[iv], \
                reals[b, AXIS + 2] * qd[iv]
        else:
            j0, j1, j2 = reals[b, AXIS] * qd[iv], reals[b, AXIS + 1] * qd[iv], \
                reals[b, AXIS + 2] * qd[iv]
        if lam < 0:
            for r in range(6):
                ws[b, W_V + r] = 0.0
        else:
            motion_to_body(ws, b, ws[lam, W_V], ws[lam, W_V + 1], ws[lam, W_V + 2],
                           ws[lam, W_V + 3], ws[lam, W_V + 4], ws[lam, W_V + 5], W_V)
        ws[b, W_V] += j0
        ws[b, W_V + 1] += j1
        ws[b, W_V + 2] += j2
        ws[b, W_V + 3] += j3
        ws[b, W_V + 4] += j4
        ws[b, W_V + 5] += j5
        vx, vy, vz = ws[b, W_V], ws[b, W_V + 1], ws[b, W_V + 2]
        ox, oy, oz = ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5]
        # c = v x vJ = [w x jl + vl x jw; w x jw]
        wa[b, B_C] = oy * j2 - oz * j1 + vy * j5 - vz * j4
        wa[b, B_C + 1] = oz * j0 - ox * j2 + vz * j3 - vx * j5
        wa[b, B_C + 2] = ox * j1 - oy * j0 + vx * j4 - vy * j3
        wa[b, B_C + 3] = oy * j5 - oz * j4
        wa[b, B_C + 4] = oz * j3 - ox * j5
        wa[b, B_C + 5] = ox * j4 - oy * j3
        body_inertia_matrix(reals, b, wa)
        p0, p1, p2, p3, p4, p5 = bias_force(reals, ws, b, vx, vy, vz, ox, oy, oz)
        wa[b, B_PA], wa[b, B_PA + 1], wa[b, B_PA + 2] = p0, p1, p2
        wa[b, B_PA + 3], wa[b, B_PA + 4], wa[b, B_PA + 5] = p3, p4, p5


@numba.njit(**INLINE)
def body_inertia_matrix(reals, b, wa):
    """Write IA = I_b = [[m 1, -[h]], [[h], I_O]] (RBDA eq. 2.63, [lin; ang]) into wa[b, B_IA]."""
    m = reals[b, MASS]
    hx, hy, hz = reals[b, H], reals[b, H + 1], reals[b, H + 2]
    for r in range(3):
        for k in range(3):
            wa[b, B_IA + 6 * r + k] = m if r == k else 0.0
            wa[b, B_IA + 6 * (3 + r) + 3 + k] = reals[b, I_O + 3 * r + k]
    wa[b, B_IA + 4], wa[b, B_IA + 5] = hz, -hy                 # -[h] rows 0-2, cols 3-5
    wa[b, B_IA + 9], wa[b, B_IA + 11] = -hz, hx
    wa[b, B_IA + 15], wa[b, B_IA + 16] = hy, -hx
    wa[b, B_IA + 3], wa[b, B_IA + 10], wa[b, B_IA + 17] = 0.0, 0.0, 0.0
    wa[b, B_IA + 19], wa[b, B_IA + 20] = -hz, hy                # [h] rows 3-5, cols 0-2
    wa[b, B_IA + 24], wa[b, B_IA + 26] = hz, -hx
    wa[b, B_IA + 30], wa[b, B_IA + 31] = -hy, hx
    wa[b, B_IA + 18], wa[b, B_IA + 25], wa[b, B_IA + 32] = 0.0, 0.0, 0.0


@numba.njit(**INLINE)
def free_flyer_root(b, iv, tau, wa, D, L, Dinv, y):
    """Pass 2 at a free-flyer root (S = 1): U = D = IA, u = tau - pA; False if D is singular."""
    for r in range(6):
        wa[b, B_u + r] = tau[iv + r] - wa[b, B_PA + r]
        for k in range(6):
            D[r, k] = wa[b, B_IA + 6 * r + k]
            wa[b, B_U + 6 * k + r] = D[r, k]
    if not cholesky_inverse(D, 6, L, Dinv, y):
        return False
    for r in range(6):
        for k in range(6):
            wa[b, B_DINV + 6 * r + k] = Dinv[r, k]
    return True


@numba.njit(**INLINE)
def articulated_pass(ints, reals, tau, ws, wa):
    """Pass 2 (leaves to root): articulated inertias and bias forces (RBDA Table 7.1).

    Per body U = IA S, D = S^T U + Ia, u = tau - S^T pA; the articulated inertia
    Ia = IA - U D^-1 U^T and bias pa = pA + Ia c + U D^-1 u go to the parent.  Returns STATUS_OK
    or STATUS_SINGULAR + body.
    """
    nb = ints.shape[0]
    # Scratch matrices live in the last two rows of wa (no allocation per call).
    Ia = wa[nb, 0:36].reshape((6, 6))
    L = wa[nb, 36:72].reshape((6, 6))
    D = wa[nb, 72:108].reshape((6, 6))
    y = wa[nb, 108:114]
    pa0 = wa[nb, 114:120]
    Dinv = wa[nb + 1, 0:36].reshape((6, 6))
    rot = wa[nb + 1, 36:63].reshape((3, 3, 3))
    R = wa[nb + 1, 63:72].reshape((3, 3))
    T = wa[nb + 1, 72:81].reshape((3, 3))
    Y = wa[nb + 1, 81:90].reshape((3, 3))
    for b in range(nb - 1, -1, -1):
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        if kind == FREE_FLYER:             # the root: no parent
            if not free_flyer_root(b, iv, tau, wa, D, L, Dinv, y):
                return STATUS_SINGULAR + b
            continue
        ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
        off = 3 if kind == REVOLUTE else 0
        for r in range(6):
            wa[b, B_U + r] = (wa[b, B_IA + 6 * r + off] * ux + wa[b, B_IA + 6 * r + off + 1] * uy
                              + wa[b, B_IA + 6 * r + off + 2] * uz)
        d = (ux * wa[b, B_U + off] + uy * wa[b, B_U + off + 1] + uz * wa[b, B_U + off + 2]
             + reals[b, ARMATURE])
        scale = max(1.0, abs(wa[b, B_IA]) + abs(wa[b, B_IA + 21]) + abs(wa[b, B_IA + 35]))
        if not d > 1e-12 * scale:
            return STATUS_SINGULAR + b
        wa[b, B_DINV] = 1.0 / d
        u = tau[iv] - (ux * wa[b, B_PA + off] + uy * wa[b, B_PA + off + 1]
                       + uz * wa[b, B_PA + off + 2])
        wa[b, B_u] = u
        if lam < 0:
            continue
        for r in range(6):
            for k in range(6):
                Ia[r, k] = wa[b, B_IA + 6 * r + k] - wa[b, B_U + r] * wa[b, B_U + k] / d
        for r in range(6):
            s = wa[b, B_PA + r] + wa[b, B_U + r] * u / d
            for k in range(6):
                s += Ia[r, k] * wa[b, B_C + k]
            pa0[r] = s
        congruence_to_parent(ws, b, Ia, wa, lam, R, rot, T, Y)
        # pA_parent += X^T pa (force to the parent frame, as in RNEA's backward pass)
        add_force_to_parent(ws, b, pa0[0], pa0[1], pa0[2], pa0[3], pa0[4], pa0[5], wa, lam,
                            B_PA)
    return STATUS_OK


@numba.njit(**INLINE)
def acceleration_pass(ints, reals, ws, wa, qdd):
    """Pass 3 (root to leaves): a' = X a_parent + c, qdd = D^-1 (u - U^T a'), a = a' + S qdd."""
    nb = ints.shape[0]
    y = wa[nb, 108:114]
    for b in range(nb):
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        if lam < 0:
            motion_to_body(ws, b, ws[nb, 0], ws[nb, 1], ws[nb, 2], ws[nb, 3], ws[nb, 4],
                           ws[nb, 5], W_A)
        else:
            motion_to_body(ws, b, ws[lam, W_A], ws[lam, W_A + 1], ws[lam, W_A + 2],
                           ws[lam, W_A + 3], ws[lam, W_A + 4], ws[lam, W_A + 5], W_A)
        for r in range(6):
            ws[b, W_A + r] += wa[b, B_C + r]
        if kind == FREE_FLYER:
            for i in range(6):
                s = wa[b, B_u + i]
                for m in range(6):
                    s -= wa[b, B_U + 6 * i + m] * ws[b, W_A + m]
                y[i] = s
            for i in range(6):
                s = 0.0
                for j in range(6):
                    s += wa[b, B_DINV + 6 * i + j] * y[j]
                qdd[iv + i] = s
            for r in range(6):
                ws[b, W_A + r] += qdd[iv + r]
            continue
        ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
        s = wa[b, B_u]
        for m in range(6):
            s -= wa[b, B_U + m] * ws[b, W_A + m]
        acc = s * wa[b, B_DINV]
        qdd[iv] = acc
        off = 3 if kind == REVOLUTE else 0
        ws[b, W_A + off] += ux * acc
        ws[b, W_A + off + 1] += uy * acc
        ws[b, W_A + off + 2] += uz * acc


@numba.njit(types.int64(VEC, VEC, VEC, VEC, VEC, VEC), **OPTS)
def aba(model, buffer, q, qd, tau, qdd):
    """Forward dynamics by the articulated-body algorithm into qdd; returns a status code."""
    ints, reals = model_tables(model)
    ws, wa = workspace_tables(buffer, ints.shape[0])
    status = check_state(ints, q, qd, tau)
    if status != STATUS_OK:
        return status
    velocity_pass(ints, reals, q, qd, ws, wa)
    status = articulated_pass(ints, reals, tau, ws, wa)
    if status != STATUS_OK:
        return status
    acceleration_pass(ints, reals, ws, wa, qdd)
    if not all_finite(qdd):
        return STATUS_OVERFLOW
    return STATUS_OK
