"""The logic behind the simulation launch files and the demo (pure Python, unit-tested).

``launch/mujoco_demo.launch.py`` and ``launch/gazebo.launch.py`` only declare arguments and
turn the dictionaries built here into launch_ros actions; ``rnea_ros.demo`` writes the same
parameter dictionaries into YAML files for its processes. So the demo, the launch files and
the tests share one definition of the demo scenario (pose, reference, gains).
"""
import os

import numpy as np

from rnea_ros.node.launch_helpers import (config_dir, declare_arguments, launch_module, PACKAGE,
                                          parse_bool, parse_list, shipped_urdf_file)
from rnea_ros.sim.ros2_control_urdf import add_ros2_control, commanded_joints
from rnea_ros.sim.urdf_tools import example_robot_data_dir, read_urdf, urdf_joints

PANDA_URDF = 'panda_description/urdf/panda.urdf'
# A non-trivial panda pose: elbow bent, wrist turned, fingers half open.
PANDA_POSE = {'panda_joint1': 0.3, 'panda_joint2': -0.4, 'panda_joint3': 0.2,
              'panda_joint4': -2.0, 'panda_joint5': 0.1, 'panda_joint6': 1.7,
              'panda_joint7': 0.8, 'panda_finger_joint1': 0.02, 'panda_finger_joint2': 0.02}
REFERENCE_FREQUENCY = 0.25        # Hz
REVOLUTE_AMPLITUDE = 0.2          # rad: the sinusoid swings 0.4 rad from the start pose
PRISMATIC_AMPLITUDE = 0.005       # m
COMMAND_TOPIC = '/effort_controller/commands'
RNEA_NODE_NAME = 'rnea'
REFERENCE_TOPIC = '/' + RNEA_NODE_NAME + '/reference'
LOCK_STEP_TIMEOUT = 5.0           # wall seconds a lock-step simulator waits for its command


def default_urdf_file():
    """Return the panda of example-robot-data when installed, else the shipped arm6."""
    panda = os.path.join(example_robot_data_dir(), PANDA_URDF)
    return panda if os.path.isfile(panda) else shipped_urdf_file()


def demo_pose(joints):
    """Return a non-trivial start pose for :class:`UrdfJoint` objects (known one for panda).

    Other robots: 35 % / 65 % of each limited joint's range (alternating), +-0.5 rad for
    unlimited joints.
    """
    if all(joint.name in PANDA_POSE for joint in joints):
        return np.array([PANDA_POSE[joint.name] for joint in joints])
    pose = []
    for index, joint in enumerate(joints):
        fraction = 0.35 if index % 2 == 0 else 0.65
        if np.isfinite(joint.lower) and np.isfinite(joint.upper):
            pose.append(joint.lower + fraction * (joint.upper - joint.lower))
        else:
            pose.append(0.5 if index % 2 == 0 else -0.5)
    return np.array(pose)


def reference_amplitudes(joints, pose, revolute=REVOLUTE_AMPLITUDE):
    """Return sinusoid amplitudes that keep ``start + 2 amplitude`` inside the joint limits.

    Revolute joints swing up to 2 ``revolute`` (0.4 rad by default), prismatic up to 1 cm,
    towards the side with more room, never beyond 80 % of that room.
    """
    amplitudes = []
    for joint, start in zip(joints, pose):
        size = PRISMATIC_AMPLITUDE if joint.type == 'prismatic' else revolute
        room_up, room_down = joint.upper - start, start - joint.lower
        sign = 1.0 if room_up >= room_down else -1.0
        room = max(room_up, room_down)
        amplitudes.append(sign * min(size, 0.4 * room))
    return np.array(amplitudes)


class DemoScenario:
    """Robot, pose, reference and gains of the demo, for any URDF (panda by default)."""

    def __init__(self, urdf_file=None, physics_rate=1000.0, kp=400.0, kd=40.0,
                 frequency=REFERENCE_FREQUENCY):
        """Read the URDF and derive the scenario (ValueError for an unusable URDF)."""
        self.urdf_file = os.path.abspath(os.path.expanduser(urdf_file or default_urdf_file()))
        self.urdf = read_urdf(self.urdf_file)
        self.joints = urdf_joints(self.urdf)
        if not self.joints:
            raise ValueError('{} has no moving joints'.format(self.urdf_file))
        self.joint_names = [joint.name for joint in self.joints]
        self.pose = demo_pose(self.joints)
        self.amplitudes = reference_amplitudes(self.joints, self.pose)
        self.frequency = float(frequency)
        self.physics_rate = float(physics_rate)
        self.kp = float(kp)
        self.kd = float(kd)

    def profile(self):
        """Return the reference as a :class:`ReferenceProfile` (t = 0 at simulated time 0)."""
        from rnea_ros.sim.trajectories import ReferenceProfile
        return ReferenceProfile('sinusoid', self.pose, amplitude=self.amplitudes,
                                frequency=self.frequency)

    def sim_parameters(self, duration=0.0, lock_step=False, record_file='',
                       real_time_factor=1.0, wait_for_first_command=True, sync_reference=True,
                       paused=False):
        """Return the mujoco_sim parameters (all joints commanded, in URDF order).

        In lock-step with ``sync_reference`` each joint state waits for the reference point of
        its time, so the controller always has the reference of the step it answers. Commands
        stay valid for 0.5 s (the rnea node's joint_state_timeout): on a shared, noisy machine a
        controller process can stall for tens of milliseconds; the demo reports how old the
        applied commands were. In lock-step the simulator waits up to
        :data:`LOCK_STEP_TIMEOUT` for each command rather than step without it (a loaded
        machine can stall a process for a while).
        """
        params = {
            'urdf_file': self.urdf_file,
            'joints': self.joint_names,
            'initial_positions': self.pose.tolist(),
            'physics_rate': self.physics_rate,
            'lock_step': bool(lock_step),
            'wait_for_first_command': bool(wait_for_first_command),
            'real_time_factor': float(real_time_factor),
            'command_topic': COMMAND_TOPIC,
            'command_timeout': 0.5,
            'duration': float(duration),
            'paused': bool(paused),
        }
        if record_file:
            params['record_file'] = record_file
        if lock_step:
            params['lock_step_timeout'] = LOCK_STEP_TIMEOUT
        if lock_step and sync_reference:
            params['sync_topic'] = REFERENCE_TOPIC
        return params

    def rnea_parameters(self, mode, use_sim_time=False, lock_step=False):
        """Return the rnea node parameters for ``mode`` commanding the simulator.

        ``lock_step``: time is the simulator's. A stalled process must not make the node drop
        the reference (``desired_timeout``) or stop commanding (``joint_state_timeout``) on the
        steady clock, so both outlast the simulator's wait for a command; and the node answers
        the joint state of t only once the reference point of t is in (``reference_sync``:
        not the previous step's point, which on a busy machine can be the newest).
        """
        params = {
            'urdf_file': self.urdf_file,
            'mode': mode,
            'command_topic': COMMAND_TOPIC,
            'command_joints': self.joint_names,
            'kp': [self.kp],
            'kd': [self.kd],
            'publish_reaction_wrenches': False,
            'use_sim_time': bool(use_sim_time),
        }
        if lock_step:
            params.update(desired_timeout=2 * LOCK_STEP_TIMEOUT,
                          joint_state_timeout=2 * LOCK_STEP_TIMEOUT, reference_sync=True)
        return params

    def reference_parameters(self, lock_step=False):
        """Return the reference_trajectory parameters (simulated time, t = 0 at start).

        Free-running, the point for t + one physics period goes out when the clock reads t, so
        the node has it when the joint state of t + period arrives; in lock-step the simulator
        waits for the point of t before it publishes the joint state of t (no lookahead).
        """
        return {
            'topic': REFERENCE_TOPIC,
            'joints': self.joint_names,
            'start_positions': self.pose.tolist(),
            'profile': 'sinusoid',
            'amplitude': self.amplitudes.tolist(),
            'frequency': [self.frequency],
            'rate': self.physics_rate,
            'start_time': 0.0,
            'lookahead': 0.0 if lock_step else 1.0 / self.physics_rate,
            'use_sim_time': True,
        }


# --- launch/mujoco_demo.launch.py --------------------------------------------------------

MUJOCO_DEMO_ARGUMENTS = (
    ('urdf_file', '', 'URDF of the robot; empty: the panda of example-robot-data when '
     'installed, else the arm6 shipped in the package'),
    ('mode', 'computed_torque', 'rnea node mode: computed_torque (with the reference '
     'publisher), gravity_compensation, gravity_coriolis or inverse_dynamics'),
    ('lock_step', 'false', 'simulator waits for each command (deterministic) (true/false)'),
    ('physics_rate', '1000.0', 'physics steps per second (Hz)'),
    ('kp', '400.0', 'computed_torque position gain (1/s^2)'),
    ('kd', '40.0', 'computed_torque velocity gain (1/s)'),
)


def mujoco_demo_nodes(config):
    """Return (package, executable, name, parameters) rows for mujoco_demo.launch.py."""
    scenario = DemoScenario(config.get('urdf_file') or None,
                            physics_rate=float(config.get('physics_rate', 1000.0)),
                            kp=float(config.get('kp', 400.0)), kd=float(config.get('kd', 40.0)))
    mode = config.get('mode') or 'computed_torque'
    lock_step = parse_bool(config.get('lock_step', 'false'), 'lock_step')
    rows = [
        (PACKAGE, 'mujoco_sim', 'mujoco_sim', scenario.sim_parameters(
            lock_step=lock_step, sync_reference=mode == 'computed_torque')),
        (PACKAGE, 'rnea_node', RNEA_NODE_NAME,
         scenario.rnea_parameters(mode, use_sim_time=True, lock_step=lock_step)),
    ]
    if mode == 'computed_torque':
        rows.append((PACKAGE, 'reference_trajectory', 'reference_trajectory',
                     scenario.reference_parameters(lock_step)))
    return rows


# --- launch/gazebo.launch.py ---------------------------------------------------------------

GAZEBO_ARGUMENTS = (
    ('urdf_file', '', 'URDF of the robot without <ros2_control>; empty: the panda of '
     'example-robot-data when installed, else the shipped arm6'),
    ('controllers_file', '', 'controllers YAML (default: the installed '
     'config/gazebo_controllers.yaml, made for the panda; config/arm6_gazebo_controllers.yaml '
     'for the shipped arm6)'),
    ('mode', 'gravity_compensation', 'rnea node mode'),
    ('command_joints', '', 'comma-separated joints of the effort controller; empty: every '
     'moving non-mimic joint of the URDF'),
    ('world', 'empty.sdf', 'Gazebo world passed to gz sim'),
    ('gz_version', 'gz', 'gz (Jazzy and newer: gz_ros2_control) or ignition (Humble: '
     'ign_ros2_control)'),
    ('initial_positions', '', 'comma-separated joint=value start positions; empty: the demo '
     'pose for the panda, none otherwise'),
)


# What gazebo.launch.py starts, beyond the rnea node: not in package.xml (a node user needs none
# of it); README "Gazebo" lists them. {gz_version: ros2_control plugin package}.
GAZEBO_PACKAGES = ('ros_gz_sim', 'ros_gz_bridge', 'robot_state_publisher', 'controller_manager',
                   'effort_controllers', 'joint_state_broadcaster')
GAZEBO_PLUGIN_PACKAGES = {'gz': 'gz_ros2_control', 'ignition': 'ign_ros2_control'}


def missing_gazebo_packages(config, has_package):
    """Return the ROS packages gazebo.launch.py needs that ``has_package(name)`` lacks."""
    plugin = GAZEBO_PLUGIN_PACKAGES.get(config.get('gz_version') or 'gz', 'gz_ros2_control')
    return [name for name in GAZEBO_PACKAGES + (plugin,) if not has_package(name)]


def missing_packages_message(missing):
    """Return the error of gazebo.launch.py for missing packages, with the apt command."""
    apt = ' '.join('ros-$ROS_DISTRO-' + name.replace('_', '-') for name in missing)
    return ('gazebo.launch.py needs the ROS packages {} (not installed): sudo apt install '
            '{}'.format(', '.join(missing), apt))


def ament_has_package(name):
    """Return True when the ament index knows package ``name``."""
    from ament_index_python.packages import get_package_share_directory, PackageNotFoundError
    try:
        get_package_share_directory(name)
    except (PackageNotFoundError, OSError):     # OSError: AMENT_PREFIX_PATH not set at all
        return False
    return True


def gazebo_setup(config):
    """Return everything gazebo.launch.py starts, as plain data.

    Keys: robot_description (URDF with ros2_control), controllers_file, command_joints,
    gz_args, spawn_arguments, bridge_arguments, rnea_parameters, spawners (list of argument
    lists for controller_manager's spawner).
    """
    urdf_file = os.path.abspath(os.path.expanduser(config.get('urdf_file') or
                                                   default_urdf_file()))
    urdf = read_urdf(urdf_file)
    joints = urdf_joints(urdf)
    controllers = config.get('controllers_file') or os.path.join(
        config_dir(), 'arm6_gazebo_controllers.yaml' if urdf_file == shipped_urdf_file()
        else 'gazebo_controllers.yaml')
    controllers = os.path.abspath(os.path.expanduser(controllers))
    initial = parse_initial_positions(config.get('initial_positions', ''))
    if not config.get('initial_positions') and all(j.name in PANDA_POSE for j in joints):
        initial = dict(PANDA_POSE)
    description = add_ros2_control(
        urdf, controllers, initial, world=True, absolute_meshes=True,
        ignition=config.get('gz_version', 'gz') == 'ignition',
        base_dir=os.path.dirname(urdf_file))
    command = parse_list(config.get('command_joints', '')) or commanded_joints(urdf)
    mode = config.get('mode') or 'gravity_compensation'
    return {
        'robot_description': description,
        'controllers_file': controllers,
        'command_joints': command,
        'gz_args': '-r {}'.format(config.get('world') or 'empty.sdf'),
        'spawn_arguments': ['-topic', 'robot_description', '-name',
                            os.path.splitext(os.path.basename(urdf_file))[0]],
        'bridge_arguments': ['/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock'],
        'spawners': [
            ['joint_state_broadcaster', '--controller-manager', '/controller_manager'],
            ['effort_controller', '--controller-manager', '/controller_manager',
             '--param-file', controllers],
        ],
        'rnea_parameters': {
            'mode': mode,
            'command_topic': COMMAND_TOPIC,
            'command_joints': command,
            'use_sim_time': True,
        },
    }


def parse_initial_positions(text):
    """Parse ``'j1=0.1, j2=-0.3'`` into a dict (ValueError on a malformed item)."""
    initial = {}
    for item in parse_list(text):
        name, separator, value = item.partition('=')
        if not separator:
            raise ValueError('initial_positions items must be joint=value, got {!r}'.format(
                item))
        initial[name.strip()] = float(value)
    return initial


def launch_configuration(context):
    """Return the launch configurations of a launch context as a plain dict."""
    return dict(context.launch_configurations)


def ros_node(package, executable, name, parameters, **kwargs):
    """Return a launch_ros Node action (imports launch_ros; for the launch files only)."""
    node = launch_module('launch_ros.actions').Node
    return node(package=package, executable=executable, name=name, parameters=[parameters],
                output='screen', **kwargs)


def mujoco_demo_launch_setup(context, *args, **kwargs):
    """Return the actions of mujoco_demo.launch.py (its OpaqueFunction): the three nodes."""
    return [ros_node(*row) for row in mujoco_demo_nodes(launch_configuration(context))]


def gazebo_launch_setup(context, *args, **kwargs):
    """Return the actions of gazebo.launch.py: Gazebo, spawn, controllers and the rnea node."""
    actions = launch_module('launch.actions')
    IncludeLaunchDescription = actions.IncludeLaunchDescription
    RegisterEventHandler = actions.RegisterEventHandler
    OnProcessExit = launch_module('launch.event_handlers').OnProcessExit
    PythonLaunchDescriptionSource = launch_module(
        'launch.launch_description_sources').PythonLaunchDescriptionSource
    FindPackageShare = launch_module('launch_ros.substitutions').FindPackageShare
    missing = missing_gazebo_packages(launch_configuration(context), ament_has_package)
    if missing:
        raise RuntimeError(missing_packages_message(missing))
    setup = gazebo_setup(launch_configuration(context))
    gz_launch = os.path.join(FindPackageShare('ros_gz_sim').perform(context), 'launch',
                             'gz_sim.launch.py')
    gazebo = IncludeLaunchDescription(PythonLaunchDescriptionSource(gz_launch),
                                      launch_arguments={'gz_args': setup['gz_args']}.items())
    state_publisher = ros_node('robot_state_publisher', 'robot_state_publisher',
                               'robot_state_publisher',
                               {'robot_description': setup['robot_description'],
                                'use_sim_time': True})
    spawn = ros_node('ros_gz_sim', 'create', 'spawn_robot', {},
                     arguments=setup['spawn_arguments'])
    bridge = ros_node('ros_gz_bridge', 'parameter_bridge', 'clock_bridge', {},
                      arguments=setup['bridge_arguments'])
    broadcaster, effort = (ros_node('controller_manager', 'spawner', None, {},
                                    arguments=arguments)
                           for arguments in setup['spawners'])
    rnea = ros_node(PACKAGE, 'rnea_node', RNEA_NODE_NAME, setup['rnea_parameters'])
    return [
        gazebo, bridge, state_publisher, spawn,
        RegisterEventHandler(OnProcessExit(target_action=spawn, on_exit=[broadcaster])),
        RegisterEventHandler(OnProcessExit(target_action=broadcaster, on_exit=[effort, rnea])),
    ]


def declare(rows):
    """Return DeclareLaunchArgument actions for (name, default, description) rows."""
    return declare_arguments(rows)
