"""The acceleration of a moving base: parameter, topic or IMU."""

import math

import numpy as np
from rnea_ros.core.frame_acceleration import frame_motion
from rnea_ros.core.spatial import plucker_parts
from rnea_ros.node.bookkeeping.names import (_NO_GRAVITY, finite_error, MAX_BASE_ACCELERATION,
                                             MAX_IMU_ACCELERATION, MAX_IMU_ANGULAR_VELOCITY,
                                             truncated)

_ZERO3 = np.zeros(3)
_ZERO3.flags.writeable = False


def _cross(a, b):
    """Return a x b of two 3-vectors (np.cross costs ~10 us a call, this ~1 us)."""
    a0, a1, a2 = a.tolist()
    b0, b1, b2 = b.tolist()
    return np.array([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0])


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

    def set_imu(self, enabled, model, filter_time, timeout):
        """Enable (keeping a running IMU input) or disable the IMU; ValueError for a floating base.

        ``model`` is the node's RobotModel (the IMU's frame may be any of its links).
        """
        if not enabled:
            self.imu = None
            return
        if self.floating_base:
            raise ValueError('use_imu is for fixed-base models; with floating_base the base '
                             'acceleration is part of the state')
        if self.imu is None:
            self.imu = ImuInput(model, timeout, filter_time)
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
    node then passes gravity 0 to the core.

    The IMU frame (``frame_id``, empty = root link) is any link of the model, sensor frames
    merged over fixed joints included.  At position r(q) from the root origin, with root_R_imu
    = R(q), the frame moves relative to the root with the velocity r' and the classical
    acceleration r'' of its origin and the angular velocity w_J, all from the joints
    (:func:`rnea_ros.core.frame_acceleration.frame_motion` at the current q, qd and the
    cycle's qdd); rigid-body kinematics in the root frame (RBDA §2.11-2.12) give

        w_0 = R w_imu - w_J,
        a_0 = R f - alpha x r - w_0 x (w_0 x r) - 2 w_0 x r' - r'',

    with w_0 the base's angular velocity from the gyro and alpha its angular acceleration.  On
    a link merged into the root (fixed joints only) r' = r'' = w_J = 0 and q is not needed.

    alpha is the finite difference of w_0 between consecutive messages (sensor stamps), low-pass
    filtered with time constant ``filter_time`` seconds (0: alpha is taken as 0).  A gap longer
    than ``timeout``, or no gyro (angular_velocity_covariance[0] = -1, then w_0 = 0), restarts it
    at 0.  The base velocity itself is not an input of the RNEA (taken as 0).  :attr:`a0` holds
    [linear, angular] in the root frame; it is used while the last message is younger than
    ``timeout`` (steady clock).
    """

    def __init__(self, model, timeout, filter_time):
        """Index the model's frames; those merged into the root need no joint state."""
        self.model = model
        self.root_link = model.root_link
        self.links = frozenset(model.link_body)
        self.rigid = {link: (np.array(R, dtype=float), np.array(p, dtype=float))
                      for link, (body, R, p) in model.link_body.items() if body < 0}
        self.ws = model.create_workspace()      # keeps the node's last RNEA pass untouched
        self.timeout = timeout
        self.filter_time = filter_time
        self.a0 = np.zeros(6)
        self.w = np.zeros(3)                    # w_0, the base's angular velocity (root frame)
        self.alpha = np.zeros(3)
        self.stamp = -math.inf          # steady clock time of the last accepted message
        self._sensor_time = None        # sensor stamp of the last gyro sample (differencing)

    @property
    def frames(self):
        """Return the frames an IMU may be given in (every link; '' is the root link)."""
        return self.links | {''}

    def fresh(self, now):
        """Return True while the last accepted message is younger than the timeout."""
        return now - self.stamp <= self.timeout

    def _unknown(self, frame_id):
        """Return why ``frame_id`` cannot be the IMU's frame, or None."""
        if (frame_id or self.root_link) in self.links:
            return None
        return (f"frame_id '{frame_id}' is not a link of the model (the IMU frame is any URDF "
                'link, sensor frames merged over fixed joints included, or empty for the root '
                f"link '{self.root_link}'; links: {truncated(sorted(self.links), 12)})")

    def _motion(self, frame_id, joints):
        """Return ((R, r, w_J, r', r''), None) of the IMU frame in the root, or (None, error)."""
        link = frame_id or self.root_link
        rigid = self.rigid.get(link)
        if rigid is not None:
            return (*rigid, _ZERO3, _ZERO3, _ZERO3), None
        if joints is None:
            return None, (f"frame_id '{frame_id}' is moved by the robot's joints and no joint "
                          'states have arrived yet: the joint motion is taken out of the '
                          'reading')
        try:
            X, v, a = frame_motion(self.model, *joints, link, 'LOCAL', True, ws=self.ws)
        except ValueError as exc:
            return None, f"frame_id '{frame_id}': {exc}"
        R = X[3:, 3:].T                                 # root_R_imu
        r = plucker_parts(X)[1]
        return (R, r, R @ v[3:], R @ v[:3], R @ a[:3]), None

    def update(self, frame_id, angular_velocity, linear_acceleration, gyro_covariance0,
               accel_covariance0, sensor_time, now, joints=None):
        """Take one Imu message; return None or why it was rejected (then nothing is kept).

        ``angular_velocity`` (rad/s) and ``linear_acceleration`` (m/s^2) are 3 numbers in the
        IMU frame; the covariances' first elements flag a missing field with -1 (REP 145).
        ``sensor_time`` is the header stamp in seconds (<= 0: unstamped, ``now`` is used).
        ``joints`` = (q, qd, qdd) of the model now, needed for a frame that joints move (None
        while no joint state has arrived).
        """
        error = self._unknown(frame_id)
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
        motion, error = self._motion(frame_id, joints)
        if error:
            return error
        R, r, w_joints, r_dot, r_ddot = motion
        w = R @ w_imu - w_joints if gyro else np.zeros(3)
        if not gyro or self.filter_time <= 0.0 or last is None or not 0.0 < t - last <= \
                self.timeout:
            alpha = np.zeros(3)         # no gyro, angular part off, first sample or a gap
        else:
            dt = t - last
            gain = -math.expm1(-dt / self.filter_time)
            alpha = self.alpha + gain * ((w - self.w) / dt - self.alpha)
        a0 = np.empty(6)
        # w x (w x r) + 2 w x r' = w x (w x r + 2 r')
        a0[:3] = R @ lin - _cross(alpha, r) - _cross(w, _cross(w, r) + 2.0 * r_dot) - r_ddot
        a0[3:] = alpha
        error = finite_error('base acceleration from the IMU', a0, MAX_BASE_ACCELERATION)
        if error:
            return error
        self.alpha[:] = alpha
        self.w[:] = w
        self._sensor_time = t if gyro else None
        self.a0[:] = a0
        self.stamp = now
        return None
