"""Elastic and flexible joints (Khalil 2010 §6, eqs. 67-82)."""

from dataclasses import replace

from khalil_robots import random_tree, Sines
import numpy as np
import pytest

from rnea_ros.khalil.direct import direct_dynamics
from rnea_ros.khalil.elastic import (elastic_direct_dynamics, elastic_inverse_dynamics,
                                     flexible_joint_inverse_dynamics, FlexibleJointRobot,
                                     split_flexible_table)
from rnea_ros.khalil.mdh_files import data_path, load_mdh
from rnea_ros.khalil.newton_euler import (bias_vector, inertia_matrix, KhalilTree, newton_euler,
                                          newton_euler_jets)


def flexible_arm(stiffness=(3000.0, 3000.0, 1500.0)):
    """Return the first three joints of the RX-90 with flexible joints."""
    rx90 = load_mdh(data_path('rx90.yaml'))
    frames = [replace(f, K=k) for f, k in zip(rx90.frames[:3], stiffness)]
    return rx90.with_frames(frames, NL=3, NJ=3, name='rx90_flexible')


def test_recursive_elastic_model_matches_the_partitioned_lagrange_form():
    """Eqs. (72)-(82) against eq. (71) with A and H from the inverse model (§3.3.1)."""
    rng = np.random.default_rng(30)
    tree = KhalilTree(random_tree(rng, stiffness=True))
    for _ in range(10):
        f = rng.random(tree.nq) < 0.5                 # elastic joints
        r = ~f
        q, qd, qdd_r = rng.normal(size=(3, tree.nq))
        q0 = rng.normal(size=tree.nq)
        qdd, gamma = elastic_inverse_dynamics(tree, q, qd, qdd_r, f, q0=q0)
        A, H = inertia_matrix(tree, q), bias_vector(tree, q, qd)
        gamma_f = -tree.K[f] * (q[f] - q0[f])                                   # (69)-(70)
        qdd_f = np.linalg.solve(A[np.ix_(f, f)], gamma_f - H[f] - A[np.ix_(f, r)] @ qdd_r[r])
        assert np.allclose(qdd[f], qdd_f, atol=1e-9)                           # (71)
        assert np.allclose(qdd[r], qdd_r[r])
        expected = A[np.ix_(r, r)] @ qdd_r[r] + A[np.ix_(r, f)] @ qdd_f + H[r]
        assert np.allclose(gamma[r], expected, atol=1e-9)                      # (68), 1st row
        assert np.allclose(gamma[f], gamma_f)
        # §6.2: the direct model with Gamma = -K dq on the elastic joints inverts it
        assert np.allclose(elastic_direct_dynamics(tree, q, qd, gamma, f, q0=q0), qdd,
                           atol=1e-9)


def test_torque_derivatives_match_finite_differences():
    """The NE jets give d/dt and d2/dt2 of the torques along a trajectory."""
    rng = np.random.default_rng(31)
    tree = KhalilTree(random_tree(rng))
    traj = Sines(rng, tree.nq)
    h = 1e-4
    for t in rng.uniform(0, 5, 5):
        jets = newton_euler_jets(tree, traj.derivatives(t, 4), friction=False)
        tau = [newton_euler(tree, traj(s), traj(s, 1), traj(s, 2), friction=False)
               for s in (t - h, t, t + h)]
        assert np.allclose(jets[0], tau[1], atol=1e-12)
        assert np.allclose(jets[1], (tau[2] - tau[0]) / (2 * h), atol=1e-6)
        assert np.allclose(jets[2], (tau[2] - 2 * tau[1] + tau[0]) / h ** 2, atol=1e-4)


def test_motor_trajectory_derivatives_match_finite_differences():
    """theta, theta', theta'' of the flexible-joint inverse model are consistent in time."""
    table = flexible_arm()
    rng = np.random.default_rng(32)
    traj = Sines(rng, 3, speed=(1.0, 3.0))
    h = 1e-4
    for t in rng.uniform(0, 3, 5):
        m = [flexible_joint_inverse_dynamics(table, *traj.derivatives(s)) for s in
             (t - h, t, t + h)]
        assert np.allclose(m[1].dtheta, (m[2].theta - m[0].theta) / (2 * h), atol=1e-7)
        assert np.allclose(m[1].ddtheta, (m[2].dtheta - m[0].dtheta) / (2 * h), atol=1e-6)
        assert np.allclose(m[1].ddtheta, (m[2].theta - 2 * m[1].theta + m[0].theta) / h ** 2,
                           atol=1e-4)


def test_recursive_elastic_model_on_the_split_robot_reproduces_the_motor_torques():
    """Eqs. (72)-(82) on the motor + spring frames give back the link motion and motor torques.

    Given the motor accelerations (rigid joints), eq. (80) returns the deflection accelerations
    qdd - theta'' and eq. (82) the motor torques of the flexible-joint inverse model.
    """
    table = flexible_arm()
    split, motor, deflection = split_flexible_table(table)
    tree = KhalilTree(split)
    rng = np.random.default_rng(33)
    traj = Sines(rng, 3, speed=(1.0, 3.0))
    for t in rng.uniform(0, 3, 5):
        d = traj.derivatives(t)
        m = flexible_joint_inverse_dynamics(table, *d)
        q, qd, qdd = np.zeros((3, tree.nq))
        q[motor], qd[motor], qdd[motor] = m.theta, m.dtheta, m.ddtheta
        q[deflection], qd[deflection] = d[0] - m.theta, d[1] - m.dtheta
        elastic = np.zeros(tree.nq, dtype=bool)
        elastic[deflection] = True
        qdd_out, gamma = elastic_inverse_dynamics(tree, q, qd, qdd, elastic)
        assert np.allclose(qdd_out[deflection], d[2] - m.ddtheta, atol=1e-9)
        assert np.allclose(gamma[motor], m.tau_motor, atol=1e-9)


def test_simulating_the_motor_torques_recovers_the_link_trajectory():
    """Simulating the computed motor torques makes the links follow the desired trajectory.

    The motor + spring robot is integrated (RK4) with the §6.2 direct model from the computed
    initial motor state.
    """
    table = flexible_arm()
    split, motor, deflection = split_flexible_table(table)
    tree = KhalilTree(split)
    rng = np.random.default_rng(34)
    traj = Sines(rng, 3, amplitude=0.4, speed=(1.0, 3.0))
    robot = FlexibleJointRobot(table)

    def state_of(t):
        m = robot.inverse_dynamics(*traj.derivatives(t))
        x = np.zeros(2 * tree.nq)
        x[motor], x[tree.nq + motor] = m.theta, m.dtheta
        x[deflection] = traj(t) - m.theta
        x[tree.nq + deflection] = traj(t, 1) - m.dtheta
        return x, m.tau_motor

    def f(t, x):
        gamma = np.zeros(tree.nq)
        gamma[motor] = state_of(t)[1]
        qdd = elastic_direct_dynamics(tree, x[:tree.nq], x[tree.nq:], gamma)
        return np.concatenate([x[tree.nq:], qdd])
    dt, x = 2e-3, state_of(0.0)[0]
    worst = 0.0
    for k in range(150):
        t = k * dt
        k1 = f(t, x)
        k2 = f(t + dt / 2, x + dt / 2 * k1)
        k3 = f(t + dt / 2, x + dt / 2 * k2)
        k4 = f(t + dt, x + dt * k3)
        x = x + dt / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        link = x[motor] + x[deflection]
        worst = max(worst, np.abs(link - traj(t + dt)).max())
    print(f'largest link error over 0.3 s: {worst:.2e} rad')
    assert worst < 1e-9
    deflections = np.abs(state_of(0.3)[0][deflection])
    assert deflections.max() > 1e-3          # the springs really deflect


def test_rigid_joints_of_a_flexible_robot_use_the_rigid_model():
    """With K = 0 (rigid) everywhere the flexible inverse model is the NE with eq. (31)."""
    table = flexible_arm(stiffness=(0.0, 0.0, 0.0))
    rng = np.random.default_rng(35)
    d = Sines(rng, 3).derivatives(0.4)
    m = flexible_joint_inverse_dynamics(table, *d)
    assert np.allclose(m.theta, d[0])
    assert np.allclose(m.tau_motor, newton_euler(KhalilTree(table), d[0], d[1], d[2]))


def test_direct_dynamics_of_the_split_robot_without_springs_is_rigid():
    """Very stiff springs: the split robot's link accelerations approach the rigid ones."""
    table = flexible_arm(stiffness=(1e12, 1e12, 1e12))
    split, motor, deflection = split_flexible_table(table)
    assert split.joint_names == ('joint1_motor', 'joint1_deflection', 'joint2_motor',
                                 'joint2_deflection', 'joint3_motor', 'joint3_deflection')
    rigid = KhalilTree(load_mdh(data_path('rx90.yaml')).with_frames(
        load_mdh(data_path('rx90.yaml')).frames[:3], NL=3, NJ=3))
    q, qd, gamma = np.array([0.3, -0.5, 0.8]), np.array([0.5, 0.2, -0.4]), np.ones(3)
    qdd_rigid = direct_dynamics(rigid, q, qd, gamma)
    m = flexible_joint_inverse_dynamics(table, q, qd, qdd_rigid, np.zeros(3), np.zeros(3))
    assert np.allclose(m.tau_motor, gamma, atol=1e-6)


def test_bad_elastic_inputs():
    """A joint marked elastic without stiffness, and trees with cut joints, are refused."""
    tree = KhalilTree(random_tree(np.random.default_rng(36)))
    with pytest.raises(ValueError, match='stiffness'):
        elastic_inverse_dynamics(tree, np.zeros(tree.nq), np.zeros(tree.nq),
                                 np.zeros(tree.nq), np.ones(tree.nq, dtype=bool))
    with pytest.raises(ValueError, match='trees only'):
        split_flexible_table(load_mdh(data_path('fourbar.yaml')))
