"""Numba kernels of the joint-torque regressor Y(q, qd, qdd): tau = Y phi.

The forward pass is the RNEA's (RBDA Table 5.1, :mod:`rnea_ros.core.kernels.rnea`): body
velocities v_i and accelerations a_i (gravity as a_0 = a_base - a_g).  The body force
f_i = I_i a_i + v_i x* I_i v_i is linear in body i's ten inertial parameters phi_i = [m, h (= m c),
I_xx, I_xy, I_xz, I_yy, I_yz, I_zz] (I about the body origin), f_i = A_i(v_i, a_i) phi_i, with
v = [v; w], a = [a; al]:

- m:     [a + w x v; 0]
- h e_k: [al x e_k + w x (w x e_k); -a x e_k - w x (v x e_k) + v x (w x e_k)]
- I E:   [0; E al + w x (E w)]   (E the symmetric unit matrix of the entry)

Joint j's row of a column is S_j^T of that force carried to body j (the RNEA's backward pass,
RBDA section 5.3; Khalil and Dombre, chapter 9).  The kernel expresses each column's force once
in the root frame and projects it on every ancestor's joint axis there (see
:func:`_columns_to_root`); it uses the workspace's articulated-body rows as scratch.
"""

import numba
from numba import types

from rnea_ros.core.joints import FREE_FLYER, REVOLUTE
from rnea_ros.core.kernels.jit import (check_state, INLINE, MAT, model_tables, OPTS,
                                       STATUS_MATRIX, VEC, workspace_tables)
from rnea_ros.core.kernels.rnea import body_forces
from rnea_ros.core.layout import AXIS, IV, KIND, PARENT, STATUS_OK, W_A, W_P, W_V

NPARAM = 10       # inertial parameters per body


@numba.njit(**INLINE)
def _cross(ax, ay, az, bx, by, bz):
    return ay * bz - az * by, az * bx - ax * bz, ax * by - ay * bx


@numba.njit(**INLINE)
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


# Scratch columns of the ABA rows of the workspace (free between calls): per body its pose in
# the root frame, R_0b (9) and p_0b (3), and c_b = p_0b x u_b (3), u_b (3) for its joint axis
# u_b = R_0b axis in the root frame.
S_R, S_P, S_C, S_U = 0, 9, 12, 15


@numba.njit(**INLINE)
def _root_poses(ints, reals, ws, sc):
    """Write every body's pose in the root frame and its joint axis line (Plucker) into sc."""
    for b in range(ints.shape[0]):
        lam = ints[b, PARENT]
        for r in range(3):
            for k in range(3):
                if lam < 0:
                    sc[b, S_R + 3 * r + k] = ws[b, 3 * r + k]
                else:
                    sc[b, S_R + 3 * r + k] = (sc[lam, S_R + 3 * r] * ws[b, k]
                                              + sc[lam, S_R + 3 * r + 1] * ws[b, 3 + k]
                                              + sc[lam, S_R + 3 * r + 2] * ws[b, 6 + k])
            if lam < 0:
                sc[b, S_P + r] = ws[b, W_P + r]
            else:
                sc[b, S_P + r] = (sc[lam, S_P + r] + sc[lam, S_R + 3 * r] * ws[b, W_P]
                                  + sc[lam, S_R + 3 * r + 1] * ws[b, W_P + 1]
                                  + sc[lam, S_R + 3 * r + 2] * ws[b, W_P + 2])
        for r in range(3):
            sc[b, S_U + r] = (sc[b, S_R + 3 * r] * reals[b, AXIS]
                              + sc[b, S_R + 3 * r + 1] * reals[b, AXIS + 1]
                              + sc[b, S_R + 3 * r + 2] * reals[b, AXIS + 2])
        c0, c1, c2 = _cross(sc[b, S_P], sc[b, S_P + 1], sc[b, S_P + 2],
                            sc[b, S_U], sc[b, S_U + 1], sc[b, S_U + 2])
        sc[b, S_C], sc[b, S_C + 1], sc[b, S_C + 2] = c0, c1, c2


@numba.njit(**INLINE)
def _columns_to_root(ints, ws, sc, b, Y, row0):
    """Write body b's ten columns of Y (rows row0 + v index).

    Each column's body force is expressed once in the root frame about the root origin,
    (f, n); a revolute joint j on the way to the root then takes u_j . n + f . (p_j x u_j) (the
    moment about its axis), a prismatic one u_j . f; a free-flyer root takes the wrench back in
    its own frame.  (Featherstone's RBDA section 5.3 carries f_i from body to body instead; the
    root frame saves a transform per ancestor.)
    """
    for k in range(NPARAM):
        g0, g1, g2, m0, m1, m2 = _column_force(ws, b, k)
        f0 = sc[b, S_R] * g0 + sc[b, S_R + 1] * g1 + sc[b, S_R + 2] * g2
        f1 = sc[b, S_R + 3] * g0 + sc[b, S_R + 4] * g1 + sc[b, S_R + 5] * g2
        f2 = sc[b, S_R + 6] * g0 + sc[b, S_R + 7] * g1 + sc[b, S_R + 8] * g2
        px, py, pz = sc[b, S_P], sc[b, S_P + 1], sc[b, S_P + 2]
        t0, t1, t2 = _cross(px, py, pz, f0, f1, f2)
        n0 = sc[b, S_R] * m0 + sc[b, S_R + 1] * m1 + sc[b, S_R + 2] * m2 + t0
        n1 = sc[b, S_R + 3] * m0 + sc[b, S_R + 4] * m1 + sc[b, S_R + 5] * m2 + t1
        n2 = sc[b, S_R + 6] * m0 + sc[b, S_R + 7] * m1 + sc[b, S_R + 8] * m2 + t2
        col = NPARAM * b + k
        j = b
        while j >= 0:
            kind = ints[j, KIND]
            iv = row0 + ints[j, IV]
            if kind == REVOLUTE:
                Y[iv, col] = (sc[j, S_U] * n0 + sc[j, S_U + 1] * n1 + sc[j, S_U + 2] * n2
                              + sc[j, S_C] * f0 + sc[j, S_C + 1] * f1 + sc[j, S_C + 2] * f2)
            elif kind == FREE_FLYER:
                # wrench in the root body's frame about its origin: R^T f, R^T (n - p x f)
                q0, q1, q2 = _cross(sc[j, S_P], sc[j, S_P + 1], sc[j, S_P + 2], f0, f1, f2)
                for r in range(3):
                    Y[iv + r, col] = (sc[j, S_R + r] * f0 + sc[j, S_R + 3 + r] * f1
                                      + sc[j, S_R + 6 + r] * f2)
                    Y[iv + 3 + r, col] = (sc[j, S_R + r] * (n0 - q0)
                                          + sc[j, S_R + 3 + r] * (n1 - q1)
                                          + sc[j, S_R + 6 + r] * (n2 - q2))
            else:
                Y[iv, col] = sc[j, S_U] * f0 + sc[j, S_U + 1] * f1 + sc[j, S_U + 2] * f2
            j = ints[j, PARENT]


@numba.njit(**INLINE)
def _zero_rows(Y, row0, n):
    """Zero rows row0 .. row0 + n of Y (entries of joints that do not carry a body stay 0)."""
    for r in range(row0, row0 + n):
        for c in range(Y.shape[1]):
            Y[r, c] = 0.0


@numba.njit(types.int64(VEC, VEC, VEC, VEC, VEC, MAT), **OPTS)
def regressor(model, buffer, q, qd, qdd, Y):
    """Write the (nv, 10 nbodies) regressor into Y; return a status code."""
    ints, reals = model_tables(model)
    nb = ints.shape[0]
    ws, sc = workspace_tables(buffer, nb)
    status = check_state(ints, q, qd, qdd)
    if status != STATUS_OK:
        return status
    body_forces(ints, reals, q, qd, qdd, ws)
    _root_poses(ints, reals, ws, sc)
    _zero_rows(Y, 0, qd.shape[0])
    for b in range(nb):
        _columns_to_root(ints, ws, sc, b, Y, 0)
    return STATUS_OK


@numba.njit(types.int64(VEC, MAT, MAT, MAT, MAT, MAT, STATUS_MATRIX, types.int64),
            parallel=True, nogil=True, **OPTS)
def regressor_batch(model, buffers, Q, QD, QDD, Y, status, block):
    """Regressors of every row of Q, QD, QDD stacked into Y (N nv rows), in parallel blocks.

    Same scheduling and ``status`` convention as :func:`rnea_ros.core.kernels.rnea_batch`.
    """
    ints, reals = model_tables(model)
    nb = ints.shape[0]
    nv = QD.shape[1]
    n = Q.shape[0]
    nblocks = (n + block - 1) // block
    for c in numba.prange(nblocks):
        ws, sc = workspace_tables(buffers[numba.get_thread_id()], nb)
        status[c, 0] = STATUS_OK
        status[c, 1] = -1
        for k in range(c * block, min(n, (c + 1) * block)):
            st = check_state(ints, Q[k], QD[k], QDD[k])
            if st != STATUS_OK:
                status[c, 0] = st
                status[c, 1] = k
                break
            Yk = Y[k * nv:(k + 1) * nv]
            body_forces(ints, reals, Q[k], QD[k], QDD[k], ws)
            _root_poses(ints, reals, ws, sc)
            _zero_rows(Yk, 0, nv)
            for b in range(nb):
                _columns_to_root(ints, ws, sc, b, Yk, 0)
    return nblocks
