"""Reference publisher: streams a smooth joint trajectory point for the rnea node.

Publishes trajectory_msgs/JointTrajectory on the rnea node's ``~/reference`` topic (default
``/rnea/reference``): one point with positions, velocities and accelerations by joint name, from
a sinusoid or a min-jerk move per joint (see :mod:`rnea_ros.sim.trajectories`). Run it with
``ros2 run rnea_ros reference_trajectory`` or ``python -m rnea_ros.sim.reference_trajectory``.
"""
import sys
import time

from rcl_interfaces.msg import ParameterType
import rclpy
from rclpy.clock import Clock, ClockType
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.time import Time
from rnea_ros.sim.ros_helpers import (declare_parameters, ignore_stop_signals, init_ros,
                                      parameter_value, spin_until_shutdown)
from rnea_ros.sim.trajectories import ReferenceProfile, TrajectoryFile
from rosgraph_msgs.msg import Clock as RosClock
from sensor_msgs.msg import JointState
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

PARAMETERS = (
    ('topic', '/rnea/reference', ParameterType.PARAMETER_STRING,
     'trajectory_msgs/JointTrajectory output (the ~/reference topic of the rnea node)'),
    ('joints', [], ParameterType.PARAMETER_STRING_ARRAY,
     'joint names; empty: the names of the first /joint_states message'),
    ('start_positions', [], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'positions at t = 0 (rad or m) in the order of joints; empty: the first joint state'),
    ('joint_states_topic', '/joint_states', ParameterType.PARAMETER_STRING,
     'where joint names and start positions are read when not given'),
    ('profile', 'sinusoid', ParameterType.PARAMETER_STRING, 'sinusoid or min_jerk'),
    ('trajectory_file', '', ParameterType.PARAMETER_STRING,
     'play an excitation trajectory YAML (rnea-ros excite) instead of profile: its joints, '
     'at rest at its first point before t = 0 and at its last after its duration'),
    ('amplitude', [0.1], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'sinusoid: q = start + amplitude (1 - cos(2 pi f t)); one value or one per joint'),
    ('frequency', [0.2], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'sinusoid frequency (Hz); one value or one per joint'),
    ('goal_positions', [], ParameterType.PARAMETER_DOUBLE_ARRAY,
     'min_jerk: goal per joint (empty: stay at the start)'),
    ('duration', 2.0, ParameterType.PARAMETER_DOUBLE, 'min_jerk: seconds per move'),
    ('repeat', True, ParameterType.PARAMETER_BOOL,
     'min_jerk: move back and forth between start and goal'),
    ('rate', 1000.0, ParameterType.PARAMETER_DOUBLE,
     'points per second; with use_sim_time one point per /clock message, at most rate per '
     'simulated second'),
    ('start_time', -1.0, ParameterType.PARAMETER_DOUBLE,
     'node-clock time (s) of t = 0; negative: the time of the first published point'),
    ('lookahead', 0.0, ParameterType.PARAMETER_DOUBLE,
     'publish the point for now + lookahead (s): one control period compensates the delay '
     'until the controller uses it when the simulator clock drives this publisher'),
)


def trajectory_message(joint_names, point, stamp):
    """Return a one-point JointTrajectory from ``(positions, velocities, accelerations)``."""
    positions, velocities, accelerations = point
    msg = JointTrajectory()
    msg.header.stamp = stamp
    msg.joint_names = list(joint_names)
    msg.points = [JointTrajectoryPoint(
        positions=positions.tolist(), velocities=velocities.tolist(),
        accelerations=accelerations.tolist())]
    return msg


class ReferenceTrajectoryNode(Node):
    """Publish the point of a :class:`ReferenceProfile` at the current node time."""

    def __init__(self, **kwargs):
        """Declare parameters; build the profile now or from the first joint state."""
        super().__init__('reference_trajectory', **kwargs)
        declare_parameters(self, PARAMETERS)
        self.profile = None
        self.joint_names = list(self.param('joints'))
        self.start_time = None      # node-clock nanoseconds of t = 0
        self.last_publish = -float('inf')      # time.monotonic() of the last point
        self.lookahead = self.param('lookahead')
        self.publisher = self.create_publisher(JointTrajectory, self.param('topic'), 10)
        start = list(self.param('start_positions'))
        if self.param('trajectory_file'):
            self.load_trajectory_file(self.param('trajectory_file'))
        elif self.joint_names and start:
            self.build_profile(start)
        else:
            self.state_subscription = self.create_subscription(
                JointState, self.param('joint_states_topic'), self.on_joint_state, 10)
        rate = self.param('rate')
        if not rate > 0.0:
            raise ValueError('rate must be positive, got {}'.format(rate))
        self.period_ns = int(round(1e9 / rate))
        self.next_due = None
        if self.param('use_sim_time'):
            # Driven by the simulator: one point per /clock tick (at most ``rate`` per second).
            self.create_subscription(RosClock, '/clock', self.on_clock, 10)
        else:
            # (a lambda: rclpy >= 9 passes a TimerInfo to a callback that takes an argument)
            self.create_timer(1.0 / rate, lambda: self.publish_point())
        # Simulated time may stand still (a simulator waiting for its first command): repeat
        # the current point at 20 Hz of wall time so the controller can start.
        self.create_timer(0.05, self.keep_alive, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def param(self, name):
        """Return a parameter's value."""
        return parameter_value(self, name)

    def build_profile(self, start):
        """Create the profile from the parameters and the start positions (ValueError if bad)."""
        if len(start) != len(self.joint_names):
            raise ValueError('start_positions has {} values for {} joints'.format(
                len(start), len(self.joint_names)))
        self.profile = ReferenceProfile(
            self.param('profile'), start, amplitude=self.param('amplitude'),
            frequency=self.param('frequency'),
            goal=list(self.param('goal_positions')) or None,
            duration=self.param('duration'), repeat=self.param('repeat'))
        self.get_logger().info('{} reference for {} on {}'.format(
            self.param('profile'), self.joint_names, self.param('topic')))

    def load_trajectory_file(self, path):
        """Play the trajectory of an excitation YAML file (ValueError if unusable)."""
        self.profile = TrajectoryFile(path)
        if self.joint_names and sorted(self.joint_names) != sorted(self.profile.joints):
            raise ValueError('joints {} differ from the joints of {}: {}'.format(
                self.joint_names, path, self.profile.joints))
        self.joint_names = list(self.profile.joints)
        self.get_logger().info('playing {} ({:g} s) for {} on {}'.format(
            path, self.profile.duration, self.joint_names, self.param('topic')))

    def on_joint_state(self, msg):
        """Take joint names and start positions from the first complete joint state."""
        if self.profile is not None:
            return
        names = self.joint_names or list(msg.name)
        positions = dict(zip(msg.name, msg.position))
        missing = [name for name in names if name not in positions]
        if missing:
            self.get_logger().warning('joint state lacks {}'.format(missing), once=True)
            return
        start = list(self.param('start_positions')) or [positions[name] for name in names]
        self.joint_names = names
        try:
            self.build_profile(start)
        except ValueError as error:
            self.get_logger().error('bad reference parameters: {}'.format(error), once=True)

    def on_clock(self, msg):
        """Publish the point of a new simulated time (decimated to ``rate``)."""
        stamp = msg.clock.sec * 1000000000 + msg.clock.nanosec
        if self.next_due is not None and stamp < self.next_due:
            return
        self.next_due = stamp + self.period_ns - self.period_ns // 10
        self.publish_point(Time(nanoseconds=stamp, clock_type=ClockType.ROS_TIME))

    def publish_point(self, now=None):
        """Publish the reference point for ``now`` (default: the node's clock)."""
        if self.profile is None:
            return
        now = self.get_clock().now() if now is None else now
        if self.start_time is None:
            configured = self.param('start_time')
            self.start_time = (int(round(configured * 1e9)) if configured >= 0.0
                               else now.nanoseconds)
        elapsed = (now.nanoseconds - self.start_time) * 1e-9
        point = self.profile(elapsed + self.lookahead)
        self.publisher.publish(trajectory_message(self.joint_names, point, now.to_msg()))
        self.last_publish = time.monotonic()

    def keep_alive(self):
        """Republish the current point when nothing went out for 50 ms of wall time."""
        if time.monotonic() - self.last_publish > 0.05:
            self.publish_point()


def main(args=None):
    """Run the reference publisher (console script ``reference_trajectory``); exit 0 on stop."""
    init_ros(args)
    node = None
    try:
        node = ReferenceTrajectoryNode()
        spin_until_shutdown(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except ValueError as error:
        print('reference_trajectory: {}'.format(error), file=sys.stderr)
        return 1
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
        ignore_stop_signals()
    return 0


if __name__ == '__main__':
    sys.exit(main())
