"""Payload estimation in the rnea node: ``~/estimate_payload``, progress and commit.

**Start and stop.**  Service ``~/estimate_payload`` (std_srvs/SetBool): ``data: true`` starts an
estimation with the current ``payload_estimation.*`` parameters (the response says what to do,
or why it cannot start), ``data: false`` cancels a running one.  The estimator
(:class:`rnea_ros.core.payload_estimation.PayloadEstimator`) fits the payload on
``payload_estimation.link`` against the robot model *without* any payload (same description,
friction and armature as the node's model), so the result is the whole payload, ready to
replace the current one.

**Samples** come from ``joint_states`` (positions, velocities, measured efforts for every model
joint; a message without efforts, with a joint's effort missing or not finite is refused and
counted, with the reason in the status and the log):

- ``mode: motion``: move the arm slowly (accelerations under a few rad/s^2) for ``duration``
  seconds of stamps.  Over the last ``acceleration_window`` seconds, the acceleration is the
  slope of a straight-line fit of the velocities, and positions, velocities and efforts are
  averaged with the weights of which that slope is the derivative (:class:`rnea_ros.core.
  payload_estimation.AccelerationWindow`):
  one zero-lag low-pass filter for every quantity, so that the robot's own inertial efforts
  (far larger than the payload's) do not leave a filtering error in the residual.  Samples go
  to the estimator at ``sample_rate``; as samples inside one window share their errors, the
  covariance is multiplied by the number of samples per window (``correlation`` of the
  estimator).  Mass, COM and, when the motion excites it, the inertia.
- ``mode: poses``: hold the arm still in ``poses`` poses that tilt the link differently (every
  joint within ``still_tolerance`` for ``still_time``; positions and efforts averaged over that
  time; a new pose must be 10 ``still_tolerance`` away from the previous one).  Mass and COM;
  the inertia is unobservable at rest and the result is a point mass.

**Progress and result.**  ``~/payload_estimation`` (diagnostic_msgs/DiagnosticStatus, reliable,
transient local: a late subscriber gets the last one) is published at 4 Hz while running and on
each change of state, with ``values``: state (idle, running, succeeded, refused, cancelled),
progress (0 to 1), samples, poses, refused_samples, link, and mass / com / inertia with their
sigmas (current guess while running); ``message`` holds the result or the refusal reason.  The
level is OK (running, succeeded), WARN (refused, cancelled) or ERROR (refused samples last).
The result is also logged.

**Commit.**  An accepted estimate is committed by ``~/set_payload`` with no parameters (the
payload_* parameters are set to it), or at once when ``payload_estimation.auto_commit`` is true.
A refused estimate is never committed.
"""

import time

from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
import numpy as np
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rnea_ros.core.payload_estimation import (AccelerationWindow, default_payload_link,
                                              PayloadEstimator, StillPose)

STATUS_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)
PROGRESS_PERIOD = 0.25      # s between progress messages while running
_OK, _WARN, _ERROR = DiagnosticStatus.OK, DiagnosticStatus.WARN, DiagnosticStatus.ERROR


def measured_efforts(msg, joint_names):
    """Return (efforts in model order, None) or (None, why they cannot be used)."""
    if not len(msg.effort):
        return None, 'joint_states carry no efforts'
    if len(msg.effort) != len(msg.name):
        return None, (f'joint_states have {len(msg.effort)} efforts for {len(msg.name)} '
                      'names')
    index = {n: i for i, n in enumerate(msg.name)}
    missing = [j for j in joint_names if j not in index]
    if missing:
        return None, f'joint_states carry no effort for {missing}'
    effort = np.array([msg.effort[index[j]] for j in joint_names], dtype=float)
    bad = [j for j, e in zip(joint_names, effort) if not np.isfinite(e)]
    if bad:
        return None, f'effort not finite for {bad}'
    return effort, None


class PayloadEstimation:
    """The node's ``~/estimate_payload`` service, sample intake and status (see module doc)."""

    def __init__(self, node):
        """Create the service and the status publisher on ``node`` (an RneaNode)."""
        from std_srvs.srv import SetBool
        self._node = node
        self._pub = node.create_publisher(DiagnosticStatus, '~/payload_estimation', STATUS_QOS)
        node.create_service(SetBool, '~/estimate_payload', self._on_estimate)
        self.running = False
        self.result = None             # the last PayloadEstimate (accepted or not)
        self.committed = False
        self._est = None
        self._state = 'idle'
        self._refused_samples = 0
        self._last_refusal = ''
        self._next_status = 0.0
        self._publish(_OK, 'no estimation yet')
        node.create_timer(0.5, self.check_timeout)     # joint states may stop coming

    # -- start and stop -----------------------------------------------------------------------

    def _on_estimate(self, request, response):
        if not request.data:
            if not self.running:
                response.success, response.message = False, 'no estimation is running'
                return response
            self._finish(cancelled=True)
            response.success, response.message = True, 'payload estimation cancelled'
            return response
        try:
            response.message = self.start()
            response.success = True
        except ValueError as exc:
            response.success, response.message = False, str(exc)
        return response

    def start(self):
        """Start an estimation from the parameters; return the instructions (ValueError)."""
        node = self._node
        if self.running:
            raise ValueError('an estimation is already running (cancel it with data: false)')
        rt = node._rt
        source = node._description_source()
        if rt is None or source is None:
            raise ValueError('no robot model loaded yet')
        cfg = dict(node._cfg)
        from rnea_ros.node.monitor_params import PAYLOAD_DEFAULTS
        from rnea_ros.node.runtime import load_model
        try:
            bare = load_model(source[0], source[1], dict(cfg, **PAYLOAD_DEFAULTS))
        except Exception as exc:  # noqa: B902 - a description that fails: say why, keep running
            raise ValueError(f'cannot build the model without payload from {source[0]}: '
                             f'{exc}') from None
        if bare.joint_names != rt.model.joint_names:
            raise ValueError('the model without payload has another joint order')
        p = {name.split('.', 1)[1]: value for name, value in cfg.items()
             if name.startswith('payload_estimation.')}
        link = p['link'] or cfg.get('payload_link') or default_payload_link(bare)
        motion = p['mode'] == 'motion'
        self._est = PayloadEstimator(
            bare, link, gravity=cfg['gravity'], forgetting=p['forgetting'],
            duration=p['duration'] if motion else None,
            poses=None if motion else int(round(p['poses'])), effort_noise=p['effort_noise'],
            mass_tolerance=p['mass_tolerance'], com_tolerance=p['com_tolerance'])
        self._params = p
        self._joint_names = rt.model.joint_names
        self._window = AccelerationWindow(p['acceleration_window'])
        self._still = StillPose(p['still_time'], p['still_tolerance'])
        self._period = 1.0 / p['sample_rate']
        self._last_sample = -np.inf
        self._deadline = time.monotonic() + p['timeout']
        self._refused_samples, self._last_refusal = 0, ''
        self.result, self.committed = None, False
        self.running, self._state = True, 'running'
        what = (f'move the arm slowly for {p["duration"]:g} s' if motion else
                f'hold the arm still in {int(round(p["poses"]))} poses that tilt {link} '
                f'differently, {p["still_time"]:g} s each')
        message = f'estimating the payload on {link}: {what}'
        node.get_logger().info(message)
        self._publish(_OK, message, force=True)
        return message

    # -- samples -----------------------------------------------------------------------------

    def take(self, msg, rt):
        """Use one joint state (called by the node after it accepted the message)."""
        now = time.monotonic()
        if rt.model.joint_names != self._joint_names:
            self._finish(reason='the model was reloaded with other joints')
            return
        effort, error = measured_efforts(msg, self._joint_names)
        if error is None and self._params['mode'] == 'motion' and \
                len(msg.velocity) != len(msg.name):
            error = 'motion mode needs joint velocities in joint_states'
        if error is not None:
            self._refuse_sample(error)
        else:
            stamp = msg.header.stamp
            t = stamp.sec + 1e-9 * stamp.nanosec
            try:
                self._add(t, rt, effort)
            except ValueError as exc:
                self._refuse_sample(str(exc))
        if self._est.done or now > self._deadline:
            self._finish(timed_out=not self._est.done)
        elif now >= self._next_status:
            self._publish_progress()

    def _add(self, t, rt, effort):
        if self._params['mode'] == 'poses':
            pose = self._still.add(t, rt.q.copy(), effort)
            if pose is not None:
                self._est.add_pose(*pose)
                self._publish_progress()
            return
        want = t - self._last_sample >= 0.999 * self._period       # at sample_rate
        sample = self._window.add(t, rt.q.copy(), rt.qd.copy(), effort, want)
        if sample is not None:
            self._last_sample = t
            t, q, qd, qdd, effort = sample
            self._est.add_sample(q, qd, qdd, effort, t)

    def _refuse_sample(self, reason):
        self._refused_samples += 1
        changed, self._last_refusal = reason != self._last_refusal, reason
        if changed:
            self._publish_progress()
        self._node.get_logger().error(f'payload estimation: sample refused: {reason}',
                                      throttle_duration_sec=1.0)

    def check_timeout(self):
        """End a running estimation past its timeout (for when joint states stop coming)."""
        if self.running and time.monotonic() > self._deadline:
            self._finish(timed_out=True)

    # -- the end -----------------------------------------------------------------------------

    def _finish(self, cancelled=False, timed_out=False, reason=''):
        self.running = False
        log = self._node.get_logger()
        if cancelled or reason:
            self._state = 'cancelled'
            message = 'payload estimation cancelled' + (f': {reason}' if reason else '')
            log.warning(message)
            self._publish(_WARN, message, force=True)
            return
        est = self._est
        if self._params['mode'] == 'motion' and est.span > 0.0:   # samples within one window
            est.correlation = max(1.0, self._params['acceleration_window'] * est.samples
                                  / est.span)
        result = self.result = est.estimate()
        if not result.ok:
            self._state = 'refused'
            why = result.reason
            if timed_out:
                why = f'timed out ({self._progress_text()}); {why}'
            if self._refused_samples:
                why += f'; {self._refused_samples} samples refused, last: {self._last_refusal}'
            result.reason = why
            message = f'payload estimate refused, nothing committed: {why}'
            log.warning(message)
            self._publish(_WARN, message, force=True)
            return
        self._state = 'succeeded'
        message = result.describe()
        log.info(message)
        if self._params['auto_commit']:
            outcome = self._node.set_parameters_atomically(self.commit_parameters()[0])
            self.committed = outcome.successful
            message += ('; committed' if outcome.successful
                        else f'; commit refused: {outcome.reason}')
            (log.info if outcome.successful else log.error)(
                'payload estimate ' + ('committed' if outcome.successful
                                       else f'not committed: {outcome.reason}'))
        else:
            message += '; commit with ~/set_payload (no parameters)'
        self._publish(_OK, message, force=True)

    def commit_parameters(self):
        """Return (payload_* Parameters of the last accepted estimate, None) or (None, why)."""
        result = self.result
        if result is None:
            return None, 'no payload estimate to commit: run ~/estimate_payload first'
        if not result.ok:
            return None, f'the last payload estimate was refused: {result.reason}'
        i = result.inertia
        return [Parameter('payload_link', value=result.link),
                Parameter('payload_mass', value=float(result.mass)),
                Parameter('payload_com', value=[float(c) for c in result.com]),
                Parameter('payload_inertia', value=[float(v) for v in (
                    i[0, 0], i[1, 1], i[2, 2], i[0, 1], i[0, 2], i[1, 2])])], None

    def on_committed(self):
        """Note that ~/set_payload committed the last estimate (for the status)."""
        self.committed = True
        self._publish(_OK, self.result.describe() + '; committed', force=True)

    # -- status ------------------------------------------------------------------------------

    def _progress_text(self):
        p = self._est.progress()
        if self._params['mode'] == 'poses':
            return f'{p.poses} of {self._est.target_poses} poses'
        return f'{p.span:.2f} of {self._est.duration:g} s of motion'

    def _publish_progress(self):
        level = _ERROR if self._last_refusal and self._est.samples == 0 else _OK
        self._publish(level, f'collecting: {self._progress_text()}'
                      + (f'; last refused sample: {self._last_refusal}'
                         if self._last_refusal else ''), force=True)

    def _publish(self, level, message, force=False):
        now = time.monotonic()
        if not force and now < self._next_status:
            return
        self._next_status = now + PROGRESS_PERIOD
        values = {'state': self._state, 'committed': str(self.committed).lower(),
                  'refused_samples': str(self._refused_samples)}
        est = self._est
        if est is not None:
            p = est.progress()
            values.update(link=est.link, progress=f'{p.fraction:.3f}', samples=str(p.samples),
                          poses=str(p.poses))
            result = self.result
            if result is not None:
                values.update(_result_values(result))
            elif np.isfinite(p.mass):
                values.update(mass=f'{p.mass:.4f}', com=_fmt(p.com))
        msg = DiagnosticStatus(level=level, name=f'{self._node.get_name()}: payload estimation',
                               message=message, hardware_id=self._node.get_name(),
                               values=[KeyValue(key=k, value=v) for k, v in values.items()])
        self._pub.publish(msg)


def _fmt(values):
    return '[' + ', '.join(f'{float(v):.5g}' for v in np.ravel(values)) + ']'


def _result_values(result):
    d = result.as_dict()
    return {'ok': str(result.ok).lower(), 'mass': f"{d['mass']:.5g}",
            'mass_sigma': f"{d['mass_sigma']:.3g}", 'com': _fmt(d['com']),
            'com_sigma': _fmt(d['com_sigma']), 'inertia': _fmt(d['inertia']),
            'inertia_sigma': _fmt(d['inertia_sigma']),
            'point_mass': str(result.point_mass).lower(),
            'inertia_note': result.inertia_note, 'reason': result.reason,
            'residual_rms': f"{d['residual_rms']:.4g}", 'fit_rms': f"{d['fit_rms']:.4g}"}
