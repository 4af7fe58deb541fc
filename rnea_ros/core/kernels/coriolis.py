"""Numba kernel of the Coriolis matrix C(q, qd) (Christoffel symbols; Hdot = C + C^T).

It computes what :func:`rnea_ros.core.reference.coriolis_matrix` computes (tests compare them),
in root-frame quantities, without 6x6 matrices.  Two facts make it short:

- The per-body factor ``B = 1/2 (v x* I - I v x + (I v) xbar*)`` of the reference has the
  block form ``[[0, -[l]], [0, B_ww]]``, where ``l = m v_lin + w x h`` is the body's linear
  momentum and ``B_ww = 1/2 ([w] I - I [w] - [v_lin][h] - [h][v_lin] - [k])`` with the angular
  momentum ``k = I w + h x v_lin`` (I about the root origin, h = m c): so
  ``B S = [-l x s_w; B_ww s_w]`` and ``B^T S = [0; l x s_lin + B_ww^T s_w]``.  Sums of such
  matrices keep the form, so the composite factor is (sum of l, sum of B_ww).
- Bodies are numbered in depth-first pre-order, so the subtree of body b is the bodies b to
  K_LAST[b].

Forward pass (per body, root frame): placement 0_X_b, joint motions S, velocity v, rates
Sdot = v x S, inertia and B.  Backward pass (leaves first): F = I^c Sdot + B^c S per joint
column; ``C_ij = S_i . F_j`` for j in the subtree of i, and for k a strict ancestor of i,
``C_ik = (I^c_i S_i) . Sdot_k + (B^c_i^T S_i) . S_k``; then the composites move to the parent.
"""

import numba
from numba import types

from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels.body import joint_placement
from rnea_ros.core.kernels.jit import (all_finite, check_state, INLINE, kinematics_tables, MAT,
                                       model_tables, OPTS, VEC)
from rnea_ros.core.layout import (AXIS, D_DS, D_F, D_S, H, I_O, IV, K_BA, K_BL, K_H, K_I,
                                  K_LAST, K_M, K_R0, K_V, KIND, MASS, PARENT, STATUS_OK,
                                  STATUS_OVERFLOW, W_P)


@numba.njit(**INLINE)
def placement_in_root(ints, wk, b):
    """wk[b, K_R0:K_R0+12] = 0_R_b, 0_p_b from the parent's placement and the joint transform."""
    lam = ints[b, PARENT]
    if lam < 0:
        for r in range(12):
            wk[b, K_R0 + r] = wk[b, r]
        return
    for r in range(3):
        a0, a1, a2 = wk[lam, K_R0 + 3 * r], wk[lam, K_R0 + 3 * r + 1], wk[lam, K_R0 + 3 * r + 2]
        for c in range(3):
            wk[b, K_R0 + 3 * r + c] = a0 * wk[b, c] + a1 * wk[b, 3 + c] + a2 * wk[b, 6 + c]
        wk[b, K_R0 + 9 + r] = (wk[lam, K_R0 + 9 + r] + a0 * wk[b, W_P] + a1 * wk[b, W_P + 1]
                               + a2 * wk[b, W_P + 2])


@numba.njit(**INLINE)
def joint_motions(ints, reals, wk, wd, b):
    """wd[iv + d, D_S:D_S+6] = 0_X_b S_b (column d) for body b's joint, in the root frame."""
    kind = ints[b, KIND]
    iv = ints[b, IV]
    n = 6 if kind == FREE_FLYER else 1
    px, py, pz = wk[b, K_R0 + 9], wk[b, K_R0 + 10], wk[b, K_R0 + 11]
    for d in range(n):
        # the column in body axes: (lin, ang) unit directions
        if kind == FREE_FLYER:
            lx, ly, lz = 1.0 * (d == 0), 1.0 * (d == 1), 1.0 * (d == 2)
            ax, ay, az = 1.0 * (d == 3), 1.0 * (d == 4), 1.0 * (d == 5)
        elif kind == REVOLUTE:
            lx, ly, lz = 0.0, 0.0, 0.0
            ax, ay, az = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
        else:
            lx, ly, lz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
            ax, ay, az = 0.0, 0.0, 0.0
        row = iv + d
        for r in range(3):
            e0, e1, e2 = wk[b, K_R0 + 3 * r], wk[b, K_R0 + 3 * r + 1], wk[b, K_R0 + 3 * r + 2]
            wd[row, D_S + r] = e0 * lx + e1 * ly + e2 * lz
            wd[row, D_S + 3 + r] = e0 * ax + e1 * ay + e2 * az
        wx, wy, wz = wd[row, D_S + 3], wd[row, D_S + 4], wd[row, D_S + 5]
        # about the root origin: v_0 = v_p + p x w
        wd[row, D_S] += py * wz - pz * wy
        wd[row, D_S + 1] += pz * wx - px * wz
        wd[row, D_S + 2] += px * wy - py * wx


@numba.njit(**INLINE)
def inertia_in_root(reals, wk, b):
    """wk[b, K_M, K_H, K_I] = body b's inertia in the root frame, about the root origin.

    h0 = R h + m p and I0 = R I_O R^T - [Rh][p] - [p][Rh] - m [p][p] (RBDA eq. 2.63 moved).
    """
    m = reals[b, MASS]
    px, py, pz = wk[b, K_R0 + 9], wk[b, K_R0 + 10], wk[b, K_R0 + 11]
    h0, h1, h2 = reals[b, H], reals[b, H + 1], reals[b, H + 2]
    hx = wk[b, K_R0] * h0 + wk[b, K_R0 + 1] * h1 + wk[b, K_R0 + 2] * h2
    hy = wk[b, K_R0 + 3] * h0 + wk[b, K_R0 + 4] * h1 + wk[b, K_R0 + 5] * h2
    hz = wk[b, K_R0 + 6] * h0 + wk[b, K_R0 + 7] * h1 + wk[b, K_R0 + 8] * h2
    for r in range(3):
        e0, e1, e2 = wk[b, K_R0 + 3 * r], wk[b, K_R0 + 3 * r + 1], wk[b, K_R0 + 3 * r + 2]
        for c in range(3):      # R I_O, times R^T below
            wk[b, K_I + 3 * r + c] = (e0 * reals[b, I_O + c] + e1 * reals[b, I_O + 3 + c]
                                      + e2 * reals[b, I_O + 6 + c])
    for r in range(3):
        t0, t1, t2 = wk[b, K_I + 3 * r], wk[b, K_I + 3 * r + 1], wk[b, K_I + 3 * r + 2]
        for c in range(3):
            wk[b, K_I + 3 * r + c] = (t0 * wk[b, K_R0 + 3 * c] + t1 * wk[b, K_R0 + 3 * c + 1]
                                      + t2 * wk[b, K_R0 + 3 * c + 2])
    g = (hx, hy, hz)
    p = (px, py, pz)
    # -[g][p] - [p][g] - m [p][p] = -(g p^T + p g^T) + 2 (g.p) 1 - m (p p^T - (p.p) 1)
    gp = g[0] * p[0] + g[1] * p[1] + g[2] * p[2]
    pp = p[0] * p[0] + p[1] * p[1] + p[2] * p[2]
    for r in range(3):
        for c in range(3):
            d = 2.0 * gp + m * pp if r == c else 0.0
            wk[b, K_I + 3 * r + c] += d - g[r] * p[c] - p[r] * g[c] - m * p[r] * p[c]
    wk[b, K_M] = m
    wk[b, K_H] = hx + m * px
    wk[b, K_H + 1] = hy + m * py
    wk[b, K_H + 2] = hz + m * pz


@numba.njit(**INLINE)
def coriolis_factor(wk, b):
    """wk[b, K_BL] = l and wk[b, K_BA] = B_ww of body b (module doc), from v and its inertia."""
    m = wk[b, K_M]
    hx, hy, hz = wk[b, K_H], wk[b, K_H + 1], wk[b, K_H + 2]
    vx, vy, vz = wk[b, K_V], wk[b, K_V + 1], wk[b, K_V + 2]
    wx, wy, wz = wk[b, K_V + 3], wk[b, K_V + 4], wk[b, K_V + 5]
    wk[b, K_BL] = m * vx + wy * hz - wz * hy
    wk[b, K_BL + 1] = m * vy + wz * hx - wx * hz
    wk[b, K_BL + 2] = m * vz + wx * hy - wy * hx
    # k = I w + h x v
    kx = (wk[b, K_I] * wx + wk[b, K_I + 1] * wy + wk[b, K_I + 2] * wz + hy * vz - hz * vy)
    ky = (wk[b, K_I + 3] * wx + wk[b, K_I + 4] * wy + wk[b, K_I + 5] * wz + hz * vx - hx * vz)
    kz = (wk[b, K_I + 6] * wx + wk[b, K_I + 7] * wy + wk[b, K_I + 8] * wz + hx * vy - hy * vx)
    # [w] I - I [w]: entry (r, c) = sum_k W[r,k] I[k,c] - I[r,k] W[k,c]
    W = ((0.0, -wz, wy), (wz, 0.0, -wx), (-wy, wx, 0.0))
    V = ((0.0, -vz, vy), (vz, 0.0, -vx), (-vy, vx, 0.0))
    Hs = ((0.0, -hz, hy), (hz, 0.0, -hx), (-hy, hx, 0.0))
    K = ((0.0, -kz, ky), (kz, 0.0, -kx), (-ky, kx, 0.0))
    for r in range(3):
        for c in range(3):
            s = 0.0
            for k in range(3):
                s += (W[r][k] * wk[b, K_I + 3 * k + c] - wk[b, K_I + 3 * r + k] * W[k][c]
                      - V[r][k] * Hs[k][c] - Hs[r][k] * V[k][c])
            wk[b, K_BA + 3 * r + c] = 0.5 * (s - K[r][c])


@numba.njit(**INLINE)
def forward(ints, reals, q, qd, wk, wd):
    """Forward pass (module doc): placements, motions, velocities, rates, inertias, B."""
    nb = ints.shape[0]
    for b in range(nb):
        joint_placement(ints, reals, q, b, wk)
        placement_in_root(ints, wk, b)
        joint_motions(ints, reals, wk, wd, b)
        lam = ints[b, PARENT]
        iv = ints[b, IV]
        n = 6 if ints[b, KIND] == FREE_FLYER else 1
        for r in range(6):
            s = wk[lam, K_V + r] if lam >= 0 else 0.0
            for d in range(n):
                s += wd[iv + d, D_S + r] * qd[iv + d]
            wk[b, K_V + r] = s
        vx, vy, vz = wk[b, K_V], wk[b, K_V + 1], wk[b, K_V + 2]
        wx, wy, wz = wk[b, K_V + 3], wk[b, K_V + 4], wk[b, K_V + 5]
        for d in range(n):
            row = iv + d
            sx, sy, sz = wd[row, D_S], wd[row, D_S + 1], wd[row, D_S + 2]
            tx, ty, tz = wd[row, D_S + 3], wd[row, D_S + 4], wd[row, D_S + 5]
            # v x S = [w x s_lin + v x s_ang; w x s_ang]
            wd[row, D_DS] = wy * sz - wz * sy + vy * tz - vz * ty
            wd[row, D_DS + 1] = wz * sx - wx * sz + vz * tx - vx * tz
            wd[row, D_DS + 2] = wx * sy - wy * sx + vx * ty - vy * tx
            wd[row, D_DS + 3] = wy * tz - wz * ty
            wd[row, D_DS + 4] = wz * tx - wx * tz
            wd[row, D_DS + 5] = wx * ty - wy * tx
        inertia_in_root(reals, wk, b)
        coriolis_factor(wk, b)
        wk[b, K_LAST] = b


@numba.njit(**INLINE)
def inertia_dot(wk, b, vx, vy, vz, ox, oy, oz):
    """Return I^c_b [v; o] (root frame) as 6 scalars."""
    m = wk[b, K_M]
    hx, hy, hz = wk[b, K_H], wk[b, K_H + 1], wk[b, K_H + 2]
    return (m * vx - (hy * oz - hz * oy),
            m * vy - (hz * ox - hx * oz),
            m * vz - (hx * oy - hy * ox),
            wk[b, K_I] * ox + wk[b, K_I + 1] * oy + wk[b, K_I + 2] * oz + hy * vz - hz * vy,
            wk[b, K_I + 3] * ox + wk[b, K_I + 4] * oy + wk[b, K_I + 5] * oz + hz * vx - hx * vz,
            wk[b, K_I + 6] * ox + wk[b, K_I + 7] * oy + wk[b, K_I + 8] * oz + hx * vy - hy * vx)


@numba.njit(**INLINE)
def backward(ints, wk, wd, C):
    """Backward pass (module doc): the rows of C, composites moved to the parents."""
    nb = ints.shape[0]
    for b in range(nb - 1, -1, -1):
        iv = ints[b, IV]
        n = 6 if ints[b, KIND] == FREE_FLYER else 1
        lx, ly, lz = wk[b, K_BL], wk[b, K_BL + 1], wk[b, K_BL + 2]
        for d in range(n):
            row = iv + d
            f = inertia_dot(wk, b, wd[row, D_DS], wd[row, D_DS + 1], wd[row, D_DS + 2],
                            wd[row, D_DS + 3], wd[row, D_DS + 4], wd[row, D_DS + 5])
            tx, ty, tz = wd[row, D_S + 3], wd[row, D_S + 4], wd[row, D_S + 5]
            # + B S = [-l x s_w; B_ww s_w]
            wd[row, D_F] = f[0] - (ly * tz - lz * ty)
            wd[row, D_F + 1] = f[1] - (lz * tx - lx * tz)
            wd[row, D_F + 2] = f[2] - (lx * ty - ly * tx)
            for r in range(3):
                wd[row, D_F + 3 + r] = f[3 + r] + (wk[b, K_BA + 3 * r] * tx
                                                   + wk[b, K_BA + 3 * r + 1] * ty
                                                   + wk[b, K_BA + 3 * r + 2] * tz)
        last = int(wk[b, K_LAST])
        for d in range(n):
            row = iv + d
            # C_ij = S_i . F_j, j in the subtree of b
            for j in range(b, last + 1):
                jv = ints[j, IV]
                for e in range(6 if ints[j, KIND] == FREE_FLYER else 1):
                    s = 0.0
                    for r in range(6):
                        s += wd[row, D_S + r] * wd[jv + e, D_F + r]
                    C[row, jv + e] = s
            # C_ik = (I^c S_i) . Sdot_k + (B^T S_i) . S_k, k strict ancestors
            sx, sy, sz = wd[row, D_S], wd[row, D_S + 1], wd[row, D_S + 2]
            tx, ty, tz = wd[row, D_S + 3], wd[row, D_S + 4], wd[row, D_S + 5]
            a = inertia_dot(wk, b, sx, sy, sz, tx, ty, tz)
            # B^T S = [0; l x s_lin + B_ww^T s_w]
            g0 = ly * sz - lz * sy + wk[b, K_BA] * tx + wk[b, K_BA + 3] * ty + wk[b, K_BA + 6] * tz
            g1 = (lz * sx - lx * sz + wk[b, K_BA + 1] * tx + wk[b, K_BA + 4] * ty
                  + wk[b, K_BA + 7] * tz)
            g2 = (lx * sy - ly * sx + wk[b, K_BA + 2] * tx + wk[b, K_BA + 5] * ty
                  + wk[b, K_BA + 8] * tz)
            k = ints[b, PARENT]
            while k >= 0:
                kv = ints[k, IV]
                for e in range(6 if ints[k, KIND] == FREE_FLYER else 1):
                    col = kv + e
                    s = (g0 * wd[col, D_S + 3] + g1 * wd[col, D_S + 4] + g2 * wd[col, D_S + 5])
                    for r in range(6):
                        s += a[r] * wd[col, D_DS + r]
                    C[row, col] = s
                k = ints[k, PARENT]
        lam = ints[b, PARENT]
        if lam >= 0:
            for r in range(K_M, K_I + 9):
                wk[lam, r] += wk[b, r]
            for r in range(K_BL, K_BA + 9):
                wk[lam, r] += wk[b, r]
            if wk[b, K_LAST] > wk[lam, K_LAST]:
                wk[lam, K_LAST] = wk[b, K_LAST]


@numba.njit(types.int64(VEC, VEC, VEC, VEC, MAT), **OPTS)
def coriolis(model, buffer, q, qd, C):
    """Write the (nv, nv) Coriolis matrix into C; return a status (STATUS_* of the layout)."""
    ints, reals = model_tables(model)
    status = check_state(ints, q, qd, qd)
    if status != STATUS_OK:
        return status
    wk, wd = kinematics_tables(buffer, ints.shape[0])
    n = C.shape[0]
    for r in range(n):
        for c in range(n):
            C[r, c] = 0.0
    forward(ints, reals, q, qd, wk, wd)
    backward(ints, wk, wd, C)
    for r in range(n):
        if not all_finite(C[r]):
            return STATUS_OVERFLOW
    return STATUS_OK
