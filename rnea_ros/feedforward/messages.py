"""trajectory_msgs/JointTrajectory <-> arrays for :class:`TrajectoryFiller` (no node, no graph).

:func:`fill_trajectory` reads a JointTrajectory's points into arrays (from the bytes of their
``array('d')`` fields, no per-value Python work), checks them, and writes each point's
``effort``.  The message is changed in place only when the whole trajectory was accepted: a
ValueError leaves it as it came.  Used by the feed-forward node and by the
FollowJointTrajectory action proxy (:mod:`rnea_ros.feedforward.action_proxy`), which both hand
it a trajectory and publish or forward the result.
"""

from array import array

import numpy as np


def seconds(duration):
    """Return a builtin_interfaces/Duration as float seconds."""
    return duration.sec + duration.nanosec * 1e-9


def _field(points, name, n_joints, required):
    """Return the (N, n) array of one per-point field, or None when no point has it."""
    values = [getattr(point, name) for point in points]
    lengths = [len(v) for v in values]
    if not any(lengths) and not required:
        return None
    bad = [k for k, length in enumerate(lengths) if length != n_joints]
    if bad:
        k = bad[0]
        what = 'one per joint name' if required or any(lengths) else ''
        raise ValueError(f'point {k} has {lengths[k]} {name} for {n_joints} joint names '
                         f'({what}{"; " if what else ""}give {name} on every point or on none)')
    data = b''.join([v.tobytes() if isinstance(v, array) else
                     np.asarray(v, dtype=float).tobytes() for v in values])
    return np.frombuffer(data, dtype=float).reshape(len(points), n_joints)


def trajectory_arrays(msg):
    """Return (joint_names, times, P, V, A) of a JointTrajectory (ValueError when malformed).

    V and A are None when no point has them.  Accelerations without velocities are refused:
    joint_trajectory_controller interpolates such points linearly and ignores them.
    """
    names = list(msg.joint_names)
    points = msg.points
    n = len(names)
    P = _field(points, 'positions', n, required=True)
    V = _field(points, 'velocities', n, required=False)
    A = _field(points, 'accelerations', n, required=False)
    if A is not None and V is None:
        raise ValueError('accelerations without velocities: joint_trajectory_controller '
                         'interpolates such points linearly; give velocities too')
    times = np.array([seconds(point.time_from_start) for point in points])
    return names, times, P, V, A


def fill_trajectory(filler, msg):
    """Write each point's effort of ``msg`` (in place) and return the (N, n) efforts.

    An empty trajectory (no points: joint_trajectory_controller's "stop") is left as it is.
    Raises ValueError naming what is wrong; ``msg`` is then unchanged.
    """
    if not msg.points:
        return np.zeros((0, len(msg.joint_names)))
    names, times, P, V, A = trajectory_arrays(msg)
    efforts = filler.fill(names, times, P, V, A)
    if not np.all(np.isfinite(efforts)):       # never send a non-finite effort to a robot
        raise ValueError('the efforts are not finite')
    for point, row in zip(msg.points, efforts):
        effort = array('d')
        effort.frombytes(row.tobytes())
        point.effort = effort
    return efforts
