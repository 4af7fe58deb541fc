"""Identities of the equation of motion checked by finite differences, independent of RNEA's path.

Each check builds its reference from quantities RNEA does not use for that term:
- M(q) from the finite difference of tau with respect to qdd, against the CRBA;
- the Christoffel symbols of the CRBA's M(q) (finite differences along q) give C(q, qd) qd,
  against ``coriolis_torques``, and M' - 2C is skew-symmetric (Khalil & Dombre, ch. 9);
- the gradient of the potential energy (link poses and centres of mass) gives g(q);
- the energy rate: tau . qd = dE/dt + friction power, with E = 1/2 qd^T M qd + U computed along a
  short motion (quaternion integrated for a floating base).
A flipped sign of the velocity-product acceleration v x S qd in the kernel fails the Christoffel
and energy checks; a flipped v x* I v (which does no work) fails the Christoffel check.
"""

import numpy as np
import pytest

from rnea_ros import (bias_forces, coriolis_torques, gravity_torques, inverse_dynamics,
                      mass_matrix, RobotModel)
from rnea_ros.core.layout import H, MASS
from rnea_ros.core.reference import link_pose
from robots import random_state, urdf_path

ROBOTS = ['panda', 'ur5', 'talos_reduced', 'double_pendulum_continuous']
GRAVITY = np.array([0.0, 0.0, -9.81])
STEP = 1e-5


@pytest.fixture(params=[(r, f) for r in ROBOTS for f in (False, True)],
                ids=lambda p: f'{p[0]}-{"floating" if p[1] else "fixed"}')
def model(request):
    robot, floating = request.param
    return RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)


def quat_times(a, b):
    """Return the Hamilton product a b of quaternions [x, y, z, w]."""
    (ax, ay, az, aw), (bx, by, bz, bw) = a, b
    return np.array([aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw,
                     aw * bw - ax * bx - ay * by - az * bz])


def integrate(model, q, v):
    """Return q moved by the velocity v for unit time (base velocity in the base frame)."""
    if not model.floating_base:
        return q + v
    R, _ = link_pose(model, q, model.root_link)
    w = v[3:6]
    angle = np.linalg.norm(w)
    axis = w / angle if angle > 0.0 else np.zeros(3)
    dq = np.r_[axis * np.sin(angle / 2), np.cos(angle / 2)]
    return np.concatenate([q[:3] + R @ v[:3], quat_times(q[3:7], dq), q[7:] + v[6:]])


def potential_energy(model, q):
    """Return the potential energy U = -sum m g . c, c from the link poses and first moments."""
    U = 0.0
    for b, link in enumerate(model.body_links):
        m = model.reals[b, MASS]
        if m > 0.0:
            R, p = link_pose(model, q, link)
            U -= GRAVITY @ (m * p + R @ model.reals[b, H:H + 3])
    return U


def energy(model, q, qd):
    """Return the total energy: kinetic (armature included through M) plus potential."""
    return 0.5 * qd @ mass_matrix(model, q) @ qd + potential_energy(model, q)


def mass_matrix_derivatives(model, q):
    """Return dM/dq_k (k over the coordinates of a fixed-base model) by central differences."""
    eye = np.eye(model.nv)
    return np.array([(mass_matrix(model, q + STEP * e) - mass_matrix(model, q - STEP * e))
                     / (2 * STEP) for e in eye])


def christoffel_coriolis(model, q, qd):
    """Return C(q, qd) from the Christoffel symbols of M: C_ij = sum_k c_ijk qd_k."""
    dM = mass_matrix_derivatives(model, q)           # dM[k, i, j] = dM_ij / dq_k
    c = 0.5 * (dM.transpose(1, 2, 0) + dM.transpose(1, 0, 2) - dM)  # c[i, j, k]
    return c @ qd


def test_mass_matrix_is_the_derivative_of_tau_by_qdd(model):
    """Central differences of tau(q, qd, qdd) in qdd, at nonzero qd and gravity, equal the CRBA."""
    q, qd, qdd = random_state(model, np.random.default_rng(1), scale=3.0)
    h = 1e-3
    columns = [(inverse_dynamics(model, q, qd, qdd + h * e)
                - inverse_dynamics(model, q, qd, qdd - h * e)) / (2 * h) for e in np.eye(model.nv)]
    M = mass_matrix(model, q)
    assert np.abs(np.column_stack(columns) - M).max() <= 1e-9 * max(1.0, np.abs(M).max())


def test_gravity_torques_are_the_gradient_of_the_potential_energy():
    for robot in ROBOTS:
        model = RobotModel.from_urdf_file(urdf_path(robot))
        q, _, _ = random_state(model, np.random.default_rng(2))
        grad = [(potential_energy(model, q + STEP * e) - potential_energy(model, q - STEP * e))
                / (2 * STEP) for e in np.eye(model.nv)]
        g = gravity_torques(model, q)
        assert np.abs(g - grad).max() <= 1e-6 * max(1.0, np.abs(g).max()), robot


def test_coriolis_equals_christoffel_symbols_of_the_mass_matrix():
    """C(q, qd) qd of RNEA equals the Christoffel form; M' - 2C is skew-symmetric."""
    for robot in ROBOTS:
        model = RobotModel.from_urdf_file(urdf_path(robot))
        q, qd, _ = random_state(model, np.random.default_rng(3), scale=3.0)
        C = christoffel_coriolis(model, q, qd)
        c = coriolis_torques(model, q, qd)
        assert np.abs(C @ qd - c).max() <= 1e-6 * max(1.0, np.abs(c).max()), robot
        M_dot = np.tensordot(qd, mass_matrix_derivatives(model, q), axes=1)
        N = M_dot - 2.0 * C
        assert np.abs(N + N.T).max() <= 1e-6 * max(1.0, np.abs(M_dot).max()), robot
        np.testing.assert_allclose(bias_forces(model, q, qd), c + gravity_torques(model, q),
                                   rtol=0, atol=1e-9)


def energy_rate(model, q, qd, qdd, h=1e-5):
    """Return dE/dt at t = 0 along q(t) = integrate(q, t qd), qd(t) = qd + t qdd."""
    def E(t):
        return energy(model, integrate(model, q, t * qd), qd + t * qdd)
    return (E(h) - E(-h)) / (2 * h)


def test_power_in_equals_the_rate_of_energy(model):
    """Power in (tau . qd) equals dE/dt for fast motions; a floating base's wrench works too."""
    rng = np.random.default_rng(4)
    for _ in range(3):
        q, qd, qdd = random_state(model, rng, scale=3.0)
        power = inverse_dynamics(model, q, qd, qdd) @ qd
        rate = energy_rate(model, q, qd, qdd)
        scale = max(1.0, abs(power), abs(rate), np.abs(qd * inverse_dynamics(
            model, q, qd, qdd)).max())
        assert abs(power - rate) <= 1e-6 * scale, (power, rate)


def test_friction_only_dissipates_and_armature_stores_energy():
    """With friction and armature: tau . qd - dE/dt is the friction power, >= 0."""
    path = urdf_path('panda')
    names = RobotModel.from_urdf_file(path).joint_names
    model = RobotModel.from_urdf_file(
        path, friction_viscous={n: 0.5 + 0.1 * i for i, n in enumerate(names)},
        friction_coulomb=dict.fromkeys(names, 0.3),
        armature={n: 0.05 * (i + 1) for i, n in enumerate(names)})
    rng = np.random.default_rng(5)
    for _ in range(5):
        q, qd, qdd = random_state(model, rng, scale=3.0)
        qd[np.abs(qd) < 0.02] = 0.02                  # outside the Coulomb band
        loss = inverse_dynamics(model, q, qd, qdd) @ qd - energy_rate(model, q, qd, qdd)
        dissipated = np.sum(model.friction_viscous * qd ** 2 + 0.3 * np.abs(qd))
        assert loss > 0.0
        assert loss == pytest.approx(dissipated, rel=1e-6)
