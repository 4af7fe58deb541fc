"""External torques, external wrench and collisions in the rnea node (a mixin of the node).

With ``observer_enabled`` the node runs the core's generalized-momentum observer
(:class:`rnea_ros.core.observer.MomentumObserver`) on every ``joint_states`` message that
carries measured efforts for every model joint, and publishes (stamp = the input's stamp):

- ``~/external_torques`` (sensor_msgs/JointState, model joint order): effort = the estimated
  external joint torques r (N m or N), position and velocity the measured ones;
- ``~/external_wrench`` (geometry_msgs/WrenchStamped, frame_id = ``external_wrench_frame``):
  the wrench of the environment on that link, in the link frame about its origin, from
  r = J^T F (damped least squares, :func:`rnea_ros.core.observer.external_wrench`), computed
  and sent at ``external_wrench_rate`` while the topic has subscribers;
- ``~/collision`` (diagnostic_msgs/DiagnosticStatus, reliable): one message when a collision
  starts (level ERROR, ``message`` names the joints) and one when it ends (level OK); values:
  ``event`` (collision | clear), ``joints``, ``stamp`` (s, of the joint state), ``start``,
  ``peak/<joint>`` (N m or N), ``reaction``.  With ``collision_reversal_thresholds`` a joint's
  threshold is that one while the joint reverses (|velocity| < ``collision_reversal_band``, and
  ``collision_reversal_hold`` s after) and ``collision_thresholds`` while it moves (the core's
  :class:`rnea_ros.core.observer.CollisionDetector`, given the joints' velocities of the same
  joint state); a pair that does not fit (a reversal threshold below its joint's collision
  threshold) is refused, checked on the values the node would have after the change.

Both topics are sent only while they have subscribers (counted every 0.5 s).  All of it runs
after the cycle's efforts (and commands) are out, so that it does not add to
their latency: the joint state is only kept by reference when it arrives; afterwards one
kernel call of the observer reads its efforts (through the index of the model joints in the
message, rebuilt only when the names change), checks them and advances the estimate; both
output messages stay serialized (:mod:`rnea_ros.node.bookkeeping.wire`).

A message whose efforts are missing, partial or not finite suspends the observer (nothing is
published; diagnostics and a throttled log line say why); a short gap is bridged, a longer one
(``observer_max_gap``) restarts it.  ``collision_reaction`` (off | zero | hold | float) acts on
command output until commands are re-enabled through ``~/enable`` (refused while the collision
is still in progress): zero sends one zero command and sets ``enabled`` to false; hold commands
the position held at the collision (computed torque with ``kp``, ``kd``, zero velocity); float
commands gravity compensation only.
"""

import math

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
from geometry_msgs.msg import WrenchStamped
import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rnea_ros.core.observer import CollisionDetector, MomentumObserver, WrenchEstimator
from rnea_ros.node import param_guard
from rnea_ros.node import params as node_params
from rnea_ros.node.bookkeeping import wire
from rnea_ros.node.observer_params import (check_observer_value, check_reversal_thresholds,
                                           NAMES, THRESHOLD_PARAMETERS)
from rnea_ros.node.runtime import plain
from sensor_msgs.msg import JointState

_EVENT_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)
_SUBSCRIBER_POLL = 0.5          # s between checks of the subscriber counts of the outputs


class NodeObserver:
    """The observer's state in the node: settings, efforts, publishers, reaction latch."""

    def __init__(self, node):
        """Create the publishers on ``node``."""
        self.node = node
        self.torques_pub = node.create_publisher(JointState, '~/external_torques', 10)
        self.wrench_pub = node.create_publisher(WrenchStamped, '~/external_wrench', 10)
        self.collision_pub = node.create_publisher(DiagnosticStatus, '~/collision', _EVENT_QOS)
        self.torques_out = self.wrench_out = None    # kept serialized (bookkeeping.wire)
        self.rt = None              # the runtime the observer was built for
        self.observer = None
        self.detector = None
        self.frame = ''
        self.error = ''             # why the settings could not be applied
        self.status = 'off'         # for diagnostics
        self.reason = ''            # last suspension reason (logged once per change)
        self.dirty = True
        self.names, self.index = None, None
        self.effort = None          # model order, of the last joint state (None: unusable)
        self.effort_error = 'no joint states yet'
        self.fresh = False
        self.reaction = None        # latched reaction ('zero', 'hold', 'float') or None
        self.hold_q = None
        self.collision = ''
        self.joints = np.zeros(0)      # the joints' entries of the observer's r (a view)
        self.wrench_wanted = self.torques_wanted = False
        self.poll = -math.inf           # steady-clock time of the last subscriber count
        self.wrench_period = 0.0
        self.wrench_due = -math.inf     # steady-clock time of the next ~/external_wrench
        self.msg = None                 # the joint state of this cycle (its efforts unread)

    # -- settings ---------------------------------------------------------------------------

    def build(self, rt, cfg):
        """Build observer and detector for the runtime's model; keep an error, never raise."""
        self.rt, self.dirty = rt, False
        self.observer = self.detector = None
        self.error = ''
        if not cfg['observer_enabled']:
            self.status = 'off'
            return
        model = rt.model
        try:
            self.observer = MomentumObserver(
                model, cfg['observer_gains'], gravity=cfg['gravity'],
                max_gap=cfg['observer_max_gap'],
                effort_sampling=cfg['observer_effort_sampling'],
                output_filter=cfg['observer_filter'])
            if cfg['collision_thresholds']:
                error = check_reversal_thresholds(cfg['collision_thresholds'],
                                                  cfg['collision_reversal_thresholds'],
                                                  model.joint_names)
                if error:               # e.g. a parameter file (set ones are checked before)
                    raise ValueError(error)
                self.detector = CollisionDetector(
                    model.joint_names, cfg['collision_thresholds'],
                    cfg['collision_hysteresis'], cfg['collision_min_duration'],
                    reversal_thresholds=cfg['collision_reversal_thresholds'] or None,
                    reversal_band=cfg['collision_reversal_band'],
                    reversal_hold=cfg['collision_reversal_hold'])
        except ValueError as exc:
            self.observer = self.detector = None
            self.error = f'observer not started: {exc}'
            self.status = self.error
            self.node._log.error(self.error)
            return
        self.frame = cfg['external_wrench_frame'] or ''
        self.wrench = None
        if self.frame:
            try:
                self.wrench = WrenchEstimator(model, self.frame,
                                              damping=cfg['external_wrench_damping'])
            except ValueError as exc:
                self.node._log.error(f'no ~/external_wrench: {exc}')
                self.frame = ''
        self.wrench_out = wire.wrench_output(WrenchStamped, self.frame) if self.frame else None
        rate = cfg['external_wrench_rate']
        self.wrench_period = 1.0 / rate if rate > 0.0 else 0.0
        self.wrench_due = -math.inf
        self.torques_out = wire.joint_state_output(JointState, model.joint_names)
        self.torques_views = tuple(self.torques_out.views[k]
                                   for k in ('position', 'velocity', 'effort'))
        self.joints = self.observer.r[model.nv - model.njoints:]
        self.status = 'waiting for efforts'
        self.reason = ''

    # -- inputs -----------------------------------------------------------------------------

    def take_efforts(self, msg, joint_names):
        """Keep the efforts of a joint state and the model joints' index in them, or why not.

        :attr:`effort` is the message's effort vector (None: unusable, :attr:`effort_error`
        says why) and :attr:`index` the position of each model joint in it, rebuilt only when
        the names change (the joint-state reader hands the same list while they repeat).  The
        observer's kernel reads and checks the values.
        """
        self.effort = None
        n = len(msg.effort)
        if not n:
            self.effort_error = 'joint_states carry no efforts'
            return
        if n != len(msg.name):
            self.effort_error = f'joint_states have {len(msg.name)} names but {n} efforts'
            return
        if msg.name is self._name_list and joint_names is self._joint_names:
            names = self.names
        else:
            names = tuple(msg.name)
            self._name_list = msg.name
        if names != self.names or joint_names is not self._joint_names:
            index = {name: i for i, name in enumerate(names)}
            self.names, self._joint_names = names, joint_names
            missing = [j for j in joint_names if j not in index]
            self.index = None if missing else np.array([index[j] for j in joint_names],
                                                       dtype=np.intp)
            self._missing = missing
        if self.index is None:
            self.effort_error = (f'partial efforts: joint_states lack {len(self._missing)} model '
                                 f'joints ({", ".join(self._missing[:5])}...)'
                                 if len(self._missing) > 5 else
                                 f'partial efforts: joint_states lack {self._missing}')
            return
        self.effort = msg.effort
        self.effort_error = ''

    _joint_names = None
    _name_list = None
    _missing = ()


class ObserverMixin:
    """The node's hooks: declaration, efforts, cycle, reaction, parameters, diagnostics."""

    def _observer_setup(self):
        """Create the observer's publishers and parameter callbacks (in __init__)."""
        self._observer = NodeObserver(self)
        self.add_on_set_parameters_callback(param_guard.guarded_on_set(self._observer_check,
                                                                       self._log))
        self.add_post_set_parameters_callback(param_guard.guarded_post_set(
            self._observer_changed, self._log))

    def _observer_take(self, msg):
        """Keep the joint state message: its efforts are read after the efforts are out."""
        obs = self._observer
        if self._cfg['observer_enabled'] and self._rt is not None:
            obs.msg, obs.fresh = msg, True

    # -- parameters -------------------------------------------------------------------------

    def _observer_check(self, params):
        links = self._rt.model.link_names if self._rt is not None else None
        for param in params:
            value = param.value
            error = check_observer_value(param.name, value, links)
            if param.name == 'enabled' and value is True and self._observer.reaction and \
                    self._observer.detector is not None and self._observer.detector.active:
                error = ('collision still in progress on joints '
                         f'{list(self._observer.detector.joints)}: commands stay stopped')
            if error:
                return SetParametersResult(successful=False, reason=error)
        error = self._thresholds_check(params)
        if error:
            return SetParametersResult(successful=False, reason=error)
        return SetParametersResult(successful=True)

    def _thresholds_check(self, params):
        """Return why the thresholds after ``params`` do not fit together, or None.

        Checked on the values the node would have once ``params`` are set (the others as they
        are), so that a pair set at once (set_parameters_atomically) passes; a value invalid on
        its own is left to the node's own check, which refuses it with its reason.
        """
        joints = self._rt.model.joint_names if self._rt is not None else None
        changes = {}
        for param in params:
            if param.name in THRESHOLD_PARAMETERS:
                value = node_params.normalise(param.name, plain(param.value))[0]
                if value is None or \
                        node_params.check_value(param.name, value, joints) is not None:
                    return None
                changes[param.name] = value
        if not changes:
            return None
        cfg = dict(self._cfg, **changes)
        return check_reversal_thresholds(cfg['collision_thresholds'],
                                         cfg['collision_reversal_thresholds'], joints)

    def _observer_changed(self, params):
        obs = self._observer
        for param in params:
            if param.name in NAMES:
                obs.dirty = True
            if param.name == 'enabled' and param.value is True and obs.reaction:
                self._log.info(f'collision reaction {obs.reaction!r} cleared: commands '
                               're-enabled')
                obs.reaction = None

    # -- the cycle --------------------------------------------------------------------------

    def _accelerations(self, rt, now):
        """Replace the mode while a hold or float reaction is latched (see module doc)."""
        latched = self._observer.reaction
        if latched is None or latched == 'zero':
            return super()._accelerations(rt, now)
        if latched == 'float':
            rt.qdd_j[:] = 0.0
            return rt.zero_v
        obs = self._observer
        if obs.hold_q is None or obs.hold_q.shape != rt.q_j.shape:
            obs.hold_q = rt.q_j.copy()
        s = rt.settings
        np.multiply(s.kp, obs.hold_q - rt.q_j, out=rt.qdd_j)
        rt.qdd_j -= s.kd * rt.qd_j
        return rt.qd

    def _observer_cycle(self, rt, now):
        """Run the observer on this cycle's joint state and publish (after the efforts)."""
        obs = self._observer
        if obs.dirty or obs.rt is not rt:
            obs.build(rt, self._cfg)
        if obs.observer is None or not obs.fresh:
            return
        obs.fresh = False
        msg, obs.msg = obs.msg, None
        obs.take_efforts(msg, rt.model.joint_names)
        stamp = self._stamp
        t = stamp.sec + 1e-9 * stamp.nanosec
        if t <= 0.0:
            t = now                     # stamps not set: the arrival time (steady clock)
        r = (obs.observer.update(t, rt.q, rt.qd, obs.effort, obs.index)
             if obs.effort is not None else None)
        if r is None:
            why = obs.effort_error if obs.effort is None else obs.observer.suspended
            if why != obs.reason:
                obs.reason = why
                self._log.warning(f'observer suspended: {why}', throttle_duration_sec=1.0)
            obs.status = f'suspended: {why}'
            return
        if obs.reason:
            self._log.info(f'observer resumed (was: {obs.reason})')
            obs.reason = ''
        if obs.observer.note:
            self._log.warning(f'observer: {obs.observer.note}', throttle_duration_sec=1.0)
        obs.status = 'running'
        joints = obs.joints                     # r[offset:], a view (the kernel keeps max |r|)
        if now - obs.poll > _SUBSCRIBER_POLL:      # outputs nobody reads cost nothing
            obs.poll = now
            obs.torques_wanted = obs.torques_pub.get_subscription_count() > 0
            obs.wrench_wanted = obs.wrench_pub.get_subscription_count() > 0
        if obs.torques_wanted:
            out = obs.torques_out
            position, velocity, effort = obs.torques_views
            position[:] = rt.q_j
            velocity[:] = rt.qd_j
            effort[:] = joints                      # finite: the observer checked it
            out.stamp(stamp)
            obs.torques_pub.publish(out.message())
        if obs.frame and now >= obs.wrench_due:
            self._publish_external_wrench(rt, r, stamp, now)
        if obs.detector is not None:
            event = obs.detector.update(t, joints, rt.qd_j)   # qd: reversals (if gated)
            if event is not None:
                self._on_collision_event(rt, event, stamp)

    def _publish_external_wrench(self, rt, r, stamp, now):
        """Compute and send the wrench of this cycle (due at ``external_wrench_rate``)."""
        obs = self._observer
        period = obs.wrench_period          # the next one a period later, none owed after a gap
        obs.wrench_due = obs.wrench_due + period if now - obs.wrench_due < period else \
            now + period
        if not obs.wrench_wanted:
            return
        try:
            F = obs.wrench(rt.q, r)
        except ValueError as exc:
            self._reject('external_wrench', str(exc))
            return
        if not math.isfinite(F.sum()):          # finite r gives a finite F: a guard
            return
        out = obs.wrench_out
        out.views['wrench'][:] = F
        out.stamp(stamp)
        obs.wrench_pub.publish(out.message())

    def _on_collision_event(self, rt, event, stamp):
        obs = self._observer
        mode = self._cfg['collision_reaction']
        start = event.kind == 'collision'
        text = event.describe()
        if start:
            obs.collision = f'{", ".join(event.joints)} (t = {event.t:.3f} s)'
            act = mode != 'off' and obs.reaction is None
            text += f'; reaction: {mode}' + ('' if mode == 'off' else
                                             ' until commands are re-enabled (~/enable)')
            self._log.error(text)
            if act:
                obs.reaction = mode
                obs.hold_q = rt.q_j.copy()
                if mode == 'zero':
                    self.set_parameters([Parameter('enabled', Parameter.Type.BOOL, False)])
        else:
            obs.collision = ''
            self._log.info(text)
        values = {'event': event.kind, 'joints': ', '.join(event.joints),
                  'stamp': f'{stamp.sec + 1e-9 * stamp.nanosec:.9f}',
                  'start': f'{event.start:.9f}', 'reaction': mode}
        values.update({f'peak/{j}': f'{v:.6g}' for j, v in event.peak.items()})
        status = DiagnosticStatus(
            level=DiagnosticStatus.ERROR if start else DiagnosticStatus.OK,
            name=f'{self.get_name()}: collision', message=text,
            hardware_id=rt.model.name,
            values=[KeyValue(key=k, value=v) for k, v in values.items()])
        obs.collision_pub.publish(status)

    # -- diagnostics ------------------------------------------------------------------------

    def _observer_diagnostics(self):
        """Return the observer's diagnostic key/values (and reset the period's maximum)."""
        obs = self._observer
        if not self._cfg['observer_enabled']:
            return {'observer': 'off'}
        largest = 0.0
        if obs.observer is not None:            # the largest |r| of the period
            largest = float(obs.observer.largest[obs.observer.offset:].max(initial=0.0))
            obs.observer.clear_largest()
        values = {'observer': obs.status,
                  'max_external_torque': f'{largest:.4f}',
                  'collision': obs.collision or 'none',
                  'collision_thresholds': _thresholds_state(obs.detector),
                  'collision_reaction': (f'{obs.reaction} (latched)' if obs.reaction else
                                         self._cfg['collision_reaction'])}
        return values


def _thresholds_state(detector):
    """Return the diagnostics' word on the thresholds: none, fixed or gated (and where now)."""
    if detector is None:
        return 'none'
    if not detector.gated:
        return 'fixed (not gated by velocity reversals)'
    window = [name for name, now, moving in zip(detector.names, detector.thresholds,
                                                detector.moving) if now != moving]
    return (f'gated by velocity reversals (|velocity| < {detector.reversal_band:g} rad/s or '
            f'm/s, held {detector.reversal_hold:g} s); reversal thresholds now on: '
            f'{", ".join(window) if window else "no joint"}')


__all__ = ['ObserverMixin', 'NodeObserver']
