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
