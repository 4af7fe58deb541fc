"""The ros2_control/Gazebo URDF helper writes what gz_ros2_control needs, and nothing breaks."""
import os
import xml.etree.ElementTree as ElementTree

import numpy as np
import pytest
from rnea_ros import gravity_torques, RobotModel
from rnea_ros.sim.ros2_control_urdf import (add_ros2_control, commanded_joints, controllers_yaml,
                                            main, parse_initial)
from rnea_ros.sim.urdf_tools import example_robot_data_dir
import yaml

PANDA = os.path.join(example_robot_data_dir(), 'panda_description/urdf/panda.urdf')
ARM_JOINTS = ['panda_joint{}'.format(i) for i in range(1, 8)]


@pytest.fixture(scope='module')
def panda_urdf():
    """Return the panda URDF text."""
    with open(PANDA) as stream:
        return stream.read()


@pytest.fixture(scope='module')
def converted(panda_urdf):
    """Return the panda URDF with ros2_control added, parsed."""
    xml = add_ros2_control(panda_urdf, '/abs/gazebo_controllers.yaml',
                           {'panda_joint4': -2.0, 'panda_finger_joint1': 0.02})
    return xml, ElementTree.fromstring(xml)


def interfaces(joint, kind):
    """Return the names of a ros2_control joint's command or state interfaces."""
    return [element.get('name') for element in joint.findall(kind + '_interface')]


def test_every_moving_joint_listed_with_effort_command_except_mimic(converted):
    """Arm and driving finger joints get an effort command; the mimic finger only states."""
    _, root = converted
    block = root.find('ros2_control')
    assert block.find('hardware/plugin').text == 'gz_ros2_control/GazeboSimSystem'
    joints = {joint.get('name'): joint for joint in block.findall('joint')}
    assert list(joints) == ARM_JOINTS + ['panda_finger_joint1', 'panda_finger_joint2']
    for name, joint in joints.items():
        expected = [] if name == 'panda_finger_joint2' else ['effort']
        assert interfaces(joint, 'command') == expected
        assert interfaces(joint, 'state') == ['position', 'velocity', 'effort']


def test_effort_limits_and_initial_values_come_from_the_urdf_and_arguments(converted):
    """Command min/max are the URDF effort limits; initial values are written where given."""
    _, root = converted
    robot = RobotModel.from_urdf_file(PANDA)
    for joint in root.find('ros2_control').findall('joint'):
        command = joint.find('command_interface')
        if command is None:
            continue
        limit = robot.effort_limits[robot.joint_names.index(joint.get('name'))]
        params = {p.get('name'): float(p.text) for p in command.findall('param')}
        assert params == {'min': -limit, 'max': limit}
    initial = {joint.get('name'): float(joint.find('state_interface/param').text)
               for joint in root.find('ros2_control').findall('joint')
               if joint.find('state_interface/param') is not None}
    assert initial == {'panda_joint4': -2.0, 'panda_finger_joint1': 0.02}


def test_gazebo_plugin_loads_the_controllers_file(converted):
    """The gz_ros2_control system plugin points at the controllers YAML."""
    _, root = converted
    plugin = root.find('gazebo/plugin')
    assert plugin.get('filename') == 'gz_ros2_control-system'
    assert plugin.get('name') == 'gz_ros2_control::GazeboSimROS2ControlPlugin'
    assert plugin.find('parameters').text == '/abs/gazebo_controllers.yaml'


def test_root_is_fixed_to_world_and_meshes_are_absolute(converted):
    """A world link with a fixed joint holds the arm; package:// meshes become file://."""
    _, root = converted
    joint = root.find("joint[@name='world_to_panda_link0']")
    assert joint.get('type') == 'fixed' and joint.find('parent').get('link') == 'world'
    filenames = [mesh.get('filename') for mesh in root.iter('mesh')]
    assert filenames and all(name.startswith('file:///') for name in filenames)
    assert all(os.path.isfile(name[len('file://'):]) for name in filenames)


def test_dynamics_unchanged_by_the_additions(converted, panda_urdf):
    """The rnea model of the converted URDF has the same joints and gravity torques."""
    xml, _ = converted
    before = RobotModel.from_urdf_string(panda_urdf)
    after = RobotModel.from_urdf_string(xml)
    assert after.joint_names == before.joint_names
    q = np.linspace(-0.5, 0.5, before.nq)
    np.testing.assert_allclose(gravity_torques(after, q), gravity_torques(before, q))


def test_ignition_flavour_uses_humble_names(panda_urdf):
    """--ignition writes the ign_ros2_control plugin names for Humble/Fortress."""
    root = ElementTree.fromstring(add_ros2_control(panda_urdf, ignition=True))
    assert root.find('ros2_control/hardware/plugin').text == 'ign_ros2_control/IgnitionSystem'
    assert root.find('gazebo/plugin').get('filename') == 'ign_ros2_control-system'


def test_errors_are_clear(converted, panda_urdf):
    """A URDF that already has ros2_control, or unknown initial joints, is refused."""
    xml, _ = converted
    with pytest.raises(ValueError, match='already has'):
        add_ros2_control(xml)
    with pytest.raises(ValueError, match='unknown joints'):
        add_ros2_control(panda_urdf, initial_positions={'elbow': 1.0})
    with pytest.raises(ValueError, match='no moving joints'):
        add_ros2_control('<robot name="r"><link name="a"/></robot>')
    with pytest.raises(ValueError, match='JOINT=VALUE'):
        parse_initial(['panda_joint1'])


def test_controllers_yaml_declares_broadcaster_and_effort_group(panda_urdf):
    """The generated YAML has both controllers and the commanded joints in order."""
    config = yaml.safe_load(controllers_yaml(commanded_joints(panda_urdf)))
    manager = config['controller_manager']['ros__parameters']
    assert manager['joint_state_broadcaster']['type'] == \
        'joint_state_broadcaster/JointStateBroadcaster'
    assert manager['effort_controller']['type'] == \
        'effort_controllers/JointGroupEffortController'
    assert config['effort_controller']['ros__parameters']['joints'] == \
        ARM_JOINTS + ['panda_finger_joint1']


def test_shipped_gazebo_controllers_yaml_matches_the_panda():
    """config/gazebo_controllers.yaml is what the helper generates for the panda."""
    shipped = os.path.join(os.path.dirname(__file__), '..', 'config', 'gazebo_controllers.yaml')
    with open(PANDA) as stream:
        generated = yaml.safe_load(controllers_yaml(commanded_joints(stream.read())))
    with open(shipped) as stream:
        assert yaml.safe_load(stream) == generated


def test_command_line_writes_urdf_and_controllers(tmp_path):
    """add_ros2_control writes both files and returns 0; a missing input returns 1."""
    output, controllers = tmp_path / 'panda_gz.urdf', tmp_path / 'controllers.yaml'
    assert main([PANDA, '-o', str(output), '--controllers', str(controllers),
                 '--write-controllers', str(controllers), '--initial',
                 'panda_joint4=-1.5']) == 0
    root = ElementTree.parse(output).getroot()
    assert root.find('gazebo/plugin/parameters').text == str(controllers)
    assert yaml.safe_load(controllers.read_text())['effort_controller']
    assert main([str(tmp_path / 'missing.urdf')]) == 1


def test_gazebo_classic_control_plugin_is_replaced():
    """The UR5's libgazebo_ros_control.so plugin is removed; only gz_ros2_control remains."""
    with open(os.path.join(example_robot_data_dir(), 'ur_description/urdf/ur5_robot.urdf')) as f:
        root = ElementTree.fromstring(add_ros2_control(f.read(), '/c.yaml'))
    plugins = [plugin.get('filename') for plugin in root.findall('gazebo/plugin')]
    assert plugins == ['gz_ros2_control-system']
    assert root.findall("gazebo[@reference='shoulder_link']")
