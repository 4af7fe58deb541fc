"""The rnea node's cycle and outputs: efforts, reaction wrenches, commands, diagnostics.

A mixin of :class:`rnea_ros.node.rnea_node.RneaNode` (split out to keep the node file short).
Every output passes the guard :func:`rnea_ros.node.bookkeeping.output_error` first: nothing
non-finite or above ``MAX_OUTPUT`` is ever published, whatever ``clamp_efforts`` says.
"""

import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
import numpy as np
from rnea_ros import inverse_dynamics, last_reaction_wrenches
from rnea_ros.core.kernels.vectors import scatter_bounded
from rnea_ros.node import bookkeeping as node_io

_SIX = np.arange(6)


class CycleMixin:
    """The computation per cycle and everything the node publishes."""

    # -- the cycle -------------------------------------------------------------------------

    def _accelerations(self, rt, now):
        """Fill rt.qdd for the mode; return the velocity vector the mode uses."""
        mode = rt.settings.mode
        if mode == 'inverse_dynamics':
            rt.qdd_j[:] = rt.accelerations.current(now)
        elif mode == 'computed_torque':
            rt.reference.command(rt.q_j, rt.qd_j, rt.settings.kp, rt.settings.kd, now, rt.qdd_j)
        else:
            rt.qdd_j[:] = 0.0
            if mode == 'gravity_compensation':
                return rt.zero_v
        return rt.qd

    def _compute(self, now):
        rt = self._rt
        if not rt.joints.ready:
            return
        start = time.perf_counter()
        settings = rt.settings
        qd = self._accelerations(rt, now)
        f_ext = rt.wrenches.f_ext
        gravity, base = rt.base_acceleration.select(now, settings.gravity)
        # Into the model's own workspace (its reaction wrenches are read from there below);
        # without options (default gravity, no wrench, no base acceleration) the core's fast
        # path runs the kernel at once.
        options = () if (settings.default_gravity and gravity is settings.gravity
                         and base is None and not f_ext) else (f_ext, gravity, base)
        try:
            tau = inverse_dynamics(rt.model, rt.q, qd, rt.qdd, *options)
        except ValueError as exc:       # inputs are validated: a guard, not a code path
            self._reject('computation', str(exc))
            return
        # Clamp, and the output guard on the joints in the same call (-1: non-finite or huge).
        clamped = settings.limiter.clamp(tau[rt.offset_v:], rt.effort)
        if clamped < 0 or rt.offset_v:
            error = node_io.output_error(tau) or (clamped < 0 and 'efforts out of bounds')
            if error:
                self._reject('output', error)
                return
        # The outputs in order of urgency: efforts and commands first (the latency a robot
        # sees), then the reaction wrenches of this same RNEA pass, then residual and contact.
        self._publish_efforts(rt, qd)
        if self._cmd_pub is not None and self._cfg['enabled'] and self._limit_fault is None \
                and self._active:
            self._publish_command(rt, now)
        if rt.offset_v:
            self._publish_base_wrench(rt, tau)
        if settings.publish_reaction_wrenches:
            self._publish_wrenches(rt, now)
        self._monitor.cycle(rt, self._stamp, f_ext, gravity, self._cfg['contact_thresholds'],
                            base)
        self._observer_cycle(rt, now)
        self._stats.cycle(time.perf_counter() - start, clamped)

    def _publish_efforts(self, rt, qd):
        rt.position[:] = rt.q_j         # into the serialized message (efforts: by the clamp)
        rt.velocity[:] = qd[rt.offset_v:]
        out = rt.efforts_out
        out.stamp(self._stamp)
        self._efforts_pub.publish(out.message())

    def _wrench_sends(self, rt, now):
        """Return how many reaction-wrench topics to send this cycle (0: none, skip computing).

        With ``reaction_wrenches_rate`` r and n subscribed topics the node owes r n messages a
        second; they are spread evenly over the cycles (round robin) instead of n publishes in
        one cycle every 1/r s, so no cycle pays for all topics at once (p99 latency).
        """
        n = len(rt.wrench_targets)
        if not n:
            return 0
        period = rt.settings.wrench_period
        if period <= 0.0:
            return n
        last, self._wrench_time = self._wrench_time, now
        self._wrench_budget = min(float(n), self._wrench_budget + (now - last) * n / period)
        sends = int(self._wrench_budget)
        self._wrench_budget -= sends
        return sends

    def _publish_wrenches(self, rt, now):
        """Send this cycle's share of reaction-wrench topics (round robin, see _wrench_sends)."""
        sends = self._wrench_sends(rt, now)
        if not sends:
            return
        wrenches = last_reaction_wrenches(rt.model)     # of this cycle's pass: no second one
        stamp = self._stamp
        targets, rows = rt.wrench_targets, rt.wrench_rows
        n = len(targets)
        for _ in range(sends):
            i = self._wrench_cursor % n
            self._wrench_cursor = i + 1
            pub, out = targets[i]
            # Check and write in one kernel call (nothing written if non-finite or huge).
            if scatter_bounded(wrenches[rows[i]], _SIX, out.views['wrench'], _SIX,
                               node_io.MAX_OUTPUT) >= 0:
                self._reject('output', node_io.output_error(None, wrenches))
                return
            out.stamp(stamp)
            pub.publish(out.message())

    def _publish_base_wrench(self, rt, tau):
        msg = rt.base_msg
        msg.header.stamp = self._stamp
        force, torque = msg.wrench.force, msg.wrench.torque
        force.x, force.y, force.z, torque.x, torque.y, torque.z = tau[:6].tolist()
        self._base_pub.publish(msg)

    def _publish_command(self, rt, now):
        limiter = rt.settings.limiter
        if not self._commanding:
            self._commanding = True
            limiter.start_ramp(now)
            ramp = f'ramp over {limiter.ramp_time:g} s' if limiter.ramp_time > 0 else 'no ramp'
            self._log.info(f'command output starts on {self._cfg["command_topic"]} ({ramp})')
        self._cmd_msg.data = rt.settings.fill_command(rt.effort, limiter.scale(now))
        self._cmd_pub.publish(self._cmd_msg)

    def _stop_commands(self, send_zero):
        """Stop command output (the ramp restarts next time); optionally send one zero."""
        if self._commanding and send_zero and self._cmd_pub is not None and self._rt:
            self._cmd_msg.data = self._rt.settings.zero_command
            self._cmd_pub.publish(self._cmd_msg)
        self._commanding = False

    def _watchdog(self):
        if self._loader.pending:
            self._take_loaded_model()
        self._refresh_wrench_subscribers()
        self._note_wait(time.monotonic())
        if self._last_joint_state is None or self._stale:
            return
        if time.monotonic() - self._last_joint_state > self._cfg['joint_state_timeout']:
            self._stale = True
            self._last_error = (f"no joint states for {self._cfg['joint_state_timeout']} s: "
                                'commands stopped')
            self._log.error(self._last_error)
            self._stop_commands(send_zero=self._cfg['zero_on_timeout'])

    # -- silent waits and a second commander (logged once, then at a low rate) ---------------

    def _waiting_for(self):
        """Return (kind, log line) of what the node waits for without output, or None."""
        if not self._configured:
            return None
        rt = self._rt
        if rt is None:
            if self._description_source() is not None:
                return None             # loading, or refused (that error is logged)
            return ('description', 'waiting for a robot description: nothing on '
                    f'{self._description_sub.topic_name} (transient local, as '
                    'robot_state_publisher publishes it) and the robot_description and '
                    'urdf_file parameters are empty')
        if rt.joints.ready:
            return None
        topic = self._joint_state_sub.topic_name
        if not rt.joints.received.any():
            return ('joint_states', f'model {rt.model.name!r} loaded, waiting for {topic}: no '
                    'message with model joints yet')
        missing = rt.joints.missing()
        return ('missing', f'{topic} lack model joints [{node_io.truncated(missing)}]: nothing '
                'is published until every model joint has a position; hold joints that no '
                'driver publishes with the fixed_joints parameter (e.g. fixed_joints: '
                f'[{node_io.truncated(missing, 2)}])')

    def _note_wait(self, now):
        waiting = self._waiting_for()
        kind = waiting and waiting[0]
        if kind != self._wait_kind:
            self._wait_kind = kind
            self._wait_notice.reset()
        if not waiting or not self._wait_notice.due(now):
            return
        if kind == 'missing':           # a configuration issue; the others are normal at first
            self._log.warning(waiting[1])
        else:
            self._log.info(waiting[1])

    def _check_command_publishers(self):
        """Warn when another node publishes on the command topic (two commanders, one robot)."""
        pub = self._cmd_pub
        others = []
        if pub is not None:
            me = (self.get_name(), self.get_namespace())
            mine = 0
            for info in self.get_publishers_info_by_topic(pub.topic_name):
                if (info.node_name, info.node_namespace) == me and not mine:
                    mine += 1           # this node's own publisher
                else:
                    others.append(f"{info.node_namespace.rstrip('/')}/{info.node_name}")
        self._other_commanders = others
        if not others:
            self._command_notice.reset()
        elif self._command_notice.due(time.monotonic()):
            self._log.warning(f'command topic {pub.topic_name} is also published by '
                              f'{node_io.truncated(others)}: two publishers command one '
                              'controller; check command_topic and the namespaces')

    def shutdown_outputs(self):
        """Stop commanding before the node goes away (one zero command if zero_on_timeout)."""
        self._stop_commands(send_zero=self._cfg['zero_on_timeout'])

    # -- diagnostics -----------------------------------------------------------------------

    def _publish_diagnostics(self):
        self._check_command_publishers()
        now = time.monotonic()
        period = self._stats.summary(now)
        self._stats.reset(now)
        rt = self._rt
        ready = rt is not None and rt.joints.ready
        level, message = node_io.diagnostic_level(rt is not None, ready, self._stale, period)
        if self._limit_fault is not None:
            level = node_io.ERROR
            message = f'joint limit guard: commands stopped ({self._limit_fault})'

        status = DiagnosticStatus(level=bytes([level]),
                                  name=f'{self.get_fully_qualified_name()}: rnea',
                                  message=message,
                                  hardware_id=rt.model.name if rt is not None else '')
        values = {
            'model': repr(rt.model) if rt is not None else 'none',
            'mode': self._cfg['mode'],
            'joints_ready': str(ready),
            'missing_joints': ', '.join(rt.joints.missing()) if rt is not None else '',
            'stale_inputs': ', '.join(self._stale_inputs(now)),
            'commanding': str(self._commanding and not self._stale),
            'enabled': str(self._cfg['enabled']),
            'ramp_scale': f'{rt.settings.limiter.scale(now):.3f}' if rt is not None else '',
            'base_acceleration_source': self._base_source(rt, now),
            'ignored_joint_names': self._ignored_names(rt),
            'last_error': self._last_error,
            'other_command_publishers': ', '.join(self._other_commanders),
        }
        values.update({key: f'{value:.1f}' if isinstance(value, float) else str(value)
                       for key, value in period.items()})
        values.update(self._monitor.diagnostics(self._cfg))
        values.update(self._observer_diagnostics())
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(msg)

    @staticmethod
    def _ignored_names(rt):
        if rt is None:
            return ''
        text = ', '.join(sorted(rt.joints.unknown))
        more = rt.joints.unknown_count
        return text + (f' (and more, in {more} messages: not remembered)' if more else '')

    @staticmethod
    def _base_source(rt, now):
        """Return where the base acceleration comes from now: topic, imu, parameter or none."""
        if rt is None:
            return 'none'
        rt.base_acceleration.select(now, rt.settings.gravity)
        return rt.base_acceleration.source

    def _stale_inputs(self, now):
        rt = self._rt
        stale = ['joint_states'] if self._stale else []
        if rt is None:
            return stale
        if rt.settings.mode == 'inverse_dynamics' and rt.accelerations.stamp > -np.inf \
                and rt.accelerations.stale(now):
            stale.append('desired_accelerations')
        if rt.settings.mode == 'computed_torque' and now - rt.reference.stamp > \
                rt.reference.timeout:
            stale.append('reference')
        imu = rt.base_acceleration.imu
        if imu is not None and not imu.fresh(now):
            stale.append('imu')
        return stale
