"""Fitting, first stage: base parameters and Gautier's weighted least squares with a prior.

Steps 2-4 of :mod:`rnea_ros.analysis.identification`: the base parameters of a candidate
friction model, the per-joint weights, the weighted least-squares estimate pulled toward the
nominal values along directions the data does not excite, and one candidate's columns in the
union of all candidates (:class:`_Fit`).
"""

import math

import numpy as np

from rnea_ros.analysis.base_parameters import base_from_regressor, khalil_priority, random_states
from rnea_ros.analysis.consistency import _joint_scales, _prior_scales
from rnea_ros.analysis.friction_models import describes_rest
from rnea_ros.core.regressor import inertial_parameters, NPARAM, parameter_names, regressor_batch


BASE_TOL = 1e-5              # a column this close to the span of the others is not a base one


def candidate_base(model, fm, moving, hold, seed=0):
    """Return the BaseParameters of the rigid body plus a friction model's joint columns.

    Random states of the moving joints (the others held), as
    :func:`rnea_ros.analysis.base_parameters.base_parameters`; standard parameters
    ``[phi, per joint (groups..., Ia)]``, joint columns regrouped last (Khalil's order: Ia1
    joins ZZ1).
    """
    rng = np.random.default_rng(seed)
    nj, P = model.njoints, len(fm.groups) + 1
    p = NPARAM * model.nbodies + P * nj
    n = max(50, 3 * p // max(model.nv, 1) + 20)
    Q, QD, QDD = random_states(model, n, rng, moving=moving, hold=hold)
    W = regressor_batch(model, Q, QD, QDD).reshape(n, model.nv, -1)
    off = model.nv - model.njoints
    J = np.zeros((n, model.nv, P * nj))
    for j in moving:
        J[:, off + j, P * j:P * (j + 1)] = fm.columns(QD[:, off + j], QDD[:, off + j], j)
    rows = np.concatenate([np.arange(off), off + np.asarray(moving, dtype=int)])
    W = np.concatenate([W, J], axis=2)[:, rows, :].reshape(-1, p)
    names = parameter_names(model) + [f'{g}[{jn}]' for jn in model.joint_names
                                      for g in fm.parameter_names]
    rigid = NPARAM * model.nbodies
    priority = np.concatenate([khalil_priority(model.nbodies), rigid + np.arange(P * nj)])
    return base_from_regressor(W, names, priority, tol=BASE_TOL, zero=BASE_TOL)


def joint_weights(A, c, yy, n, floor=0.01):
    """Return s_j: per joint the residual standard deviation of the OLS (Gautier's weights).

    Floored at ``floor`` times their median: a joint whose OLS residual is tiny (a light link,
    an over-fitted ill-conditioned OLS) cannot take all the weight.
    """
    b = A.shape[1]
    total = max(int(n.sum()), 1)
    beta0 = np.linalg.lstsq(A.sum(axis=0), c.sum(axis=0), rcond=None)[0]
    sigma_j = np.ones(len(n))
    for j in range(len(n)):
        rss = yy[j] - 2.0 * beta0 @ c[j] + beta0 @ A[j] @ beta0
        dof = max(n[j] - b * n[j] / total, 1.0)
        sigma_j[j] = math.sqrt(max(rss, 0.0) / dof)
    return np.maximum(sigma_j, max(floor * float(np.median(sigma_j)), 1e-9))


def weighted_least_squares(A, c, yy, n, sigma_j=None, beta_prior=None, scale=None, prior=0.0):
    """Return (beta, sigma_percent, sigma_j, A_w, share, beta_data): Gautier's two-step WLS.

    From per-joint normal equations (:meth:`Accumulator.system`): OLS, residual variance s_j^2 of
    each joint (unless ``sigma_j`` is given), then every equation of joint j weighted by
    1 / s_j.  ``A_w = W_w^T W_w``.  With ``prior`` > 0 the estimate is pulled toward
    ``beta_prior``: ``min ||W_w beta - y_w||^2 + prior ||(beta - beta_prior) / scale||^2`` (a
    ridge in the columns scaled by ``scale``), so that directions the data does not see keep the
    prior.  ``share`` is, per base parameter, the share of its prior variance the data removed
    (1: the data decides, 0: not excited).  ``beta_data`` solves the data term alone
    (minimum norm along unexcited directions).
    """
    b = A.shape[1]
    total = max(int(n.sum()), 1)
    if sigma_j is None:
        sigma_j = joint_weights(A, c, yy, n)
    w2 = 1.0 / sigma_j ** 2
    Aw = np.einsum('j,jkl->kl', w2, A)
    cw = w2 @ c
    D = np.ones(b) if scale is None else np.asarray(scale, dtype=float)
    S = D[:, None] * Aw * D[None, :]                  # data information in prior-scaled units
    ev, V = np.linalg.eigh(S)
    keep = ev > 1e-12 * max(ev.max(), 1e-300)
    rhs = D * cw
    z_data = V[:, keep] @ ((V[:, keep].T @ rhs) / ev[keep])
    beta_data = D * z_data
    if prior > 0.0 and beta_prior is not None:
        inv = V @ np.diag(1.0 / (np.clip(ev, 0.0, None) + prior)) @ V.T
        z0 = np.asarray(beta_prior, dtype=float) / D
        z = inv @ (rhs + prior * z0)
        beta = D * z
        share = 1.0 - prior * np.clip(np.diag(inv), 0.0, None)
    else:
        inv = V[:, keep] @ np.diag(1.0 / ev[keep]) @ V[:, keep].T
        beta = beta_data
        share = keep[np.argmax(np.abs(V), axis=1)].astype(float)   # excited or not
    rss = float(w2 @ yy - 2.0 * beta @ cw + beta @ Aw @ beta)
    s2 = max(rss, 0.0) / max(total - b, 1)
    std = D * np.sqrt(np.clip(s2 * np.diag(inv), 0.0, None))
    with np.errstate(divide='ignore', invalid='ignore'):
        percent = np.where(np.abs(beta) > 0, 100.0 * std / np.abs(beta), np.inf)
    return beta, percent, sigma_j, Aw, np.clip(share, 0.0, 1.0), beta_data


def _base_scales(base, standard_scales):
    """Return a prior scale per base parameter: sqrt(sum_i K_ki^2 s_i^2)."""
    return np.sqrt((base.K ** 2) @ (standard_scales ** 2))


class _Fit:
    """One candidate friction model's base set, its columns in the union and its prior."""

    def __init__(self, model, fm, base, columns, moving):
        self.fm, self.base = fm, base
        self.sel = columns.select(fm, base)
        nj = model.njoints
        phi_nom = inertial_parameters(model)
        self.joint_nom = fm.parameters_of(model.friction_table, model.armature)
        self.x_nom = np.concatenate([phi_nom, self.joint_nom.ravel()])
        standard = np.concatenate([_prior_scales(model, phi_nom), _joint_scales(fm, nj).ravel()])
        self.scale = _base_scales(base, standard)
        self.beta_nom = base.K @ self.x_nom

    def parts(self, holdout):
        """Return the parts of :meth:`Accumulator.system` this model fits (or is tested on).

        A smooth law describes the low-speed region too, so it uses the slow samples; the
        linear law leaves them out (stick-slip).  Every model is tested on all held-out ones.
        """
        if holdout:
            return (2, 3)
        return (0, 1) if describes_rest(self.fm) else (0,)

    def system(self, A, c, yy, n, parts):
        """Return (A, c, yy, n) of this candidate for the sum of the given parts."""
        parts = list(parts)
        Ap = A[parts].sum(axis=0)[:, :, self.sel][:, self.sel, :]
        cp = c[parts].sum(axis=0)[:, self.sel]
        return Ap, cp, yy[parts].sum(axis=0), n[parts].sum(axis=0)


def _upper_factor(Aw):
    """Return R with R^T R = A_w (Cholesky, with a tiny ridge if A_w is singular)."""
    try:
        return np.linalg.cholesky(Aw).T
    except np.linalg.LinAlgError:
        ridge = 1e-12 * max(np.trace(Aw) / Aw.shape[0], 1e-300)
        for _ in range(8):
            try:
                return np.linalg.cholesky(Aw + ridge * np.eye(Aw.shape[0])).T
            except np.linalg.LinAlgError:
                ridge *= 100.0
        raise
