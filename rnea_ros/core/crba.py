"""The joint-space inertia matrix H(q) by the composite rigid body algorithm (RBDA Table 6.2).

Same notation and conventions as :mod:`rnea_ros.core.reference` (RBDA, ``[linear; angular]``);
the rotor inertias (armature, Khalil 2010 eq. 31) are added to the diagonal.
"""

import numpy as np

from rnea_ros.core.checks import check_quaternion, finite_vector
from rnea_ros.core.layout import PARENT
from rnea_ros.core.reference import armature_diagonal, body_inertia, tree_transforms


def mass_matrix(model, q):
    """Return the joint-space inertia matrix H(q) (nv x nv) by the composite rigid body algorithm.

    The rotor inertias (armature) of the model are added to the diagonal.  ValueError when q has
    the wrong length or a non-finite entry (or a floating-base quaternion of zero norm).
    """
    q = finite_vector(q, model.nq, 'q', model)
    check_quaternion(model, q)
    Xup, S, idx = tree_transforms(model, q)
    IC = [body_inertia(model, i) for i in range(model.nbodies)]
    for i in range(model.nbodies - 1, -1, -1):
        lam = model.ints[i, PARENT]
        if lam >= 0:
            IC[lam] = IC[lam] + Xup[i].T @ IC[i] @ Xup[i]
    H = np.diag(armature_diagonal(model))
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


def massless_joints(model, tol=1e-9):
    """Return the joints that move no mass: H_ii = 0 at q = 0 (zero mass and axis inertia).

    Such a joint (typically a leaf link without ``<inertial>``) has a well-defined inverse
    dynamics (its effort is 0) but a singular mass matrix (forward dynamics needs an armature).
    """
    q = np.zeros(model.nq)
    if model.floating_base:
        q[6] = 1.0
    diagonal = np.diag(mass_matrix(model, q))[model.nv - model.njoints:]
    return [name for name, d in zip(model.joint_names, diagonal) if not d > tol]


def massless_joint_warning(model):
    """Return the one warning (node and ``rnea-ros``) for :func:`massless_joints`, or None."""
    names = massless_joints(model)
    if not names:
        return None
    which = f"joint '{names[0]}' moves" if len(names) == 1 else f'joints {names} move'
    return (f'{which} no mass (the links it carries have no <inertial>, or zero mass and zero '
            'inertia about its axis): its effort is always 0, and forward dynamics needs an '
            'armature for it')
