"""The rnea node with real rclpy, in-process, on an isolated ROS domain, with the panda URDF.

Each test starts a fresh node and a peer node in one private context, publishes inputs, spins
until the answer to a given input stamp arrives, and compares it with the dynamics core.
"""

import math
import os
import random
import subprocess
import sys
import sysconfig
import time

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rnea_ros import inverse_dynamics, reaction_wrenches, RobotModel
from rnea_ros.node.rnea_node import RneaNode
import ros_domains
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROBOTS = os.path.join(sysconfig.get_paths()['purelib'], 'cmeel.prefix', 'share',
                      'example-robot-data', 'robots')
PANDA = os.path.join(ROBOTS, 'panda_description', 'urdf', 'panda.urdf')
ARM = [f'panda_joint{i}' for i in range(1, 8)]
DOMAIN_ID = ros_domains.pick()
LATCHED = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                     durability=DurabilityPolicy.TRANSIENT_LOCAL)

pytestmark = pytest.mark.skipif(not os.path.isfile(PANDA), reason='example-robot-data missing')


@pytest.fixture(scope='module')
def context():
    os.environ['ROS_DOMAIN_ID'] = str(DOMAIN_ID)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=DOMAIN_ID)
    yield ctx
    rclpy.shutdown(context=ctx)


@pytest.fixture(scope='module')
def panda():
    return RobotModel.from_urdf_file(PANDA)


class Harness:
    """The node under test, a peer node with publishers/subscribers, and an executor."""

    def __init__(self, context, params):
        """Start the node with ``params`` and a peer with every input and output."""
        overrides = [Parameter(k, value=v) for k, v in params.items()]
        self.node = RneaNode(context=context, parameter_overrides=overrides)
        self.peer = rclpy.create_node(f'peer_{random.randrange(1 << 30)}', context=context)
        self.executor = SingleThreadedExecutor(context=context)
        self.executor.add_node(self.node)
        self.executor.add_node(self.peer)
        self.efforts, self.commands, self.wrenches, self.diagnostics = [], [], {}, []
        self.delivered = {}
        self._stamp = 0
        self.sec = 1000         # joint-state stamps: sec + nanoseconds (0: a simulated clock)
        peer = self.peer
        self.subs = [peer.create_subscription(JointState, '/rnea/joint_efforts',
                                              self.efforts.append, 100),
                     peer.create_subscription(DiagnosticArray, '/diagnostics',
                                              self.diagnostics.append, 10)]
        self.pubs = {
            'joint_states': peer.create_publisher(JointState, '/joint_states', 10),
            'accelerations': peer.create_publisher(
                JointTrajectory, '/rnea/desired_accelerations', 10),
            'accelerations_array': peer.create_publisher(
                Float64MultiArray, '/rnea/desired_accelerations_array', 10),
            'reference': peer.create_publisher(JointTrajectory, '/rnea/reference', 10),
            'wrench': peer.create_publisher(WrenchStamped, '/rnea/external_wrenches', 10),
        }
        self.description = peer.create_publisher(String, '/robot_description', LATCHED)

    def watch_commands(self, topic):
        """Record the commands published on ``topic``."""
        self.subs.append(self.peer.create_subscription(Float64MultiArray, topic,
                                                       self.commands.append, 100))
        self.wait_connected()

    def watch_wrenches(self, joints):
        """Record the reaction wrenches of ``joints``."""
        for joint in joints:
            self.wrenches[joint] = []
            self.subs.append(self.peer.create_subscription(
                WrenchStamped, f'/rnea/reaction_wrenches/{joint}',
                self.wrenches[joint].append, 100))
        self.wait_connected()

    def spin_until(self, condition, timeout=5.0):
        """Spin both nodes until ``condition()`` holds (fail after ``timeout`` s)."""
        end = time.monotonic() + timeout
        while not condition():
            assert time.monotonic() < end, 'timed out waiting for the node'
            self.executor.spin_once(timeout_sec=0.01)

    def spin_for(self, seconds):
        """Spin both nodes for a while."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)

    def wait_connected(self):
        """Wait until every publisher and subscription of the peer is matched."""
        self.spin_until(lambda: all(p.get_subscription_count() > 0 for p in self.pubs.values())
                        and all(s.get_publisher_count() > 0 for s in self.subs[:1]))
        self.spin_until(lambda: all(s.get_publisher_count() > 0 for s in self.subs))

    def _count_deliveries(self):
        """Wrap the node's subscription callbacks (new ones too) to count messages per topic."""
        for sub in self.node.subscriptions:
            if getattr(sub.callback, 'counted', False):
                continue
            topic, callback = sub.topic_name, sub.callback

            def counted(msg, topic=topic, callback=callback):
                self.delivered[topic] = self.delivered.get(topic, 0) + 1
                return callback(msg)
            counted.counted = True
            sub.callback = counted

    def publish(self, key, msg, timeout=5.0):
        """Publish an input and spin until the node's callback has taken it (not a fixed wait)."""
        self._count_deliveries()
        topic = self.pubs[key].topic_name
        before = self.delivered.get(topic, 0)
        self.pubs[key].publish(msg)
        self.spin_until(lambda: self.delivered.get(topic, 0) > before, timeout)

    def joint_state(self, names, q, qd=(), wait=True):
        """Publish joint states with a fresh stamp; return the answer (or the stamp)."""
        self._stamp += 1
        msg = JointState(name=list(names), position=[float(x) for x in q],
                         velocity=[float(x) for x in qd])
        msg.header.stamp = Time(sec=self.sec, nanosec=self._stamp)
        self.pubs['joint_states'].publish(msg)
        if not wait:
            return self._stamp
        self.spin_until(lambda: self.answer(self._stamp) is not None)
        return self.answer(self._stamp)

    def answer(self, stamp):
        """Return the joint_efforts message answering input ``stamp``, or None."""
        for msg in self.efforts:
            if msg.header.stamp.sec == self.sec and msg.header.stamp.nanosec == stamp:
                return msg
        return None

    def close(self):
        """Destroy the nodes."""
        self.executor.shutdown(timeout_sec=0.1)
        self.node.destroy_node()
        self.peer.destroy_node()


@pytest.fixture
def make(context):
    harnesses = []

    def factory(**params):
        params.setdefault('urdf_file', PANDA)
        # Inputs stay fresh for 10 s unless a test sets a timeout: a loaded 2-core machine may
        # take longer than the defaults (0.1 s, 0.5 s) between one input and the next.
        params.setdefault('desired_timeout', 10.0)
        params.setdefault('joint_state_timeout', 10.0)
        # Random test states exceed the finger velocity limits: the limit guard has its own tests.
        params.setdefault('joint_limit_guard', 'off')
        harness = Harness(context, params)
        harnesses.append(harness)
        harness.wait_connected()
        return harness

    yield factory
    for harness in harnesses:
        harness.close()


def _state(model, seed=0):
    rng = np.random.default_rng(seed)
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -math.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, math.pi)
    q = lo + (hi - lo) * rng.uniform(0.2, 0.8, model.nq)
    q[8] = q[7]                                   # the mimic finger follows its driver
    qd = rng.uniform(-1.0, 1.0, model.nv)
    qd[8] = qd[7]
    return q, qd, rng.uniform(-2.0, 2.0, model.nv)


def _array(values):
    return Float64MultiArray(data=[float(x) for x in values])


# -- modes ------------------------------------------------------------------------------------

@pytest.mark.parametrize('mode', ['inverse_dynamics', 'gravity_compensation',
                                  'gravity_coriolis'])
def test_efforts_equal_the_core_for_each_mode(make, panda, mode):
    h = make(mode=mode)
    q, qd, qdd = _state(panda)
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(panda.joint_names, q, qd)
    used_qd = np.zeros(9) if mode == 'gravity_compensation' else qd
    used_qdd = qdd if mode == 'inverse_dynamics' else np.zeros(9)
    assert list(out.name) == list(panda.joint_names)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, used_qd, used_qdd),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.position, q)
    np.testing.assert_allclose(out.velocity, used_qd)


def test_desired_accelerations_by_trajectory_unnamed_joints_zero(make, panda):
    h = make(mode='inverse_dynamics')
    q, qd, _ = _state(panda, seed=1)
    point = JointTrajectoryPoint(accelerations=[1.5, -0.5])
    h.publish('accelerations', JointTrajectory(joint_names=['panda_joint4', 'panda_joint2'],
                                               points=[point]))
    out = h.joint_state(panda.joint_names, q, qd)
    qdd = np.zeros(9)
    qdd[3], qdd[1] = 1.5, -0.5
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, qdd), atol=1e-12)


def test_stale_desired_accelerations_count_as_zero(make, panda):
    h = make(mode='inverse_dynamics', desired_timeout=1.0)
    q, qd, qdd = _state(panda, seed=2)
    h.publish('accelerations_array', _array(qdd))
    fresh = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(fresh.effort, inverse_dynamics(panda, q, qd, qdd), atol=1e-12)
    h.spin_for(1.1)
    stale = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(stale.effort, inverse_dynamics(panda, q, qd, np.zeros(9)),
                               atol=1e-12)


def test_wrong_length_acceleration_array_is_rejected(make, panda):
    h = make(mode='inverse_dynamics')
    q, qd, qdd = _state(panda, seed=3)
    h.publish('accelerations_array', _array(qdd[:7]))
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, np.zeros(9)),
                               atol=1e-12)
    assert 'expected 9 accelerations' in h.node._last_error


def test_computed_torque_law(make, panda):
    kp = [float(k) for k in range(100, 1000, 100)]
    h = make(mode='computed_torque', kp=kp, kd=[30.0], clamp_efforts=False)
    q, qd, _ = _state(panda, seed=4)
    q_ref, qd_ref, qdd_ref = _state(panda, seed=5)
    point = JointTrajectoryPoint(positions=list(q_ref[:8]), velocities=list(qd_ref[:8]),
                                 accelerations=list(qdd_ref[:8]))
    h.publish('reference', JointTrajectory(joint_names=list(panda.joint_names[:8]),
                                           points=[point]))
    out = h.joint_state(panda.joint_names, q, qd)
    for ref in (q_ref, qd_ref, qdd_ref):              # the mimic joint follows its driver
        ref[8] = ref[7]
    qdd_cmd = qdd_ref + np.array(kp) * (q_ref - q) + 30.0 * (qd_ref - qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, qd, qdd_cmd), rtol=1e-12)


def _reference(panda, seed, stamp, q, qd, kp, kd):
    """Return (a one-point ~/reference of seed ``seed`` stamped ``stamp``, its computed torque).

    The computed-torque command at (``q``, ``qd``) with gains ``kp``, ``kd``; the reference
    names the first 8 joints, and the mimic joint follows its driver.
    """
    q_ref, qd_ref, qdd_ref = _state(panda, seed=seed)
    msg = JointTrajectory(joint_names=list(panda.joint_names[:8]), points=[JointTrajectoryPoint(
        positions=list(q_ref[:8]), velocities=list(qd_ref[:8]),
        accelerations=list(qdd_ref[:8]))])
    msg.header.stamp = stamp
    for ref in (q_ref, qd_ref, qdd_ref):
        ref[8] = ref[7]
    return msg, inverse_dynamics(panda, q, qd, qdd_ref + kp * (q_ref - q) + kd * (qd_ref - qd))


def test_reference_sync_answers_a_joint_state_only_with_the_reference_of_its_stamp(make, panda):
    """With reference_sync the command uses the point of the joint state's stamp.

    Never the previous step's point (lock-step simulators); without it the newest reference is
    used at once.
    """
    kp, kd = 100.0, 20.0
    q, qd, _ = _state(panda, seed=4)

    def reference(seed, nanosec):
        return _reference(panda, seed, Time(sec=1000, nanosec=nanosec), q, qd, kp, kd)

    for sync in (False, True):
        h = make(mode='computed_torque', kp=[kp], kd=[kd], clamp_efforts=False,
                 reference_sync=sync)
        old, old_effort = reference(5, 0)             # the point of the previous step
        h.publish('reference', old)
        stamp = h.joint_state(panda.joint_names, q, qd, wait=False)
        if not sync:
            h.spin_until(lambda: h.answer(stamp) is not None)
            np.testing.assert_allclose(h.answer(stamp).effort, old_effort, rtol=1e-12)
            continue
        h.spin_for(0.3)
        assert h.answer(stamp) is None, 'answered with the reference of the previous step'
        new, new_effort = reference(6, stamp)         # the point of the joint state's stamp
        h.publish('reference', new)
        h.spin_until(lambda: h.answer(stamp) is not None)
        np.testing.assert_allclose(h.answer(stamp).effort, new_effort, rtol=1e-12)
        # Against wall-clock joint states a reference stamped 0 (ROS's 'now') is not waited for.
        unstamped, unstamped_effort = reference(7, 0)
        unstamped.header.stamp = Time(sec=0, nanosec=0)
        h.publish('reference', unstamped)
        out = h.joint_state(panda.joint_names, q, qd)
        np.testing.assert_allclose(out.effort, unstamped_effort, rtol=1e-12)


def test_reference_sync_takes_a_point_stamped_0_for_the_point_of_simulated_time_0(make, panda):
    """A simulator's clock starts at 0: its first reference point is stamped 0, not unstamped.

    The joint state of the next step must wait for the point of its own stamp, not be answered
    with the point of t = 0 (the demo's lock-step runs start so).
    """
    kp, kd = 100.0, 20.0
    q, qd, _ = _state(panda, seed=4)
    h = make(mode='computed_torque', kp=[kp], kd=[kd], clamp_efforts=False,
             reference_sync=True)
    h.sec = 0

    def reference(seed, nanosec):
        return _reference(panda, seed, Time(sec=0, nanosec=nanosec), q, qd, kp, kd)

    first, _ = reference(5, 0)                        # the point of t = 0
    h.publish('reference', first)
    h.spin_for(0.2)
    stamp = h.joint_state(panda.joint_names, q, qd, wait=False)
    h.spin_for(0.3)
    assert h.answer(stamp) is None, 'answered with the point of t = 0'
    own, own_effort = reference(6, stamp)
    h.publish('reference', own)
    h.spin_until(lambda: h.answer(stamp) is not None)
    np.testing.assert_allclose(h.answer(stamp).effort, own_effort, rtol=1e-12)


# -- inputs -----------------------------------------------------------------------------------

def test_partial_joint_states_merge_and_the_mimic_follows(make, panda):
    h = make(mode='gravity_compensation')
    q, _, _ = _state(panda, seed=6)
    stamp = h.joint_state(ARM + ['not_in_model'], list(q[:7]) + [9.0], wait=False)
    out = h.joint_state(['panda_finger_joint1'], [q[7]])   # waits for this later answer
    assert h.answer(stamp) is None                  # the finger had no position yet
    np.testing.assert_allclose(out.position, q)      # finger 2 = finger 1 (mimic)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, np.zeros(9), np.zeros(9)),
                               atol=1e-12)
    assert h.node._rt.joints.unknown == {'not_in_model'}


def test_two_mimic_joints_with_offsets_follow_their_own_drivers(make, tmp_path):
    """UR5 with two mimics of different multipliers and offsets: only drivers are published."""
    from test_mimic import DRIVERS, expand, mimic_urdf
    path = tmp_path / 'ur5_mimic.urdf'
    path.write_text(mimic_urdf())
    model = RobotModel.from_urdf_file(str(path))
    h = make(urdf_file=str(path), mode='gravity_coriolis')
    q_d, qd_d = [0.3, -0.8, 1.1, 0.2], [0.5, -1.5, 2.0, 0.7]
    out = h.joint_state(DRIVERS, q_d, qd_d)
    q, qd, _ = expand(model, q_d, qd_d, np.zeros(4))
    np.testing.assert_allclose(out.position, q, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out.velocity, qd, rtol=0, atol=1e-15)
    np.testing.assert_allclose(out.effort, inverse_dynamics(model, q, qd, np.zeros(6)),
                               rtol=0, atol=1e-12)


def test_nan_joint_state_is_rejected_and_nothing_published(make, panda):
    h = make(mode='gravity_compensation')
    q, _, _ = _state(panda, seed=7)
    bad = q.copy()
    bad[2] = math.nan
    first = h.joint_state(panda.joint_names, bad, wait=False)
    good = h.joint_state(panda.joint_names, q)
    assert h.answer(first) is None
    bad_again = h.joint_state(panda.joint_names, bad, qd=[math.inf] * 9, wait=False)
    h.joint_state(panda.joint_names, q)
    assert h.answer(bad_again) is None
    assert all(np.isfinite(m.effort).all() for m in h.efforts)
    np.testing.assert_allclose(good.effort, inverse_dynamics(panda, q, np.zeros(9), np.zeros(9)))


def test_external_wrench_on_a_link_and_zero_clears_it(make, panda):
    h = make(mode='gravity_compensation')
    q, _, _ = _state(panda, seed=8)
    wrench = WrenchStamped()
    wrench.header.frame_id = 'panda_hand'
    wrench.wrench.force.z = -20.0
    wrench.wrench.torque.x = 1.5
    h.publish('wrench', wrench)
    out = h.joint_state(panda.joint_names, q)
    f_ext = {'panda_hand': [0.0, 0.0, -20.0, 1.5, 0.0, 0.0]}
    zero = np.zeros(9)
    expected = inverse_dynamics(panda, q, zero, zero, f_ext=f_ext)
    np.testing.assert_allclose(out.effort, expected, atol=1e-12)
    assert not np.allclose(expected, inverse_dynamics(panda, q, zero, zero))
    h.publish('wrench', WrenchStamped(header=wrench.header))
    out = h.joint_state(panda.joint_names, q)
    np.testing.assert_allclose(out.effort, inverse_dynamics(panda, q, zero, zero), atol=1e-12)


def test_robot_description_topic_and_bad_description_keeps_the_old_model(make, panda):
    h = make(urdf_file='', mode='gravity_compensation')
    with open(PANDA, encoding='utf-8') as f:
        h.description.publish(String(data=f.read()))
    h.spin_until(lambda: h.node._rt is not None)
    q, _, _ = _state(panda, seed=9)
    before = h.joint_state(panda.joint_names, q)
    h.description.publish(String(data='<robot name="broken"><link name="a"><inertial>'))
    h.spin_until(lambda: 'rejected' in h.node._last_error)
    after = h.joint_state(panda.joint_names, q)
    np.testing.assert_array_equal(after.effort, before.effort)
    result = h.node.set_parameters([Parameter('urdf_file', value='/no/such/file.urdf')])[0]
    assert not result.successful and 'cannot read URDF file' in result.reason
    assert h.node._rt.model.name == 'panda'


def test_the_description_in_use_republished_builds_nothing_and_a_new_one_is_installed(
        make, panda):
    """A republished description (transient local, relaunches) that is the one in use: a no-op."""
    h = make(urdf_file='', mode='gravity_compensation')
    with open(PANDA, encoding='utf-8') as f:
        text = f.read()
    h.description.publish(String(data=text))
    h.spin_until(lambda: h.node._rt is not None)
    first = h.node._rt
    h.description.publish(String(data=text))
    h.spin_for(0.3)
    assert h.node._rt is first and not h.node._loader.pending
    heavier = text.replace('<mass value="0.646926"/>', '<mass value="1.646926"/>', 1)
    assert heavier != text
    h.description.publish(String(data=heavier))
    h.spin_until(lambda: h.node._rt is not first)
    q, _, _ = _state(panda, seed=9)
    assert not np.allclose(h.joint_state(panda.joint_names, q).effort,
                           inverse_dynamics(panda, q, np.zeros(9), np.zeros(9)))


# -- outputs ----------------------------------------------------------------------------------

def test_reaction_wrenches_match_the_core(make, panda):
    h = make(mode='inverse_dynamics')
    h.watch_wrenches(panda.joint_names)
    h.spin_until(lambda: len(h.node._rt.wrench_rows) == 9)   # the node polls for subscribers
    q, qd, qdd = _state(panda, seed=10)
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(panda.joint_names, q, qd)
    h.spin_until(lambda: all(h.wrenches[j] for j in panda.joint_names))
    expected = reaction_wrenches(panda, q, qd, qdd)
    for i, (joint, link) in enumerate(zip(panda.joint_names, panda.child_links)):
        msg = h.wrenches[joint][-1]
        assert msg.header.frame_id == link and msg.header.stamp == out.header.stamp
        f, t = msg.wrench.force, msg.wrench.torque
        np.testing.assert_allclose([f.x, f.y, f.z, t.x, t.y, t.z], expected[i], atol=1e-12)


def test_efforts_are_clamped_to_urdf_and_max_effort_limits(make, panda):
    gravity = [0.0, 0.0, -60.0]
    h = make(mode='gravity_compensation', gravity=gravity, command_topic='/test/clamp_cmd',
             max_effort=[87.0, 50.0, 87.0, 87.0, 12.0, 12.0, 12.0, 100.0, 100.0])
    h.watch_commands('/test/clamp_cmd')
    q = np.array([0.0, 1.2, 0.0, -0.3, 0.0, 1.5, 0.0, 0.02, 0.02])
    zero = np.zeros(9)
    raw = inverse_dynamics(panda, q, zero, zero, gravity=gravity)
    limits = np.minimum(panda.effort_limits, [87, 50, 87, 87, 12, 12, 12, 100, 100])
    assert (np.abs(raw) > limits).any()
    out = h.joint_state(panda.joint_names, q)
    np.testing.assert_allclose(out.effort, np.clip(raw, -limits, limits), atol=1e-12)
    h.spin_until(lambda: h.commands)
    np.testing.assert_allclose(h.commands[-1].data, out.effort)
    h.node.set_parameters([Parameter('clamp_efforts', value=False),
                           Parameter('max_effort', value=[1e6])])
    out = h.joint_state(panda.joint_names, q)
    np.testing.assert_allclose(out.effort, raw, atol=1e-12)


def test_commands_follow_command_joints_and_ramp_in(make, panda):
    order = ['panda_joint3', 'panda_joint1', 'panda_joint2']
    h = make(mode='gravity_compensation', command_topic='/test/ramp_cmd',
             command_joints=order, ramp_time=0.4)
    h.watch_commands('/test/ramp_cmd')
    q, _, _ = _state(panda, seed=11)
    first = h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: h.commands)
    full = np.array([first.effort[panda.joint_names.index(j)] for j in order])
    assert np.all(np.abs(h.commands[0].data) <= 0.25 * np.abs(full) + 1e-12)
    h.spin_for(0.45)
    h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: len(h.commands) >= 2)
    np.testing.assert_allclose(h.commands[-1].data, full, rtol=1e-12)


def test_enable_service_disable_sends_zero_and_stops_commands(make, panda):
    h = make(mode='gravity_compensation', command_topic='/test/enable_cmd')
    h.watch_commands('/test/enable_cmd')
    client = h.peer.create_client(SetBool, '/rnea/enable')
    q, _, _ = _state(panda, seed=12)
    h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: h.commands)
    future = client.call_async(SetBool.Request(data=False))
    h.spin_until(future.done)
    assert future.result().success and h.node.get_parameter('enabled').value is False
    h.spin_until(lambda: not any(h.commands[-1].data))
    count = len(h.commands)
    h.joint_state(panda.joint_names, q)              # the efforts answer arrives ...
    h.joint_state(panda.joint_names, q)
    h.spin_for(0.5)
    assert len(h.commands) == count                  # ... but no command while disabled
    future = client.call_async(SetBool.Request(data=True))
    h.spin_until(future.done)
    h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: len(h.commands) > count)
    assert any(h.commands[-1].data)


def test_stale_joint_states_stop_commands_zero_and_report_error(make, panda):
    h = make(mode='gravity_compensation', command_topic='/test/stale_cmd',
             joint_state_timeout=0.1, zero_on_timeout=True)
    h.watch_commands('/test/stale_cmd')
    q, _, _ = _state(panda, seed=13)
    h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: h.commands)
    h.spin_until(lambda: h.node._stale, timeout=1.0)
    h.spin_until(lambda: not any(h.commands[-1].data))
    h.spin_until(lambda: any(s.level == b'\x02' for d in h.diagnostics for s in d.status),
                 timeout=2.5)
    count = len(h.commands)
    h.joint_state(panda.joint_names, q)
    h.spin_until(lambda: len(h.commands) > count)
    assert any(h.commands[-1].data)


def test_rate_mode_publishes_on_a_timer_with_the_input_stamp(make, panda):
    h = make(mode='gravity_compensation', rate=200.0)
    q, _, _ = _state(panda, seed=14)
    stamp = h.joint_state(panda.joint_names, q, wait=False)
    h.spin_until(lambda: sum(m.header.stamp.nanosec == stamp for m in h.efforts) >= 5)
    assert all(m.header.stamp.nanosec == stamp for m in h.efforts)   # the timer repeats it


def test_floating_base_publishes_joint_efforts_and_base_wrench(make):
    model = RobotModel.from_urdf_file(PANDA, floating_base=True)
    h = make(mode='gravity_compensation', floating_base=True)
    base = []
    h.subs.append(h.peer.create_subscription(WrenchStamped, '/rnea/base_wrench',
                                             base.append, 10))
    h.wait_connected()
    q = np.zeros(model.nq)
    q[6] = 1.0
    q[7:14] = [0.1, 0.5, -0.2, -1.5, 0.3, 1.2, 0.4]
    out = h.joint_state(model.joint_names, q[7:])
    tau = inverse_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv))
    np.testing.assert_allclose(out.effort, tau[6:], atol=1e-12)
    h.spin_until(lambda: base)
    f, t = base[-1].wrench.force, base[-1].wrench.torque
    np.testing.assert_allclose([f.x, f.y, f.z, t.x, t.y, t.z], tau[:6], atol=1e-9)


def test_floating_base_in_motion_base_wrench_matches_the_core(make):
    """Joints moving and accelerating, a wrench on the hand: efforts and base wrench = core."""
    model = RobotModel.from_urdf_file(PANDA, floating_base=True)
    h = make(mode='inverse_dynamics', floating_base=True, clamp_efforts=False)
    base = []
    h.subs.append(h.peer.create_subscription(WrenchStamped, '/rnea/base_wrench',
                                             base.append, 10))
    h.wait_connected()
    joints = RobotModel.from_urdf_file(PANDA)
    wrench = WrenchStamped()
    wrench.header.frame_id = 'panda_hand'
    wrench.wrench.force.x, wrench.wrench.torque.z = 15.0, -2.0
    h.publish('wrench', wrench)
    for seed in (40, 41):
        q_j, qd_j, qdd_j = _state(joints, seed=seed)
        qd_j *= 3.0                                 # fast: Coriolis terms on the base matter
        h.publish('accelerations_array', _array(qdd_j))
        out = h.joint_state(model.joint_names, q_j, qd_j)
        q = np.concatenate([np.zeros(6), [1.0], q_j])
        qd, qdd = np.r_[np.zeros(6), qd_j], np.r_[np.zeros(6), qdd_j]
        tau = inverse_dynamics(model, q, qd, qdd,
                               f_ext={'panda_hand': [15.0, 0, 0, 0, 0, -2.0]})
        np.testing.assert_allclose(out.effort, tau[6:], rtol=1e-12, atol=1e-12)
        h.spin_until(lambda: any(m.header.stamp == out.header.stamp for m in base))
        msg = next(m for m in base if m.header.stamp == out.header.stamp)
        assert msg.header.frame_id == model.root_link
        f, t = msg.wrench.force, msg.wrench.torque
        np.testing.assert_allclose([f.x, f.y, f.z, t.x, t.y, t.z], tau[:6], rtol=1e-12,
                                   atol=1e-9)
        at_rest = inverse_dynamics(model, q, np.zeros(model.nv), np.zeros(model.nv))
        assert np.abs(tau[:6] - at_rest[:6]).max() > 1.0   # motion changes the base wrench


# -- parameters -------------------------------------------------------------------------------

@pytest.mark.parametrize('name, value, reason', [
    ('mode', 'fly', 'mode must be one of'),
    ('gravity', [0.0, -9.81], 'exactly 3 values'),
    ('kp', [1.0, 2.0], 'kp has 2 values'),
    ('command_joints', ['panda_joint1', 'elbow'], 'lacks'),
    ('desired_timeout', -1.0, 'desired_timeout'),
    ('max_effort', [-1.0], 'max_effort'),
])
def test_invalid_parameters_are_refused_with_a_reason(make, name, value, reason):
    h = make()
    result = h.node.set_parameters([Parameter(name, value=value)])[0]
    assert not result.successful
    assert reason in result.reason


@pytest.mark.parametrize('filename', ['rnea.yaml', 'gravity_compensation.yaml'])
def test_config_files_load_through_rcl_into_the_node(filename):
    path = os.path.join(ROOT, 'config', filename)
    with open(path, encoding='utf-8') as f:
        values = yaml.safe_load(f)['/**']['ros__parameters']
    ctx = rclpy.Context()
    rclpy.init(context=ctx, args=['--ros-args', '--params-file', path], domain_id=DOMAIN_ID)
    try:
        node = RneaNode(context=ctx)
        assert {name: node._cfg[name] for name in values} == values
        node.destroy_node()
    finally:
        rclpy.shutdown(context=ctx)


def test_python_m_node_stops_cleanly_on_sigterm_and_sigint():
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN_ID), PYTHONPATH=ROOT)
    for signum in (15, 2):
        proc = subprocess.Popen([sys.executable, '-m', 'rnea_ros.node', '--ros-args', '-p',
                                 f'urdf_file:={PANDA}'], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        out = ''
        try:
            end = time.monotonic() + 30
            while 'loaded' not in out and time.monotonic() < end:
                out += proc.stdout.readline()
            proc.send_signal(signum)
            assert proc.wait(timeout=10) == 0, out
        finally:
            proc.kill()


def _wait_mapped(pid, library, timeout=60.0):
    """Wait until the process has loaded a shared library whose path contains ``library``."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        with open(f'/proc/{pid}/maps') as maps:
            if library in maps.read():
                return True
        time.sleep(0.005)
    return False


@pytest.mark.parametrize('moment', ['numba', 'rclpy', 'model'])
def test_python_m_node_interrupted_during_start_up_exits_0_without_traceback(moment):
    """Ctrl-C while the node imports numba, imports rclpy or loads its model: quiet exit 0.

    Before, ``python -m rnea_ros.node`` died by SIGINT (-2) with a KeyboardInterrupt traceback
    when interrupted during its imports, which ros2 launch reports as a crash.  The moments are
    taken from the libraries the process has loaded (not a delay: a slow machine is still
    starting the interpreter after 0.5 s, where no program can catch a signal).
    """
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN_ID), PYTHONPATH=ROOT)
    proc = subprocess.Popen([sys.executable, '-m', 'rnea_ros.node', '--ros-args', '-p',
                             f'urdf_file:={PANDA}'], env=env, cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert _wait_mapped(proc.pid, 'numba' if moment == 'numba' else 'rclpy')
        if moment == 'model':
            time.sleep(0.3)         # rclpy is up; the node is being made (model, numba cache)
        proc.send_signal(2)
        out, _ = proc.communicate(timeout=30)
        assert proc.returncode == 0 and 'Traceback' not in out, out
    finally:
        proc.kill()


def test_live_reload_keeps_joint_states_and_does_not_restart_the_ramp(make, panda):
    h = make(mode='gravity_compensation', command_topic='/test/reload_cmd', ramp_time=0.2)
    h.watch_commands('/test/reload_cmd')
    q, _, _ = _state(panda, seed=15)
    h.joint_state(panda.joint_names, q)
    h.spin_for(0.25)
    full = h.joint_state(panda.joint_names, q).effort
    with open(PANDA, encoding='utf-8') as f:
        result = h.node.set_parameters([Parameter('robot_description', value=f.read())])[0]
    assert result.successful
    count = len(h.commands)
    out = h.joint_state(ARM, q[:7])               # the fingers are remembered across the reload
    np.testing.assert_allclose(out.effort, full, atol=1e-12)
    h.spin_until(lambda: len(h.commands) > count)
    np.testing.assert_allclose(h.commands[-1].data, full, atol=1e-12)


def test_undecodable_joint_state_bytes_are_rejected_and_the_node_answers_the_next(make, panda):
    """Joint states arrive as bytes (wire.JointStateReader): garbage gets a reason, no crash."""
    h = make(mode='gravity_compensation')
    q, qd, _ = _state(panda)
    assert h.joint_state(panda.joint_names, q, qd) is not None
    h.publish('joint_states', b'\x00\x01\x00\x00' + b'\xff' * 40)
    assert 'cannot decode' in h.node._last_error
    answer = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(answer.effort, inverse_dynamics(panda, q, np.zeros(9),
                                                               np.zeros(9)), atol=1e-9)
