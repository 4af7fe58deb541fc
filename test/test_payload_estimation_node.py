"""~/estimate_payload of the rnea node (real rclpy, in-process), MuJoCo efforts as measurements.

Joint states carry what MuJoCo needs to hold or move the robot with a hidden payload; the node
estimates it, publishes progress and the result on ~/payload_estimation, commits it through
~/set_payload (or at once with payload_estimation.auto_commit), and its gravity compensation
then includes the payload.
"""

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
import numpy as np
import pytest
from rcl_interfaces.srv import SetParametersAtomically
from rnea_ros import gravity_torques
from rnea_ros.core.payload import model_with_payload, Payload
from rnea_ros.node.payload_estimation import STATUS_QOS
from robots import urdf_path
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool
import test_node
from test_node import PANDA
from test_payload_estimation import MujocoArm, PANDA_HOME, random_payload, UR5_HOME

context, make, panda = test_node.context, test_node.make, test_node.panda   # fixtures


class Estimation:
    """Status subscriber, services and stamped joint states with efforts on a harness."""

    def __init__(self, h):
        """Subscribe to ~/payload_estimation and create the service clients."""
        self.h, self.status = h, []
        h.subs.append(h.peer.create_subscription(DiagnosticStatus, '/rnea/payload_estimation',
                                                 self.status.append, STATUS_QOS))
        self.start_client = h.peer.create_client(SetBool, '/rnea/estimate_payload')
        self.set_client = h.peer.create_client(SetParametersAtomically, '/rnea/set_payload')
        self.t = 1000.0
        h.wait_connected()

    def call(self, client, request):
        assert client.wait_for_service(timeout_sec=5.0)
        future = client.call_async(request)
        self.h.spin_until(future.done)
        return future.result()

    def start(self, data=True):
        return self.call(self.start_client, SetBool.Request(data=data))

    def commit(self):
        return self.call(self.set_client, SetParametersAtomically.Request()).result

    def send(self, names, q, qd, effort, dt):
        """Publish one joint state stamped dt after the previous; wait for the node's answer."""
        h = self.h
        self.t += dt
        sec = int(self.t)
        msg = JointState(name=list(names), position=[float(x) for x in q],
                         velocity=[float(x) for x in qd],
                         effort=[float(x) for x in effort] if effort is not None else [])
        msg.header.stamp = Time(sec=sec, nanosec=int(round((self.t - sec) * 1e9)) % 10 ** 9)
        h.pubs['joint_states'].publish(msg)
        h.spin_until(lambda: any(m.header.stamp == msg.header.stamp for m in h.efforts))
        answer = h.efforts[-1]
        h.efforts.clear()
        return answer

    def values(self, status=None):
        status = status or self.status[-1]
        return {kv.key: kv.value for kv in status.values}

    def wait_state(self, state):
        self.h.spin_until(lambda: self.status and self.values()['state'] == state)
        return self.status[-1]


def _hold(est, arm, names, q, effort, still_time):
    """Hold a pose: still_time + 2 samples of 20 ms with the same state and efforts."""
    for _ in range(int(still_time / 0.02) + 2):
        est.send(names, q, np.zeros(len(q)), effort, 0.02)


def test_poses_progress_result_commit_and_gravity_compensation_with_the_payload(make):
    """5 still poses of the panda with a payload on panda_hand (MuJoCo efforts, + noise)."""
    payload = random_payload('panda_hand', seed=40)
    arm = MujocoArm(open(PANDA, encoding='utf-8').read(), payload)
    h = make(mode='gravity_compensation', **{
        'payload_estimation.link': 'panda_hand', 'payload_estimation.mode': 'poses',
        'payload_estimation.poses': 5.0, 'payload_estimation.still_time': 0.1})
    est = Estimation(h)
    assert est.values(est.wait_state('idle'))['state'] == 'idle'
    answer = est.start()
    assert answer.success and 'hold the arm still in 5 poses' in answer.message, answer.message
    assert not est.start().success                         # one at a time
    rng = np.random.default_rng(40)
    names = arm.names
    poses = np.tile(PANDA_HOME, (5, 1))
    poses[:, :7] += rng.uniform(-0.7, 0.7, (5, 7))
    fractions = []
    for q in poses:
        _hold(est, arm, names, q, arm.still(q, noise=0.02, rng=rng), 0.1)
        fractions.append(float(est.values()['progress']))
    final = est.wait_state('succeeded')
    values = est.values(final)
    assert fractions == sorted(fractions) and fractions[0] == pytest.approx(0.2)
    assert float(values['progress']) == 1.0 and values['poses'] == '5'
    mass = float(values['mass'])
    com = np.array([float(x) for x in values['com'].strip('[]').split(',')])
    assert abs(mass - payload.mass) <= 0.03 * payload.mass
    assert np.linalg.norm(com - payload.com) <= 0.01
    assert values['point_mass'] == 'true' and 'commit with ~/set_payload' in final.message
    assert values['committed'] == 'false'
    assert est.commit().successful
    h.spin_until(lambda: est.values()['committed'] == 'true')
    q = PANDA_HOME
    out = est.send(names, q, np.zeros(9), arm.still(q), 0.02)
    node = h.node
    committed = Payload(node.get_parameter('payload_link').value,
                        node.get_parameter('payload_mass').value,
                        node.get_parameter('payload_com').value)
    assert committed.mass == pytest.approx(mass, rel=1e-4)
    estimate = model_with_payload(arm_xml(), committed)
    np.testing.assert_allclose(out.effort, gravity_torques(estimate, q), rtol=1e-9, atol=1e-9)
    truth = arm.still(q)
    bare = gravity_torques(arm.nominal, q)
    # Gravity compensation with the committed estimate: far closer to the truth than without.
    assert np.abs(out.effort - truth).max() < 0.1 * np.abs(bare - truth).max()


def arm_xml():
    with open(PANDA, encoding='utf-8') as f:
        return f.read()


def test_slow_motion_with_auto_commit(make):
    """5 s of UR5 motion at 250 Hz: accelerations from the velocities, committed at once."""
    xml = open(urdf_path('ur5'), encoding='utf-8').read()
    payload = random_payload('tool0', seed=41)
    arm = MujocoArm(xml, payload)
    t, Q, QD, _, E = arm.sinusoids(UR5_HOME, 5.2, seed=41, decimation=4)
    h = make(urdf_file=urdf_path('ur5'), mode='gravity_compensation', **{
        'payload_estimation.link': 'tool0', 'payload_estimation.auto_commit': True})
    est = Estimation(h)
    assert est.start().success
    for k in range(t.size):
        est.send(arm.names, Q[k], QD[k], E[k], 0.004)
        if est.values()['state'] != 'running':
            break
    values = est.values(est.wait_state('succeeded'))
    assert values['committed'] == 'true', est.status[-1].message
    node = h.node
    assert node.get_parameter('payload_link').value == 'tool0'
    assert abs(node.get_parameter('payload_mass').value - payload.mass) <= 0.03 * payload.mass
    com = np.array(node.get_parameter('payload_com').value)
    assert np.linalg.norm(com - payload.com) <= 0.01
    q = UR5_HOME
    out = est.send(arm.names, q, np.zeros(6), arm.still(q), 0.004)
    assert np.abs(np.array(out.effort) - arm.still(q)).max() < 0.05 * np.abs(arm.still(q)).max()


def test_one_pose_is_refused_with_the_reason_and_nothing_committed(make, panda):
    """Refused: no commit, neither automatic (auto_commit on) nor by ~/set_payload."""
    h = make(mode='gravity_compensation', **{
        'payload_estimation.link': 'panda_hand', 'payload_estimation.mode': 'poses',
        'payload_estimation.poses': 1.0, 'payload_estimation.still_time': 0.1,
        'payload_estimation.auto_commit': True})
    est = Estimation(h)
    assert not est.commit().successful                       # nothing estimated yet
    assert est.start().success
    loaded = model_with_payload(arm_xml(), Payload('panda_hand', 1.0, (0.02, 0.0, 0.05)))
    _hold(est, None, panda.joint_names, PANDA_HOME, gravity_torques(loaded, PANDA_HOME), 0.1)
    final = est.wait_state('refused')
    assert 'COM along' in final.message and 'unobservable' in final.message, final.message
    assert final.level == DiagnosticStatus.WARN
    result = est.commit()
    assert not result.successful and 'refused' in result.reason
    assert h.node.get_parameter('payload_mass').value == 0.0


def test_nan_and_missing_efforts_are_refused_with_a_message_and_the_node_keeps_running(make,
                                                                                       panda):
    h = make(mode='gravity_compensation', **{'payload_estimation.mode': 'poses'})
    est = Estimation(h)
    assert est.start().success
    q = PANDA_HOME
    est.send(panda.joint_names, q, np.zeros(9), None, 0.01)                  # no efforts
    h.spin_until(lambda: 'carry no efforts' in est.status[-1].message)
    bad = gravity_torques(panda, q)
    bad[3] = np.nan
    est.send(panda.joint_names, q, np.zeros(9), bad, 0.01)
    h.spin_until(lambda: "effort not finite for ['panda_joint4']" in est.status[-1].message)
    est.send(panda.joint_names[:8], q[:8], np.zeros(8), bad[:8], 0.01)      # one joint short
    h.spin_until(lambda: "no effort for ['panda_finger_joint2']" in est.status[-1].message)
    values = est.values()
    assert values['refused_samples'] == '3' and values['samples'] == '0'
    assert est.status[-1].level == DiagnosticStatus.ERROR
    assert est.send(panda.joint_names, q, np.zeros(9), None, 0.01).effort   # still answering
    assert est.start(False).success
    assert est.wait_state('cancelled').level == DiagnosticStatus.WARN
    assert not est.start(False).success                      # nothing to cancel


def test_unknown_link_is_refused_at_start(make):
    h = make(**{'payload_estimation.link': 'no_such_link'})
    answer = Estimation(h).start()
    assert not answer.success and "'no_such_link' is not a link" in answer.message
