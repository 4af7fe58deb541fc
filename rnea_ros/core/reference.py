"""The numpy reference algorithms, in the notation of Featherstone's RBDA, with 6x6 matrices.

Body ``i`` has parent ``lambda(i)``, joint transform ``XJ`` and motion subspace ``S_i`` from
``jcalc`` (RBDA Table 4.1), placement ``XT(i)``, spatial inertia ``I_i``;
``iXlambda(i) = XJ XT(i)``.  Spatial vectors are ``[linear; angular]`` (see
:mod:`rnea_ros.core.spatial`), all expressed in body (link) frames.

These functions are slow and readable: the numba kernels (:mod:`rnea_ros.core.kernels`) compute
the same quantities and tests compare the two to 1e-12.  :func:`rnea` (RBDA Table 5.1) and
:func:`aba` (RBDA Table 7.1) are the references of the kernels; the composite rigid body
algorithm (RBDA Table 6.2) has only this form, in :mod:`rnea_ros.core.crba`.
"""

import numpy as np

from rnea_ros.core.checks import singular_message, vector
from rnea_ros.core.joints import jcalc, NQ, NV
from rnea_ros.core.layout import (AXIS, DEFAULT_GRAVITY, H, I_O, IQ, IV, KIND, MASS, P_T, PARENT,
                                  R_T)
from rnea_ros.core.spatial import (crf, crm, mcI, plucker, plucker_inverse, plucker_parts,
                                   skew)


def body_inertia(model, i):
    """Return the 6x6 spatial inertia I_i of body i about its origin."""
    r = model.reals[i]
    m = r[MASS]
    c = r[H:H + 3] / m if m > 0.0 else np.zeros(3)
    I_origin = r[I_O:I_O + 9].reshape(3, 3)
    C = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
    return mcI(m, c, I_origin + m * C @ C)


def placement(model, i):
    """Return XT(i), the motion transform from the parent body to joint i's predecessor frame."""
    r = model.reals[i]
    return plucker(r[R_T:R_T + 9].reshape(3, 3).T, r[P_T:P_T + 3])


def joint_state(model, i, x, n):
    """Return the slice of x (q if n is NQ, else v) that belongs to body i's joint."""
    kind = model.ints[i, KIND]
    start = model.ints[i, IQ] if n is NQ else model.ints[i, IV]
    return x[start:start + n[kind]]


def tree_transforms(model, q):
    """Return per body (iXlambda(i), S_i, v-index slice) at q."""
    Xup, S, idx = [], [], []
    for i in range(model.nbodies):
        XJ, S_i = jcalc(model.ints[i, KIND], model.reals[i, AXIS:AXIS + 3],
                        joint_state(model, i, q, NQ))
        Xup.append(XJ @ placement(model, i))
        S.append(S_i)
        iv = model.ints[i, IV]
        idx.append(slice(iv, iv + S_i.shape[1]))
    return Xup, S, idx


def armature_diagonal(model):
    """Return the armature per velocity coordinate (0 for the floating base)."""
    diag = np.zeros(model.nv)
    diag[model.nv - model.njoints:] = model.armature
    return diag


def rnea(model, q, qd, qdd, f_ext=None, gravity=DEFAULT_GRAVITY, base_acceleration=None):
    """Return (tau, f): the RNEA of RBDA Table 5.1 in the book's notation, 6x6 matrices.

    ``f_ext`` is an (nbodies, 6) array of external wrenches in body frames (or None);
    ``base_acceleration`` is the spatial acceleration [lin; ang] of the root, in its frame.
    Gravity enters as a fictitious base acceleration a_0 = -a_g (RBDA §5.3).  ``f`` holds the
    body forces f_i after the backward pass (joint reaction wrenches).
    """
    NB = model.nbodies
    a_g = np.concatenate([np.asarray(gravity, dtype=float), np.zeros(3)])
    a_0 = -a_g if base_acceleration is None else np.asarray(base_acceleration) - a_g
    tau = np.zeros(model.nv)
    Xup, S, v, a, f = [None] * NB, [None] * NB, [None] * NB, [None] * NB, [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        XJ, S[i] = jcalc(model.ints[i, KIND], model.reals[i, AXIS:AXIS + 3],
                         joint_state(model, i, q, NQ))
        vJ = S[i] @ joint_state(model, i, qd, NV)
        Xup[i] = XJ @ placement(model, i)
        if lam < 0:
            v[i] = vJ
            a[i] = Xup[i] @ a_0 + S[i] @ joint_state(model, i, qdd, NV)
        else:
            v[i] = Xup[i] @ v[lam] + vJ
            a[i] = Xup[i] @ a[lam] + S[i] @ joint_state(model, i, qdd, NV) + crm(v[i]) @ vJ
        I_i = body_inertia(model, i)
        f[i] = I_i @ a[i] + crf(v[i]) @ I_i @ v[i]
        if f_ext is not None:
            f[i] = f[i] - f_ext[i]
    for i in range(NB - 1, -1, -1):
        iv = model.ints[i, IV]
        tau[iv:iv + S[i].shape[1]] = S[i].T @ f[i]
        lam = model.ints[i, PARENT]
        if lam >= 0:
            f[lam] = f[lam] + Xup[i].T @ f[i]
    return tau, np.array(f).reshape(NB, 6)


def aba(model, q, qd, tau, f_ext=None, gravity=DEFAULT_GRAVITY):
    """Return qdd: the articulated-body algorithm of RBDA Table 7.1, numpy reference.

    ``tau`` are the efforts left for the rigid bodies (friction already taken off);
    ``f_ext`` is an (nbodies, 6) array in body frames.  Armature adds to ``d_i = S_i^T U_i``.
    """
    NB = model.nbodies
    a_0 = -np.concatenate([np.asarray(gravity, dtype=float), np.zeros(3)])
    Xup, S, idx = tree_transforms(model, q)
    arm = armature_diagonal(model)
    v, c, IA, pA = [None] * NB, [None] * NB, [None] * NB, [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        vJ = S[i] @ qd[idx[i]]
        v[i] = vJ if lam < 0 else Xup[i] @ v[lam] + vJ
        c[i] = crm(v[i]) @ vJ
        IA[i] = body_inertia(model, i)
        pA[i] = crf(v[i]) @ IA[i] @ v[i]
        if f_ext is not None:
            pA[i] = pA[i] - f_ext[i]
    U, d_inv, u = [None] * NB, [None] * NB, [None] * NB
    for i in range(NB - 1, -1, -1):
        U[i] = IA[i] @ S[i]
        d = S[i].T @ U[i] + np.diag(arm[idx[i]])
        if np.linalg.eigvalsh(d).min() <= 1e-12 * max(1.0, np.abs(d).max()):
            raise ValueError(singular_message(model, i))
        d_inv[i] = np.linalg.inv(d)
        u[i] = tau[idx[i]] - S[i].T @ pA[i]
        lam = model.ints[i, PARENT]
        if lam >= 0:
            Ia = IA[i] - U[i] @ d_inv[i] @ U[i].T
            pa = pA[i] + Ia @ c[i] + U[i] @ d_inv[i] @ u[i]
            IA[lam] = IA[lam] + Xup[i].T @ Ia @ Xup[i]
            pA[lam] = pA[lam] + Xup[i].T @ pa
    qdd = np.zeros(model.nv)
    a = [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        a_prime = Xup[i] @ (a_0 if lam < 0 else a[lam]) + c[i]
        qdd[idx[i]] = d_inv[i] @ (u[i] - U[i].T @ a_prime)
        a[i] = a_prime + S[i] @ qdd[idx[i]]
    return qdd


def link_pose(model, q, link):
    """Return (R, p): the orientation and origin of a link in the root (world) frame at q."""
    q = vector(q, model.nq, 'q', model)
    try:
        body, R_bl, p_bl = model.link_body[link]
    except KeyError:
        raise ValueError(f"robot '{model.name}' has no link '{link}'") from None
    chain = []
    while body >= 0:
        chain.append(body)
        body = model.ints[body, PARENT]
    R, p = np.eye(3), np.zeros(3)
    for b in reversed(chain):
        X = jcalc(model.ints[b, KIND], model.reals[b, AXIS:AXIS + 3],
                  joint_state(model, b, q, NQ))[0] @ placement(model, b)
        E, r = plucker_parts(X)             # b_R_parent, origin of b in the parent frame
        p = p + R @ r
        R = R @ E.T
    return R @ R_bl, p + R @ p_bl


def world_transforms(model, q):
    """Return per body (iX0, S_i, v-index slice): motion transforms from the root frame.

    ``iX0 = iXlambda(i) lambdaX0`` (RBDA §4.1.2's composition along the tree); ``iX0`` of a
    body hanging on the root is its ``iXlambda(i)``.
    """
    Xup, S, idx = tree_transforms(model, q)
    X0 = []
    for i in range(model.nbodies):
        lam = model.ints[i, PARENT]
        X0.append(Xup[i] if lam < 0 else Xup[i] @ X0[lam])
    return X0, S, idx


def frame_transform(model, X0, link):
    """Return the motion transform fX0 from the root frame to a link's frame (world: 1)."""
    body, R_bl, p_bl = model.link_body[link]
    bX0 = np.eye(6) if body < 0 else X0[body]
    return plucker(R_bl.T, p_bl) @ bX0


def frame_jacobian(model, q, link, reference='LOCAL'):
    """Return the (6, nv) Jacobian [linear; angular] of a link frame (Pinocchio's convention).

    Column k of the 'WORLD' Jacobian is the motion S_k of joint k expressed in the root frame
    (``0X_i S_i``) for every joint that supports the link, zero for the others: the twist of
    the link in the root frame, about the root origin, is J qd.  'LOCAL' expresses the same
    twist in the link frame (``fX0 J``); 'LOCAL_WORLD_ALIGNED' takes it about the link origin
    with root axes (the linear rows are the velocity of the link origin).
    """
    X0, S, idx = world_transforms(model, q)
    J = np.zeros((6, model.nv))
    body = model.link_body[link][0]
    while body >= 0:
        J[:, idx[body]] = plucker_inverse(X0[body]) @ S[body]
        body = model.ints[body, PARENT]
    fX0 = frame_transform(model, X0, link)
    if reference == 'WORLD':
        return J
    if reference == 'LOCAL':
        return fX0 @ J
    E, p = plucker_parts(fX0)           # p: the link origin in the root frame
    return plucker(np.eye(3), p) @ J


def coriolis_matrix(model, q, qd):
    """Return the Coriolis matrix C(q, qd) with C qd = the Coriolis efforts and Hdot = C + C^T.

    All quantities in the root frame ('0'): X_i = 0X_i, S_i = X_i S_i (joint motion), v_i
    (body velocity), Sdot_i = v_i x S_i, I_i = X_i^-T I_i X_i^-1 and, per body, the matrix
    ``B_i = 1/2 (v_i x* I_i - I_i v_i x + (I_i v_i) xbar*)`` where ``h xbar* m = m x* h``:
    ``Idot_i = v_i x* I_i - I_i v_i x`` is the rate of the root-frame inertia, and B_i is the
    factor of the body's kinetic co-energy rate that is symmetric in the Christoffel sense
    (Echeandia & Wensing 2021, "Numerical methods to compute the Coriolis matrix and Christoffel
    symbols for rigid-body systems", J. Comput. Nonlinear Dyn.).  With composite I^c_i and
    B^c_i summed over the subtree of i (as in CRBA, RBDA Table 6.2), for joints j in the
    subtree of i and k strict ancestors of i:

        C_ij = S_i^T (I^c_j Sdot_j + B^c_j S_j),
        C_ik = (I^c_i S_i)^T Sdot_k + S_i^T B^c_i S_k.

    This is the C of the Christoffel symbols of H (so Hdot - 2C is skew), as Pinocchio's
    ``computeCoriolisMatrix``.
    """
    X0, S, idx = world_transforms(model, q)
    NB = model.nbodies
    Sw, Sd, Ic, B, v = [None] * NB, [None] * NB, [None] * NB, [None] * NB, [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        Sw[i] = plucker_inverse(X0[i]) @ S[i]
        v[i] = Sw[i] @ qd[idx[i]] + (0.0 if lam < 0 else v[lam])
        Sd[i] = crm(v[i]) @ Sw[i]
        Ic[i] = X0[i].T @ body_inertia(model, i) @ X0[i]
        B[i] = 0.5 * (crf(v[i]) @ Ic[i] - Ic[i] @ crm(v[i]) + crf_bar(Ic[i] @ v[i]))
    C = np.zeros((model.nv, model.nv))
    F = [None] * NB
    for i in range(NB - 1, -1, -1):
        F[i] = Ic[i] @ Sd[i] + B[i] @ Sw[i]
        j = i                           # the subtree of i: bodies i, i+1, ... whose chain has i
        while j < NB and (j == i or _ancestor(model, i, j)):
            C[idx[i], idx[j]] = Sw[i].T @ F[j]
            j += 1
        k = model.ints[i, PARENT]
        while k >= 0:
            C[idx[i], idx[k]] = (Ic[i] @ Sw[i]).T @ Sd[k] + Sw[i].T @ B[i] @ Sw[k]
            k = model.ints[k, PARENT]
        lam = model.ints[i, PARENT]
        if lam >= 0:
            Ic[lam] = Ic[lam] + Ic[i]
            B[lam] = B[lam] + B[i]
    return C


def crf_bar(h):
    """Return the 6x6 matrix of m -> m x* h (the force cross product with h held fixed)."""
    M = np.zeros((6, 6))
    M[:3, 3:] = -skew(h[:3])
    M[3:, :3] = -skew(h[:3])
    M[3:, 3:] = -skew(h[3:])
    return M


def _ancestor(model, a, b):
    """Return True when body a is a strict ancestor of body b."""
    b = model.ints[b, PARENT]
    while b >= 0:
        if b == a:
            return True
        b = model.ints[b, PARENT]
    return False
