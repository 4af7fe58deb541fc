"""Issue 15: hostile input, faults, safety limits and ROS conventions (real rclpy, panda).

Each test drives the node (in-process, or as a process for start-up errors) the way the issue's
hostile user did and asserts the behaviour the issue expects: refused with a reason, node alive,
nothing invalid published, the correct stream answered.
"""

import math
import os
import subprocess
import sys
import threading

from builtin_interfaces.msg import Time
from geometry_msgs.msg import AccelStamped, WrenchStamped
import numpy as np
import pytest
from rcl_interfaces.srv import GetParameters, ListParameters
import rclpy
from rclpy.parameter import Parameter, parameter_value_to_python
from rclpy.qos import qos_profile_sensor_data
from rnea_ros import inverse_dynamics
from rnea_ros.node import bookkeeping as node_io
from rnea_ros.node.rnea_node import RneaNode
from sensor_msgs.msg import JointState
from std_msgs.msg import String
from std_srvs.srv import SetBool
import test_node
from test_node import _array, ARM, PANDA, ROOT
from test_node_hardening import _joint, _link, _robot
import yaml

context = test_node.context
make = test_node.make
panda = test_node.panda
ZERO = np.zeros(9)
CMD = '/test/issue15_cmd'


def _msg(names, q, qd=(), sec=1000, nanosec=0):
    msg = JointState(name=list(names), position=[float(x) for x in q],
                     velocity=[float(x) for x in qd])
    msg.header.stamp = Time(sec=sec, nanosec=nanosec)
    return msg


def _answered(h, sec, nanosec):
    return any(m.header.stamp.sec == sec and m.header.stamp.nanosec == nanosec
               for m in h.efforts)


def _panda_xml():
    with open(PANDA, encoding='utf-8') as f:
        return f.read()


def _rest(model):
    """Return a pose inside every joint range, at rest."""
    q = 0.5 * (model.lower_limits + model.upper_limits)
    return q, np.zeros(model.nv)


def _run_node(*ros_args, timeout=60):
    env = dict(os.environ, RMW_IMPLEMENTATION=os.environ.get('RMW_IMPLEMENTATION',
                                                             'rmw_fastrtps_cpp'))
    return subprocess.run([sys.executable, '-m', 'rnea_ros.node', '--ros-args', *ros_args],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


# -- 1. command_topic ---------------------------------------------------------------------------

def test_invalid_command_topic_at_run_time_is_refused_and_the_old_publisher_kept(make, panda):
    h = make(mode='gravity_compensation', command_topic=CMD)
    h.watch_commands(CMD)
    q, _ = _rest(panda)
    h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: len(h.commands) >= 1)
    result = h.node.set_parameters([Parameter('command_topic', value='bad topic!!')])[0]
    assert not result.successful and 'not a valid topic name' in result.reason
    assert h.node.get_parameter('command_topic').value == CMD
    before = len(h.commands)
    h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: len(h.commands) > before)        # the old publisher still commands


def test_invalid_command_topic_at_start_up_is_refused_with_a_reason(context):
    with pytest.raises(Exception, match='not a valid topic name'):
        RneaNode(context=context, parameter_overrides=[
            Parameter('urdf_file', value=PANDA), Parameter('command_topic', value='bad topic!!')])
    run = _run_node('-p', f'urdf_file:={PANDA}', '-p', 'command_topic:=bad topic!!')
    assert run.returncode == 2 and 'not a valid topic name' in run.stderr
    assert 'Traceback' not in run.stderr


def test_missing_urdf_file_is_an_error_at_start_up(context):
    with pytest.raises(ValueError, match='no model loaded.*cannot read URDF file'):
        RneaNode(context=context,
                 parameter_overrides=[Parameter('urdf_file', value='/no/such/robot.urdf')])
    run = _run_node('-p', 'urdf_file:=/no/such/robot.urdf')
    assert run.returncode == 2 and 'cannot read URDF file' in run.stderr
    assert 'Traceback' not in run.stderr and 'keeping the previous model' not in run.stderr


# -- 2. mimic after a live reload ---------------------------------------------------------------

def test_mimic_joint_follows_its_driver_after_a_live_reload(make, panda):
    h = make(urdf_file='', mode='gravity_compensation')
    h.description.publish(String(data=_panda_xml()))
    h.spin_until(lambda: h.node._rt is not None)
    names = list(panda.joint_names[:8])             # no panda_finger_joint2: it follows
    q, _ = _rest(panda)
    q[7] = 0.01
    out = h.joint_state(names, q[:8])
    assert out.position[8] == pytest.approx(0.01)
    rt = h.node._rt
    h.description.publish(String(data=_panda_xml() + '\n<!-- reloaded -->\n'))  # another text
    h.spin_until(lambda: h.node._rt is not rt)
    q[7] = 0.03
    out = h.joint_state(names, q[:8])
    assert out.position[8] == pytest.approx(0.03)
    q[8] = 0.03
    np.testing.assert_allclose(out.effort, np.clip(
        inverse_dynamics(panda, q, ZERO, ZERO), -panda.effort_limits, panda.effort_limits),
        atol=1e-12)


# -- 3. a description refused for a parameter is retried ----------------------------------------

def test_description_refused_for_a_parameter_is_retried_when_it_becomes_valid(make, panda):
    h = make(urdf_file='', mode='gravity_compensation',
             command_joints=['panda_joint1', 'no_such_joint'])
    h.description.publish(String(data=_panda_xml()))
    h.spin_until(lambda: 'invalid parameters' in h.node._last_error)
    assert h.node._rt is None and 'no_such_joint' in h.node._last_error
    assert 'robot description' not in h.node._last_error
    assert h.node.set_parameters([Parameter('command_joints', value=ARM)])[0].successful
    h.spin_until(lambda: h.node._rt is not None)
    q, _ = _rest(panda)
    assert h.joint_state(panda.joint_names, q) is not None


# -- 4. one stamp in the future must not stop a correct stream ----------------------------------

def test_one_future_stamp_does_not_stop_a_correct_stream(make, panda):
    h = make(mode='gravity_compensation', command_topic=CMD)
    h.watch_commands(CMD)
    q, _ = _rest(panda)
    names = panda.joint_names
    for k in range(1, 4):
        h.pubs['joint_states'].publish(_msg(names, q, nanosec=k * 1_000_000))
        h.spin_until(lambda k=k: _answered(h, 1000, k * 1_000_000))
    h.pubs['joint_states'].publish(_msg(names, q, nanosec=900_000_000))    # 0.9 s ahead
    h.spin_until(lambda: _answered(h, 1000, 900_000_000))
    for k in range(4, 12):                                                  # the true stream
        h.pubs['joint_states'].publish(_msg(names, q, nanosec=k * 1_000_000))
        h.spin_for(0.02)
    answered = [k for k in range(4, 12) if _answered(h, 1000, k * 1_000_000)]
    assert answered == list(range(6, 12))           # 2 lost to the outlier, then followed
    h.spin_for(0.1)
    commanded = len(h.commands)
    h.pubs['joint_states'].publish(_msg(names, q, nanosec=20_000_000))
    h.spin_until(lambda: len(h.commands) > commanded)
    assert not h.node._stale


# -- 5. unknown names are bounded -----------------------------------------------------------------

def test_unknown_joint_names_are_bounded_and_duplicates_reported_briefly(make, panda):
    h = make(mode='gravity_compensation')
    q, _ = _rest(panda)
    names = list(panda.joint_names)
    for k in range(20):
        extra = [f'ghost_{k}_{i}' for i in range(250)]
        h.pubs['joint_states'].publish(_msg(names + extra, list(q) + [0.0] * 250,
                                            nanosec=1000 + k))
        h.spin_for(0.01)
    h.spin_until(lambda: _answered(h, 1000, 1019))
    joints = h.node._rt.joints
    assert len(joints.unknown) <= node_io.MAX_UNKNOWN_NAMES and joints.unknown_count > 0
    assert len(h.node._ignored_names(h.node._rt)) < 2000
    dup = [f'dup_{i % 1000}' for i in range(2000)]      # best effort: keep it below 64 kB
    h.pubs['joint_states'].publish(_msg(dup, [0.0] * 2000, nanosec=5000))
    h.spin_until(lambda: 'more than once' in h.node._last_error)
    assert len(h.node._last_error) < 500
    many = [f'n{i}' for i in range(node_io.MAX_NAMES + 1)]
    assert 'at most' in node_io.NameMap(names).lookup(many)[3]


# -- 6. magnitude bounds and the output guard -----------------------------------------------------

def test_absurd_inputs_are_rejected_and_absurd_efforts_never_published(make, panda):
    h = make(mode='inverse_dynamics', clamp_efforts=False, desired_timeout=10.0)
    base = h.peer.create_publisher(AccelStamped, '/rnea/base_acceleration', 10)
    h.spin_until(lambda: base.get_subscription_count() > 0)
    q, qd = _rest(panda)
    inputs = [
        ('accelerations_array', _array([1e300] * 9), 'desired_accelerations_array rejected'),
        ('wrench', WrenchStamped(), 'external_wrenches rejected'),
    ]
    inputs[1][1].header.frame_id = 'panda_link7'
    inputs[1][1].wrench.force.x = 1e300
    for key, msg, reason in inputs:
        h.node._last_error = ''
        h.publish(key, msg)
        assert reason in h.node._last_error and 'magnitude' in h.node._last_error
    accel = AccelStamped()
    accel.accel.linear.x = 1e300
    base.publish(accel)
    h.spin_until(lambda: 'base_acceleration rejected' in h.node._last_error)
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, ZERO), atol=1e-12)
    # Joint velocities of 1e5 rad/s pass the input bound (1e6) but the efforts would be ~1e10.
    published = len(h.efforts)
    h.joint_state(panda.joint_names, q, [1e5] * 9, wait=False)
    h.spin_until(lambda: 'output rejected' in h.node._last_error)
    assert len(h.efforts) == published
    for msg in h.efforts:
        assert np.isfinite(msg.effort).all()
        assert np.abs(msg.effort).max() <= node_io.MAX_OUTPUT


# -- 7. urdf_file naming a FIFO or a device -------------------------------------------------------

def test_urdf_file_naming_a_fifo_or_a_device_is_refused_without_blocking(make, panda, tmp_path):
    fifo = str(tmp_path / 'robot.urdf')
    os.mkfifo(fifo)
    h = make(mode='gravity_compensation')
    results = []
    setter = threading.Thread(target=lambda: results.append(
        h.node.set_parameters([Parameter('urdf_file', value=fifo)])[0]), daemon=True)
    setter.start()
    setter.join(timeout=10.0)
    if setter.is_alive():                   # unblock the reader before failing
        with open(fifo, 'w', encoding='utf-8') as f:
            f.write('<robot name="x"/>')
        setter.join(timeout=5.0)
    assert results and not results[0].successful
    assert 'not a regular file' in results[0].reason
    result = h.node.set_parameters([Parameter('urdf_file', value='/dev/zero')])[0]
    assert not result.successful and 'not a regular file' in result.reason
    q, _ = _rest(panda)
    assert h.joint_state(panda.joint_names, q) is not None


# -- 13. reaction-wrench topics are injective -----------------------------------------------------

def test_joints_arm_dot_joint_and_arm_joint_get_distinct_wrench_topics(make):
    xml = _robot([_link('base'), _link('a'), _link('b')],
                 [_joint('arm.joint', 'base', 'a'), _joint('arm_joint', 'a', 'b')])
    h = make(urdf_file='', robot_description=xml, mode='gravity_compensation')
    topics = {name for name, _ in h.node.get_publisher_names_and_types_by_node(
        'rnea', h.node.get_namespace()) if '/reaction_wrenches/' in name}
    assert len(topics) == 2 and '/rnea/reaction_wrenches/arm_joint' in topics
    assert node_io.topic_tokens(['arm.joint', 'arm_joint']) == [
        'arm_joint_' + format(__import__('zlib').crc32(b'arm.joint'), '08x'), 'arm_joint']


# -- 14. malformed stamps -------------------------------------------------------------------------

def test_header_with_nanosec_beyond_a_second_is_rejected(make, panda):
    h = make(mode='gravity_compensation')
    q, _ = _rest(panda)
    h.publish('joint_states', _msg(panda.joint_names, q, nanosec=4_000_000_000))
    assert 'nanosec 4000000000' in h.node._last_error
    assert not _answered(h, 1000, 4_000_000_000)
    assert h.joint_state(panda.joint_names, q) is not None


# -- joint limit guard ----------------------------------------------------------------------------

def _enable(h, value):
    client = h.peer.create_client(SetBool, '/rnea/enable')
    assert client.wait_for_service(timeout_sec=5.0)
    future = client.call_async(SetBool.Request(data=value))
    h.spin_until(future.done)
    return future.result()


@pytest.mark.parametrize('action', ['zero', 'hold'])
def test_joint_limit_guard_stops_commands_until_back_and_re_enabled(make, panda, action):
    h = make(mode='gravity_compensation', command_topic=CMD, joint_limit_guard=action,
             joint_limit_margin=0.05)
    h.watch_commands(CMD)
    q, qd = _rest(panda)
    h.joint_state(panda.joint_names, q, qd)
    h.spin_until(lambda: len(h.commands) >= 1)
    assert np.abs(h.commands[-1].data).max() > 0.0
    out = q.copy()
    out[1] = panda.upper_limits[1] + 0.1
    count = len(h.commands)
    h.joint_state(panda.joint_names, out, qd)
    h.spin_for(0.05)
    if action == 'zero':
        assert len(h.commands) == count + 1 and not np.any(h.commands[-1].data)
    else:
        assert len(h.commands) == count
    count = len(h.commands)
    assert 'joint limit guard' in h.node._last_error and 'panda_joint2' in h.node._last_error
    h.diagnostics.clear()
    h.spin_until(lambda: h.diagnostics, timeout=3.0)
    assert h.diagnostics[-1].status[0].level == bytes([node_io.ERROR])
    response = _enable(h, True)                     # still outside: refused
    assert not response.success and 'panda_joint2' in response.message
    h.joint_state(panda.joint_names, q, qd)         # back inside, not re-enabled yet
    fast = qd.copy()
    fast[0] = 2.0 * panda.velocity_limits[0]
    h.spin_for(0.05)
    assert len(h.commands) == count
    assert _enable(h, True).success
    h.joint_state(panda.joint_names, q, qd)
    h.spin_until(lambda: len(h.commands) > count)
    h.joint_state(panda.joint_names, q, fast)       # over the velocity limit
    assert 'velocity limit' in h.node._last_error


# -- QoS ------------------------------------------------------------------------------------------

def test_best_effort_joint_state_publishers_are_heard(make, panda):
    h = make(mode='gravity_compensation')
    best_effort = h.peer.create_publisher(JointState, '/joint_states', qos_profile_sensor_data)
    h.spin_until(lambda: best_effort.get_subscription_count() > 0)
    q, _ = _rest(panda)
    best_effort.publish(_msg(panda.joint_names, q, nanosec=777))
    h.spin_until(lambda: _answered(h, 1000, 777))
    assert h.node.has_parameter('qos_overrides./joint_states.subscription.reliability')


# -- parameters: a dump loads back ----------------------------------------------------------------

def _call(h, client, request):
    assert client.wait_for_service(timeout_sec=5.0)
    future = client.call_async(request)
    h.spin_until(future.done)
    return future.result()


def test_parameter_dump_gives_a_yaml_that_loads_back(make, tmp_path):
    h = make(mode='gravity_compensation')
    names = _call(h, h.peer.create_client(ListParameters, '/rnea/list_parameters'),
                  ListParameters.Request()).result.names
    values = _call(h, h.peer.create_client(GetParameters, '/rnea/get_parameters'),
                   GetParameters.Request(names=names)).values
    # rclpy answers an empty list when one parameter is uninitialized: `ros2 param dump` = {}
    assert len(values) == len(names) and 'command_joints' in names
    assert all(v.type != 0 for v in values), 'a parameter is declared without a value'
    dump = {name: parameter_value_to_python(v) for name, v in zip(names, values)}
    dump = {k: (list(v) if hasattr(v, 'typecode') else v) for k, v in dump.items()
            if not k.startswith('qos_overrides')}
    path = tmp_path / 'dump.yaml'
    path.write_text(yaml.safe_dump({'/rnea': {'ros__parameters': dump}}))
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=['--ros-args', '--params-file', str(path)],
               domain_id=test_node.DOMAIN_ID)
    try:
        node = RneaNode(context=ctx)
        for name, value in dump.items():
            got = node.get_parameter(name).value
            got = list(got) if hasattr(got, 'typecode') else got
            assert got == value, name
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_output_guard_refuses_non_finite_and_absurd_values():
    assert node_io.output_error(np.array([1.0, 2.0])) is None
    assert 'non-finite' in node_io.output_error(np.array([math.nan]))
    assert 'above' in node_io.output_error(np.array([1.0]), np.array([[2e9]]))


# -- lifecycle --------------------------------------------------------------------------

def test_lifecycle_node_configure_loads_activate_commands_deactivate_sends_zero(context, panda):
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.lifecycle import TransitionCallbackReturn
    from rnea_ros.node.lifecycle import ManagedRneaNode
    from std_msgs.msg import Float64MultiArray
    node = ManagedRneaNode(context=context, parameter_overrides=[
        Parameter('urdf_file', value=PANDA), Parameter('mode', value='gravity_compensation'),
        Parameter('command_topic', value=CMD)])
    peer = rclpy.create_node('lifecycle_peer', context=context)
    executor = SingleThreadedExecutor(context=context)
    for n in (node, peer):
        executor.add_node(n)
    commands, efforts = [], []
    peer.create_subscription(Float64MultiArray, CMD, commands.append, 100)
    peer.create_subscription(JointState, '/rnea/joint_efforts', efforts.append, 100)
    pub = peer.create_publisher(JointState, '/joint_states', 10)
    h = test_node.Harness.__new__(test_node.Harness)
    h.executor = executor
    try:
        h.spin_until(lambda: pub.get_subscription_count() > 0)
        assert node._rt is None                             # unconfigured: no model yet
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS
        assert node._rt is not None and node._rt.model.name == 'panda'
        q, _ = _rest(panda)
        pub.publish(_msg(panda.joint_names, q, nanosec=1))
        h.spin_until(lambda: efforts)                       # computes, but does not command
        h.spin_for(0.05)
        assert not commands
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        pub.publish(_msg(panda.joint_names, q, nanosec=2))
        h.spin_until(lambda: commands)
        assert np.abs(commands[-1].data).max() > 0.0
        assert node.trigger_deactivate() == TransitionCallbackReturn.SUCCESS
        h.spin_until(lambda: not np.any(commands[-1].data))  # one zero command
        count = len(commands)
        pub.publish(_msg(panda.joint_names, q, nanosec=3))
        h.spin_until(lambda: len(efforts) >= 3)
        h.spin_for(0.05)
        assert len(commands) == count
    finally:
        executor.shutdown(timeout_sec=0.1)
        node.destroy_node()
        peer.destroy_node()
