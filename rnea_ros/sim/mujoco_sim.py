"""MuJoCo simulator node: a simulated robot with the interface of a ros2_control effort robot.

Publishes ``/joint_states`` (position, velocity, applied effort) and ``/clock`` every physics
step and applies the efforts received on ``/effort_controller/commands``
(std_msgs/Float64MultiArray in the order of parameter ``joints``). Run it with
``ros2 run rnea_ros mujoco_sim`` or ``python -m rnea_ros.sim.mujoco_sim``.
"""
import os
import sys
import time

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor, ParameterType, SetParametersResult
import rclpy
from rclpy.exceptions import ParameterException
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rnea_ros.core.layout import DEFAULT_GRAVITY
from rnea_ros.core.payload import Payload
from rnea_ros.node import param_guard
from rnea_ros.sim.disturbances import add_payload_body, Disturbances, PayloadSwitch, Push
from rnea_ros.sim.mujoco_model import (build_mujoco_model, check_efforts,
                                       default_initial_positions, joint_addresses, Simulation)
from rnea_ros.sim.ros_helpers import (ignore_stop_signals, init_ros,
                                      make_executor, parameter_value, running)
from rnea_ros.sim.urdf_tools import read_urdf, urdf_joints
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

SETTLE_S = 0.25     # lock-step: quiet (wall s) after which no answer to a held state is due

PARAMETERS = (
    # name, default, type, description
    ('robot_description', '', ParameterType.PARAMETER_STRING,
     'URDF XML; when empty, urdf_file or the robot_description topic is used'),
    ('urdf_file', '', ParameterType.PARAMETER_STRING, 'path of a URDF file'),
    ('robot_description_topic', '/robot_description', ParameterType.PARAMETER_STRING,
     'topic (transient_local) to read the URDF from when neither parameter is set'),
    ('joints', [], ParameterType.PARAMETER_STRING_ARRAY,
     'command order of the effort commands; empty: all moving URDF joints in URDF order'),
    ('initial_positions', [], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'initial joint positions in the order of joints (rad or m); empty: 0, or mid-range '
     'for joints whose limits exclude 0'),
    ('physics_rate', 1000.0, ParameterType.PARAMETER_DOUBLE,
     'physics steps per second of simulated time (Hz); joint_states and clock go out every step'),
    ('real_time_factor', 1.0, ParameterType.PARAMETER_DOUBLE,
     'simulated seconds per wall second in free-running mode; 0 runs as fast as possible'),
    ('lock_step', False, ParameterType.PARAMETER_BOOL,
     'each step waits for the command that answers the last joint state (deterministic runs)'),
    ('lock_step_timeout', 0.5, ParameterType.PARAMETER_DOUBLE,
     'wall seconds a lock-step waits for the answering command before stepping anyway'),
    ('sync_topic', '', ParameterType.PARAMETER_STRING,
     'lock-step only: before the joint state of time t goes out, wait (up to '
     'lock_step_timeout) for a trajectory_msgs/JointTrajectory on this topic stamped t or '
     'later, e.g. the reference publisher driven by /clock; empty: no wait'),
    ('paused', False, ParameterType.PARAMETER_BOOL,
     'hold the state (time frozen, joint states republished at 10 Hz without efforts) while '
     'true; the only parameter that can change at run time (ros2 param set /mujoco_sim '
     'paused false)'),
    ('wait_for_first_command', False, ParameterType.PARAMETER_BOOL,
     'hold the initial state (time frozen) until the first effort command arrives'),
    ('command_topic', '/effort_controller/commands', ParameterType.PARAMETER_STRING,
     'std_msgs/Float64MultiArray effort commands in the order of joints (N or N m)'),
    ('joint_states_topic', '/joint_states', ParameterType.PARAMETER_STRING,
     'sensor_msgs/JointState output'),
    ('publish_clock', True, ParameterType.PARAMETER_BOOL, 'publish /clock with simulated time'),
    ('command_timeout', 0.1, ParameterType.PARAMETER_DOUBLE,
     'a command older than this (simulated seconds) is dropped to zero effort'),
    ('clamp_efforts', True, ParameterType.PARAMETER_BOOL,
     'clamp commands to the URDF effort limits'),
    ('gravity', list(DEFAULT_GRAVITY), ParameterType.PARAMETER_DOUBLE_ARRAY,
     'gravity in the world frame (m/s^2)'),
    ('urdf_dynamics', False, ParameterType.PARAMETER_BOOL,
     'keep URDF joint damping and friction (default: zero)'),
    ('armature', 0.0, ParameterType.PARAMETER_DOUBLE, 'rotor inertia added to every joint'),
    ('joint_armature', [], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'rotor inertia per joint in the order of joints (kg m^2 or kg); replaces armature'),
    ('collisions', False, ParameterType.PARAMETER_BOOL,
     'enable contacts between the robot geometries'),
    ('mimic_constraints', False, ParameterType.PARAMETER_BOOL,
     'couple mimic joints with equality constraints (default: every joint driven alone)'),
    ('integrator', 'euler', ParameterType.PARAMETER_STRING,
     'MuJoCo integrator: euler, rk4, implicit or implicitfast'),
    ('duration', 0.0, ParameterType.PARAMETER_DOUBLE,
     'stop after this many simulated seconds; 0 runs until shut down'),
    ('record_file', '', ParameterType.PARAMETER_STRING,
     'write every step (time, positions, velocities, efforts, command age) to this .npz file'),
    ('push_link', '', ParameterType.PARAMETER_STRING,
     'push: link a known external force acts on (empty: no push); the record holds the force, '
     'its point and the joint torques J^T f it causes (ground truth)'),
    ('push_force', [0.0, 0.0, 0.0], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'push: force in the world frame (N)'),
    ('push_point', [0.0, 0.0, 0.0], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'push: point of application in the push_link frame (m)'),
    ('push_start', 0.0, ParameterType.PARAMETER_DOUBLE, 'push: start (simulated s)'),
    ('push_duration', 0.1, ParameterType.PARAMETER_DOUBLE, 'push: duration (simulated s)'),
    ('payload_link', '', ParameterType.PARAMETER_STRING,
     'payload: link that picks up a rigid body at payload_time (empty: none)'),
    ('payload_mass', 0.0, ParameterType.PARAMETER_DOUBLE, 'payload: mass (kg)'),
    ('payload_com', [0.0, 0.0, 0.0], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'payload: centre of mass in the payload_link frame (m)'),
    ('payload_inertia', [0.0] * 6, ParameterType.PARAMETER_DOUBLE_ARRAY,
     'payload: inertia about its centre of mass, payload_link axes: ixx iyy izz ixy ixz iyz '
     '(kg m^2)'),
    ('payload_time', 0.0, ParameterType.PARAMETER_DOUBLE,
     'payload: simulated time (s) at which the payload appears'),
)


# Each parameter's kind (rnea_ros.node.param_guard): run-time requests of another ROS type, and
# deletes, are refused naming the parameter and its type; start-up values are checked too.
KINDS = {name: param_guard.KIND_OF_TYPE[Parameter.Type(kind)] for name, _, kind, _ in PARAMETERS}


def declare_typed_parameters(node):
    """Declare :data:`PARAMETERS` on ``node``; ValueError (one line) for a value of a wrong type.

    Declared with dynamic typing, so that rclpy does not refuse a start-up value typed as YAML
    reads it (``physics_rate:=500`` is an integer, ``joints: []`` "not set") with a traceback:
    :func:`rnea_ros.node.param_guard.check_declared` names the parameter and its type, and
    :func:`rnea_ros.node.param_guard.converted` stores the value in its own type.
    """
    for name, default, kind, description in PARAMETERS:
        descriptor = ParameterDescriptor(name=name, type=kind, description=description,
                                         dynamic_typing=True)
        node.declare_parameter(name, default, descriptor)
        if node.get_parameter_or(name).type_ == Parameter.Type.NOT_SET:    # a file's `[]`
            node.undeclare_parameter(name)
            node.declare_parameter(name, default, descriptor, ignore_override=True)
    param_guard.check_declared(node, KINDS)
    for name, kind in KINDS.items():
        param = node.get_parameter(name)
        typed = param_guard.converted(param, kind)
        if typed is not param:
            node.set_parameters([typed])


def seconds_to_time_msg(seconds, msg_type):
    """Fill a builtin_interfaces/Time-like message from seconds."""
    nanoseconds = int(round(seconds * 1e9))
    msg = msg_type()
    msg.sec, msg.nanosec = divmod(nanoseconds, 1000000000)
    return msg


class StepRecorder:
    """Collect one row per physics step and write them to an .npz file."""

    DISTURBANCE_KEYS = ('external_torque', 'external_force', 'external_point',
                        'external_rotation', 'payload_on')

    def __init__(self, joint_names, command_joints, disturbances=None):
        """Start an empty record for the given joint orders (and ground truth if disturbed)."""
        self.joint_names = list(joint_names)
        self.command_joints = list(command_joints)
        self.disturbances = disturbances
        keys = ('time', 'position', 'velocity', 'effort', 'command_age', 'wall_time')
        if disturbances is not None:
            keys += self.DISTURBANCE_KEYS
        self.rows = {key: [] for key in keys}

    def add(self, simulation, wall_time):
        """Append the simulation's current state.

        With disturbances, a row also holds what acted during the step that led to it (as its
        effort does): the push's joint torques J^T f, force and point (world), the pushed link's
        orientation (world from link, row-major) and whether the payload was carried.
        """
        self.rows['time'].append(simulation.time)
        self.rows['position'].append(simulation.positions)
        self.rows['velocity'].append(simulation.velocities)
        self.rows['effort'].append(simulation.efforts)
        self.rows['command_age'].append(simulation.command_age)
        self.rows['wall_time'].append(wall_time)
        disturbances = self.disturbances
        if disturbances is not None:
            self.rows['external_torque'].append(disturbances.external_torque)
            self.rows['external_force'].append(disturbances.force)
            self.rows['external_point'].append(disturbances.point)
            self.rows['external_rotation'].append(disturbances.rotation.ravel())
            self.rows['payload_on'].append(disturbances.payload_on)

    def save(self, path, **extra):
        """Write the record (and extra scalar statistics) to ``path``."""
        folder = os.path.dirname(os.path.abspath(path))
        os.makedirs(folder, exist_ok=True)
        arrays = {key: np.array(value) for key, value in self.rows.items()}
        np.savez(path, joint_names=np.array(self.joint_names),
                 command_joints=np.array(self.command_joints), **arrays, **extra)


class MujocoSimNode(Node):
    """ROS 2 node that owns a :class:`Simulation` and its topics."""

    def __init__(self, **kwargs):
        """Declare parameters and start waiting for a robot description."""
        super().__init__('mujoco_sim', **kwargs)
        declare_typed_parameters(self)
        for name in ('joint_states_topic', 'command_topic', 'sync_topic',
                     'robot_description_topic'):
            reason = param_guard.topic_reason(self, name, self.param(name))
            if reason:
                raise ValueError(reason)
        self.paused = bool(self.param('paused'))
        if hasattr(self, 'add_pre_set_parameters_callback'):    # rclpy >= Iron
            self.add_pre_set_parameters_callback(param_guard.guarded_pre_set(
                lambda params: [param_guard.converted(p, KINDS[p.name]) if p.name in KINDS
                                else p for p in params]))
        self.add_on_set_parameters_callback(
            param_guard.guarded_on_set(self.on_set_parameters, self.get_logger()))
        self.simulation = None
        self.disturbances = None
        self.recorder = None
        self.commands_received = 0
        self.commands_before_start = 0
        self.commands_rejected = 0
        self.lock_step_timeouts = 0
        self.overruns = 0
        qos = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
        self.state_publisher = self.create_publisher(
            JointState, self.param('joint_states_topic'), qos)
        self.clock_publisher = (self.create_publisher(Clock, '/clock', qos)
                                if self.param('publish_clock') else None)
        self.create_subscription(Float64MultiArray, self.param('command_topic'),
                                 self.on_command, qos)
        self.sync_stamp = -1.0
        self.sync_timeouts = 0
        if self.param('sync_topic'):
            self.create_subscription(JointTrajectory, self.param('sync_topic'), self.on_sync,
                                     qos)
        self.description_subscription = None
        urdf = self.param('robot_description')
        if not urdf and self.param('urdf_file'):
            urdf = read_urdf(self.param('urdf_file'))
        if urdf:
            self.load_robot(urdf, os.path.dirname(os.path.abspath(self.param('urdf_file')))
                            if self.param('urdf_file') else None)
        else:
            latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                                 durability=DurabilityPolicy.TRANSIENT_LOCAL)
            self.description_subscription = self.create_subscription(
                String, self.param('robot_description_topic'), self.on_description, latched)
            self.get_logger().info('waiting for the URDF on {}'.format(
                self.param('robot_description_topic')))
        param_guard.guard_services(self, self.get_logger())     # no request ends the node

    def param(self, name):
        """Return a parameter's value."""
        return parameter_value(self, name)

    def on_set_parameters(self, parameters):
        """Accept run-time changes of ``paused`` only; the others are read at start."""
        for parameter in parameters:
            kind = KINDS.get(parameter.name)
            if kind is None:
                continue        # rclpy's own (use_sim_time): typed and checked by rclpy
            reason = param_guard.type_reason(parameter.name, kind, parameter)
            if reason is None and parameter.name != 'paused':
                reason = ('only paused can change while the simulator runs; restart it to '
                          'change {} ({})'.format(parameter.name, param_guard.expected(kind)))
            if reason:
                return SetParametersResult(successful=False, reason=reason)
        for parameter in parameters:
            self.paused = parameter.value
            self.get_logger().info('paused' if self.paused else 'running')
        return SetParametersResult(successful=True)

    def on_description(self, msg):
        """Build the simulation from the first valid robot description received."""
        if self.simulation is not None:
            self.get_logger().warning(
                'new robot description ignored: restart the simulator to change the robot',
                once=True)
            return
        try:
            self.load_robot(msg.data, None)
        except ValueError as error:
            self.get_logger().error('cannot simulate this robot description: {}'.format(error))

    def load_robot(self, urdf, base_dir):
        """Build the MuJoCo model and the simulation from URDF text (ValueError if bad)."""
        joints = urdf_joints(urdf)
        names = [joint.name for joint in joints]
        command_joints = list(self.param('joints')) or names
        unknown = sorted(set(command_joints) - set(names))
        if unknown:
            raise ValueError('parameter joints names joints the URDF lacks: {}'.format(unknown))
        armature = self.param('armature')
        if list(self.param('joint_armature')):
            values = check_efforts(self.param('joint_armature'), len(command_joints),
                                   'joint_armature')
            armature = dict(zip(command_joints, values.tolist()))
        push, payload = self.disturbance_parameters()
        if payload is not None:
            urdf = add_payload_body(urdf, payload.payload.link)
        model = build_mujoco_model(
            urdf, base_dir=base_dir, timestep=1.0 / self.param('physics_rate'),
            gravity=self.param('gravity'), urdf_dynamics=self.param('urdf_dynamics'),
            armature=armature, collisions=self.param('collisions'),
            mimic_constraints=self.param('mimic_constraints'),
            integrator=self.param('integrator'))
        by_name = {joint.name: joint for joint in joints}
        limits = ([by_name[name].effort_limit for name in command_joints]
                  if self.param('clamp_efforts') else None)
        simulation = Simulation(model, names, command_joints,
                                self.param('command_timeout'), limits)
        positions = default_initial_positions(joints)
        initial = list(self.param('initial_positions'))
        if initial:
            values = check_efforts(initial, len(command_joints), 'initial_positions')
            for name, value in zip(command_joints, values):
                positions[names.index(name)] = value
        simulation.set_state(positions)
        self.simulation = simulation
        if push is not None or payload is not None:
            self.disturbances = Disturbances(model, joint_addresses(model, names)[1], push,
                                             payload)
        if self.param('record_file'):
            self.recorder = StepRecorder(names, command_joints, self.disturbances)
        if push is not None:
            self.get_logger().info(
                'push: {} N (world) at {} m on {} from {:g} s for {:g} s'.format(
                    push.force.tolist(), push.point.tolist(), push.link, push.start,
                    push.duration))
        if payload is not None:
            self.get_logger().info('payload at {:g} s: {}'.format(
                payload.time, payload.payload.describe()))
        self.get_logger().info(
            'simulating {} joints at {:g} Hz ({} mode); commands on {} in order {}'.format(
                len(names), self.param('physics_rate'),
                'lock-step' if self.param('lock_step') else 'free-running',
                self.param('command_topic'), command_joints))

    def disturbance_parameters(self):
        """Return (Push or None, PayloadSwitch or None) from the parameters (ValueError)."""
        push = payload = None
        if self.param('push_link'):
            push = Push(self.param('push_link'), list(self.param('push_force')),
                        list(self.param('push_point')), self.param('push_start'),
                        self.param('push_duration'))
        if self.param('payload_link'):
            payload = PayloadSwitch(Payload(
                self.param('payload_link'), self.param('payload_mass'),
                list(self.param('payload_com')), list(self.param('payload_inertia'))),
                self.param('payload_time'))
        return push, payload

    def step(self):
        """Apply the disturbances due at the current time, then advance one physics step."""
        if self.disturbances is not None:
            self.disturbances.before_step(self.simulation.data, self.simulation.time)
        self.simulation.step()

    def on_command(self, msg):
        """Store a valid effort command; reject (and log) a malformed one."""
        if self.simulation is None:
            return
        try:
            self.simulation.set_command(msg.data)
        except ValueError as error:
            self.commands_rejected += 1
            self.get_logger().error('command rejected: {}'.format(error),
                                    throttle_duration_sec=1.0)
            return
        self.commands_received += 1

    def on_sync(self, msg):
        """Remember the newest stamp seen on the sync topic."""
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        self.sync_stamp = max(self.sync_stamp, stamp)

    def publish_clock(self):
        """Publish /clock with the simulation's current time (if enabled)."""
        if self.clock_publisher is not None:
            clock = Clock()
            clock.clock = seconds_to_time_msg(self.simulation.time, type(clock.clock))
            self.clock_publisher.publish(clock)

    def publish_joint_state(self, held=False):
        """Publish joint_states for the simulation's current time.

        ``held``: the state of a frozen simulation (paused, or waiting for its first command),
        sent without efforts: no physics runs and nothing is applied, so no effort belongs to
        it (an observer fed the last command as a measurement of a frozen arm would see the
        whole gravity load as an external push).
        """
        simulation = self.simulation
        msg = JointState()
        msg.header.stamp = seconds_to_time_msg(simulation.time, type(msg.header.stamp))
        msg.name = simulation.joint_names
        msg.position = simulation.positions.tolist()
        msg.velocity = simulation.velocities.tolist()
        msg.effort = [] if held else simulation.efforts.tolist()
        self.state_publisher.publish(msg)

    def publish_state(self, held=False):
        """Publish clock and joint_states for the simulation's current time (see above)."""
        self.publish_clock()
        self.publish_joint_state(held)

    def statistics(self):
        """Return run statistics as a dict of numbers."""
        return {'steps': self.simulation.steps if self.simulation else 0,
                'commands_received': self.commands_received,
                'commands_while_running': self.commands_received - self.commands_before_start,
                'commands_rejected': self.commands_rejected,
                'lock_step_timeouts': self.lock_step_timeouts,
                'sync_timeouts': self.sync_timeouts,
                'overruns': self.overruns,
                'clamp_count': self.simulation.clamp_count if self.simulation else 0}


class SimulationLoop:
    """Drive a :class:`MujocoSimNode`: pacing, lock-step waits and message handling."""

    def __init__(self, node, executor):
        """Use ``executor`` (with ``node`` added) to process messages between steps."""
        self.node = node
        self.executor = executor
        self.held = 0       # held states published (each answered at most once)

    def ok(self):
        """Return True while the node's ROS context runs and no SIGINT/SIGTERM arrived."""
        return running(self.node)

    def spin_until(self, deadline, done=None):
        """Process messages until wall-clock ``deadline`` or until ``done()`` is true."""
        while self.ok():
            if done is not None and done():
                return True
            remaining = deadline - time.monotonic()
            if remaining <= 0.0:
                return done is not None and done()
            self.executor.spin_once(timeout_sec=remaining)
        return False

    def wait_for_robot(self):
        """Process messages until the simulation exists."""
        while self.ok() and self.node.simulation is None:
            self.executor.spin_once(timeout_sec=0.1)
        return self.node.simulation is not None

    def hold(self, release):
        """Republish the frozen state (no efforts) at 10 Hz until ``release()`` is true."""
        while self.ok() and not release():
            self.node.publish_state(held=True)
            self.held += 1
            self.spin_until(time.monotonic() + 0.1, release)

    def settle(self, timeout):
        """Lock-step: take the answers to held states still in flight before the first step.

        A controller that was slow on its first state (loading, compiling) answers the held
        states queued meanwhile in a burst. A command is not stamped, so one of them arriving
        while the first step waits would pass for its answer, and every later step would take
        the answer to the state before it. Wait until each held state is answered, or no
        command came for ``SETTLE_S`` (some were dropped before the controller was ready).
        """
        node = self.node
        deadline = time.monotonic() + timeout
        while self.ok() and node.commands_received < self.held:
            count = node.commands_received
            if not self.spin_until(min(deadline, time.monotonic() + SETTLE_S),
                                   lambda: node.commands_received > count):
                return

    def run(self):
        """Run the simulation until ``duration`` is reached or ROS shuts down."""
        node = self.node
        if not self.wait_for_robot():
            return
        simulation = node.simulation
        if node.paused:
            node.get_logger().info('paused: holding the initial state')
            self.hold(lambda: not node.paused)
        if node.param('wait_for_first_command'):
            node.get_logger().info('holding the initial state until the first command')
            self.hold(lambda: node.commands_received > 0)
        lock_step = node.param('lock_step')
        lock_timeout = node.param('lock_step_timeout')
        if lock_step:
            self.settle(lock_timeout)
        factor = node.param('real_time_factor')
        duration = node.param('duration')
        period = simulation.timestep / factor if factor > 0 else 0.0
        start = time.monotonic()
        deadline = start
        node.commands_before_start = node.commands_received
        sync = lock_step and bool(node.param('sync_topic'))
        self.publish(sync, lock_timeout)
        self.record(start)
        while self.ok() and (duration <= 0 or simulation.time < duration - 1e-9):
            if node.paused:
                self.hold(lambda: not node.paused)
                deadline = time.monotonic()
            if lock_step:
                self.wait_for_answer(lock_timeout)
            elif period > 0.0:
                deadline += period
                if time.monotonic() > deadline + 0.05:
                    node.overruns += 1
                    deadline = time.monotonic()
                self.spin_until(deadline)
            else:
                self.executor.spin_once(timeout_sec=0.0)
            node.step()
            self.publish(sync, lock_timeout)
            self.record(start)

    def publish(self, sync, timeout):
        """Publish clock and joint state; with ``sync``, wait for the sync topic in between."""
        node = self.node
        node.publish_clock()
        if sync:
            now = node.simulation.time - 1e-9
            if not self.spin_until(time.monotonic() + timeout,
                                   lambda: node.sync_stamp >= now) and self.ok():
                node.sync_timeouts += 1
                node.get_logger().warning('lock-step: nothing on {} within {} s'.format(
                    node.param('sync_topic'), timeout), throttle_duration_sec=1.0)
        node.publish_joint_state()

    def wait_for_answer(self, timeout):
        """Lock-step: process messages until a command newer than the last state arrives."""
        node = self.node
        answered = node.commands_received
        if not self.spin_until(time.monotonic() + timeout,
                               lambda: node.commands_received > answered) and self.ok():
            node.lock_step_timeouts += 1
            node.get_logger().warning('lock-step: no command within {} s'.format(timeout),
                                      throttle_duration_sec=1.0)

    def record(self, start):
        """Add the current step to the recorder, if recording."""
        if self.node.recorder is not None:
            self.node.recorder.add(self.node.simulation, time.monotonic() - start)

    def finish(self):
        """Write the record file and log the run statistics."""
        node = self.node
        stats = node.statistics()
        node.get_logger().info('simulator statistics: {}'.format(stats))
        if node.recorder is not None:
            node.recorder.save(node.param('record_file'), **stats)


def main(args=None):
    """Run the simulator node (console script ``mujoco_sim``); exit 0 on SIGINT/SIGTERM."""
    node = None
    loop = None
    try:
        init_ros(args)
        node = MujocoSimNode()
    except (ParameterException, ValueError, TypeError, OSError, RuntimeError) as error:
        # Refused at start-up (a parameter of a wrong type or value, a bad URDF): one line.
        print('mujoco_sim: cannot start: {}'.format(param_guard.one_line(error)),
              file=sys.stderr)
        if rclpy.ok():
            rclpy.shutdown()
        ignore_stop_signals()
        return 2
    try:
        executor = make_executor()
        executor.add_node(node)
        loop = SimulationLoop(node, executor)
        loop.run()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as error:
        print('mujoco_sim: {}'.format(error), file=sys.stderr)
        return 1
    finally:
        if loop is not None and node.simulation is not None:
            loop.finish()
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        ignore_stop_signals()
    return 0


if __name__ == '__main__':
    sys.exit(main())
