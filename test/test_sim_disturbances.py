"""The simulator's known disturbances: a push on a link and a payload that appears.

Ground truth is checked twice: against what MuJoCo itself applies (the generalized force of
``xfrc_applied`` in ``qfrc_smooth``) and against rnea_ros's inverse dynamics with the same
external force and the same payload.
"""
import mujoco
import numpy as np
import pytest
import rclpy
from rclpy.parameter import Parameter
from rnea_ros import gravity_torques, inverse_dynamics, RobotModel
from rnea_ros.core.payload import model_with_payload, Payload
from rnea_ros.demo.analysis import load_record
from rnea_ros.sim.disturbances import (add_payload_body, Disturbances, PAYLOAD_BODY,
                                       PayloadSwitch, Push)
from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses, Simulation
from rnea_ros.sim.mujoco_sim import MujocoSimNode, SimulationLoop
from rnea_ros.sim.sim_launch import default_urdf_file, PANDA_POSE
from rnea_ros.sim.urdf_tools import read_urdf, urdf_joints
import ros_domains

PANDA = default_urdf_file()
URDF = read_urdf(PANDA)
JOINTS = [joint.name for joint in urdf_joints(URDF)]
POSE = np.array([PANDA_POSE[name] for name in JOINTS])
ROBOT = RobotModel.from_urdf_file(PANDA)


def simulation(urdf=URDF):
    """Return a panda Simulation at the demo pose, moving (so Coriolis terms are not zero)."""
    sim = Simulation(build_mujoco_model(urdf), JOINTS)
    sim.set_state(POSE, np.linspace(-0.5, 0.5, len(JOINTS)))
    return sim


def smooth_force(sim):
    """Return MuJoCo's qfrc_smooth (everything but constraints) at the simulation's state."""
    mujoco.mj_forward(sim.model, sim.data)
    return sim.data.qfrc_smooth[joint_addresses(sim.model, JOINTS)[1]].copy()


@pytest.mark.parametrize('link, force, point', [
    ('panda_link3', [0.0, 30.0, 0.0], [0.0, 0.05, 0.0]),
    ('panda_link5', [-20.0, 10.0, 25.0], [0.02, 0.0, -0.1]),
    ('panda_link7', [0.0, 0.0, -40.0], [0.0, 0.0, 0.1]),
    ('panda_hand', [15.0, -15.0, 0.0], [0.0, 0.0, 0.05])])
def test_push_ground_truth_is_j_transpose_f_as_mujoco_applies_it(link, force, point):
    """tau_ext = J_p^T f equals MuJoCo's generalized force of xfrc_applied and rnea's f_ext.

    The same wrench in rnea_ros (link frame, about the link origin) lowers the torques that hold
    the arm by exactly tau_ext.
    """
    sim = simulation()
    _, dofs = joint_addresses(sim.model, JOINTS)
    disturbances = Disturbances(sim.model, dofs, Push(link, force, point, 0.0, 0.01))
    free = smooth_force(sim)
    disturbances.before_step(sim.data, 0.0)
    pushed = smooth_force(sim)
    truth = disturbances.external_torque
    assert np.abs(truth).max() > 0.5
    np.testing.assert_allclose(pushed - free, truth, atol=1e-9)
    body = mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_BODY, link)
    rotation = sim.data.xmat[body].reshape(3, 3)
    np.testing.assert_array_equal(disturbances.rotation, rotation)
    np.testing.assert_allclose(disturbances.point,
                               sim.data.xpos[body] + rotation @ np.array(point), atol=1e-12)
    local_force = rotation.T @ np.array(force)
    wrench = np.r_[local_force, np.cross(point, local_force)]
    q = sim.positions
    np.testing.assert_allclose(
        gravity_torques(ROBOT, q) - gravity_torques(ROBOT, q, f_ext={link: wrench}), truth,
        atol=1e-9)


def test_push_acts_only_during_its_window():
    """Before and after [start, start + duration) nothing is applied and the record is zero."""
    sim = simulation()
    _, dofs = joint_addresses(sim.model, JOINTS)
    disturbances = Disturbances(sim.model, dofs, Push('panda_link4', [0, 0, 30.0], [0, 0, 0],
                                                      0.010, 0.005))
    active = []
    for _ in range(20):
        disturbances.before_step(sim.data, sim.time)
        active.append(bool(np.any(sim.data.xfrc_applied)))
        assert np.any(disturbances.external_torque) == active[-1]
        assert np.any(disturbances.force) == active[-1]
        sim.step()
    assert active == [False] * 10 + [True] * 5 + [False] * 5


@pytest.mark.parametrize('mass, com, inertia', [
    (0.5, [0.0, 0.0, 0.05], [1e-3, 1e-3, 1e-3, 0.0, 0.0, 0.0]),
    (3.0, [0.05, -0.08, 0.1], [0.02, 0.015, 0.01, 0.002, -0.001, 0.003])])
def test_payload_switch_on_changes_gravity_torques_by_the_payloads(mass, com, inertia):
    """Before the switch MuJoCo's gravity torques are the robot's; after it, robot + payload's.

    Compared with rnea_ros's model_with_payload (the same rigid body on the same link), with
    the arm moving so that the payload's inertia shows in the Coriolis terms too.
    """
    payload = Payload('panda_link7', mass, com, inertia)
    sim = simulation(add_payload_body(URDF, 'panda_link7'))
    _, dofs = joint_addresses(sim.model, JOINTS)
    disturbances = Disturbances(sim.model, dofs, payload=PayloadSwitch(payload, 0.002))
    loaded = model_with_payload(URDF, payload)
    for _ in range(4):
        disturbances.before_step(sim.data, sim.time)
        q, qd = sim.positions, sim.velocities
        truth = loaded if disturbances.payload_on else ROBOT
        zero = np.zeros(len(JOINTS))
        mujoco.mj_forward(sim.model, sim.data)
        bias = sim.data.qfrc_bias[dofs]
        np.testing.assert_allclose(bias, inverse_dynamics(truth, q, qd, zero), atol=1e-9)
        sim.step()
    assert disturbances.payload_on
    assert sim.model.body_subtreemass[0] == pytest.approx(ROBOT.total_mass + mass)
    assert sim.model.body_mass[mujoco.mj_name2id(sim.model, mujoco.mjtObj.mjOBJ_BODY,
                                                 PAYLOAD_BODY)] == mass


def test_bad_disturbances_are_refused_with_the_reason():
    """Unknown links, non-finite forces and negative durations raise ValueError."""
    with pytest.raises(ValueError, match='push force'):
        Push('panda_link3', [0.0, np.nan, 0.0])
    with pytest.raises(ValueError, match='duration'):
        Push('panda_link3', [0.0, 1.0, 0.0], duration=-1.0)
    with pytest.raises(ValueError, match='not a link'):
        add_payload_body(URDF, 'no_such_link')
    sim = simulation()
    with pytest.raises(ValueError, match='no_such_link'):
        Disturbances(sim.model, [0], Push('no_such_link', [1.0, 0.0, 0.0]))


def test_simulator_node_records_push_and_payload_ground_truth(tmp_path):
    """mujoco_sim's push_* and payload_* parameters act and land in the record."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domains.pick())
    record = str(tmp_path / 'run.npz')
    try:
        values = {'urdf_file': PANDA, 'initial_positions': POSE.tolist(), 'duration': 0.03,
                  'real_time_factor': 0.0, 'record_file': record,
                  'push_link': 'panda_link5', 'push_force': [0.0, 25.0, 0.0],
                  'push_point': [0.0, 0.0, 0.05], 'push_start': 0.01, 'push_duration': 0.01,
                  'payload_link': 'panda_link7', 'payload_mass': 1.5,
                  'payload_com': [0.0, 0.0, 0.1], 'payload_time': 0.02}
        sim = MujocoSimNode(context=context, parameter_overrides=[
            Parameter(name, value=value) for name, value in values.items()])
        executor = rclpy.executors.SingleThreadedExecutor(context=context)
        executor.add_node(sim)
        loop = SimulationLoop(sim, executor)
        loop.run()
        loop.finish()
        sim.destroy_node()
    finally:
        rclpy.try_shutdown(context=context)
    saved = load_record(record)
    steps = len(saved['time'])
    assert steps == 31 and saved['external_torque'].shape == (steps, len(JOINTS))
    pushed = np.flatnonzero(np.any(saved['external_force'], axis=1))
    # row k holds what acted during the step that led to it: rows 11..20
    np.testing.assert_array_equal(pushed, np.arange(11, 21))
    assert np.allclose(saved['external_force'][pushed], [0.0, 25.0, 0.0])
    assert saved['external_rotation'].shape == (steps, 9)
    assert np.all(np.isfinite(saved['external_rotation'][pushed]))
    assert np.all(np.abs(saved['external_torque'][pushed]).max(axis=1) > 0.5)
    np.testing.assert_array_equal(np.flatnonzero(saved['payload_on']), np.arange(21, 31))
