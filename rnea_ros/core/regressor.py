"""The joint-torque regressor: inverse dynamics is linear in the inertial parameters.

``tau = Y(q, qd, qdd) phi`` (RBDA section 5.3's remark on linearity; Khalil and Dombre,
*Modeling, identification and control of robots*, chapters 9 and 12; Gautier and Khalil 1990).

Parameters of one body (10 per body, in the body frame)::

    phi_i = [m, m c_x, m c_y, m c_z, I_xx, I_xy, I_xz, I_yy, I_yz, I_zz]

with I the rotational inertia **about the body origin** (I = I_c - m [c][c]), i.e. Khalil's
standard parameters [M, MX, MY, MZ, XX, XY, XZ, YY, YZ, ZZ] of link j.  (Pinocchio's
``computeJointTorqueRegressor`` uses the same quantities ordered [m, mc, Ixx, Ixy, Iyy, Ixz,
Iyz, Izz]; see :data:`PINOCCHIO_ORDER`.)

A *body* is a moving joint's child link with every link hanging below it on fixed joints merged
into it (see :mod:`rnea_ros.core.model`): its frame is that child link's frame, and its
parameters are the lumped ones.  A floating base is body 0 (the root link).

With ``friction=True`` four columns per joint follow the 10 nbodies rigid-body columns, in model
joint order: ``[Fv_j, Fs_j, Ia_j, off_j]`` for ``tau_j += Fv qd_j + Fs s(qd_j) + Ia qdd_j +
off_j`` (Khalil 2010, eq. 31, plus a constant offset): the symmetric case (Fv+ = Fv-, Fs+ = Fs-,
no Stribeck term) of the friction law of :mod:`rnea_ros.core.friction`, with the model's sign
s() (law and ``coulomb_band``), as :func:`rnea_ros.core.dynamics.joint_friction`.  The columns
of the whole law are :func:`rnea_ros.core.friction.basis`.

:func:`regressor_reference` is the readable numpy version (6x6 matrices of RBDA); the public
functions call the numba kernels of :mod:`rnea_ros.core.kernels.regressor`, which the tests
check against it.
"""

import numba
import numpy as np

from rnea_ros.core.checks import matrix as _matrix, prepare as _prepare
from rnea_ros.core.checks import raise_status as _raise_status, vector as _vector
from rnea_ros.core.friction import FS_POS, FV_POS, OFF, smooth_sign
from rnea_ros.core.kernels import regressor as kernels_regressor
from rnea_ros.core.layout import DEFAULT_GRAVITY, H, I_O, MASS, PARENT
from rnea_ros.core.reference import tree_transforms
from rnea_ros.core.spatial import crf, crm, skew

NPARAM = kernels_regressor.NPARAM
NJOINT_PARAM = 4
PARAM_NAMES = ('M', 'MX', 'MY', 'MZ', 'XX', 'XY', 'XZ', 'YY', 'YZ', 'ZZ')   # Khalil's names
JOINT_PARAM_NAMES = ('Fv', 'Fs', 'Ia', 'off')
# Column k of ours is column PINOCCHIO_ORDER[k] of Pinocchio's block of a body.
PINOCCHIO_ORDER = (0, 1, 2, 3, 4, 5, 7, 6, 8, 9)
_BATCH_BLOCK = 32
_SERIAL_ROWS = 64      # batches up to this size run on the calling thread
_empty = np.empty
_kernel = kernels_regressor.regressor


def inertial_parameters(model):
    """Return phi (10 nbodies,) of the model: per body [m, h, I_O xx xy xz yy yz zz]."""
    r = model.reals
    inertia = r[:, I_O:I_O + 9]
    return np.column_stack([r[:, MASS], r[:, H:H + 3], inertia[:, [0, 1, 2, 4, 5, 8]]]).ravel()


def joint_parameters(model):
    """Return the joint parameters (4 njoints,): per joint [Fv, Fs, Ia, off] of the model.

    Fv and Fs are the positive-direction values (exact for a symmetric law).
    """
    t = model.friction_table
    return np.column_stack([t[:, FV_POS], t[:, FS_POS], model.armature, t[:, OFF]]).ravel()


def parameter_names(model, friction=False, numbered=False):
    """Return readable names of the columns: ``XX[link]``, ``Fv[joint]``.

    ``numbered=True`` gives Khalil's style ``XX2``, ``Fv2`` (body and joint numbers from 1, in
    model order), which for an MDH robot (:mod:`rnea_ros.khalil.mdh`) are the table's j.
    """
    if numbered:
        names = [f'{p}{b + 1}' for b in range(model.nbodies) for p in PARAM_NAMES]
        joints = [f'{p}{j + 1}' for j in range(model.njoints) for p in JOINT_PARAM_NAMES]
    else:
        names = [f'{p}[{link}]' for link in model.body_links for p in PARAM_NAMES]
        joints = [f'{p}[{j}]' for j in model.joint_names for p in JOINT_PARAM_NAMES]
    return names + (joints if friction else [])


def spatial_inertia(phi):
    """Return the 6x6 spatial inertia [[m 1, -[h]], [[h], I_O]] of ten parameters (lin; ang)."""
    m, h = phi[0], np.asarray(phi[1:4])
    xx, xy, xz, yy, yz, zz = phi[4:10]
    out = np.zeros((6, 6))
    out[:3, :3] = m * np.eye(3)
    out[:3, 3:] = -skew(h)
    out[3:, :3] = skew(h)
    out[3:, 3:] = [[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]]
    return out


def body_regressor(v, a):
    """Return A (6 x 10) with the body force I a + v x* I v = A phi (numpy reference)."""
    A = np.zeros((6, NPARAM))
    for k in range(NPARAM):
        unit = np.zeros(NPARAM)
        unit[k] = 1.0
        inertia = spatial_inertia(unit)
        A[:, k] = inertia @ a + crf(v) @ inertia @ v
    return A


def regressor_reference(model, q, qd, qdd, gravity=DEFAULT_GRAVITY):
    """Return Y (nv, 10 nbodies), rigid body only, with 6x6 matrices in the RBDA's notation."""
    NB = model.nbodies
    a_0 = -np.concatenate([np.asarray(gravity, dtype=float), np.zeros(3)])
    Xup, S, idx = tree_transforms(model, q)
    v, a = [None] * NB, [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        vJ, aJ = S[i] @ qd[idx[i]], S[i] @ qdd[idx[i]]
        if lam < 0:
            v[i], a[i] = vJ, Xup[i] @ a_0 + aJ
        else:
            v[i] = Xup[i] @ v[lam] + vJ
            a[i] = Xup[i] @ a[lam] + aJ + crm(v[i]) @ vJ
    Y = np.zeros((model.nv, NPARAM * NB))
    for i in range(NB):
        F = body_regressor(v[i], a[i])            # 6 x 10, forces of body i per parameter
        j = i
        while j >= 0:
            Y[idx[j], NPARAM * i:NPARAM * (i + 1)] = S[j].T @ F
            F = Xup[j].T @ F
            j = model.ints[j, PARENT]
    return Y


def joint_columns(model, qd, qdd):
    """Return the (..., nv, 4 njoints) friction/armature/offset columns for velocities qd."""
    qd = np.asarray(qd, dtype=float)
    qdd = np.asarray(qdd, dtype=float)
    nj, off = model.njoints, model.nv - model.njoints
    out = np.zeros(qd.shape[:-1] + (model.nv, NJOINT_PARAM * nj))
    rows = off + np.arange(nj)
    cols = NJOINT_PARAM * np.arange(nj)
    out[..., rows, cols] = qd[..., off:]
    out[..., rows, cols + 1] = smooth_sign(qd[..., off:], model.coulomb_bands, model.friction_law)
    out[..., rows, cols + 2] = qdd[..., off:]
    out[..., rows, cols + 3] = 1.0
    return out


def regressor(model, q, qd, qdd, gravity=None, base_acceleration=None, friction=False, ws=None):
    """Return Y (nv, 10 nbodies [+ 4 njoints]) with tau = Y phi (see the module doc).

    ``inverse_dynamics(model, q, qd, qdd) == regressor(model, q, qd, qdd) @
    inertial_parameters(model)`` for a model without joint friction; with ``friction=True``,
    append :func:`joint_parameters` to phi.
    """
    Y = _empty((model.nv, NPARAM * model.nbodies))
    if ws is None and gravity is None and base_acceleration is None and not friction:
        ws = model.default_workspace           # the common call: straight to the kernel
        if not ws.custom:
            try:
                status = _kernel(model.kernel_model, ws.buffer, q, qd, qdd, Y)
            except (TypeError, ValueError):    # not float64 C-contiguous vectors
                status = -1
            if status == 0:
                return Y
    ws = _prepare(model, ws, None, gravity, base_acceleration)
    status = kernels_regressor.regressor(model.kernel_model, ws.buffer, q, qd, qdd, Y) \
        if _is_vec(q, qd, qdd) else -1
    if status == -1:
        q = _vector(q, model.nq, 'q', model)
        qd = _vector(qd, model.nv, 'qd', model)
        qdd = _vector(qdd, model.nv, 'qdd', model)
        status = kernels_regressor.regressor(model.kernel_model, ws.buffer, q, qd, qdd, Y)
    if status:
        _raise_status(model, status, (q, qd, qdd))
    if friction:
        Y = np.concatenate([Y, joint_columns(model, qd, qdd)], axis=1)
    return Y


def _is_vec(*arrays):
    for x in arrays:
        if not (isinstance(x, np.ndarray) and x.dtype == np.float64 and x.ndim == 1
                and x.flags.c_contiguous):
            return False
    return True


def regressor_batch(model, Q, QD, QDD, gravity=None, base_acceleration=None, friction=False,
                    ws=None, out=None):
    """Return the regressors of N samples stacked: (N nv, p), rows of sample k at k nv.

    ``out``: a float64 C-contiguous (N nv, 10 nbodies) array to write into and return (without
    ``friction``), so that a loop over chunks of samples reuses one buffer instead of touching
    fresh memory for every chunk (82 kB per sample on a 32-joint humanoid).
    """
    ws = _prepare(model, ws, None, gravity, base_acceleration)
    Q = _matrix(Q, model.nq, 'Q', model)
    QD = _matrix(QD, model.nv, 'QD', model, rows=Q.shape[0])
    QDD = _matrix(QDD, model.nv, 'QDD', model, rows=Q.shape[0])
    n, nv = Q.shape[0], model.nv
    Y = _output(out, (n * nv, NPARAM * model.nbodies), friction)   # every entry written
    if n <= _SERIAL_ROWS:                 # a few samples: waking the thread pool costs more
        for k in range(n):
            status = kernels_regressor.regressor(model.kernel_model, ws.buffer, Q[k], QD[k],
                                                 QDD[k], Y[k * nv:(k + 1) * nv])
            if status:
                _raise_status(model, status, (Q[k], QD[k], QDD[k]), row=k)
        return _with_joint_columns(model, Y, QD, QDD, friction)
    buffers = np.empty((numba.config.NUMBA_NUM_THREADS, ws.buffer.shape[0]))
    buffers[:] = ws.buffer
    status = np.empty(((n + _BATCH_BLOCK - 1) // _BATCH_BLOCK, 2), dtype=np.int64)
    previous = numba.set_parallel_chunksize(1)
    try:
        kernels_regressor.regressor_batch(model.kernel_model, buffers, Q, QD, QDD, Y, status,
                                          _BATCH_BLOCK)
    finally:
        numba.set_parallel_chunksize(previous)
    bad = np.flatnonzero(status[:, 0])
    if bad.size:
        code, row = status[bad[0]]
        _raise_status(model, int(code), (Q[row], QD[row], QDD[row]), row=int(row))
    return _with_joint_columns(model, Y, QD, QDD, friction)


def _output(out, shape, friction):
    """Return ``out`` checked for the batch (or a new array when it is None)."""
    if out is None:
        return np.empty(shape)
    if friction:
        raise ValueError('out= is for the inertial columns only (friction=False)')
    if not (isinstance(out, np.ndarray) and out.shape == shape and out.dtype == np.float64
            and out.flags.c_contiguous and out.flags.writeable):
        raise ValueError(f'out must be a writable C-contiguous float64 array of shape {shape}')
    return out


def _with_joint_columns(model, Y, QD, QDD, friction):
    if not friction:
        return Y
    J = joint_columns(model, QD, QDD).reshape(Y.shape[0], -1)
    return np.concatenate([Y, J], axis=1)


__all__ = ['regressor', 'regressor_batch', 'inertial_parameters', 'joint_parameters',
           'parameter_names', 'regressor_reference', 'PINOCCHIO_ORDER']
