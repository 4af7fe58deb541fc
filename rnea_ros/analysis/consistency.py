"""Fitting, second stage: the physically consistent full parameter set (step 5 of identification).

Per body the pseudo-inertia must be positive definite, a linear matrix inequality in its ten
parameters (Wensing, Kim and Slotine 2017); the full set nearest the weighted estimate in the
metric of the data, pulled toward the nominal URDF where the data is silent, is found by a
barrier method (Boyd and Vandenberghe 2004).
"""

import math

import numpy as np

from rnea_ros.analysis.friction_models import friction_models
from rnea_ros.core.regressor import inertial_parameters, NPARAM


MIN_EXTENT = 1e-3            # m: no body is thinner (keeps J strictly positive, URDF round trip)

# Prior scales by first letter: Fv.., off, Ia, and X (sensor crosstalk: 1 % of a bending moment).
_JOINT_SCALE = {'F': 0.1, 'o': 0.1, 'I': 0.01, 'X': 0.01}


def pseudo_inertia(phi10):
    """Return the 4x4 pseudo-inertia J of ten parameters [m, h, I_O xx xy xz yy yz zz]."""
    m, h = phi10[0], phi10[1:4]
    xx, xy, xz, yy, yz, zz = phi10[4:10]
    inertia = np.array([[xx, xy, xz], [xy, yy, yz], [xz, yz, zz]])
    J = np.zeros((4, 4))
    J[:3, :3] = 0.5 * np.trace(inertia) * np.eye(3) - inertia
    J[:3, 3] = J[3, :3] = h
    J[3, 3] = m
    return J


def parameters_of_pseudo_inertia(J):
    """Return the ten parameters of a pseudo-inertia J (inverse of :func:`pseudo_inertia`)."""
    sigma = J[:3, :3]
    inertia = np.trace(sigma) * np.eye(3) - sigma
    return np.array([J[3, 3], J[0, 3], J[1, 3], J[2, 3], inertia[0, 0], inertia[0, 1],
                     inertia[0, 2], inertia[1, 1], inertia[1, 2], inertia[2, 2]])


# J is linear in the ten parameters: J(phi) = sum_i phi_i PSEUDO_BASIS[i].
PSEUDO_BASIS = np.array([pseudo_inertia(e) for e in np.eye(NPARAM)])


def pseudo_inertias(phi):
    """Return the (nb, 4, 4) pseudo-inertias of (10 nb,) inertial parameters."""
    return np.einsum('bi,ijk->bjk', np.reshape(phi, (-1, NPARAM)), PSEUDO_BASIS)


def is_physically_consistent(phi10, tol=0.0):
    """Return True if the pseudo-inertia of ten parameters is positive definite (m > 0 etc.)."""
    return bool(np.linalg.eigvalsh(pseudo_inertia(phi10)).min() > tol)


def strictly_consistent(phi10, floor=1e-6, mass=0.0):
    """Return ten parameters near ``phi10`` whose pseudo-inertia is positive definite.

    The eigenvalues of J are raised to at least ``floor`` times the largest of them and
    ``mass`` (kg: a reference for a body without inertia): a strictly feasible point for
    :func:`consistent_least_squares`.
    """
    w, V = np.linalg.eigh(pseudo_inertia(phi10))
    low = floor * max(w.max(), mass, 1e-12)
    return parameters_of_pseudo_inertia((V * np.maximum(w, low)) @ V.T)


def consistent_least_squares(B, y, x0, nbodies, positive, gap=1e-8, growth=20.0):
    """Return argmin ||B x - y||^2 subject to J(phi_b) > 0 per body and x_i > 0 for ``positive``.

    ``x = [phi (10 nbodies), others]``: every body's pseudo-inertia must be positive definite,
    a linear matrix inequality in phi (Wensing, Kim and Slotine 2017), and the entries
    ``positive`` of x positive: a convex problem, so its minimum is unique when B has full
    column rank.  The barrier method (Boyd and Vandenberghe 2004, *Convex Optimization*,
    section 11.3) from the strictly feasible ``x0``: minimise
    ``t ||B x - y||^2 - sum_b log det J_b - sum_i log x_i`` by Newton's method for t growing by
    ``growth`` until ``(4 nbodies + len(positive)) / t`` (the gap to the true minimum) is below
    ``gap`` times the unconstrained minimum (at least 1).  The barrier's Hessian is ``G^T G``
    with ``G_i = vec(C^-1 A_i C^-T)`` (J = C C^T, A_i = d J / d phi_i), so each Newton step is
    the linear least-squares problem of the stacked ``[sqrt(2t) B; G; diag(1 / x_positive)]``,
    solved by QR: the conditioning of B is not squared.  The step is kept inside the domain
    (largest step from the generalised eigenvalues of (dJ, J)) and shortened until the
    objective falls (Armijo).
    """
    from scipy.linalg import solve_triangular
    x = np.array(x0, dtype=float)
    n, rigid = x.size, NPARAM * nbodies
    positive = np.asarray(positive, dtype=int)
    degree = 4 * nbodies + positive.size
    if not (np.all(x[positive] > 0.0) and all(
            is_physically_consistent(p) for p in x[:rigid].reshape(-1, NPARAM))):
        raise ValueError('consistent_least_squares needs a strictly feasible start')
    identity = np.tile(np.eye(4).ravel(), nbodies)

    def misfit(x):
        r = B @ x - y
        return float(r @ r), r

    def barrier(x):
        try:
            C = np.linalg.cholesky(pseudo_inertias(x[:rigid]))
        except np.linalg.LinAlgError:
            return math.inf
        if np.any(x[positive] <= 0.0):
            return math.inf
        return (-2.0 * np.log(np.diagonal(C, axis1=1, axis2=2)).sum()
                - np.log(x[positive]).sum())

    def newton_step(x, t):
        """Return (dx, squared Newton decrement, largest feasible step)."""
        _, r = misfit(x)
        Ci = np.linalg.inv(np.linalg.cholesky(pseudo_inertias(x[:rigid])))
        T = np.einsum('bjk,ikl,bml->bijm', Ci, PSEUDO_BASIS, Ci)      # C^-1 A_i C^-T
        G = np.zeros((16 * nbodies, n))
        for b in range(nbodies):
            G[16 * b:16 * (b + 1), NPARAM * b:NPARAM * (b + 1)] = T[b].reshape(NPARAM, 16).T
        D = np.zeros((positive.size, n))
        D[np.arange(positive.size), positive] = 1.0 / x[positive]
        root = math.sqrt(2.0 * t)
        S = np.vstack([root * B, G, D])
        e = np.concatenate([root * r, -identity, -np.ones(positive.size)])
        Q, R = np.linalg.qr(S)
        dx = -solve_triangular(R, Q.T @ e)
        decrement = float(np.sum((S @ dx) ** 2))
        dJ = pseudo_inertias(dx[:rigid])
        lowest = np.linalg.eigvalsh(Ci @ dJ @ Ci.transpose(0, 2, 1)).min()
        largest = -1.0 / lowest if lowest < 0.0 else math.inf
        falling = dx[positive] < 0.0
        if falling.any():
            largest = min(largest, float(np.min(-x[positive][falling] / dx[positive][falling])))
        return dx, decrement, largest

    unconstrained = misfit(np.linalg.lstsq(B, y, rcond=None)[0])[0]
    tol = gap * max(unconstrained, 1.0)
    t = degree / max(misfit(x)[0] - unconstrained, tol)
    for _ in range(60):
        for _ in range(50):                      # centring: Newton with a line search
            dx, decrement, largest = newton_step(x, t)
            if decrement < 2e-6:
                break
            value = t * misfit(x)[0] + barrier(x)
            s = min(1.0, 0.99 * largest)
            while s > 1e-10:
                trial = x + s * dx
                if t * misfit(trial)[0] + barrier(trial) <= value - 0.25 * s * decrement:
                    break
                s *= 0.5
            else:
                break                            # no decrease left at this precision
            x = trial
        if degree / t < tol:
            break
        t *= growth
    return x


def _prior_scales(model, phi_nom):
    """Return a scale per standard parameter: what counts as a large change of it.

    Per body, from its nominal mass m and size L: m for the mass, m L / 2 for the first
    moments (its centre of mass moving by half its size), m L^2 for the inertias, where L is
    twice the RMS distance of its mass from its frame's origin (sqrt(tr Sigma / m), Sigma the
    second moments of the pseudo-inertia), at most 0.1 m.  A 15 g finger thus keeps its grams
    and its millimetres where the data does not decide them.  A body without nominal mass
    (no size to follow) gets 5 % of the robot's mean body mass and L = 0.1 m.
    """
    phi = phi_nom.reshape(-1, NPARAM)
    m = phi[:, 0]
    trace_sigma = 0.5 * (phi[:, 4] + phi[:, 7] + phi[:, 9])      # tr Sigma = tr I_O / 2
    massive = m > 0.0
    ref = np.where(massive, m, 0.05 * max(model.total_mass, 1e-3) / max(model.nbodies, 1))
    size = np.full(m.size, 0.1)
    rms = np.sqrt(np.clip(trace_sigma[massive], 0.0, None) / m[massive])
    size[massive] = np.minimum(0.1, 2.0 * rms)
    size = np.maximum(size, MIN_EXTENT)
    per = np.column_stack([ref, *(0.5 * ref * size,) * 3, *(ref * size ** 2,) * 6])
    return per.ravel()


def _joint_scales(fm, nj):
    """Return the prior scale of every joint parameter of a friction model (nj, P)."""
    return np.tile([_JOINT_SCALE[g[0]] for g in fm.parameter_names], (nj, 1))


def consistent_fit(model, base, Rw, beta, joint_nom, moving, prior=1.0, fm=None,
                   joint_weight=None):
    """Return (phi, joint_params): the physically consistent set matching beta in the R_w metric.

    Minimises ``||R_w (K x - beta)||^2 + prior ||(x - x_nom) / scale||^2`` over x = [phi, the
    moving joints' parameters] (the other joints keep ``joint_nom``), every body's pseudo-inertia
    positive definite, Fv, Fs, Fx, Ia > 0 (:func:`consistent_least_squares`), offsets and sensor
    crosstalk free.
    ``prior`` (> 0) weighs the pull toward the nominal parameters (one unit = the misfit of one
    weighted equation when a parameter moves by its scale: 5 % of a mass, ...).  ``joint_nom``
    (njoints, P) holds the nominal joint parameters of the friction model ``fm`` (default: the
    symmetric Coulomb-viscous model).  Started from the nominal parameters or the unconstrained
    minimum, whichever fits better, each moved strictly inside the constraints.
    """
    if not prior > 0.0:
        raise ValueError(f'the prior weight must be positive, got {prior}')
    nb, nj = model.nbodies, model.njoints
    fm = fm or friction_models(model, 'coulomb')[0]
    P = fm.size
    rigid = NPARAM * nb
    phi_nom = inertial_parameters(model)
    free = np.zeros((nj, P), dtype=bool)
    free[moving] = True
    jnom = np.asarray(joint_nom, dtype=float).reshape(nj, P)
    signed = np.tile([g == 'off' or g.startswith('X') for g in fm.parameter_names],
                     (nj, 1))[free]
    positive = rigid + np.flatnonzero(~signed)
    x_nom = np.concatenate([phi_nom, jnom[free]])
    joint_scale = _joint_scales(fm, nj)
    if joint_weight is not None:       # joint j's terms pulled joint_weight[j] times harder
        joint_scale = joint_scale / np.sqrt(np.asarray(joint_weight, dtype=float))[:, None]
    scale = np.concatenate([_prior_scales(model, phi_nom), joint_scale[free]])
    M = Rw @ base.K
    root = math.sqrt(prior)
    B = np.vstack([np.hstack([M[:, :rigid], M[:, rigid:][:, free.ravel()]]),
                   np.diag(root / scale)])
    y = np.concatenate([Rw @ beta - M[:, rigid:] @ np.where(free, 0.0, jnom).ravel(),
                        root * x_nom / scale])

    def inside(x, floor):
        out = x.copy()
        out[:rigid] = np.concatenate([strictly_consistent(p, floor, m) for p, m in
                                      zip(x[:rigid].reshape(nb, NPARAM), scale[:rigid:NPARAM])])
        out[positive] = np.maximum(x[positive], floor * scale[positive])
        return out
    starts = (inside(x_nom, 1e-6), inside(np.linalg.lstsq(B, y, rcond=None)[0], 1e-3))
    x0 = min(starts, key=lambda x: float(np.sum((B @ x - y) ** 2)))
    x = consistent_least_squares(B, y, x0, nb, positive)
    jp = jnom.copy()
    jp[free] = x[rigid:]
    return np.concatenate([thickened(p) for p in x[:rigid].reshape(nb, NPARAM)]), jp


def thickened(phi10, extent=MIN_EXTENT):
    """Return ten parameters whose second moment about the COM is at least m extent^2.

    Sigma_c = Sigma - h h^T / m (the pseudo-inertia's Schur complement) gets its eigenvalues
    floored: a body no thinner than ``extent`` in any direction, so that the estimate stays
    strictly consistent when written to a URDF with 9 digits and read back.
    """
    J = pseudo_inertia(phi10)
    m, h = J[3, 3], J[:3, 3]
    if not m > 0.0:
        return phi10
    c = h / m
    w, V = np.linalg.eigh(J[:3, :3] - m * np.outer(c, c))
    sigma_c = (V * np.maximum(w, m * extent ** 2)) @ V.T
    J[:3, :3] = sigma_c + m * np.outer(c, c)
    return parameters_of_pseudo_inertia(J)
