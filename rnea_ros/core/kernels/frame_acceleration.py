"""Numba kernel of a link frame's velocity and spatial or classical acceleration (RBDA §2.11).

It computes what :func:`rnea_ros.core.frame_acceleration.frame_motion_reference` computes (tests
compare them): RBDA Table 5.1's forward pass without forces, for the bodies up to the link's
body, with the motion transforms of :mod:`.body` (no 6x6 matrices)::

    v_b = bX_lambda v_lambda + S qd_b,   a_b = bX_lambda a_lambda + S qdd_b + v_b x S qd_b,

the root's acceleration a_0 given and its velocity zero (a free-flyer base: v = qd[:6],
a = bX_0 a_0 + qdd[:6]).  Then the body's v and a move to the link frame (the URDF's fixed
joints), into the reference (``R`` and ``p`` the link's placement from the placement kernel's
walk): 'LOCAL' as is, 'LOCAL_WORLD_ALIGNED' rotated by R, 'WORLD' rotated and taken about the
root origin (lin += p x ang); classical: a_lin += w x v_lin in that reference.  It writes only
the transform, velocity and acceleration columns of the RNEA rows (and the kinematics rows), so
the body forces of the last inverse dynamics (``last_reaction_wrenches``) stay valid.
"""

import numba
from numba import types
import numpy as np

from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels.body import joint_placement, motion_to_body
from rnea_ros.core.kernels.jit import (all_finite, check_state, MAT, model_tables, OPTS, VEC,
                                       workspace_tables)
from rnea_ros.core.kernels.kinematics import LOCAL, walk_to_root, WORLD
from rnea_ros.core.layout import (AXIS, IV, KIND, PARENT, STATUS_OK, STATUS_OVERFLOW, W_A, W_V)


@numba.njit(types.int64(VEC, VEC, VEC, VEC, VEC, VEC, VEC, MAT, MAT, types.int64,
                        types.boolean), **OPTS)
def frame_motion(model, buffer, frame, q, qd, qdd, a0, M, va, reference, classical):
    """Write the link's placement into M (4x4) and [v; a] into va (2x6); return a status."""
    ints, reals = model_tables(model)
    status = check_state(ints, q, qd, qdd)
    if status != STATUS_OK:
        return status
    nb = ints.shape[0]
    ws = workspace_tables(buffer, nb)[0]
    body = int(frame[0])
    for b in range(body + 1):       # parents come first: the bodies up to the link's body
        joint_placement(ints, reals, q, b, ws)
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        if lam < 0:
            for r in range(6):
                ws[b, W_V + r] = 0.0
            motion_to_body(ws, b, a0[0], a0[1], a0[2], a0[3], a0[4], a0[5], W_A)
        else:
            motion_to_body(ws, b, ws[lam, W_V], ws[lam, W_V + 1], ws[lam, W_V + 2],
                           ws[lam, W_V + 3], ws[lam, W_V + 4], ws[lam, W_V + 5], W_V)
            motion_to_body(ws, b, ws[lam, W_A], ws[lam, W_A + 1], ws[lam, W_A + 2],
                           ws[lam, W_A + 3], ws[lam, W_A + 4], ws[lam, W_A + 5], W_A)
        if kind == FREE_FLYER:      # S = 1, v x S qd = v x v = 0
            for r in range(6):
                ws[b, W_V + r] += qd[iv + r]
                ws[b, W_A + r] += qdd[iv + r]
            continue
        ux, uy, uz = reals[b, AXIS], reals[b, AXIS + 1], reals[b, AXIS + 2]
        sd, sa = qd[iv], qdd[iv]
        jx, jy, jz = ux * sd, uy * sd, uz * sd
        vx, vy, vz = ws[b, W_V], ws[b, W_V + 1], ws[b, W_V + 2]
        ox, oy, oz = ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5]
        if kind == REVOLUTE:        # vJ = [0; u qd]: a += [v x vJ_ang; u qdd + w x vJ_ang]
            ws[b, W_A] += vy * jz - vz * jy
            ws[b, W_A + 1] += vz * jx - vx * jz
            ws[b, W_A + 2] += vx * jy - vy * jx
            ws[b, W_A + 3] += ux * sa + oy * jz - oz * jy
            ws[b, W_A + 4] += uy * sa + oz * jx - ox * jz
            ws[b, W_A + 5] += uz * sa + ox * jy - oy * jx
            ws[b, W_V + 3] += jx
            ws[b, W_V + 4] += jy
            ws[b, W_V + 5] += jz
        else:                       # vJ = [u qd; 0]: a += [u qdd + w x vJ_lin; 0]
            ws[b, W_A] += ux * sa + oy * jz - oz * jy
            ws[b, W_A + 1] += uy * sa + oz * jx - ox * jz
            ws[b, W_A + 2] += uz * sa + ox * jy - oy * jx
            ws[b, W_V] += jx
            ws[b, W_V + 1] += jy
            ws[b, W_V + 2] += jz
    r00, r01, r02, r10, r11, r12, r20, r21, r22, px, py, pz, _ = walk_to_root(
        ints, reals, q, frame, M, False)
    M[0, 0], M[0, 1], M[0, 2], M[0, 3] = r00, r01, r02, px
    M[1, 0], M[1, 1], M[1, 2], M[1, 3] = r10, r11, r12, py
    M[2, 0], M[2, 1], M[2, 2], M[2, 3] = r20, r21, r22, pz
    M[3, 0], M[3, 1], M[3, 2], M[3, 3] = 0.0, 0.0, 0.0, 1.0
    # The body's motion (or, for a link fixed to the world, a_0) in the link frame: with
    # (E, t) = (body_R_link, origin) (or (root_R_link, p)), m' = [E^T (v + w x t); E^T w].
    if body >= 0:
        e00, e01, e02 = frame[1], frame[2], frame[3]
        e10, e11, e12 = frame[4], frame[5], frame[6]
        e20, e21, e22 = frame[7], frame[8], frame[9]
        tx, ty, tz = frame[10], frame[11], frame[12]
        for k in range(2):
            col = W_V if k == 0 else W_A
            for r in range(6):
                va[k, r] = ws[body, col + r]
    else:
        e00, e01, e02, e10, e11, e12, e20, e21, e22 = r00, r01, r02, r10, r11, r12, r20, r21, r22
        tx, ty, tz = px, py, pz
        for r in range(6):
            va[0, r] = 0.0
            va[1, r] = a0[r]
    for k in range(2):
        vx, vy, vz, ox, oy, oz = va[k, 0], va[k, 1], va[k, 2], va[k, 3], va[k, 4], va[k, 5]
        lx, ly, lz = vx + oy * tz - oz * ty, vy + oz * tx - ox * tz, vz + ox * ty - oy * tx
        va[k, 0] = e00 * lx + e10 * ly + e20 * lz
        va[k, 1] = e01 * lx + e11 * ly + e21 * lz
        va[k, 2] = e02 * lx + e12 * ly + e22 * lz
        va[k, 3] = e00 * ox + e10 * oy + e20 * oz
        va[k, 4] = e01 * ox + e11 * oy + e21 * oz
        va[k, 5] = e02 * ox + e12 * oy + e22 * oz
    if reference != LOCAL:          # root axes (R = root_R_link), WORLD about the root origin
        for k in range(2):
            lx, ly, lz, ax, ay, az = va[k, 0], va[k, 1], va[k, 2], va[k, 3], va[k, 4], va[k, 5]
            vx = r00 * lx + r01 * ly + r02 * lz
            vy = r10 * lx + r11 * ly + r12 * lz
            vz = r20 * lx + r21 * ly + r22 * lz
            wx = r00 * ax + r01 * ay + r02 * az
            wy = r10 * ax + r11 * ay + r12 * az
            wz = r20 * ax + r21 * ay + r22 * az
            if reference == WORLD:
                vx += py * wz - pz * wy
                vy += pz * wx - px * wz
                vz += px * wy - py * wx
            va[k, 0], va[k, 1], va[k, 2], va[k, 3], va[k, 4], va[k, 5] = vx, vy, vz, wx, wy, wz
    if classical:                   # a_lin += w x v_lin (RBDA §2.11)
        vx, vy, vz, wx, wy, wz = va[0, 0], va[0, 1], va[0, 2], va[0, 3], va[0, 4], va[0, 5]
        va[1, 0] += wy * vz - wz * vy
        va[1, 1] += wz * vx - wx * vz
        va[1, 2] += wx * vy - wy * vx
    if not (all_finite(va[0]) and all_finite(va[1]) and np.isfinite(px) and np.isfinite(py)
            and np.isfinite(pz)):
        return STATUS_OVERFLOW
    return STATUS_OK
