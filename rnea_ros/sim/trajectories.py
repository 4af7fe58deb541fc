"""Smooth joint reference trajectories (pure numpy, no ROS).

Every function takes the time ``t`` in seconds since the start of the motion and per-joint
parameter arrays, and returns ``(positions, velocities, accelerations)`` as arrays, consistent
with each other (the velocity is the exact derivative of the position, and so on).
"""
import numpy as np

PROFILES = ('sinusoid', 'min_jerk')


def _per_joint(values, count, what):
    """Broadcast a scalar or one-element list to ``count`` joints; check the length."""
    values = np.atleast_1d(np.asarray(values, dtype=float))
    if values.size == 1:
        values = np.full(count, values[0])
    if values.shape != (count,):
        raise ValueError('{} needs 1 or {} values, got {}'.format(what, count, values.size))
    if not np.all(np.isfinite(values)):
        raise ValueError('{} must be finite, got {}'.format(what, values.tolist()))
    return values


def sinusoid(t, start, amplitude, frequency):
    """Return a sinusoid per joint that starts at rest at ``start``.

    q(t) = start + amplitude (1 - cos(2 pi f t)): the joint swings between ``start`` and
    ``start + 2 amplitude`` with period 1/f, starting with zero velocity; before t = 0 it rests
    at ``start``.
    """
    start = np.asarray(start, dtype=float)
    amplitude = _per_joint(amplitude, start.size, 'amplitude')
    frequency = _per_joint(frequency, start.size, 'frequency')
    if t <= 0.0:
        return start.copy(), np.zeros_like(start), np.zeros_like(start)
    omega = 2.0 * np.pi * frequency
    phase = omega * t
    positions = start + amplitude * (1.0 - np.cos(phase))
    velocities = amplitude * omega * np.sin(phase)
    accelerations = amplitude * omega ** 2 * np.cos(phase)
    return positions, velocities, accelerations


def min_jerk_scalar(s):
    """Return the min-jerk blend and its first two derivatives at normalized time s in [0, 1]."""
    s = min(max(s, 0.0), 1.0)
    blend = s ** 3 * (10.0 - 15.0 * s + 6.0 * s ** 2)
    rate = 30.0 * s ** 2 * (1.0 - s) ** 2
    curvature = 60.0 * s * (1.0 - s) * (1.0 - 2.0 * s)
    return blend, rate, curvature


def min_jerk(t, start, goal, duration, repeat=False):
    """Return a minimum-jerk move from ``start`` to ``goal`` in ``duration`` seconds.

    Position, velocity and acceleration are continuous; velocity and acceleration are zero at
    both ends. After the move the joints rest at ``goal``; with ``repeat`` they move back to
    ``start`` in the next ``duration`` and so on, forever.
    """
    start = np.asarray(start, dtype=float)
    goal = _per_joint(goal, start.size, 'goal')
    if not duration > 0.0:
        raise ValueError('min-jerk duration must be positive, got {}'.format(duration))
    if t <= 0.0:
        return start.copy(), np.zeros_like(start), np.zeros_like(start)
    begin, end = start, goal
    if repeat:
        cycle, local = divmod(t, duration)
        if int(cycle) % 2 == 1:
            begin, end = goal, start
    else:
        local = t
    blend, rate, curvature = min_jerk_scalar(local / duration)
    distance = end - begin
    return (begin + blend * distance, rate * distance / duration,
            curvature * distance / duration ** 2)


class ReferenceProfile:
    """A named profile with its parameters, evaluated at any time."""

    def __init__(self, profile, start, amplitude=0.0, frequency=0.0, goal=None, duration=1.0,
                 repeat=True):
        """Check the parameters of the profile ('sinusoid' or 'min_jerk') for each joint."""
        if profile not in PROFILES:
            raise ValueError('unknown profile {!r}; use one of {}'.format(profile, PROFILES))
        self.profile = profile
        self.start = _per_joint(start, np.size(start), 'start positions')
        count = self.start.size
        if profile == 'sinusoid':
            self.amplitude = _per_joint(amplitude, count, 'amplitude')
            self.frequency = _per_joint(frequency, count, 'frequency')
        else:
            self.goal = _per_joint(self.start if goal is None else goal, count, 'goal')
            if not duration > 0.0:
                raise ValueError('min-jerk duration must be positive, got {}'.format(duration))
            self.duration = float(duration)
            self.repeat = bool(repeat)

    def __call__(self, t):
        """Return (positions, velocities, accelerations) at ``t`` seconds after the start."""
        if self.profile == 'sinusoid':
            return sinusoid(t, self.start, self.amplitude, self.frequency)
        return min_jerk(t, self.start, self.goal, self.duration, self.repeat)

    def sample(self, times):
        """Return (Q, QD, QDD) arrays of shape (len(times), joints) for many times."""
        points = [self(float(t)) for t in np.asarray(times, dtype=float)]
        return tuple(np.array([point[k] for point in points]) for k in range(3))


class TrajectoryFile:
    """A trajectory read from an excitation YAML file (``rnea-ros excite``), as a profile.

    ``joints`` is the file's joint order; calls return (positions, velocities, accelerations)
    in that order, at rest at the first point before t = 0 and at the last after ``duration``.
    """

    def __init__(self, path):
        """Load the file (ValueError when it is not an excitation trajectory)."""
        from rnea_ros.analysis.excitation import FourierTrajectory
        self.path = path
        self.trajectory = FourierTrajectory.from_yaml(path)
        self.joints = list(self.trajectory.joints)
        self.duration = float(self.trajectory.duration)

    def __call__(self, t):
        """Return (positions, velocities, accelerations) at ``t`` seconds after the start."""
        return tuple(np.asarray(x, dtype=float) for x in self.trajectory.evaluate(float(t)))

    def sample(self, times):
        """Return (Q, QD, QDD) arrays of shape (len(times), joints) for many times."""
        return tuple(np.asarray(x, dtype=float)
                     for x in self.trajectory.evaluate(np.asarray(times, dtype=float)))
