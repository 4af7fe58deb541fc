"""Per-body building blocks of the kernels: joint transform, motion and force transforms, I v.

A body's transform is kept as the rotation ``R`` = parent_R_body and the position ``p`` of the
body origin in the parent frame (RBDA §2.8 and Table 2.5, in ``[lin; ang]`` order):

- motion to the body:  ``w' = R^T w``, ``v' = R^T (v + w x p)``      (X m)
- force to the parent: ``f' = R f``,   ``n' = R n + p x (R f)``       (X^T f)
- inertia times motion: ``f = m v - h x w``, ``n = I_O w + h x v``   (h = m c, RBDA eq. 2.63)
"""

import numba
import numpy as np

from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels.jit import INLINE
from rnea_ros.core.layout import (AXIS, AXIS_CODE, GENERAL_AXIS, H, I_O, IQ, KIND, MASS, P_T,
                                  R_T, W_P, W_X)


@numba.njit(**INLINE)
def joint_placement(ints, reals, q, b, ws):
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


@numba.njit(**INLINE)
def motion_to_body(ws, b, vx, vy, vz, ox, oy, oz, col):
    """ws[b, col:col+6] = X m for body b's transform and the motion m = [v; o] (parent frame)."""
    px, py, pz = ws[b, W_P], ws[b, W_P + 1], ws[b, W_P + 2]
    # v + o x p
    lx = vx + oy * pz - oz * py
    ly = vy + oz * px - ox * pz
    lz = vz + ox * py - oy * px
    for r in range(3):
        ws[b, col + r] = ws[b, r] * lx + ws[b, 3 + r] * ly + ws[b, 6 + r] * lz
        ws[b, col + 3 + r] = ws[b, r] * ox + ws[b, 3 + r] * oy + ws[b, 6 + r] * oz


@numba.njit(**INLINE)
def inertia_times(reals, b, vx, vy, vz, ox, oy, oz):
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


@numba.njit(**INLINE)
def bias_force(reals, ws, b, vx, vy, vz, ox, oy, oz):
    """Return v x* (I_b v) - f_ext_b (RBDA eq. 5.9's velocity term) as 6 scalars."""
    g0, g1, g2, g3, g4, g5 = inertia_times(reals, b, vx, vy, vz, ox, oy, oz)
    return (oy * g2 - oz * g1 - ws[b, W_X],
            oz * g0 - ox * g2 - ws[b, W_X + 1],
            ox * g1 - oy * g0 - ws[b, W_X + 2],
            oy * g5 - oz * g4 + vy * g2 - vz * g1 - ws[b, W_X + 3],
            oz * g3 - ox * g5 + vz * g0 - vx * g2 - ws[b, W_X + 4],
            ox * g4 - oy * g3 + vx * g1 - vy * g0 - ws[b, W_X + 5])


@numba.njit(**INLINE)
def add_force_to_parent(ws, b, f0, f1, f2, n0, n1, n2, out, lam, col):
    """out[lam, col:col+6] += X^T [f; n]: a force of body b moved to its parent's frame."""
    px, py, pz = ws[b, W_P], ws[b, W_P + 1], ws[b, W_P + 2]
    gx = ws[b, 0] * f0 + ws[b, 1] * f1 + ws[b, 2] * f2
    gy = ws[b, 3] * f0 + ws[b, 4] * f1 + ws[b, 5] * f2
    gz = ws[b, 6] * f0 + ws[b, 7] * f1 + ws[b, 8] * f2
    out[lam, col] += gx
    out[lam, col + 1] += gy
    out[lam, col + 2] += gz
    out[lam, col + 3] += ws[b, 0] * n0 + ws[b, 1] * n1 + ws[b, 2] * n2 + py * gz - pz * gy
    out[lam, col + 4] += ws[b, 3] * n0 + ws[b, 4] * n1 + ws[b, 5] * n2 + pz * gx - px * gz
    out[lam, col + 5] += ws[b, 6] * n0 + ws[b, 7] * n1 + ws[b, 8] * n2 + px * gy - py * gx


@numba.njit(**INLINE)
def joint_transform(ints, reals, q, b):
    """Return body b's (R = parent_R_body row major, p) as 12 scalars (as joint_placement).

    The same transform as :func:`joint_placement`, kept in registers (the kinematics kernels
    walk one chain and need no workspace).
    """
    kind = ints[b, KIND]
    iq = ints[b, IQ]
    if kind == FREE_FLYER:
        x, y, z, s = q[iq + 3], q[iq + 4], q[iq + 5], q[iq + 6]
        n = np.sqrt(x * x + y * y + z * z + s * s)
        x, y, z, s = x / n, y / n, z / n, s / n
        return (1 - 2 * (y * y + z * z), 2 * (x * y - z * s), 2 * (x * z + y * s),
                2 * (x * y + z * s), 1 - 2 * (x * x + z * z), 2 * (y * z - x * s),
                2 * (x * z - y * s), 2 * (y * z + x * s), 1 - 2 * (x * x + y * y),
                q[iq], q[iq + 1], q[iq + 2])
    t00, t01, t02 = reals[b, R_T], reals[b, R_T + 1], reals[b, R_T + 2]
    t10, t11, t12 = reals[b, R_T + 3], reals[b, R_T + 4], reals[b, R_T + 5]
    t20, t21, t22 = reals[b, R_T + 6], reals[b, R_T + 7], reals[b, R_T + 8]
    px, py, pz = reals[b, P_T], reals[b, P_T + 1], reals[b, P_T + 2]
    ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
    if kind != REVOLUTE:          # prismatic: R = R_T, p = p_T + d R_T u
        d = q[iq]
        return (t00, t01, t02, t10, t11, t12, t20, t21, t22,
                px + d * (t00 * ux + t01 * uy + t02 * uz),
                py + d * (t10 * ux + t11 * uy + t12 * uz),
                pz + d * (t20 * ux + t21 * uy + t22 * uz))
    c = np.cos(q[iq])
    s = np.sin(q[iq])
    code = ints[b, AXIS_CODE]
    if code != GENERAL_AXIS:
        # Rotation about +-e_k: columns i, j of R_T turn in their plane, column k stays.
        if code >= 3:
            s = -s
        k = code % 3
        if k == 0:
            return (t00, c * t01 + s * t02, c * t02 - s * t01,
                    t10, c * t11 + s * t12, c * t12 - s * t11,
                    t20, c * t21 + s * t22, c * t22 - s * t21, px, py, pz)
        if k == 1:
            return (c * t00 - s * t02, t01, c * t02 + s * t00,
                    c * t10 - s * t12, t11, c * t12 + s * t10,
                    c * t20 - s * t22, t21, c * t22 + s * t20, px, py, pz)
        return (c * t00 + s * t01, c * t01 - s * t00, t02,
                c * t10 + s * t11, c * t11 - s * t10, t12,
                c * t20 + s * t21, c * t21 - s * t20, t22, px, py, pz)
    t = 1.0 - c
    j00, j01, j02 = c + t * ux * ux, t * ux * uy - s * uz, t * ux * uz + s * uy
    j10, j11, j12 = t * ux * uy + s * uz, c + t * uy * uy, t * uy * uz - s * ux
    j20, j21, j22 = t * ux * uz - s * uy, t * uy * uz + s * ux, c + t * uz * uz
    return (t00 * j00 + t01 * j10 + t02 * j20, t00 * j01 + t01 * j11 + t02 * j21,
            t00 * j02 + t01 * j12 + t02 * j22,
            t10 * j00 + t11 * j10 + t12 * j20, t10 * j01 + t11 * j11 + t12 * j21,
            t10 * j02 + t11 * j12 + t12 * j22,
            t20 * j00 + t21 * j10 + t22 * j20, t20 * j01 + t21 * j11 + t22 * j21,
            t20 * j02 + t21 * j12 + t22 * j22,
            px, py, pz)
