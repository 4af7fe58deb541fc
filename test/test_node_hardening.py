"""Issue 7: the node survives bad input and faults (real rclpy, in-process, panda).

Every test drives the node through ROS topics and parameters, then asserts that the node is
alive, that nothing it published was invalid (finite, model joint names, within the limits) and
that it answers the next valid input exactly as the dynamics core does.
"""

import math
import re
import threading
import time

from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
import rclpy
from rclpy.parameter import Parameter
from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.node.rnea_node import RneaNode
from sensor_msgs.msg import JointState
from std_msgs.msg import String
import test_node
from test_node import _array, _state, ARM, LATCHED, PANDA
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

context = test_node.context      # the node test fixtures: rclpy context, node harness, model
make = test_node.make
panda = test_node.panda
ZERO = np.zeros(9)

INERTIA = '<inertia ixx="{}" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/>'
LIMIT = '<axis xyz="0 0 1"/><limit effort="10" velocity="1" lower="-1" upper="1"/>'


def _link(name, mass=1.0, ixx=0.1):
    if mass is None:
        return f'<link name="{name}"/>'
    return (f'<link name="{name}"><inertial><mass value="{mass}"/>{INERTIA.format(ixx)}'
            '</inertial></link>')


def _joint(name, parent, child, kind='revolute', z=0.1):
    return (f'<joint name="{name}" type="{kind}"><parent link="{parent}"/><child link="{child}"/>'
            f'<origin xyz="0 0 {z}"/>{LIMIT}</joint>')


def _robot(links, joints, name='bad'):
    return f'<robot name="{name}">{"".join(links)}{"".join(joints)}</robot>'


def _chain(n):
    links = [_link(f'l{i}') for i in range(n + 1)]
    joints = [_joint(f'j{i}', f'l{i}', f'l{i + 1}') for i in range(n)]
    return _robot(links, joints, name=f'chain{n}')


def _assert_nothing_invalid(h, models):
    """Every published effort is finite, names one model's joints, within its limits."""
    by_names = {tuple(m.joint_names): m for m in models}
    for msg in h.efforts:
        model = by_names[tuple(msg.name)]
        effort = np.asarray(msg.effort)
        assert len(effort) == len(msg.name) == len(msg.position) == len(msg.velocity)
        assert np.isfinite(effort).all() and np.isfinite(msg.position).all()
        assert (np.abs(effort) <= model.effort_limits + 1e-9).all()
    for msg in h.commands:
        assert np.isfinite(msg.data).all()


def _assert_survived(h, model, seed=30):
    """Assert the node is alive, published nothing invalid and answers a valid input right."""
    assert rclpy.ok(context=h.node.context) and h.node._rt.model.name == model.name
    _assert_nothing_invalid(h, [model])
    q, _, _ = _state(model, seed=seed)
    out = h.joint_state(model.joint_names, q)
    expected = np.clip(inverse_dynamics(model, q, ZERO, ZERO), -model.effort_limits,
                       model.effort_limits)
    np.testing.assert_allclose(out.effort, expected, rtol=1e-12, atol=1e-12)


def _joint_state_msg(names, q, qd=(), sec=1000, nanosec=0):
    msg = JointState(name=list(names), position=[float(x) for x in q],
                     velocity=[float(x) for x in qd])
    msg.header.stamp = Time(sec=sec, nanosec=nanosec)
    return msg


# -- bad input ------------------------------------------------------------------------------

def test_bad_joint_states_are_rejected_and_nothing_is_published_for_them(make, panda):
    h = make(mode='gravity_compensation', command_topic='/test/bad_js_cmd')
    h.watch_commands('/test/bad_js_cmd')
    q, qd, _ = _state(panda, seed=31)
    names = list(panda.joint_names)
    h.joint_state(names, q)                     # stamp (1000, 1): the node is running
    nan_q, inf_qd, huge_q = q.copy(), qd.copy(), q.copy()
    nan_q[3], inf_qd[1], huge_q[0] = math.nan, math.inf, 1e300
    bad = {
        'NaN position': (names, nan_q, ()),
        'Inf velocity': (names, q, inf_qd),
        '1e300 position': (names, huge_q, ()),
        'huge velocity': (names, q, [1e300] * 9),
        'fewer positions': (names, q[:8], ()),
        'fewer velocities': (names, q, qd[:3]),
        'duplicate names': (names[:8] + [names[0]], q, ()),
        'an empty name': (names + [''], list(q) + [0.1], ()),
        'unknown names only': (['foo', 'bar'], [0.1, 0.2], ()),
        'empty message': ([], [], ()),
    }
    published = len(h.efforts)
    for nanosec, (label, (n, pos, vel)) in enumerate(bad.items(), start=100):
        h.publish('joint_states', _joint_state_msg(n, pos, vel, nanosec=nanosec))
        assert 'joint_states rejected' in h.node._last_error, label
    h.publish('joint_states', _joint_state_msg(names, q, sec=-5))            # negative
    assert 'negative stamp' in h.node._last_error
    h.publish('joint_states', _joint_state_msg(names, q, nanosec=500_000))   # newer: accepted
    h.spin_until(lambda: len(h.efforts) == published + 1)
    h.publish('joint_states', _joint_state_msg(names, q, nanosec=400_000))   # out of order
    assert 'out of order' in h.node._last_error
    assert h.node._stats.rejected >= len(bad) + 2
    h._stamp = 600_000
    _assert_survived(h, panda)                      # waits for the answer to a later input
    assert len(h.efforts) == published + 2          # so no answer to a rejected one came
    assert h.efforts[-2].header.stamp.nanosec == 500_000


@pytest.mark.parametrize('xml, reason', [
    ('this is not xml <', 'not well-formed'),
    ('<html><body/></html>', 'not <robot>'),
    (_robot([_link('a')], [_joint('j', 'a', 'nowhere')]), "'nowhere'"),
    (_robot([_link('a'), _link('b')], [_joint('j1', 'a', 'b'), _joint('j2', 'b', 'a')]),
     'no root link'),
    (_robot([_link('a'), _link('b', ixx=-0.5)], [_joint('j', 'a', 'b')]), 'semi-definite'),
    (_robot([_link('a'), _link('b')], [_joint('j', 'a', 'b', kind='planar')]), 'planar'),
    (_robot([_link('a')], []), 'no moving joints'),
])
def test_bad_robot_description_is_rejected_and_the_previous_model_keeps_running(
        make, panda, xml, reason):
    h = make(urdf_file='', mode='gravity_compensation')
    with open(PANDA, encoding='utf-8') as f:
        h.description.publish(String(data=f.read()))
    h.spin_until(lambda: h.node._rt is not None)
    h.node._last_error = ''
    h.description.publish(String(data=xml))
    h.spin_until(lambda: 'rejected' in h.node._last_error)
    assert reason in h.node._last_error
    _assert_survived(h, panda)


def test_huge_model_loads_in_the_background_while_joint_states_are_answered(make, panda):
    big = RobotModel.from_urdf_string(_chain(1000))
    h = make(urdf_file='', mode='gravity_compensation', clamp_efforts=False)
    with open(PANDA, encoding='utf-8') as f:
        h.description.publish(String(data=f.read()))
    h.spin_until(lambda: h.node._rt is not None)
    q, _, _ = _state(panda, seed=32)
    h.description.publish(String(data=_chain(1000)))
    stamps = []
    while h.node._rt.model.name == 'panda':       # keeps answering the old model meanwhile
        stamps.append(h.joint_state(panda.joint_names, q, wait=False))
        h.spin_for(0.005)
    assert sum(h.answer(s) is not None for s in stamps) >= 1
    q_big = np.linspace(-0.5, 0.5, 1000)
    out = h.joint_state(big.joint_names, q_big)
    np.testing.assert_allclose(out.effort, inverse_dynamics(big, q_big, np.zeros(1000),
                                                            np.zeros(1000)), rtol=1e-10)
    _assert_nothing_invalid(h, [panda, big])


def test_bad_desired_accelerations_and_references_keep_the_last_valid_one(make, panda):
    h = make(mode='inverse_dynamics', desired_timeout=10.0, clamp_efforts=False)
    q, qd, qdd = _state(panda, seed=33)
    h.publish('accelerations_array', _array(qdd))
    bad_points = {
        'wrong length': (ARM, [1.0] * 3),
        'unknown names': (['elbow', 'panda_joint1'], [1.0, 2.0]),
        'NaN': (ARM, [math.nan] + [0.0] * 6),
    }
    for label, (names, values) in bad_points.items():
        h.node._last_error = ''
        h.publish('accelerations', JointTrajectory(
            joint_names=list(names), points=[JointTrajectoryPoint(accelerations=values)]))
        assert 'desired_accelerations rejected' in h.node._last_error, label
    h.publish('accelerations_array', _array(qdd[:4]))
    h.publish('accelerations_array', _array([math.nan] * 9))
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, qdd), rtol=1e-12)
    h.node.set_parameters([Parameter('mode', value='computed_torque')])
    q_ref, _, _ = _state(panda, seed=34)
    good = JointTrajectoryPoint(positions=list(q_ref[:8]))
    h.publish('reference', JointTrajectory(joint_names=list(panda.joint_names[:8]),
                                           points=[good]))
    for label, (names, positions) in bad_points.items():
        h.node._last_error = ''
        h.publish('reference', JointTrajectory(
            joint_names=list(names), points=[JointTrajectoryPoint(positions=positions)]))
        assert 'reference rejected' in h.node._last_error, label
    out = h.joint_state(panda.joint_names, q, qd)
    q_ref[8] = q_ref[7]
    qdd_cmd = 400.0 * (q_ref - q) + 40.0 * (0.0 - qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, qdd_cmd), rtol=1e-12)
    assert all(np.isfinite(m.effort).all() for m in h.efforts)


def test_bad_external_wrenches_are_rejected(make, panda):
    h = make(mode='gravity_compensation', clamp_efforts=False)
    good = WrenchStamped()
    good.header.frame_id = 'panda_link7'
    good.wrench.force.y = 4.0
    h.publish('wrench', good)
    for frame, value in (('nowhere', 1.0), ('panda_link7', math.nan), ('', 1.0),
                         ('world', 1.0), ('panda_link7', math.inf)):
        h.node._last_error = ''
        msg = WrenchStamped()
        msg.header.frame_id = frame
        msg.wrench.force.x = value
        h.publish('wrench', msg)
        assert 'external_wrenches rejected' in h.node._last_error, frame
    q, _, _ = _state(panda, seed=35)
    out = h.joint_state(panda.joint_names, q)
    expected = inverse_dynamics(panda, q, ZERO, ZERO, f_ext={'panda_link7': [0, 4.0, 0, 0, 0, 0]})
    np.testing.assert_allclose(out.effort, expected, rtol=1e-12, atol=1e-12)
    assert all(np.isfinite(m.effort).all() for m in h.efforts)


def test_invalid_parameters_at_run_time_are_refused_and_nothing_changes(make, panda):
    h = make(mode='gravity_compensation')
    before = dict(h.node._cfg)
    for name, value in (('joint_state_timeout', -1.0), ('desired_timeout', 0.0),
                        ('rate', -5.0), ('kp', [1.0, 2.0, 3.0]), ('kd', [math.nan]),
                        ('gravity', [0.0, 0.0]), ('gravity', [0.0, 0.0, math.inf]),
                        ('command_joints', ['panda_joint1', 'panda_joint1']),
                        ('max_effort', [1.0] * 4), ('mode', 'dance'),
                        ('friction_viscous', [1.0] * 4), ('base_acceleration', [1.0])):
        result = h.node.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful and result.reason, name
    assert h.node._cfg == before
    _assert_survived(h, panda)


# -- faults ---------------------------------------------------------------------------------

def test_rate_mode_stops_on_stale_joint_states_and_resumes(make, panda):
    h = make(mode='gravity_compensation', rate=200.0, command_topic='/test/rate_stale_cmd',
             joint_state_timeout=0.1, zero_on_timeout=True)
    h.watch_commands('/test/rate_stale_cmd')
    q, _, _ = _state(panda, seed=36)
    h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: h.node._stale, timeout=2.0)
    h.spin_until(lambda: not any(h.commands[-1].data))          # the final zero command
    efforts, commands = len(h.efforts), len(h.commands)
    h.spin_for(0.5)                                             # 100 periods of the timer
    h.spin_until(lambda: any(s.level == b'\x02' for d in h.diagnostics for s in d.status),
                 timeout=2.5)
    _assert_survived(h, panda)                                  # a later answer arrived ...
    h.spin_until(lambda: len(h.commands) > commands and any(h.commands[-1].data))
    resumed = h.efforts[efforts:]                               # ... and nothing while stale
    assert resumed and all(m.header.stamp.nanosec == h._stamp for m in resumed)
    assert all(any(c.data) for c in h.commands[commands:])


def _heavy_panda_xml():
    """Return panda with renamed joints and doubled masses: a second, different model."""
    with open(PANDA, encoding='utf-8') as f:
        xml = f.read()
    xml = xml.replace('name="panda_joint', 'name="b_joint').replace(
        'name="panda_finger_joint', 'name="b_finger_joint').replace(
        'joint="panda_finger_joint1"', 'joint="b_finger_joint1"')
    return re.sub(r'<mass value="([0-9.e-]+)"',
                  lambda m: f'<mass value="{2 * float(m.group(1))}"', xml)


def test_description_republished_while_joint_states_stream_at_1khz(make, panda):
    heavy_xml = _heavy_panda_xml()
    heavy = RobotModel.from_urdf_string(heavy_xml)
    with open(PANDA, encoding='utf-8') as f:
        panda_xml = f.read()
    h = make(urdf_file='', mode='gravity_compensation', command_topic='/test/reload_1k_cmd',
             clamp_efforts=False)
    h.watch_commands('/test/reload_1k_cmd')
    h.description.publish(String(data=panda_xml))
    h.spin_until(lambda: h.node._rt is not None)
    q, _, _ = _state(panda, seed=37)
    names = list(panda.joint_names) + list(heavy.joint_names)
    positions = list(q) + list(q)
    stop = threading.Event()
    sent = []

    def stream():                             # 1 kHz joint states from another thread
        k, next_time = 0, time.monotonic()
        while not stop.is_set():
            k += 1
            h.pubs['joint_states'].publish(_joint_state_msg(names, positions, nanosec=k))
            sent.append(k)
            next_time += 0.001
            time.sleep(max(0.0, next_time - time.monotonic()))

    thread = threading.Thread(target=stream)
    thread.start()
    try:
        for xml, model in ((heavy_xml, heavy), (panda_xml, panda)) * 2:
            h.spin_for(0.15)
            h.description.publish(String(data=xml))
            # the next swap only once this model answers (a busy machine delays a build)
            h.spin_until(lambda: h.efforts and tuple(h.efforts[-1].name) ==
                         tuple(model.joint_names), timeout=10.0)
        h.spin_for(0.3)
    finally:
        stop.set()
        thread.join()
    h.spin_for(0.2)
    expected = {tuple(m.joint_names): inverse_dynamics(m, q, ZERO, ZERO) for m in (panda, heavy)}
    # Losses are not asserted: this in-process run shares 2 noisy cores (bench_node measures
    # rates); the gaps printed below are not at the switches when the machine is quiet.
    models = [tuple(msg.name) for msg in h.efforts]
    assert len(set(models)) == 2 and sum(a != b for a, b in zip(models, models[1:])) >= 3
    for msg in h.efforts:
        np.testing.assert_allclose(msg.effort, expected[tuple(msg.name)], rtol=1e-12)
    for cmd in h.commands:     # every command is wholly one model's efforts
        assert any(np.allclose(cmd.data, e, rtol=1e-12) for e in expected.values())
    stamps = [msg.header.stamp.nanosec for msg in h.efforts]
    assert stamps == sorted(stamps)
    switches = [stamps[i] for i in range(1, len(stamps)) if models[i] != models[i - 1]]
    gaps = [(a, b) for a, b in zip(stamps, stamps[1:]) if b - a > 1]
    print(f'1 kHz reload: sent {len(sent)}, answered {len(stamps)}, switches at {switches}, '
          f'gaps {gaps}')


def test_restarted_node_gets_the_description_from_transient_local(context, panda):
    peer = rclpy.create_node('latched_description_peer', context=context)
    publisher = peer.create_publisher(String, '/robot_description', LATCHED)
    with open(PANDA, encoding='utf-8') as f:
        publisher.publish(String(data=f.read()))
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(peer)
    try:
        for _ in range(2):                    # start, stop, start again
            node = RneaNode(context=context, parameter_overrides=[
                Parameter('urdf_file', value='')])
            executor.add_node(node)
            end = time.monotonic() + 5.0
            while node._rt is None and time.monotonic() < end:
                executor.spin_once(timeout_sec=0.01)
            assert node._rt is not None and node._rt.model.name == 'panda'
            executor.remove_node(node)
            node.destroy_node()
    finally:
        executor.shutdown(timeout_sec=0.1)
        peer.destroy_node()
