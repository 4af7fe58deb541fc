"""Forward kinematics of an MDH tree in base coordinates (Khalil 2010 §2, eqs. 1, 4, 5, 13-15).

For every frame j: the pose 0Tj, the screw 0Vj = [V_j; omega_j] (velocity of the origin O_j and
angular velocity) and its time derivative (classical acceleration of O_j, angular acceleration),
and the Jacobian 0Vj = J_j qd used by the loop constraints (eq. 4) and the legs of parallel
robots (eq. 63).  Works on a :class:`~rnea_ros.khalil.newton_euler.KhalilTree`, so cut joints
and their aligned frames are included when the tree was built ``with_loops``.
"""

from dataclasses import dataclass

import numpy as np

from rnea_ros.khalil.newton_euler import cross3


@dataclass
class FrameKinematics:
    """Per-frame results in base coordinates (arrays indexed by 0-based frame)."""

    T: np.ndarray        # (n, 4, 4) poses 0Tj
    V: np.ndarray        # (n, 3) velocity of O_j
    w: np.ndarray        # (n, 3) angular velocity
    dV: np.ndarray       # (n, 3) acceleration of O_j
    dw: np.ndarray       # (n, 3) angular acceleration


def poses(tree, q):
    """Return the (n, 4, 4) poses 0Tj of all frames for joint vector q."""
    q = np.asarray(q, dtype=float)
    T = np.zeros((tree.n, 4, 4))
    for j in range(tree.n):
        R, P = tree.local_transform(j, q)
        Tj = np.eye(4)
        Tj[:3, :3], Tj[:3, 3] = R, P
        i = tree.parent[j]
        T[j] = Tj if i < 0 else T[i] @ Tj
    return T


def frame_kinematics(tree, q, qd, qdd):
    """Return the poses, velocities and accelerations of all frames (eqs. 13-15, no gravity)."""
    qd = np.asarray(qd, dtype=float)
    qdd = np.asarray(qdd, dtype=float)
    T = poses(tree, q)
    n = tree.n
    V, w, dV, dw = (np.zeros((n, 3)) for _ in range(4))
    for j in range(n):
        i = tree.parent[j]
        p, z = T[j, :3, 3], T[j, :3, 2]
        if i >= 0:
            r = p - T[i, :3, 3]
            w[j], dw[j] = w[i], dw[i]
            V[j] = V[i] + cross3(w[i], r)
            dV[j] = dV[i] + cross3(dw[i], r) + cross3(w[i], cross3(w[i], r))
        k = tree.qindex[j]
        if k < 0:
            continue
        wi = w[j].copy()
        if tree.sigma[j] == 0:
            w[j] = w[j] + qd[k] * z
            dw[j] = dw[j] + qdd[k] * z + cross3(wi, qd[k] * z)
        else:
            V[j] = V[j] + qd[k] * z
            dV[j] = dV[j] + qdd[k] * z + 2.0 * cross3(wi, qd[k] * z)
    return FrameKinematics(T, V, w, dV, dw)


def is_ancestor(tree, m, j):
    """Return True if frame m is frame j or on the path from the base to frame j."""
    while j >= 0:
        if j == m:
            return True
        j = tree.parent[j]
    return False


def frame_jacobian(tree, T, j, point=None):
    """Return the (6, nq) Jacobian [V; omega] = J qd of frame j (at ``point``, default O_j)."""
    p = T[j, :3, 3] if point is None else np.asarray(point, dtype=float)
    Jac = np.zeros((6, tree.nq))
    m = j
    while m >= 0:
        k = tree.qindex[m]
        if k >= 0:
            z = T[m, :3, 2]
            if tree.sigma[m] == 0:
                Jac[:3, k] = cross3(z, p - T[m, :3, 3])
                Jac[3:, k] = z
            else:
                Jac[:3, k] = z
        m = tree.parent[m]
    return Jac
