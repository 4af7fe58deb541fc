"""Recursive Newton-Euler direct dynamics of a tree (Khalil 2010 §3.3.2, eqs. 32-54).

Three recursions: (i) forward, link angular velocities, gamma_j (34) and beta_j (35);
(ii) backward, the articulated inertias J*_j and the matrices H_j, K_j, alpha_j (36-40) that
express qdd_j and the wrench f_j in terms of the parent acceleration; (iii) forward, qdd_j (41),
f_j (42) and dV_j (43) from dV_0 = -g.  This is the articulated-body method (Armstrong 1979,
Featherstone 1983) written with Khalil's frames and screws ([V; omega], wrenches [f; m] about
O_j); it differs from the core's formulation by the notation and by including the rotor inertia
Ia_j in H_j (36) and the friction in tau_j (44).

:func:`hybrid_dynamics` is the same recursion when, for each joint, either the torque or the
acceleration is known: the acceleration-known joints use eqs. (75)-(76) and (82) of §6.3.  It
gives the direct model (all torques known), the inverse model (all accelerations known) and the
elastic-joint model of :mod:`rnea_ros.khalil.elastic`.
"""

import numpy as np

from rnea_ros.core.layout import DEFAULT_GRAVITY as _DEFAULT_G
from rnea_ros.core.spatial import skew
from rnea_ros.khalil.newton_euler import as_tree, cross3


def screw_transform(R, P):
    """Return jTi (eq. 17) from iRj and iPj: maps a screw of frame i to frame j."""
    RT = R.T
    T = np.zeros((6, 6))
    T[:3, :3] = RT
    T[:3, 3:] = -RT @ skew(P)
    T[3:, 3:] = RT
    return T


def spatial_inertia(M, MS, J):
    """Return the 6x6 jJj of eq. (11): [[M I3, -MS^], [MS^, J]]."""
    S = skew(MS)
    out = np.zeros((6, 6))
    out[:3, :3] = M * np.eye(3)
    out[:3, 3:] = -S
    out[3:, :3] = S
    out[3:, 3:] = J
    return out


def hybrid_dynamics(tree, q, qd, Gamma, qdd, torque_known, gravity=None, f_env=None):
    """Return (qdd, Gamma, f) when joint j has a known torque (mask True) or acceleration.

    For torque-known joints ``Gamma[j]`` is used (tau_j = Gamma_j - Fs sign - Fv qd, eq. 44) and
    ``qdd[j]`` is computed (41); for the others ``qdd[j]`` is used and ``Gamma[j]`` computed (82,
    with friction as in eq. 31).  ``f`` is the (n frames, 6) array of wrenches [f; m] of a(j) on
    link j in frame j (42).  ``f_env`` are Khalil's wrenches *of the links on the environment*
    (eq. 25), the opposite of the core's ``f_ext`` (environment on the link): f_env = -f_ext.
    """
    tree = as_tree(tree)
    q, qd = np.asarray(q, dtype=float), np.asarray(qd, dtype=float)
    Gamma = np.array(Gamma, dtype=float)
    qdd = np.array(qdd, dtype=float)
    known = np.asarray(torque_known, dtype=bool)
    for name, x in (('q', q), ('qd', qd), ('Gamma', Gamma), ('qdd', qdd), ('mask', known)):
        if x.shape != (tree.nq,):
            raise ValueError(f'{name} has shape {x.shape}, expected ({tree.nq},)')
    for name, x in (('q', q), ('qd', qd), ('Gamma', Gamma[known]), ('qdd', qdd[~known])):
        if not np.all(np.isfinite(x)):
            raise ValueError(f'{name} must be finite')
    g = np.asarray(_DEFAULT_G if gravity is None else gravity, dtype=float).reshape(3)
    friction = tree.friction(qd)
    n = tree.n
    T = np.zeros((n, 6, 6))
    gam, beta, a6 = np.zeros((n, 6)), np.zeros((n, 6)), np.zeros((n, 6))
    Jst = np.zeros((n, 6, 6))
    w = np.zeros((n, 3))
    # (i) first forward recursion: jTi, omega_j, gamma_j (34), beta_j (35)
    for j in range(n):
        i, k, s = tree.parent[j], tree.qindex[j], tree.sigma[j]
        R, P = tree.local_transform(j, q)
        T[j] = screw_transform(R, P)
        wi = np.zeros(3) if i < 0 else w[i]
        jwi = R.T @ wi
        w[j] = jwi
        gam[j, :3] = R.T @ cross3(wi, cross3(wi, P))
        if k >= 0:
            qa = np.array([0.0, 0.0, qd[k]])
            a6[j, 2 if s == 1 else 5] = 1.0                    # (16)
            if s == 0:
                w[j] = w[j] + qa
                gam[j, 3:] = cross3(jwi, qa)
            else:
                gam[j, :3] += 2.0 * cross3(jwi, qa)
        MS, J = tree.MS[j], tree.J[j]
        beta[j, :3] = -cross3(w[j], cross3(w[j], MS))
        beta[j, 3:] = -cross3(w[j], J @ w[j])
        if f_env is not None:
            beta[j] -= np.asarray(f_env[j], dtype=float)
        Jst[j] = spatial_inertia(tree.M[j], MS, J)
    # (ii) backward recursion: H_j, K_j, alpha_j (36-38 or 75-76), J*_i, beta*_i (39-40)
    H, Kmat, alpha = np.ones(n), np.zeros((n, 6, 6)), np.zeros((n, 6))
    tau = np.where(known, Gamma - friction, 0.0)
    for j in range(n - 1, -1, -1):
        k = tree.qindex[j]
        Ja = Jst[j] @ a6[j]
        if k >= 0 and known[k]:
            H[j] = a6[j] @ Ja + tree.Ia[k]                          # (36)
            Kmat[j] = Jst[j] - np.outer(Ja, Ja) / H[j]               # (37)
            alpha[j] = (Kmat[j] @ gam[j] + Ja * (tau[k] + a6[j] @ beta[j]) / H[j]
                        - beta[j])                                   # (38)
        else:
            Kmat[j] = Jst[j]                                         # (75)
            alpha[j] = Kmat[j] @ gam[j] - beta[j]                    # (76)
            if k >= 0:
                alpha[j] += Ja * qdd[k]
        i = tree.parent[j]
        if i >= 0:
            beta[i] -= T[j].T @ alpha[j]                             # (39)
            Jst[i] += T[j].T @ Kmat[j] @ T[j]                        # (40)
    # (iii) second forward recursion from dV_0 = [-g; 0]
    dV = np.zeros((n, 6))
    f = np.zeros((n, 6))
    dV0 = np.concatenate([-g, np.zeros(3)])
    for j in range(n):
        i, k = tree.parent[j], tree.qindex[j]
        TdVi = T[j] @ (dV0 if i < 0 else dV[i])
        if k >= 0 and known[k]:
            qdd[k] = (-a6[j] @ Jst[j] @ (TdVi + gam[j]) + tau[k]
                      + a6[j] @ beta[j]) / H[j]                      # (41)
        f[j] = Kmat[j] @ TdVi + alpha[j]                             # (42)
        dV[j] = TdVi + gam[j]                                        # (43)
        if k >= 0:
            dV[j] += a6[j] * qdd[k]
            if not known[k]:
                Gamma[k] = a6[j] @ f[j] + tree.Ia[k] * qdd[k] + friction[k]   # (82), (31)
    return qdd, Gamma, f


def direct_dynamics(tree, q, qd, Gamma, gravity=None, f_env=None):
    """Return qdd of the direct dynamic model by recursive NE (Khalil 2010 §3.3.2)."""
    tree = as_tree(tree)
    nq = tree.nq
    return hybrid_dynamics(tree, q, qd, Gamma, np.zeros(nq), np.ones(nq, dtype=bool),
                           gravity=gravity, f_env=f_env)[0]
