"""Robots with elastic joints (Khalil 2010 §6, eqs. 67-82).

Two related problems:

- :func:`elastic_inverse_dynamics` is the recursive algorithm of §6.3 (Khalil and Gautier 2000):
  a tree whose joints are rigid or elastic (Gamma_j = -K_j Delta q_j, eqs. 69-70).  Given all
  joint positions and velocities and the accelerations of the rigid joints, it returns the
  accelerations of the elastic joints (80) and the torques of the rigid joints (82), through the
  backward recursion (72)-(78) and the forward recursion (79)-(82).
  :func:`elastic_direct_dynamics` is §6.2: the recursive direct model with
  Gamma_j = -K_j Delta q_j on the elastic joints.
- :func:`flexible_joint_inverse_dynamics` solves the flexible-joint robot (motor - spring - link)
  for a desired *link* trajectory.  In Khalil's description each flexible joint j is a rigid
  motorised joint (variable theta_j, rotor inertia Ia_j, friction) followed by a coaxial elastic
  joint (deflection delta_j, stiffness K_j) carrying link j, see :func:`split_flexible_table`.
  The link torques tau_l = NE(q, qd, qdd) are the spring torques, so the motor positions are
  theta = q + K^-1 tau_l, and the motor torques are Gamma_m = Ia theta'' + Fs sign(theta')
  + Fv theta' + tau_l with theta'' = q'' + K^-1 tau_l''.  The time derivatives of tau_l come
  exactly from Khalil's NE propagated as Taylor jets (:mod:`rnea_ros.khalil.newton_euler`),
  which is why the link trajectory is needed up to its fourth derivative.
"""

from dataclasses import dataclass, replace

import numpy as np

from rnea_ros.core.layout import COULOMB_BAND
from rnea_ros.khalil.direct import hybrid_dynamics
from rnea_ros.khalil.mdh import MDHFrame
from rnea_ros.khalil.newton_euler import as_tree, KhalilTree, newton_euler_jets


def _mask(tree, elastic):
    tree = as_tree(tree)
    if elastic is None:
        return tree.K > 0.0
    m = np.asarray(elastic, dtype=bool)
    if m.shape != (tree.nq,):
        raise ValueError(f'elastic must be {tree.nq} booleans, got shape {m.shape}')
    if np.any(tree.K[m] <= 0.0):
        raise ValueError('every elastic joint needs a stiffness K > 0 in the table')
    return m


def elastic_torques(tree, q, elastic=None, q0=None):
    """Return Gamma_j = -K_j (q_j - q0_j) of the elastic joints (eqs. 69-70), 0 elsewhere."""
    tree = as_tree(tree)
    m = _mask(tree, elastic)
    q = np.asarray(q, dtype=float)
    q0 = np.zeros(tree.nq) if q0 is None else np.asarray(q0, dtype=float)
    return np.where(m, -tree.K * (q - q0), 0.0)


def elastic_inverse_dynamics(tree, q, qd, qdd_rigid, elastic=None, q0=None, gravity=None,
                             f_env=None):
    """Return (qdd, Gamma) of a tree with elastic joints by the recursive NE of §6.3.

    ``qdd_rigid`` gives the accelerations of the rigid joints (entries of elastic joints are
    ignored); ``elastic`` is a mask (default: joints with K > 0).  ``qdd`` holds the given rigid
    accelerations and the elastic accelerations of eq. (80); ``Gamma`` the rigid joint torques of
    eq. (82) and -K Delta q for the elastic joints.  Friction and rotor inertia of an elastic
    joint, if any, enter as in eqs. (36)-(38) (eq. 72 is the case Ia = Fs = Fv = 0).
    """
    tree = as_tree(tree)
    m = _mask(tree, elastic)
    Gamma = elastic_torques(tree, q, m, q0)
    qdd = np.where(m, 0.0, np.asarray(qdd_rigid, dtype=float))
    qdd, Gamma, _ = hybrid_dynamics(tree, q, qd, Gamma, qdd, m, gravity=gravity, f_env=f_env)
    return qdd, Gamma


def elastic_direct_dynamics(tree, q, qd, Gamma, elastic=None, q0=None, gravity=None, f_env=None):
    """Return qdd of a tree with elastic joints (§6.2): direct model with Gamma_j = -K Delta q."""
    tree = as_tree(tree)
    m = _mask(tree, elastic)
    G = np.where(m, elastic_torques(tree, q, m, q0), np.asarray(Gamma, dtype=float))
    return hybrid_dynamics(tree, q, qd, G, np.zeros(tree.nq), np.ones(tree.nq, dtype=bool),
                           gravity=gravity, f_env=f_env)[0]


# -- flexible-joint robots: from the link trajectory to the motors ------------------------------

def split_flexible_table(table):
    """Return the MDH table where each joint j with K_j > 0 is motor joint + elastic joint.

    The motor frame keeps the geometry of frame j, is motorised (mu = 1), massless, and carries
    Ia, Fs, Fv (the rotor's inertia about its own axis, Spong's assumption); the elastic frame is
    coaxial (all geometric parameters 0, a = the motor frame), passive, has stiffness K_j and
    link j's inertial parameters and name.  Its variable is the deflection delta_j, so that the
    link variable is q_j = theta_j + delta_j.  Returns (table, motor, deflection): the split
    table and, per original joint, the indices of its motor and deflection variables in q
    (deflection -1 for a rigid joint).
    """
    if table.B:
        raise ValueError('flexible joints are supported on trees only (no cut joints)')
    new_index, frames = {0: 0}, []
    motor, deflection = [], []
    for f in table.tree_frames:
        a = new_index[f.a]
        if f.sigma == 2 or f.K <= 0.0:
            frames.append(replace(f, j=len(frames) + 1, a=a))
            new_index[f.j] = len(frames)
            if f.sigma != 2:
                motor.append(len(frames))
                deflection.append(0)
            continue
        frames.append(MDHFrame(
            j=len(frames) + 1, a=a, mu=1, sigma=f.sigma, gamma=f.gamma, b=f.b, alpha=f.alpha,
            d=f.d, theta=f.theta, r=f.r, Ia=f.Ia, Fs=f.Fs, Fv=f.Fv, lower=f.lower,
            upper=f.upper, effort=f.effort, velocity=f.velocity,
            name=f'{f.joint_name}_motor', link=f'{f.link_name}_rotor'))
        motor.append(len(frames))
        frames.append(replace(f, j=len(frames) + 1, a=len(frames), mu=0, gamma=0.0, b=0.0,
                              alpha=0.0, d=0.0, theta=0.0, r=0.0, Ia=0.0, Fs=0.0, Fv=0.0,
                              lower=-np.inf, upper=np.inf, name=f'{f.joint_name}_deflection',
                              link=f.link_name))
        deflection.append(len(frames))
        new_index[f.j] = len(frames)
    split = table.with_frames(frames, NL=len(frames), NJ=len(frames),
                              name=f'{table.name}_flexible')
    order = {fr.j: k for k, fr in enumerate(split.joints)}
    return (split, np.array([order[j] for j in motor]),
            np.array([order[j] if j else -1 for j in deflection]))


@dataclass
class FlexibleJointMotion:
    """Motor trajectory and torques that make the links follow a given trajectory."""

    theta: np.ndarray         # motor positions (link side units)
    dtheta: np.ndarray
    ddtheta: np.ndarray
    tau_motor: np.ndarray     # motor torques Gamma_m
    tau_link: np.ndarray      # torques transmitted to the links (the spring torques)


class FlexibleJointRobot:
    """A tree whose joints with K_j > 0 are flexible (motor - spring - link), see module doc."""

    def __init__(self, table, coulomb_band=COULOMB_BAND):
        """Build the link-side tree (flexible joints without rotor and friction terms).

        The motor's Coulomb friction uses the core's sign, linear inside |dtheta| < band.
        """
        link_frames = [replace(f, Ia=0.0, Fs=0.0, Fv=0.0) if f.K > 0.0 else f
                       for f in table.tree_frames]
        self.table = table
        self.tree = KhalilTree(table, coulomb_band=coulomb_band)
        self.link_tree = KhalilTree(table.with_frames(link_frames + list(table.frames[table.NL:])))
        self.flexible = self.tree.K > 0.0
        self.Kinv = np.where(self.flexible, 1.0 / np.where(self.flexible, self.tree.K, 1.0), 0.0)

    def inverse_dynamics(self, q, dq, d2q, d3q, d4q, gravity=None):
        """Return the :class:`FlexibleJointMotion` for link positions q and derivatives 1-4."""
        D = np.array([q, dq, d2q, d3q, d4q], dtype=float)
        tau = newton_euler_jets(self.link_tree, D, gravity=gravity)   # tau_l, tau_l', tau_l''
        theta, dtheta, ddtheta = (D[k] + self.Kinv * tau[k] for k in range(3))
        t = self.tree
        motor = t.Ia * ddtheta + t.friction(dtheta) + tau[0]
        return FlexibleJointMotion(theta, dtheta, ddtheta, np.where(self.flexible, motor, tau[0]),
                                   tau[0])


def flexible_joint_inverse_dynamics(table, q, dq, d2q, d3q, d4q, gravity=None):
    """Return the :class:`FlexibleJointMotion` for link positions q and derivatives up to 4th.

    Joints with K_j > 0 in the table are flexible (their Ia, Fs, Fv are the motor's), the others
    rigid (theta = q, Gamma = NE including eq. 31's Ia, Fs, Fv).  See the module doc; build a
    :class:`FlexibleJointRobot` once to call it in a loop.
    """
    return FlexibleJointRobot(table).inverse_dynamics(q, dq, d2q, d3q, d4q, gravity=gravity)
