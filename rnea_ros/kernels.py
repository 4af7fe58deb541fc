"""Numba kernels: the algorithms of :mod:`rnea_ros.dynamics` on the model's flat arrays.

The kernels compute exactly what the numpy reference computes (tests compare them to 1e-12),
but without forming 6x6 matrices: a body's transform is kept as the rotation ``R`` = parent_R_body
and the position ``p`` of the body origin in the parent frame, so that (``[lin; ang]`` order)

- motion to the body:  ``w' = R^T w``, ``v' = R^T (v + w x p)``      (X m)
- force to the parent: ``f' = R f``,   ``n' = R n + p x (R f)``       (X^T f)
- inertia times motion: ``f = m v - h x w``, ``n = I_O w + h x v``   (h = m c)

Per-body results live in ``ws`` ((nbodies + 1) x 36): per body R(9) p(3) v(6) a(6) f(6) and
the external wrench f_ext(6) in the body frame; the last row holds a_0 = a_base - a_g.  Kernels
return a status code instead of raising (STATUS_* below), which the Python wrappers turn into a
ValueError naming the argument and the joint.
"""

import numba
from numba import types
import numpy as np

from rnea_ros.joints import FREE_FLYER, REVOLUTE
from rnea_ros.model import (AXIS, AXIS_CODE, GENERAL_AXIS, H, I_O, IQ, IV, KIND, MASS, P_T,
                            PARENT, R_T)

_OPTS = {'nogil': True, 'cache': True, 'error_model': 'numpy'}

STATUS_OK = 0
STATUS_BAD_Q = 1
STATUS_BAD_QD = 2
STATUS_BAD_QDD = 3
STATUS_BAD_QUATERNION = 4
STATUS_LEN_Q = 5
STATUS_LEN_QD = 6
STATUS_LEN_QDD = 7

# Explicit signatures: the public wrappers call the kernels with the model's read-only arrays and
# float64 C-contiguous state vectors; anything else raises TypeError (no silent recompilation),
# which the wrappers answer by converting and checking the inputs.
_INTS = types.Array(types.int64, 2, 'C', readonly=True)
_REALS = types.Array(types.float64, 2, 'C', readonly=True)
_VEC = types.Array(types.float64, 1, 'C')
_MAT = types.Array(types.float64, 2, 'C')


@numba.njit(**_OPTS)
def _all_finite(x):
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


# Columns of one row of the workspace ``ws`` (per body).
W_R, W_P, W_V, W_A, W_F, W_X, W_N = 0, 9, 12, 18, 24, 30, 36
# Row nbodies of ws holds a_0 = a_base - a_g (root frame) in columns 0-5.


@numba.njit(**_OPTS)
def _joint_placement(ints, reals, q, b, ws):
    """Write R = parent_R_body and p (body origin in parent) of body b into ws[b, 0:12]."""
    kind = ints[b, KIND]
    iq = ints[b, IQ]
    if kind == FREE_FLYER:
        x, y, z, s = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        n = np.sqrt(x * x + y * y + z * z + s * s)
        x, y, z, s = x / n, y / n, z / n, s / n
        ws[b, 0] = 1 - 2 * (y * y + z * z)
        ws[b, 1] = 2 * (x * y - z * s)
        ws[b, 2] = 2 * (x * z + y * s)
        ws[b, 3] = 2 * (x * y + z * s)
        ws[b, 4] = 1 - 2 * (x * x + z * z)
        ws[b, 5] = 2 * (y * z - x * s)
        ws[b, 6] = 2 * (x * z - y * s)
        ws[b, 7] = 2 * (y * z + x * s)
        ws[b, 8] = 1 - 2 * (x * x + y * y)
        ws[b, 9], ws[b, 10], ws[b, 11] = q[iq], q[iq + 1], q[iq + 2]
        return
    ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
    if kind == REVOLUTE:
        code = ints[b, AXIS_CODE]
        c = np.cos(q[iq])
        s = np.sin(q[iq])
        if code != GENERAL_AXIS:
            # Rotation about +-e_k: columns i, j of R_T turn in their plane, column k stays.
            k = code % 3
            if code >= 3:
                s = -s
            i = (k + 1) % 3
            j = (k + 2) % 3
            for r in range(3):
                ti = reals[b, R_T + 3 * r + i]
                tj = reals[b, R_T + 3 * r + j]
                ws[b, 3 * r + i] = c * ti + s * tj
                ws[b, 3 * r + j] = c * tj - s * ti
                ws[b, 3 * r + k] = reals[b, R_T + 3 * r + k]
        else:
            t = 1.0 - c
            # R_J = c 1 + s [u] + (1 - c) u u^T (Rodrigues); R = R_T R_J.
            j00, j01, j02 = c + t * ux * ux, t * ux * uy - s * uz, t * ux * uz + s * uy
            j10, j11, j12 = t * ux * uy + s * uz, c + t * uy * uy, t * uy * uz - s * ux
            j20, j21, j22 = t * ux * uz - s * uy, t * uy * uz + s * ux, c + t * uz * uz
            for r in range(3):
                a0 = reals[b, R_T + 3 * r]
                a1 = reals[b, R_T + 3 * r + 1]
                a2 = reals[b, R_T + 3 * r + 2]
                ws[b, 3 * r] = a0 * j00 + a1 * j10 + a2 * j20
                ws[b, 3 * r + 1] = a0 * j01 + a1 * j11 + a2 * j21
                ws[b, 3 * r + 2] = a0 * j02 + a1 * j12 + a2 * j22
        for r in range(3):
            ws[b, W_P + r] = reals[b, P_T + r]
    else:  # PRISMATIC
        d = q[iq]
        for r in range(9):
            ws[b, r] = reals[b, R_T + r]
        for r in range(3):
            ws[b, W_P + r] = reals[b, P_T + r] + d * (reals[b, R_T + 3 * r] * ux
                                                      + reals[b, R_T + 3 * r + 1] * uy
                                                      + reals[b, R_T + 3 * r + 2] * uz)


@numba.njit(**_OPTS)
def _motion_to_body(ws, b, vx, vy, vz, ox, oy, oz, col):
    """ws[b, col:col+6] = X m for body b's transform and the motion m = [v; o] (parent frame)."""
    px, py, pz = ws[b, W_P], ws[b, W_P + 1], ws[b, W_P + 2]
    # v + o x p
    lx = vx + oy * pz - oz * py
    ly = vy + oz * px - ox * pz
    lz = vz + ox * py - oy * px
    for r in range(3):
        ws[b, col + r] = ws[b, r] * lx + ws[b, 3 + r] * ly + ws[b, 6 + r] * lz
        ws[b, col + 3 + r] = ws[b, r] * ox + ws[b, 3 + r] * oy + ws[b, 6 + r] * oz


@numba.njit(**_OPTS)
def _inertia_times(reals, b, vx, vy, vz, ox, oy, oz):
    """Return I_b [v; o] for the spatial inertia of body b (about its origin), as 6 scalars."""
    m = reals[b, MASS]
    hx, hy, hz = reals[b, H], reals[b, H + 1], reals[b, H + 2]
    return (m * vx - (hy * oz - hz * oy),
            m * vy - (hz * ox - hx * oz),
            m * vz - (hx * oy - hy * ox),
            reals[b, I_O] * ox + reals[b, I_O + 1] * oy + reals[b, I_O + 2] * oz
            + hy * vz - hz * vy,
            reals[b, I_O + 3] * ox + reals[b, I_O + 4] * oy + reals[b, I_O + 5] * oz
            + hz * vx - hx * vz,
            reals[b, I_O + 6] * ox + reals[b, I_O + 7] * oy + reals[b, I_O + 8] * oz
            + hx * vy - hy * vx)


@numba.njit(**_OPTS)
def _rnea_body_forces(ints, reals, q, qd, qdd, ws):
    """Forward pass of seed 000: body velocities, accelerations and forces f_i in ws."""
    nb = ints.shape[0]
    a00, a01, a02 = ws[nb, 0], ws[nb, 1], ws[nb, 2]
    a03, a04, a05 = ws[nb, 3], ws[nb, 4], ws[nb, 5]
    for b in range(nb):
        _joint_placement(ints, reals, q, b, ws)
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        if kind == FREE_FLYER:
            # v = S qd with S = 1; a = X a0 + qdd (v x S qd = v x v = 0).
            _motion_to_body(ws, b, a00, a01, a02, a03, a04, a05, W_A)
            for r in range(6):
                ws[b, W_V + r] = qd[iv + r]
                ws[b, W_A + r] += qdd[iv + r]
        else:
            if lam < 0:
                for r in range(6):
                    ws[b, W_V + r] = 0.0
                _motion_to_body(ws, b, a00, a01, a02, a03, a04, a05, W_A)
            else:
                _motion_to_body(ws, b, ws[lam, W_V], ws[lam, W_V + 1], ws[lam, W_V + 2],
                                ws[lam, W_V + 3], ws[lam, W_V + 4], ws[lam, W_V + 5], W_V)
                _motion_to_body(ws, b, ws[lam, W_A], ws[lam, W_A + 1], ws[lam, W_A + 2],
                                ws[lam, W_A + 3], ws[lam, W_A + 4], ws[lam, W_A + 5], W_A)
            ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
            sd = qd[iv]
            sa = qdd[iv]
            jx, jy, jz = ux * sd, uy * sd, uz * sd
            # v += vJ = S qd; a += S qdd + v x vJ (v x vJ is the same before or after adding vJ).
            if kind == REVOLUTE:
                ws[b, W_V + 3] += jx
                ws[b, W_V + 4] += jy
                ws[b, W_V + 5] += jz
                vx, vy, vz = ws[b, W_V], ws[b, W_V + 1], ws[b, W_V + 2]
                ox, oy, oz = ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5]
                ws[b, W_A] += vy * jz - vz * jy
                ws[b, W_A + 1] += vz * jx - vx * jz
                ws[b, W_A + 2] += vx * jy - vy * jx
                ws[b, W_A + 3] += ux * sa + oy * jz - oz * jy
                ws[b, W_A + 4] += uy * sa + oz * jx - ox * jz
                ws[b, W_A + 5] += uz * sa + ox * jy - oy * jx
            else:
                ws[b, W_V] += jx
                ws[b, W_V + 1] += jy
                ws[b, W_V + 2] += jz
                ox, oy, oz = ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5]
                ws[b, W_A] += ux * sa + oy * jz - oz * jy
                ws[b, W_A + 1] += uy * sa + oz * jx - ox * jz
                ws[b, W_A + 2] += uz * sa + ox * jy - oy * jx
        # f = I a + v x* (I v) - f_ext
        vx, vy, vz = ws[b, W_V], ws[b, W_V + 1], ws[b, W_V + 2]
        ox, oy, oz = ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5]
        f0, f1, f2, f3, f4, f5 = _inertia_times(
            reals, b, ws[b, W_A], ws[b, W_A + 1], ws[b, W_A + 2],
            ws[b, W_A + 3], ws[b, W_A + 4], ws[b, W_A + 5])
        g0, g1, g2, g3, g4, g5 = _inertia_times(reals, b, vx, vy, vz, ox, oy, oz)
        ws[b, W_F] = f0 + oy * g2 - oz * g1 - ws[b, W_X + 0]
        ws[b, W_F + 1] = f1 + oz * g0 - ox * g2 - ws[b, W_X + 1]
        ws[b, W_F + 2] = f2 + ox * g1 - oy * g0 - ws[b, W_X + 2]
        ws[b, W_F + 3] = f3 + oy * g5 - oz * g4 + vy * g2 - vz * g1 - ws[b, W_X + 3]
        ws[b, W_F + 4] = f4 + oz * g3 - ox * g5 + vz * g0 - vx * g2 - ws[b, W_X + 4]
        ws[b, W_F + 5] = f5 + ox * g4 - oy * g3 + vx * g1 - vy * g0 - ws[b, W_X + 5]


@numba.njit(**_OPTS)
def _rnea_backward(ints, reals, ws, tau):
    """Backward pass of seed 000: tau_i = S_i^T f_i, f_parent += X^T f_i."""
    for b in range(ints.shape[0] - 1, -1, -1):
        kind = ints[b, KIND]
        iv = ints[b, IV]
        f0, f1, f2 = ws[b, W_F], ws[b, W_F + 1], ws[b, W_F + 2]
        n0, n1, n2 = ws[b, W_F + 3], ws[b, W_F + 4], ws[b, W_F + 5]
        if kind == FREE_FLYER:
            for r in range(6):
                tau[iv + r] = ws[b, W_F + r]
        elif kind == REVOLUTE:
            tau[iv] = reals[b, AXIS] * n0 + reals[b, AXIS + 1] * n1 + reals[b, AXIS + 2] * n2
        else:
            tau[iv] = reals[b, AXIS] * f0 + reals[b, AXIS + 1] * f1 + reals[b, AXIS + 2] * f2
        lam = ints[b, PARENT]
        if lam >= 0:
            px, py, pz = ws[b, W_P], ws[b, W_P + 1], ws[b, W_P + 2]
            gx = ws[b, 0] * f0 + ws[b, 1] * f1 + ws[b, 2] * f2
            gy = ws[b, 3] * f0 + ws[b, 4] * f1 + ws[b, 5] * f2
            gz = ws[b, 6] * f0 + ws[b, 7] * f1 + ws[b, 8] * f2
            ws[lam, W_F] += gx
            ws[lam, W_F + 1] += gy
            ws[lam, W_F + 2] += gz
            ws[lam, W_F + 3] += ws[b, 0] * n0 + ws[b, 1] * n1 + ws[b, 2] * n2 + py * gz - pz * gy
            ws[lam, W_F + 4] += ws[b, 3] * n0 + ws[b, 4] * n1 + ws[b, 5] * n2 + pz * gx - px * gz
            ws[lam, W_F + 5] += ws[b, 6] * n0 + ws[b, 7] * n1 + ws[b, 8] * n2 + px * gy - py * gx


@numba.njit(**_OPTS)
def check_state(ints, q, qd, qdd):
    """Return a status code for the state: wrong lengths, non-finite entries, zero quaternion."""
    nb = ints.shape[0]
    floating = nb > 0 and ints[0, KIND] == FREE_FLYER
    if q.shape[0] != nb + (6 if floating else 0):
        return STATUS_LEN_Q
    if qd.shape[0] != nb + (5 if floating else 0):
        return STATUS_LEN_QD
    if qdd.shape[0] != qd.shape[0]:
        return STATUS_LEN_QDD
    if not _all_finite(q):
        return STATUS_BAD_Q
    if not _all_finite(qd):
        return STATUS_BAD_QD
    if not _all_finite(qdd):
        return STATUS_BAD_QDD
    if floating:
        n2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
        if n2 < 1e-12:
            return STATUS_BAD_QUATERNION
    return STATUS_OK


@numba.njit(types.int64(_INTS, _REALS, _MAT, _VEC, _VEC, _VEC, _VEC), **_OPTS)
def rnea(ints, reals, ws, q, qd, qdd, tau):
    """Inverse dynamics (seed 000) into tau; f_i (reaction wrenches) stay in ws[:, 24:30]."""
    status = check_state(ints, q, qd, qdd)
    if status != STATUS_OK:
        return status
    _rnea_body_forces(ints, reals, q, qd, qdd, ws)
    _rnea_backward(ints, reals, ws, tau)
    return STATUS_OK


@numba.njit(types.UniTuple(types.int64, 2)(
    _INTS, _REALS, _MAT, _MAT, _MAT, _MAT, _MAT, types.int64), parallel=True, **_OPTS)
def rnea_batch(ints, reals, ws, Q, QD, QDD, TAU, nchunks):
    """Inverse dynamics for every row of Q, QD, QDD into TAU, in nchunks parallel chunks.

    Returns (status, row) of the first invalid row, or (0, -1).
    """
    n = Q.shape[0]
    nchunks = max(1, min(n, nchunks))
    status = np.zeros(nchunks, dtype=np.int64)
    bad_row = np.full(nchunks, -1, dtype=np.int64)
    for c in numba.prange(nchunks):
        wsc = ws.copy()      # each chunk its own workspace (same f_ext and a_0)
        for k in range(c * n // nchunks, (c + 1) * n // nchunks):
            st = check_state(ints, Q[k], QD[k], QDD[k])
            if st != STATUS_OK:
                status[c] = st
                bad_row[c] = k
                break
            _rnea_body_forces(ints, reals, Q[k], QD[k], QDD[k], wsc)
            _rnea_backward(ints, reals, wsc, TAU[k])
    for c in range(nchunks):
        if status[c] != STATUS_OK:
            return status[c], bad_row[c]
    return STATUS_OK, -1


# -- articulated-body algorithm (seed 002, RBDA 7.3) ----------------------------------------------

STATUS_SINGULAR = 100      # + body index: d_i is not positive (massless subtree, no armature)
# Columns of one row of the ABA workspace (per body).
B_IA, B_PA, B_C, B_U, B_DINV, B_u, B_A, B_N = 0, 36, 42, 48, 84, 120, 126, 132


@numba.njit(**_OPTS)
def _plucker_matrix(ws, b, X):
    """Fill the 6x6 motion transform X = [[E, -E [p]], [0, E]], E = R^T, of body b."""
    px, py, pz = ws[b, W_P], ws[b, W_P + 1], ws[b, W_P + 2]
    for r in range(3):
        e0, e1, e2 = ws[b, r], ws[b, 3 + r], ws[b, 6 + r]      # row r of E = column r of R
        X[r, 0], X[r, 1], X[r, 2] = e0, e1, e2
        X[3 + r, 3], X[3 + r, 4], X[3 + r, 5] = e0, e1, e2
        X[3 + r, 0] = X[3 + r, 1] = X[3 + r, 2] = 0.0
        # -E [p]: row r = -(e x p)... computed as -(e^T [p]) = (p x e)^T
        X[r, 3] = -(e1 * pz - e2 * py)
        X[r, 4] = -(e2 * px - e0 * pz)
        X[r, 5] = -(e0 * py - e1 * px)


@numba.njit(**_OPTS)
def _motion_subspace(ints, reals, b, S):
    """Fill S (6 x 6, first nv columns used) for body b; return the joint's nv."""
    for r in range(6):
        for k in range(6):
            S[r, k] = 0.0
    kind = ints[b, KIND]
    if kind == FREE_FLYER:
        for r in range(6):
            S[r, r] = 1.0
        return 6
    off = 3 if kind == REVOLUTE else 0
    for r in range(3):
        S[off + r, 0] = reals[b, AXIS + r]
    return 1


@numba.njit(**_OPTS)
def _solve_spd(A, n, x):
    """Solve A y = x in place (A n x n symmetric, Cholesky); return False if not positive."""
    L = np.zeros((6, 6))
    scale = 1.0
    for i in range(n):
        scale = max(scale, abs(A[i, i]))
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                if s <= 1e-12 * scale:
                    return False
                L[i, i] = np.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
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
    return True


@numba.njit(types.int64(_INTS, _REALS, _MAT, _MAT, _VEC, _VEC, _VEC, _VEC, _VEC), **_OPTS)
def aba(ints, reals, ws, wa, armature, q, qd, tau, qdd):
    """Forward dynamics by the articulated-body algorithm into qdd; returns a status code."""
    status = check_state(ints, q, qd, tau)
    if status != STATUS_OK:
        return status
    nb = ints.shape[0]
    X = np.empty((6, 6))
    S = np.empty((6, 6))
    T = np.empty((6, 6))
    Ia = np.empty((6, 6))
    D = np.empty((6, 6))
    y = np.empty(6)
    pa = np.empty(6)
    # Pass 1: velocities, bias accelerations c_i = v_i x vJ, IA_i = I_i, pA_i = v x* I v - f_ext.
    for b in range(nb):
        _joint_placement(ints, reals, q, b, ws)
        lam = ints[b, PARENT]
        iv = ints[b, IV]
        n = _motion_subspace(ints, reals, b, S)
        if lam < 0:
            for r in range(6):
                ws[b, W_V + r] = 0.0
        else:
            _motion_to_body(ws, b, ws[lam, W_V], ws[lam, W_V + 1], ws[lam, W_V + 2],
                            ws[lam, W_V + 3], ws[lam, W_V + 4], ws[lam, W_V + 5], W_V)
        vp = ws[b, W_V:W_V + 6].copy()        # velocity of the parent part, in body b
        for r in range(6):
            s = 0.0
            for k in range(n):
                s += S[r, k] * qd[iv + k]
            y[r] = s                          # vJ
            ws[b, W_V + r] = vp[r] + s
        vx, vy, vz = ws[b, W_V], ws[b, W_V + 1], ws[b, W_V + 2]
        ox, oy, oz = ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5]
        # c = v x vJ = [w x jl + vl x jw; w x jw]
        wa[b, B_C] = oy * y[2] - oz * y[1] + vy * y[5] - vz * y[4]
        wa[b, B_C + 1] = oz * y[0] - ox * y[2] + vz * y[3] - vx * y[5]
        wa[b, B_C + 2] = ox * y[1] - oy * y[0] + vx * y[4] - vy * y[3]
        wa[b, B_C + 3] = oy * y[5] - oz * y[4]
        wa[b, B_C + 4] = oz * y[3] - ox * y[5]
        wa[b, B_C + 5] = ox * y[4] - oy * y[3]
        # IA = I_b as a 6x6 matrix (columns: I e_k)
        for k in range(6):
            e = np.zeros(6)
            e[k] = 1.0
            col = _inertia_times(reals, b, e[0], e[1], e[2], e[3], e[4], e[5])
            for r in range(6):
                wa[b, B_IA + 6 * r + k] = col[r]
        g0, g1, g2, g3, g4, g5 = _inertia_times(reals, b, vx, vy, vz, ox, oy, oz)
        wa[b, B_PA] = oy * g2 - oz * g1 - ws[b, W_X]
        wa[b, B_PA + 1] = oz * g0 - ox * g2 - ws[b, W_X + 1]
        wa[b, B_PA + 2] = ox * g1 - oy * g0 - ws[b, W_X + 2]
        wa[b, B_PA + 3] = oy * g5 - oz * g4 + vy * g2 - vz * g1 - ws[b, W_X + 3]
        wa[b, B_PA + 4] = oz * g3 - ox * g5 + vz * g0 - vx * g2 - ws[b, W_X + 4]
        wa[b, B_PA + 5] = ox * g4 - oy * g3 + vx * g1 - vy * g0 - ws[b, W_X + 5]
    # Pass 2 (leaves to root): U = IA S, D = S^T U + armature, u = tau - S^T pA, and the
    # articulated inertia and bias force handed to the parent.
    for b in range(nb - 1, -1, -1):
        lam = ints[b, PARENT]
        iv = ints[b, IV]
        n = _motion_subspace(ints, reals, b, S)
        for r in range(6):
            for k in range(n):
                s = 0.0
                for m in range(6):
                    s += wa[b, B_IA + 6 * r + m] * S[m, k]
                wa[b, B_U + 6 * r + k] = s
        for i in range(n):
            for k in range(n):
                s = armature[iv + i] if i == k else 0.0
                for m in range(6):
                    s += S[m, i] * wa[b, B_U + 6 * m + k]
                D[i, k] = s
            s = tau[iv + i]
            for m in range(6):
                s -= S[m, i] * wa[b, B_PA + m]
            wa[b, B_u + i] = s
        # Dinv columns: solve D x = e_k
        for k in range(n):
            for i in range(n):
                y[i] = 1.0 if i == k else 0.0
            if not _solve_spd(D, n, y):
                return STATUS_SINGULAR + b
            for i in range(n):
                wa[b, B_DINV + 6 * i + k] = y[i]
        if lam < 0:
            continue
        # Ia = IA - U Dinv U^T ; pa = pA + Ia c + U Dinv u
        for r in range(6):
            for k in range(6):
                s = wa[b, B_IA + 6 * r + k]
                for i in range(n):
                    for j in range(n):
                        s -= wa[b, B_U + 6 * r + i] * wa[b, B_DINV + 6 * i + j] \
                            * wa[b, B_U + 6 * k + j]
                Ia[r, k] = s
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += wa[b, B_DINV + 6 * i + j] * wa[b, B_u + j]
            y[i] = s
        for r in range(6):
            s = wa[b, B_PA + r]
            for k in range(6):
                s += Ia[r, k] * wa[b, B_C + k]
            for i in range(n):
                s += wa[b, B_U + 6 * r + i] * y[i]
            pa[r] = s
        # IA_parent += X^T Ia X ; pA_parent += X^T pa
        _plucker_matrix(ws, b, X)
        for r in range(6):
            for k in range(6):
                s = 0.0
                for m in range(6):
                    s += Ia[r, m] * X[m, k]
                T[r, k] = s
        for r in range(6):
            for k in range(6):
                s = 0.0
                for m in range(6):
                    s += X[m, r] * T[m, k]
                wa[lam, B_IA + 6 * r + k] += s
            s = 0.0
            for m in range(6):
                s += X[m, r] * pa[m]
            wa[lam, B_PA + r] += s
    # Pass 3 (root to leaves): a' = X a_parent + c, qdd = Dinv (u - U^T a'), a = a' + S qdd.
    for b in range(nb):
        lam = ints[b, PARENT]
        iv = ints[b, IV]
        n = _motion_subspace(ints, reals, b, S)
        if lam < 0:
            _motion_to_body(ws, b, ws[nb, 0], ws[nb, 1], ws[nb, 2], ws[nb, 3], ws[nb, 4],
                            ws[nb, 5], W_A)
        else:
            _motion_to_body(ws, b, ws[lam, W_A], ws[lam, W_A + 1], ws[lam, W_A + 2],
                            ws[lam, W_A + 3], ws[lam, W_A + 4], ws[lam, W_A + 5], W_A)
        for r in range(6):
            ws[b, W_A + r] += wa[b, B_C + r]
        for i in range(n):
            s = wa[b, B_u + i]
            for m in range(6):
                s -= wa[b, B_U + 6 * m + i] * ws[b, W_A + m]
            y[i] = s
        for i in range(n):
            s = 0.0
            for j in range(n):
                s += wa[b, B_DINV + 6 * i + j] * y[j]
            qdd[iv + i] = s
        for r in range(6):
            s = 0.0
            for k in range(n):
                s += S[r, k] * qdd[iv + k]
            ws[b, W_A + r] += s
    return STATUS_OK
