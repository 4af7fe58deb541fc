"""Test helpers: a "true" robot = nominal URDF perturbed, and data generated from it."""

import numpy as np

from rnea_ros.core.dynamics import inverse_dynamics_batch
from rnea_ros.core.model import RobotModel
from rnea_ros.core.urdf import parse_urdf
from robots import urdf_path

ARM = [f'panda_joint{i}' for i in range(1, 8)]


def perturbed_specs(robot, seed):
    """Return (links, joints, friction options) of a perturbed robot.

    Masses +-20 %, COM +-2 cm, inertias +-30 % (physically consistent), random friction and
    rotor inertia on the arm joints.
    """
    with open(urdf_path(robot), encoding='utf-8') as f:
        _, links, joints = parse_urdf(f.read())
    rng = np.random.default_rng(seed)
    for link in links:
        if link.mass > 0:
            link.mass *= rng.uniform(0.8, 1.2)
            link.com = tuple(np.asarray(link.com) + rng.uniform(-0.02, 0.02, 3))
            # Perturb the second moments Sigma = tr(I)/2 1 - I (PSD exactly when the triangle
            # inequalities hold) by a congruence: the truth stays physically consistent.
            d = np.sqrt(rng.uniform(0.7, 1.3, 3))
            sigma = 0.5 * np.trace(link.inertia) * np.eye(3) - link.inertia
            sigma = d[:, None] * sigma * d[None, :]
            link.inertia = np.trace(sigma) * np.eye(3) - sigma
    moving = [j.name for j in joints if j.type != 'fixed'][:7]
    options = {'friction_viscous': {j: rng.uniform(0.1, 1.0) for j in moving},
               'friction_coulomb': {j: rng.uniform(0.1, 1.0) for j in moving},
               'armature': {j: rng.uniform(0.0, 0.2) for j in moving}}
    return links, joints, options


def truth_model(robot, seed):
    """Return the perturbed "true" RobotModel (friction and armature included)."""
    links, joints, options = perturbed_specs(robot, seed)
    return RobotModel.from_specs(links, joints, **options)


def states_along(model, traj, t, hold=0.02):
    """Return (Q, QD, QDD) of the model following an excitation (other joints at ``hold``)."""
    q, qd, qdd = traj.evaluate(np.asarray(t) % traj.duration)
    n = len(t)
    Q = np.full((n, model.nq), hold)
    QD, QDD = np.zeros((n, model.nv)), np.zeros((n, model.nv))
    index = [model.joint_names.index(j) for j in traj.joints]
    Q[:, index], QD[:, index], QDD[:, index] = q, qd, qdd
    return Q, QD, QDD


def measured(truth, Q, QD, QDD, noise, rng):
    """Return the truth's efforts plus Gaussian noise (standard deviation ``noise``)."""
    E = inverse_dynamics_batch(truth, Q, QD, QDD)
    return E + rng.normal(0.0, noise, E.shape)
