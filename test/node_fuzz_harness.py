"""The nodes under test of the fuzz tests (issue 29): each in-process, with a probe and clients.

:class:`Target` starts one of the four nodes (rnea, its lifecycle variant, trajectory
feed-forward, MuJoCo simulator) with a peer node and one SingleThreadedExecutor, counts an
exception that leaves the executor as a kill (and restarts the node), and reads the node's
parameters through its own services; :class:`Probe` sends one input and returns the node's
output for it (the efforts).  Used by test_node_param_fuzz.py and test_node_message_fuzz.py.
"""

import importlib.util
import math
import os
import time

from builtin_interfaces.msg import Duration, Time
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.msg import ParameterType, ParameterValue
from rcl_interfaces.srv import (DescribeParameters, GetParameters, ListParameters,
                                SetParameters, SetParametersAtomically)
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from robots import urdf_path
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

HAVE_MUJOCO = importlib.util.find_spec('mujoco') is not None    # the Jazzy leg has none
PANDA = urdf_path('panda')
PROBE_TIMEOUT = float(os.environ.get('RNEA_FUZZ_PROBE_TIMEOUT', '5'))   # s, per answer
T = ParameterType
ARRAY_TYPES = (T.PARAMETER_BYTE_ARRAY, T.PARAMETER_BOOL_ARRAY, T.PARAMETER_INTEGER_ARRAY,
               T.PARAMETER_DOUBLE_ARRAY, T.PARAMETER_STRING_ARRAY)
FIELDS = {T.PARAMETER_BOOL: 'bool_value', T.PARAMETER_INTEGER: 'integer_value',
          T.PARAMETER_DOUBLE: 'double_value', T.PARAMETER_STRING: 'string_value',
          T.PARAMETER_BYTE_ARRAY: 'byte_array_value', T.PARAMETER_BOOL_ARRAY: 'bool_array_value',
          T.PARAMETER_INTEGER_ARRAY: 'integer_array_value',
          T.PARAMETER_DOUBLE_ARRAY: 'double_array_value',
          T.PARAMETER_STRING_ARRAY: 'string_array_value'}


def value_msg(kind, value):
    """Return a ParameterValue of ROS type ``kind`` holding ``value``."""
    msg = ParameterValue(type=kind)
    if kind != T.PARAMETER_NOT_SET:
        setattr(msg, FIELDS[kind], value)
    return msg


def plain(msg):
    """Return (type, Python value) of a ParameterValue (lists for arrays, NaN-safe later)."""
    if msg.type == T.PARAMETER_NOT_SET:
        return msg.type, None
    value = getattr(msg, FIELDS[msg.type])
    return msg.type, list(value) if msg.type in ARRAY_TYPES else value


# -- the nodes under test ----------------------------------------------------------------------

def _rnea_overrides():
    return [Parameter('urdf_file', value=PANDA), Parameter('mode', value='gravity_compensation'),
            Parameter('desired_timeout', value=10.0),
            Parameter('joint_state_timeout', value=10.0),
            Parameter('joint_limit_guard', value='off')]


def _make_rnea(context):
    from rnea_ros.node.rnea_node import RneaNode
    return RneaNode(context=context, node_name='fuzz_rnea', parameter_overrides=_rnea_overrides())


def _make_lifecycle(context):
    from rnea_ros.node.lifecycle import ManagedRneaNode
    node = ManagedRneaNode(context=context, node_name='fuzz_lifecycle',
                           parameter_overrides=_rnea_overrides())
    node.trigger_configure()
    node.trigger_activate()
    return node


def _make_feedforward(context):
    from rnea_ros.feedforward.node import TrajectoryFeedforwardNode
    return TrajectoryFeedforwardNode(
        context=context, node_name='fuzz_feedforward', parameter_overrides=[
            Parameter('urdf_file', value=PANDA),
            Parameter('output_topic', value='/fuzz_feedforward/out')])


def _make_sim(context):
    from rnea_ros.sim.mujoco_sim import MujocoSimNode
    return MujocoSimNode(context=context, parameter_overrides=[
        Parameter('urdf_file', value=PANDA), Parameter('publish_clock', value=False),
        Parameter('joint_states_topic', value='/fuzz_sim/joint_states'),
        Parameter('command_topic', value='/fuzz_sim/commands')])


PANDA_JOINTS = [f'panda_joint{i}' for i in range(1, 8)] + [
    'panda_finger_joint1', 'panda_finger_joint2']
POSE = [0.1, -0.4, 0.2, -2.0, 0.1, 1.6, 0.7, 0.02, 0.02]


class Probe:
    """One node's probe: an input and the output it answers with (efforts)."""

    def __init__(self, target):
        """Create the peer's publisher and subscription for ``target``'s kind."""
        self.target = target
        self.answers = {}
        self.stamp = 0
        peer, kind = target.peer, target.kind
        if kind in ('rnea', 'lifecycle'):
            self.pub = peer.create_publisher(JointState, '/joint_states', 10)
            self.sub = peer.create_subscription(
                JointState, f'/fuzz_{kind}/joint_efforts', self._take_state, 10)
        elif kind == 'feedforward':
            self.pub = peer.create_publisher(JointTrajectory,
                                             '/fuzz_feedforward/joint_trajectory', 10)
            self.sub = peer.create_subscription(JointTrajectory, '/fuzz_feedforward/out',
                                                self._take_trajectory, 10)
        else:
            self.pub = peer.create_publisher(Float64MultiArray, '/fuzz_sim/commands', 10)
            self.sub = peer.create_subscription(JointState, '/fuzz_sim/joint_states',
                                                self._take_state, 10)

    def _take_state(self, msg):
        key = 'sim' if self.target.kind == 'mujoco_sim' else msg.header.stamp.nanosec
        self.answers[key] = list(msg.effort)

    def _take_trajectory(self, msg):
        self.answers[msg.header.stamp.nanosec] = [list(p.effort) for p in msg.points]

    def ready(self):
        """Return whether the publisher and subscription are matched with the node."""
        return self.pub.get_subscription_count() > 0 and self.sub.get_publisher_count() > 0

    def ask(self):
        """Send the probe input; return the answer (None if none within 5 s)."""
        self.stamp += 1
        stamp = Time(sec=1000, nanosec=self.stamp)
        kind, target = self.target.kind, self.target
        if kind in ('rnea', 'lifecycle'):
            msg = JointState(name=PANDA_JOINTS, position=POSE)
            msg.header.stamp = stamp
            self.pub.publish(msg)
            key = self.stamp
        elif kind == 'feedforward':
            msg = JointTrajectory(joint_names=PANDA_JOINTS)
            msg.header.stamp = stamp
            msg.points = [JointTrajectoryPoint(positions=POSE,
                                               time_from_start=Duration(sec=1))]
            self.pub.publish(msg)
            key = self.stamp
        else:       # the simulator: the efforts it applies for one command, one step
            node = target.node
            received = node.commands_received
            self.pub.publish(Float64MultiArray(data=[0.5 * i - 1.0 for i in range(9)]))
            if not target.spin_until(lambda: node.commands_received > received):
                return None
            self.answers.clear()
            node.step()
            node.publish_joint_state()
            key = 'sim'
        if not target.spin_until(lambda: key in self.answers, PROBE_TIMEOUT):
            return None
        return self.answers.pop(key)


class Target:
    """A node under test, a peer node with service clients and the probe, one executor."""

    MAKERS = dict({'rnea': _make_rnea, 'lifecycle': _make_lifecycle,
                   'feedforward': _make_feedforward},
                  **({'mujoco_sim': _make_sim} if HAVE_MUJOCO else {}))

    def __init__(self, context, kind):
        """Start the node of ``kind`` and wait until its services and probe are connected."""
        self.context, self.kind = context, kind
        self.peer = rclpy.create_node(f'fuzz_peer_{kind}', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.peer)
        self.node = None
        self.killed = 0
        self.died = None
        self.start()
        self.name = self.node.get_fully_qualified_name()
        self.probe = Probe(self)
        self.clients = {
            'list': self.peer.create_client(ListParameters, f'{self.name}/list_parameters'),
            'describe': self.peer.create_client(DescribeParameters,
                                                f'{self.name}/describe_parameters'),
            'get': self.peer.create_client(GetParameters, f'{self.name}/get_parameters'),
            'set_parameters': self.peer.create_client(SetParameters,
                                                      f'{self.name}/set_parameters')}
        # The graph reaches the peer by discovery: wait until it shows the node's own atomic
        # service (every rclpy node has one) before listing the others, or a loaded machine
        # lists a partial graph.
        assert self.spin_until(lambda: f'{self.name}/set_parameters_atomically' in
                               self.atomic_services(), 30.0)
        for service in self.atomic_services():
            self.clients[service.rsplit('/', 1)[-1]] = self.peer.create_client(
                SetParametersAtomically, service)
        assert self.spin_until(lambda: all(c.service_is_ready() for c in self.clients.values())
                               and self.probe.ready(), 30.0)
        self.baseline = self.probe.ask()
        assert self.baseline is not None and all(map(math.isfinite, _flat(self.baseline)))

    def atomic_services(self):
        """Return the node's services of type SetParametersAtomically the graph shows now."""
        return [service for service, types in self.peer.get_service_names_and_types_by_node(
                self.node.get_name(), self.node.get_namespace())
                if 'rcl_interfaces/srv/SetParametersAtomically' in types]

    def start(self):
        """(Re)start the node (after a request killed it)."""
        if self.node is not None:
            self.executor.remove_node(self.node)
            try:
                self.node.destroy_node()
            except Exception:  # noqa: B902 - a killed node may not tear down cleanly
                pass
        self.node = self.MAKERS[self.kind](self.context)
        self.executor.add_node(self.node)

    def spin_until(self, condition, timeout=5.0):
        """Spin until ``condition()``; False on timeout; an exception = the node was killed."""
        end = time.monotonic() + timeout
        while not condition():
            if time.monotonic() > end:
                return False
            try:
                self.executor.spin_once(timeout_sec=0.005)
            except Exception as exc:  # noqa: B902 - what would end the node's process
                self.killed += 1
                self.died = f'{type(exc).__name__}: {exc}'[:300]
                self.start()
                self.spin_until(lambda: all(c.service_is_ready()
                                            for c in self.clients.values()), 10.0)
                return False
        return True

    def call(self, client, request):
        """Call a service of the node; return the response or None (killed or no answer)."""
        future = self.clients[client].call_async(request)
        if not self.spin_until(future.done):
            return None
        return future.result()

    def close(self):
        """Destroy both nodes."""
        self.executor.shutdown(timeout_sec=0.1)
        self.node.destroy_node()
        self.peer.destroy_node()

    # -- what the node declares (read through its services) --------------------------------

    def parameters(self):
        """Return {name: (descriptor, ParameterValue)} read from the node's services."""
        names = self.call('list', ListParameters.Request()).result.names
        descriptors = self.call('describe', DescribeParameters.Request(names=names)).descriptors
        values = self.call('get', GetParameters.Request(names=names)).values
        if len(values) != len(names):   # one is declared without a value: rclpy answers []
            values = [(self.call('get', GetParameters.Request(names=[n])).values or
                       [ParameterValue()])[0] for n in names]
        return {name: (d, v) for name, d, v in zip(names, descriptors, values)}

    def value(self, name):
        """Return the node's current ParameterValue of ``name`` (in-process: fast)."""
        return self.node.get_parameter_or(name).get_parameter_value()

    def restore(self, name, value):
        """Set a parameter back to ``value`` (a ParameterValue), in-process; its result."""
        param = Parameter.from_parameter_msg(ParameterMsg(name=name, value=value))
        try:
            return self.node.set_parameters([param])[0]
        except Exception as exc:  # noqa: B902 - e.g. a delete was accepted: it is gone
            return f'{type(exc).__name__}: {exc}'


def _flat(answer):
    if answer and isinstance(answer[0], list):
        return [x for row in answer for x in row]
    return list(answer)
