"""Numba kernels of link-frame kinematics: placement and Jacobian (RBDA §4.1, eq. 4.38).

They compute what :func:`rnea_ros.core.reference.link_pose` and
:func:`rnea_ros.core.reference.frame_jacobian` compute (tests compare them), walking once from
the link's body up to the root (only the joints that support the link), without 6x6 matrices.

A frame is given as ``[body, body_R_link (9, row major), link origin in body (3)]``; the
kernels need no workspace (the transforms stay in registers: :func:`~.body.joint_transform`).
On the way up, the kernel keeps the pose (R, p) of the link frame in the current body's frame;
the motion of body b's joint seen in the link frame (the 'LOCAL' column, RBDA Table 2.5's
transform) is

- revolute about u: ``w = R^T u``, ``v = R^T (u x p)`` (about +-e_k: rows of R);
- prismatic along u: ``v = R^T u``, ``w = 0``;
- free flyer: the base twist's six unit vectors moved the same way;

then ``(R, p) <- (R_b R, R_b p + p_b)``.  At the root (R, p) is the placement ``0_M_link``, and
'WORLD' and 'LOCAL_WORLD_ALIGNED' columns follow: ``w0 = R w``, ``v_aligned = R v``,
``v_world = R v + p x (R w)``.
"""

import numba
from numba import types
import numpy as np

from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels.body import joint_transform
from rnea_ros.core.kernels.jit import check_q, INLINE, MAT, model_tables, OPTS, VEC
from rnea_ros.core.layout import (AXIS, AXIS_CODE, GENERAL_AXIS, IV, KIND, PARENT, STATUS_OK,
                                  STATUS_OVERFLOW)

LOCAL, WORLD, LOCAL_WORLD_ALIGNED = 0, 1, 2


@numba.njit(**INLINE)
def _column(J, c, r00, r01, r02, r10, r11, r12, r20, r21, r22, vx, vy, vz, wx, wy, wz):
    """J[:, c] = [R^T v; R^T w]: a motion in the current body's axes, seen in the link's axes.

    Returns the sum of the column (non-finite when an entry is: the kernels' overflow check).
    """
    J[0, c] = a0 = r00 * vx + r10 * vy + r20 * vz
    J[1, c] = a1 = r01 * vx + r11 * vy + r21 * vz
    J[2, c] = a2 = r02 * vx + r12 * vy + r22 * vz
    J[3, c] = a3 = r00 * wx + r10 * wy + r20 * wz
    J[4, c] = a4 = r01 * wx + r11 * wy + r21 * wz
    J[5, c] = a5 = r02 * wx + r12 * wy + r22 * wz
    return a0 + a1 + a2 + a3 + a4 + a5


@numba.njit(**INLINE)
def _set(J, c, sign, v0, v1, v2, w0, w1, w2):
    """J[:, c] = sign [v; w]; return the column's sum (as :func:`_column`)."""
    J[0, c] = a0 = sign * v0
    J[1, c] = a1 = sign * v1
    J[2, c] = a2 = sign * v2
    J[3, c] = a3 = sign * w0
    J[4, c] = a4 = sign * w1
    J[5, c] = a5 = sign * w2
    return a0 + a1 + a2 + a3 + a4 + a5


@numba.njit(**INLINE)
def walk_to_root(ints, reals, q, frame, J, jacobian):
    """Return the link's placement (R row major, p) in the root; LOCAL columns into J if asked.

    The 13th value returned is the sum of the columns written (finite when they all are).
    """
    total = 0.0
    r00, r01, r02 = frame[1], frame[2], frame[3]
    r10, r11, r12 = frame[4], frame[5], frame[6]
    r20, r21, r22 = frame[7], frame[8], frame[9]
    px, py, pz = frame[10], frame[11], frame[12]
    b = int(frame[0])
    while b >= 0:
        if jacobian:
            kind = ints[b, KIND]
            iv = ints[b, IV]
            code = ints[b, AXIS_CODE]
            if kind == REVOLUTE and code != GENERAL_AXIS:
                # u = +-e_k: w = R^T u = +-row k of R, v = R^T (u x p) from the two other rows
                sign = 1.0 if code < 3 else -1.0
                k = code % 3
                if k == 0:
                    total += _set(J, iv, sign, py * r20 - pz * r10, py * r21 - pz * r11,
                                  py * r22 - pz * r12, r00, r01, r02)
                elif k == 1:
                    total += _set(J, iv, sign, pz * r00 - px * r20, pz * r01 - px * r21,
                                  pz * r02 - px * r22, r10, r11, r12)
                else:
                    total += _set(J, iv, sign, px * r10 - py * r00, px * r11 - py * r01,
                                  px * r12 - py * r02, r20, r21, r22)
            elif kind == FREE_FLYER:
                total += _column(J, iv, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                 1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                total += _column(J, iv + 1, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                 0.0, 1.0, 0.0, 0.0, 0.0, 0.0)
                total += _column(J, iv + 2, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                 0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
                total += _column(J, iv + 3, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                 0.0, -pz, py, 1.0, 0.0, 0.0)
                total += _column(J, iv + 4, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                 pz, 0.0, -px, 0.0, 1.0, 0.0)
                total += _column(J, iv + 5, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                 -py, px, 0.0, 0.0, 0.0, 1.0)
            else:
                ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
                if kind == REVOLUTE:
                    total += _column(J, iv, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                     uy * pz - uz * py, uz * px - ux * pz, ux * py - uy * px,
                                     ux, uy, uz)
                else:
                    total += _column(J, iv, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                                     ux, uy, uz, 0.0, 0.0, 0.0)
        # (R, p) <- (R_b R, R_b p + p_b): the link's pose in the parent's frame.
        b00, b01, b02, b10, b11, b12, b20, b21, b22, bx, by, bz = joint_transform(
            ints, reals, q, b)
        px, py, pz = (b00 * px + b01 * py + b02 * pz + bx,
                      b10 * px + b11 * py + b12 * pz + by,
                      b20 * px + b21 * py + b22 * pz + bz)
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
            b00 * r00 + b01 * r10 + b02 * r20, b00 * r01 + b01 * r11 + b02 * r21,
            b00 * r02 + b01 * r12 + b02 * r22,
            b10 * r00 + b11 * r10 + b12 * r20, b10 * r01 + b11 * r11 + b12 * r21,
            b10 * r02 + b11 * r12 + b12 * r22,
            b20 * r00 + b21 * r10 + b22 * r20, b20 * r01 + b21 * r11 + b22 * r21,
            b20 * r02 + b21 * r12 + b22 * r22)
        b = ints[b, PARENT]
    return r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, total


@numba.njit(types.int64(VEC, VEC, VEC, MAT), **OPTS)
def frame_placement(model, frame, q, M):
    """Write the 4x4 placement of a link frame in the root frame into M; return a status."""
    ints, reals = model_tables(model)
    status = check_q(ints, q)
    if status != STATUS_OK:
        return status
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, _ = walk_to_root(
        ints, reals, q, frame, M, False)
    M[0, 0], M[0, 1], M[0, 2], M[0, 3] = r00, r01, r02, px
    M[1, 0], M[1, 1], M[1, 2], M[1, 3] = r10, r11, r12, py
    M[2, 0], M[2, 1], M[2, 2], M[2, 3] = r20, r21, r22, pz
    M[3, 0], M[3, 1], M[3, 2], M[3, 3] = 0.0, 0.0, 0.0, 1.0
    if not (np.isfinite(px) and np.isfinite(py) and np.isfinite(pz)):
        return STATUS_OVERFLOW
    return STATUS_OK


@numba.njit(types.int64(VEC, VEC, VEC, MAT, types.int64), **OPTS)
def frame_jacobian(model, frame, q, J, reference):
    """Write the (6, nv) Jacobian of a link frame into J (reference: LOCAL, WORLD, ...)."""
    ints, reals = model_tables(model)
    status = check_q(ints, q)
    if status != STATUS_OK:
        return status
    nv = J.shape[1]
    for r in range(6):
        for c in range(nv):
            J[r, c] = 0.0
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, total = walk_to_root(
        ints, reals, q, frame, J, True)
    if not np.isfinite(total):
        return STATUS_OVERFLOW
    if reference != LOCAL:
        for c in range(nv):
            lx, ly, lz = J[0, c], J[1, c], J[2, c]
            ax, ay, az = J[3, c], J[4, c], J[5, c]
            vx = r00 * lx + r01 * ly + r02 * lz
            vy = r10 * lx + r11 * ly + r12 * lz
            vz = r20 * lx + r21 * ly + r22 * lz
            wx = r00 * ax + r01 * ay + r02 * az
            wy = r10 * ax + r11 * ay + r12 * az
            wz = r20 * ax + r21 * ay + r22 * az
            if reference == WORLD:             # about the root origin: v + p x w
                vx += py * wz - pz * wy
                vy += pz * wx - px * wz
                vz += px * wy - py * wx
            J[0, c], J[1, c], J[2, c] = vx, vy, vz
            J[3, c], J[4, c], J[5, c] = wx, wy, wz
            total += vx + vy + vz
        if not np.isfinite(total):
            return STATUS_OVERFLOW
    return STATUS_OK
