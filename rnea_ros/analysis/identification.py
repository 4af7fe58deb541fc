"""Identification of inertial parameters, joint friction and rotor inertia from measured efforts.

Method (Khalil and Dombre, *Modeling, identification and control of robots*, chapter 12;
Gautier and Khalil 1990; Gautier 1997 for the weighting):

1. The joints that the data moves are found (range and speed); the others are held at their
   median position and their efforts are not used.
2. The base parameters of that motion (:mod:`rnea_ros.analysis.base_parameters`, with the joint
   columns Fv, Fs, Ia, offset of :mod:`rnea_ros.core.regressor`).
3. The stacked regressor ``W`` of every sample; a joint's equation at a sample where
   ``|qd_j| < band`` is left out (stick-slip near zero velocity does not follow the Coulomb
   model and would bias Fs).
4. Ordinary least squares for ``W_b beta = tau``; per joint the residual variance ``s_j^2``;
   then weighted least squares, every equation of joint j divided by ``s_j``.  The covariance
   ``s^2 (W_w^T W_w)^-1`` gives the relative standard deviation ``%sigma`` of each base parameter;
   the condition number of the weighted base regressor measures the excitation.
5. A physically consistent full parameter set: per body the pseudo-inertia
   ``J = [[Sigma, h], [h^T, m]]`` (``Sigma = tr(I)/2 1 - I``) is written ``J = U U^T`` with U
   upper triangular (the log-Cholesky parametrisation of Rucker and Wensing 2022: positive
   diagonal by exponentials), so that m > 0 and the inertia about the COM is positive definite
   and satisfies the triangle inequalities for any value of the variables.  The variables are
   fitted (``scipy.optimize.least_squares``) so that ``K phi`` matches the weighted estimate in
   the metric of the data (``||R_w (K phi - beta)||``, R_w from a QR of W_w: the same as the
   weighted data misfit), plus a small prior term pulling every parameter toward the nominal
   URDF, which decides the directions the data cannot see.  Fv, Fs, Ia are kept >= 0.
"""

from dataclasses import dataclass, field
import math

import numpy as np

from rnea_ros.analysis.base_parameters import base_parameters
from rnea_ros.core.dynamics import coulomb_sign
from rnea_ros.core.regressor import (inertial_parameters, joint_parameters, NJOINT_PARAM,
                                     NPARAM, regressor_batch)

POOR_CONDITION = 1000.0      # warn above this condition number of the base regressor
NOT_EXCITED = 1e6            # refuse above it: some base parameters are not seen at all


@dataclass
class Identification:
    """Result of :func:`identify` (arrays in model order)."""

    phi: np.ndarray              # (10 nbodies,) physically consistent inertial parameters
    joint_params: np.ndarray     # (njoints, 4): Fv, Fs, Ia, offset
    moving: np.ndarray           # indices of the joints the data moves
    base_names: list
    beta: np.ndarray             # WLS estimate of the base parameters
    sigma_percent: np.ndarray    # relative standard deviation of each, %
    beta_consistent: np.ndarray  # K x of the consistent set
    condition: float
    joint_sigma: np.ndarray      # per moving joint: residual standard deviation of the OLS
    warnings: list = field(default_factory=list)
    samples: int = 0

    def parameters(self):
        """Return x = [phi, Fv1, Fs1, Ia1, off1, ...] (regressor column order)."""
        return np.concatenate([self.phi, self.joint_params.ravel()])


def moving_joints(model, Q, QD, band):
    """Return the indices of the joints the data moves (range > 0.02 and speed beyond band)."""
    off_q, off_v = model.nq - model.njoints, model.nv - model.njoints
    span = np.ptp(Q[:, off_q:], axis=0) if len(Q) else np.zeros(model.njoints)
    fast = np.mean(np.abs(QD[:, off_v:]) > band, axis=0) if len(QD) else span
    return np.flatnonzero((span > 0.02) & (fast > 0.05))


def normal_equations(model, Q, QD, QDD, E, moving, columns, band, chunk=4000):
    """Return per moving joint (A_j, c_j, yy_j, n_j) = (W_j^T W_j, W_j^T y_j, y_j^T y_j, rows).

    W_j holds the regressor columns ``columns`` of joint j's equations outside the band; the
    samples are processed in chunks, so memory stays bounded for long recordings.  The joint
    columns [Fv, Fs, Ia, off] of joint j are nonzero only in its own equations: they are filled
    from qd, sign(qd), qdd and 1 directly (no full friction regressor is formed).
    """
    off = model.nv - model.njoints
    rows = off + moving
    nm, b = moving.size, len(columns)
    columns = np.asarray(columns)
    rigid = NPARAM * model.nbodies
    rigid_pos = np.flatnonzero(columns < rigid)
    A, c = np.zeros((nm, b, b)), np.zeros((nm, b))
    yy, n = np.zeros(nm), np.zeros(nm, dtype=int)
    for start in range(0, Q.shape[0], chunk):
        sl = slice(start, start + chunk)
        W = regressor_batch(model, Q[sl], QD[sl], QDD[sl])
        W = W.reshape(-1, model.nv, rigid)
        for j in range(nm):
            r = rows[j]
            mask = np.abs(QD[sl, r]) >= band
            Wj = np.zeros((int(mask.sum()), b))
            Wj[:, rigid_pos] = W[mask, r][:, columns[rigid_pos]]
            qd, qdd = QD[sl, r][mask], QDD[sl, r][mask]
            joint_values = (qd, coulomb_sign(qd, model.coulomb_band), qdd, 1.0)
            for k in range(NJOINT_PARAM):
                hit = np.flatnonzero(columns == rigid + NJOINT_PARAM * moving[j] + k)
                if hit.size:
                    Wj[:, hit[0]] = joint_values[k]
            yj = E[sl, r][mask]
            A[j] += np.einsum('ik,il->kl', Wj, Wj)      # no BLAS thread pool (shared machine)
            c[j] += yj @ Wj
            yy[j] += yj @ yj
            n[j] += yj.size
    return A, c, yy, n


# -- log-Cholesky parametrisation of the pseudo-inertia ------------------------------------------

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


# Entries of U that theta's entries 1-9 set: (d1, d2, d3 on the diagonal, then s12 s23 s13, t).
_U_ENTRIES = ((0, 0), (1, 1), (2, 2), (0, 1), (1, 2), (0, 2), (0, 3), (1, 3), (2, 3))


def _parameters_of_pseudo_inertias(J):
    """Return (..., 10) parameters of (..., 4, 4) pseudo-inertias (linear map)."""
    sigma = J[..., :3, :3]
    trace = np.trace(sigma, axis1=-2, axis2=-1)
    out = np.empty(J.shape[:-2] + (NPARAM,))
    out[..., 0] = J[..., 3, 3]
    out[..., 1:4] = J[..., :3, 3]
    for k, (r, c) in enumerate(((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))):
        out[..., 4 + k] = (trace if r == c else 0.0) - sigma[..., r, c]
    return out


def log_cholesky_batch(theta):
    """Return (phi (nb, 10), dphi/dtheta (nb, 10, 10)) of log-Cholesky variables (nb, 10).

    theta = (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3); U = e^alpha [[e^d1, s12, s13, t1],
    [0, e^d2, s23, t2], [0, 0, e^d3, t3], [0, 0, 0, 1]] and J = U U^T (Rucker and Wensing 2022).
    """
    theta = np.asarray(theta, dtype=float).reshape(-1, NPARAM)
    nb = theta.shape[0]
    ex = np.exp(np.clip(theta[:, :4], -40.0, 40.0))      # clipped: no overflow in trial steps
    V = np.zeros((nb, 4, 4))
    V[:, 3, 3] = 1.0
    for k, (r, c) in enumerate(_U_ENTRIES):
        V[:, r, c] = ex[:, 1 + k] if k < 3 else theta[:, 1 + k]
    scale = ex[:, 0] ** 2
    J = scale[:, None, None] * V @ V.transpose(0, 2, 1)
    dJ = np.empty((nb, NPARAM, 4, 4))
    dJ[:, 0] = 2.0 * J
    for k, (r, c) in enumerate(_U_ENTRIES):
        factor = scale * (ex[:, 1 + k] if k < 3 else 1.0)
        D = np.zeros((nb, 4, 4))
        D[:, r, :] = V[:, :, c]                           # E_rc V^T
        dJ[:, 1 + k] = factor[:, None, None] * (D + D.transpose(0, 2, 1))
    phi = _parameters_of_pseudo_inertias(J)
    dphi = _parameters_of_pseudo_inertias(dJ).transpose(0, 2, 1)   # (nb, 10 phi, 10 theta)
    return phi, dphi


def log_cholesky_to_parameters(theta):
    """Return the ten parameters of theta = (alpha, d1, d2, d3, s12, s23, s13, t1, t2, t3)."""
    return log_cholesky_batch(theta)[0][0]


def parameters_to_log_cholesky(phi10, floor=1e-6):
    """Return theta of ten parameters (J is made positive definite first, floor relative)."""
    J = pseudo_inertia(phi10)
    w, V = np.linalg.eigh(J)
    J = (V * np.maximum(w, floor * max(1.0, w.max()))) @ V.T
    P = np.eye(4)[::-1]
    U = P @ np.linalg.cholesky(P @ J @ P) @ P           # upper triangular, J = U U^T
    a = U[3, 3]
    U = U / a
    return np.array([math.log(a), math.log(U[0, 0]), math.log(U[1, 1]), math.log(U[2, 2]),
                     U[0, 1], U[1, 2], U[0, 2], U[0, 3], U[1, 3], U[2, 3]])


def is_physically_consistent(phi10, tol=0.0):
    """Return True if the pseudo-inertia of ten parameters is positive definite (m > 0 etc.)."""
    return bool(np.linalg.eigvalsh(pseudo_inertia(phi10)).min() > tol)


# -- estimation ---------------------------------------------------------------------------------

def weighted_least_squares(A, c, yy, n):
    """Return (beta, sigma_percent, joint_sigma, A_w): Gautier's two-step WLS.

    From per-joint normal equations (:func:`normal_equations`): OLS, residual variance s_j^2 of
    each joint, then every equation of joint j weighted by 1 / s_j.  ``A_w = W_w^T W_w``.
    """
    b = A.shape[1]
    total = max(int(n.sum()), 1)
    beta0 = np.linalg.lstsq(A.sum(axis=0), c.sum(axis=0), rcond=None)[0]
    sigma_j = np.ones(len(n))
    for j in range(len(n)):
        rss = yy[j] - 2.0 * beta0 @ c[j] + beta0 @ A[j] @ beta0
        dof = max(n[j] - b * n[j] / total, 1.0)
        sigma_j[j] = max(math.sqrt(max(rss, 0.0) / dof), 1e-9)
    w2 = 1.0 / sigma_j ** 2
    Aw = np.einsum('j,jkl->kl', w2, A)
    cw = w2 @ c
    beta = np.linalg.lstsq(Aw, cw, rcond=None)[0]
    rss = float(w2 @ yy - 2.0 * beta @ cw + beta @ Aw @ beta)
    s2 = max(rss, 0.0) / max(total - b, 1)
    cov = s2 * np.linalg.pinv(Aw)
    std = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    with np.errstate(divide='ignore', invalid='ignore'):
        percent = np.where(np.abs(beta) > 0, 100.0 * std / np.abs(beta), np.inf)
    return beta, percent, sigma_j, Aw


def _prior_scales(model, phi_nom):
    """Return a scale per standard parameter: what counts as a large change of it."""
    m = phi_nom.reshape(-1, NPARAM)[:, 0]
    ref = np.maximum(m, 0.05 * max(model.total_mass, 1e-3) / max(model.nbodies, 1))
    per = np.column_stack([ref, *(0.05 * ref,) * 3, *(0.01 * ref,) * 6])
    return per.ravel()


def consistent_fit(model, base, Rw, beta, joint_nom, moving, prior=1.0):
    """Return (phi, joint_params): the physically consistent set matching beta in the R_w metric.

    ``prior`` weighs the pull toward the nominal parameters (one unit = the misfit of one
    weighted equation when a parameter moves by its scale: 5 % of a mass, ...).
    """
    from scipy.optimize import least_squares
    nb, nj = model.nbodies, model.njoints
    phi_nom = inertial_parameters(model)
    theta0 = np.concatenate([parameters_to_log_cholesky(phi_nom[NPARAM * b:NPARAM * (b + 1)])
                             for b in range(nb)])
    scale = _prior_scales(model, phi_nom)
    free = np.zeros((nj, NJOINT_PARAM), dtype=bool)
    free[moving] = True
    jscale = np.tile([0.1, 0.1, 0.01, 0.1], (nj, 1))[free]
    jnom = joint_nom.reshape(nj, NJOINT_PARAM)
    x0 = np.concatenate([theta0, np.maximum(jnom[free], 0.0)])
    lower = np.full(x0.size, -np.inf)
    kinds = np.tile(np.arange(NJOINT_PARAM), (nj, 1))[free]
    lower[theta0.size:] = np.where(kinds < 3, 0.0, -np.inf)
    x0[theta0.size:] = np.where(kinds < 3, np.maximum(x0[theta0.size:], 1e-9),
                                x0[theta0.size:])
    sqrt_prior = math.sqrt(prior)
    M = Rw @ base.K                                      # (b, p)
    Mphi, Mj = M[:, :NPARAM * nb], M[:, NPARAM * nb:][:, free.ravel()]
    nt = theta0.size

    def unpack(x):
        jp = jnom.copy()
        jp[free] = x[nt:]
        return log_cholesky_batch(x[:nt])[0].ravel(), jp

    def residual(x):
        phi, jp = unpack(x)
        full = np.concatenate([phi, jp.ravel()])
        return np.concatenate([Rw @ (base.K @ full - beta),
                               sqrt_prior * (phi - phi_nom) / scale,
                               sqrt_prior * (jp[free] - jnom[free]) / jscale])

    def jacobian(x):
        dphi = log_cholesky_batch(x[:nt])[1]              # (nb, 10, 10)
        block = np.zeros((nt, nt))                        # dphi/dtheta, block diagonal
        for b in range(nb):
            block[NPARAM * b:NPARAM * (b + 1), NPARAM * b:NPARAM * (b + 1)] = dphi[b]
        nfree = x.size - nt
        top = np.hstack([Mphi @ block, Mj])
        mid = np.hstack([sqrt_prior * block / scale[:, None], np.zeros((nt, nfree))])
        low = np.hstack([np.zeros((nfree, nt)), np.diag(sqrt_prior / jscale)])
        return np.vstack([top, mid, low])

    result = least_squares(residual, x0, jac=jacobian,
                           bounds=(lower, np.full(x0.size, np.inf)), method='trf',
                           tr_solver='lsmr', max_nfev=100)
    return unpack(result.x)


def identify(model, Q, QD, QDD, E, band=0.05, prior=1.0, seed=0):
    """Return the :class:`Identification` of the data (arrays (N, nq), (N, nv) x 3, model order).

    Raises ValueError when the data cannot identify anything (no joint moves, too few samples).
    """
    if Q.shape[0] < 50:
        raise ValueError(f'{Q.shape[0]} samples: identification needs at least 50')
    if not np.all(np.isfinite(E)):
        raise ValueError('the efforts contain non-finite values')
    moving = moving_joints(model, Q, QD, band)
    if moving.size == 0:
        raise ValueError('the data does not excite the robot: no joint moves more than 0.02 rad '
                         f'(or m) faster than {band} rad/s; record an excitation trajectory '
                         '(rnea-ros excite)')
    off_q = model.nq - model.njoints
    hold = np.median(Q[:, off_q:], axis=0)
    base = base_parameters(model, friction=True, seed=seed, moving=moving, hold=hold)
    A, c, yy, n = normal_equations(model, Q, QD, QDD, E, moving, base.base, band)
    if n.sum() < 2 * base.count:
        raise ValueError(f'{n.sum()} usable equations for {base.count} base parameters: record '
                         'longer or faster motion')
    beta, percent, sigma_j, Aw = weighted_least_squares(A, c, yy, n)
    ev = np.linalg.eigvalsh(Aw)                      # squared singular values of W_w
    condition = float(math.sqrt(ev[-1] / ev[0])) if ev[0] > 0 else math.inf
    if not condition < NOT_EXCITED:
        raise ValueError(f'the data does not excite the robot enough: the condition number of '
                         f'the base regressor is {condition:.3g} (> {NOT_EXCITED:g}), some base '
                         'parameters are not seen at all; record an excitation trajectory '
                         '(rnea-ros excite) with larger, faster motion')
    warnings = []
    if condition > POOR_CONDITION:
        warnings.append(f'poor excitation: the condition number of the base regressor is '
                        f'{condition:.3g} (> {POOR_CONDITION:g}); the estimate is unreliable '
                        'along the weakly excited directions (use rnea-ros excite)')
    Rw = _upper_factor(Aw)
    phi, jp = consistent_fit(model, base, Rw, beta, joint_parameters(model), moving, prior)
    x = np.concatenate([phi, jp.ravel()])
    return Identification(phi=phi, joint_params=jp, moving=moving, base_names=base.names,
                          beta=beta, sigma_percent=percent, beta_consistent=base.K @ x,
                          condition=condition, joint_sigma=sigma_j, warnings=warnings,
                          samples=int(Q.shape[0]))


def _upper_factor(Aw):
    """Return R with R^T R = A_w (Cholesky, with a tiny ridge if A_w is singular)."""
    try:
        return np.linalg.cholesky(Aw).T
    except np.linalg.LinAlgError:
        ridge = 1e-12 * np.trace(Aw) / Aw.shape[0]
        return np.linalg.cholesky(Aw + ridge * np.eye(Aw.shape[0])).T


def predict(model, params, Q, QD, QDD, chunk=4000):
    """Return the (N, nv) efforts of parameters x = [phi, joint params] (regressor order)."""
    params = np.asarray(params, dtype=float)
    rigid = NPARAM * model.nbodies
    phi, jp = params[:rigid], params[rigid:].reshape(model.njoints, NJOINT_PARAM)
    off = model.nv - model.njoints
    out = np.empty((Q.shape[0], model.nv))
    for start in range(0, Q.shape[0], chunk):
        sl = slice(start, start + chunk)
        out[sl] = (regressor_batch(model, Q[sl], QD[sl], QDD[sl]) @ phi).reshape(-1, model.nv)
    qd, qdd = QD[:, off:], QDD[:, off:]
    out[:, off:] += (jp[:, 0] * qd + jp[:, 1] * coulomb_sign(qd, model.coulomb_band)
                     + jp[:, 2] * qdd + jp[:, 3])
    return out
