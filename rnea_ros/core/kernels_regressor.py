"""Numba kernels of the joint-torque regressor Y(q, qd, qdd): tau = Y phi.

The forward pass is the RNEA's (:mod:`rnea_ros.core.kernels`): body velocities v_i and
accelerations a_i (gravity as a_0 = a_base - a_g).  The body force f_i = I_i a_i + v_i x* I_i v_i
is linear in body i's ten inertial parameters phi_i = [m, h (= m c), I_xx, I_xy, I_xz, I_yy,
I_yz, I_zz] (I about the body origin), f_i = A_i(v_i, a_i) phi_i, with v = [v; w], a = [a; al]:

- m:     [a + w x v; 0]
- h e_k: [al x e_k + w x (w x e_k); -a x e_k - w x (v x e_k) + v x (w x e_k)]
- I E:   [0; E al + w x (E w)]   (E the symmetric unit matrix of the entry)

Each column of A_i is carried from body i to the root as the RNEA's backward pass carries f_i
(f_parent = X^T f), and joint j's row of the column is S_j^T f (RBDA section 5.3; Khalil and
Dombre, chapter 9, for the same construction with Newton-Euler equations).
"""

import numba
from numba import types
from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels import (_INLINE, _model_tables, _OPTS, _rnea_body_forces,
                                   _workspace_tables, check_state, STATUS_OK, W_A, W_P, W_V)
from rnea_ros.core.model import AXIS, IV, KIND, PARENT

NPARAM = 10       # inertial parameters per body

_VEC = types.Array(types.float64, 1, 'C')
_MAT = types.Array(types.float64, 2, 'C')
_STATUS = types.Array(types.int64, 2, 'C')


@numba.njit(**_INLINE)
def _cross(ax, ay, az, bx, by, bz):
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@numba.njit(**_INLINE)
def _column_force(ws, b, k):
    """Return the 6 scalars of column k of A_b (body force per unit parameter k)."""
    vx, vy, vz = ws[b, W_V], ws[b, W_V + 1], ws[b, W_V + 2]
    ox, oy, oz = ws[b, W_V + 3], ws[b, W_V + 4], ws[b, W_V + 5]
    ax, ay, az = ws[b, W_A], ws[b, W_A + 1], ws[b, W_A + 2]
    lx, ly, lz = ws[b, W_A + 3], ws[b, W_A + 4], ws[b, W_A + 5]
    if k == 0:
        cx, cy, cz = _cross(ox, oy, oz, vx, vy, vz)
        return ax + cx, ay + cy, az + cz, 0.0, 0.0, 0.0
    if k < 4:
        ex = 1.0 if k == 1 else 0.0
        ey = 1.0 if k == 2 else 0.0
        ez = 1.0 if k == 3 else 0.0
        p0, p1, p2 = _cross(lx, ly, lz, ex, ey, ez)
        t0, t1, t2 = _cross(ox, oy, oz, ex, ey, ez)           # w x e
        q0, q1, q2 = _cross(ox, oy, oz, t0, t1, t2)
        r0, r1, r2 = _cross(ax, ay, az, ex, ey, ez)
        u0, u1, u2 = _cross(vx, vy, vz, ex, ey, ez)           # v x e
        s0, s1, s2 = _cross(ox, oy, oz, u0, u1, u2)
        z0, z1, z2 = _cross(vx, vy, vz, t0, t1, t2)
        return p0 + q0, p1 + q1, p2 + q2, z0 - r0 - s0, z1 - r1 - s1, z2 - r2 - s2
    # Inertia entries xx, xy, xz, yy, yz, zz: (r, c) of the unit symmetric matrix E.
    r = 0 if k < 7 else (1 if k < 9 else 2)
    c = (0, 1, 2, 1, 2, 2)[k - 4]
    e0, e1, e2 = 0.0, 0.0, 0.0           # E al
    g0, g1, g2 = 0.0, 0.0, 0.0           # E w
    al = (lx, ly, lz)
    om = (ox, oy, oz)
    if r == 0:
        e0 += al[c]
        g0 += om[c]
    elif r == 1:
        e1 += al[c]
        g1 += om[c]
    else:
        e2 += al[c]
        g2 += om[c]
    if r != c:
        if c == 0:
            e0 += al[r]
            g0 += om[r]
        elif c == 1:
            e1 += al[r]
            g1 += om[r]
        else:
            e2 += al[r]
            g2 += om[r]
    w0, w1, w2 = _cross(ox, oy, oz, g0, g1, g2)
    return 0.0, 0.0, 0.0, e0 + w0, e1 + w1, e2 + w2


@numba.njit(**_INLINE)
def _columns_to_root(ints, reals, ws, b, Y, row0):
    """Write body b's ten columns of Y (rows row0 + v index), carrying each force to the root."""
    for k in range(NPARAM):
        f0, f1, f2, n0, n1, n2 = _column_force(ws, b, k)
        col = NPARAM * b + k
        j = b
        while j >= 0:
            kind = ints[j, KIND]
            iv = row0 + ints[j, IV]
            if kind == FREE_FLYER:
                Y[iv, col] = f0
                Y[iv + 1, col] = f1
                Y[iv + 2, col] = f2
                Y[iv + 3, col] = n0
                Y[iv + 4, col] = n1
                Y[iv + 5, col] = n2
            elif kind == REVOLUTE:
                Y[iv, col] = (reals[j, AXIS] * n0 + reals[j, AXIS + 1] * n1
                              + reals[j, AXIS + 2] * n2)
            else:
                Y[iv, col] = (reals[j, AXIS] * f0 + reals[j, AXIS + 1] * f1
                              + reals[j, AXIS + 2] * f2)
            lam = ints[j, PARENT]
            if lam < 0:
                break
            px, py, pz = ws[j, W_P], ws[j, W_P + 1], ws[j, W_P + 2]
            gx = ws[j, 0] * f0 + ws[j, 1] * f1 + ws[j, 2] * f2
            gy = ws[j, 3] * f0 + ws[j, 4] * f1 + ws[j, 5] * f2
            gz = ws[j, 6] * f0 + ws[j, 7] * f1 + ws[j, 8] * f2
            m0 = ws[j, 0] * n0 + ws[j, 1] * n1 + ws[j, 2] * n2 + py * gz - pz * gy
            m1 = ws[j, 3] * n0 + ws[j, 4] * n1 + ws[j, 5] * n2 + pz * gx - px * gz
            m2 = ws[j, 6] * n0 + ws[j, 7] * n1 + ws[j, 8] * n2 + px * gy - py * gx
            f0, f1, f2, n0, n1, n2 = gx, gy, gz, m0, m1, m2
            j = lam


@numba.njit(**_INLINE)
def _zero_rows(Y, row0, n):
    """Zero rows row0 .. row0 + n of Y (entries of joints that do not carry a body stay 0)."""
    for r in range(row0, row0 + n):
        for c in range(Y.shape[1]):
            Y[r, c] = 0.0


@numba.njit(types.int64(_VEC, _VEC, _VEC, _VEC, _VEC, _MAT), **_OPTS)
def regressor(model, buffer, q, qd, qdd, Y):
    """Write the (nv, 10 nbodies) regressor into Y; return a status code."""
    ints, reals = _model_tables(model)
    nb = ints.shape[0]
    ws = _workspace_tables(buffer, nb)[0]
    status = check_state(ints, q, qd, qdd)
    if status != STATUS_OK:
        return status
    _rnea_body_forces(ints, reals, q, qd, qdd, ws)
    _zero_rows(Y, 0, qd.shape[0])
    for b in range(nb):
        _columns_to_root(ints, reals, ws, b, Y, 0)
    return STATUS_OK


@numba.njit(types.int64(_VEC, _MAT, _MAT, _MAT, _MAT, _MAT, _STATUS, types.int64),
            parallel=True, nogil=True, **_OPTS)
def regressor_batch(model, buffers, Q, QD, QDD, Y, status, block):
    """Regressors of every row of Q, QD, QDD stacked into Y (N nv rows), in parallel blocks.

    Same scheduling and ``status`` convention as :func:`rnea_ros.core.kernels.rnea_batch`.
    """
    ints, reals = _model_tables(model)
    nb = ints.shape[0]
    nv = QD.shape[1]
    n = Q.shape[0]
    nblocks = (n + block - 1) // block
    for c in numba.prange(nblocks):
        ws = _workspace_tables(buffers[numba.get_thread_id()], nb)[0]
        status[c, 0] = STATUS_OK
        status[c, 1] = -1
        for k in range(c * block, min(n, (c + 1) * block)):
            st = check_state(ints, Q[k], QD[k], QDD[k])
            if st != STATUS_OK:
                status[c, 0] = st
                status[c, 1] = k
                break
            _rnea_body_forces(ints, reals, Q[k], QD[k], QDD[k], ws)
            _zero_rows(Y, k * nv, nv)
            for b in range(nb):
                _columns_to_root(ints, reals, ws, b, Y, k * nv)
    return nblocks
