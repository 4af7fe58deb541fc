"""Closed-loop inverse dynamics by the equivalent tree (Khalil 2010 §4, eqs. 55-58)."""

import numpy as np
import pytest

from rnea_ros.khalil.closed_loop import ClosedLoopRobot
from rnea_ros.khalil.kinematics import poses
from rnea_ros.khalil.mdh import make_table
from rnea_ros.khalil.mdh_files import data_path, load_mdh
from rnea_ros.khalil.newton_euler import inertia_matrix, KhalilTree

G0 = 9.81
GRAVITY = (0.0, -G0, 0.0)        # in the plane of the mechanisms


def parallelogram(L0=0.6, L1=0.25):
    """Return a parallelogram four-bar: ground and coupler L0, crank and rocker L1."""
    rows = [
        {'j': 1, 'a': 0, 'mu': 1, 'XX': 0.001, 'YY': 0.03, 'ZZ': 0.031, 'MX': 0.15, 'MY': 0.01,
         'M': 1.2, 'Ia': 0.02, 'Fv': 0.3},
        {'j': 2, 'a': 1, 'd': L1, 'XX': 0.002, 'XY': 0.009, 'YY': 0.2, 'ZZ': 0.2, 'MX': 0.6,
         'MY': -0.03, 'M': 2.0},
        {'j': 3, 'a': 0, 'd': L0, 'XX': 0.001, 'YY': 0.05, 'ZZ': 0.0508, 'MX': 0.2, 'MY': 0.02,
         'M': 1.4},
        {'j': 4, 'a': 2, 'd': L0},                      # cut joint C on the coupler
        {'j': 5, 'a': 3, 'sigma': 2, 'd': L1},          # frame of C fixed on the rocker
    ]
    return make_table(rows, NL=3, NJ=4, name='parallelogram')


def test_parallelogram_torque_matches_its_closed_form():
    """The coupler translates: Gamma = (ZZ1 + Ia1 + ZZ3 + M2 L1^2) qdd + g0 dU/dq + Fv qd."""
    L1 = 0.25
    table = parallelogram(L1=L1)
    robot = ClosedLoopRobot(table)
    f1, f2, f3 = table.frames[:3]
    inertia = f1.ZZ + f1.Ia + f3.ZZ + f2.M * L1 ** 2
    rng = np.random.default_rng(10)
    for _ in range(20):
        q = rng.uniform(0.2, np.pi - 0.2) * rng.choice([-1, 1])
        qd, qdd = rng.normal(size=2)
        gamma = robot.inverse_dynamics([q], [qd], [qdd], gravity=GRAVITY, guess=[q, -q, q, q])
        dU = G0 * ((f1.MX + f2.M * L1 + f3.MX) * np.cos(q) - (f1.MY + f3.MY) * np.sin(q))
        assert gamma[0] == pytest.approx(inertia * qdd + dU + f1.Fv * qd, abs=1e-10)
        static = robot.inverse_dynamics([q], [0.0], [0.0], gravity=GRAVITY)
        assert static[0] == pytest.approx(dU, abs=1e-10)


def test_loop_closure_and_its_derivatives():
    """Frames k and k+B coincide; G, qd_tr and qdd_tr match finite differences of the closure."""
    robot = ClosedLoopRobot(load_mdh(data_path('fourbar.yaml')))
    robot.close([0.4], guess=[0.4, 0.2, 1.6, 1.0])
    rng = np.random.default_rng(11)
    h = 1e-4
    for _ in range(10):
        t0, w, amp, phase = rng.uniform(0, 1, size=4) + [0, 1, 0.5, 0]

        def qa(t):
            return 0.4 + amp * np.sin(w * t + phase)
        s = robot.kinematics([qa(t0)], [amp * w * np.cos(w * t0 + phase)],
                             [-amp * w ** 2 * np.sin(w * t0 + phase)])
        T = poses(robot.tree, np.concatenate([s.q, s.qc]))
        assert np.allclose(T[3], T[4], atol=1e-12)
        x = [robot.close([qa(t0 + k * h)])[:3] for k in (-1, 0, 1)]
        assert np.allclose((x[2] - x[0]) / (2 * h), s.qd, atol=1e-7)
        assert np.allclose((x[2] - 2 * x[1] + x[0]) / h ** 2, s.qdd, atol=1e-5)
        dqa = (qa(t0 + h) - qa(t0 - h)) / (2 * h)
        assert np.allclose(s.G[:, 0] * dqa, (x[2] - x[0]) / (2 * h), atol=1e-7)


def energy(robot, tree, q_tr, qd_tr):
    """Return the kinetic + potential energy of the closed chain (rotor inertias included)."""
    T = poses(tree, q_tr)
    U = sum(-np.dot(GRAVITY, f.M * T[j, :3, 3] + T[j, :3, :3] @ [f.MX, f.MY, f.MZ])
            for j, f in enumerate(robot.table.tree_frames))
    return 0.5 * qd_tr @ inertia_matrix(tree, q_tr) @ qd_tr + U


def test_virtual_work_and_power_balance_on_a_general_four_bar():
    """Gamma_c . qd_a = Gamma_tr . qd_tr, and equals dE/dt plus the friction losses."""
    table = load_mdh(data_path('fourbar.yaml'))
    robot, tree = ClosedLoopRobot(table), KhalilTree(table)
    robot.close([0.3], guess=[0.3, 0.2, 1.6, 1.0])
    rng = np.random.default_rng(12)
    h = 1e-4
    for _ in range(10):
        w, amp, t0 = rng.uniform(0.5, 3.0), rng.uniform(0.5, 2.0), rng.uniform(0.0, 2.0)
        qa = [0.3 + amp * np.sin(w * t) for t in (t0 - h, t0, t0 + h)]
        qda, qdda = amp * w * np.cos(w * t0), -amp * w ** 2 * np.sin(w * t0)
        gamma_c = robot.inverse_dynamics([qa[1]], [qda], [qdda], gravity=GRAVITY)
        s = robot.kinematics([qa[1]], [qda], [qdda])
        gamma_tr = robot.tree_torques(s, gravity=GRAVITY)
        assert gamma_c[0] * qda == pytest.approx(gamma_tr @ s.qd, rel=1e-12, abs=1e-12)
        E = []
        for k in (0, 2):
            sk = robot.kinematics([qa[k]], [amp * w * np.cos(w * (t0 + (k - 1) * h))], [0.0])
            E.append(energy(robot, tree, sk.q, sk.qd))
        losses = sum(f.Fv * v * v + f.Fs * abs(v) for f, v in zip(table.joints, s.qd))
        assert gamma_c[0] * qda == pytest.approx((E[1] - E[0]) / (2 * h) + losses, abs=1e-6)


def test_closed_loop_dynamic_model_and_direct_dynamics():
    """A_c = G^T A_tr G (eq. 58), and the direct model inverts the inverse model."""
    table = load_mdh(data_path('fourbar.yaml'))
    robot, tree = ClosedLoopRobot(table), KhalilTree(table)
    robot.close([0.3], guess=[0.3, 0.2, 1.6, 1.0])
    rng = np.random.default_rng(13)
    for _ in range(5):
        qa, qda, qdda = rng.uniform(-3, 3), rng.normal(), rng.normal()
        A, H = robot.dynamic_model([qa], [qda], gravity=GRAVITY)
        s = robot.kinematics([qa], [qda], [0.0])
        assert np.allclose(A, s.G.T @ inertia_matrix(tree, s.q) @ s.G, atol=1e-12)
        gamma = robot.inverse_dynamics([qa], [qda], [qdda], gravity=GRAVITY)
        assert np.allclose(A @ [qdda] + H, gamma, atol=1e-10)
        assert robot.direct_dynamics([qa], [qda], gamma, gravity=GRAVITY) == \
            pytest.approx([qdda], abs=1e-10)


def test_unreachable_and_bad_inputs_are_reported():
    """A four-bar whose coupler cannot reach the rocker fails with a clear message."""
    rows = [{'j': 1, 'a': 0, 'mu': 1}, {'j': 2, 'a': 1, 'd': 0.1}, {'j': 3, 'a': 0, 'd': 2.0},
            {'j': 4, 'a': 2, 'd': 0.1}, {'j': 5, 'a': 3, 'sigma': 2, 'd': 0.1}]
    robot = ClosedLoopRobot(make_table(rows, NL=3, NJ=4, name='broken'))
    with pytest.raises(ValueError, match='did not converge'):
        robot.close([0.0])
    good = ClosedLoopRobot(load_mdh(data_path('fourbar.yaml')))
    with pytest.raises(ValueError, match='finite'):
        good.inverse_dynamics([np.nan], [0.0], [0.0])
    with pytest.raises(ValueError, match='1 finite numbers'):
        good.inverse_dynamics([0.1, 0.2], [0.0], [0.0])
    with pytest.raises(ValueError, match='no cut joint'):
        ClosedLoopRobot(make_table([{'j': 1, 'a': 0, 'mu': 1}]))
