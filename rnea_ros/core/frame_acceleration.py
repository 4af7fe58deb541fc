"""Velocity and acceleration of link frames, spatial and classical (RBDA §2.11-2.12, §5.3).

Conventions (the same as Pinocchio's ``getFrameVelocity``, ``getFrameAcceleration`` and
``getFrameClassicalAcceleration`` after ``forwardKinematics(q, v, a)``):

- A link frame is any link of the URDF, links merged into a body over fixed joints (tool,
  sensor, IMU frames) included.  Motion vectors are ``[linear; angular]``.
- The body velocities and accelerations are those of RBDA Table 5.1's forward pass (no
  forces): ``v_i = iXlambda v_lambda + S_i qd_i`` and ``a_i = iXlambda a_lambda + S_i qdd_i +
  v_i x S_i qd_i``, with the root's ``a_0`` (zero unless ``base_acceleration`` is given) and
  zero base velocity for a fixed base; a floating base's twist and spatial acceleration are
  qd[:6] and qdd[:6] in the base frame (Pinocchio's free-flyer layout).
- ``reference`` is where the vectors are expressed, as in :mod:`rnea_ros.core.kinematics`:
  'LOCAL' (the link frame: the linear part is that of the link origin), 'WORLD' (the root
  frame, the linear part that of the body point at the root origin) and 'LOCAL_WORLD_ALIGNED'
  (the link origin, root-frame axes).
- The *spatial* acceleration ``a`` is the rate of the twist field at a point fixed in space
  (RBDA §2.11); the *classical* acceleration of the point (the second derivative of its
  position, what an accelerometer feels) is ``a_lin + w x v_lin`` with ``w``, ``v_lin`` and
  ``a`` in the same reference (RBDA §2.11).  The angular parts are equal.

A moving fixed base (ship, platform) with the node's convention enters as ``base_acceleration``
``a_0 = [a_origin; alpha]`` of the root in the root frame, the base velocity taken as zero: the
link's acceleration is then ``X a_0`` plus the joints' part, where ``X`` is the motion
transform from the root frame to the reference (:func:`frame_motion` returns it).  With
``a_0 = a_base - g`` (RBDA §5.3's fictitious base acceleration) the classical 'LOCAL' linear
part is the specific force an accelerometer at the link origin reads.

:func:`frame_motion_reference` is the readable numpy form (RBDA Table 5.1's forward pass with
6x6 matrices); the public functions run the numba kernel
:func:`rnea_ros.core.kernels.frame_acceleration.frame_motion`, which computes the same without
6x6 matrices (tests compare both with each other and with Pinocchio).  The kernel writes the
transform, velocity and acceleration columns of the workspace only: the body forces of the last
inverse dynamics (``last_reaction_wrenches``) stay valid.
"""

import numpy as np

from rnea_ros.core.checks import (check_quaternion, finite_vector, link_frame,
                                  not_a_model, raise_status, workspace)
from rnea_ros.core.joints import NV
from rnea_ros.core.kernels.frame_acceleration import frame_motion as _kernel
from rnea_ros.core.kinematics import link_frames
from rnea_ros.core.layout import PARENT, STATUS_OK, STATUS_OVERFLOW
from rnea_ros.core.reference import joint_state, tree_transforms
from rnea_ros.core.spatial import crm, plucker, plucker_inverse, plucker_parts

REFERENCES = ('LOCAL', 'WORLD', 'LOCAL_WORLD_ALIGNED')
_CODE = {name: code for code, name in enumerate(REFERENCES)}   # the kernel's LOCAL, WORLD, ...
_ZERO6 = np.zeros(6)            # a_0 of a call without base acceleration (the kernel reads it)
_empty = np.empty


def body_motion(model, q, qd, qdd, a_0):
    """Return per body (iX0, v_i, a_i): RBDA Table 5.1's forward pass, in body frames.

    ``a_0`` is the spatial acceleration of the root (world) frame; the base velocity is zero.
    """
    Xup, S, _ = tree_transforms(model, q)
    NB = model.nbodies
    X0, v, a = [None] * NB, [None] * NB, [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        vJ = S[i] @ joint_state(model, i, qd, NV)
        aJ = S[i] @ joint_state(model, i, qdd, NV)
        if lam < 0:
            X0[i], v[i], a[i] = Xup[i], vJ, Xup[i] @ a_0 + aJ
        else:
            X0[i] = Xup[i] @ X0[lam]
            v[i] = Xup[i] @ v[lam] + vJ
            a[i] = Xup[i] @ a[lam] + aJ + crm(v[i]) @ vJ
    return X0, v, a


def _in_reference(fX0, v_f, a_f, reference):
    """Return (X, v, a) of link-frame vectors in ``reference``; X maps root-frame motion there."""
    if reference == 'LOCAL':
        return fX0, v_f, a_f
    if reference == 'WORLD':
        X0f = plucker_inverse(fX0)
        return np.eye(6), X0f @ v_f, X0f @ a_f
    E, r = plucker_parts(fX0)               # E = link_R_root, r = link origin in the root
    rotate = plucker(E.T, np.zeros(3))      # link axes -> root axes, about the link origin
    return plucker(np.eye(3), r), rotate @ v_f, rotate @ a_f


def _checked(model, q, qd, qdd, link, reference, base_acceleration):
    """Return the inputs as float64 arrays (a_0 a 6-vector); ValueError naming what is wrong."""
    if getattr(model, 'link_body', None) is None:
        raise not_a_model(model)
    q = finite_vector(q, model.nq, 'q', model)
    check_quaternion(model, q)
    qd = finite_vector(qd, model.nv, 'qd', model)
    qdd = finite_vector(qdd, model.nv, 'qdd', model)
    link_frame(model, link)
    if reference not in REFERENCES:
        raise ValueError(f'reference must be one of {", ".join(REFERENCES)}, got '
                         f'{reference!r}')
    a_0 = np.zeros(6)
    if base_acceleration is not None:
        if model.floating_base:
            raise ValueError('base_acceleration is for fixed-base models; a floating base '
                             'takes its acceleration in qdd[:6]')
        try:
            a_0 = np.array(base_acceleration, dtype=np.float64).reshape(6)
        except (TypeError, ValueError):
            a_0 = np.full(6, np.nan)
        if not np.all(np.isfinite(a_0)):
            raise ValueError('base_acceleration must be 6 finite numbers [linear, angular], '
                             f'got {base_acceleration!r}')
    return q, qd, qdd, a_0


def _finish(fX0, v_f, a_f, reference, classical):
    """Return (X, v, a) in ``reference`` from link-frame vectors; classical: add w x v_lin."""
    X, v_f, a_f = _in_reference(fX0, v_f, a_f, reference)
    if classical:
        a_f = a_f.copy()
        w0, w1, w2 = v_f[3:].tolist()
        v0, v1, v2 = v_f[:3].tolist()
        a_f[:3] += (w1 * v2 - w2 * v1, w2 * v0 - w0 * v2, w0 * v1 - w1 * v0)    # w x v
    return X, v_f, a_f


def frame_motion_reference(model, q, qd, qdd, link, reference='LOCAL', classical=True,
                           base_acceleration=None):
    """Return :func:`frame_motion`'s (X, v, a) by the numpy forward pass (the book's form)."""
    q, qd, qdd, a_0 = _checked(model, q, qd, qdd, link, reference, base_acceleration)
    body, R_bl, p_bl = model.link_body[link]
    fXb = plucker(np.asarray(R_bl).T, p_bl)     # from the body frame to the link frame
    if body < 0:
        return _finish(fXb, np.zeros(6), fXb @ a_0, reference, classical)
    X0, v, a = body_motion(model, q, qd, qdd, a_0)
    return _finish(fXb @ X0[body], fXb @ v[body], fXb @ a[body], reference, classical)


def _run(model, q, qd, qdd, link, reference, classical, base_acceleration, ws):
    """Return (M, va) of the kernel: the plain call at once, else inputs checked first."""
    try:       # the plain call: kernel at once (it checks the state); anything else: checked
        buffer = model.default_workspace.buffer if ws is None else \
            ws.buffer if ws.nbodies == model.nbodies else None
        M, va = _empty((4, 4)), _empty((2, 6))
        if base_acceleration is None and _kernel(
                model.kernel_model, buffer, model._link_frames[link], q, qd, qdd, _ZERO6, M, va,
                _CODE[reference], classical) == STATUS_OK:
            return M, va
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    q, qd, qdd, a_0 = _checked(model, q, qd, qdd, link, reference, base_acceleration)
    ws = workspace(model, ws)
    M, va = _empty((4, 4)), _empty((2, 6))
    status = _kernel(model.kernel_model, ws.buffer, link_frames(model)[link], q, qd, qdd, a_0,
                     M, va, _CODE[reference], bool(classical))
    if status == STATUS_OVERFLOW:
        raise ValueError(f"the motion of link '{link}' overflows for robot '{model.name}': "
                         'q, qd, qdd or base_acceleration too large')
    if status:
        raise_status(model, status, (q, qd, qdd), ('q', 'qd', 'qdd'))
    return M, va


def frame_motion(model, q, qd, qdd, link, reference='LOCAL', classical=True,
                 base_acceleration=None, ws=None):
    """Return (X, v, a) of ``link``'s frame: transform from the root, twist, acceleration.

    ``X`` (6x6) maps a root-frame motion vector (the base acceleration a_0, about the root
    origin) into ``reference``; ``v`` is the frame's twist and ``a`` its acceleration
    (classical or spatial, see the module doc), both in ``reference``.  For a fixed base on a
    moving platform (zero base velocity) the link's acceleration under a base acceleration a_0
    is ``X a_0 + a`` (a computed without it), classical or spatial alike: this is the map an IMU
    on a moving link needs.  A link fixed to the world has v = 0 and a = X a_0.

    ValueError for an unknown link or reference, inputs of the wrong length or not finite, a
    floating-base quaternion of zero norm, and a base_acceleration with a floating base.
    """
    M, va = _run(model, q, qd, qdd, link, reference, classical, base_acceleration, ws)
    R, p = M[:3, :3], M[:3, 3]
    if reference == 'LOCAL':
        X = plucker(R.T, p)
    elif reference == 'WORLD':
        X = np.eye(6)
    else:
        X = plucker(np.eye(3), p)
    return X, va[0], va[1]


def frame_velocity(model, q, qd, link, reference='LOCAL', ws=None):
    """Return the twist [linear; angular] of ``link``'s frame in ``reference``.

    Pinocchio's ``getFrameVelocity``; equal to ``frame_jacobian(model, q, link, reference) @
    qd``.  ValueError as :func:`frame_motion`.
    """
    return _run(model, q, qd, np.zeros(getattr(model, 'nv', 0)), link, reference, False, None,
                ws)[1][0]


def frame_acceleration(model, q, qd, qdd, link, reference='LOCAL', classical=True,
                       base_acceleration=None, ws=None):
    """Return the acceleration [linear; angular] of ``link``'s frame in ``reference``.

    ``classical`` (default): the linear part is the second derivative of the position of the
    frame origin ('LOCAL', 'LOCAL_WORLD_ALIGNED') or of the body point at the root origin
    ('WORLD'), as Pinocchio's ``getFrameClassicalAcceleration``; otherwise the spatial
    acceleration, as ``getFrameAcceleration``.  ``base_acceleration`` (fixed base only): the
    root's acceleration a_0 [linear; angular] in the root frame, zero base velocity; with
    a_0 = a_base - g, the classical 'LOCAL' linear part is an accelerometer's specific force.
    ValueError as :func:`frame_motion`.
    """
    return _run(model, q, qd, qdd, link, reference, classical, base_acceleration, ws)[1][1]


__all__ = ['frame_acceleration', 'frame_motion', 'frame_motion_reference', 'frame_velocity',
           'REFERENCES']
