"""Desired accelerations, the computed-torque reference and external wrenches."""

import math

import numpy as np
from rnea_ros.node.bookkeeping.names import (as_array, finite_error, MAX_ACCELERATION,
                                             MAX_JOINT_STATE, MAX_WRENCH, MimicTable, NameMap,
                                             truncated)


class AccelerationInput:
    """Desired joint accelerations, zero when none arrived within ``timeout`` seconds."""

    def __init__(self, joint_names, timeout):
        """Start with no desired accelerations (zero)."""
        self.names = NameMap(joint_names)
        self.n = len(joint_names)
        self.timeout = timeout
        self.qdd = np.zeros(self.n)
        self._zero = np.zeros(self.n)
        self.stamp = -math.inf

    def from_trajectory(self, names, points, now):
        """Take points[0].accelerations by name (joints not named get 0); None or an error."""
        if not points:
            return 'trajectory has no points'
        acc = as_array(points[0].accelerations)
        if len(acc) != len(names):
            return f'{len(names)} joint names but {len(acc)} accelerations in points[0]'
        error = finite_error('accelerations', acc, MAX_ACCELERATION)
        if error:
            return error
        src, dst, unknown, error = self.names.lookup(names)
        if error or unknown:
            return error or f'unknown joints {truncated(unknown)}'
        self.qdd[:] = 0.0
        self.qdd[dst] = acc[src]
        self.stamp = now
        return None

    def from_array(self, data, now):
        """Take accelerations in model joint order; None or an error (wrong length, NaN)."""
        data = as_array(data)
        if len(data) != self.n:
            return f'expected {self.n} accelerations (model joint order), got {len(data)}'
        error = finite_error('accelerations', data, MAX_ACCELERATION)
        if error:
            return error
        self.qdd[:] = data
        self.stamp = now
        return None

    def stale(self, now):
        """Return True when the last desired accelerations are older than the timeout."""
        return now - self.stamp > self.timeout

    def current(self, now):
        """Return the desired accelerations, or zeros when they are stale."""
        return self._zero if self.stale(now) else self.qdd


class ReferenceInput:
    """The computed-torque reference (positions, velocities, accelerations) and control law.

    qdd_cmd = qdd_ref + kp (q_ref - q) + kd (qd_ref - qd).  Joints the reference does not name
    get no position feedback (qdd_cmd = -kd qd: gravity compensation with damping), except
    mimic joints, which follow their driver's reference.  Before any reference arrives every
    joint is treated that way.  When the reference is older than ``timeout`` its velocities and
    accelerations count as zero and its positions are held.
    """

    def __init__(self, joint_names, mimic=(), timeout=0.1):
        """Start without a reference."""
        n = len(joint_names)
        self.names = NameMap(joint_names)
        self.mimic = MimicTable(joint_names, mimic)
        self.timeout = timeout
        self.q = np.zeros(n)
        self.qd = np.zeros(n)
        self.qdd = np.zeros(n)
        self.active = np.zeros(n, dtype=bool)
        self.stamp = -math.inf
        self.time = -math.inf       # header.stamp + time_from_start of the point (s)

    def from_trajectory(self, names, points, now, header_time=None):
        """Take points[0] by joint name; None or why it was rejected.

        ``header_time``: the message's header stamp in seconds (None: unstamped); the point's
        time is then ``header_time + points[0].time_from_start`` (:attr:`time`). A stamp of 0
        is time 0, as a simulated clock starts: against joint states stamped on the wall clock
        such a point is decades behind, so :meth:`behind` never waits for it (ROS's 'stamp 0:
        now' still holds there), while a simulator's point of t = 0 is not taken for unstamped.
        """
        if not points:
            return 'trajectory has no points'
        point = points[0]
        pos = as_array(point.positions)
        if len(pos) != len(names):
            return f'{len(names)} joint names but {len(pos)} positions in points[0]'
        fields = [pos]
        for label in ('velocities', 'accelerations'):
            values = as_array(getattr(point, label))
            if len(values) not in (0, len(names)):
                return f'{len(names)} joint names but {len(values)} {label} in points[0]'
            fields.append(values)
        bounds = (MAX_JOINT_STATE, MAX_JOINT_STATE, MAX_ACCELERATION)
        for label, values, bound in zip(('positions', 'velocities', 'accelerations'), fields,
                                        bounds):
            error = finite_error(label, values, bound)
            if error:
                return error
        src, dst, unknown, error = self.names.lookup(names)
        if error or unknown:
            return error or f'unknown joints {truncated(unknown)}'
        self._store(dst, src, fields)
        self.stamp = now
        if header_time is not None:
            offset = point.time_from_start
            self.time = header_time + offset.sec + 1e-9 * offset.nanosec
        else:
            self.time = -math.inf
        return None

    def behind(self, stamp):
        """Return whether a stamped reference stream has not reached ``stamp`` (s) yet.

        True only while its last point is less than :attr:`timeout` behind ``stamp`` (a stream
        that stopped, an unstamped one, or one stamped 0 against wall-clock joint states, is
        not waited for).
        """
        return math.isfinite(self.time) and 0.0 < stamp - self.time <= self.timeout

    def _store(self, dst, src, fields):
        self.active[:] = False
        self.active[dst] = True
        for target, values in zip((self.q, self.qd, self.qdd), fields):
            target[:] = 0.0
            if len(values):
                target[dst] = values[src]
        follow = np.zeros(len(self.active), dtype=bool)
        follow[self.mimic.joint] = ~self.active[self.mimic.joint]
        follow[self.mimic.joint] &= self.active[self.mimic.driver]
        self.mimic.fill(self.q, follow, True)
        self.mimic.fill(self.qd, follow, False)
        self.mimic.fill(self.qdd, follow, False)
        self.active |= follow

    def command(self, q, qd, kp, kd, now, out):
        """Write qdd_cmd into ``out`` and return it."""
        np.subtract(self.q, q, out=out)
        out[~self.active] = 0.0
        out *= kp
        if now - self.stamp <= self.timeout:
            out += kd * (self.qd - qd)
            out += self.qdd
        else:
            out -= kd * qd
        return out


class WrenchInput:
    """External wrenches by frame: [fx, fy, fz, tx, ty, tz] in the frame, about its origin.

    A frame is any URDF link, including sensor frames merged into their body over fixed joints
    (the core moves the wrench to the body with the URDF's joint origins).  Frames fixed to the
    world (``world_fixed``: merged into the root of a fixed base) are refused: a wrench there
    moves no joint, and sending one there is a mistake that would otherwise go unnoticed.
    """

    def __init__(self, link_names, world_fixed=()):
        """Start with no external wrench."""
        self.link_names = frozenset(link_names)
        self.world_fixed = frozenset(world_fixed)
        self.wrenches = {}

    def update(self, link, wrench):
        """Set (or clear, when all zero) the wrench on a frame; None or why it was rejected."""
        if link not in self.link_names or link in self.world_fixed:
            frames = truncated(sorted(self.link_names - self.world_fixed), 12)
            if link in self.world_fixed:
                return (f"frame_id '{link}' is fixed to the world (the fixed base): a wrench "
                        'there moves no joint; give the frame of the link it acts on (one of: '
                        f'{frames})')
            return f"frame_id '{link}' is not a frame of the model; frames: {frames}"
        wrench = np.array(wrench, dtype=float).reshape(6)
        error = finite_error('wrench', wrench, MAX_WRENCH)
        if error:
            return error
        if not wrench.any():
            self.wrenches.pop(link, None)
        else:
            self.wrenches[link] = wrench
        return None

    def adopt(self, other):
        """Keep the wrenches of another input on links this model also has (model reload)."""
        self.wrenches = {k: v for k, v in other.wrenches.items() if k in self.link_names}

    @property
    def f_ext(self):
        """Return the dict for the dynamics functions, or None when there is no wrench."""
        return self.wrenches or None
