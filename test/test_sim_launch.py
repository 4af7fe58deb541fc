"""The simulation launch helpers (demo scenario, MuJoCo demo and Gazebo launch setups)."""
import importlib.util
import os
import re
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest

from rnea_ros import RobotModel
from rnea_ros.sim.sim_launch import (COMMAND_TOPIC, DemoScenario, GAZEBO_ARGUMENTS, gazebo_setup,
                                     MUJOCO_DEMO_ARGUMENTS, mujoco_demo_nodes, PANDA_POSE,
                                     parse_initial_positions, REFERENCE_TOPIC)
from rnea_ros.sim.urdf_tools import example_robot_data_dir, urdf_joints

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OTHER_ROBOTS = ('ur_description/urdf/ur5_robot.urdf', 'talos_data/robots/talos_reduced.urdf')


def defaults(rows, **overrides):
    """Return a launch configuration with the declared defaults and some overrides."""
    config = {name: default for name, default, _ in rows}
    config.update(overrides)
    return config


def test_panda_scenario_uses_the_known_pose_within_limits():
    """The default robot is the panda at its demo pose; the reference stays inside limits."""
    scenario = DemoScenario()
    assert scenario.joint_names == list(PANDA_POSE)
    np.testing.assert_allclose(scenario.pose, list(PANDA_POSE.values()))
    check_reference_within_limits(scenario)


@pytest.mark.parametrize('relative', OTHER_ROBOTS)
def test_any_urdf_gets_a_pose_and_reference_within_limits(relative):
    """Other robots get a generic pose (35/65 % of range) and amplitudes inside the limits."""
    scenario = DemoScenario(os.path.join(example_robot_data_dir(), relative))
    assert len(scenario.pose) == len(RobotModel.from_urdf_file(scenario.urdf_file).joint_names)
    check_reference_within_limits(scenario)


def check_reference_within_limits(scenario):
    """Start pose and the sinusoid's far end (start + 2 amplitude) are within the limits."""
    far = scenario.pose + 2 * scenario.amplitudes
    for joint, start, end in zip(scenario.joints, scenario.pose, far):
        assert joint.lower <= start <= joint.upper
        assert joint.lower <= end <= joint.upper
    assert np.all(scenario.amplitudes != 0.0)


def test_scenario_parameters_connect_the_three_processes():
    """Simulator, node and reference agree on joints, topics, pose and timing."""
    scenario = DemoScenario()
    sim = scenario.sim_parameters(duration=2.0, lock_step=True, record_file='/tmp/r.npz')
    rnea = scenario.rnea_parameters('computed_torque')
    reference = scenario.reference_parameters(lock_step=True)
    assert sim['joints'] == rnea['command_joints'] == reference['joints']
    assert sim['command_topic'] == rnea['command_topic'] == COMMAND_TOPIC
    assert sim['sync_topic'] == reference['topic'] == REFERENCE_TOPIC
    assert sim['initial_positions'] == reference['start_positions']
    assert reference['use_sim_time'] and reference['start_time'] == 0.0
    assert reference['lookahead'] == 0.0
    free = scenario.reference_parameters(lock_step=False)
    assert free['lookahead'] == pytest.approx(1.0 / scenario.physics_rate)
    assert 'sync_topic' not in scenario.sim_parameters(lock_step=False)


def test_unusable_urdf_is_a_clear_error(tmp_path):
    """A missing file or a robot without moving joints raises ValueError."""
    with pytest.raises(ValueError, match='cannot read'):
        DemoScenario(str(tmp_path / 'missing.urdf'))
    static = tmp_path / 'static.urdf'
    static.write_text('<robot name="s"><link name="a"/></robot>')
    with pytest.raises(ValueError, match='no moving joints'):
        DemoScenario(str(static))


def test_mujoco_demo_nodes_per_mode():
    """computed_torque starts simulator, rnea node and reference; other modes no reference."""
    rows = mujoco_demo_nodes(defaults(MUJOCO_DEMO_ARGUMENTS, lock_step='true', kp='100.0'))
    assert [row[1] for row in rows] == ['mujoco_sim', 'rnea_node', 'reference_trajectory']
    sim, rnea, _ = (row[3] for row in rows)
    assert sim['lock_step'] is True and rnea['kp'] == [100.0]
    assert rnea['mode'] == 'computed_torque' and rnea['use_sim_time'] is True
    rows = mujoco_demo_nodes(defaults(MUJOCO_DEMO_ARGUMENTS, mode='gravity_compensation'))
    assert [row[1] for row in rows] == ['mujoco_sim', 'rnea_node']
    assert 'sync_topic' not in rows[0][3]


@pytest.mark.parametrize('mode', ['computed_torque', 'gravity_compensation'])
def test_lock_step_launch_times_the_node_as_the_demo_does(mode):
    """lock_step:=true: the node's steady-clock timeouts outlast the simulator's wait.

    On a loaded machine a process can stall longer than the node's defaults (0.1 s for the
    reference, 0.5 s for joint states): the launch file then gets the demo's parameters, so
    that a stall slows the run down instead of changing it (the node waits for the reference
    of its step, and never drops it or stops commanding while the simulator waits).
    """
    from rnea_ros.node.params import SPECS
    rows = mujoco_demo_nodes(defaults(MUJOCO_DEMO_ARGUMENTS, mode=mode, lock_step='true'))
    sim, rnea = rows[0][3], rows[1][3]
    scenario = DemoScenario()
    assert rnea == scenario.rnea_parameters(mode, use_sim_time=True, lock_step=True)
    wait = sim['lock_step_timeout']
    assert wait > SPECS['joint_state_timeout'].default
    assert rnea['joint_state_timeout'] > wait and rnea['desired_timeout'] > wait
    assert rnea['reference_sync'] is True
    free = mujoco_demo_nodes(defaults(MUJOCO_DEMO_ARGUMENTS, mode=mode))
    assert 'reference_sync' not in free[1][3] and 'lock_step_timeout' not in free[0][3]


def test_gazebo_setup_for_the_panda():
    """ros2_control URDF, controllers file, spawners, clock bridge and rnea parameters."""
    setup = gazebo_setup(defaults(GAZEBO_ARGUMENTS))
    root = ElementTree.fromstring(setup['robot_description'])
    assert root.find('ros2_control') is not None
    assert root.find('gazebo/plugin/parameters').text == setup['controllers_file']
    assert os.path.isfile(setup['controllers_file'])
    assert setup['command_joints'] == [j for j in PANDA_POSE if j != 'panda_finger_joint2']
    assert setup['rnea_parameters'] == {
        'mode': 'gravity_compensation', 'command_topic': COMMAND_TOPIC,
        'command_joints': setup['command_joints'], 'use_sim_time': True}
    assert setup['spawners'][0][0] == 'joint_state_broadcaster'
    assert setup['spawners'][1][:1] + setup['spawners'][1][-2:] == \
        ['effort_controller', '--param-file', setup['controllers_file']]
    assert setup['spawn_arguments'][:2] == ['-topic', 'robot_description']
    assert setup['bridge_arguments'] == ['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock']
    assert setup['gz_args'] == '-r empty.sdf'
    initial = {j.find('state_interface/param').text for j in root.iter('joint')
               if j.find('state_interface/param') is not None}
    assert str(PANDA_POSE['panda_joint4']) in initial


def test_gazebo_setup_other_robot_and_arguments(tmp_path):
    """Any URDF, explicit joints and initial positions, and the Humble plugin names."""
    urdf = os.path.join(example_robot_data_dir(), OTHER_ROBOTS[0])
    setup = gazebo_setup(defaults(GAZEBO_ARGUMENTS, urdf_file=urdf, gz_version='ignition',
                                  command_joints='shoulder_pan_joint, elbow_joint',
                                  initial_positions='elbow_joint=1.2', mode='computed_torque',
                                  controllers_file=str(tmp_path / 'c.yaml')))
    root = ElementTree.fromstring(setup['robot_description'])
    assert root.find('gazebo/plugin').get('filename') == 'ign_ros2_control-system'
    assert setup['command_joints'] == ['shoulder_pan_joint', 'elbow_joint']
    assert setup['controllers_file'] == str(tmp_path / 'c.yaml')
    assert setup['spawn_arguments'][-1] == 'ur5_robot'
    with open(urdf) as stream:
        assert len(root.find('ros2_control').findall('joint')) == len(urdf_joints(stream.read()))


def test_parse_initial_positions():
    """'a=1, b=-2' parses; an item without '=' is refused."""
    assert parse_initial_positions('a=1, b=-2.5') == {'a': 1.0, 'b': -2.5}
    assert parse_initial_positions('') == {}
    with pytest.raises(ValueError, match='joint=value'):
        parse_initial_positions('a')


def require_launch():
    """Skip unless the ROS 2 ``launch`` and ``launch_ros`` packages are importable.

    (The repository's own ``launch/`` folder would import as an empty namespace package, so
    the check looks for ``launch.LaunchDescription``.)
    """
    try:
        from launch import LaunchDescription  # noqa: F401
        import launch_ros.actions  # noqa: F401
    except ImportError as error:
        pytest.skip('launch/launch_ros not importable here ({}); they come with a ROS 2 '
                    'install, not from PyPI'.format(error))


def load_launch_file(filename):
    """Import a launch file and return its launch description (needs ``launch``)."""
    require_launch()
    path = os.path.join(ROOT, 'launch', filename)
    spec = importlib.util.spec_from_file_location(filename.replace('.', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


@pytest.mark.parametrize('filename, rows', [('mujoco_demo.launch.py', MUJOCO_DEMO_ARGUMENTS),
                                            ('gazebo.launch.py', GAZEBO_ARGUMENTS)])
def test_launch_file_loads_and_declares_its_arguments(filename, rows):
    """The launch file builds a description declaring every argument of its helper."""
    require_launch()
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    description = load_launch_file(filename)
    declared = {e.name for e in description.entities if isinstance(e, DeclareLaunchArgument)}
    assert declared == {name for name, _, _ in rows}
    assert any(isinstance(e, OpaqueFunction) for e in description.entities)


def test_mujoco_demo_launch_file_yields_the_three_nodes():
    """Executing the OpaqueFunction gives simulator, rnea node and reference publisher."""
    require_launch()
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.utilities import perform_substitutions
    from launch_ros.actions import Node
    description = load_launch_file('mujoco_demo.launch.py')
    context = LaunchContext()
    for argument in description.entities:
        if isinstance(argument, DeclareLaunchArgument):
            context.launch_configurations[argument.name] = perform_substitutions(
                context, argument.default_value)
    opaque = [e for e in description.entities if isinstance(e, OpaqueFunction)][0]
    nodes = [a for a in opaque.execute(context) if isinstance(a, Node)]
    # node_executable is a plain str in launch_ros 0.28, substitutions in older releases
    executables = [value if isinstance(value, str) else perform_substitutions(context, value)
                   for value in (node.node_executable for node in nodes)]
    assert executables == ['mujoco_sim', 'rnea_node', 'reference_trajectory']


def test_launch_files_are_valid_python():
    """Both launch files compile (checked even where ``launch`` is missing)."""
    for filename in ('mujoco_demo.launch.py', 'gazebo.launch.py'):
        with open(os.path.join(ROOT, 'launch', filename)) as stream:
            compile(stream.read(), filename, 'exec')


def test_shipped_arm6_urdf_is_its_mdh_table_and_fits_the_demo():
    """urdf/arm6.urdf is what mdh_to_urdf makes of urdf/arm6.mdh.yaml; limits on every joint."""
    from rnea_ros.khalil import load_mdh, mdh_to_urdf
    from rnea_ros.node.launch_helpers import shipped_urdf_file
    with open(shipped_urdf_file()) as stream:
        shipped = stream.read()
    made = mdh_to_urdf(load_mdh(os.path.join(ROOT, 'urdf', 'arm6.mdh.yaml')))
    # The same document to the last bit of structure; numbers to rounding (the last digit of
    # a product depends on the BLAS kernel the processor gets).
    number = r'-?\d+(?:\.\d*)?(?:e-?\d+)?'
    assert re.sub(number, '#', shipped) == re.sub(number, '#', made)
    np.testing.assert_allclose([float(x) for x in re.findall(number, shipped)],
                               [float(x) for x in re.findall(number, made)],
                               rtol=1e-12, atol=1e-15)
    scenario = DemoScenario(shipped_urdf_file())
    assert scenario.joint_names == ['joint{}'.format(i) for i in range(1, 7)]
    for joint in scenario.joints:
        assert np.isfinite([joint.lower, joint.upper]).all()
        assert 0 < joint.effort_limit < 1e3
    check_reference_within_limits(scenario)
    assert RobotModel.from_urdf_file(shipped_urdf_file()).total_mass == pytest.approx(31.2)


def test_default_robot_is_panda_only_with_example_robot_data(monkeypatch, tmp_path):
    """Without example-robot-data the launch files and the demo use the shipped arm6."""
    from rnea_ros.node.launch_helpers import shipped_urdf_file
    from rnea_ros.sim import sim_launch
    panda = os.path.join(example_robot_data_dir(), 'panda_description/urdf/panda.urdf')
    if os.path.isfile(panda):
        assert sim_launch.default_urdf_file() == panda
    monkeypatch.setattr(sim_launch, 'example_robot_data_dir', lambda: str(tmp_path))
    assert sim_launch.default_urdf_file() == shipped_urdf_file()
    rows = mujoco_demo_nodes(defaults(MUJOCO_DEMO_ARGUMENTS))
    assert rows[0][3]['urdf_file'] == shipped_urdf_file()


def test_gazebo_launch_names_the_missing_apt_packages():
    """Missing ROS packages: one message with the apt command; the plugin follows gz_version."""
    from rnea_ros.sim.sim_launch import missing_gazebo_packages, missing_packages_message
    installed = {'ros_gz_sim', 'robot_state_publisher', 'controller_manager'}
    missing = missing_gazebo_packages({'gz_version': 'gz'}, installed.__contains__)
    assert missing == ['ros_gz_bridge', 'effort_controllers', 'joint_state_broadcaster',
                       'gz_ros2_control']
    assert missing_gazebo_packages({'gz_version': 'ignition'}, lambda name: False)[-1] == \
        'ign_ros2_control'
    message = missing_packages_message(missing)
    assert 'sudo apt install ros-$ROS_DISTRO-ros-gz-bridge ' in message
    assert message.endswith('ros-$ROS_DISTRO-gz-ros2-control')


def test_gazebo_setup_for_the_shipped_arm6_uses_its_controllers(monkeypatch, tmp_path):
    """Without example-robot-data gazebo.launch.py runs arm6 with controllers for its joints."""
    from rnea_ros.node.launch_helpers import shipped_urdf_file
    from rnea_ros.sim import sim_launch
    from rnea_ros.sim.ros2_control_urdf import commanded_joints, controllers_yaml
    import yaml
    monkeypatch.setattr(sim_launch, 'example_robot_data_dir', lambda: str(tmp_path))
    setup = gazebo_setup(defaults(GAZEBO_ARGUMENTS))
    assert os.path.basename(setup['controllers_file']) == 'arm6_gazebo_controllers.yaml'
    with open(shipped_urdf_file()) as stream:
        joints = commanded_joints(stream.read())
    with open(setup['controllers_file']) as stream:
        assert yaml.safe_load(stream) == yaml.safe_load(controllers_yaml(joints))
    assert setup['command_joints'] == joints
