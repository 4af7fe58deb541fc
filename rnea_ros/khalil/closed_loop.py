"""Inverse dynamics of closed-loop robots by the equivalent tree (Khalil 2010 §4, eqs. 55-58).

The mechanism is an MDH table with cut joints (Khalil 2010 §2.2).  Given the N active joint
variables q_a:

1. the loop-closure equations k+B T j ... i T k = I4 (eq. 3) are solved for the passive tree
   variables q_p and the cut variables q_c (Gauss-Newton on the pose error of frames k, k+B);
2. the kinematic constraints 0V_k = 0V_k+B (eq. 4), J_a qd_a + J_u qd_u = 0, give
   G = d q_tr / d q_a (eq. 56) and, differentiated once more, qdd_tr;
3. the tree torques Gamma_tr(q_tr, qd_tr, qdd_tr) come from the core's inverse dynamics (RNEA
   plus the rotor and friction terms of eq. 31, from the table's Ia, Fs, Fv), and the active
   torques are Gamma_c = G^T Gamma_tr (eq. 55), i.e. Gamma_a + (d qd_p / d qd_a)^T Gamma_p
   (eq. 57).

:meth:`ClosedLoopRobot.dynamic_model` gives A_c and H_c of eq. (58) by the procedure of §3.3.1,
and :meth:`ClosedLoopRobot.direct_dynamics` the accelerations qdd_a = A_c^-1 (Gamma_c - H_c).
"""

from dataclasses import dataclass
import warnings

import numpy as np

from rnea_ros.core.dynamics import inverse_dynamics as core_inverse_dynamics
from rnea_ros.core.model import RobotModel
from rnea_ros.khalil.kinematics import frame_jacobian, frame_kinematics, poses
from rnea_ros.khalil.mdh import MDHTable, model_from_mdh
from rnea_ros.khalil.newton_euler import KhalilTree


@dataclass
class ClosedLoopState:
    """Tree and cut-joint coordinates of a closed mechanism, and G of eq. (56)."""

    q: np.ndarray        # q_tr (table order of the tree joints)
    qd: np.ndarray
    qdd: np.ndarray
    qc: np.ndarray       # cut-joint variables q_c
    qdc: np.ndarray
    qddc: np.ndarray
    G: np.ndarray        # (n_tr, N) d q_tr / d q_a


def _orientation_error(R1, R2):
    """Return a 3-vector that vanishes iff R1 = R2 (near it: the rotation vector of R1 R2^T)."""
    E = R1 @ R2.T
    return 0.5 * np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]])


class ClosedLoopRobot:
    """A closed-loop robot given by an MDH table with cut joints (Khalil 2010 §2.2 and §4)."""

    def __init__(self, table, model=None, tol=1e-12, max_iter=50, assembly=None):
        """Prepare the tree (core RobotModel) and the loop frames of ``table``.

        A closed loop has several assembly modes (branches) for the same q_a: ``assembly``
        ([q_tr] or [q_tr, q_c], near the wanted branch) is where the first loop closure starts,
        after which each closure starts from the last solution.  Without ``assembly`` and without
        a ``guess`` at the first call, the closure starts from q = 0 and a RuntimeWarning names
        the branch it found: choose it explicitly.
        """
        if not isinstance(table, MDHTable):
            raise TypeError(f'table must be an MDHTable (load_mdh), got {type(table).__name__}')
        if model is not None and not isinstance(model, RobotModel):
            raise TypeError('model must be a RobotModel (rnea_ros.khalil.model_from_mdh(table)), '
                            f'got {type(model).__name__}')
        if table.B < 1:
            raise ValueError(f"MDH table '{table.name}' has no cut joint (NJ = NL)")
        self.table = table
        self.tree = KhalilTree(table, with_loops=True)
        self.model = model_from_mdh(table) if model is None else model
        if tuple(self.model.joint_names) != table.joint_names:
            raise ValueError('the model must have the table joints in table order')
        self.n_tr = len(table.joints)
        self.active = np.flatnonzero(table.active)
        self.N = len(self.active)
        if self.N == 0:
            raise ValueError(f"MDH table '{table.name}' has no active joint (mu = 1)")
        n_ext = self.tree.nq                                   # [q_tr, q_c]
        self.unknown = np.setdiff1d(np.arange(n_ext), self.active)
        self.cut = [table.NL + b for b in range(table.B)]      # 0-based frames k
        self.aligned = [table.NJ + b for b in range(table.B)]  # 0-based frames k + B
        self.tol, self.max_iter = tol, max_iter
        self._last = np.zeros(n_ext)
        self._branch_chosen = assembly is not None
        if assembly is not None:
            self._last = self._guess(assembly)

    # -- geometry (eq. 3) and kinematic constraints (eq. 4) ---------------------------------------

    def residual(self, q_ext):
        """Return the (6B,) pose errors of frames k versus k+B (zero when the loops close)."""
        T = poses(self.tree, q_ext)
        return np.concatenate([np.concatenate([T[k, :3, 3] - T[kb, :3, 3],
                                               _orientation_error(T[k, :3, :3], T[kb, :3, :3])])
                               for k, kb in zip(self.cut, self.aligned)])

    def constraint_jacobian(self, T):
        """Return the (6B, n_tr + B) matrix J_k - J_k+B of eq. (4) for poses T."""
        return np.vstack([frame_jacobian(self.tree, T, k) - frame_jacobian(self.tree, T, kb)
                          for k, kb in zip(self.cut, self.aligned)])

    def close(self, q_a, guess=None):
        """Return [q_tr, q_c] that closes the loops for active variables q_a (eq. 3).

        ``guess`` ([q_tr, q_c] or q_tr) selects the assembly mode; by default the last solution
        is used, so that following a trajectory stays on one branch.
        """
        q_a = self._vector(q_a, self.N, 'q_a')
        x = self._last.copy() if guess is None else self._guess(guess)
        warn = guess is None and not self._branch_chosen
        self._branch_chosen = True
        x[self.active] = q_a
        for _ in range(self.max_iter):
            e = self.residual(x)
            if np.linalg.norm(e) < self.tol:
                break
            Ju = self.constraint_jacobian(poses(self.tree, x))[:, self.unknown]
            x[self.unknown] -= np.linalg.lstsq(Ju, e, rcond=None)[0]
        else:
            raise ValueError(f"loop closure of '{self.table.name}' did not converge for "
                             f'q_a = {q_a.tolist()} (unreachable or singular configuration)')
        self._last = x.copy()
        if warn:
            warnings.warn(f"'{self.table.name}': no assembly mode chosen, the loop closure "
                          f'started from q = 0 and found q_tr = {np.round(x[:self.n_tr], 4)}; '
                          'pass assembly= (ClosedLoopRobot) or guess= to choose the branch',
                          RuntimeWarning, stacklevel=3)
        return x

    def kinematics(self, q_a, qd_a, qdd_a, guess=None):
        """Return the :class:`ClosedLoopState` (positions, velocities, accelerations, G)."""
        qd_a = self._vector(qd_a, self.N, 'qd_a')
        qdd_a = self._vector(qdd_a, self.N, 'qdd_a')
        x = self.close(q_a, guess)
        T = poses(self.tree, x)
        Jphi = self.constraint_jacobian(T)
        Ju, Ja = Jphi[:, self.unknown], Jphi[:, self.active]
        s = np.linalg.svd(Ju, compute_uv=False)
        if s.size and s[-1] < 1e-9 * max(1.0, s[0]):
            raise ValueError(f"'{self.table.name}' is in a singular configuration at "
                             f'q_tr = {x[:self.n_tr].tolist()}')
        Ju_pinv = np.linalg.pinv(Ju)
        G_ext = np.zeros((self.tree.nq, self.N))
        G_ext[self.active] = np.eye(self.N)
        G_ext[self.unknown] = -Ju_pinv @ Ja                     # from eq. (4)
        xd = G_ext @ qd_a
        kin = frame_kinematics(self.tree, x, xd, np.zeros(self.tree.nq))
        bias = np.concatenate([np.concatenate([kin.dV[k] - kin.dV[kb], kin.dw[k] - kin.dw[kb]])
                               for k, kb in zip(self.cut, self.aligned)])
        xdd = np.zeros(self.tree.nq)
        xdd[self.active] = qdd_a
        xdd[self.unknown] = -Ju_pinv @ (Ja @ qdd_a + bias)      # d/dt of eq. (4)
        n = self.n_tr
        return ClosedLoopState(x[:n], xd[:n], xdd[:n], x[n:], xd[n:], xdd[n:], G_ext[:n])

    # -- dynamics (eqs. 55-58) ----------------------------------------------------------------

    def tree_torques(self, state, gravity=None, f_ext=None):
        """Return Gamma_tr of the equivalent tree: the core's RNEA with Ia, Fs, Fv (eq. 31)."""
        return core_inverse_dynamics(self.model, state.q, state.qd, state.qdd, f_ext=f_ext,
                                     gravity=gravity)

    def inverse_dynamics(self, q_a, qd_a, qdd_a, gravity=None, f_ext=None, guess=None):
        """Return Gamma_c = G^T Gamma_tr (eq. 55), the torques of the active joints.

        ``f_ext`` = {link: wrench} applied by the environment on tree links (core convention).
        """
        state = self.kinematics(q_a, qd_a, qdd_a, guess)
        return state.G.T @ self.tree_torques(state, gravity, f_ext)

    def dynamic_model(self, q_a, qd_a, gravity=None, guess=None):
        """Return (A_c, H_c) of Gamma_c = A_c qdd_a + H_c (eq. 58), by the §3.3.1 procedure."""
        zero = np.zeros(self.N)
        H = self.inverse_dynamics(q_a, qd_a, zero, gravity=gravity, guess=guess)
        A = np.zeros((self.N, self.N))
        state = self.kinematics(q_a, zero, zero)
        for i in range(self.N):
            u = np.zeros(self.N)
            u[i] = 1.0
            state.qdd = state.G @ u                             # qd = 0: qdd_tr = G qdd_a
            tau = core_inverse_dynamics(self.model, state.q, np.zeros(self.n_tr), state.qdd,
                                        gravity=(0.0, 0.0, 0.0))
            A[:, i] = state.G.T @ tau
        return 0.5 * (A + A.T), H

    def direct_dynamics(self, q_a, qd_a, Gamma_c, gravity=None, guess=None):
        """Return qdd_a = A_c^-1 (Gamma_c - H_c) (Khalil 2010 §4, eq. 58)."""
        A, H = self.dynamic_model(q_a, qd_a, gravity=gravity, guess=guess)
        return np.linalg.solve(A, self._vector(Gamma_c, self.N, 'Gamma_c') - H)

    # -- input checks -----------------------------------------------------------------------------

    def _vector(self, x, n, what):
        try:
            arr = np.asarray(x, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise ValueError(f'{what} must be {n} numbers') from None
        if arr.shape != (n,) or not np.all(np.isfinite(arr)):
            raise ValueError(f'{what} must be {n} finite numbers, got {np.asarray(x).tolist()}')
        return arr

    def _guess(self, guess):
        g = np.asarray(guess, dtype=float).reshape(-1)
        if g.shape == (self.n_tr,):
            g = np.concatenate([g, self._last[self.n_tr:]])
        if g.shape != (self.tree.nq,) or not np.all(np.isfinite(g)):
            raise ValueError(f'guess must be {self.n_tr} (q_tr) or {self.tree.nq} ([q_tr, q_c]) '
                             'finite numbers')
        return g.copy()
