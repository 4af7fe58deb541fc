"""Numba kernels of link-frame kinematics: placement and Jacobian (RBDA §4.1, eq. 4.38).

They compute what :func:`rnea_ros.core.reference.link_pose` and
:func:`rnea_ros.core.reference.frame_jacobian` compute (tests compare them), walking once from
the link's body up to the root (only the joints that support the link), without 6x6 matrices.

A frame is given as ``[body, body_R_link (9, row major), link origin in body (3)]``.  On the way
up, the kernel keeps the pose (R, p) of the link frame in the current body's frame; the motion
of body b's joint seen in the link frame (the 'LOCAL' column, RBDA Table 2.5's transform) is

- revolute about u: ``w = R^T u``, ``v = R^T (u x p)``;
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
from rnea_ros.core.kernels.body import joint_placement
from rnea_ros.core.kernels.jit import (all_finite, check_q, INLINE, kinematics_tables, MAT,
                                       model_tables, OPTS, VEC)
from rnea_ros.core.layout import (AXIS, IV, KIND, PARENT, STATUS_OK, STATUS_OVERFLOW, W_P)

LOCAL, WORLD, LOCAL_WORLD_ALIGNED = 0, 1, 2


@numba.njit(**INLINE)
def _column(J, c, r00, r01, r02, r10, r11, r12, r20, r21, r22, vx, vy, vz, wx, wy, wz):
    """J[:, c] = [R^T v; R^T w]: a motion in the current body's axes, seen in the link's axes."""
    J[0, c] = r00 * vx + r10 * vy + r20 * vz
    J[1, c] = r01 * vx + r11 * vy + r21 * vz
    J[2, c] = r02 * vx + r12 * vy + r22 * vz
    J[3, c] = r00 * wx + r10 * wy + r20 * wz
    J[4, c] = r01 * wx + r11 * wy + r21 * wz
    J[5, c] = r02 * wx + r12 * wy + r22 * wz


@numba.njit(**INLINE)
def walk_to_root(ints, reals, q, frame, wk, J, jacobian):
    """Return the link's placement (R row major, p) in the root; LOCAL columns into J if asked."""
    r00, r01, r02 = frame[1], frame[2], frame[3]
    r10, r11, r12 = frame[4], frame[5], frame[6]
    r20, r21, r22 = frame[7], frame[8], frame[9]
    px, py, pz = frame[10], frame[11], frame[12]
    b = int(frame[0])
    while b >= 0:
        joint_placement(ints, reals, q, b, wk)
        if jacobian:
            kind = ints[b, KIND]
            iv = ints[b, IV]
            if kind == FREE_FLYER:
                _column(J, iv, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                        1.0, 0.0, 0.0, 0.0, 0.0, 0.0)
                _column(J, iv + 1, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                        0.0, 1.0, 0.0, 0.0, 0.0, 0.0)
                _column(J, iv + 2, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                        0.0, 0.0, 1.0, 0.0, 0.0, 0.0)
                _column(J, iv + 3, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                        0.0, -pz, py, 1.0, 0.0, 0.0)
                _column(J, iv + 4, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                        pz, 0.0, -px, 0.0, 1.0, 0.0)
                _column(J, iv + 5, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                        -py, px, 0.0, 0.0, 0.0, 1.0)
            else:
                ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
                if kind == REVOLUTE:
                    _column(J, iv, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                            uy * pz - uz * py, uz * px - ux * pz, ux * py - uy * px, ux, uy, uz)
                else:
                    _column(J, iv, r00, r01, r02, r10, r11, r12, r20, r21, r22,
                            ux, uy, uz, 0.0, 0.0, 0.0)
        # (R, p) <- (R_b R, R_b p + p_b): the link's pose in the parent's frame.
        b00, b01, b02 = wk[b, 0], wk[b, 1], wk[b, 2]
        b10, b11, b12 = wk[b, 3], wk[b, 4], wk[b, 5]
        b20, b21, b22 = wk[b, 6], wk[b, 7], wk[b, 8]
        px, py, pz = (b00 * px + b01 * py + b02 * pz + wk[b, W_P],
                      b10 * px + b11 * py + b12 * pz + wk[b, W_P + 1],
                      b20 * px + b21 * py + b22 * pz + wk[b, W_P + 2])
        r00, r01, r02, r10, r11, r12, r20, r21, r22 = (
            b00 * r00 + b01 * r10 + b02 * r20, b00 * r01 + b01 * r11 + b02 * r21,
            b00 * r02 + b01 * r12 + b02 * r22,
            b10 * r00 + b11 * r10 + b12 * r20, b10 * r01 + b11 * r11 + b12 * r21,
            b10 * r02 + b11 * r12 + b12 * r22,
            b20 * r00 + b21 * r10 + b22 * r20, b20 * r01 + b21 * r11 + b22 * r21,
            b20 * r02 + b21 * r12 + b22 * r22)
        b = ints[b, PARENT]
    return r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz


@numba.njit(types.int64(VEC, VEC, VEC, VEC, MAT), **OPTS)
def frame_placement(model, buffer, frame, q, M):
    """Write the 4x4 placement of a link frame in the root frame into M; return a status."""
    ints, reals = model_tables(model)
    status = check_q(ints, q)
    if status != STATUS_OK:
        return status
    wk = kinematics_tables(buffer, ints.shape[0])[0]
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = walk_to_root(
        ints, reals, q, frame, wk, M, False)
    M[0, 0], M[0, 1], M[0, 2], M[0, 3] = r00, r01, r02, px
    M[1, 0], M[1, 1], M[1, 2], M[1, 3] = r10, r11, r12, py
    M[2, 0], M[2, 1], M[2, 2], M[2, 3] = r20, r21, r22, pz
    M[3, 0], M[3, 1], M[3, 2], M[3, 3] = 0.0, 0.0, 0.0, 1.0
    if not (np.isfinite(px) and np.isfinite(py) and np.isfinite(pz)):
        return STATUS_OVERFLOW
    return STATUS_OK


@numba.njit(types.int64(VEC, VEC, VEC, VEC, MAT, types.int64), **OPTS)
def frame_jacobian(model, buffer, frame, q, J, reference):
    """Write the (6, nv) Jacobian of a link frame into J (reference: LOCAL, WORLD, ...)."""
    ints, reals = model_tables(model)
    status = check_q(ints, q)
    if status != STATUS_OK:
        return status
    wk = kinematics_tables(buffer, ints.shape[0])[0]
    nv = J.shape[1]
    for r in range(6):
        for c in range(nv):
            J[r, c] = 0.0
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz = walk_to_root(
        ints, reals, q, frame, wk, J, True)
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
    for r in range(6):
        if not all_finite(J[r]):
            return STATUS_OVERFLOW
    return STATUS_OK
