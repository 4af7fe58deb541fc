"""Inverse dynamics of parallel robots: platform plus legs (Khalil 2010 §5, eqs. 59-66).

The robot is a moving platform connected to the base by m legs.  Each leg is a serial MDH table
from the base to the link that carries the passive joint (spherical, or a revolute for planar
robots) joining it to the platform; the centre of that joint is the origin of the leg's last
frame and the point ``attach`` (P_i) of the platform frame.  Given the platform trajectory
(pose, screw V_p = [V; omega] of the platform origin, its derivative), with all vectors in base
coordinates:

- the legs' inverse kinematics give q_i, qd_i = J_i^+ v_i (63), v_i = J_vi V_p (64, 65) and
  qdd_i, and the legs' inverse dynamics Gamma_i (the core's RNEA with eq. 31's Ia, Fs, Fv);
- the platform wrench F_p follows from the Newton-Euler equation (9);
- the active torques are Gamma = J_p^T [F_p + sum_i J_vi^T J_i^-T Gamma_i] (eq. 66), with J_p
  the robot Jacobian V_p = J_p qd_a (60) obtained by inverting J_p^-1 (rows J_i^-1 J_vi of the
  active joints).

Robots with fewer than six degrees of freedom (planar robots, Khalil and Ibrahim 2007) give the
platform's free directions as a 6 x N basis ``dof`` (V_p = dof nu), and J_p = dof (J_p^-1 dof)^-1.
Legs with fewer joints than the dimension of v_i use the pseudo-inverse J_i^+ (the leg moves in
a subspace, e.g. a plane), which is exact for motions the leg can follow.
"""

from dataclasses import dataclass

import numpy as np

from rnea_ros.core.dynamics import inverse_dynamics as core_inverse_dynamics
from rnea_ros.core.layout import DEFAULT_GRAVITY as _DEFAULT_G
from rnea_ros.core.spatial import skew
from rnea_ros.khalil.kinematics import frame_jacobian, frame_kinematics, poses
from rnea_ros.khalil.mdh import model_from_mdh
from rnea_ros.khalil.newton_euler import KhalilTree


@dataclass(frozen=True)
class Leg:
    """One leg: its MDH table, the joint centre P_i on the platform, its motorised joints."""

    table: object                    # MDHTable of the leg (a serial chain from the base)
    attach: tuple                    # P_i in the platform frame
    q0: tuple = None                 # starting guess of the leg's inverse kinematics
    active: tuple = None             # leg joint indices that are motorised (default: mu = 1)


@dataclass
class LegState:
    """Joint positions, velocities, accelerations and torques of one leg."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    Gamma: np.ndarray


class ParallelRobot:
    """A parallel robot: platform inertia (Khalil's M, MS, J in the platform frame) and legs."""

    def __init__(self, legs, platform, dof=None, tol=1e-12, max_iter=50, **model_options):
        """Prepare the legs' models; ``platform`` = (M, MS, J about the platform origin).

        ``model_options`` go to :func:`~rnea_ros.khalil.mdh.model_from_mdh` (e.g. coulomb_band).
        """
        self.legs = tuple(legs)
        M, MS, J = platform
        self.M, self.MS, self.J = float(M), np.asarray(MS, float), np.asarray(J, float)
        self.trees = [KhalilTree(leg.table) for leg in self.legs]
        self.models = [model_from_mdh(leg.table, **model_options) for leg in self.legs]
        self.active = [np.flatnonzero(leg.table.active) if leg.active is None
                       else np.asarray(leg.active, dtype=int) for leg in self.legs]
        self.N = sum(len(a) for a in self.active)
        self.dof = np.eye(6) if dof is None else np.asarray(dof, dtype=float)
        if self.dof.shape != (6, self.N):
            raise ValueError(f'dof must be a 6 x {self.N} basis of the platform screw (one '
                             f'column per active joint), got shape {self.dof.shape}')
        self.tol, self.max_iter = tol, max_iter
        self._guess = [np.zeros(t.nq) if leg.q0 is None else np.asarray(leg.q0, float)
                       for t, leg in zip(self.trees, self.legs)]

    # -- legs' kinematics (eqs. 63-65) ----------------------------------------------------------

    def leg_inverse_kinematics(self, i, point):
        """Return q_i placing the origin of leg i's last frame at ``point`` (Newton)."""
        tree, q = self.trees[i], self._guess[i].copy()
        for _ in range(self.max_iter):
            T = poses(tree, q)
            e = T[-1, :3, 3] - point
            if np.linalg.norm(e) < self.tol:
                self._guess[i] = q
                return q
            q -= np.linalg.lstsq(frame_jacobian(tree, T, tree.n - 1)[:3], e, rcond=None)[0]
        raise ValueError(f'leg {i} cannot reach the platform joint at {np.round(point, 6)}')

    def leg_states(self, R, p, V, dV, gravity=None):
        """Return the legs' :class:`LegState` for the platform pose (R, p), screw V and dV."""
        w, dw = V[3:], dV[3:]
        states = []
        for i, (leg, tree) in enumerate(zip(self.legs, self.trees)):
            Pi = R @ np.asarray(leg.attach, dtype=float)
            q = self.leg_inverse_kinematics(i, p + Pi)
            Ji = frame_jacobian(tree, poses(tree, q), tree.n - 1)[:3]
            vi = V[:3] + np.cross(w, Pi)                                 # (64), (65)
            ai = dV[:3] + np.cross(dw, Pi) + np.cross(w, np.cross(w, Pi))
            Jpinv = self._leg_pinv(i, Ji)
            qd = Jpinv @ vi                                              # (63)
            if np.linalg.norm(Ji @ qd - vi) > 1e-9 * max(1.0, np.linalg.norm(vi)):
                raise ValueError(f'leg {i} cannot follow the platform velocity')
            bias = frame_kinematics(tree, q, qd, np.zeros(tree.nq)).dV[-1]
            qdd = Jpinv @ (ai - bias)
            Gamma = core_inverse_dynamics(self.models[i], q, qd, qdd, gravity=gravity)
            states.append(LegState(q, qd, qdd, Gamma))
        return states

    def _leg_pinv(self, i, Ji):
        s = np.linalg.svd(Ji, compute_uv=False)
        if s[-1] < 1e-9 * max(1.0, s[0]):
            raise ValueError(f'leg {i} is in a singular configuration')
        return np.linalg.pinv(Ji)

    # -- platform and robot (eqs. 9, 59-62, 66) -------------------------------------------------

    def jacobian(self, R, states):
        """Return (J_p, J_vi list, J_i^+ list): V_p = J_p qd_a (60), from J_p^-1 (62)."""
        Jv, Jpinv, rows = [], [], []
        for i, (leg, tree, st) in enumerate(zip(self.legs, self.trees, states)):
            Pi = R @ np.asarray(leg.attach, dtype=float)
            Jv.append(np.hstack([np.eye(3), -skew(Pi)]))                 # (65)
            Jpinv.append(self._leg_pinv(i, frame_jacobian(tree, poses(tree, st.q),
                                                          tree.n - 1)[:3]))
            rows.append((Jpinv[-1] @ Jv[-1])[self.active[i]])            # d qd_i / d V_p
        Jinv = np.vstack(rows)                                           # J_p^-1 (N x 6)
        reduced = Jinv @ self.dof
        if np.linalg.cond(reduced) > 1e12:
            raise ValueError('the parallel robot is in a singular configuration')
        return self.dof @ np.linalg.inv(reduced), Jv, Jpinv

    def platform_wrench(self, R, V, dV, gravity=None, f_env=None):
        """Return F_p of eq. (9) in base coordinates about the platform origin (gravity in)."""
        g = np.asarray(_DEFAULT_G if gravity is None else gravity, dtype=float)
        MS, J = R @ self.MS, R @ self.J @ R.T
        w, dw, dv = V[3:], dV[3:], dV[:3] - g
        F = np.concatenate([self.M * dv + np.cross(dw, MS) + np.cross(w, np.cross(w, MS)),
                            J @ dw + np.cross(w, J @ w) + np.cross(MS, dv)])
        return F if f_env is None else F + np.asarray(f_env, dtype=float)

    def inverse_dynamics(self, R, p, V, dV, gravity=None, f_env=None):
        """Return the active torques Gamma of eq. (66), legs in order, and the legs' states.

        ``R``, ``p``: platform orientation and origin; ``V`` = [V; omega] its screw and ``dV``
        its derivative (base coordinates); ``f_env``: wrench *of the platform on the
        environment* (Khalil's convention, the opposite of the core's f_ext).
        """
        R, p, V, dV = (np.asarray(x, dtype=float) for x in (R, p, V, dV))
        for name, x, shape in (('R', R, (3, 3)), ('p', p, (3,)), ('V', V, (6,)),
                               ('dV', dV, (6,))):
            if x.shape != shape or not np.all(np.isfinite(x)):
                raise ValueError(f'{name} must be a finite array of shape {shape}')
        states = self.leg_states(R, p, V, dV, gravity)
        Jp, Jv, Jpinv = self.jacobian(R, states)
        cartesian = self.platform_wrench(R, V, dV, gravity, f_env)
        for st, Jvi, Jpi in zip(states, Jv, Jpinv):
            cartesian = cartesian + Jvi.T @ (Jpi.T @ st.Gamma)           # J_vi^T J_i^-T Gamma_i
        return Jp.T @ cartesian, states                                  # (66)
