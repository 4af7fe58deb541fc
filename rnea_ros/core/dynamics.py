"""Inverse dynamics by the Recursive Newton-Euler Algorithm (RBDA §5.3, Table 5.1): public API.

Gravity enters as a fictitious base acceleration ``a_0 = -a_g`` (RBDA §5.3), so every body force
``f_i`` is the true spatial force transmitted across joint ``i`` from its parent into body ``i``
(the joint reaction force of RBDA §5.3), in the child frame about the joint origin, gravity
included.

External forces ``f_ext`` are applied by the environment on a link, expressed in that link's
frame about its origin, ``[force, torque]``; they enter the body equation with a minus sign:
``f_i = I_i a_i + v_i x* I_i v_i - f_i^ext`` (RBDA eq. 5.9).

Floating base (Pinocchio's free-flyer convention): q = [x, y, z, qx, qy, qz, qw, joints],
v = [base linear, base angular velocity in the base frame, joints], and tau[:6] is the wrench
[force, torque] on the base, in the base frame about its origin.

The functions below call the numba kernels of :mod:`rnea_ros.core.kernels`; the readable numpy
reference is :func:`rnea_ros.core.reference.rnea`, which tests compare to the kernels.
"""

import numba
import numpy as np

from rnea_ros.core import friction, kernels
from rnea_ros.core.checks import fast_path, matrix, prepare, raise_status, run_kernel
from rnea_ros.core.sensor import crosstalk_efforts

_BATCH_BLOCK = 64      # rows per parallel work item of inverse_dynamics_batch
_empty = np.empty
_rnea_kernel = kernels.rnea
_NAMES = ('q', 'qd', 'qdd')
_NO_BODIES = np.zeros(0, dtype=np.int64)     # rnea_batch without reaction wrenches
_NO_BODIES.flags.writeable = False


def _run_rnea(model, q, qd, qdd, f_ext, gravity, base_acceleration, ws):
    """Run the RNEA kernel into a new tau, inputs checked (the path of every non-plain call)."""
    ws = prepare(model, ws, f_ext, gravity, base_acceleration)
    tau = _empty(model.nv)
    q, qd, qdd = run_kernel(_rnea_kernel, model, ws, (q, qd, qdd), _NAMES, tau)
    return tau, ws, qd, qdd


@fast_path(_rnea_kernel)
def inverse_dynamics(model, q, qd, qdd, f_ext=None, gravity=None, base_acceleration=None,
                     ws=None):
    """Return the joint efforts tau = ID(q, qd, qdd, f_ext) (N or N m, in model order).

    ``gravity`` defaults to (0, 0, -9.81) m/s^2 in the root (world) frame.  For a fixed-base
    model, ``base_acceleration`` [linear, angular] (world frame) is the acceleration of a
    moving base (ship, mobile platform), applied as a_0 = a_base - a_g (RBDA §5.3).  Inputs so
    large that the result overflows raise ValueError.  ``f_ext`` = {link: [fx, fy, fz, tx, ty,
    tz]} are wrenches *of the environment on* the links, in each link's frame about its origin
    (the opposite of the wrenches ``f_env`` of the links on the environment that
    :mod:`rnea_ros.khalil` takes).
    """
    # The common call (float64 arrays, no options) never gets here: the fast path of the
    # decorator runs the kernel directly (the hot path of the node and of control loops).
    tau, ws, qd, qdd = _run_rnea(model, q, qd, qdd, f_ext, gravity, base_acceleration, ws)
    if model.has_joint_terms:
        _add_joint_terms(model, tau, qd, qdd)
        if model.has_crosstalk:
            _add_crosstalk(model, tau, q, ws.body_forces[model.joint_body])
    return tau


def coulomb_sign(qd, band):
    """Return the sign(qd) of Coulomb friction (qd an array): qd / band inside |qd| < band.

    The one definition of every algorithm (core and :mod:`rnea_ros.khalil`): no chatter at rest
    (:func:`rnea_ros.core.friction.smooth_sign` with the law 'linear').
    """
    return friction.smooth_sign(qd, band, 'linear')


def _friction(model, v):
    """Return the friction efforts of joint velocities v (any leading shape), offsets included.

    The law of :mod:`rnea_ros.core.friction` (Khalil 2010 eq. 31 ``Fs sign(v) + Fv v``, by
    direction, with a Stribeck term and an effort offset) with the model's table.
    """
    return friction.friction_effort(model.friction_table, v, model.coulomb_bands,
                                    model.friction_law, model.stribeck_velocities)


def joint_friction(model, qd):
    """Return the friction efforts per velocity coordinate (zero on a floating base's six).

    The model's law of :mod:`rnea_ros.core.friction`: ``Fv(qd) qd + (Fs(qd) + Fx e(qd)) s(qd)
    + off`` per joint (Khalil 2010 eq. 31 when only Fv and Fs are set); s(qd) is sign(qd),
    linear inside |qd| < v_s = model.coulomb_bands (no chatter at rest), or tanh(qd / v_s).
    """
    off = model.nv - model.njoints
    out = np.zeros(model.nv)
    out[off:] = _friction(model, np.asarray(qd, dtype=float)[off:])
    return out


def _add_joint_terms(model, tau, qd, qdd):
    """Add friction, offsets and rotor inertia to rigid-body efforts, in place (tau may be 2-D)."""
    off = model.nv - model.njoints
    tau[..., off:] += _friction(model, qd[..., off:]) + model.armature * qdd[..., off:]
    if not np.all(np.isfinite(tau)):
        raise ValueError(f"joint friction and armature overflow for robot '{model.name}': "
                         'qd or qdd too large')


def _add_crosstalk(model, tau, q, wrenches):
    """Add the joint torque sensors' crosstalk (:mod:`rnea_ros.core.sensor`), in place."""
    off = model.nv - model.njoints
    tau[..., off:] += crosstalk_efforts(model, np.asarray(q, dtype=float), wrenches)
    if not np.all(np.isfinite(tau)):
        raise ValueError(f"the torque sensor crosstalk overflows for robot '{model.name}': "
                         'inputs too large')


def reaction_wrenches(model, q, qd, qdd, f_ext=None, gravity=None, base_acceleration=None,
                      ws=None):
    """Return the (njoints, 6) joint reaction wrenches [force, torque], model joint order.

    Row j is the spatial force transmitted across joint j from its parent into its child link,
    expressed in the child link frame about the joint origin (Featherstone's f_i, RBDA §5.3,
    Pinocchio's ``data.f``).
    """
    ws = _run_rnea(model, q, qd, qdd, f_ext, gravity, base_acceleration, ws)[1]
    out = ws.body_forces[model.joint_body]
    if not np.all(np.isfinite(out)):
        raise ValueError(f"the reaction wrenches overflow for robot '{model.name}': inputs "
                         'too large')
    return out


def last_reaction_wrenches(model, ws=None):
    """Return the joint reaction wrenches of the last inverse dynamics run in ``ws``.

    After ``inverse_dynamics(model, q, qd, qdd, f_ext, gravity, ..., ws=ws)`` (``ws`` None: the
    model's default workspace, which the plain fast path uses) this equals
    ``reaction_wrenches`` with the same arguments, without a second RNEA pass: the body forces
    f_i the pass leaves in the workspace are the joint reaction wrenches (RBDA §5.3, as
    Pinocchio's ``data.f`` after ``rnea``).  A control loop that needs both pays for one pass.
    Friction and rotor inertia (joint terms) are not in f_i, as in :func:`reaction_wrenches`.
    """
    ws = model.default_workspace if ws is None else ws
    if ws.nbodies != model.nbodies:
        raise ValueError(f'ws is the workspace of a model with {ws.nbodies} bodies, robot '
                         f"'{model.name}' has {model.nbodies}")
    return ws.body_forces[model.joint_body]


def _batch(model, Q, QD, QDD, gravity, base_acceleration, ws, wrenches=False):
    """Run the batch RNEA kernel: TAU (N, nv), and the (N, njoints, 6) wrenches if asked."""
    ws = prepare(model, ws, None, gravity, base_acceleration)
    Q = matrix(Q, model.nq, 'Q', model)
    QD = matrix(QD, model.nv, 'QD', model, rows=Q.shape[0])
    QDD = matrix(QDD, model.nv, 'QDD', model, rows=Q.shape[0])
    TAU = np.empty((Q.shape[0], model.nv))
    buffers = np.empty((numba.config.NUMBA_NUM_THREADS, ws.buffer.shape[0]))
    buffers[:] = ws.buffer                         # one per thread, same f_ext and a_0
    status = np.empty(((Q.shape[0] + _BATCH_BLOCK - 1) // _BATCH_BLOCK, 2), dtype=np.int64)
    bodies = model.joint_body if wrenches else _NO_BODIES
    W = np.empty((Q.shape[0], 6 * bodies.size))
    previous = numba.set_parallel_chunksize(1)     # dynamic schedule over row blocks
    try:
        kernels.rnea_batch(model.kernel_model, buffers, Q, QD, QDD, TAU, W, bodies, status,
                           _BATCH_BLOCK)
    finally:
        numba.set_parallel_chunksize(previous)
    bad = np.flatnonzero(status[:, 0])
    if bad.size:
        code, row = status[bad[0]]
        raise_status(model, int(code), (Q[row], QD[row], QDD[row]), _NAMES, row=int(row))
    return Q, QD, QDD, TAU, (W.reshape(-1, model.njoints, 6) if wrenches else None)


def inverse_dynamics_batch(model, Q, QD, QDD, gravity=None, base_acceleration=None, ws=None):
    """Return tau for each row of the (N, nq), (N, nv), (N, nv) arrays Q, QD, QDD as (N, nv)."""
    crosstalk = model.has_crosstalk
    Q, QD, QDD, TAU, W = _batch(model, Q, QD, QDD, gravity, base_acceleration, ws, crosstalk)
    if model.has_joint_terms:
        _add_joint_terms(model, TAU, QD, QDD)
    if crosstalk:
        _add_crosstalk(model, TAU, Q, W)
    return TAU


def reaction_wrenches_batch(model, Q, QD, QDD, gravity=None, base_acceleration=None, ws=None):
    """Return the (N, njoints, 6) reaction wrenches of each row (as :func:`reaction_wrenches`)."""
    W = _batch(model, Q, QD, QDD, gravity, base_acceleration, ws, True)[4]
    if not np.all(np.isfinite(W)):
        raise ValueError(f"the reaction wrenches overflow for robot '{model.name}': inputs "
                         'too large')
    return W


def gravity_torques(model, q, gravity=None, f_ext=None, ws=None):
    """Return g(q): the efforts that hold the robot still against gravity (and f_ext)."""
    zero = np.zeros(model.nv)
    return inverse_dynamics(model, q, zero, zero, f_ext=f_ext, gravity=gravity, ws=ws)


def bias_forces(model, q, qd, gravity=None, f_ext=None, ws=None):
    """Return C(q, qd) qd + g(q): Coriolis, centrifugal and gravity efforts (tau at qdd = 0)."""
    return inverse_dynamics(model, q, qd, np.zeros(model.nv), f_ext=f_ext, gravity=gravity,
                            ws=ws)


def coriolis_torques(model, q, qd, ws=None):
    """Return C(q, qd) qd: Coriolis and centrifugal efforts alone (no gravity, qdd = 0)."""
    return inverse_dynamics(model, q, qd, np.zeros(model.nv), gravity=(0.0, 0.0, 0.0), ws=ws)


__all__ = ['inverse_dynamics', 'inverse_dynamics_batch', 'reaction_wrenches',
           'reaction_wrenches_batch', 'last_reaction_wrenches',
           'gravity_torques', 'bias_forces', 'coriolis_torques', 'joint_friction']
