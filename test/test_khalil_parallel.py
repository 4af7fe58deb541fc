"""Parallel robots from platform and legs' dynamics (Khalil 2010 §5, eqs. 59-66)."""

from dataclasses import replace

import numpy as np
import pytest

from rnea_ros.core.spatial import rotx, rotz
from rnea_ros.khalil.closed_loop import ClosedLoopRobot
from rnea_ros.khalil.kinematics import poses
from rnea_ros.khalil.mdh import make_table
from rnea_ros.khalil.mdh_files import data_path, load_mdh
from rnea_ros.khalil.newton_euler import inertia_matrix
from rnea_ros.khalil.parallel import Leg, ParallelRobot

GRAVITY = (0.0, -9.81, 0.0)
PLANAR = np.eye(6)[:, [0, 1, 5]]           # platform moves along x, y and turns about z


def rpr3_parallel(table):
    """Return the 3-RPR of data/rpr3.yaml as a ParallelRobot (legs = frames 1-2, 4-5, 6-7)."""
    legs = []
    for (ja, jp), attach, q0 in zip(((1, 2), (4, 5), (6, 7)),
                                    ((0, 0, 0), (0.3, 0, 0), (0, 0.25, 0)),
                                    ((0.8, 0.5), (2.3, 0.5), (-0.9, 0.5))):
        fa, fp = table.frame(ja), table.frame(jp)
        leg = make_table([replace(fa, j=1, a=0), replace(fp, j=2, a=1)], name=f'leg_{fp.name}')
        legs.append(Leg(leg, attach, q0=q0))
    return ParallelRobot(legs, table.frame(3).inertia_about_origin(), dof=PLANAR)


def platform_motion(t):
    """Return the platform pose, screw and its derivative at time t (planar motion)."""
    x, y = 0.35 + 0.05 * np.sin(2 * t), 0.35 + 0.04 * np.cos(3 * t)
    phi = 0.2 + 0.1 * np.sin(1.5 * t)
    V = np.array([0.1 * np.cos(2 * t), -0.12 * np.sin(3 * t), 0, 0, 0,
                  0.15 * np.cos(1.5 * t)])
    dV = np.array([-0.2 * np.sin(2 * t), -0.36 * np.cos(3 * t), 0, 0, 0,
                   -0.225 * np.sin(1.5 * t)])
    return rotz(phi), np.array([x, y, 0.0]), V, dV, phi


def test_rpr3_parallel_method_matches_the_closed_loop_method():
    """Eq. (66) on platform + legs equals G^T Gamma_tr (eq. 55) on the equivalent tree."""
    table = load_mdh(data_path('rpr3.yaml'))
    robot, closed = rpr3_parallel(table), ClosedLoopRobot(table)
    worst = 0.0
    for t in np.linspace(0.0, 4.0, 15):
        R, p, V, dV, phi = platform_motion(t)
        gamma, legs = robot.inverse_dynamics(R, p, V, dV, gravity=GRAVITY)
        (q1, r1), (q4, r2), (q6, r3) = (leg.q for leg in legs)
        guess = [q1, r1, phi - q1, q4, r2, q6, r3, phi - q4, phi - q6]
        qa, qda, qdda = (np.array([leg_x[1] for leg_x in xs]) for xs in
                         ([leg.q for leg in legs], [leg.qd for leg in legs],
                          [leg.qdd for leg in legs]))
        gamma_c = closed.inverse_dynamics(qa, qda, qdda, gravity=GRAVITY, guess=guess)
        worst = max(worst, np.abs(gamma - gamma_c).max())
    assert worst < 1e-9


def test_rpr3_virtual_work_with_velocities_from_finite_differences():
    """Gamma . qd_a = F_p . V_p + sum Gamma_i . qd_i, qd_a and qd_i by differentiating the IK."""
    robot = rpr3_parallel(load_mdh(data_path('rpr3.yaml')))
    h = 1e-4
    for t in np.linspace(0.3, 3.0, 8):
        R, p, V, dV, _ = platform_motion(t)
        gamma, legs = robot.inverse_dynamics(R, p, V, dV, gravity=GRAVITY)
        q_of_t = []
        for s in (t - h, t + h):
            Rs, ps, *_ = platform_motion(s)
            q_of_t.append([robot.leg_inverse_kinematics(i, ps + Rs @ leg.attach)
                           for i, leg in enumerate(robot.legs)])
        qd_legs = [(b - a) / (2 * h) for a, b in zip(*q_of_t)]
        qd_a = np.array([qd[1] for qd in qd_legs])
        power = robot.platform_wrench(R, V, dV, gravity=GRAVITY) @ V + sum(
            leg.Gamma @ qd for leg, qd in zip(legs, qd_legs))
        assert gamma @ qd_a == pytest.approx(power, abs=1e-7)
        for leg, qd in zip(legs, qd_legs):
            assert np.allclose(leg.qd, qd, atol=1e-7)


def gough_stewart():
    """Return a 6-UPS Gough-Stewart platform: legs = universal joint (2 R) + prismatic."""
    rng = np.random.default_rng(20)
    legs = []
    for k in range(6):
        ang = 2 * np.pi * k / 6 + (0.3 if k % 2 else -0.3)
        base = 0.5 * np.array([np.cos(ang), np.sin(ang)])
        pang = 2 * np.pi * k / 6 + (0.9 if k % 2 else -0.9)
        attach = (0.25 * np.cos(pang), 0.25 * np.sin(pang), 0.0)
        rows = [
            {'j': 1, 'a': 0, 'gamma': np.arctan2(base[1], base[0]), 'd': np.hypot(*base),
             'theta': -np.arctan2(base[1], base[0]), 'XX': 0.01, 'YY': 0.01, 'ZZ': 0.01,
             'M': 0.5},
            {'j': 2, 'a': 1, 'alpha': np.pi / 2, 'XX': 0.02, 'YY': 0.02, 'ZZ': 0.01,
             'M': 0.5, 'MX': 0.02},
            {'j': 3, 'a': 2, 'mu': 1, 'sigma': 1, 'alpha': np.pi / 2, 'XX': 0.05, 'YY': 0.05,
             'ZZ': 0.001, 'MZ': -0.15, 'M': 0.8, 'Ia': rng.uniform(0, 0.1), 'Fv': 1.0},
        ]
        legs.append(Leg(make_table(rows, name=f'leg{k}'), attach, q0=(0.0, 0.0, 1.0)))
    J = np.diag([0.05, 0.05, 0.09]) + 0.004
    return ParallelRobot(legs, (2.0, (0.02, -0.01, 0.05), J))


def test_gough_stewart_power_balance():
    """Spatial case (eq. 65 with spherical joints): Gamma . qd_a = dE/dt + friction losses."""
    robot = gough_stewart()
    h = 1e-4

    def state(t):
        """Return R, p, V, dV of the platform: R = Rz(a(t)) Rx(b(t)), p(t) analytic."""
        a, da, dda = 0.3 * np.sin(t), 0.3 * np.cos(t), -0.3 * np.sin(t)
        b, db, ddb = 0.2 * np.sin(2 * t), 0.4 * np.cos(2 * t), -0.8 * np.sin(2 * t)
        p = np.array([0.02 * np.sin(t), 0.03 * np.cos(2 * t), 0.9 + 0.05 * np.sin(3 * t)])
        dp = np.array([0.02 * np.cos(t), -0.06 * np.sin(2 * t), 0.15 * np.cos(3 * t)])
        ddp = np.array([-0.02 * np.sin(t), -0.12 * np.cos(2 * t), -0.45 * np.sin(3 * t)])
        z, x = np.array([0.0, 0.0, 1.0]), rotz(a) @ [1.0, 0.0, 0.0]
        w = da * z + db * x
        dw = dda * z + ddb * x + db * da * np.cross(z, x)
        return rotz(a) @ rotx(b), p, np.concatenate([dp, w]), np.concatenate([ddp, dw])

    t = 0.7
    gamma, legs = robot.inverse_dynamics(*state(t))
    energies = []
    for s in (t - h, t + h):
        R, p, V, _ = state(s)
        st = robot.leg_states(R, p, V, np.zeros(6))
        E = 0.0
        for tree, leg in zip(robot.trees, st):
            T = poses(tree, leg.q)
            E += 0.5 * leg.qd @ inertia_matrix(tree, leg.q) @ leg.qd
            E += sum(9.81 * (tree.M[j] * T[j, 2, 3] + (T[j, :3, :3] @ tree.MS[j])[2])
                     for j in range(tree.n))
        MS, J = R @ robot.MS, R @ robot.J @ R.T
        v, w = V[:3], V[3:]
        E += 0.5 * robot.M * v @ v + v @ np.cross(w, MS) + 0.5 * w @ J @ w
        E += 9.81 * (robot.M * p[2] + MS[2])
        energies.append(E)
    losses = sum(tree.Fv @ leg.qd ** 2 for tree, leg in zip(robot.trees, legs))
    qd_a = np.array([leg.qd[2] for leg in legs])
    assert gamma @ qd_a == pytest.approx((energies[1] - energies[0]) / (2 * h) + losses,
                                         rel=1e-7)


def test_unreachable_platform_and_bad_inputs():
    """Clear errors for a pose the legs cannot reach and for malformed inputs."""
    robot = rpr3_parallel(load_mdh(data_path('rpr3.yaml')))
    R, p, V, dV, _ = platform_motion(0.0)
    with pytest.raises(ValueError, match='finite'):
        robot.inverse_dynamics(R, p, V * np.nan, dV)
    with pytest.raises(ValueError, match='platform'):
        robot.inverse_dynamics(R, p + [0, 0, 0.5], V, dV)
    with pytest.raises(ValueError, match='dof'):
        ParallelRobot(robot.legs, (1.0, np.zeros(3), np.eye(3)))
