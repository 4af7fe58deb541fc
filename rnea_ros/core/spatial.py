"""Spatial vector algebra (Featherstone, RBDA ch. 2) with 6x6 matrices.

Conventions used everywhere in rnea_ros (the same as Pinocchio's):

- A motion vector (twist) is ``m = [v; w]``: the linear velocity of the point at the frame
  origin, then the angular velocity, both expressed in the frame's axes.
- A force vector (wrench) is ``f = [f; n]``: the force, then the torque about the frame origin.
- ``X = plucker(E, r)`` is the motion transform from frame A to frame B, where ``E`` rotates
  A-coordinates into B-coordinates (``E = B_R_A``) and ``r`` is the position of B's origin in
  A-coordinates.  Forces transform with ``X^-T``; ``X^T`` maps a force from B back to A.
- A spatial inertia about the frame origin is built by ``mcI(m, c, Ic)`` from the mass, the centre
  of mass ``c`` and the rotational inertia ``Ic`` about the centre of mass.

Featherstone orders spatial vectors [angular; linear]; this module swaps the blocks so that the
linear part comes first, as ROS messages (geometry_msgs/Twist, Wrench) and Pinocchio do.  The
formulas are otherwise those of the book.  These functions are the readable reference; the numba
kernels in :mod:`rnea_ros.core.kernels` compute the same products without forming 6x6 matrices.
"""

import math

import numpy as np


def skew(x):
    """Return the 3x3 matrix ``[x]`` such that ``[x] y = x cross y``."""
    return np.array([[0.0, -x[2], x[1]],
                     [x[2], 0.0, -x[0]],
                     [-x[1], x[0], 0.0]])


def rotx(theta):
    """Return the rotation matrix of angle theta about x (coordinates of the rotated frame)."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])


def roty(theta):
    """Return the rotation matrix of angle theta about y."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])


def rotz(theta):
    """Return the rotation matrix of angle theta about z."""
    c, s = np.cos(theta), np.sin(theta)
    return np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]])


def rot_axis(axis, theta):
    """Return the rotation matrix of angle theta about a unit axis (Rodrigues' formula)."""
    k = skew(axis)
    return np.eye(3) + np.sin(theta) * k + (1.0 - np.cos(theta)) * (k @ k)


def rpy_to_matrix(rpy):
    """Return the URDF rotation of fixed-axis roll, pitch, yaw: Rz(yaw) Ry(pitch) Rx(roll)."""
    return rotz(rpy[2]) @ roty(rpy[1]) @ rotx(rpy[0])


def matrix_to_rpy(R):
    """Return the URDF roll, pitch, yaw of a rotation matrix (inverse of :func:`rpy_to_matrix`).

    At pitch +-pi/2 (gimbal lock) roll is 0 and yaw takes the whole rotation about z.
    """
    R = np.asarray(R, dtype=float)
    pitch = math.asin(max(-1.0, min(1.0, -R[2, 0])))
    if abs(R[2, 0]) < 1.0 - 1e-12:
        return (math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0]))
    return (0.0, pitch, math.atan2(-R[0, 1], R[1, 1]))


def quat_to_matrix(quat):
    """Return the rotation matrix of a quaternion [qx, qy, qz, qw] (normalised first)."""
    x, y, z, w = np.asarray(quat, dtype=float) / np.linalg.norm(quat)
    return np.array([
        [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
        [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
        [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def plucker(E, r):
    """Return the motion transform B_X_A from the rotation E = B_R_A and B's origin r in A."""
    X = np.zeros((6, 6))
    X[:3, :3] = E
    X[:3, 3:] = -E @ skew(r)
    X[3:, 3:] = E
    return X


def plucker_parts(X):
    """Return (E, r) of a motion transform X = plucker(E, r)."""
    E = X[3:, 3:]
    Er = -E.T @ X[:3, 3:]           # = [r]
    return E, np.array([Er[2, 1], Er[0, 2], Er[1, 0]])


def plucker_inverse(X):
    """Return A_X_B given B_X_A (exact, without a general matrix inverse)."""
    E, r = plucker_parts(X)
    return plucker(E.T, -E @ r)


def force_transform(X):
    """Return the force transform X* = X^-T of a motion transform X."""
    return plucker_inverse(X).T


def crm(v):
    """Return the 6x6 motion cross-product operator ``v x`` (RBDA eq. 2.31, [lin; ang] order)."""
    vl, w = v[:3], v[3:]
    M = np.zeros((6, 6))
    M[:3, :3] = skew(w)
    M[:3, 3:] = skew(vl)
    M[3:, 3:] = skew(w)
    return M


def crf(v):
    """Return the 6x6 force cross-product operator ``v x*`` = -crm(v)^T."""
    return -crm(v).T


def mcI(m, c, Ic):
    """Return the spatial inertia about the origin of a body of mass m, COM c, COM inertia Ic."""
    C = skew(c)
    I6 = np.zeros((6, 6))
    I6[:3, :3] = m * np.eye(3)
    I6[:3, 3:] = -m * C
    I6[3:, :3] = m * C
    I6[3:, 3:] = Ic - m * C @ C
    return I6


def inertia_transform(I6, X):
    """Return the inertia expressed in frame A, given I6 in frame B and X = B_X_A: X^T I X."""
    return X.T @ I6 @ X
