"""Numba kernels: the algorithms of :mod:`rnea_ros.dynamics` on the model's flat arrays.

The kernels compute exactly what the numpy reference computes (tests compare them to 1e-12),
but without forming 6x6 matrices: a body's transform is kept as the rotation ``R`` = parent_R_body
and the position ``p`` of the body origin in the parent frame, so that (``[lin; ang]`` order)

- motion to the body:  ``w' = R^T w``, ``v' = R^T (v + w x p)``      (X m)
- force to the parent: ``f' = R f``,   ``n' = R n + p x (R f)``       (X^T f)
- inertia times motion: ``f = m v - h x w``, ``n = I_O w + h x v``   (h = m c)

Per-body results live in ``ws`` (nbodies x 30): R(9) p(3) v(6) a(6) f(6).  Kernels return a
status code instead of raising: 0 = ok, otherwise the index (1-based) of the first input that is
not finite, which the Python wrappers turn into a ValueError naming the joint.
"""

import numba
import numpy as np

from rnea_ros.joints import FREE_FLYER, PRISMATIC, REVOLUTE
from rnea_ros.model import AXIS, H, I_O, IQ, IV, KIND, MASS, P_T, PARENT, R_T

_OPTS = dict(nogil=True, cache=True, fastmath=False, error_model='numpy')

STATUS_OK = 0
STATUS_BAD_Q = 1
STATUS_BAD_QD = 2
STATUS_BAD_QDD = 3
STATUS_BAD_QUATERNION = 4


@numba.njit(**_OPTS)
def _all_finite(x):
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@numba.njit(**_OPTS)
def _joint_placement(ints, reals, q, b, w):
    """Write R = parent_R_body and p (body origin in parent) of body b into w[0:12]."""
    kind = ints[b, KIND]
    iq = ints[b, IQ]
    if kind == FREE_FLYER:
        x, y, z, s = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        n = np.sqrt(x * x + y * y + z * z + s * s)
        x, y, z, s = x / n, y / n, z / n, s / n
        w[0] = 1 - 2 * (y * y + z * z)
        w[1] = 2 * (x * y - z * s)
        w[2] = 2 * (x * z + y * s)
        w[3] = 2 * (x * y + z * s)
        w[4] = 1 - 2 * (x * x + z * z)
        w[5] = 2 * (y * z - x * s)
        w[6] = 2 * (x * z - y * s)
        w[7] = 2 * (y * z + x * s)
        w[8] = 1 - 2 * (x * x + y * y)
        w[9], w[10], w[11] = q[iq], q[iq + 1], q[iq + 2]
        return
    ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
    if kind == REVOLUTE:
        c = np.cos(q[iq])
        s = np.sin(q[iq])
        t = 1.0 - c
        # R_J = c 1 + s [u] + (1 - c) u u^T (Rodrigues); R = R_T R_J.
        j00, j01, j02 = c + t * ux * ux, t * ux * uy - s * uz, t * ux * uz + s * uy
        j10, j11, j12 = t * ux * uy + s * uz, c + t * uy * uy, t * uy * uz - s * ux
        j20, j21, j22 = t * ux * uz - s * uy, t * uy * uz + s * ux, c + t * uz * uz
        for r in range(3):
            a0 = reals[b, R_T + 3 * r]
            a1 = reals[b, R_T + 3 * r + 1]
            a2 = reals[b, R_T + 3 * r + 2]
            w[3 * r] = a0 * j00 + a1 * j10 + a2 * j20
            w[3 * r + 1] = a0 * j01 + a1 * j11 + a2 * j21
            w[3 * r + 2] = a0 * j02 + a1 * j12 + a2 * j22
        for r in range(3):
            w[9 + r] = reals[b, P_T + r]
    else:  # PRISMATIC
        d = q[iq]
        for r in range(9):
            w[r] = reals[b, R_T + r]
        for r in range(3):
            w[9 + r] = reals[b, P_T + r] + d * (reals[b, R_T + 3 * r] * ux
                                                + reals[b, R_T + 3 * r + 1] * uy
                                                + reals[b, R_T + 3 * r + 2] * uz)


@numba.njit(**_OPTS)
def _motion_to_body(w, src, dst):
    """dst = X src for the transform stored in w (R, p); src, dst are 6-vectors [lin; ang]."""
    vx, vy, vz, ox, oy, oz = src[0], src[1], src[2], src[3], src[4], src[5]
    px, py, pz = w[9], w[10], w[11]
    # v + w x p
    lx = vx + oy * pz - oz * py
    ly = vy + oz * px - ox * pz
    lz = vz + ox * py - oy * px
    for r in range(3):
        dst[r] = w[r] * lx + w[3 + r] * ly + w[6 + r] * lz
        dst[3 + r] = w[r] * ox + w[3 + r] * oy + w[6 + r] * oz


@numba.njit(**_OPTS)
def _inertia_times(reals, b, x, out):
    """out = I_b x for the spatial inertia of body b (about its origin)."""
    m = reals[b, MASS]
    hx, hy, hz = reals[b, H], reals[b, H + 1], reals[b, H + 2]
    vx, vy, vz, ox, oy, oz = x[0], x[1], x[2], x[3], x[4], x[5]
    out[0] = m * vx - (hy * oz - hz * oy)
    out[1] = m * vy - (hz * ox - hx * oz)
    out[2] = m * vz - (hx * oy - hy * ox)
    out[3] = (reals[b, I_O] * ox + reals[b, I_O + 1] * oy + reals[b, I_O + 2] * oz
              + hy * vz - hz * vy)
    out[4] = (reals[b, I_O + 3] * ox + reals[b, I_O + 4] * oy + reals[b, I_O + 5] * oz
              + hz * vx - hx * vz)
    out[5] = (reals[b, I_O + 6] * ox + reals[b, I_O + 7] * oy + reals[b, I_O + 8] * oz
              + hx * vy - hy * vx)


@numba.njit(**_OPTS)
def _rnea_body_forces(ints, reals, q, qd, qdd, fext, a0, ws):
    """Forward pass of seed 000: body velocities, accelerations and forces f_i in ws."""
    nb = ints.shape[0]
    tmp = np.empty(6)
    iv6 = np.empty(6)
    for b in range(nb):
        w = ws[b]
        _joint_placement(ints, reals, q, b, w)
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        v = w[12:18]
        a = w[18:24]
        if kind == FREE_FLYER:
            # v = S qd with S = 1; a = X a0 + qdd (v x S qd = v x v = 0).
            _motion_to_body(w, a0, a)
            for r in range(6):
                v[r] = qd[iv + r]
                a[r] += qdd[iv + r]
        else:
            if lam < 0:
                for r in range(6):
                    v[r] = 0.0
                _motion_to_body(w, a0, a)
            else:
                _motion_to_body(w, ws[lam, 12:18], v)
                _motion_to_body(w, ws[lam, 18:24], a)
            ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
            sd = qd[iv]
            sa = qdd[iv]
            # vJ = S qd; a += S qdd + v x vJ (v taken after adding vJ; v x vJ is unchanged).
            if kind == REVOLUTE:
                v[3] += ux * sd
                v[4] += uy * sd
                v[5] += uz * sd
                jx, jy, jz = ux * sd, uy * sd, uz * sd
                a[0] += v[1] * jz - v[2] * jy
                a[1] += v[2] * jx - v[0] * jz
                a[2] += v[0] * jy - v[1] * jx
                a[3] += ux * sa + v[4] * jz - v[5] * jy
                a[4] += uy * sa + v[5] * jx - v[3] * jz
                a[5] += uz * sa + v[3] * jy - v[4] * jx
            else:
                v[0] += ux * sd
                v[1] += uy * sd
                v[2] += uz * sd
                jx, jy, jz = ux * sd, uy * sd, uz * sd
                a[0] += ux * sa + v[4] * jz - v[5] * jy
                a[1] += uy * sa + v[5] * jx - v[3] * jz
                a[2] += uz * sa + v[3] * jy - v[4] * jx
        # f = I a + v x* (I v) - f_ext
        f = w[24:30]
        _inertia_times(reals, b, a, f)
        _inertia_times(reals, b, v, iv6)
        ox, oy, oz = v[3], v[4], v[5]
        tmp[0] = oy * iv6[2] - oz * iv6[1]
        tmp[1] = oz * iv6[0] - ox * iv6[2]
        tmp[2] = ox * iv6[1] - oy * iv6[0]
        tmp[3] = oy * iv6[5] - oz * iv6[4] + v[1] * iv6[2] - v[2] * iv6[1]
        tmp[4] = oz * iv6[3] - ox * iv6[5] + v[2] * iv6[0] - v[0] * iv6[2]
        tmp[5] = ox * iv6[4] - oy * iv6[3] + v[0] * iv6[1] - v[1] * iv6[0]
        for r in range(6):
            f[r] += tmp[r] - fext[b, r]


@numba.njit(**_OPTS)
def _rnea_backward(ints, reals, ws, tau):
    """Backward pass of seed 000: tau_i = S_i^T f_i, f_parent += X^T f_i."""
    for b in range(ints.shape[0] - 1, -1, -1):
        w = ws[b]
        f = w[24:30]
        kind = ints[b, KIND]
        iv = ints[b, IV]
        if kind == FREE_FLYER:
            for r in range(6):
                tau[iv + r] = f[r]
        elif kind == REVOLUTE:
            tau[iv] = reals[b, AXIS] * f[3] + reals[b, AXIS + 1] * f[4] + reals[b, AXIS + 2] * f[5]
        else:
            tau[iv] = reals[b, AXIS] * f[0] + reals[b, AXIS + 1] * f[1] + reals[b, AXIS + 2] * f[2]
        lam = ints[b, PARENT]
        if lam >= 0:
            fp = ws[lam, 24:30]
            px, py, pz = w[9], w[10], w[11]
            gx = w[0] * f[0] + w[1] * f[1] + w[2] * f[2]
            gy = w[3] * f[0] + w[4] * f[1] + w[5] * f[2]
            gz = w[6] * f[0] + w[7] * f[1] + w[8] * f[2]
            fp[0] += gx
            fp[1] += gy
            fp[2] += gz
            fp[3] += w[0] * f[3] + w[1] * f[4] + w[2] * f[5] + py * gz - pz * gy
            fp[4] += w[3] * f[3] + w[4] * f[4] + w[5] * f[5] + pz * gx - px * gz
            fp[5] += w[6] * f[3] + w[7] * f[4] + w[8] * f[5] + px * gy - py * gx


@numba.njit(**_OPTS)
def check_state(ints, q, qd, qdd):
    """Return a status code for the state: non-finite entries or a zero quaternion."""
    if not _all_finite(q):
        return STATUS_BAD_Q
    if not _all_finite(qd):
        return STATUS_BAD_QD
    if not _all_finite(qdd):
        return STATUS_BAD_QDD
    if ints.shape[0] > 0 and ints[0, KIND] == FREE_FLYER:
        n2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
        if n2 < 1e-12:
            return STATUS_BAD_QUATERNION
    return STATUS_OK


@numba.njit(**_OPTS)
def rnea(ints, reals, q, qd, qdd, fext, a0, ws, tau):
    """Inverse dynamics (seed 000) into tau; f_i (reaction wrenches) stay in ws[:, 24:30]."""
    status = check_state(ints, q, qd, qdd)
    if status != STATUS_OK:
        return status
    _rnea_body_forces(ints, reals, q, qd, qdd, fext, a0, ws)
    _rnea_backward(ints, reals, ws, tau)
    return STATUS_OK


@numba.njit(**_OPTS)
def rnea_batch(ints, reals, Q, QD, QDD, fext, a0, ws, TAU):
    """Inverse dynamics for every row of Q, QD, QDD; returns (status, first bad row)."""
    for k in range(Q.shape[0]):
        status = check_state(ints, Q[k], QD[k], QDD[k])
        if status != STATUS_OK:
            return status, k
        _rnea_body_forces(ints, reals, Q[k], QD[k], QDD[k], fext, a0, ws)
        _rnea_backward(ints, reals, ws, TAU[k])
    return STATUS_OK, -1
