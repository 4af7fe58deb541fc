"""Numba kernels: the algorithms of :mod:`rnea_ros.core.dynamics` on the model's flat arrays.

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

Call cost: a kernel takes few arrays (the model's ``kernel_model``, a workspace ``buffer``, the
state vectors), because numba's dispatcher spends about 50 ns on each array argument; the model
and workspace tables are views cut from those two arrays inside the kernel.
"""

import numba
from numba import types
from numba.core import options as numba_options
import numpy as np

from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.model import (ARMATURE, AXIS, AXIS_CODE, GENERAL_AXIS, H, I_O, IQ, IV, KIND,
                                 MASS, NINT, NREAL, P_T, PARENT, R_T)

# Kernels never allocate, so they are compiled without numba's reference-counted runtime (NRT):
# with it, every array handed to a kernel or a helper costs an atomic increment and decrement,
# about a third of a small arm's RNEA.  The arrays belong to the Python caller, which holds them
# for the duration of the call.  ``_nrt`` is numba's own flag (numba.core.options); should a
# numba release drop it, the kernels compile with the runtime as before, only slower.
_NO_NRT = {'_nrt': False} if hasattr(numba_options.DefaultOptions, '_nrt') else {}
if tuple(int(x) for x in numba.__version__.split('.')[:2]) < (0, 57):
    raise ImportError(f'rnea_ros needs numba >= 0.57 (thread ids and chunk sizes of parallel '
                      f"loops), found {numba.__version__}: pip install 'numba>=0.57'")
# fastmath 'contract' only: fused multiply-adds (each rounds once, so no less exact; 10 % faster),
# but no other fast-math liberty, so NaN and Inf still behave (the finiteness checks rely on it).
# The per-call kernels keep the GIL: they take about a microsecond, and releasing and taking it
# back would add 40 ns to each call; the batch kernel releases it.
_OPTS = {'cache': True, 'error_model': 'numpy', 'fastmath': {'contract'}, **_NO_NRT}
_INLINE = dict(_OPTS, forceinline=True)   # helpers: LLVM inlines them into their kernel
if not hasattr(numba_options.DefaultOptions, 'forceinline'):
    _INLINE = _OPTS                        # LLVM's own inlining heuristics

STATUS_OK = 0
STATUS_BAD_Q = 1
STATUS_BAD_QD = 2
STATUS_BAD_QDD = 3
STATUS_BAD_QUATERNION = 4
STATUS_LEN_Q = 5
STATUS_LEN_QD = 6
STATUS_LEN_QDD = 7

# Explicit signatures: the public wrappers call the kernels with the model's ``kernel_model``,
# a workspace ``buffer`` and float64 C-contiguous state vectors; anything else raises TypeError
# (no silent recompilation), which the wrappers answer by converting and checking the inputs.
_VEC = types.Array(types.float64, 1, 'C')
_MAT = types.Array(types.float64, 2, 'C')
_STATUS = types.Array(types.int64, 2, 'C')


@numba.njit(**_INLINE)
def _model_tables(model):
    """Return the views (ints, reals) of RobotModel.kernel_model: reals, then ints (bit copies)."""
    nb = model.shape[0] // (NREAL + NINT)
    reals = model[:nb * NREAL].reshape((nb, NREAL))
    ints = model[nb * NREAL:].view(np.int64).reshape((nb, NINT))
    return ints, reals


@numba.njit(**_INLINE)
def _workspace_tables(buffer, nb):
    """Return the views (ws, wa) of a Workspace.buffer: RNEA rows, then ABA rows."""
    ws = buffer[:(nb + 1) * 36].reshape((nb + 1, 36))
    wa = buffer[(nb + 1) * 36:(nb + 1) * 36 + (nb + 2) * 132].reshape((nb + 2, 132))
    return ws, wa


@numba.njit(**_INLINE)
def _all_finite(x):
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


# Columns of one row of the workspace ``ws`` (per body).
W_R, W_P, W_V, W_A, W_F, W_X, W_N = 0, 9, 12, 18, 24, 30, 36
# Row nbodies of ws holds a_0 = a_base - a_g (root frame) in columns 0-5.


@numba.njit(**_INLINE)
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


@numba.njit(**_INLINE)
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


@numba.njit(**_INLINE)
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


@numba.njit(**_INLINE)
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


@numba.njit(**_INLINE)
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


@numba.njit(**_INLINE)
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


@numba.njit(types.int64(_VEC, _VEC, _VEC, _VEC, _VEC, _VEC), **_OPTS)
def rnea(model, buffer, q, qd, qdd, tau):
    """Inverse dynamics (seed 000) into tau; f_i (reaction wrenches) stay in ws[:, 24:30]."""
    ints, reals = _model_tables(model)
    ws = _workspace_tables(buffer, ints.shape[0])[0]
    status = check_state(ints, q, qd, qdd)
    if status != STATUS_OK:
        return status
    _rnea_body_forces(ints, reals, q, qd, qdd, ws)
    _rnea_backward(ints, reals, ws, tau)
    return STATUS_OK


@numba.njit(types.int64(_VEC, _MAT, _MAT, _MAT, _MAT, _MAT, _STATUS, types.int64),
            parallel=True, nogil=True, **_OPTS)
def rnea_batch(model, buffers, Q, QD, QDD, TAU, status, block):
    """Inverse dynamics for every row of Q, QD, QDD into TAU, in parallel blocks of rows.

    ``buffers`` holds one copy of the workspace buffer per thread (numba.get_thread_id()), all
    with the same f_ext and a_0.  The caller sets numba's parallel chunk size to 1 so that blocks
    are handed to the threads one at a time (dynamic schedule): a thread delayed by other load on
    a shared machine then does not hold up the whole batch.  ``status`` has one row per block;
    row c becomes (status, row) of block c's first invalid row, or (0, -1).  Returns the number
    of blocks.
    """
    ints, reals = _model_tables(model)
    n = Q.shape[0]
    nblocks = (n + block - 1) // block
    for c in numba.prange(nblocks):
        ws = _workspace_tables(buffers[numba.get_thread_id()], ints.shape[0])[0]
        status[c, 0] = STATUS_OK
        status[c, 1] = -1
        for k in range(c * block, min(n, (c + 1) * block)):
            st = check_state(ints, Q[k], QD[k], QDD[k])
            if st != STATUS_OK:
                status[c, 0] = st
                status[c, 1] = k
                break
            _rnea_body_forces(ints, reals, Q[k], QD[k], QDD[k], ws)
            _rnea_backward(ints, reals, ws, TAU[k])
    return nblocks


# -- articulated-body algorithm (seed 002, RBDA 7.3) ---------------------------------------------

STATUS_SINGULAR = 100      # + body index: d_i is not positive (massless subtree, no armature)
# Columns of one row of the ABA workspace (per body): articulated inertia IA (6x6, row major),
# bias force pA, velocity-product acceleration c, U = IA S (6 x nv of the joint, column major),
# D^-1 (nv x nv), u = tau - S^T pA.  Two more rows hold scratch matrices.
B_IA, B_PA, B_C, B_U, B_DINV, B_u, B_N = 0, 36, 42, 48, 84, 120, 132


@numba.njit(**_INLINE)
def _congruence_to_parent(ws, b, M, wa, lam, R, rot, T, Y):
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


@numba.njit(**_OPTS)
def _cholesky_inverse(D, n, L, out, x):
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


@numba.njit(types.int64(_VEC, _VEC, _VEC, _VEC, _VEC, _VEC), **_OPTS)
def aba(model, buffer, q, qd, tau, qdd):
    """Forward dynamics by the articulated-body algorithm into qdd; returns a status code."""
    ints, reals = _model_tables(model)
    nb = ints.shape[0]
    ws, wa = _workspace_tables(buffer, nb)
    status = check_state(ints, q, qd, tau)
    if status != STATUS_OK:
        return status
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
    # Pass 1 (root to leaves): v_i, c_i = v_i x vJ, IA_i = I_i, pA_i = v_i x* I_i v_i - f_ext.
    for b in range(nb):
        _joint_placement(ints, reals, q, b, ws)
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
            _motion_to_body(ws, b, ws[lam, W_V], ws[lam, W_V + 1], ws[lam, W_V + 2],
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
        # IA = I_b = [[m 1, -[h]], [[h], I_O]]
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
        g0, g1, g2, g3, g4, g5 = _inertia_times(reals, b, vx, vy, vz, ox, oy, oz)
        wa[b, B_PA] = oy * g2 - oz * g1 - ws[b, W_X]
        wa[b, B_PA + 1] = oz * g0 - ox * g2 - ws[b, W_X + 1]
        wa[b, B_PA + 2] = ox * g1 - oy * g0 - ws[b, W_X + 2]
        wa[b, B_PA + 3] = oy * g5 - oz * g4 + vy * g2 - vz * g1 - ws[b, W_X + 3]
        wa[b, B_PA + 4] = oz * g3 - ox * g5 + vz * g0 - vx * g2 - ws[b, W_X + 4]
        wa[b, B_PA + 5] = ox * g4 - oy * g3 + vx * g1 - vy * g0 - ws[b, W_X + 5]
    # Pass 2 (leaves to root): U = IA S, D = S^T U + Ia, u = tau - S^T pA; hand the articulated
    # inertia Ia = IA - U D^-1 U^T and bias pa = pA + Ia c + U D^-1 u to the parent.
    for b in range(nb - 1, -1, -1):
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        if kind == FREE_FLYER:             # S = 1: U = IA, D = IA (the root: no parent)
            for r in range(6):
                wa[b, B_u + r] = tau[iv + r] - wa[b, B_PA + r]
                for k in range(6):
                    D[r, k] = wa[b, B_IA + 6 * r + k]
                    wa[b, B_U + 6 * k + r] = D[r, k]
            if not _cholesky_inverse(D, 6, L, Dinv, y):
                return STATUS_SINGULAR + b
            for r in range(6):
                for k in range(6):
                    wa[b, B_DINV + 6 * r + k] = Dinv[r, k]
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
        _congruence_to_parent(ws, b, Ia, wa, lam, R, rot, T, Y)
        # pA_parent += X^T pa (force to the parent frame, as in RNEA's backward pass)
        px, py, pz = ws[b, W_P], ws[b, W_P + 1], ws[b, W_P + 2]
        gx = ws[b, 0] * pa0[0] + ws[b, 1] * pa0[1] + ws[b, 2] * pa0[2]
        gy = ws[b, 3] * pa0[0] + ws[b, 4] * pa0[1] + ws[b, 5] * pa0[2]
        gz = ws[b, 6] * pa0[0] + ws[b, 7] * pa0[1] + ws[b, 8] * pa0[2]
        wa[lam, B_PA] += gx
        wa[lam, B_PA + 1] += gy
        wa[lam, B_PA + 2] += gz
        wa[lam, B_PA + 3] += (ws[b, 0] * pa0[3] + ws[b, 1] * pa0[4] + ws[b, 2] * pa0[5]
                              + py * gz - pz * gy)
        wa[lam, B_PA + 4] += (ws[b, 3] * pa0[3] + ws[b, 4] * pa0[4] + ws[b, 5] * pa0[5]
                              + pz * gx - px * gz)
        wa[lam, B_PA + 5] += (ws[b, 6] * pa0[3] + ws[b, 7] * pa0[4] + ws[b, 8] * pa0[5]
                              + px * gy - py * gx)
    # Pass 3 (root to leaves): a' = X a_parent + c, qdd = D^-1 (u - U^T a'), a = a' + S qdd.
    for b in range(nb):
        kind = ints[b, KIND]
        iv = ints[b, IV]
        lam = ints[b, PARENT]
        if lam < 0:
            _motion_to_body(ws, b, ws[nb, 0], ws[nb, 1], ws[nb, 2], ws[nb, 3], ws[nb, 4],
                            ws[nb, 5], W_A)
        else:
            _motion_to_body(ws, b, ws[lam, W_A], ws[lam, W_A + 1], ws[lam, W_A + 2],
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
    return STATUS_OK
