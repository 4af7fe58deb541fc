"""Khalil's recursive Newton-Euler inverse dynamics of a tree (Khalil 2010 §3.2, eqs. 12-31).

Everything is written in frame j of each link with Khalil's notation: screws are
[V; omega] (linear velocity of the origin O_j first), wrenches [f; m] about O_j, the joint axis
a_j is z_j, link inertial parameters are (M_j, MS_j, J_j) about O_j (eq. 11), gravity enters as
dV_0 = -g.  Unlike the core's numba RNEA this implementation also adds the rotor inertia and
friction of eq. (31), supports sigma = 2 frames directly, and propagates *time derivatives*:
every quantity is a truncated Taylor "jet" [x, dx/dt, d2x/dt2, ...] so that the derivatives of
the joint torques along a trajectory come out exactly (used by the flexible-joint model,
:mod:`rnea_ros.khalil.elastic`).  :func:`inertia_matrix` is Khalil 2010 §3.3.1 (columns of A by the
inverse model with qdd = u_i, qd = 0, g = 0).
"""

from math import comb

import numpy as np

from rnea_ros.core.dynamics import coulomb_sign
from rnea_ros.core.layout import COULOMB_BAND, DEFAULT_GRAVITY as _DEFAULT_G


class KhalilTree:
    """The arrays of an MDH table used by the recursions (frames in table order)."""

    def __init__(self, table, with_loops=False, coulomb_band=COULOMB_BAND):
        """Collect frames 1..NL (and the cut/aligned frames if ``with_loops``).

        ``coulomb_band``: sign(qd) of the Coulomb friction Fs is linear inside |qd| < band, as
        in the core (:func:`rnea_ros.core.dynamics.coulomb_sign`), in every algorithm here.
        """
        if not coulomb_band > 0.0:
            raise ValueError(f'coulomb_band must be positive, got {coulomb_band}')
        frames = table.frames if with_loops else table.tree_frames
        self.table = table
        self.coulomb_band = float(coulomb_band)
        self.n = len(frames)
        self.parent = np.array([f.a - 1 for f in frames], dtype=int)
        self.sigma = np.array([f.sigma for f in frames], dtype=int)
        self.R0 = np.array([f.fixed_transform()[:3, :3] for f in frames])
        self.P0 = np.array([f.fixed_transform()[:3, 3] for f in frames])
        movable = [k for k, f in enumerate(frames) if f.sigma != 2]
        self.qindex = -np.ones(self.n, dtype=int)
        self.qindex[movable] = np.arange(len(movable))
        self.nq = len(movable)
        self.frame_of_q = np.array(movable, dtype=int)
        self.M = np.array([f.M for f in frames])
        self.MS = np.array([[f.MX, f.MY, f.MZ] for f in frames])
        self.J = np.array([f.inertia_about_origin()[2] for f in frames])
        q_frames = [frames[k] for k in movable]
        self.Ia = np.array([f.Ia for f in q_frames])
        self.Fs = np.array([f.Fs for f in q_frames])
        self.Fv = np.array([f.Fv for f in q_frames])
        self.K = np.array([f.K for f in q_frames])
        self.names = tuple(f.joint_name for f in q_frames)

    def friction(self, qd):
        """Return Fs sign(qd) + Fv qd (eq. 31) with the core's banded sign."""
        return self.Fs * coulomb_sign(qd, self.coulomb_band) + self.Fv * qd

    def children(self, j):
        """Return the frames k with a(k) = j (j is 0-based, -1 for the base)."""
        return np.flatnonzero(self.parent == j)

    def local_transform(self, j, q):
        """Return (iRj, iPj) of frame j for the joint vector q (eq. 1)."""
        R, P = self.R0[j], self.P0[j]
        k = self.qindex[j]
        if k < 0:
            return R, P
        if self.sigma[j] == 0:
            c, s = np.cos(q[k]), np.sin(q[k])
            return R @ np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]), P
        return R, P + R[:, 2] * q[k]


def as_tree(tree):
    """Return a :class:`KhalilTree` for a KhalilTree or an MDH table (else ValueError)."""
    if isinstance(tree, KhalilTree):
        return tree
    if hasattr(tree, 'frames') and hasattr(tree, 'NL'):
        return KhalilTree(tree)
    raise ValueError('expected a KhalilTree or an MDHTable (the core RobotModel has its own '
                     f'rnea_ros.inverse_dynamics), got {type(tree).__name__}')


# -- truncated Taylor series ("jets") -------------------------------------------------------------

def _const(x, order):
    """Return the jet of a constant: x followed by zero derivatives."""
    x = np.asarray(x, dtype=float)
    out = np.zeros((order + 1,) + x.shape)
    out[0] = x
    return out


def cross3(a, b):
    """Return a x b for (..., 3) arrays (faster than numpy.cross on small arrays)."""
    a1, a2, a3 = a[..., 0], a[..., 1], a[..., 2]
    b1, b2, b3 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], axis=-1)


_LEIBNIZ = {}


def _leibniz(n):
    """Return W[m, k, l] = C(m, k) if k + l = m else 0: (a b)^(m) = sum W[m,k,l] a^(k) b^(l)."""
    if n not in _LEIBNIZ:
        W = np.zeros((n, n, n))
        for m in range(n):
            for k in range(m + 1):
                W[m, k, m - k] = comb(m, k)
        _LEIBNIZ[n] = W
    return _LEIBNIZ[n]


def _mv(A, v):
    """Return the jet of the matrix-vector product A v (Leibniz rule)."""
    if A.shape[0] == 1:
        return np.einsum('kab,kb->ka', A, v)
    return np.einsum('mkl,kla->ma', _leibniz(A.shape[0]), np.einsum('kab,lb->kla', A, v))


def _cross(u, v):
    """Return the jet of the cross product u x v (Leibniz rule)."""
    if u.shape[0] == 1:
        return cross3(u, v)
    return np.einsum('mkl,klc->mc', _leibniz(u.shape[0]), cross3(u[:, None], v[None, :]))


def _sincos(u):
    """Return the jets of sin(u) and cos(u) for a scalar jet u (Faa di Bruno, recursively)."""
    s, c = np.zeros_like(u), np.zeros_like(u)
    s[0], c[0] = np.sin(u[0]), np.cos(u[0])
    for m in range(1, u.shape[0]):
        s[m] = sum(comb(m - 1, k) * c[k] * u[m - k] for k in range(m))
        c[m] = -sum(comb(m - 1, k) * s[k] * u[m - k] for k in range(m))
    return s, c


def _local_transform_jet(tree, j, qj):
    """Return the jets of (iRj, iPj) of frame j given the joint-variable jet qj (eq. 1)."""
    order = qj.shape[0] - 1
    R0, P0 = tree.R0[j], tree.P0[j]
    if tree.sigma[j] == 0:
        s, c = _sincos(qj)
        Rz = np.zeros((order + 1, 3, 3))
        Rz[:, 0, 0], Rz[:, 0, 1], Rz[:, 1, 0], Rz[:, 1, 1] = c, -s, s, c
        Rz[0, 2, 2] = 1.0
        return np.einsum('ab,mbc->mac', R0, Rz), _const(P0, order)
    P = _const(P0, order)
    if tree.sigma[j] == 1:
        P = P + qj[:, None] * R0[:, 2][None, :]
    return _const(R0, order), P


def _check_state(tree, x, what, rows):
    """Return x as floats of shape (rows, nq), or (nq,) if rows is None; else ValueError."""
    try:
        x = np.asarray(x, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f'{what} must be numbers ({tree.nq} per row)') from None
    shape = (tree.nq,) if rows is None else (rows, tree.nq)
    if x.shape != shape:
        raise ValueError(f'{what} has shape {x.shape}, expected {shape} '
                         f'({tree.nq} joints: {list(tree.names)})')
    if not np.all(np.isfinite(x)):
        raise ValueError(f'{what} must be finite')
    return x


def newton_euler_jets(tree, derivatives, gravity=None, f_env=None, friction=True):
    """Return the jet of the joint torques Gamma along a trajectory (eqs. 13-31).

    ``derivatives`` is a (K + 3, nq) array [q, dq, d2q, ..., d^(K+2) q] of the joint trajectory
    at one instant; the result is the (K + 1, nq) array [Gamma, dGamma/dt, ..., d^K Gamma/dt^K].
    ``f_env`` is an optional (n frames, 6) array of Khalil's external wrenches f_ej = [f; m]
    *of link j on the environment*, in frame j about O_j (eq. 25), held constant in time.  This
    is the opposite of the core's ``inverse_dynamics(f_ext=)``, the wrench *of the environment
    on the link*: f_env = -f_ext (hence the different name).
    """
    tree = as_tree(tree)
    D = np.asarray(derivatives, dtype=float)
    if D.ndim != 2 or D.shape[0] < 3:
        raise ValueError('derivatives must be a (K + 3, nq) array [q, dq, d2q, ...]')
    D = _check_state(tree, D, 'derivatives', D.shape[0])
    order = D.shape[0] - 3
    q, qd, qdd = D[:order + 1], D[1:order + 2], D[2:order + 3]
    g = np.asarray(_DEFAULT_G if gravity is None else gravity, dtype=float).reshape(3)
    n = tree.n
    w = np.zeros((n, order + 1, 3))
    wd = np.zeros((n, order + 1, 3))
    vd = np.zeros((n, order + 1, 3))
    R = np.zeros((n, order + 1, 3, 3))
    P = np.zeros((n, order + 1, 3))
    f = np.zeros((n, order + 1, 3))
    m = np.zeros((n, order + 1, 3))
    zero, vd0 = _const(np.zeros(3), order), _const(-g, order)      # dV_0 = -g
    for j in range(n):
        i = tree.parent[j]
        k = tree.qindex[j]
        qj = q[:, k] if k >= 0 else np.zeros(order + 1)
        R[j], P[j] = _local_transform_jet(tree, j, qj)
        RT = np.swapaxes(R[j], 1, 2)                                 # jRi
        wi, wdi, vdi = (zero, zero, vd0) if i < 0 else (w[i], wd[i], vd[i])
        jwi = _mv(RT, wi)                                            # (18)
        w[j], wd[j] = jwi, _mv(RT, wdi)
        UiP = _cross(wdi, P[j]) + _cross(wi, _cross(wi, P[j]))
        vd[j] = _mv(RT, vdi + UiP)                                   # (21), first term
        if k >= 0:
            qa = np.zeros((order + 1, 3))
            qa[:, 2] = qd[:, k]                                      # qd_j a_j
            if tree.sigma[j] == 0:
                w[j] = w[j] + qa                                     # (19)
                wd[j] = wd[j] + _cross(jwi, qa)                      # (20)
                wd[j][:, 2] += qdd[:, k]
            else:
                vd[j] = vd[j] + 2.0 * _cross(jwi, qa)                # (21)
                vd[j][:, 2] += qdd[:, k]
        MS, J = tree.MS[j], tree.J[j]
        wxMS = _cross(w[j], _const(MS, order))
        f[j] = tree.M[j] * vd[j] + _cross(wd[j], _const(MS, order)) + _cross(w[j], wxMS)  # (22)
        Jw = np.einsum('ab,mb->ma', J, w[j])
        m[j] = (np.einsum('ab,mb->ma', J, wd[j]) + _cross(w[j], Jw)
                + cross3(MS, vd[j]))                                 # (23)
        if f_env is not None:
            f[j][0] += np.asarray(f_env[j][:3], dtype=float)            # (26)
            m[j][0] += np.asarray(f_env[j][3:], dtype=float)            # (27)
    Gamma = np.zeros((order + 1, tree.nq))
    for j in range(n - 1, -1, -1):
        k = tree.qindex[j]
        if k >= 0:
            Gamma[:, k] = f[j][:, 2] if tree.sigma[j] == 1 else m[j][:, 2]   # (31)
        i = tree.parent[j]
        if i >= 0:
            fi = _mv(R[j], f[j])                                     # (28)
            f[i] += fi                                               # (29)
            m[i] += _mv(R[j], m[j]) + _cross(P[j], fi)               # (30)
    Gamma += tree.Ia * qdd                                           # (31): Ia qdd
    if friction:
        Gamma[0] += tree.friction(qd[0])                             # Fs sign(qd) + Fv qd
        Gamma[1:] += tree.Fv * qd[1:]
        band = np.abs(qd[0]) < tree.coulomb_band                     # sign(qd) = qd / band
        Gamma[1:, band] += (tree.Fs / tree.coulomb_band)[band] * qd[1:, band]
    return Gamma


def newton_euler(tree, q, qd, qdd, gravity=None, f_env=None, friction=True):
    """Return Gamma = NE(q, qd, qdd, f_e) (eq. 12), rotor inertia and friction included (31).

    ``f_env``: (n frames, 6) wrenches *of the links on the environment* (Khalil's f_ej, eq. 25),
    in frame j about O_j; the core's ``f_ext`` is the opposite (environment on the link).
    """
    tree = as_tree(tree)
    q, qd, qdd = (_check_state(tree, x, name, None) for x, name in
                  ((q, 'q'), (qd, 'qd'), (qdd, 'qdd')))
    D = np.array([q, qd, qdd], dtype=float)
    return newton_euler_jets(tree, D, gravity=gravity, f_env=f_env, friction=friction)[0]


def inertia_matrix(tree, q):
    """Return A(q) by columns: NE with qdd = u_i, qd = 0, g = 0, f_e = 0 (Khalil 2010 §3.3.1).

    A includes the rotor inertias Ia on its diagonal (eq. 31).
    """
    tree = as_tree(tree)
    n = tree.nq
    A = np.zeros((n, n))
    zero = np.zeros(n)
    for i in range(n):
        u = np.zeros(n)
        u[i] = 1.0
        A[:, i] = newton_euler(tree, q, zero, u, gravity=np.zeros(3), friction=False)
    return 0.5 * (A + A.T)


def bias_vector(tree, q, qd, gravity=None, f_env=None, friction=True):
    """Return H(q, qd) of eq. (7): Gamma at qdd = 0 (Coriolis, centrifugal, gravity, friction)."""
    tree = as_tree(tree)
    return newton_euler(tree, q, qd, np.zeros(tree.nq), gravity=gravity, f_env=f_env,
                        friction=friction)
