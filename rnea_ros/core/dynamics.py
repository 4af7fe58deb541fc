"""Inverse dynamics by the Recursive Newton-Euler Algorithm (seeds 000, 001, 003).

Notation of Featherstone's RBDA (seed 000): body ``i`` has parent ``lambda(i)``, joint transform
``XJ`` and motion subspace ``S_i`` from ``jcalc``, placement ``XT(i)``, spatial inertia ``I_i``;
``iXlambda(i) = XJ XT(i)``.  Spatial vectors are ``[linear; angular]`` (see
:mod:`rnea_ros.core.spatial`), all expressed in body (link) frames.

Gravity enters as a fictitious base acceleration ``a_0 = -a_g`` (seed 001), so every body force
``f_i`` is the true spatial force transmitted across joint ``i`` from its parent into body ``i``
(seed 003's joint reaction force), in the child frame about the joint origin, gravity included.

External forces ``f_ext`` are applied by the environment on a link, expressed in that link's
frame about its origin, ``[force, torque]``; they enter the body equation with a minus sign:
``f_i = I_i a_i + v_i x* I_i v_i - f_i^ext``.

Floating base (Pinocchio's free-flyer convention): q = [x, y, z, qx, qy, qz, qw, joints],
v = [base linear, base angular velocity in the base frame, joints], and tau[:6] is the wrench
[force, torque] on the base, in the base frame about its origin.

Two implementations: :func:`rnea` is the readable numpy reference in the book's notation; the
public functions below call the numba kernels of :mod:`rnea_ros.core.kernels`, which tests check
against the reference to 1e-12.
"""

import numba
import numpy as np

from rnea_ros.core import kernels
from rnea_ros.core.joints import jcalc, NQ, NV
from rnea_ros.core.model import AXIS, H, I_O, IQ, IV, KIND, MASS, P_T, PARENT, R_T
from rnea_ros.core.spatial import crf, crm, mcI, plucker, plucker_parts

_STATE_NAMES = {kernels.STATUS_BAD_Q: 'q', kernels.STATUS_BAD_QD: 'qd',
                kernels.STATUS_BAD_QDD: 'qdd'}
_BATCH_BLOCK = 64      # rows per parallel work item of inverse_dynamics_batch
_empty = np.empty      # module-level names: the per-call fast path looks up less
_rnea_kernel = kernels.rnea
_LENGTH_STATUS = {kernels.STATUS_LEN_Q: 'q', kernels.STATUS_LEN_QD: 'qd',
                  kernels.STATUS_LEN_QDD: 'qdd'}


# -- the numpy reference ------------------------------------------------------------------------

def body_inertia(model, i):
    """Return the 6x6 spatial inertia I_i of body i about its origin."""
    r = model.reals[i]
    m = r[MASS]
    c = r[H:H + 3] / m if m > 0.0 else np.zeros(3)
    I_origin = r[I_O:I_O + 9].reshape(3, 3)
    C = np.array([[0.0, -c[2], c[1]], [c[2], 0.0, -c[0]], [-c[1], c[0], 0.0]])
    return mcI(m, c, I_origin + m * C @ C)


def placement(model, i):
    """Return XT(i), the motion transform from the parent body to joint i's predecessor frame."""
    r = model.reals[i]
    return plucker(r[R_T:R_T + 9].reshape(3, 3).T, r[P_T:P_T + 3])


def joint_state(model, i, x, n):
    """Return the slice of x (q if n is NQ, else v) that belongs to body i's joint."""
    kind = model.ints[i, KIND]
    start = model.ints[i, IQ] if n is NQ else model.ints[i, IV]
    return x[start:start + n[kind]]


def rnea(model, q, qd, qdd, f_ext=None, gravity=(0.0, 0.0, -9.81), base_acceleration=None):
    """Return (tau, f): seed 000's RNEA in the book's notation, numpy 6x6 matrices.

    ``f_ext`` is an (nbodies, 6) array of external wrenches in body frames (or None);
    ``base_acceleration`` is the spatial acceleration [lin; ang] of the root, in its frame.
    ``f`` holds the body forces f_i after the backward pass (joint reaction wrenches).
    """
    NB = model.nbodies
    a_g = np.concatenate([np.asarray(gravity, dtype=float), np.zeros(3)])
    a_0 = -a_g if base_acceleration is None else np.asarray(base_acceleration) - a_g
    tau = np.zeros(model.nv)
    Xup, S, v, a, f = [None] * NB, [None] * NB, [None] * NB, [None] * NB, [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        XJ, S[i] = jcalc(model.ints[i, KIND], model.reals[i, AXIS:AXIS + 3],
                         joint_state(model, i, q, NQ))
        vJ = S[i] @ joint_state(model, i, qd, NV)
        Xup[i] = XJ @ placement(model, i)
        if lam < 0:
            v[i] = vJ
            a[i] = Xup[i] @ a_0 + S[i] @ joint_state(model, i, qdd, NV)
        else:
            v[i] = Xup[i] @ v[lam] + vJ
            a[i] = Xup[i] @ a[lam] + S[i] @ joint_state(model, i, qdd, NV) + crm(v[i]) @ vJ
        I_i = body_inertia(model, i)
        f[i] = I_i @ a[i] + crf(v[i]) @ I_i @ v[i]
        if f_ext is not None:
            f[i] = f[i] - f_ext[i]
    for i in range(NB - 1, -1, -1):
        iv = model.ints[i, IV]
        tau[iv:iv + S[i].shape[1]] = S[i].T @ f[i]
        lam = model.ints[i, PARENT]
        if lam >= 0:
            f[lam] = f[lam] + Xup[i].T @ f[i]
    return tau, np.array(f).reshape(NB, 6)


# -- input handling -----------------------------------------------------------------------------

def _vector(x, n, what, model):
    """Return x as a contiguous float64 vector of length n, or raise ValueError."""
    try:
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{what} must be a vector of {n} numbers') from None
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f'{what} has shape {arr.shape}, expected ({n},) for robot '
                         f"'{model.name}' (nq={model.nq}, nv={model.nv})")
    return arr


def _matrix(x, n, what, model, rows=None):
    try:
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{what} must be an (N, {n}) array of numbers') from None
    if arr.ndim != 2 or arr.shape[1] != n or (rows is not None and arr.shape[0] != rows):
        expected = f'({rows if rows is not None else "N"}, {n})'
        raise ValueError(f'{what} has shape {arr.shape}, expected {expected} for robot '
                         f"'{model.name}'")
    return arr


def coordinate_name(model, index, velocity):
    """Return a readable name for entry `index` of q (velocity=False) or of v/tau."""
    offset = (6 if velocity else 7) if model.floating_base else 0
    if index < offset:
        names = ('base_vx', 'base_vy', 'base_vz', 'base_wx', 'base_wy', 'base_wz') if velocity \
            else ('base_x', 'base_y', 'base_z', 'base_qx', 'base_qy', 'base_qz', 'base_qw')
        return names[index]
    return model.joint_names[index - offset]


def _raise_status(model, status, arrays, row=None):
    where = '' if row is None else f' (sample {row})'
    if status in _LENGTH_STATUS:
        name, n = _LENGTH_STATUS[status], model.nq if status == kernels.STATUS_LEN_Q else model.nv
        x = arrays[status - kernels.STATUS_LEN_Q]
        raise ValueError(f'{name} has shape {np.shape(x)}, expected ({n},) for robot '
                         f"'{model.name}' (nq={model.nq}, nv={model.nv})")
    if status == kernels.STATUS_BAD_QUATERNION:
        raise ValueError(f'base orientation quaternion q[3:7] is zero{where}')
    name = _STATE_NAMES[status]
    x = arrays[status - 1]
    bad = int(np.flatnonzero(~np.isfinite(x))[0])
    raise ValueError(f'{name}[{bad}] ({coordinate_name(model, bad, name != "q")}) is '
                     f'{x[bad]}{where}: inputs must be finite')


def _gravity_acceleration(gravity, base_acceleration, out):
    """Write a_0 = a_base - a_g, a [lin; ang] 6-vector in the root frame, into out."""
    try:
        g = np.asarray((0.0, 0.0, -9.81) if gravity is None else gravity,
                       dtype=np.float64).reshape(3)
    except (TypeError, ValueError):
        raise ValueError(f'gravity must be 3 numbers, got {gravity!r}') from None
    if not np.all(np.isfinite(g)):
        raise ValueError(f'gravity must be finite, got {g.tolist()}')
    out[:3] = -g
    out[3:] = 0.0
    if base_acceleration is not None:
        try:
            ab = np.asarray(base_acceleration, dtype=np.float64).reshape(6)
        except (TypeError, ValueError):
            ab = np.full(6, np.nan)
        if not np.all(np.isfinite(ab)):
            raise ValueError('base_acceleration must be 6 finite numbers [linear, angular], '
                             f'got {base_acceleration!r}')
        out += ab
    return out


def external_wrenches(model, f_ext, out=None):
    """Return the (nbodies, 6) array of external wrenches in body frames for a {link: wrench}.

    Each wrench is applied by the environment on the link, in the link frame about its origin;
    wrenches on links merged by fixed joints are moved to their body; wrenches on links fixed to
    the world (fixed base) have no effect on the joints.
    """
    out = np.zeros((model.nbodies, 6)) if out is None else out
    out[:] = 0.0
    if not f_ext:
        return out
    if not isinstance(f_ext, dict):
        raise ValueError('f_ext must be a dict {link_name: [fx, fy, fz, tx, ty, tz]}')
    for link, wrench in f_ext.items():
        try:
            body, R, p = model.link_body[link]
        except (KeyError, TypeError):
            raise ValueError(f"f_ext names link '{link}', which robot '{model.name}' does not "
                             'have') from None
        try:
            w = np.asarray(wrench, dtype=np.float64).reshape(6)
        except (TypeError, ValueError):
            raise ValueError(f"f_ext['{link}'] must be 6 numbers [fx, fy, fz, tx, ty, tz]") \
                from None
        if not np.all(np.isfinite(w)):
            raise ValueError(f"f_ext['{link}'] is not finite: {w.tolist()}")
        if body < 0:
            continue
        force = R @ w[:3]
        out[body, :3] += force
        out[body, 3:] += R @ w[3:] + np.cross(p, force)
    return out


# -- public API -----------------------------------------------------------------------------------

def _not_a_model(model):
    """Return the TypeError for an argument that is not a RobotModel (e.g. a Khalil table)."""
    hint = ': build one with rnea_ros.khalil.model_from_mdh(table)' if hasattr(model, 'frames') \
        else ''
    return TypeError(f'expected a RobotModel, got {type(model).__name__}{hint}')


def _prepare(model, ws, f_ext, gravity, base_acceleration):
    """Return the workspace with f_ext and a_0 of this call written into it."""
    if ws is None:
        try:
            ws = model.default_workspace
        except AttributeError:
            raise _not_a_model(model) from None
    elif ws.nbodies != model.nbodies:
        raise ValueError(f'ws is the workspace of a model with {ws.nbodies} bodies, robot '
                         f"'{model.name}' has {model.nbodies}: make one with Workspace(model)")
    if f_ext is None and gravity is None and base_acceleration is None and not ws.custom:
        return ws
    if base_acceleration is not None and model.floating_base:
        raise ValueError('base_acceleration is for fixed-base models; a floating base takes '
                         'its acceleration in qdd[:6]')
    if f_ext is None and gravity is None and base_acceleration is None:
        if ws.custom:
            ws.reset()
    else:
        ws.custom = True
        external_wrenches(model, f_ext, ws.fext)
        _gravity_acceleration(gravity, base_acceleration, ws.a0)
    return ws


def _run_rnea(model, q, qd, qdd, f_ext, gravity, base_acceleration, ws):
    """Run the RNEA kernel into a new tau; the fast path converts nothing (see kernels)."""
    ws = _prepare(model, ws, f_ext, gravity, base_acceleration)
    tau = _empty(model.nv)
    try:
        status = _rnea_kernel(model.kernel_model, ws.buffer, q, qd, qdd, tau)
    except (TypeError, ValueError):   # not float64 C-contiguous vectors: convert, check, retry
        q = _vector(q, model.nq, 'q', model)
        qd = _vector(qd, model.nv, 'qd', model)
        qdd = _vector(qdd, model.nv, 'qdd', model)
        status = _rnea_kernel(model.kernel_model, ws.buffer, q, qd, qdd, tau)
    if status:
        _raise_status(model, status, (q, qd, qdd))
    return tau, ws, qd, qdd


def inverse_dynamics(model, q, qd, qdd, f_ext=None, gravity=None, base_acceleration=None,
                     ws=None):
    """Return the joint efforts tau = ID(q, qd, qdd, f_ext) (N or N m, in model order).

    ``gravity`` defaults to (0, 0, -9.81) m/s^2 in the root (world) frame.  For a fixed-base
    model, ``base_acceleration`` [linear, angular] (world frame) is the acceleration of a
    moving base (ship, mobile platform), applied as a_0 = a_base - a_g (seed 001).
    ``f_ext`` = {link: [fx, fy, fz, tx, ty, tz]} are wrenches applied *by the environment on*
    the links, in each link's frame about its origin (the opposite of the wrenches ``f_env`` of
    the links on the environment taken by :mod:`rnea_ros.khalil`).
    """
    # The common call (float64 arrays, no options) goes straight to the kernel: this function
    # is the hot path of the node and of user control loops.
    if ws is None and f_ext is None and gravity is None and base_acceleration is None:
        try:
            ws = model.default_workspace
        except AttributeError:
            raise _not_a_model(model) from None
        if not ws.custom:
            tau = _empty(model.nv)
            try:
                status = _rnea_kernel(model.kernel_model, ws.buffer, q, qd, qdd, tau)
            except (TypeError, ValueError):   # not float64 C-contiguous vectors
                status = -1
            if status == 0:
                if model.has_joint_terms:
                    _add_joint_terms(model, tau, qd, qdd)
                return tau
    tau, ws, qd, qdd = _run_rnea(model, q, qd, qdd, f_ext, gravity, base_acceleration, ws)
    if model.has_joint_terms:
        _add_joint_terms(model, tau, qd, qdd)
    return tau


def coulomb_sign(qd, band):
    """Return the sign(qd) of Coulomb friction (qd an array): qd / band inside |qd| < band.

    The one definition of every algorithm (core and :mod:`rnea_ros.khalil`): no chatter at rest.
    """
    return np.clip(qd / band, -1.0, 1.0)


def _friction(model, v):
    """Return Fs sign(v) + Fv v for joint velocities v (any leading shape), seed 004 eq. 31."""
    return (model.friction_coulomb * coulomb_sign(v, model.coulomb_band)
            + model.friction_viscous * v)


def joint_friction(model, qd):
    """Return the friction efforts Fs sign(qd) + Fv qd per velocity coordinate (seed 004 eq. 31).

    sign(qd) is replaced by qd / band inside |qd| < model.coulomb_band (no chatter at rest).
    """
    off = model.nv - model.njoints
    out = np.zeros(model.nv)
    out[off:] = _friction(model, qd[off:])
    return out


def _add_joint_terms(model, tau, qd, qdd):
    """Add friction and rotor inertia to rigid-body efforts, in place (tau may be 2-D)."""
    off = model.nv - model.njoints
    tau[..., off:] += _friction(model, qd[..., off:]) + model.armature * qdd[..., off:]


def reaction_wrenches(model, q, qd, qdd, f_ext=None, gravity=None, base_acceleration=None,
                      ws=None):
    """Return the (njoints, 6) joint reaction wrenches [force, torque], model joint order.

    Row j is the spatial force transmitted across joint j from its parent into its child link,
    expressed in the child link frame about the joint origin (Featherstone's f_i, seed 003's
    joint reaction force, Pinocchio's ``data.f``).
    """
    ws = _run_rnea(model, q, qd, qdd, f_ext, gravity, base_acceleration, ws)[1]
    return ws.body_forces[model.joint_body]


def inverse_dynamics_batch(model, Q, QD, QDD, gravity=None, base_acceleration=None, ws=None):
    """Return tau for each row of the (N, nq), (N, nv), (N, nv) arrays Q, QD, QDD as (N, nv)."""
    ws = _prepare(model, ws, None, gravity, base_acceleration)
    Q = _matrix(Q, model.nq, 'Q', model)
    QD = _matrix(QD, model.nv, 'QD', model, rows=Q.shape[0])
    QDD = _matrix(QDD, model.nv, 'QDD', model, rows=Q.shape[0])
    TAU = np.empty((Q.shape[0], model.nv))
    buffers = np.empty((numba.config.NUMBA_NUM_THREADS, ws.buffer.shape[0]))
    buffers[:] = ws.buffer                         # one per thread, same f_ext and a_0
    status = np.empty(((Q.shape[0] + _BATCH_BLOCK - 1) // _BATCH_BLOCK, 2), dtype=np.int64)
    previous = numba.set_parallel_chunksize(1)     # dynamic schedule over row blocks
    try:
        kernels.rnea_batch(model.kernel_model, buffers, Q, QD, QDD, TAU, status, _BATCH_BLOCK)
    finally:
        numba.set_parallel_chunksize(previous)
    bad = np.flatnonzero(status[:, 0])
    if bad.size:
        code, row = status[bad[0]]
        _raise_status(model, int(code), (Q[row], QD[row], QDD[row]), row=int(row))
    if model.has_joint_terms:
        _add_joint_terms(model, TAU, QD, QDD)
    return TAU


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
           'gravity_torques', 'bias_forces', 'coriolis_torques', 'external_wrenches', 'rnea']


def link_pose(model, q, link):
    """Return (R, p): the orientation and origin of a link in the root (world) frame at q."""
    q = _vector(q, model.nq, 'q', model)
    try:
        body, R_bl, p_bl = model.link_body[link]
    except KeyError:
        raise ValueError(f"robot '{model.name}' has no link '{link}'") from None
    chain = []
    while body >= 0:
        chain.append(body)
        body = model.ints[body, PARENT]
    R, p = np.eye(3), np.zeros(3)
    for b in reversed(chain):
        X = jcalc(model.ints[b, KIND], model.reals[b, AXIS:AXIS + 3],
                  joint_state(model, b, q, NQ))[0] @ placement(model, b)
        E, r = plucker_parts(X)             # b_R_parent, origin of b in the parent frame
        p = p + R @ r
        R = R @ E.T
    return R @ R_bl, p + R @ p_bl
