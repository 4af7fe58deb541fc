"""The rnea node's side inputs and its joint limit guard (a mixin of the node).

Desired accelerations, the computed-torque reference, external wrenches, the base acceleration
and the IMU go through :mod:`rnea_ros.node.bookkeeping` (validated, bounded, rejected with a
reason); the joint limit guard latches a violation and stops commands until the joint is back
and commands are re-enabled.
"""

import time


class InputsMixin:
    """Callbacks of the inputs besides joint states, and the joint limit guard."""

    def _limit_clear_error(self):
        """Return why commands cannot be re-enabled (a joint still outside its limits), or None."""
        rt = self._rt
        if self._limit_fault is None or rt is None or rt.settings.guard is None:
            return None
        violation = rt.settings.guard.violation(rt.q_j, rt.qd_j)
        return f'joint limit guard: {violation}' if violation else None

    def _check_limits(self, rt):
        """Latch a joint limit violation: stop commanding (zero or hold), log once."""
        guard = rt.settings.guard
        if guard is None or self._limit_fault is not None:
            return
        violation = guard.violation(rt.q_j, rt.qd_j)
        if violation:
            self._limit_fault = violation
            self._last_error = (f'joint limit guard: {violation}; commands stopped until the '
                                'joint is back and commands are re-enabled')
            self._log.error(self._last_error)
            self._stop_commands(send_zero=rt.settings.limit_action == 'zero')

    def _on_desired_trajectory(self, msg):
        if self._rt is not None:
            error = self._rt.accelerations.from_trajectory(msg.joint_names, msg.points,
                                                           time.monotonic())
            if error:
                self._reject('desired_accelerations', error)

    def _on_desired_array(self, msg):
        if self._rt is not None:
            error = self._rt.accelerations.from_array(msg.data, time.monotonic())
            if error:
                self._reject('desired_accelerations_array', error)

    def _on_reference(self, msg):
        if self._rt is not None:
            stamp = msg.header.stamp
            error = self._rt.reference.from_trajectory(msg.joint_names, msg.points,
                                                       time.monotonic(),
                                                       stamp.sec + 1e-9 * stamp.nanosec)
            if error:
                self._reject('reference', error)
            elif self._waiting_for_reference is not None and \
                    not self._rt.reference.behind(self._waiting_for_reference):
                self._waiting_for_reference = None      # reference_sync: answer it now
                self._compute(time.monotonic())

    def _wait_for_reference(self, rt, stamp):
        """reference_sync: return whether the joint state of ``stamp`` waits for its reference."""
        wait = (self._cfg['reference_sync'] and rt.settings.mode == 'computed_torque'
                and rt.reference.behind(stamp))
        self._waiting_for_reference = stamp if wait else None
        return wait

    def _on_wrench(self, msg):
        if self._rt is not None:
            f, t = msg.wrench.force, msg.wrench.torque
            error = self._rt.wrenches.update(msg.header.frame_id,
                                             (f.x, f.y, f.z, t.x, t.y, t.z))
            if error:
                self._reject('external_wrenches', error)

    def _on_base_acceleration(self, msg):
        if self._rt is not None:
            lin, ang = msg.accel.linear, msg.accel.angular
            error = self._rt.base_acceleration.update(
                msg.header.frame_id, (lin.x, lin.y, lin.z, ang.x, ang.y, ang.z), time.monotonic())
            if error:
                self._reject('base_acceleration', error)

    def _on_imu(self, msg):
        """Take an IMU reading; on a link that joints move, take their motion out of it.

        The joint motion is that of now: the last joint states (q, qd) and this cycle's qdd for
        the mode (desired or commanded accelerations; zero in the gravity modes).
        """
        rt = self._rt
        imu = rt.base_acceleration.imu if rt is not None else None
        if imu is not None:
            now = time.monotonic()
            joints = None
            if rt.joints.ready:
                self._accelerations(rt, now)        # fills rt.qdd as the next cycle will
                joints = (rt.q, rt.qd, rt.qdd)
            w, a, stamp = msg.angular_velocity, msg.linear_acceleration, msg.header.stamp
            error = imu.update(msg.header.frame_id, (w.x, w.y, w.z), (a.x, a.y, a.z),
                               msg.angular_velocity_covariance[0],
                               msg.linear_acceleration_covariance[0],
                               stamp.sec + 1e-9 * stamp.nanosec, now, joints)
            if error:
                self._reject('imu', error)
