"""Issue 23, node side: configuration that cannot go silently wrong (real rclpy, panda).

Parameters as a ROS user types them (command line, YAML file, ``ros2 param set``), a leaf link
without inertia, undecodable URDF bytes, diagnostics names in a namespace, a second publisher
on the command topic, silent waits and joints no driver publishes, and what only unit tests
covered before: URDF effort clamping, the limit guard's margins, the output stamp.
"""

import math
import signal

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
import numpy as np
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg, ParameterType
from rcl_interfaces.srv import GetParameters, SetParameters
import rclpy
from rclpy.parameter import get_parameter_value, Parameter
from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.analysis.cli import main as cli_main
from rnea_ros.node import bookkeeping as node_io
from rnea_ros.node import params as node_params
from rnea_ros.node.rnea_node import RneaNode
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
import test_node
from test_node import _array, _state, PANDA
from test_node_hardening import _joint, _link, _robot

context = test_node.context
make = test_node.make
panda = test_node.panda
ZERO = np.zeros(9)
CMD = '/test/issue23_cmd'
FINGERS = ['panda_finger_joint1', 'panda_finger_joint2']


def _node_with_args(*ros_args, **kwargs):
    """Start an RneaNode in a fresh context whose rcl arguments are ``ros_args``."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=['--ros-args', *ros_args], domain_id=test_node.DOMAIN_ID)
    try:
        return RneaNode(context=ctx, **kwargs), ctx
    except Exception:
        rclpy.shutdown(context=ctx)
        raise


def _close(node, ctx):
    node.destroy_node()
    rclpy.shutdown(context=ctx)


def _call(h, client, request):
    assert client.wait_for_service(timeout_sec=5.0)
    future = client.call_async(request)
    h.spin_until(future.done)
    return future.result()


def _ros2_param_set(h, name, text):
    """Set a parameter as `ros2 param set /rnea NAME TEXT` does (its YAML guess, the service)."""
    client = h.peer.create_client(SetParameters, '/rnea/set_parameters')
    request = SetParameters.Request(parameters=[
        ParameterMsg(name=name, value=get_parameter_value(string_value=text))])
    return _call(h, client, request).results[0]


def _ros2_param_get(h, name):
    """Return the ParameterValue `ros2 param get /rnea NAME` receives."""
    client = h.peer.create_client(GetParameters, '/rnea/get_parameters')
    return _call(h, client, GetParameters.Request(names=[name])).values[0]


def _rest(model):
    return 0.5 * (model.lower_limits + model.upper_limits), np.zeros(model.nv)


# -- 5. YAML booleans for string parameters ----------------------------------------------------

def test_readme_joint_limit_guard_off_from_the_command_line_starts_the_node():
    """`-p joint_limit_guard:=off` (YAML: false) is the word 'off', not a start-up crash."""
    node, ctx = _node_with_args('-p', f'urdf_file:={PANDA}', '-p', 'joint_limit_guard:=off',
                                '-p', 'rate:=100', '-p', 'kd:=[20]')
    try:
        param = node.get_parameter('joint_limit_guard')
        assert param.type_ == Parameter.Type.STRING and param.value == 'off'
        assert node._rt.settings.guard is None
        # Integers where the parameter is a double (`rate:=100`, `kd:=[20]`) are numbers too.
        assert node.get_parameter('rate').type_ == Parameter.Type.DOUBLE
        assert node.get_parameter('rate').value == 100.0
        assert node.get_parameter('kd').type_ == Parameter.Type.DOUBLE_ARRAY
        assert list(node.get_parameter('kd').value) == [20.0]
    finally:
        _close(node, ctx)


def test_joint_limit_guard_off_unquoted_in_a_yaml_params_file(tmp_path):
    """A params file with `joint_limit_guard: off` (unquoted) gives the word 'off'."""
    path = tmp_path / 'params.yaml'
    path.write_text('/**:\n  ros__parameters:\n    joint_limit_guard: off\n'
                    f'    urdf_file: {PANDA}\n    mode: gravity_compensation\n')
    node, ctx = _node_with_args('--params-file', str(path))
    try:
        assert node.get_parameter('joint_limit_guard').value == 'off'
        assert node._rt.settings.guard is None
    finally:
        _close(node, ctx)


def test_ros2_param_set_off_and_refusals_that_name_the_yaml_boolean(make):
    """`ros2 param set /rnea joint_limit_guard off` works; booleans elsewhere get a reason."""
    h = make(joint_limit_guard='zero', mode='gravity_compensation')
    assert h.node._rt.settings.guard is not None
    result = _ros2_param_set(h, 'joint_limit_guard', 'off')
    assert result.successful, result.reason
    assert h.node.get_parameter('joint_limit_guard').value == 'off'
    assert h.node._rt.settings.guard is None
    assert _ros2_param_get(h, 'joint_limit_guard').type == ParameterType.PARAMETER_STRING
    assert _ros2_param_set(h, 'joint_limit_guard', 'hold').successful
    assert h.node._rt.settings.guard is not None
    for name, text in (('mode', 'yes'), ('payload_link', 'no'), ('command_topic', 'on')):
        result = _ros2_param_set(h, name, text)
        assert not result.successful
        assert 'boolean' in result.reason and name in result.reason, result.reason
    assert h.node.get_parameter('mode').value == 'gravity_compensation'


def test_every_string_parameter_with_choices_names_its_yaml_boolean_words():
    """The generic rule: a boolean given to a string parameter becomes its documented word."""
    for spec in node_params.PARAMETERS:
        if spec.kind != 'string':
            continue
        for value in (False, True):
            word, error = node_params.normalise(spec.name, value)
            words = {False: 'off', True: 'on'}
            if words[value] in spec.choices:
                assert (word, error) == (words[value], None), spec.name
            else:
                assert 'boolean' in error and spec.name in error, spec.name
                assert node_params.check_value(spec.name, value) == error


# -- 9. parameter types, diagnostics name, one clear error ------------------------------------

def test_empty_arrays_read_back_typed_and_ros2_param_set_empty_list_works(make):
    """Empty arrays are double/string arrays (not bytes); `ros2 param set NAME "[]"` works.

    Except for the gains: `kp "[]"` or `kd "[]"` would silently mean no feedback (zero gains
    in computed torque and in the collision reaction `hold`), so they are refused with the
    reason (not a type error) and the old gains kept.
    """
    h = make(mode='gravity_compensation')
    assert _ros2_param_get(h, 'max_effort').type == ParameterType.PARAMETER_DOUBLE_ARRAY
    assert _ros2_param_get(h, 'command_joints').type == ParameterType.PARAMETER_STRING_ARRAY
    assert _ros2_param_get(h, 'friction_joints').type == ParameterType.PARAMETER_STRING_ARRAY
    for name in ('kp', 'kd'):
        result = _ros2_param_set(h, name, '[]')
        assert not result.successful and 'no ' in result.reason and name in result.reason
        assert 'type' not in result.reason.lower(), result.reason
    assert h.node._rt.settings.kp[0] == 400.0 and h.node._rt.settings.kd[0] == 40.0
    for name, text in (('max_effort', '[]'), ('command_joints', '[]'),
                       ('kp', '[300, 400, 500, 600, 700, 800, 900, 100, 100]'),
                       ('max_effort', '[50]')):
        result = _ros2_param_set(h, name, text)
        assert result.successful, (name, text, result.reason)
    assert _ros2_param_get(h, 'kp').type == ParameterType.PARAMETER_DOUBLE_ARRAY
    assert h.node._rt.settings.kp[0] == 300.0
    assert _ros2_param_get(h, 'command_joints').type == ParameterType.PARAMETER_STRING_ARRAY
    assert np.all(h.node._rt.settings.limiter.limits <= 50.0)


def test_diagnostics_status_is_named_by_the_fully_qualified_node_name(context):
    node = RneaNode(context=context, namespace='left', parameter_overrides=[
        Parameter('urdf_file', value=PANDA)])
    got = []
    node._diag_pub.publish = got.append
    try:
        node._publish_diagnostics()
        assert got[0].status[0].name.startswith('/left/rnea')
        assert node.get_fully_qualified_name() == '/left/rnea'
    finally:
        node.destroy_node()


def test_command_joints_typo_is_one_parameter_error_not_a_rejected_description(capfd):
    """At start-up a typo in command_joints is printed once, as a parameter error."""
    from rnea_ros.node.rnea_node import main
    handlers = {s: signal.getsignal(s) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        code = main(['rnea', '--ros-args', '-p', f'urdf_file:={PANDA}',
                     '-p', 'command_joints:=[panda_joint1, panda_jiont2]'], stop=[True])
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    err = capfd.readouterr().err
    assert code == 2
    assert err.count('panda_jiont2') == 1, err
    assert 'robot description' not in err and 'invalid parameters' in err, err


# -- 6. a leaf link without <inertial> ---------------------------------------------------------

LEAF = _robot([_link('base'), _link('upper'), _link('tool', mass=None)],
              [_joint('shoulder', 'base', 'upper'), _joint('wrist', 'upper', 'tool')],
              name='leafless')


def test_leaf_link_without_inertial_is_accepted_with_one_warning_by_node_and_cli(
        make, capsys, tmp_path):
    """Node and CLI agree: the model loads, one shared warning names the joint, efforts = core."""
    model = RobotModel.from_urdf_string(LEAF)
    h = make(urdf_file='', mode='inverse_dynamics', clamp_efforts=False)
    h.description.publish(String(data=LEAF))
    h.spin_until(lambda: h.node._rt is not None or 'rejected' in h.node._last_error)
    assert h.node._rt is not None, h.node._last_error
    node_warnings = [w for w in h.node._rt.warnings if 'wrist' in w]
    assert len(node_warnings) == 1 and 'moves no mass' in node_warnings[0]
    q, qd, qdd = np.array([0.3, -0.2]), np.array([0.5, 1.0]), np.array([1.0, -2.0])
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(model.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(model, q, qd, qdd), atol=1e-12)
    assert out.effort[1] == 0.0
    path = tmp_path / 'leaf.urdf'
    path.write_text(LEAF)
    capsys.readouterr()
    assert cli_main(['torques', '--urdf', str(path)]) == 0
    err = capsys.readouterr().err
    assert node_warnings[0] in err


# -- 7. undecodable URDF bytes ------------------------------------------------------------------

def test_invalid_utf8_bytes_are_refused_with_the_byte_offset():
    data = b'<robot name="\xff"><link name="a"/></robot>'
    with pytest.raises(ValueError, match='byte 13'):
        RobotModel.from_urdf_string(data)
    ok = RobotModel.from_urdf_string(LEAF.encode('utf-8'))
    assert ok.name == 'leafless'


# -- 3. another publisher on the command topic -------------------------------------------------

def test_node_warns_when_another_publisher_commands_its_topic(make, panda, capfd):
    h = make(mode='gravity_compensation', command_topic=CMD)
    h.node._check_command_publishers()
    assert h.node._other_commanders == []
    other = h.peer.create_publisher(Float64MultiArray, CMD, 10)
    h.spin_until(lambda: h.node.count_publishers(CMD) >= 2)
    capfd.readouterr()
    h.node._command_notice.reset()
    for _ in range(3):
        h.node._check_command_publishers()
    err = capfd.readouterr().err
    assert h.node._other_commanders and h.peer.get_name() in h.node._other_commanders[0]
    assert err.count('also published by') == 1, err         # once, then at a low rate
    h.diagnostics.clear()
    h.node._publish_diagnostics()
    h.spin_until(lambda: h.diagnostics)
    values = {kv.key: kv.value for kv in h.diagnostics[-1].status[0].values}
    assert h.peer.get_name() in values['other_command_publishers']
    h.peer.destroy_publisher(other)


# -- 10. silent waits and joints no driver publishes -------------------------------------------

def test_throttled_notice_logs_once_then_at_a_low_rate():
    notice = node_io.Notice(delay=2.0, period=30.0)
    assert not notice.due(0.0) and not notice.due(1.9)
    assert notice.due(2.0) and not notice.due(2.1) and not notice.due(31.9)
    assert notice.due(32.0)
    notice.reset()
    assert not notice.due(33.0) and not notice.due(34.9) and notice.due(35.0)


def test_cold_start_notice_says_the_kernels_compile_then_that_they_are_ready():
    """The first start's silent compile gets a line, then a low-rate reminder, then 'ready'."""
    import threading
    from rnea_ros.node._cold_start import ColdStartNotice, NOTICE
    lines, said = [], threading.Event()

    def log(text):
        lines.append(text)
        said.set()
    notice = ColdStartNotice(delay=0.0, period=3600.0, log=log).start()
    assert said.wait(timeout=10.0)
    notice.done()
    notice.done()
    assert 'compiles them' in lines[0] and 'ready after' in lines[-1] and len(lines) == 2
    quiet = ColdStartNotice(delay=3600.0, log=log).start()
    quiet.done()                                    # a warm cache: not a word
    assert len(lines) == 2
    assert NOTICE._done.is_set()                    # the node module stopped its notice


def test_waiting_for_a_description_and_for_missing_joints_is_logged(make, panda, capfd):
    h = make(urdf_file='', mode='gravity_compensation')
    capfd.readouterr()
    h.node._wait_notice.delay = 0.0
    h.node._wait_notice.reset()
    h.node._watchdog()
    err = capfd.readouterr().err
    assert 'waiting for a robot description' in err and '/robot_description' in err, err
    h.description.publish(String(data=open(PANDA, encoding='utf-8').read()))
    h.spin_until(lambda: h.node._rt is not None)
    q, _, _ = _state(panda, seed=40)
    stamp = h.joint_state(panda.joint_names[:7], q[:7], wait=False)
    h.spin_until(lambda: h.node._stats.inputs >= 1)
    h.node._wait_notice.delay = 0.0
    h.node._wait_notice.reset()
    capfd.readouterr()
    h.node._watchdog()
    err = capfd.readouterr().err
    assert 'panda_finger_joint1' in err and 'fixed_joints' in err, err
    assert h.answer(stamp) is None


def test_fixed_joints_let_an_arm_only_driver_drive_the_node(make, panda):
    h = make(mode='gravity_compensation', fixed_joints=FINGERS,
             fixed_joint_positions=[0.02, 0.02])
    q, _, _ = _state(panda, seed=41)
    out = h.joint_state(panda.joint_names[:7], q[:7])
    full = np.concatenate([q[:7], [0.02, 0.02]])
    np.testing.assert_allclose(out.position, full)
    np.testing.assert_allclose(out.effort, np.clip(inverse_dynamics(panda, full, ZERO, ZERO),
                                                   -panda.effort_limits, panda.effort_limits),
                               atol=1e-12)
    # One value for all, and the mimic finger follows a held driver.
    assert h.node.set_parameters_atomically([
        Parameter('fixed_joints', value=FINGERS[:1]),
        Parameter('fixed_joint_positions', value=[0.03])]).successful
    out = h.joint_state(panda.joint_names[:7], q[:7])
    np.testing.assert_allclose(out.position[7:], [0.03, 0.03])
    bad = h.node.set_parameters([Parameter('fixed_joints', value=['panda_finger_jiont1'])])[0]
    assert not bad.successful and 'panda_finger_jiont1' in bad.reason
    # A driver that does publish a held joint wins from then on.
    out = h.joint_state(panda.joint_names[:8], np.concatenate([q[:7], [0.01]]))
    np.testing.assert_allclose(out.position[7:], [0.01, 0.01])


# -- 12. frames as users have them ---------------------------------------------------------------

SENSOR = """
  <link name="ft_bracket"/><link name="ft_sensor"/>
  <joint name="ft_bracket_joint" type="fixed"><parent link="panda_link7"/>
    <child link="ft_bracket"/><origin xyz="0.01 -0.02 0.11" rpy="0 0 -0.785"/></joint>
  <joint name="ft_sensor_joint" type="fixed"><parent link="ft_bracket"/><child link="ft_sensor"/>
    <origin xyz="0 0.03 0.02" rpy="0.3 -0.2 1.1"/></joint>
</robot>"""


def _wrench(frame_id, values):
    from geometry_msgs.msg import WrenchStamped
    msg = WrenchStamped()
    msg.header.frame_id = frame_id
    f, t = msg.wrench.force, msg.wrench.torque
    f.x, f.y, f.z, t.x, t.y, t.z = [float(v) for v in values]
    return msg


def test_wrench_in_a_sensor_frame_merged_over_fixed_joints_and_frame_rejections(make, panda):
    """A force-torque reading in a sensor frame merged over two fixed joints.

    It acts as the same wrench moved to panda_link7 by the URDF's joint origins (composed by
    hand here); unknown and world-fixed frames are refused and the node keeps running.
    """
    from rnea_ros.core.spatial import rpy_to_matrix
    with open(PANDA, encoding='utf-8') as f:
        xml = f.read().replace('</robot>', SENSOR)
    h = make(urdf_file='', robot_description=xml, mode='gravity_compensation',
             clamp_efforts=False)
    R1, p1 = rpy_to_matrix((0.0, 0.0, -0.785)), np.array([0.01, -0.02, 0.11])
    R2, p2 = rpy_to_matrix((0.3, -0.2, 1.1)), np.array([0.0, 0.03, 0.02])
    R, p = R1 @ R2, p1 + R1 @ p2                       # ft_sensor in panda_link7
    w = np.array([3.0, -4.0, 12.0, 0.4, -0.2, 0.7])
    force = R @ w[:3]
    on_link7 = np.concatenate([force, R @ w[3:] + np.cross(p, force)])
    q, _, _ = _state(panda, seed=43)
    h.publish('wrench', _wrench('ft_sensor', w))
    out = h.joint_state(panda.joint_names, q)
    expected = inverse_dynamics(panda, q, ZERO, ZERO, f_ext={'panda_link7': on_link7})
    np.testing.assert_allclose(out.effort, expected, rtol=1e-10, atol=1e-10)
    assert not np.allclose(expected, inverse_dynamics(panda, q, ZERO, ZERO), atol=1e-3)
    for frame, reason in (('ft_sensr', "'ft_sensr' is not a frame of the model"),
                          ('panda_link0', 'fixed to the world')):
        h.publish('wrench', _wrench(frame, w))
        assert 'external_wrenches rejected' in h.node._last_error, frame
        assert reason in h.node._last_error, h.node._last_error
        assert 'ft_sensor' in h.node._last_error or frame == 'panda_link0'
        again = h.joint_state(panda.joint_names, q)                 # still running, same wrench
        np.testing.assert_allclose(again.effort, expected, rtol=1e-10, atol=1e-10)


# -- node-level tests of what only unit tests covered ------------------------------------------

def test_efforts_are_clamped_to_the_urdf_limits_alone(make, panda):
    """clamp_efforts with no max_effort: efforts are clipped to the URDF <limit effort>."""
    h = make(mode='inverse_dynamics')
    assert not h.node.get_parameter('max_effort').value
    q, qd, _ = _state(panda, seed=42)
    qdd = np.full(9, 400.0)
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(panda.joint_names, q, qd)
    tau = inverse_dynamics(panda, q, qd, qdd)
    assert np.any(np.abs(tau) > panda.effort_limits)        # some joints saturate
    np.testing.assert_allclose(out.effort, np.clip(tau, -panda.effort_limits,
                                                   panda.effort_limits), rtol=1e-12)


def test_limit_guard_position_and_velocity_margins_through_the_running_node(make, panda):
    h = make(mode='gravity_compensation', command_topic=CMD, joint_limit_guard='hold',
             joint_limit_margin=0.05, velocity_limit_margin=0.1)
    q, qd = _rest(panda)
    h.joint_state(panda.joint_names, q, qd)
    inside, outside = q.copy(), q.copy()
    inside[1] = panda.upper_limits[1] + 0.04
    outside[1] = panda.upper_limits[1] + 0.06
    h.joint_state(panda.joint_names, inside, qd)
    assert h.node._limit_fault is None
    slow, fast = qd.copy(), qd.copy()
    slow[0] = 1.09 * panda.velocity_limits[0]
    fast[0] = 1.11 * panda.velocity_limits[0]
    h.joint_state(panda.joint_names, q, slow)
    assert h.node._limit_fault is None
    h.joint_state(panda.joint_names, q, fast)
    assert 'velocity' in h.node._limit_fault and 'panda_joint1' in h.node._limit_fault
    h.node.set_parameters([Parameter('enabled', value=False)])
    h.joint_state(panda.joint_names, q, qd)
    assert h.node.set_parameters([Parameter('enabled', value=True)])[0].successful
    h.joint_state(panda.joint_names, outside, qd)
    assert 'panda_joint2' in h.node._limit_fault


def test_limit_guard_margins_decide_what_the_command_topic_carries(make, panda):
    """Guard 'zero': inside the margins the commands are the efforts; beyond them one zero.

    Seen on the command topic itself: a position 0.04 rad past the limit (margin 0.05) and a
    velocity 1.09 x its limit (margin 0.1) are still commanded; a velocity 1.11 x its limit
    gets one all-zero command, and
    later joint states get none (the node waits for ~/enable).
    """
    h = make(mode='gravity_compensation', command_topic=CMD, joint_limit_guard='zero',
             joint_limit_margin=0.05, velocity_limit_margin=0.1)
    h.watch_commands(CMD)
    q, qd = _rest(panda)
    inside = q.copy()
    inside[1] = panda.upper_limits[1] + 0.04
    answer = h.joint_state(panda.joint_names, inside, qd)
    h.spin_until(lambda: len(h.commands) >= 1)
    assert np.allclose(h.commands[-1].data, answer.effort[:len(h.commands[-1].data)])
    assert np.abs(h.commands[-1].data).max() > 1.0
    slow = qd.copy()
    slow[0] = 1.09 * panda.velocity_limits[0]
    count = len(h.commands)
    answer = h.joint_state(panda.joint_names, q, slow)
    h.spin_until(lambda: len(h.commands) > count)
    assert np.allclose(h.commands[-1].data, answer.effort[:len(h.commands[-1].data)])
    fast = qd.copy()
    fast[0] = 1.11 * panda.velocity_limits[0]
    count = len(h.commands)
    h.joint_state(panda.joint_names, q, fast)
    h.spin_until(lambda: len(h.commands) > count)
    assert np.all(np.asarray(h.commands[-1].data) == 0.0)
    count = len(h.commands)
    for _ in range(3):
        h.joint_state(panda.joint_names, q, qd)
    h.spin_for(0.2)
    assert len(h.commands) == count


def test_output_stamp_equals_the_input_stamp(make, panda):
    """The first efforts message after one input carries that input's stamp exactly."""
    h = make(mode='gravity_compensation')
    q, _ = _rest(panda)
    msg = JointState(name=list(panda.joint_names), position=q.tolist())
    msg.header.stamp = Time(sec=123456, nanosec=789)
    h.pubs['joint_states'].publish(msg)
    h.spin_until(lambda: h.efforts)
    assert len(h.efforts) == 1
    assert (h.efforts[0].header.stamp.sec, h.efforts[0].header.stamp.nanosec) == (123456, 789)
    assert not math.isnan(h.efforts[0].effort[0])


def test_diagnostics_reach_a_subscriber_with_the_namespaced_name(make):
    h = make(mode='gravity_compensation')
    h.diagnostics.clear()
    h.node._publish_diagnostics()
    h.spin_until(lambda: h.diagnostics)
    assert isinstance(h.diagnostics[-1], DiagnosticArray)
    assert h.diagnostics[-1].status[0].name.startswith('/rnea')
