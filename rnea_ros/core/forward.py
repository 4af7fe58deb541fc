"""Beyond RNEA: mass matrix (CRBA), forward dynamics (ABA) and a free-floating base.

Same notation and conventions as :mod:`rnea_ros.core.dynamics` (RBDA, ``[linear; angular]``).

- :func:`mass_matrix`: the composite rigid body algorithm (RBDA 6.2), plus the rotor inertias
  (armature) on the diagonal (seed 004 eq. 31).
- :func:`forward_dynamics`: the articulated-body algorithm (seed 002, RBDA 7.3) with joint
  friction and armature, so that ``forward_dynamics(inverse_dynamics(qdd)) == qdd``.
- :func:`floating_base_inverse_dynamics`: a free-floating robot (seed 004 sec. 7.2-7.3): the base
  acceleration follows from the composite inertia of the whole robot and the given base wrench,
  then the joint torques follow from RNEA.
"""

import numpy as np

from rnea_ros.core import kernels
from rnea_ros.core.dynamics import (_prepare, _raise_status, _vector, body_inertia,
                                    inverse_dynamics, joint_friction, joint_state, placement)
from rnea_ros.core.joints import jcalc, NQ
from rnea_ros.core.model import AXIS, IV, KIND, PARENT
from rnea_ros.core.spatial import crf, crm

_empty = np.empty      # module-level names: the per-call fast path looks up less
_aba_kernel = kernels.aba


def _tree(model, q):
    """Return per body (Xup, S, v-index slice) at q."""
    Xup, S, idx = [], [], []
    for i in range(model.nbodies):
        XJ, S_i = jcalc(model.ints[i, KIND], model.reals[i, AXIS:AXIS + 3],
                        joint_state(model, i, q, NQ))
        Xup.append(XJ @ placement(model, i))
        S.append(S_i)
        iv = model.ints[i, IV]
        idx.append(slice(iv, iv + S_i.shape[1]))
    return Xup, S, idx


def _armature_diagonal(model):
    """Return the armature per velocity coordinate (0 for the floating base)."""
    diag = np.zeros(model.nv)
    diag[model.nv - model.njoints:] = model.armature
    return diag


def mass_matrix(model, q):
    """Return the joint-space inertia matrix H(q) (nv x nv) by the composite rigid body algorithm.

    The rotor inertias (armature) of the model are added to the diagonal.
    """
    q = _vector(q, model.nq, 'q', model)
    Xup, S, idx = _tree(model, q)
    IC = [body_inertia(model, i) for i in range(model.nbodies)]
    for i in range(model.nbodies - 1, -1, -1):
        lam = model.ints[i, PARENT]
        if lam >= 0:
            IC[lam] = IC[lam] + Xup[i].T @ IC[i] @ Xup[i]
    H = np.diag(_armature_diagonal(model))
    for i in range(model.nbodies):
        F = IC[i] @ S[i]
        H[idx[i], idx[i]] += S[i].T @ F
        j = i
        while model.ints[j, PARENT] >= 0:
            F = Xup[j].T @ F
            j = model.ints[j, PARENT]
            H[idx[i], idx[j]] = F.T @ S[j]
            H[idx[j], idx[i]] = H[idx[i], idx[j]].T
    return H


def aba(model, q, qd, tau, f_ext=None, gravity=(0.0, 0.0, -9.81)):
    """Return qdd: seed 002's articulated-body algorithm, numpy reference in RBDA notation.

    ``tau`` are the efforts left for the rigid bodies (friction already taken off);
    ``f_ext`` is an (nbodies, 6) array in body frames.  Armature adds to ``d_i = S_i^T U_i``.
    """
    NB = model.nbodies
    a_0 = -np.concatenate([np.asarray(gravity, dtype=float), np.zeros(3)])
    Xup, S, idx = _tree(model, q)
    arm = _armature_diagonal(model)
    v, c, IA, pA = [None] * NB, [None] * NB, [None] * NB, [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        vJ = S[i] @ qd[idx[i]]
        v[i] = vJ if lam < 0 else Xup[i] @ v[lam] + vJ
        c[i] = crm(v[i]) @ vJ
        IA[i] = body_inertia(model, i)
        pA[i] = crf(v[i]) @ IA[i] @ v[i]
        if f_ext is not None:
            pA[i] = pA[i] - f_ext[i]
    U, d_inv, u = [None] * NB, [None] * NB, [None] * NB
    for i in range(NB - 1, -1, -1):
        U[i] = IA[i] @ S[i]
        d = S[i].T @ U[i] + np.diag(arm[idx[i]])
        if np.linalg.eigvalsh(d).min() <= 1e-12 * max(1.0, np.abs(d).max()):
            raise ValueError(_singular_message(model, i))
        d_inv[i] = np.linalg.inv(d)
        u[i] = tau[idx[i]] - S[i].T @ pA[i]
        lam = model.ints[i, PARENT]
        if lam >= 0:
            Ia = IA[i] - U[i] @ d_inv[i] @ U[i].T
            pa = pA[i] + Ia @ c[i] + U[i] @ d_inv[i] @ u[i]
            IA[lam] = IA[lam] + Xup[i].T @ Ia @ Xup[i]
            pA[lam] = pA[lam] + Xup[i].T @ pa
    qdd = np.zeros(model.nv)
    a = [None] * NB
    for i in range(NB):
        lam = model.ints[i, PARENT]
        a_prime = Xup[i] @ (a_0 if lam < 0 else a[lam]) + c[i]
        qdd[idx[i]] = d_inv[i] @ (u[i] - U[i].T @ a_prime)
        a[i] = a_prime + S[i] @ qdd[idx[i]]
    return qdd


def _singular_message(model, body):
    if model.floating_base and body == 0:
        what = 'the floating base'
    else:
        what = f"joint '{model.joint_names[model.ints[body, IV] - model.nv + model.njoints]}'"
    return (f'the mass matrix is singular at {what}: the subtree it moves has no mass or '
            'inertia along its axis (add inertia or armature)')


def forward_dynamics(model, q, qd, tau, f_ext=None, gravity=None, ws=None):
    """Return qdd = FD(q, qd, tau, f_ext) by the articulated-body algorithm (numba kernel).

    Joint friction and armature of the model are applied as in inverse_dynamics, so that
    ``forward_dynamics(q, qd, inverse_dynamics(q, qd, qdd))`` returns qdd.  A singular mass
    matrix (a massless moving subtree without armature) raises ValueError naming the joint.
    """
    # The common call (float64 arrays, no options, no friction) goes straight to the kernel.
    if ws is None and f_ext is None and gravity is None and not model.has_joint_terms:
        ws = model.default_workspace
        if not ws.custom:
            qdd = _empty(model.nv)
            try:
                status = _aba_kernel(model.kernel_model, ws.buffer, q, qd, tau, qdd)
            except (TypeError, ValueError):     # not float64 C-contiguous vectors
                status = -1
            if status == 0:
                return qdd
    ws = _prepare(model, ws, f_ext, gravity, None)
    qdd = _empty(model.nv)
    try:
        if model.has_joint_terms:
            raise TypeError             # friction is taken off tau below
        status = _aba_kernel(model.kernel_model, ws.buffer, q, qd, tau, qdd)
    except (TypeError, ValueError):     # not float64 C-contiguous vectors: convert and check
        q = _vector(q, model.nq, 'q', model)
        qd = _vector(qd, model.nv, 'qd', model)
        tau = _vector(tau, model.nv, 'tau', model)
        if model.has_joint_terms:
            tau = tau - joint_friction(model, np.nan_to_num(qd))
        status = _aba_kernel(model.kernel_model, ws.buffer, q, qd, tau, qdd)
    if status >= kernels.STATUS_SINGULAR:
        raise ValueError(_singular_message(model, status - kernels.STATUS_SINGULAR))
    if status:
        _raise_status(model, status, (q, qd, tau))
    return qdd


def floating_base_inverse_dynamics(model, q, v, qdd_joints, f_ext=None, base_wrench=None,
                                   gravity=None):
    """Return (base_acceleration, tau_joints) of a free-floating robot (seed 004 sec. 7.2).

    Given the state, the joint accelerations, the external wrenches and the wrench acting on
    the base (``base_wrench`` [force, torque], base frame about its origin; default 0: a robot
    in flight or in space), the base acceleration (same convention as qdd[:6]: base frame,
    [linear, angular]) follows from the whole robot's composite inertia I_c^0 = H[:6, :6]:
    ``I_c^0 a_b = base_wrench - tau_0[:6]``, where tau_0 is RNEA with zero base acceleration.
    """
    if not model.floating_base:
        raise ValueError('floating_base_inverse_dynamics needs a model built with '
                         'floating_base=True')
    qdd_joints = _vector(qdd_joints, model.njoints, 'qdd_joints', model)
    wrench = np.zeros(6) if base_wrench is None else _vector(base_wrench, 6, 'base_wrench',
                                                             model)
    if not np.all(np.isfinite(wrench)):
        raise ValueError(f'base_wrench is not finite: {wrench.tolist()}')
    qdd = np.concatenate([np.zeros(6), qdd_joints])
    tau_0 = inverse_dynamics(model, q, v, qdd, f_ext=f_ext, gravity=gravity)
    H = mass_matrix(model, q)
    a_base = np.linalg.solve(H[:6, :6], wrench - tau_0[:6])
    return a_base, tau_0[6:] + H[6:, :6] @ a_base
