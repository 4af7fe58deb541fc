"""Joint torque sensors: the bending moments a strain-gauge sensor can cross-talk from.

A joint torque sensor should read the torque about its joint's axis, ``tau_j = S_j^T f_j``
(RBDA §5.3), where ``f_j`` is the spatial force transmitted across joint j (the reaction
wrench, :func:`rnea_ros.core.dynamics.reaction_wrenches`).  The same flange also carries the
two bending moments, the components of the moment ``n_j`` of ``f_j`` perpendicular to the
axis, which are often a hundred times larger than the torque; a small fraction of them in
the reading is the sensor's crosstalk::

    tau_measured_j = S_j^T f_j + c_j1 m_j1 + c_j2 m_j2

with the moments ``m_j = B_j R_j(q_j) n_j`` (*stator side*: the sensor turns with the parent
link) or ``m_j = B_j n_j`` (*rotor side*: it turns with the child link).  ``n_j`` is in the child
link's frame (as RBDA's f_i), ``R_j(q_j)`` the rotation of a revolute joint about its axis
(``X_J`` of RBDA Table 4.1, here from child to parent), and ``B_j`` two unit vectors
perpendicular to the axis (:func:`perpendicular_basis`).  The moments are linear in the inertial
parameters, as the torque is, and the crosstalk in the coefficients: an identification can fit
``c`` beside friction.  Prismatic joints have no bending moment of this kind: zero.
"""

import numpy as np

from rnea_ros.core.layout import AXIS

SIDES = ('stator', 'rotor')

# The model options (and node parameters) of the stator-side crosstalk coefficients c_j1, c_j2.
SENSOR_OPTIONS = ('sensor_crosstalk_u', 'sensor_crosstalk_w')


def perpendicular_basis(axis):
    """Return the (2, 3) unit vectors u, w with (u, w, axis) right-handed and orthonormal.

    u is the coordinate axis least aligned with ``axis``, with its component along the axis
    removed: for the z axis, u = x and w = y.
    """
    a = np.asarray(axis, dtype=float)
    a = a / np.linalg.norm(a)
    e = np.zeros(3)
    e[int(np.argmin(np.abs(a)))] = 1.0
    u = e - (e @ a) * a
    u /= np.linalg.norm(u)
    return np.array([u, np.cross(a, u)])


def joint_axes(model):
    """Return the (njoints, 3) unit joint axes in the child link frames, model joint order."""
    return np.array(model.reals[model.joint_body, AXIS:AXIS + 3])


def bending_moments(model, q, wrenches, side='stator'):
    """Return the (..., njoints, 2) bending moments of reaction wrenches (..., njoints, 6).

    ``q`` (..., nq), ``wrenches`` [force, torque] per joint as
    :func:`rnea_ros.core.dynamics.reaction_wrenches` returns them (child frame about the joint
    origin).  Components along :func:`perpendicular_basis` of the joint axis, in the parent
    side's frame (``'stator'``) or the child link's (``'rotor'``); zero for prismatic joints.
    """
    if side not in SIDES:
        raise ValueError(f'side must be one of {SIDES}, got {side!r}')
    q = np.asarray(q, dtype=float)
    n = np.asarray(wrenches, dtype=float)[..., 3:6]
    joints = q[..., model.nq - model.njoints:]
    out = np.zeros(n.shape[:-1] + (2,))
    for j, axis in enumerate(joint_axes(model)):
        if model.joint_types[j] not in ('revolute', 'continuous'):
            continue
        a = axis / np.linalg.norm(axis)
        B = perpendicular_basis(a)
        nj = n[..., j, :]
        if side == 'stator':          # R(a, q) n by Rodrigues' formula: child to parent frame
            c, s = np.cos(joints[..., j])[..., None], np.sin(joints[..., j])[..., None]
            nj = nj * c + np.cross(a, nj) * s + a * (nj @ a)[..., None] * (1 - c)
        out[..., j, :] = nj @ B.T
    return out


def crosstalk_efforts(model, q, wrenches, coefficients=None):
    """Return the (..., njoints) crosstalk ``c_j1 m_j1 + c_j2 m_j2`` of the stator side.

    ``coefficients`` (njoints, 2): default the model's ``sensor_crosstalk``; ``q`` and
    ``wrenches`` as :func:`bending_moments`.
    """
    c = model.sensor_crosstalk if coefficients is None else np.asarray(coefficients, float)
    return np.sum(bending_moments(model, q, wrenches, 'stator') * c, axis=-1)
