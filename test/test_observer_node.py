"""The rnea node's momentum observer with real rclpy (panda URDF, in-process, private domain).

The arm is held still by a known wrench on a link: the measured efforts are g(q) - J^T F, so the
observer's output is J^T F (1 - exp(-K t)) exactly, and the node's messages are compared with
the library's observer run on the same samples.
"""

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticStatus
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rnea_ros import (coriolis_matrix, frame_jacobian, gravity_torques, inverse_dynamics,
                      MomentumObserver)
from rnea_ros.core.dynamics import joint_friction
from rnea_ros.node.rnea_node import RneaNode
from sensor_msgs.msg import JointState
from std_srvs.srv import SetBool
import test_node

context, make, panda = test_node.context, test_node.make, test_node.panda   # the fixtures
Q = np.array([0.1, -0.4, 0.3, -2.1, 0.2, 1.7, 0.6, 0.02, 0.02])
WRENCH = np.array([4.0, -6.0, 9.0, 0.3, -0.2, 0.5])      # on panda_hand, its frame and origin
GAIN = 200.0


class Watch:
    """The observer's topics as seen by the harness's peer node, and a stamped input helper."""

    def __init__(self, h):
        """Subscribe to ~/external_torques, ~/external_wrench and ~/collision."""
        self.h = h
        self.torques, self.wrenches, self.events = [], [], []
        peer = h.peer
        h.subs += [peer.create_subscription(JointState, '/rnea/external_torques',
                                            self.torques.append, 100),
                   peer.create_subscription(WrenchStamped, '/rnea/external_wrench',
                                            self.wrenches.append, 100),
                   peer.create_subscription(DiagnosticStatus, '/rnea/collision',
                                            self.events.append, QoSProfile(
                                                depth=10,
                                                reliability=ReliabilityPolicy.RELIABLE))]
        h.wait_connected()
        self.k = 0

    def send(self, q, effort, names=None, expect=True, qd=None):
        """Publish one joint state 1 ms after the previous; wait for its efforts answer."""
        self.k += 1
        msg = JointState(name=list(names or self.h.node._rt.model.joint_names),
                         position=[float(x) for x in q],
                         velocity=[0.0] * len(q) if qd is None else [float(x) for x in qd],
                         effort=[] if effort is None else [float(x) for x in effort])
        msg.header.stamp = Time(sec=100, nanosec=self.k * 1_000_000)
        self.h.pubs['joint_states'].publish(msg)
        self.h.spin_until(lambda: any(m.header.stamp == msg.header.stamp
                                      for m in self.h.efforts))
        if expect:
            self.h.spin_until(lambda: self.torque(self.k) is not None)
        return self.k

    def torque(self, k):
        """Return the ~/external_torques message of input k, or None."""
        for m in self.torques:
            if m.header.stamp.sec == 100 and m.header.stamp.nanosec == k * 1_000_000:
                return m
        return None


def _held(model, q, wrench=WRENCH, link='panda_hand'):
    """Return (tau_ext = J^T F, measured efforts g(q) - tau_ext) of an arm held by a wrench."""
    tau_ext = frame_jacobian(model, q, link, reference='LOCAL').T @ wrench
    return tau_ext, gravity_torques(model, q) - tau_ext


def test_external_torques_and_wrench_equal_the_library_with_the_input_stamps(make, panda):
    """~/external_torques = the library observer on the same samples; the wrench = F (1-e^-Kt)."""
    h = make(mode='gravity_compensation', observer_enabled=True, observer_gains=[GAIN],
             external_wrench_frame='panda_hand')
    w = Watch(h)
    tau_ext, effort = _held(panda, Q)
    library = MomentumObserver(panda, GAIN)
    for k in range(1, 31):
        w.send(Q, effort)
        expected = library.update(100 + 0.001 * k, Q, np.zeros(panda.nv), effort)
        np.testing.assert_allclose(w.torque(k).effort, expected, rtol=1e-9, atol=1e-9)
        assert list(w.torque(k).name) == list(panda.joint_names)
    np.testing.assert_allclose(expected, tau_ext * (1 - np.exp(-GAIN * 0.029)), atol=1e-9)
    h.spin_until(lambda: w.wrenches)
    last = w.wrenches[-1]
    assert last.header.frame_id == 'panda_hand'
    k = last.header.stamp.nanosec // 1_000_000
    assert last.header.stamp.sec == 100 and 1 <= k <= 30
    f, m = last.wrench.force, last.wrench.torque
    np.testing.assert_allclose([f.x, f.y, f.z, m.x, m.y, m.z],
                               WRENCH * (1 - np.exp(-GAIN * 0.001 * (k - 1))), atol=1e-6)
    largest = float(np.abs(expected).max())

    def diagnosed():
        return [float(v.value) for d in h.diagnostics for s in d.status for v in s.values
                if v.key == 'max_external_torque']
    h.spin_until(lambda: any(x > 0.0 for x in diagnosed()), timeout=3.0)
    assert max(diagnosed()) == pytest.approx(largest, rel=1e-3)


@pytest.mark.parametrize('rate', [0.0, 2.0])
def test_external_wrench_is_sent_at_its_rate_and_the_torques_every_cycle(make, panda, rate):
    """external_wrench_rate: 0 sends a wrench for every input, 2 Hz one per 0.5 s (steady clock).

    The external torques go out for every input either way, and each wrench is the one of the
    external torques of its own input (stamp).
    """
    import time
    h = make(mode='gravity_compensation', observer_enabled=True, observer_gains=[GAIN],
             external_wrench_frame='panda_hand', external_wrench_rate=rate)
    w = Watch(h)
    _, effort = _held(panda, Q)
    start = time.monotonic()
    for _ in range(12):
        w.send(Q, effort)
    elapsed = time.monotonic() - start
    assert all(w.torque(k) is not None for k in range(1, 13))
    if rate == 0.0:
        h.spin_until(lambda: len(w.wrenches) == 12)
    else:
        h.spin_for(0.05)
        assert 1 <= len(w.wrenches) <= 1 + elapsed * rate
    for msg in w.wrenches:
        k = msg.header.stamp.nanosec // 1_000_000
        f, m = msg.wrench.force, msg.wrench.torque
        np.testing.assert_allclose([f.x, f.y, f.z, m.x, m.y, m.z],
                                   WRENCH * (1 - np.exp(-GAIN * 0.001 * (k - 1))), atol=1e-6)


def test_bad_efforts_suspend_the_observer_publish_nothing_and_say_why(make, panda):
    """NaN, missing and partial efforts: no ~/external_torques for them, diagnostics explain."""
    h = make(mode='gravity_compensation', observer_enabled=True)
    w = Watch(h)
    _, effort = _held(panda, Q)
    w.send(Q, effort)
    bad = effort.copy()
    bad[3] = np.nan
    cases = [(bad, None, 'not finite'), (None, None, 'carry no efforts'),
             (effort[:7], panda.joint_names[:7], 'partial efforts')]
    for values, names, reason in cases:
        k = w.send(Q[:len(values)] if values is not None else Q, values, names, expect=False)
        h.spin_for(0.05)
        assert w.torque(k) is None
        assert reason in h.node._observer.status
    h.spin_until(lambda: any(v.key == 'observer' and 'suspended' in v.value
                             for d in h.diagnostics for s in d.status for v in s.values),
                 timeout=3.0)
    assert all(np.all(np.isfinite(m.effort)) for m in w.torques)
    w.send(Q, effort)                                   # resumes
    assert h.node._observer.status == 'running'


def test_observer_filter_reports_the_filtered_estimate_and_bad_values_are_refused(make, panda):
    """observer_filter K_f: ~/external_torques = the library observer with that filter.

    Set at run time it rebuilds the observer; negative, NaN or huge values are refused and the
    old one kept.
    """
    h = make(mode='gravity_compensation', observer_enabled=True, observer_gains=[GAIN],
             observer_filter=150.0)
    w = Watch(h)
    _, effort = _held(panda, Q)
    library = MomentumObserver(panda, GAIN, output_filter=150.0)
    plain = MomentumObserver(panda, GAIN)
    for k in range(1, 11):
        w.send(Q, effort)
        expected = library.update(100 + 0.001 * k, Q, np.zeros(panda.nv), effort)
        unfiltered = plain.update(100 + 0.001 * k, Q, np.zeros(panda.nv), effort)
        np.testing.assert_allclose(w.torque(k).effort, expected, rtol=1e-9, atol=1e-9)
    assert np.abs(unfiltered - expected).max() > 0.1 * np.abs(unfiltered).max()
    node = h.node
    for value in (-1.0, float('nan'), 1e9):
        result = node.set_parameters([Parameter('observer_filter', value=value)])[0]
        assert not result.successful and 'observer_filter' in result.reason
        assert node.get_parameter('observer_filter').value == 150.0
    assert node.set_parameters([Parameter('observer_filter', value=0.0)])[0].successful
    w.send(Q, effort)
    assert node._observer.observer.output_filter == 0.0


def test_absurd_observer_parameters_are_refused_and_the_old_ones_kept(make, panda):
    """Gains <= 0, NaN, huge or of a wrong length, unknown reactions or frames: refused."""
    h = make(mode='gravity_compensation', observer_enabled=True)
    node = h.node
    refused = [('observer_gains', [-1.0]), ('observer_gains', [float('nan')]),
               ('observer_gains', [1e9]), ('observer_gains', [1.0, 2.0]),
               ('collision_thresholds', [0.0]), ('collision_reaction', 'explode'),
               ('collision_reaction', True), ('external_wrench_frame', 'no_such_link'),
               ('collision_hysteresis', 1.5)]
    for name, value in refused:
        before = node.get_parameter(name).value
        result = node.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful and name in result.reason, (name, value, result.reason)
        after = node.get_parameter(name).value
        assert after == before or list(after) == list(before)
    accepted = [('collision_reaction', False), ('collision_reaction', 'float'),
                ('external_wrench_frame', 'panda_link8'), ('observer_gains', [50.0] * 9)]
    for name, value in accepted:
        assert node.set_parameters([Parameter(name, value=value)])[0].successful, name
    w = Watch(h)
    _, effort = _held(panda, Q)
    w.send(Q, effort)
    assert node._observer.observer.gains.tolist() == [50.0] * 9
    assert node._observer.frame == 'panda_link8'          # merged into panda_link7


def test_a_bare_off_from_yaml_is_accepted_as_off(make):
    """collision_reaction given as boolean false (YAML's off) starts the node with 'off'."""
    h = make(mode='gravity_compensation', observer_enabled=True, collision_reaction=False,
             collision_thresholds=[1.0])
    assert h.node._observer_diagnostics()['collision_reaction'] == 'off'


@pytest.mark.parametrize('reaction', ['zero', 'hold', 'float'])
def test_collision_event_names_the_joints_and_the_reaction_acts(make, panda, reaction):
    """A push raises one ~/collision naming the joints; the reaction holds until ~/enable."""
    topic = f'/test/observer_{reaction}'
    h = make(mode='inverse_dynamics', command_topic=topic, observer_enabled=True,
             observer_gains=[GAIN], collision_thresholds=[0.5], collision_min_duration=0.002,
             collision_reaction=reaction, kp=[100.0], kd=[20.0], clamp_efforts=False)
    h.watch_commands(topic)
    w = Watch(h)
    tau_ext, pushed = _held(panda, Q)
    free = gravity_torques(panda, Q)
    for _ in range(5):
        w.send(Q, free)
    assert not w.events and h.commands
    for _ in range(15):
        w.send(Q, pushed)
    h.spin_until(lambda: w.events)
    event = w.events[0]
    joints = {v.value for v in event.values if v.key == 'joints'}.pop().split(', ')
    above = {panda.joint_names[j] for j in np.flatnonzero(np.abs(tau_ext) > 0.5)}
    assert event.level == DiagnosticStatus.ERROR and set(joints) <= above and joints
    assert all(j in event.message for j in joints)
    count = len(h.commands)
    moved = Q + 0.01
    w.send(moved, pushed)
    h.spin_for(0.05)
    if reaction == 'zero':
        assert not any(h.commands[-1].data) and h.node.get_parameter('enabled').value is False
        assert len(h.commands) == count
    elif reaction == 'float':
        np.testing.assert_allclose(h.commands[-1].data, gravity_torques(panda, moved),
                                   rtol=1e-9)
    else:
        qdd = 100.0 * (Q - moved)
        np.testing.assert_allclose(h.commands[-1].data,
                                   inverse_dynamics(panda, moved, np.zeros(9), qdd), rtol=1e-9)
    client = h.peer.create_client(SetBool, '/rnea/enable')
    future = client.call_async(SetBool.Request(data=True))
    h.spin_until(future.done)
    assert not future.result().success and 'collision still in progress' in \
        future.result().message
    for _ in range(25):                                   # the push ends: collision clears
        w.send(Q, free)
    h.spin_until(lambda: len(w.events) == 2)
    assert w.events[1].level == DiagnosticStatus.OK
    future = client.call_async(SetBool.Request(data=True))
    h.spin_until(future.done)
    assert future.result().success
    count = len(h.commands)
    w.send(Q, free)
    h.spin_until(lambda: len(h.commands) > count)
    np.testing.assert_allclose(h.commands[-1].data, free, rtol=1e-9)   # the mode again


# Thresholds gated by velocity reversals: the push of _held gives 0.5 to 4 N m on the arm.
MOVING, REVERSAL = 0.4, 50.0


def _gated(make, **params):
    """Start a node whose detector uses MOVING, or REVERSAL while a joint is slow (< 0.1)."""
    settings = {'mode': 'gravity_compensation', 'observer_enabled': True,
                'observer_gains': [GAIN], 'collision_thresholds': [MOVING],
                'collision_reversal_thresholds': [REVERSAL], 'collision_reversal_band': 0.1,
                'collision_reversal_hold': 0.02, 'collision_min_duration': 0.002}
    h = make(**dict(settings, **params))
    return h, Watch(h)


def _push(w, model, qd, samples=25):
    """Send the held push at joint velocities qd (q fixed); return the published residuals.

    With q fixed the momentum M(q) qd is constant, so the observer's residual converges to
    g + tau_f(qd) - C(q, qd)^T qd - tau_m: the efforts g - J^T F + tau_f - C^T qd give the
    same residual J^T F (1 - e^-Kt) at any velocity.  A gap of 0.2 s before it (>
    observer_max_gap) restarts the observer from zero.
    """
    tau_ext, _ = _held(model, Q)
    effort = gravity_torques(model, Q) + joint_friction(model, qd) - \
        coriolis_matrix(model, Q, qd).T @ qd - tau_ext
    w.k += 200
    ks = [w.send(Q, effort, qd=qd) for _ in range(samples)]
    return np.array([w.torque(k).effort for k in ks]), tau_ext


def test_gated_thresholds_hold_a_slow_joints_residual_and_raise_the_same_one_when_fast(make):
    """A residual above collision_thresholds: no collision at rest, a collision when moving.

    The same push (the published residuals are equal sample by sample) while every joint is
    slower than collision_reversal_band is held to collision_reversal_thresholds (50 N m:
    nothing), and at 0.5 rad/s (0.2 m/s the fingers) to collision_thresholds (0.4 N m): a
    collision, on exactly the joints above 0.4.  Diagnostics say the thresholds are gated
    and on which joints the reversal ones apply.
    """
    h, w = _gated(make)
    model = h.node._rt.model
    still = np.zeros(model.nv)
    slow, tau_ext = _push(w, model, still)
    h.spin_for(0.05)
    assert np.abs(slow[-1]).max() > 5 * MOVING and not w.events
    np.testing.assert_allclose(slow[-1], tau_ext * (1 - np.exp(-GAIN * 0.024)), atol=1e-9)
    state = h.node._observer_diagnostics()['collision_thresholds']
    assert state.startswith('gated by velocity reversals') and model.joint_names[0] in state
    fast = np.r_[np.full(7, 0.5), 0.2, 0.2]
    moving, _ = _push(w, model, fast)
    np.testing.assert_allclose(moving, slow, rtol=1e-9, atol=1e-9)
    h.spin_until(lambda: w.events)
    event = w.events[0]
    assert event.level == DiagnosticStatus.ERROR
    joints = {v.value for v in event.values if v.key == 'joints'}.pop().split(', ')
    above = {model.joint_names[j] for j in np.flatnonzero(np.abs(tau_ext) > MOVING)}
    assert joints and set(joints) <= above
    assert set(h.node._observer.detector.joints) == above      # all of them by now
    assert h.node._observer_diagnostics()['collision_thresholds'].endswith('on: no joint')


def test_without_reversal_thresholds_the_slow_push_is_a_collision(make):
    """collision_reversal_thresholds [] (the default): the residual at rest raises a collision."""
    h, w = _gated(make, collision_reversal_thresholds=[])
    model = h.node._rt.model
    _push(w, model, np.zeros(model.nv))
    h.spin_until(lambda: w.events)
    assert w.events[0].level == DiagnosticStatus.ERROR
    assert h.node._observer_diagnostics()['collision_thresholds'].startswith('fixed')


def test_bad_reversal_thresholds_are_refused_with_the_reason_and_the_old_ones_kept(make):
    """Below the collision thresholds (either side changed), wrong length, < 0: refused.

    The reason names the parameter and the joint; the parameters and the detector keep their
    values.  A pair set at once, the reversal ones raised first, and thresholds [] are taken.
    """
    h, w = _gated(make, collision_thresholds=[0.5], collision_reversal_thresholds=[5.0])
    node = h.node
    model = node._rt.model
    low = [5.0] * 9
    low[3] = 0.1
    refused = [('collision_reversal_thresholds', [0.2], 'all joints: 0.2 < 0.5'),
               ('collision_thresholds', [6.0], 'all joints: 5 < 6'),
               ('collision_reversal_thresholds', low, f'{model.joint_names[3]}: 0.1 < 0.5'),
               ('collision_reversal_thresholds', [5.0, 6.0], 'has 2 values'),
               ('collision_reversal_thresholds', [float('nan')], 'finite'),
               ('collision_reversal_thresholds', [0.0], 'collision_reversal_thresholds'),
               ('collision_reversal_band', -0.1, 'collision_reversal_band'),
               ('collision_reversal_hold', -1.0, 'collision_reversal_hold'),
               ('collision_reversal_hold', float('inf'), 'collision_reversal_hold')]
    for name, value, reason in refused:
        before = {n: node.get_parameter(n).value for n in
                  ('collision_thresholds', 'collision_reversal_thresholds',
                   'collision_reversal_band', 'collision_reversal_hold')}
        result = node.set_parameters([Parameter(name, value=value)])[0]
        assert not result.successful, (name, value)
        assert name in result.reason and reason in result.reason, (name, value, result.reason)
        for n, v in before.items():
            after = node.get_parameter(n).value
            assert after == v or list(after) == list(v), (name, n)
    _, effort = _held(model, Q)
    w.send(Q, effort)
    detector = node._observer.detector
    assert detector.moving.tolist() == [0.5] * 9 and detector.reversal.tolist() == [5.0] * 9
    assert (detector.reversal_band, detector.reversal_hold) == (0.1, 0.02)
    assert node.set_parameters_atomically([
        Parameter('collision_thresholds', value=[6.0]),
        Parameter('collision_reversal_thresholds', value=[8.0])]).successful
    for name, value in [('collision_reversal_thresholds', [12.0] * 9),
                        ('collision_thresholds', [10.0]), ('collision_reversal_band', 0.3),
                        ('collision_reversal_hold', 0.05)]:
        result = node.set_parameters([Parameter(name, value=value)])[0]
        assert result.successful, (name, result.reason)
    w.send(Q, effort)
    detector = node._observer.detector
    assert detector.moving.tolist() == [10.0] * 9 and detector.reversal.tolist() == [12.0] * 9
    assert (detector.reversal_band, detector.reversal_hold) == (0.3, 0.05)
    assert node.set_parameters([Parameter('collision_thresholds', value=[])])[0].successful
    w.send(Q, effort)
    assert node._observer.detector is None
    assert node._observer_diagnostics()['collision_thresholds'] == 'none'


def test_gated_thresholds_load_from_a_parameter_file_and_bad_ones_say_why(tmp_path):
    """rnea.yaml-style entries (integer lists too) load through rcl into a gated detector.

    A file whose reversal thresholds are below the collision thresholds starts the node, which
    keeps running without the observer and says why (status, diagnostics).
    """
    for reversal, gated in (('[3, 4, 4, 4, 3, 3, 3, 3, 3]', True), ('[0.1]', False)):
        path = tmp_path / 'gated.yaml'
        path.write_text('/**:\n  ros__parameters:\n'
                        f'    urdf_file: {test_node.PANDA}\n'
                        '    observer_enabled: true\n'
                        '    collision_thresholds: [0.3]\n'
                        f'    collision_reversal_thresholds: {reversal}\n'
                        '    collision_reversal_band: 0.2\n'
                        '    collision_reversal_hold: 0.01\n')
        ctx = rclpy.Context()
        rclpy.init(context=ctx, args=['--ros-args', '--params-file', str(path)],
                   domain_id=test_node.DOMAIN_ID)
        try:
            node = RneaNode(context=ctx)
            assert node._cfg['collision_reversal_band'] == 0.2
            node._observer.build(node._rt, node._cfg)
            if gated:
                detector = node._observer.detector
                assert detector.gated and detector.reversal.tolist() == [
                    3.0, 4.0, 4.0, 4.0, 3.0, 3.0, 3.0, 3.0, 3.0]
                assert (detector.reversal_band, detector.reversal_hold) == (0.2, 0.01)
                assert node._observer_diagnostics()['collision_thresholds'].startswith('gated')
            else:
                assert node._observer.observer is None
                status = node._observer_diagnostics()['observer']
                assert status.startswith('observer not started: collision_reversal_thresholds '
                                         'must be >= collision_thresholds')
                assert 'all joints: 0.1 < 0.3' in status
            node.destroy_node()
        finally:
            rclpy.shutdown(context=ctx)
