"""Numba kernels of the Recursive Newton-Euler Algorithm (RBDA §5.3, Table 5.1).

:func:`rnea` computes what :func:`rnea_ros.core.reference.rnea` computes (tests compare them to
1e-12) on the model's flat tables, without forming 6x6 matrices; :func:`rnea_batch` runs it over
the rows of a batch in parallel (and keeps the joints' reaction wrenches if asked).  The body
forces f_i (joint reaction wrenches) stay in the workspace, columns W_F.
"""

import numba
from numba import types

from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels.body import (add_force_to_parent, bias_force, inertia_times,
                                        joint_placement, motion_to_body)
from rnea_ros.core.kernels.jit import (all_finite, check_state, INLINE, MAT, model_tables, OPTS,
                                       STATUS_MATRIX, VEC, workspace_tables)
from rnea_ros.core.layout import (AXIS, IV, KIND, PARENT, STATUS_OK, STATUS_OVERFLOW, W_A, W_F,
                                  W_V)


@numba.njit(**INLINE)
def body_forces(ints, reals, q, qd, qdd, ws):
    """Forward pass of RNEA (RBDA Table 5.1): velocities, accelerations and forces f_i in ws."""
    nb = ints.shape[0]
    a00, a01, a02 = ws[nb, 0], ws[nb, 1], ws[nb, 2]
    a03, a04, a05 = ws[nb, 3], ws[nb, 4], ws[nb, 5]
    for b in range(nb):     # first, apart: the sine calls then spill no state of the pass
        joint_placement(ints, reals, q, b, ws)
    for b in range(nb):
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        if kind == FREE_FLYER:
            # v = S qd with S = 1; a = X a0 + qdd (v x S qd = v x v = 0).
            motion_to_body(ws, b, a00, a01, a02, a03, a04, a05, W_A)
            for r in range(6):
                ws[b, W_V + r] = qd[iv + r]
                ws[b, W_A + r] += qdd[iv + r]
        else:
            if lam < 0:
                for r in range(6):
                    ws[b, W_V + r] = 0.0
                motion_to_body(ws, b, a00, a01, a02, a03, a04, a05, W_A)
            else:
                motion_to_body(ws, b, ws[lam, W_V], ws[lam, W_V + 1], ws[lam, W_V + 2],
                               ws[lam, W_V + 3], ws[lam, W_V + 4], ws[lam, W_V + 5], W_V)
                motion_to_body(ws, b, ws[lam, W_A], ws[lam, W_A + 1], ws[lam, W_A + 2],
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
        f0, f1, f2, f3, f4, f5 = inertia_times(
            reals, b, ws[b, W_A], ws[b, W_A + 1], ws[b, W_A + 2],
            ws[b, W_A + 3], ws[b, W_A + 4], ws[b, W_A + 5])
        p0, p1, p2, p3, p4, p5 = bias_force(reals, ws, b, vx, vy, vz, ox, oy, oz)
        ws[b, W_F] = f0 + p0
        ws[b, W_F + 1] = f1 + p1
        ws[b, W_F + 2] = f2 + p2
        ws[b, W_F + 3] = f3 + p3
        ws[b, W_F + 4] = f4 + p4
        ws[b, W_F + 5] = f5 + p5


@numba.njit(**INLINE)
def backward(ints, reals, ws, tau):
    """Backward pass of RNEA (RBDA Table 5.1): tau_i = S_i^T f_i, f_parent += X^T f_i."""
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
            add_force_to_parent(ws, b, f0, f1, f2, n0, n1, n2, ws, lam, W_F)


@numba.njit(types.int64(VEC, VEC, VEC, VEC, VEC, VEC), **OPTS)
def rnea(model, buffer, q, qd, qdd, tau):
    """Inverse dynamics (RBDA Table 5.1) into tau; f_i (reaction wrenches) stay in ws[:, 24:30]."""
    ints, reals = model_tables(model)
    ws = workspace_tables(buffer, ints.shape[0])[0]
    status = check_state(ints, q, qd, qdd)
    if status != STATUS_OK:
        return status
    body_forces(ints, reals, q, qd, qdd, ws)
    backward(ints, reals, ws, tau)
    if not all_finite(tau):
        return STATUS_OVERFLOW
    return STATUS_OK


@numba.njit(types.int64(VEC, MAT, MAT, MAT, MAT, MAT, MAT,
                        types.Array(types.int64, 1, 'C', readonly=True),
                        STATUS_MATRIX, types.int64), parallel=True, nogil=True, **OPTS)
def rnea_batch(model, buffers, Q, QD, QDD, TAU, WRENCH, joint_body, status, block):
    """Inverse dynamics for every row of Q, QD, QDD into TAU, in parallel blocks of rows.

    ``buffers`` holds one copy of the workspace buffer per thread (numba.get_thread_id()), all
    with the same f_ext and a_0.  The caller sets numba's parallel chunk size to 1 so that blocks
    are handed to the threads one at a time (dynamic schedule): a thread delayed by other load on
    a shared machine then does not hold up the whole batch.  ``status`` has one row per block;
    row c becomes (status, row) of block c's first invalid row, or (0, -1).  Returns the number
    of blocks.  Row k of WRENCH (N, 6 len(joint_body)) gets the reaction wrench f_i of body
    ``joint_body[j]`` ([force, torque] in the child frame about the joint origin) at columns
    6 j to 6 j + 5, as the backward pass leaves it: give a (N, 0) WRENCH and no bodies when only
    TAU is wanted.
    """
    ints, reals = model_tables(model)
    n = Q.shape[0]
    nblocks = (n + block - 1) // block
    for c in numba.prange(nblocks):
        ws = workspace_tables(buffers[numba.get_thread_id()], ints.shape[0])[0]
        status[c, 0] = STATUS_OK
        status[c, 1] = -1
        for k in range(c * block, min(n, (c + 1) * block)):
            st = check_state(ints, Q[k], QD[k], QDD[k])
            if st != STATUS_OK:
                status[c, 0] = st
                status[c, 1] = k
                break
            body_forces(ints, reals, Q[k], QD[k], QDD[k], ws)
            backward(ints, reals, ws, TAU[k])
            for j in range(joint_body.shape[0]):
                for r in range(6):
                    WRENCH[k, 6 * j + r] = ws[joint_body[j], W_F + r]
            if not all_finite(TAU[k]):
                status[c, 0] = STATUS_OVERFLOW
                status[c, 1] = k
                break
    return nblocks
