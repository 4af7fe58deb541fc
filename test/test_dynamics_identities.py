"""Identities of inverse dynamics, and the numba kernels against the numpy reference."""

import numpy as np
import pytest

from rnea_ros import (bias_forces, coriolis_torques, gravity_torques, inverse_dynamics,
                      inverse_dynamics_batch, reaction_wrenches, RobotModel)
from rnea_ros.core.checks import external_wrenches
from rnea_ros.core.reference import link_pose, rnea
from robots import random_state, urdf_path

ROBOTS = ['panda', 'ur5', 'talos_reduced', 'allegro_hand', 'double_pendulum_continuous']


@pytest.fixture(params=[(r, f) for r in ROBOTS for f in (False, True)],
                ids=lambda p: f'{p[0]}-{"floating" if p[1] else "fixed"}')
def model(request):
    robot, floating = request.param
    return RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)


def mass_matrix_by_columns(model, q):
    """Return M(q) column by column: tau(q, 0, e_k) with gravity 0 (Khalil 2010 § 3.3.1)."""
    zero = np.zeros(model.nv)
    return np.column_stack([inverse_dynamics(model, q, zero, e, gravity=(0, 0, 0))
                            for e in np.eye(model.nv)])


def test_zero_acceleration_gives_bias_forces(model):
    q, qd, _ = random_state(model, np.random.default_rng(1))
    np.testing.assert_allclose(inverse_dynamics(model, q, qd, np.zeros(model.nv)),
                               bias_forces(model, q, qd), rtol=0, atol=1e-12)


def test_zero_velocity_and_acceleration_give_gravity_torques(model):
    q, _, _ = random_state(model, np.random.default_rng(2))
    zero = np.zeros(model.nv)
    np.testing.assert_allclose(inverse_dynamics(model, q, zero, zero),
                               gravity_torques(model, q), rtol=0, atol=1e-12)


def test_bias_is_coriolis_plus_gravity(model):
    q, qd, _ = random_state(model, np.random.default_rng(3))
    np.testing.assert_allclose(bias_forces(model, q, qd),
                               coriolis_torques(model, q, qd) + gravity_torques(model, q),
                               rtol=0, atol=1e-10)


def test_coriolis_is_quadratic_in_velocity(model):
    q, qd, _ = random_state(model, np.random.default_rng(4))
    np.testing.assert_allclose(coriolis_torques(model, q, 3.0 * qd),
                               9.0 * coriolis_torques(model, q, qd), rtol=1e-10, atol=1e-10)


def test_tau_is_mass_matrix_times_acceleration_plus_bias(model):
    """Torques are M qdd + C qd + g, with M symmetric positive definite (rigid bodies)."""
    rng = np.random.default_rng(5)
    q, qd, qdd = random_state(model, rng)
    M = mass_matrix_by_columns(model, q)
    np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-10)
    assert np.linalg.eigvalsh(M).min() > 0.0
    np.testing.assert_allclose(inverse_dynamics(model, q, qd, qdd),
                               M @ qdd + bias_forces(model, q, qd), rtol=1e-10, atol=1e-9)


def test_kernel_agrees_with_numpy_reference(model):
    rng = np.random.default_rng(6)
    for _ in range(3):
        q, qd, qdd = random_state(model, rng, scale=3.0)
        f_ext = {lk: rng.normal(size=6) for lk in model.body_links[-3:]}
        gravity = rng.normal(size=3) * 5.0
        tau_ref, f_ref = rnea(model, q, qd, qdd, external_wrenches(model, f_ext), gravity)
        tau = inverse_dynamics(model, q, qd, qdd, f_ext=f_ext, gravity=gravity)
        scale = max(1.0, np.abs(tau_ref).max())
        assert np.abs(tau - tau_ref).max() <= 1e-12 * scale
        W = reaction_wrenches(model, q, qd, qdd, f_ext=f_ext, gravity=gravity)
        W_ref = f_ref[model.joint_body]
        assert np.abs(W - W_ref).max() <= 1e-12 * max(1.0, np.abs(W_ref).max())


def test_batch_equals_single_calls(model):
    rng = np.random.default_rng(7)
    states = [random_state(model, rng) for _ in range(25)]
    Q, QD, QDD = (np.array(x) for x in zip(*states))
    TAU = inverse_dynamics_batch(model, Q, QD, QDD)
    for k in range(len(states)):
        np.testing.assert_allclose(TAU[k], inverse_dynamics(model, Q[k], QD[k], QDD[k]),
                                   rtol=0, atol=1e-12)


def test_batch_over_many_parallel_blocks_equals_single_calls(model):
    """1000 rows: 16 blocks of 64 shared by the threads, each with its own workspace."""
    rng = np.random.default_rng(9)
    states = [random_state(model, rng) for _ in range(1000)]
    Q, QD, QDD = (np.array(x) for x in zip(*states))
    TAU = inverse_dynamics_batch(model, Q, QD, QDD, gravity=(0.5, 0.0, -9.0))
    for k in range(0, 1000, 37):
        np.testing.assert_allclose(
            TAU[k], inverse_dynamics(model, Q[k], QD[k], QDD[k], gravity=(0.5, 0.0, -9.0)),
            rtol=0, atol=1e-12)


def test_batch_with_gravity_and_single_row(model):
    q, qd, qdd = random_state(model, np.random.default_rng(8))
    TAU = inverse_dynamics_batch(model, q[None], qd[None], qdd[None], gravity=(0, 0, -1.62))
    np.testing.assert_allclose(TAU[0], inverse_dynamics(model, q, qd, qdd, gravity=(0, 0, -1.62)),
                               rtol=0, atol=1e-12)
    empty = inverse_dynamics_batch(model, np.zeros((0, model.nq)), np.zeros((0, model.nv)),
                                   np.zeros((0, model.nv)))
    assert empty.shape == (0, model.nv)


def test_lists_and_int_arrays_are_accepted(model):
    q, qd, qdd = random_state(model, np.random.default_rng(9))
    expected = inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(inverse_dynamics(model, list(q), tuple(qd), list(qdd)), expected)
    zeros = np.zeros(model.nv, dtype=np.int32)
    np.testing.assert_allclose(inverse_dynamics(model, q, zeros, zeros),
                               gravity_torques(model, q))


def test_external_wrench_on_fixed_base_root_has_no_effect():
    model = RobotModel.from_urdf_file(urdf_path('panda'))
    q, qd, qdd = random_state(model, np.random.default_rng(10))
    np.testing.assert_allclose(
        inverse_dynamics(model, q, qd, qdd, f_ext={model.root_link: np.ones(6) * 100}),
        inverse_dynamics(model, q, qd, qdd), rtol=0, atol=1e-12)


def test_payload_wrench_equals_gravity_of_added_mass():
    """A 2 kg weight hung on a link (f_ext) equals a 2 kg point mass fixed to that link."""
    from rnea_ros.core.specs import JointSpec, LinkSpec
    from rnea_ros.core.urdf import parse_urdf
    with open(urdf_path('ur5')) as f:
        name, links, joints = parse_urdf(f.read())
    model = RobotModel.from_specs(links, joints, name=name)
    link = model.child_links[-1]
    offset = np.array([0.05, -0.02, 0.1])
    heavy = RobotModel.from_specs(
        links + [LinkSpec('payload', mass=2.0)],
        joints + [JointSpec('payload_joint', 'fixed', link, 'payload', translation=offset)],
        name=name)
    q, _, _ = random_state(model, np.random.default_rng(11))
    R, _ = link_pose(model, q, link)
    weight = R.T @ np.array([0.0, 0.0, -2.0 * 9.81])          # in the link frame
    wrench = np.concatenate([weight, np.cross(offset, weight)])  # about the link origin
    np.testing.assert_allclose(gravity_torques(model, q, f_ext={link: wrench}),
                               gravity_torques(heavy, q), rtol=1e-10, atol=1e-10)
    lift = {'payload': np.r_[-weight, 0.0, 0.0, 0.0]}
    np.testing.assert_allclose(gravity_torques(heavy, q, f_ext=lift), gravity_torques(model, q),
                               rtol=1e-10, atol=1e-10)
