"""Effort residual, contact flag and payload of the rnea node (real rclpy, panda URDF).

The payload identities need no ROS: a payload is exactly a URDF link on a fixed joint, and its
gravity torques are those of its weight applied as an external force (and Pinocchio agrees).
"""

import numpy as np
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import SetParametersAtomically
from rclpy.parameter import Parameter
from rnea_ros import gravity_torques, inverse_dynamics, RobotModel
from rnea_ros.core.payload import model_with_payload, Payload, payload_urdf
from rnea_ros.core.reference import link_pose
from rnea_ros.node.monitor_params import attach_payload, payload_from_config
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool
from std_srvs.srv import Trigger
import test_node
from test_node import _array, _state, PANDA
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

context, make, panda = test_node.context, test_node.make, test_node.panda   # the fixtures
HAND = Payload('panda_hand', 1.7, (0.01, -0.02, 0.12), [0.004, 0.005, 0.003, 1e-4, 0.0, 2e-4])


@pytest.fixture(scope='module')
def panda_xml():
    with open(PANDA, encoding='utf-8') as f:
        return f.read()


def _weight_on_link(model, q, payload, g=9.81):
    """Return f_ext for the weight of a payload: force m g (down) at its COM, link frame."""
    R, _ = link_pose(model, q, payload.link)
    force = R.T @ np.array([0.0, 0.0, -payload.mass * g])
    return {payload.link: np.concatenate([force, np.cross(payload.com, force)])}


# -- payload identities (no ROS) --------------------------------------------------------------

def test_payload_model_equals_a_urdf_with_that_link(panda, panda_xml):
    loaded = model_with_payload(panda_xml, HAND)
    reference = RobotModel.from_urdf_string(payload_urdf(panda_xml, HAND))
    q, qd, qdd = _state(panda, seed=20)
    np.testing.assert_allclose(inverse_dynamics(loaded, q, qd, qdd),
                               inverse_dynamics(reference, q, qd, qdd), rtol=1e-13, atol=1e-12)
    assert loaded.total_mass == pytest.approx(panda.total_mass + HAND.mass)


@pytest.mark.parametrize('seed', [21, 22, 23])
def test_payload_gravity_torques_are_its_weight_as_an_external_force(panda, panda_xml, seed):
    q, _, _ = _state(panda, seed=seed)
    loaded = model_with_payload(panda_xml, HAND)
    expected = gravity_torques(panda, q, f_ext=_weight_on_link(panda, q, HAND))
    np.testing.assert_allclose(gravity_torques(loaded, q), expected, rtol=1e-12, atol=1e-12)
    assert not np.allclose(expected, gravity_torques(panda, q))


def test_payload_matches_pinocchio_body_appended_to_the_joint(panda, panda_xml):
    pin = pytest.importorskip('pinocchio')
    pmodel = pin.buildModelFromXML(panda_xml)
    frame = pmodel.frames[pmodel.getFrameId(HAND.link)]
    inertia = pin.Inertia(HAND.mass, np.array(HAND.com), HAND.inertia)
    pmodel.appendBodyToJoint(frame.parentJoint, inertia, frame.placement)
    q, qd, qdd = _state(panda, seed=24)
    expected = pin.rnea(pmodel, pmodel.createData(), q, qd, qdd)
    loaded = model_with_payload(panda_xml, HAND)
    np.testing.assert_allclose(inverse_dynamics(loaded, q, qd, qdd), expected, rtol=1e-10,
                               atol=1e-10)


def test_attach_payload_keeps_friction_armature_and_joint_order(panda_xml):
    names = list(reversed(RobotModel.from_urdf_string(panda_xml).joint_names))
    model = RobotModel.from_urdf_string(panda_xml, joint_names=names,
                                        friction_viscous={'panda_joint2': 0.7},
                                        armature={'panda_joint4': 0.3}, coulomb_band=0.02)
    cfg = {'payload_link': HAND.link, 'payload_mass': HAND.mass, 'payload_com': list(HAND.com),
           'payload_inertia': [0.004, 0.005, 0.003, 1e-4, 0.0, 2e-4]}
    loaded = attach_payload(model, cfg, panda_xml, is_file=False)
    assert loaded.joint_names == model.joint_names
    np.testing.assert_array_equal(loaded.friction_viscous, model.friction_viscous)
    np.testing.assert_array_equal(loaded.armature, model.armature)
    assert loaded.coulomb_band == 0.02
    assert attach_payload(model, dict(cfg, payload_mass=0.0, payload_inertia=[0.0] * 6),
                          panda_xml, False) is model


@pytest.mark.parametrize('cfg, message', [
    ({'payload_link': '', 'payload_mass': 1.0}, 'payload_link is empty'),
    ({'payload_link': 'x', 'payload_mass': 1.0, 'payload_com': [0.0]}, '3 values'),
    ({'payload_link': 'x', 'payload_mass': 1.0, 'payload_inertia': [1.0]}, '6 values'),
    ({'payload_link': 'x' * 10_000}, 'cannot be a link name'),        # even with no mass
    ({'payload_link': 'a\x00b', 'payload_mass': 1.0}, 'cannot be a link name'),
    ({'payload_link': 'two words'}, 'cannot be a link name'),
])
def test_inconsistent_payload_parameters_are_explained(cfg, message):
    with pytest.raises(ValueError, match=message):
        payload_from_config(cfg)


# -- the node ---------------------------------------------------------------------------------

class Monitor:
    """Residual and contact subscribers on a test harness, and joint states with efforts."""

    def __init__(self, h):
        """Subscribe to ~/effort_residual and ~/contact."""
        self.h, self.residuals, self.contacts = h, [], []
        h.subs.append(h.peer.create_subscription(JointState, '/rnea/effort_residual',
                                                 self.residuals.append, 100))
        h.subs.append(h.peer.create_subscription(Bool, '/rnea/contact',
                                                 self.contacts.append, 100))

    def send(self, names, q, qd, effort):
        """Publish joint states with efforts; return the node's joint_efforts answer."""
        h = self.h
        h._stamp += 1
        msg = JointState(name=list(names), position=[float(x) for x in q],
                         velocity=[float(x) for x in qd], effort=[float(x) for x in effort])
        msg.header.stamp.sec, msg.header.stamp.nanosec = 1000, h._stamp
        h.pubs['joint_states'].publish(msg)
        h.spin_until(lambda: h.answer(h._stamp) is not None)
        return h.answer(h._stamp)

    def residual(self, stamp):
        """Wait for and return the residual message with that stamp."""
        def find():
            return next((m for m in self.residuals if m.header.stamp == stamp), None)
        self.h.spin_until(lambda: find() is not None)
        return find()


@pytest.mark.parametrize('mode', ['inverse_dynamics', 'computed_torque',
                                  'gravity_compensation'])
def test_residual_is_measured_minus_model_with_the_documented_acceleration(make, panda, mode):
    h = make(mode=mode, clamp_efforts=False, kp=[0.0], kd=[0.0])
    m = Monitor(h)
    h.wait_connected()
    q, qd, qdd = _state(panda, seed=30)
    if mode == 'inverse_dynamics':
        h.publish('accelerations_array', _array(qdd))
    elif mode == 'computed_torque':                 # kp = kd = 0: the command is qdd_ref
        qdd[8] = qdd[7]                             # the mimic finger follows its driver
        point = JointTrajectoryPoint(positions=list(q[:8]), velocities=list(qd[:8]),
                                     accelerations=list(qdd[:8]))
        h.publish('reference', JointTrajectory(joint_names=list(panda.joint_names[:8]),
                                               points=[point]))
    measured = np.linspace(-3.0, 5.0, 9)
    out = m.send(panda.joint_names, q, qd, measured)
    res = m.residual(out.header.stamp)
    used_qdd = np.zeros(9) if mode == 'gravity_compensation' else qdd
    assert list(res.name) == list(panda.joint_names)
    np.testing.assert_allclose(res.effort, measured - inverse_dynamics(panda, q, qd, used_qdd),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(res.velocity, qd)          # measured, even in gravity mode
    assert not m.contacts                                  # no thresholds: no ~/contact


def test_no_efforts_or_missing_joints_publish_no_residual(make, panda):
    h = make(mode='gravity_compensation')
    m = Monitor(h)
    h.wait_connected()
    q, qd, _ = _state(panda, seed=31)
    h.joint_state(panda.joint_names, q, qd)                       # no efforts
    m.send(panda.joint_names[:8], q[:8], qd[:8], np.ones(8))      # finger 2's effort missing
    h.spin_for(0.1)
    assert not m.residuals


def test_contact_when_a_residual_exceeds_its_threshold(make, panda):
    thresholds = [2.0] * 9
    thresholds[3] = 0.5
    h = make(mode='gravity_compensation', contact_thresholds=thresholds)
    m = Monitor(h)
    h.wait_connected()
    q, qd, _ = _state(panda, seed=32)
    model = inverse_dynamics(panda, q, qd, np.zeros(9))
    m.residual(m.send(panda.joint_names, q, qd, model + 0.4).header.stamp)
    h.spin_until(lambda: len(m.contacts) == 1)
    bump = np.zeros(9)
    bump[3] = 0.6
    m.residual(m.send(panda.joint_names, q, qd, model + bump).header.stamp)
    h.spin_until(lambda: len(m.contacts) == 2)
    assert [c.data for c in m.contacts] == [False, True]
    bad = h.node.set_parameters([Parameter('contact_thresholds', value=[1.0, 2.0])])[0]
    assert not bad.successful and 'contact_thresholds has 2 values' in bad.reason


def test_payload_parameter_at_start_changes_gravity_compensation(make, panda, panda_xml):
    h = make(mode='gravity_compensation', payload_link=HAND.link, payload_mass=HAND.mass,
             payload_com=list(HAND.com), payload_inertia=[0.004, 0.005, 0.003, 1e-4, 0.0, 2e-4])
    q, _, _ = _state(panda, seed=33)
    out = h.joint_state(panda.joint_names, q)
    np.testing.assert_allclose(
        out.effort, gravity_torques(panda, q, f_ext=_weight_on_link(panda, q, HAND)),
        rtol=1e-12, atol=1e-12)


def _call(h, client, request):
    assert client.wait_for_service(timeout_sec=5.0)
    future = client.call_async(request)
    h.spin_until(future.done)
    return future.result()


def _diagnostic(h, key):
    h.diagnostics.clear()
    h.spin_until(lambda: h.diagnostics, timeout=5.0)
    values = {kv.key: kv.value for kv in h.diagnostics[-1].status[0].values}
    return values[key]


def test_set_and_clear_payload_services_between_cycles(make, panda):
    h = make(mode='gravity_compensation')
    q, _, _ = _state(panda, seed=34)
    before = h.joint_state(panda.joint_names, q)
    set_client = h.peer.create_client(SetParametersAtomically, '/rnea/set_payload')
    clear_client = h.peer.create_client(Trigger, '/rnea/clear_payload')
    request = SetParametersAtomically.Request(parameters=[
        Parameter('payload_link', value='panda_hand').to_parameter_msg(),
        Parameter('payload_mass', value=2.0).to_parameter_msg(),
        Parameter('payload_com', value=[0.0, 0.0, 0.1]).to_parameter_msg()])
    assert _call(h, set_client, request).result.successful
    point = Payload('panda_hand', 2.0, (0.0, 0.0, 0.1))
    loaded = h.joint_state(panda.joint_names, q)
    np.testing.assert_allclose(
        loaded.effort, gravity_torques(panda, q, f_ext=_weight_on_link(panda, q, point)),
        rtol=1e-12, atol=1e-12)
    assert _diagnostic(h, 'payload').startswith('2 kg on panda_hand')
    bad = SetParametersAtomically.Request(parameters=[
        Parameter('payload_link', value='no_link').to_parameter_msg(),
        Parameter('payload_mass', value=1.0).to_parameter_msg()])
    result = _call(h, set_client, bad).result
    assert not result.successful and "'no_link' is not a link" in result.reason
    other = SetParametersAtomically.Request(parameters=[ParameterMsg(name='mode')])
    assert not _call(h, set_client, other).result.successful
    np.testing.assert_array_equal(h.joint_state(panda.joint_names, q).effort, loaded.effort)
    assert _call(h, clear_client, Trigger.Request()).success
    cleared = h.joint_state(panda.joint_names, q)
    np.testing.assert_allclose(cleared.effort, before.effort, rtol=1e-13, atol=1e-13)
    assert _diagnostic(h, 'payload') == 'none'
