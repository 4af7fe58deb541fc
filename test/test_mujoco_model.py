"""The URDF-to-MuJoCo conversion reproduces the rnea_ros dynamics (and so the URDF)."""
import os

import mujoco
import numpy as np
import pytest

from rnea_ros import bias_forces, gravity_torques, inverse_dynamics, RobotModel
from rnea_ros.sim.mujoco_model import (build_mujoco_model, check_efforts,
                                       default_initial_positions, joint_addresses, prepare_urdf,
                                       Simulation)
from rnea_ros.sim.urdf_tools import example_robot_data_dir, resolve_mesh_path, urdf_joints

ROBOTS = ('panda_description/urdf/panda.urdf', 'ur_description/urdf/ur5_robot.urdf',
          'talos_data/robots/talos_reduced.urdf')

SMALL_URDF = """<robot name="small">
  <link name="base"/>
  <link name="arm">
    <visual><geometry><mesh filename="package://no_such_package/arm.stl"/></geometry></visual>
    <collision><geometry><mesh filename="arm.dae"/></geometry></collision>
    <collision><geometry><box size="0.1 0.1 0.4"/></geometry></collision>
    <inertial><origin xyz="0 0 0.2"/><mass value="2"/>
      <inertia ixx="0.03" iyy="0.03" izz="0.004" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="slider">
    <inertial><mass value="0.5"/>
      <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="tool">
    <inertial><origin xyz="0.05 0 0"/><mass value="0.3"/>
      <inertia ixx="0.001" iyy="0.001" izz="0.001" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="spin" type="continuous">
    <parent link="base"/><child link="arm"/><origin xyz="0 0 0.1" rpy="0.3 0 0"/>
    <axis xyz="0 1 0"/><dynamics damping="2.0" friction="1.0"/>
  </joint>
  <joint name="slide" type="prismatic">
    <parent link="arm"/><child link="slider"/><origin xyz="0 0 0.4"/><axis xyz="1 0 0"/>
    <limit lower="-0.2" upper="0.2" effort="50" velocity="1"/>
  </joint>
  <joint name="tool_mount" type="fixed">
    <parent link="slider"/><child link="tool"/><origin xyz="0 0.1 0"/>
  </joint>
</robot>"""


def robot_file(relative):
    """Return the path of an example-robot-data URDF."""
    return os.path.join(example_robot_data_dir(), relative)


def load(relative):
    """Return (urdf text, MuJoCo model, rnea_ros model, qpos/dof addresses in rnea order)."""
    path = robot_file(relative)
    with open(path) as stream:
        urdf = stream.read()
    model = build_mujoco_model(urdf, base_dir=os.path.dirname(path))
    robot = RobotModel.from_urdf_string(urdf)
    qpos, dof = joint_addresses(model, robot.joint_names)
    return urdf, model, robot, qpos, dof


def mujoco_state(model, qpos, dof, q, qd):
    """Return MjData at (q, qd) with position-dependent quantities computed."""
    data = mujoco.MjData(model)
    data.qpos[qpos] = q
    data.qvel[dof] = qd
    mujoco.mj_forward(model, data)
    return data


def random_state(robot, seed):
    """Return random (q, qd, qdd) within the joint limits."""
    rng = np.random.default_rng(seed)
    lower = np.maximum(robot.lower_limits, -np.pi)
    upper = np.minimum(robot.upper_limits, np.pi)
    q = rng.uniform(lower, upper)
    return q, rng.uniform(-1.0, 1.0, robot.nv), rng.uniform(-2.0, 2.0, robot.nv)


@pytest.mark.parametrize('relative', ROBOTS)
def test_mass_matrix_matches_rnea_columns(relative):
    """The MuJoCo joint-space inertia equals M(q) built column by column from ID(q, 0, e_i)."""
    _, model, robot, qpos, dof = load(relative)
    for seed in range(3):
        q, _, _ = random_state(robot, seed)
        data = mujoco_state(model, qpos, dof, q, np.zeros(robot.nv))
        full = np.zeros((model.nv, model.nv))
        mujoco.mj_fullM(model, data, full)
        columns = np.array([
            inverse_dynamics(robot, q, np.zeros(robot.nv), unit, gravity=np.zeros(3))
            for unit in np.eye(robot.nv)]).T
        np.testing.assert_allclose(full[np.ix_(dof, dof)], columns, atol=1e-10)


@pytest.mark.parametrize('relative', ROBOTS)
def test_bias_forces_match_rnea(relative):
    """The MuJoCo qfrc_bias (gravity + Coriolis) equals bias_forces; at rest, gravity_torques."""
    _, model, robot, qpos, dof = load(relative)
    for seed in range(3):
        q, qd, _ = random_state(robot, seed)
        data = mujoco_state(model, qpos, dof, q, qd)
        np.testing.assert_allclose(data.qfrc_bias[dof], bias_forces(robot, q, qd), atol=1e-10)
        at_rest = mujoco_state(model, qpos, dof, q, np.zeros(robot.nv))
        np.testing.assert_allclose(at_rest.qfrc_bias[dof], gravity_torques(robot, q),
                                   atol=1e-10)


@pytest.mark.parametrize('relative', ROBOTS)
def test_mj_rne_matches_inverse_dynamics(relative):
    """The MuJoCo recursive Newton-Euler (mj_rne with accelerations) equals inverse_dynamics."""
    _, model, robot, qpos, dof = load(relative)
    for seed in range(3):
        q, qd, qdd = random_state(robot, seed)
        data = mujoco_state(model, qpos, dof, q, qd)
        data.qacc[:] = 0.0
        data.qacc[dof] = qdd
        result = np.zeros(model.nv)
        mujoco.mj_rne(model, data, 1, result)
        np.testing.assert_allclose(result[dof], inverse_dynamics(robot, q, qd, qdd),
                                   atol=1e-9)


def test_every_urdf_link_is_a_body_and_only_moving_joints_are_joints():
    """No static body is fused away: every URDF link, even massless ones, is a MuJoCo body."""
    urdf, model, robot, _, _ = load(ROBOTS[0])
    bodies = {model.body(i).name for i in range(model.nbody)}
    assert set(robot.link_names) <= bodies
    assert {model.joint(i).name for i in range(model.njnt)} == set(robot.joint_names)
    assert [joint.name for joint in urdf_joints(urdf)] == list(robot.joint_names)


def test_damping_friction_armature_are_zero_unless_asked():
    """URDF damping/friction are removed by default and kept with urdf_dynamics=True."""
    plain = build_mujoco_model(SMALL_URDF)
    assert np.all(plain.dof_damping == 0.0)
    assert np.all(plain.dof_frictionloss == 0.0)
    assert np.all(plain.dof_armature == 0.0)
    asked = build_mujoco_model(SMALL_URDF, urdf_dynamics=True, armature=0.1)
    spin = joint_addresses(asked, ['spin'])[1][0]
    assert asked.dof_damping[spin] == pytest.approx(2.0)
    assert np.all(asked.dof_armature == pytest.approx(0.1))


@pytest.mark.parametrize('urdf_dynamics', [False, True])
def test_damping_option_is_viscous_friction_in_the_simulation(urdf_dynamics):
    """damping={joint: Fv} simulates a viscous torque -Fv qd and nothing else, at any speed.

    MuJoCo's joint damping holds a linear and polynomial coefficients; all three set to Fv gave
    6 N m at qd = -1 rad/s for Fv = 2 instead of 2 N m.
    """
    Fv = {'spin': 2.0, 'slide': 5.0}
    model = build_mujoco_model(SMALL_URDF, urdf_dynamics=urdf_dynamics, damping=Fv,
                               gravity=(0.0, 0.0, 0.0))
    names = list(Fv)
    dof = joint_addresses(model, names)[1]
    data = mujoco.MjData(model)
    for qd in (-1.0, 0.5, -3.0):
        data.qvel[:] = 0.0
        data.qvel[dof] = qd
        mujoco.mj_forward(model, data)
        np.testing.assert_allclose(data.qfrc_passive[dof], [-Fv[n] * qd for n in names],
                                   rtol=1e-12)


def test_small_robot_with_continuous_prismatic_and_fixed_joints_matches_rnea():
    """Continuous and prismatic joints and a fixed tool convert with the same dynamics."""
    model = build_mujoco_model(SMALL_URDF)
    robot = RobotModel.from_urdf_string(SMALL_URDF)
    qpos, dof = joint_addresses(model, robot.joint_names)
    q, qd, qdd = np.array([2.5, 0.1]), np.array([1.0, -0.3]), np.array([0.5, 2.0])
    data = mujoco_state(model, qpos, dof, q, qd)
    data.qacc[dof] = qdd
    result = np.zeros(model.nv)
    mujoco.mj_rne(model, data, 1, result)
    np.testing.assert_allclose(result[dof], inverse_dynamics(robot, q, qd, qdd), atol=1e-12)
    assert not model.jnt_limited[joint_addresses(model, ['spin'])[0][0]]


def test_unresolvable_meshes_are_dropped_and_primitives_kept():
    """A missing package mesh and an unsupported .dae are dropped; a box stays."""
    xml, dropped = prepare_urdf(SMALL_URDF)
    assert dropped == ['package://no_such_package/arm.stl', 'arm.dae']
    assert 'box' in xml and 'arm.stl' not in xml
    assert build_mujoco_model(SMALL_URDF).ngeom == 1


def test_resolvable_package_meshes_get_absolute_paths(tmp_path):
    """A package:// STL found in a share folder is kept with its absolute path."""
    mesh = tmp_path / 'share' / 'my_robot' / 'meshes' / 'arm.stl'
    mesh.parent.mkdir(parents=True)
    mesh.write_text('solid x\nendsolid x\n')
    uri = 'package://my_robot/meshes/arm.stl'
    assert resolve_mesh_path(uri, share_dirs=[str(tmp_path / 'share')]) == str(mesh)
    assert resolve_mesh_path('meshes/arm.stl', base_dir=str(mesh.parent.parent)) == str(mesh)
    assert resolve_mesh_path('http://example.org/arm.stl') is None
    xml, dropped = prepare_urdf(SMALL_URDF.replace('package://no_such_package/arm.stl', uri),
                                share_dirs=[str(tmp_path / 'share')])
    assert str(mesh) in xml and dropped == ['arm.dae']


def test_panda_collision_meshes_resolve_from_example_robot_data():
    """The panda's STL collision meshes are found; its .dae visuals are dropped."""
    with open(robot_file(ROBOTS[0])) as stream:
        xml, dropped = prepare_urdf(stream.read())
    assert dropped and all(uri.endswith('.dae') for uri in dropped)
    assert xml.count('.stl') == 9


def test_collisions_are_off_unless_asked():
    """Geometries do not collide by default; collisions=True keeps MuJoCo's contact flags."""
    assert np.all(build_mujoco_model(SMALL_URDF).geom_contype == 0)
    assert np.all(build_mujoco_model(SMALL_URDF, collisions=True).geom_contype == 1)


def test_mimic_constraint_removed_by_default_kept_when_asked():
    """The panda finger mimic becomes a joint equality only with mimic_constraints=True."""
    with open(robot_file(ROBOTS[0])) as stream:
        urdf = stream.read()
    assert build_mujoco_model(urdf).neq == 0
    assert build_mujoco_model(urdf, mimic_constraints=True).neq == 1


def test_gravity_and_timestep_are_applied():
    """Gravity and the physics step come from the arguments."""
    model = build_mujoco_model(SMALL_URDF, timestep=0.0005, gravity=(0.0, 1.0, -3.0))
    assert model.opt.timestep == 0.0005
    np.testing.assert_allclose(model.opt.gravity, [0.0, 1.0, -3.0])


@pytest.mark.parametrize('bad, message', [
    ('', 'empty'),
    ('<robot name="x"><link name="a"></robot>', 'malformed'),
    ('<sdf/>', 'not a URDF'),
])
def test_bad_urdf_raises_clear_value_error(bad, message):
    """Malformed input gives a ValueError that names the problem."""
    with pytest.raises(ValueError, match=message):
        build_mujoco_model(bad)


def test_bad_options_raise_value_error():
    """Invalid timestep, gravity or integrator are rejected."""
    with pytest.raises(ValueError, match='timestep'):
        build_mujoco_model(SMALL_URDF, timestep=0.0)
    with pytest.raises(ValueError, match='gravity'):
        build_mujoco_model(SMALL_URDF, gravity=(0.0, np.nan, 0.0))
    with pytest.raises(ValueError, match='integrator'):
        build_mujoco_model(SMALL_URDF, integrator='verlet')


def test_default_initial_positions_respect_limits():
    """Zero when allowed by the limits, mid-range otherwise (panda joint 4 excludes 0)."""
    with open(robot_file(ROBOTS[0])) as stream:
        joints = urdf_joints(stream.read())
    positions = default_initial_positions(joints)
    for joint, value in zip(joints, positions):
        assert joint.lower <= value <= joint.upper
    assert positions[3] == pytest.approx(0.5 * (joints[3].lower + joints[3].upper))
    assert positions[0] == 0.0


def make_panda_simulation(**kwargs):
    """Return (Simulation, rnea model) for the panda at a non-trivial pose."""
    _, model, robot, _, _ = load(ROBOTS[0])
    simulation = Simulation(model, robot.joint_names, **kwargs)
    q0 = np.array([0.3, -0.5, 0.2, -2.0, 0.1, 1.6, 0.7, 0.02, 0.02])
    simulation.set_state(q0)
    return simulation, robot, q0


def test_gravity_torques_hold_the_simulated_panda():
    """Applying rnea_ros gravity torques every step keeps the arm still (identity test)."""
    simulation, robot, q0 = make_panda_simulation()
    for _ in range(500):
        simulation.set_command(gravity_torques(robot, simulation.positions))
        simulation.step()
    assert np.abs(simulation.positions - q0).max() < 1e-9
    np.testing.assert_allclose(simulation.efforts, gravity_torques(robot, simulation.positions))


def test_zero_torque_lets_the_arm_fall():
    """Without commands the arm moves under gravity (the contrast of the demo)."""
    simulation, _, q0 = make_panda_simulation()
    for _ in range(200):
        simulation.step()
    assert np.abs(simulation.positions - q0).max() > 0.01
    assert np.all(simulation.efforts == 0.0)


def test_stale_command_drops_to_zero_effort():
    """A command is applied until it is older than command_timeout, then zero."""
    simulation, robot, _ = make_panda_simulation(command_timeout=0.01)
    command = gravity_torques(robot, simulation.positions)
    simulation.set_command(command)
    applied = [simulation.step() for _ in range(15)]
    assert all(np.array_equal(a, command) for a in applied[:11])
    assert all(not np.any(a) for a in applied[11:])


def test_command_order_and_clamping():
    """Commands follow command_joints order and are clamped to the effort limits."""
    simulation, robot, _ = make_panda_simulation(
        command_joints=['panda_joint2', 'panda_joint1'], effort_limits=[5.0, 100.0])
    simulation.set_command([-20.0, 3.0])
    applied = simulation.step()
    np.testing.assert_allclose(applied, [-5.0, 3.0])
    np.testing.assert_allclose(simulation.efforts[:3], [3.0, -5.0, 0.0])
    assert simulation.clamp_count == 1


@pytest.mark.parametrize('command, message', [
    ([1.0, 2.0], 'has 2 values, expected 9'),
    ([np.nan] * 9, 'NaN'),
])
def test_invalid_commands_are_rejected_and_previous_one_kept(command, message):
    """A wrong-length or NaN command raises ValueError and leaves the last valid one active."""
    simulation, robot, _ = make_panda_simulation()
    valid = gravity_torques(robot, simulation.positions)
    simulation.set_command(valid)
    with pytest.raises(ValueError, match=message):
        simulation.set_command(command)
    np.testing.assert_allclose(simulation.step(), valid)


def test_unknown_command_joint_is_rejected():
    """Command joints must be simulated joints."""
    _, model, robot, _, _ = load(ROBOTS[0])
    with pytest.raises(ValueError, match='not in the robot'):
        Simulation(model, robot.joint_names, ['panda_joint9'])


def test_check_efforts_returns_float_array():
    """Valid values come back as a float array of the expected length."""
    np.testing.assert_array_equal(check_efforts([1, 2], 2), [1.0, 2.0])
