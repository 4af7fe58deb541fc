"""Effort feed-forward for joint trajectories, without ROS: arrays in, efforts out.

joint_trajectory_controller (ros2_controllers) accepts an ``effort`` per trajectory point and adds
it to its PID output.  :class:`TrajectoryFiller` computes that effort from the model at every
point,

    tau_k = ID(q_k, qd_k, qdd_k) + Fs sign(qd_k) + Fv qd_k + Ia qdd_k

(RBDA §5.3 for ID; friction and rotor inertia as Khalil 2010 eq. 31, the core's one
definition, :func:`rnea_ros.core.dynamics.joint_friction`), with a payload when the model carries
one (:func:`rnea_ros.core.payload.model_with_payload`).

Where a point lacks velocities or accelerations they are those of the interpolation
joint_trajectory_controller itself runs between two points (its ``splines`` method), so the
feed-forward matches the motion the controller commands:

- positions, velocities and accelerations on both points: quintic; the given values are used;
- positions and velocities on both points: cubic Hermite; a point's acceleration is the
  cubic's second derivative at the start of the segment that leaves it (the last point: at the
  end of the segment that reaches it),
  ``qdd_0 = (6 (q_1 - q_0) / T - 4 qd_0 - 2 qd_1) / T``,
  ``qdd_1 = (-6 (q_1 - q_0) / T + 2 qd_0 + 4 qd_1) / T``;
- positions only: linear; a point's velocity is the slope of the segment that leaves it (the
  last point: 0, the controller holds it) and its acceleration 0.

A lone point (no segment) takes 0 for what it lacks.  The controller also interpolates from the
robot's current state to the first point; that state is not known here, so the first point is
treated like any other.

Joints: the trajectory's ``joint_names`` are mapped to the model by name (any order, any subset
of the model's joints).  Model joints the trajectory does not name are held at the positions
given to the filler (``held``; default 0) with zero velocity and acceleration, except mimic joints
whose driver is in the trajectory, which follow it.  Names the model lacks, duplicates, wrong
lengths, non-finite values and times that do not increase are refused with a ValueError that
says what and where; nothing is filled then.
"""

import numba
import numpy as np

from rnea_ros.core.dynamics import inverse_dynamics_batch

# |q|, |qd|, |qdd| above this are refused (as the rnea node's inputs; rad, m, s).
BOUND = 1e6


class TrajectoryFiller:
    """Fill trajectory points with model efforts (one model, many trajectories)."""

    def __init__(self, model, held=None, gravity=None):
        """Keep ``model`` (fixed base), positions of joints no trajectory names, ``gravity``."""
        if model.floating_base:
            raise ValueError('trajectory feed-forward needs a fixed-base model: robot '
                             f"'{model.name}' has a floating base")
        self.model = model
        self.gravity = None if gravity is None else np.asarray(gravity, dtype=float)
        self._index = {name: i for i, name in enumerate(model.joint_names)}
        self._held = np.zeros(model.nq)
        for name, value in (held or {}).items():
            if name not in self._index:
                raise ValueError(f"held joint '{name}' is not a moving joint of robot "
                                 f"'{model.name}'")
            self._held[self._index[name]] = float(value)
        self._columns = {}

    def columns(self, joint_names):
        """Return the model columns of ``joint_names`` (ValueError naming what does not fit)."""
        key = tuple(joint_names)
        columns = self._columns.get(key)
        if columns is not None:
            return columns
        if not key:
            raise ValueError('the trajectory names no joints')
        unknown = [name for name in key if name not in self._index]
        if unknown:
            raise ValueError(f'joints {unknown} are not moving joints of robot '
                             f"'{self.model.name}' (its joints: {list(self.model.joint_names)})")
        if len(set(key)) != len(key):
            twice = sorted({name for name in key if key.count(name) > 1})
            raise ValueError(f'joints {twice} are named more than once')
        columns = np.array([self._index[name] for name in key], dtype=np.intp)
        if len(self._columns) > 64:          # bounded memory with many joint subsets
            self._columns.clear()
        self._columns[key] = columns
        return columns

    def fill(self, joint_names, times, positions, velocities=None, accelerations=None):
        """Return the (N, n) efforts of N points over the n ``joint_names``.

        ``times`` (N,) seconds from the start, strictly increasing; ``positions`` (N, n);
        ``velocities`` and ``accelerations`` (N, n) or None when the points have none (see the
        module docstring for what is used instead).  Efforts are in the order of
        ``joint_names``.
        """
        columns = self.columns(joint_names)
        times = np.asarray(times, dtype=float)
        P = self._matrix(positions, 'positions', len(times), len(columns), joint_names)
        V = None if velocities is None else \
            self._matrix(velocities, 'velocities', len(times), len(columns), joint_names)
        A = None if accelerations is None else \
            self._matrix(accelerations, 'accelerations', len(times), len(columns), joint_names)
        if times.ndim != 1:
            raise ValueError('times must be one value per point')
        if not np.all(np.isfinite(times)):
            raise ValueError('time_from_start must be finite')
        steps = np.diff(times)
        if np.any(steps <= 0.0):
            k = int(np.flatnonzero(steps <= 0.0)[0]) + 1
            raise ValueError(f'time_from_start must increase: point {k} at {times[k]} s after '
                             f'point {k - 1} at {times[k - 1]} s')
        V, A = spline_derivatives(times, P, V, A)
        return self.efforts(columns, P, V, A)

    def efforts(self, columns, P, V, A):
        """Return the efforts at the points (model ID + joint terms), trajectory columns."""
        model = self.model
        n = P.shape[0]
        Q = np.broadcast_to(self._held, (n, model.nq)).copy()
        QD = np.zeros((n, model.nv))
        QDD = np.zeros((n, model.nv))
        Q[:, columns], QD[:, columns], QDD[:, columns] = P, V, A
        named = set(columns.tolist())
        for joint, driver, multiplier, offset in model.mimic:
            j, d = self._index[joint], self._index[driver]
            if j not in named and d in named:
                Q[:, j] = multiplier * Q[:, d] + offset
                QD[:, j], QDD[:, j] = multiplier * QD[:, d], multiplier * QDD[:, d]
        # One numba thread (numba's setting is per calling thread): 1000 points take about
        # 0.5 ms on one core, while the parallel batch pays its workers' wake-up and, on a busy
        # machine, waits for a second core (5 to 15 ms measured; benchmarks/bench_feedforward.py).
        previous = numba.get_num_threads()
        numba.set_num_threads(1)
        try:
            tau = inverse_dynamics_batch(model, Q, QD, QDD, gravity=self.gravity)
        finally:
            numba.set_num_threads(previous)
        return tau[:, columns]

    @staticmethod
    def _matrix(values, what, n_points, n_joints, joint_names):
        """Return values as a finite, bounded (N, n) float array or raise ValueError."""
        try:
            array = np.asarray(values, dtype=float)
        except ValueError:
            raise ValueError(f'{what}: every point needs {n_joints} values (one per joint '
                             'name)') from None
        if array.shape != (n_points, n_joints):
            raise ValueError(f'{what}: every point needs {n_joints} values (one per joint '
                             f'name), got an array of shape {array.shape} for {n_points} points')
        bad = ~np.isfinite(array) | (np.abs(array) > BOUND)
        if np.any(bad):
            k, j = (int(i) for i in np.argwhere(bad)[0])
            raise ValueError(f'{what}[{j}] ({joint_names[j]}) of point {k} is {array[k, j]}: '
                             f'values must be finite and at most {BOUND:g}')
        return array


def spline_derivatives(times, P, V=None, A=None):
    """Return (V, A) at the points as joint_trajectory_controller's interpolation has them.

    ``V``/``A`` None: the points have none (see the module docstring: cubic Hermite with
    velocities, linear without).  Given arrays are returned as they are.
    """
    n = P.shape[0]
    if n < 2:
        return (np.zeros_like(P) if V is None else V), (np.zeros_like(P) if A is None else A)
    T = np.diff(times)[:, None]
    dP = np.diff(P, axis=0)
    if V is None:           # linear segments: slope of the outgoing segment, 0 at the end
        V = np.zeros_like(P)
        V[:-1] = dP / T
        return V, (np.zeros_like(P) if A is None else A)
    if A is None:           # cubic Hermite segments
        A = np.empty_like(P)
        A[:-1] = (6.0 * dP / T - 4.0 * V[:-1] - 2.0 * V[1:]) / T
        A[-1] = (-6.0 * dP[-1] / T[-1] + 2.0 * V[-2] + 4.0 * V[-1]) / T[-1]
    return V, A
