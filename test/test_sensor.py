"""Joint torque sensors (rnea_ros.core.sensor): bending moments and the crosstalk term.

Bending moments against Pinocchio and identities; the model's crosstalk against its
definition (rigid inverse dynamics plus c times the moments of the reaction wrenches), in every
entry point that adds it.
"""

import numpy as np
import pytest

from rnea_ros.core.dynamics import (gravity_torques, inverse_dynamics, inverse_dynamics_batch,
                                    reaction_wrenches, reaction_wrenches_batch)
from rnea_ros.core.model import RobotModel
from rnea_ros.core.sensor import (bending_moments, crosstalk_efforts, joint_axes,
                                  perpendicular_basis, SENSOR_OPTIONS, SIDES)

from robots import PinocchioOracle, random_state, urdf_path

ROBOTS = ('panda', 'ur5', 'double_pendulum_continuous')


@pytest.mark.parametrize('axis', [(0, 0, 1), (0, 0, -1), (1, 0, 0), (0, -1, 0), (0.3, -0.5, 0.8)])
def test_perpendicular_basis_completes_the_axis_to_a_right_handed_frame(axis):
    """(u, w, axis) is orthonormal with determinant +1."""
    a = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    frame = np.vstack([perpendicular_basis(axis), a])
    assert np.allclose(frame @ frame.T, np.eye(3), atol=1e-15)
    assert np.isclose(np.linalg.det(frame), 1.0)


@pytest.mark.parametrize('robot', ROBOTS)
def test_stator_side_moments_equal_pinocchio_wrench_turned_into_the_parent_frame(robot):
    """Stator side: Pinocchio's data.f turned by the joint rotation (placement^T liMi)."""
    pin = pytest.importorskip('pinocchio')
    path = urdf_path(robot)
    model = RobotModel.from_urdf_file(path)
    oracle = PinocchioOracle(model, path)
    axes = joint_axes(model)
    rng = np.random.default_rng(5)
    for _ in range(3):
        q, qd, qdd = random_state(model, rng, scale=2.0)
        pin.rnea(oracle.pm, oracle.pd, *oracle.to_pin(q, qd, qdd))
        ours = bending_moments(model, q, reaction_wrenches(model, q, qd, qdd), 'stator')
        for j, jid in enumerate(oracle.jids):
            if model.joint_types[j] == 'prismatic':
                assert np.all(ours[j] == 0.0)
                continue
            turn = oracle.pm.jointPlacements[jid].rotation.T @ oracle.pd.liMi[jid].rotation
            n = turn @ oracle.pd.f[jid].angular
            expected = perpendicular_basis(axes[j]) @ n
            assert np.allclose(ours[j], expected, rtol=1e-9, atol=1e-9 * np.abs(n).max())


@pytest.mark.parametrize('robot', ROBOTS)
def test_both_sides_see_one_bending_moment_turned_by_the_joint_angle(robot):
    """Rotor and stator moments have one norm, at angle q_j apart; the axial part is tau."""
    model = RobotModel.from_urdf_file(urdf_path(robot))
    rng = np.random.default_rng(8)
    q, qd, qdd = random_state(model, rng, scale=2.0)
    W = reaction_wrenches(model, q, qd, qdd)
    sides = {side: bending_moments(model, q, W, side) for side in SIDES}
    revolute = np.array([t != 'prismatic' for t in model.joint_types])
    rotor, stator = sides['rotor'][revolute], sides['stator'][revolute]
    assert np.allclose(np.linalg.norm(rotor, axis=1), np.linalg.norm(stator, axis=1))
    c, s = np.cos(q[revolute]), np.sin(q[revolute])
    turned = np.column_stack([c * rotor[:, 0] - s * rotor[:, 1],
                              s * rotor[:, 0] + c * rotor[:, 1]])
    assert np.allclose(turned, stator)
    axial = np.einsum('jk,jk->j', W[:, 3:], joint_axes(model))
    assert np.allclose(axial[revolute], inverse_dynamics(model, q, qd, qdd)[revolute])


def test_bending_moments_take_batches_and_name_a_wrong_side():
    """Leading axes broadcast like one sample; an unknown side is refused by name."""
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    rng = np.random.default_rng(1)
    states = [random_state(model, rng) for _ in range(4)]
    Q = np.array([s[0] for s in states])
    W = np.array([reaction_wrenches(model, *s) for s in states])
    batch = bending_moments(model, Q, W)
    assert batch.shape == (4, model.njoints, 2)
    for k in range(4):
        assert np.allclose(batch[k], bending_moments(model, Q[k], W[k]))
    with pytest.raises(ValueError, match='side must be one of'):
        bending_moments(model, Q[0], W[0], 'flange')


def crosstalk_model(path, seed=0, scale=0.05, **options):
    """Return (the plain model, the same with random crosstalk coefficients up to ``scale``)."""
    plain = RobotModel.from_urdf_file(path, **options)
    rng = np.random.default_rng(seed)
    coefficients = {what: {j: rng.uniform(-scale, scale) for j in plain.joint_names}
                    for what in SENSOR_OPTIONS}
    return plain, RobotModel.from_urdf_file(path, **options, **coefficients)


@pytest.mark.parametrize('robot', ROBOTS)
def test_crosstalk_adds_c_times_the_stator_moments_to_inverse_dynamics(robot):
    """ID with crosstalk = ID without + sum_k c_jk m_jk of the reaction wrenches (per call)."""
    plain, model = crosstalk_model(urdf_path(robot))
    rng = np.random.default_rng(2)
    for _ in range(4):
        q, qd, qdd = random_state(model, rng, scale=2.0)
        extra = crosstalk_efforts(model, q, reaction_wrenches(plain, q, qd, qdd))
        assert np.allclose(inverse_dynamics(model, q, qd, qdd),
                           inverse_dynamics(plain, q, qd, qdd) + extra, atol=1e-12)
        zero = np.zeros_like(qd)
        assert np.allclose(gravity_torques(model, q), gravity_torques(plain, q)
                           + crosstalk_efforts(model, q, reaction_wrenches(plain, q, zero,
                                                                           zero)), atol=1e-12)


@pytest.mark.parametrize('robot', ROBOTS)
def test_batch_inverse_dynamics_and_wrenches_equal_the_per_call_ones(robot):
    """inverse_dynamics_batch with crosstalk and reaction_wrenches_batch: row by row the same."""
    _, model = crosstalk_model(urdf_path(robot))
    rng = np.random.default_rng(3)
    states = [random_state(model, rng, scale=2.0) for _ in range(130)]   # > one 64-row block
    Q, QD, QDD = (np.array(x) for x in zip(*states))
    tau = inverse_dynamics_batch(model, Q, QD, QDD)
    wrenches = reaction_wrenches_batch(model, Q, QD, QDD)
    for k, (q, qd, qdd) in enumerate(states):
        assert np.allclose(tau[k], inverse_dynamics(model, q, qd, qdd), atol=1e-12)
        assert np.allclose(wrenches[k], reaction_wrenches(model, q, qd, qdd), atol=1e-12)


def test_crosstalk_options_round_trip_and_refuse_what_is_not_a_coefficient():
    """joint_term_options rebuilds the coefficients; a non-finite value or joint is refused."""
    path = urdf_path('panda')
    plain, model = crosstalk_model(path)
    assert not plain.has_crosstalk and model.has_crosstalk and model.has_joint_terms
    rebuilt = RobotModel.from_urdf_file(path, **model.joint_term_options())
    assert np.array_equal(rebuilt.sensor_crosstalk, model.sensor_crosstalk)
    assert not set(SENSOR_OPTIONS) & set(plain.joint_term_options())
    with pytest.raises(ValueError, match='must be finite'):
        RobotModel.from_urdf_file(path, sensor_crosstalk_u={'panda_joint1': float('nan')})
    with pytest.raises(ValueError, match='not a moving joint'):
        RobotModel.from_urdf_file(path, sensor_crosstalk_w={'no_such_joint': 0.01})
