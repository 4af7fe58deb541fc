"""The acceleration of a moving base: parameter, topic or IMU."""

import math

import numpy as np
from rnea_ros.node.bookkeeping.names import (_NO_GRAVITY, finite_error, MAX_BASE_ACCELERATION,
                                             MAX_IMU_ACCELERATION, MAX_IMU_ANGULAR_VELOCITY)


class BaseAccelerationInput:
    """Acceleration of a moving fixed base: a fresh topic, else a fresh IMU, else the parameter.

    [ax, ay, az, alpha_x, alpha_y, alpha_z] in the world (= root link) frame.  A topic message
    (``frame_id`` empty or the root link) wins while it is younger than ``timeout``; then an
    IMU (:attr:`imu`, an :class:`ImuInput` when enabled) while its last message is younger than
    its timeout; then the parameter value applies again.  :meth:`select` returns None for a
    zero base acceleration (the core's fast path).
    """

    def __init__(self, root_link, default, timeout, floating_base=False):
        """Start from the parameter value; raise ValueError when the model cannot take it."""
        self.root_link = root_link
        self.floating_base = floating_base
        self.timeout = timeout
        self.stamp = -math.inf
        self.topic = np.zeros(6)
        self.default = None
        self.imu = None
        self.source = 'none'
        self.set_default(default)

    def set_imu(self, enabled, link_body, filter_time, timeout):
        """Enable (keeping a running IMU input) or disable the IMU; ValueError for a floating base.

        ``link_body`` is the model's ``RobotModel.link_body``.
        """
        if not enabled:
            self.imu = None
            return
        if self.floating_base:
            raise ValueError('use_imu is for fixed-base models; with floating_base the base '
                             'acceleration is part of the state')
        if self.imu is None:
            self.imu = ImuInput(self.root_link, link_body, timeout, filter_time)
        self.imu.timeout = timeout
        self.imu.filter_time = filter_time

    def set_default(self, values):
        """Set the parameter value (6 numbers); raise ValueError for a floating base."""
        values = np.zeros(6) if values is None else np.array(values, dtype=float).reshape(6)
        if values.any() and self.floating_base:
            raise ValueError('base_acceleration is for fixed-base models; with floating_base '
                             'the base acceleration is part of the state')
        self.default = values if values.any() else None

    def update(self, frame_id, values, now):
        """Take a topic message; return None or why it was rejected (then nothing is kept)."""
        if self.floating_base:
            return 'base_acceleration is for fixed-base models (floating_base is true)'
        if frame_id not in ('', self.root_link):
            return (f"frame_id '{frame_id}': give the acceleration in the world frame, i.e. "
                    f"the root link '{self.root_link}' (or leave frame_id empty)")
        values = np.array(values, dtype=float).reshape(6)
        error = finite_error('base acceleration', values, MAX_BASE_ACCELERATION)
        if error:
            return error
        self.topic[:] = values
        self.stamp = now
        return None

    def select(self, now, gravity):
        """Return (gravity, base acceleration) for the core now; note the source in ``source``.

        With a fresh IMU the gravity is 0 and the base acceleration is the IMU's a_0 (it holds
        gravity already); otherwise ``gravity`` and the topic's or the parameter's value.
        ``source`` is one of 'topic', 'imu', 'parameter', 'none'.
        """
        if now - self.stamp <= self.timeout:
            self.source = 'topic'
            return gravity, (self.topic if self.topic.any() else None)
        imu = self.imu
        if imu is not None and imu.fresh(now):
            self.source = 'imu'
            return _NO_GRAVITY, imu.a0
        self.source = 'none' if self.default is None else 'parameter'
        return gravity, self.default


class ImuInput:
    """The fictitious base acceleration a_0 = a_base - g of a moving fixed base, from an IMU.

    An accelerometer measures the specific force f = R^T (a - g) in its own frame: at rest and
    level it reads +9.81 m/s^2 on its up axis.  Rotated into the root frame, f is a_imu - g, so
    the IMU gives a_0 directly, the base's tilt against gravity included (a rolling ship): the
    node then passes gravity 0 to the core.  The IMU frame (``frame_id``, empty = root link) must
    be rigidly attached to the root link (merged into it by fixed joints); at position r from
    the root origin the reading is moved there with the measured angular velocity w and the
    angular acceleration alpha: a_origin - g = R f - alpha x r - w x (w x r).

    alpha is the finite difference of w between consecutive messages (sensor stamps), low-pass
    filtered with time constant ``filter_time`` seconds (0: alpha is taken as 0).  A gap longer
    than ``timeout``, or no gyro (angular_velocity_covariance[0] = -1), restarts it at 0.  The
    base velocity itself is not an input of the RNEA (taken as 0).  :attr:`a0` holds
    [linear, angular] in the root frame; it is used while the last message is younger than
    ``timeout`` (steady clock).
    """

    def __init__(self, root_link, link_body, timeout, filter_time):
        """Index the links rigidly attached to the root (``RobotModel.link_body`` entries)."""
        self.root_link = root_link
        self.links = frozenset(link_body)
        self.frames = {link: (np.array(R, dtype=float), np.array(p, dtype=float))
                       for link, (body, R, p) in link_body.items() if body < 0}
        if root_link in self.frames:
            self.frames[''] = self.frames[root_link]
        self.timeout = timeout
        self.filter_time = filter_time
        self.a0 = np.zeros(6)
        self.w = np.zeros(3)
        self.alpha = np.zeros(3)
        self.stamp = -math.inf          # steady clock time of the last accepted message
        self._sensor_time = None        # sensor stamp of the last gyro sample (differencing)

    def fresh(self, now):
        """Return True while the last accepted message is younger than the timeout."""
        return now - self.stamp <= self.timeout

    def _frame(self, frame_id):
        frame = self.frames.get(frame_id)
        if frame is not None:
            return frame, None
        allowed = ', '.join(sorted(name for name in self.frames if name))
        if frame_id not in self.links:
            return None, (f"frame_id '{frame_id}' is not a link of the model (the IMU frame "
                          f"must be a link rigidly attached to the root link '{self.root_link}'"
                          f', or empty for the root link; here: {allowed})')
        return None, (f"frame_id '{frame_id}' is a link moved by the robot's joints: the IMU "
                      f"must be rigidly attached to the root link '{self.root_link}' (fixed "
                      f'joints only: {allowed}); it gives the base acceleration, and on a moving '
                      'link it would also measure the joint accelerations')

    def update(self, frame_id, angular_velocity, linear_acceleration, gyro_covariance0,
               accel_covariance0, sensor_time, now):
        """Take one Imu message; return None or why it was rejected (then nothing is kept).

        ``angular_velocity`` (rad/s) and ``linear_acceleration`` (m/s^2) are 3 numbers in the
        IMU frame; the covariances' first elements flag a missing field with -1 (REP 145).
        ``sensor_time`` is the header stamp in seconds (<= 0: unstamped, ``now`` is used).
        """
        frame, error = self._frame(frame_id)
        if error:
            return error
        if accel_covariance0 == -1.0:
            return ('linear_acceleration is not provided (linear_acceleration_covariance[0] = '
                    '-1, REP 145): this IMU cannot give the base acceleration')
        lin = np.array(linear_acceleration, dtype=float).reshape(3)
        gyro = gyro_covariance0 != -1.0
        w_imu = np.array(angular_velocity, dtype=float).reshape(3) if gyro else np.zeros(3)
        error = (finite_error('linear_acceleration', lin, MAX_IMU_ACCELERATION)
                 or finite_error('angular_velocity', w_imu, MAX_IMU_ANGULAR_VELOCITY))
        if error:
            return error
        t = sensor_time if sensor_time > 0.0 else now
        last = self._sensor_time
        if gyro and last is not None and -1.0 <= t - last <= 0.0:
            return (f'stamp {t:.9f} is not after the previous IMU stamp {last:.9f} (out of '
                    'order or repeated)')
        R, r = frame
        w = R @ w_imu
        if not gyro or self.filter_time <= 0.0 or last is None or not 0.0 < t - last <= \
                self.timeout:
            self.alpha[:] = 0.0         # no gyro, angular part off, first sample or a gap
        else:
            dt = t - last
            gain = -math.expm1(-dt / self.filter_time)
            self.alpha += gain * ((w - self.w) / dt - self.alpha)
        self.w[:] = w
        self._sensor_time = t if gyro else None
        alpha = self.alpha
        self.a0[:3] = R @ lin - np.cross(alpha, r) - np.cross(w, np.cross(w, r))
        self.a0[3:] = alpha
        self.stamp = now
        return None
