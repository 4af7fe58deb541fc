"""The dynamics core agrees with Pinocchio on real robots from example-robot-data."""

import numpy as np
import pytest

from rnea_ros import (inverse_dynamics, last_reaction_wrenches, reaction_wrenches, RobotModel,
                      Workspace)
from robots import all_urdfs, PinocchioOracle, random_state, URDF, urdf_path

pytest.importorskip('pinocchio')

TOL = 1e-12     # per joint, relative to the largest effort (measured error ~1e-15)


def relative_error(ours, theirs):
    """Return max |ours - theirs| relative to the largest magnitude (at least 1)."""
    return np.abs(ours - theirs).max(initial=0.0) / max(1.0, np.abs(theirs).max(initial=0.0))


def some_wrenches(model, rng):
    """Return external wrenches on three links, one of them a link merged by a fixed joint."""
    links = list(model.body_links[-2:])
    merged = [lk for lk in model.link_names if lk not in model.body_links
              and model.link_body[lk][0] >= 0]
    links += merged[:1]
    return {lk: rng.normal(size=6) * 10.0 for lk in links}


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', sorted(URDF))
def test_torques_and_reaction_wrenches_match_pinocchio(robot, floating):
    path = urdf_path(robot)
    model = RobotModel.from_urdf_file(path, floating_base=floating)
    oracle = PinocchioOracle(model, path)
    rng = np.random.default_rng(42)
    for trial in range(5):
        q, qd, qdd = random_state(model, rng, scale=2.0)
        f_ext = some_wrenches(model, rng) if trial % 2 else None
        tau_pin, wrench_pin = oracle.rnea(q, qd, qdd, f_ext)
        assert relative_error(inverse_dynamics(model, q, qd, qdd, f_ext=f_ext), tau_pin) < TOL
        assert relative_error(reaction_wrenches(model, q, qd, qdd, f_ext=f_ext),
                              wrench_pin) < TOL


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', sorted(URDF))
def test_wrenches_left_by_one_inverse_dynamics_pass_match_pinocchio(robot, floating):
    """After one inverse_dynamics pass, last_reaction_wrenches is Pinocchio's data.f.

    Both on the plain fast path (the model's workspace) and after a checked call with f_ext and
    gravity into a caller's workspace; joint friction does not enter f_i.
    """
    path = urdf_path(robot)
    model = RobotModel.from_urdf_file(path, floating_base=floating)
    oracle = PinocchioOracle(model, path)
    rng = np.random.default_rng(7)
    ws = Workspace(model)
    for trial in range(4):
        q, qd, qdd = random_state(model, rng, scale=2.0)
        f_ext = some_wrenches(model, rng) if trial % 2 else None
        _, wrench_pin = oracle.rnea(q, qd, qdd, f_ext)
        if f_ext is None:
            inverse_dynamics(model, q, qd, qdd)
            assert relative_error(last_reaction_wrenches(model), wrench_pin) < TOL
        inverse_dynamics(model, q, qd, qdd, f_ext=f_ext, gravity=(0.0, 0.0, -9.81), ws=ws)
        assert relative_error(last_reaction_wrenches(model, ws), wrench_pin) < TOL
    with_friction = RobotModel.from_urdf_file(
        path, floating_base=floating, friction_viscous=dict.fromkeys(model.joint_names, 3.0))
    inverse_dynamics(with_friction, q, qd, qdd)
    assert relative_error(last_reaction_wrenches(with_friction),
                          reaction_wrenches(with_friction, q, qd, qdd)) < TOL
    with pytest.raises(ValueError, match='workspace'):
        other = 'ur5' if robot == 'talos_reduced' else 'talos_reduced'
        last_reaction_wrenches(model, Workspace(RobotModel.from_urdf_file(urdf_path(other))))


# URDFs of example-robot-data known to be invalid: they may skip, by name; any other load failure
# fails the test.
KNOWN_INVALID = {
    'romeo_description/urdf/romeo_laas_small.urdf': 'inertia is not positive semi-definite',
    'ur_description/urdf/ur3.urdf': 'the robot has no name (no URDF library loads it)',
}


def wrenches_on_every_link(model, rng, scale=10.0):
    """Return an external wrench on every link of the URDF: root, bodies and merged links."""
    return {lk: rng.normal(size=6) * scale for lk in model.link_names}


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('rel', all_urdfs())
def test_every_example_robot_matches_pinocchio(rel, floating):
    """Every valid URDF of example-robot-data, fixed and floating base, fast states, wrenches.

    Three random states with |qd| and |qdd| up to 10 and an external wrench on every link
    (the root included): each joint's torque within 1e-12 of the largest effort.
    """
    if rel in KNOWN_INVALID:
        with pytest.raises(ValueError):
            RobotModel.from_urdf_file(urdf_path(rel), floating_base=floating)
        pytest.skip(f'{rel}: {KNOWN_INVALID[rel]}')
    model = RobotModel.from_urdf_file(urdf_path(rel), floating_base=floating)
    oracle = PinocchioOracle(model, urdf_path(rel))
    rng = np.random.default_rng(7)
    for _ in range(3):
        q, qd, qdd = random_state(model, rng, scale=10.0)
        f_ext = wrenches_on_every_link(model, rng)
        tau_pin, _ = oracle.rnea(q, qd, qdd, f_ext)
        tau = inverse_dynamics(model, q, qd, qdd, f_ext=f_ext)
        scale = max(1.0, np.abs(tau_pin).max(initial=0.0))
        assert np.abs(tau - tau_pin).max(initial=0.0) <= 1e-12 * scale, rel


def test_custom_joint_order_permutes_torques():
    path = urdf_path('panda')
    tree = RobotModel.from_urdf_file(path)
    order = list(reversed(tree.joint_names))
    model = RobotModel.from_urdf_file(path, joint_names=order)
    assert model.joint_names == tuple(order)
    q, qd, qdd = random_state(tree, np.random.default_rng(3))
    perm = [tree.joint_names.index(n) for n in order]
    np.testing.assert_allclose(inverse_dynamics(model, q[perm], qd[perm], qdd[perm]),
                               inverse_dynamics(tree, q, qd, qdd)[perm], rtol=0, atol=1e-12)


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
def test_link_pose_matches_pinocchio_frames(floating):
    """Forward kinematics of every link (merged ones included) equals Pinocchio's frames."""
    from rnea_ros.core.reference import link_pose
    path = urdf_path('talos_reduced')
    model = RobotModel.from_urdf_file(path, floating_base=floating)
    oracle = PinocchioOracle(model, path)
    pin = oracle.pin
    q, _, _ = random_state(model, np.random.default_rng(5))
    qp, _, _ = oracle.to_pin(q, np.zeros(model.nv), np.zeros(model.nv))
    pin.framesForwardKinematics(oracle.pm, oracle.pd, qp)
    for link in model.link_names:
        if not oracle.pm.existFrame(link, pin.FrameType.BODY):
            continue
        M = oracle.pd.oMf[oracle.pm.getFrameId(link, pin.FrameType.BODY)]
        R, p = link_pose(model, q, link)
        np.testing.assert_allclose(R, M.rotation, atol=1e-12)
        np.testing.assert_allclose(p, M.translation, atol=1e-12)
