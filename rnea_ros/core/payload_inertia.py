"""The inertial parameters of a payload: ten of them, in the frame of the link that carries it.

The payload's parameters ``phi_P = [m, h, I_O]`` (Khalil's standard parameters of
:mod:`rnea_ros.core.regressor`: mass, first moment h = m c, rotational inertia about the
origin) are expressed in the frame of link L, which may be a link merged into its body over
fixed joints (a flange, a tool frame).  With body b's frame B and the link's placement
``B_R_L, B_p_L`` in it, the body parameters are linear in the link ones (parallel axis theorem;
Khalil & Dombre, chapter 9): ``phi_b = A(R, p) phi_P`` with ``m' = m``, ``h' = R h + m p``,
``I' = R I_O R^T - m [p][p] - [p][R h] - [R h][p]`` (:func:`transform_matrix`).  Also: the
physical values (mass, COM, inertia about the COM) of ten parameters, whether an inertia is
physical, and the first-order propagation of the parameters' covariance to those values.  Used
by :mod:`rnea_ros.core.payload_estimation` (the estimator).
"""

import numpy as np

from rnea_ros.core.regressor import NPARAM
from rnea_ros.core.spatial import skew


def inertia_entries(matrix):
    """Return [xx, xy, xz, yy, yz, zz] of a symmetric 3x3 (the regressor's order)."""
    return matrix[[0, 0, 0, 1, 1, 2], [0, 1, 2, 1, 2, 2]]


def inertia_matrix(entries):
    xx, xy, xz, yy, yz, zz = entries
    return np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])


def transform_parameters(phi, R, p):
    """Return the ten parameters of frame L expressed in frame B (B_R_L = R, L's origin p in B)."""
    m, h = phi[0], R @ np.asarray(phi[1:4])
    inertia = (R @ inertia_matrix(phi[4:10]) @ R.T - m * skew(p) @ skew(p)
               - skew(p) @ skew(h) - skew(h) @ skew(p))
    return np.concatenate([[m], h + m * np.asarray(p), inertia_entries(inertia)])


def transform_matrix(R, p):
    """Return A (10 x 10) with phi_B = A phi_L (see the module doc; linear in phi)."""
    return np.column_stack([transform_parameters(e, R, p) for e in np.eye(NPARAM)])


def payload_parameters(payload):
    """Return the ten parameters [m, h, I_O] of a Payload in its link's frame."""
    m, c = payload.mass, np.asarray(payload.com)
    return np.concatenate([[m], m * c, inertia_entries(payload.inertia - m * skew(c) @ skew(c))])


def physical_values(phi):
    """Return (mass, com, inertia about the COM) of ten parameters (mass must be non-zero)."""
    m = phi[0]
    c = np.asarray(phi[1:4]) / m
    return m, c, inertia_matrix(phi[4:10]) + m * skew(c) @ skew(c)


def inertia_consistency(inertia, tolerance=1e-9):
    """Return why an inertia about the COM is not physical ('' when it is).

    Positive semi-definite and the triangle inequality of principal moments (each at most the
    sum of the two others), as a rigid body's inertia must be.
    """
    if not np.all(np.isfinite(inertia)):
        return 'inertia is not finite'
    moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
    slack = tolerance * max(1.0, float(np.abs(moments).max()))
    if moments[0] < -slack:
        return f'inertia about the COM is not positive (principal moments {moments.tolist()})'
    if moments[2] > moments[0] + moments[1] + slack:
        return ('inertia about the COM breaks the triangle inequality (principal moments '
                f'{moments.tolist()})')
    return ''


def six_moments(inertia):
    """Return [ixx, iyy, izz, ixy, ixz, iyz] (the payload parameters' order)."""
    return np.array([inertia[0, 0], inertia[1, 1], inertia[2, 2], inertia[0, 1],
                     inertia[0, 2], inertia[1, 2]])


def propagate_covariance(phi, cov):
    """Return (mass, COM sigmas (3,), inertia-about-COM sigmas (6,), mass sigma).

    First-order propagation of the parameter covariance through (m, c = h / m, I_c = I_O +
    m [c][c]) by a numeric Jacobian.
    """
    def values(x):
        m, c, inertia = physical_values(x)
        return np.concatenate([[m], c, six_moments(inertia)])

    base = values(phi)
    J = np.zeros((base.size, NPARAM))
    for k in range(NPARAM):
        step = 1e-7 * max(abs(phi[k]), 1e-3)
        x = phi.copy()
        x[k] += step
        J[:, k] = (values(x) - base) / step
    out = J @ cov @ J.T
    sig = np.sqrt(np.maximum(np.diag(out), 0.0))
    return base[0], sig[1:4], sig[4:], sig[0]
