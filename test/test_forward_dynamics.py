"""Mass matrix, forward dynamics, friction and armature, free and moving bases (issue 6)."""

import numpy as np
import pytest

from rnea_ros import (bias_forces, floating_base_inverse_dynamics, forward_dynamics,
                      gravity_torques, inverse_dynamics, mass_matrix, RobotModel)
from rnea_ros.core.checks import external_wrenches
from rnea_ros.core.reference import aba
from robots import PinocchioOracle, random_state, urdf_path

ROBOTS = ['panda', 'ur5', 'talos_reduced', 'go2', 'double_pendulum_continuous']
CASES = [(r, f) for r in ROBOTS for f in (False, True)]


def ids(case):
    return f'{case[0]}-{"floating" if case[1] else "fixed"}'


@pytest.fixture(params=CASES, ids=ids)
def case(request):
    robot, floating = request.param
    return RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating), urdf_path(robot)


def columns(model, q):
    zero = np.zeros(model.nv)
    return np.column_stack([inverse_dynamics(model, q, zero, e, gravity=(0, 0, 0))
                            for e in np.eye(model.nv)])


def test_crba_equals_rnea_columns_and_pinocchio(case):
    model, path = case
    q, _, _ = random_state(model, np.random.default_rng(1))
    H = mass_matrix(model, q)
    np.testing.assert_allclose(H, columns(model, q), rtol=0, atol=1e-10)
    np.testing.assert_allclose(H, H.T, rtol=0, atol=1e-12)
    assert np.linalg.eigvalsh(H).min() > 0.0
    oracle = PinocchioOracle(model, path)
    qp, _, _ = oracle.to_pin(q, np.zeros(model.nv), np.zeros(model.nv))
    Hp = oracle.pin.crba(oracle.pm, oracle.pd, qp)
    Hp = np.triu(Hp) + np.triu(Hp, 1).T
    Hp = Hp[np.ix_(oracle.vidx, oracle.vidx)]
    assert np.abs(H - Hp).max() <= 1e-8 * max(1.0, np.abs(Hp).max())


def test_aba_solves_equation_of_motion_and_matches_pinocchio(case):
    model, path = case
    rng = np.random.default_rng(2)
    q, qd, _ = random_state(model, rng)
    tau = rng.normal(size=model.nv) * 5.0
    f_ext = {model.body_links[-1]: rng.normal(size=6)}
    qdd = forward_dynamics(model, q, qd, tau, f_ext=f_ext)
    H = mass_matrix(model, q)
    expected = np.linalg.solve(H, tau - bias_forces(model, q, qd, f_ext=f_ext))
    assert np.abs(qdd - expected).max() <= 1e-8 * max(1.0, np.abs(expected).max())
    ref = aba(model, q, qd, tau, external_wrenches(model, f_ext))
    assert np.abs(qdd - ref).max() <= 1e-10 * max(1.0, np.abs(ref).max())
    oracle = PinocchioOracle(model, path)
    qp, vp, _ = oracle.to_pin(q, qd, np.zeros(model.nv))
    tp = np.zeros(oracle.pm.nv)
    tp[oracle.vidx] = tau
    ap = oracle.pin.aba(oracle.pm, oracle.pd, qp, vp, tp, oracle.fext(f_ext))
    assert np.abs(qdd - ap[oracle.vidx]).max() <= 1e-8 * max(1.0, np.abs(ap).max())


def test_inverse_then_forward_round_trip_with_friction_and_armature():
    path = urdf_path('panda')
    plain = RobotModel.from_urdf_file(path)
    names = plain.joint_names
    model = RobotModel.from_urdf_file(
        path, friction_viscous={n: 0.5 + 0.1 * i for i, n in enumerate(names)},
        friction_coulomb=dict.fromkeys(names, 0.3),
        armature={n: 0.05 * (i + 1) for i, n in enumerate(names)})
    rng = np.random.default_rng(3)
    for _ in range(5):
        q, qd, qdd = random_state(model, rng)
        tau = inverse_dynamics(model, q, qd, qdd)
        np.testing.assert_allclose(forward_dynamics(model, q, qd, tau), qdd, rtol=0, atol=1e-9)
        # what the joint terms add opposes the motion (friction) or stores energy (armature):
        friction = tau - inverse_dynamics(plain, q, qd, qdd) - model.armature * qdd
        moving = np.abs(qd) > 0.01
        assert (np.sign(friction[moving]) == np.sign(qd[moving])).all()
        assert (np.abs(friction[moving]) >= 0.3).all()          # at least the Coulomb level
    np.testing.assert_allclose(mass_matrix(model, q) - mass_matrix(plain, q),
                               np.diag(model.armature), atol=1e-12)
    # gravity compensation leaves friction out (qd = 0) and armature out (qdd = 0)
    np.testing.assert_allclose(gravity_torques(model, q), gravity_torques(plain, q), atol=1e-12)


SPINNER = ('<robot name="spinner"><link name="base"/><link name="disc"><inertial>'
           '<mass value="2"/><inertia ixx="1" iyy="1" izz="0.5" ixy="0" ixz="0" iyz="0"/>'
           '</inertial></link><joint name="spin" type="continuous"><parent link="base"/>'
           '<child link="disc"/><axis xyz="0 0 1"/></joint></robot>')


def spin(model, qd0, torque, seconds, dt=2e-4):
    """Simulate the spinner (gravity along its axis) from rest at q = 0; return q(t), qd(t)."""
    q, qd = np.zeros(1), np.array([qd0], dtype=float)
    qs, qds = [], []
    for _ in range(int(round(seconds / dt))):
        qd = qd + dt * forward_dynamics(model, q, qd, [torque])
        q = q + dt * qd
        qs.append(q[0])
        qds.append(qd[0])
    return np.array(qs), np.array(qds)


def test_coulomb_friction_stops_sticks_and_slides_like_dry_friction():
    """A disc (izz 0.5) with 2 N m of Coulomb friction, simulated by forward dynamics.

    Coasting at 1 rad/s it decelerates at 2 / 0.5 = 4 rad/s^2 and stops after 0.25 s without
    turning back; pushed with 1 N m (below the friction) it creeps at most at the band speed;
    pushed with 4 N m it accelerates at (4 - 2) / 0.5 = 4 rad/s^2.  The band (sign(qd) linear
    inside |qd| < band) shows as a creep at the speed where the linear friction equals 1 N m.
    """
    model = RobotModel.from_urdf_string(SPINNER, friction_coulomb={'spin': 2.0})
    band = model.coulomb_band
    q, qd = spin(model, 1.0, 0.0, 0.5)
    assert qd[int(0.1 / 2e-4)] == pytest.approx(1.0 - 4.0 * 0.1, abs=1e-3)
    assert np.all(np.diff(q) >= -1e-12)                  # never turns back
    assert abs(qd[-1]) < band and q[-1] == pytest.approx(1.0 / (2 * 4.0), abs=2e-3)
    q, qd = spin(model, 0.0, 1.0, 0.5)
    assert np.abs(qd).max() <= band and q[-1] <= 0.5 * band
    assert qd[-1] == pytest.approx(0.5 * band, rel=1e-3)  # creeps where band-linear friction = 1
    assert forward_dynamics(model, [0.0], [1.5 * band], [0.0])[0] == pytest.approx(-4.0)
    q, qd = spin(model, 0.0, 4.0, 0.5)
    assert qd[-1] == pytest.approx(4.0 * 0.5, abs=0.01)
    assert forward_dynamics(model, [0.0], [-1.0], [0.0])[0] == pytest.approx(4.0)


def test_friction_power_is_dissipated_in_a_coasting_simulation():
    """Without gravity or torque the panda's energy falls with friction and is kept without."""
    path = urdf_path('panda')
    names = RobotModel.from_urdf_file(path).joint_names
    rng = np.random.default_rng(6)
    q0, qd0, _ = random_state(RobotModel.from_urdf_file(path), rng, scale=2.0)
    for friction, kept in ((False, True), (True, False)):
        model = RobotModel.from_urdf_file(
            path, friction_viscous=dict.fromkeys(names, 0.5 if friction else 0.0),
            friction_coulomb=dict.fromkeys(names, 0.3 if friction else 0.0))
        q, qd, dt, energies = q0.copy(), qd0.copy(), 1e-4, []
        for _ in range(400):
            # midpoint (RK2) steps of forward dynamics in zero gravity
            k1 = forward_dynamics(model, q, qd, np.zeros(9), gravity=(0, 0, 0))
            qm, qdm = q + 0.5 * dt * qd, qd + 0.5 * dt * k1
            q = q + dt * qdm
            qd = qd + dt * forward_dynamics(model, qm, qdm, np.zeros(9), gravity=(0, 0, 0))
            energies.append(0.5 * qd @ mass_matrix(model, q) @ qd)
        drift = abs(energies[-1] - energies[0]) / energies[0]
        if kept:
            assert drift < 1e-4
        else:
            assert np.all(np.diff(energies) < 0.0) and drift > 0.01


def test_friction_from_urdf_and_explicit_override():
    xml = ('<robot name="r"><link name="a"/><link name="b"><inertial><mass value="1"/>'
           '<inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" iyz="0"/></inertial></link>'
           '<joint name="j" type="revolute"><parent link="a"/><child link="b"/>'
           '<axis xyz="0 0 1"/><dynamics damping="0.7" friction="0.2"/></joint></robot>')
    assert RobotModel.from_urdf_string(xml).friction_viscous.tolist() == [0.0]
    model = RobotModel.from_urdf_string(xml, friction_from_urdf=True,
                                        friction_viscous={'j': 0.9})
    assert model.friction_viscous.tolist() == [0.9]
    assert model.friction_coulomb.tolist() == [0.2]
    with pytest.raises(ValueError, match="armature names joint 'x'"):
        RobotModel.from_urdf_string(xml, armature={'x': 1.0})
    with pytest.raises(ValueError, match='must be finite and >= 0'):
        RobotModel.from_urdf_string(xml, armature={'j': -1.0})


def test_singular_mass_matrix_names_the_joint():
    xml = ('<robot name="r"><link name="a"/><link name="b"/>'
           '<joint name="massless" type="revolute"><parent link="a"/><child link="b"/>'
           '<axis xyz="0 0 1"/></joint></robot>')
    model = RobotModel.from_urdf_string(xml)
    with pytest.raises(ValueError, match="singular at joint 'massless'"):
        forward_dynamics(model, [0.0], [0.0], [1.0])
    ok = RobotModel.from_urdf_string(xml, armature={'massless': 0.1})
    assert forward_dynamics(ok, [0.0], [0.0], [1.0])[0] == pytest.approx(10.0)


@pytest.mark.parametrize('robot', ['talos_reduced', 'go2'])
def test_free_floating_base_acceleration(robot):
    model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=True)
    rng = np.random.default_rng(4)
    q, v, qdd = random_state(model, rng)
    f_ext = {model.body_links[-1]: rng.normal(size=6)}
    for wrench in (None, rng.normal(size=6) * 10):
        a_b, tau_j = floating_base_inverse_dynamics(model, q, v, qdd[6:], f_ext=f_ext,
                                                    base_wrench=wrench)
        tau = inverse_dynamics(model, q, v, np.concatenate([a_b, qdd[6:]]), f_ext=f_ext)
        np.testing.assert_allclose(tau[:6], np.zeros(6) if wrench is None else wrench,
                                   atol=1e-9)
        np.testing.assert_allclose(tau[6:], tau_j, atol=1e-9)
    # Pinocchio: ABA with zero base wrench and these joint torques gives the same accelerations
    a_b, tau_j = floating_base_inverse_dynamics(model, q, v, qdd[6:], f_ext=f_ext)
    oracle = PinocchioOracle(model, urdf_path(robot))
    qp, vp, _ = oracle.to_pin(q, v, np.zeros(model.nv))
    tp = np.zeros(oracle.pm.nv)
    tp[oracle.vidx] = np.concatenate([np.zeros(6), tau_j])
    ap = oracle.pin.aba(oracle.pm, oracle.pd, qp, vp, tp, oracle.fext(f_ext))[oracle.vidx]
    np.testing.assert_allclose(ap, np.concatenate([a_b, qdd[6:]]), atol=1e-8)


def test_moving_base_acceleration_is_fictitious_gravity():
    """A base accelerating up at 2 m/s^2 weighs like gravity 11.81; rotation adds Euler terms."""
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    q, qd, qdd = random_state(model, np.random.default_rng(5))
    np.testing.assert_allclose(
        inverse_dynamics(model, q, qd, qdd, base_acceleration=[0, 0, 2.0, 0, 0, 0]),
        inverse_dynamics(model, q, qd, qdd, gravity=[0, 0, -11.81]), atol=1e-10)
    floating = RobotModel.from_urdf_file(urdf_path('ur5'), floating_base=True)
    a_b = np.array([0.3, -0.2, 1.0, 0.4, 0.1, -0.5])
    qf = np.concatenate([np.zeros(3), [0, 0, 0, 1.0], q])
    tau_f = inverse_dynamics(floating, qf, np.concatenate([np.zeros(6), qd]),
                             np.concatenate([a_b, qdd]))
    np.testing.assert_allclose(inverse_dynamics(model, q, qd, qdd, base_acceleration=a_b),
                               tau_f[6:], atol=1e-10)
    with pytest.raises(ValueError, match='fixed-base models'):
        inverse_dynamics(floating, qf, np.zeros(12), np.zeros(12), base_acceleration=a_b)
