"""Samples for the payload estimator from a stream of joint states (the node's way).

- :class:`AccelerationWindow`: motion samples, accelerations from the velocities by a
  least-squares slope over a window, every quantity through the same low-pass (parallel
  filtering, Khalil & Dombre chapter 12);
- :class:`StillPose`: static poses, positions and efforts averaged while the arm is held still.

Both feed :class:`rnea_ros.core.payload_estimation.PayloadEstimator`
(:func:`rnea_ros.core.payload_estimation.estimate_payload` on arrays, and the node).
"""

import numpy as np

_MAX_WINDOW = 1024      # samples an AccelerationWindow keeps (bounded memory)
_SEPARATION = 10.0      # StillPose: a new pose is this many tolerances from the previous one


class AccelerationWindow:
    """Joint states of the last ``window`` seconds, filtered in parallel into one sample.

    The acceleration is the least-squares slope of the velocities against the stamps over the
    window (a first-order Savitzky-Golay derivative).  That slope is exactly the derivative of
    the velocity averaged with the parabolic (Epanechnikov) weights ``(T/2)^2 - s^2`` (s the
    time from the window's mean time, T its span), so positions, velocities and efforts are
    averaged with those weights: the sample at the mean time has every quantity through the
    same low-pass filter, with no lag between them (the "parallel filtering" of identification,
    Khalil & Dombre chapter 12).  Efforts are linear in the accelerations, so the filter's
    attenuation is the same on both sides of the dynamic equation instead of leaving an error
    of the robot's own inertial efforts in the residual; what is left is second order in the
    motion within the window (positions and velocities enter nonlinearly).
    """

    def __init__(self, window):
        """Keep samples over ``window`` seconds (at most _MAX_WINDOW of them)."""
        self.window = float(window)
        self.t, self.q, self.qd, self.effort = [], [], [], []

    def add(self, t, q, qd, effort, want=True):
        """Add a sample; return the filtered (t, q, qd, qdd, effort) once full, or None.

        ``want`` False: only keep the sample (no fit computed, None returned).
        """
        if self.t and t <= self.t[-1]:
            self.t, self.q, self.qd, self.effort = [], [], [], []    # time went back: restart
        for lst, value in ((self.t, t), (self.q, q), (self.qd, qd), (self.effort, effort)):
            lst.append(value)
        while self.t[-1] - self.t[0] > self.window or len(self.t) > _MAX_WINDOW:
            for lst in (self.t, self.q, self.qd, self.effort):
                del lst[0]
        if not want or len(self.t) < 3 or self.t[-1] - self.t[0] < 0.5 * self.window:
            return None
        t_arr = np.array(self.t)
        centre = t_arr.mean()
        ds = t_arr - centre
        qd = np.array(self.qd)
        qdd = ds @ qd / (ds @ ds)
        # h^2 such that the weights' second moment matches the slope's response to a cubic
        # velocity (sum w s^2 / sum w = S4 / (3 S2)): the discrete form of the identity above.
        s2, s4 = ds @ ds, (ds * ds) @ (ds * ds)
        h2 = (2.0 * s4 / 3.0) / (s2 - ds.size * s4 / (3.0 * s2))
        w = h2 - ds * ds
        w /= w.sum()
        return centre, w @ np.array(self.q), w @ qd, qdd, w @ np.array(self.effort)


class StillPose:
    """Detects the arm held still: running means of positions and efforts while it is."""

    def __init__(self, still_time, tolerance):
        """Count a pose after ``still_time`` s with every joint within ``tolerance``."""
        self.still_time, self.tolerance = float(still_time), float(tolerance)
        self.last_pose = None
        self._restart(None, None, None)

    def _restart(self, t, q, effort):
        self.t0, self.q0 = t, q
        self.count = 0 if q is None else 1
        self.sum_q = None if q is None else q.copy()
        self.sum_e = None if effort is None else effort.copy()

    def add(self, t, q, effort):
        """Add a sample; return (mean q, mean effort) when a new pose has been held, else None."""
        if self.last_pose is not None and \
                np.max(np.abs(q - self.last_pose)) < _SEPARATION * self.tolerance:
            self._restart(None, None, None)           # still at (or near) the last pose
            return None
        if self.q0 is None or t < self.t0 or np.max(np.abs(q - self.q0)) > self.tolerance:
            self._restart(t, q, effort)
            return None
        self.count += 1
        self.sum_q += q
        self.sum_e += effort
        if t - self.t0 < self.still_time:
            return None
        pose = self.sum_q / self.count, self.sum_e / self.count
        self.last_pose = pose[0]
        self._restart(None, None, None)
        return pose
