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
from rnea_ros.analysis.friction_models import rest_joints
from rnea_ros.core.dynamics import reaction_wrenches_batch
from rnea_ros.core.regressor import inertial_parameters, NPARAM, parameter_names, regressor_batch
from rnea_ros.core.sensor import bending_moments


BASE_TOL = 1e-5              # a column this close to the span of the others is not a base one


def candidate_base(model, fm, moving, hold, seed=0):
    """Return the BaseParameters of the rigid body plus a friction model's joint columns.

    Random states of the moving joints (the others held), as
    :func:`rnea_ros.analysis.base_parameters.base_parameters`; standard parameters
    ``[phi, per joint (groups..., Ia)]``, joint columns regrouped last (Khalil's order: Ia1
    joins ZZ1).
    """
    rng = np.random.default_rng(seed)
    nj, P = model.njoints, fm.size
    p = NPARAM * model.nbodies + P * nj
    n = max(50, 3 * p // max(model.nv, 1) + 20)
    Q, QD, QDD = random_states(model, n, rng, moving=moving, hold=hold)
    W = regressor_batch(model, Q, QD, QDD).reshape(n, model.nv, -1)
    off = model.nv - model.njoints
    J = np.zeros((n, model.nv, P * nj))
    moments = np.zeros((n, nj, 2))
    if fm.crosstalk:              # the bending moments of the nominal model's wrenches
        moments = bending_moments(model, Q, reaction_wrenches_batch(model, Q, QD, QDD))
    for j in moving:
        J[:, off + j, P * j:P * (j + 1)] = fm.columns(QD[:, off + j], QDD[:, off + j], j,
                                                      moments[:, j])
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
        self.rest = rest_joints(fm, model.njoints)[np.asarray(moving, dtype=int)]
        names = list(base.names)          # per moving joint: its lone offset base parameter
        self.off_index = {jj: names.index(f'off[{model.joint_names[j]}]')
                          for jj, j in enumerate(moving)
                          if f'off[{model.joint_names[j]}]' in names}
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
        linear law leaves them out (stick-slip), unless its band is the sign law's.  Every
        model is tested on all held-out ones.  When only some joints' laws describe rest, the
        slow part is written ``1.5``: part 1 for those joints only (:meth:`system`).
        """
        if holdout:
            return (2, 3)
        if self.rest.all():
            return (0, 1)
        return (0, 1.5) if self.rest.any() else (0,)

    def _weights(self, parts):
        """Return (parts as indices, per part and moving joint 1 or 0): see :meth:`parts`."""
        ones = np.ones(self.rest.size)
        return ([int(p) for p in parts],
                np.array([ones if float(p).is_integer() else self.rest.astype(float)
                          for p in parts]))

    def system(self, A, c, yy, n, parts, moments=None):
        """Return (A, c, yy, n) of this candidate for the sum of the given parts.

        ``moments`` (S, T, N) of :meth:`Accumulator.system`: one effort offset per joint and
        recording is profiled out (:func:`center`), for the joints whose offset is a base
        parameter of its own (where Coulomb terms absorb a constant, e.g. the asymmetric law on
        moving rows only, the constant stays a parameter of the fit).
        """
        idx, w = self._weights(parts)
        Ap = np.einsum('pj,pjab->jab', w, A[idx])[:, :, self.sel][:, self.sel, :]
        cp = np.einsum('pj,pja->ja', w, c[idx])[:, self.sel]
        yp = np.einsum('pj,pj->j', w, yy[idx])
        if moments is not None and self.off_index:
            S, T, M = self.moments(moments, parts)
            lone = np.zeros(len(T), dtype=bool)       # joints whose offset is a lone parameter
            lone[list(self.off_index)] = True
            Ap, cp, yp = center(Ap, cp, yp, S, T, np.where(lone[:, None], M, 0.0))
        return Ap, cp, yp, np.rint(np.einsum('pj,pj->j', w, n[idx])).astype(n.dtype)

    def moments(self, moments, parts):
        """Return this candidate's (S, T, N) per joint and recording, summed over parts."""
        S, T, M = moments
        idx, w = self._weights(parts)
        return (np.einsum('pj,pjra->jra', w, S[idx])[:, :, self.sel],
                np.einsum('pj,pjr->jr', w, T[idx]), np.einsum('pj,pjr->jr', w, M[idx]))

    def offsets(self, beta, S, T, M):
        """Return (moving joints, recordings) offsets of the recordings under ``beta``.

        The offset each recording's equations ask for with the other parameters at ``beta``:
        beta_off + mean residual (NaN where a recording has no equation of the joint, or the
        joint has no lone offset parameter).
        """
        out = np.full(T.shape, np.nan)
        for jj, k in self.off_index.items():
            seen = M[jj] > 0
            out[jj, seen] = beta[k] + (T[jj, seen] - S[jj, seen] @ beta) / M[jj, seen]
        return out

    def deploy(self, beta, offsets):
        """Return beta with each joint's offset the median of its recordings' (deployment)."""
        beta = np.array(beta, dtype=float)
        for jj, k in self.off_index.items():
            values = offsets[jj][np.isfinite(offsets[jj])]
            if values.size:
                beta[k] = float(np.median(values))
        return beta


def center(A, c, yy, S, T, M):
    """Return (A, c, yy) with one constant per joint and recording profiled out.

    Per joint, the normal equations of ``y = W beta + o_r`` (o_r the effort offset of
    recording r) minimised over every o_r: the Schur complement ``A - sum_r S_r S_r^T / N_r``,
    ``c - sum_r S_r T_r / N_r``, ``yy - sum_r T_r^2 / N_r`` (S_r, T_r, N_r the sums of the
    columns, efforts and equations of recording r).  The offset column then carries no
    information: an offset drifting from run to run biases nothing else.
    """
    w = np.where(M > 0, 1.0 / np.maximum(M, 1.0), 0.0)     # N_r = 0: nothing removed
    A = A - np.einsum('jr,jri,jrk->jik', w, S, S)
    c = c - np.einsum('jr,jri,jr->ji', w, S, T)
    yy = yy - np.einsum('jr,jr->j', w, T * T)
    return A, c, np.clip(yy, 0.0, None)


def held_out_sse(fit, beta, held, held_moments, offsets):
    """Return per joint (sum of squared errors, equations) of beta on held-out equations.

    ``held`` (A, c, yy, n) in the candidate's columns; ``held_moments`` (S, T, N) of the same
    equations per recording and ``offsets`` (joints, recordings) the offsets the training
    equations of each recording asked for: a held-out stretch of recording r is predicted with
    r's offset (None: beta's own).
    """
    Ah, ch, yh, nh = held
    sse = np.array([yh[j] - 2.0 * beta @ ch[j] + beta @ Ah[j] @ beta for j in range(len(nh))])
    if held_moments is not None and offsets is not None:
        S, T, M = held_moments
        for jj, k in fit.off_index.items():
            d = np.nan_to_num(offsets[jj] - beta[k])
            resid = T[jj] - S[jj] @ beta
            sse[jj] += float(-2.0 * d @ resid + M[jj] @ (d * d))
    return np.clip(sse, 0.0, None), nh


def deployed_offsets(fit, jp, offsets, moving):
    """Return joint parameters with each moving joint's offset the median of its recordings'."""
    jp = np.array(jp, dtype=float)
    where = [k for k, (g, _) in enumerate(fit.fm.groups) if g == 'off']
    if not where:
        return jp
    for jj, j in enumerate(moving):
        values = offsets[jj][np.isfinite(offsets[jj])]
        if values.size:
            jp[j, where[0]] = float(np.median(values))
    return jp


def asked_offsets(fit, jp, beta, moments, offsets, moving):
    """Return (offsets, deployed, how) with a per-recording offset for every moving joint.

    ``offsets`` (moving joints, recordings) from :meth:`_Fit.offsets` is NaN for a joint whose
    offset is not a base parameter of its own (a law whose Coulomb terms take up a constant):
    that joint keeps the fit's common constant, and the offset a recording asks for is that
    constant plus the recording's mean residual under ``beta`` (the consistent fit, deployed
    offsets in ``jp``): the constant that would zero it, the other parameters as fitted.
    ``deployed`` per moving joint, ``how`` 'median' or 'fit'.
    """
    offsets = np.array(offsets, dtype=float)
    where = [k for k, (g, _) in enumerate(fit.fm.groups) if g == 'off']
    deployed = np.full(len(moving), np.nan)
    how = ['median'] * len(moving)
    if not where:
        return offsets, deployed, how
    S, T, M = moments
    with np.errstate(divide='ignore', invalid='ignore'):
        mean = np.where(M > 0, (T - S @ beta) / M, np.nan)
    for jj, j in enumerate(moving):
        deployed[jj] = jp[j, where[0]]
        if not np.any(np.isfinite(offsets[jj])):
            offsets[jj] = deployed[jj] + mean[jj]
            how[jj] = 'fit'
    return offsets, deployed, how


def offset_report(model, moving, offsets, deployed, how):
    """Return {joint: {'recordings', 'deployed', 'deployed_as', 'spread': max - min}}.

    ``deployed_as``: 'median' (of the recordings' offsets, fitted each on its own) or 'fit'
    (the common constant of a law whose Coulomb terms take up a constant; see
    :func:`asked_offsets`).  A recording without equations of the joint has None.
    """
    out = {}
    for jj, j in enumerate(moving):
        values = offsets[jj][np.isfinite(offsets[jj])]
        if values.size:
            each = [float(v) if np.isfinite(v) else None for v in offsets[jj]]
            out[model.joint_names[j]] = {'recordings': each,
                                         'deployed': float(deployed[jj]),
                                         'deployed_as': how[jj],
                                         'spread': float(np.ptp(values))}
    return out


def offset_warnings(model, moving, offsets, holdout, deployed, how):
    """Return a warning per joint whose offsets differ between recordings by more than its error.

    The spread (largest minus smallest offset of the training recordings) against the joint's
    held-out RMS error: a drifting offset (power cycles, sensor temperature) that a new recording
    may not share.
    """
    if offsets.shape[1] < 2 or not holdout:
        return []
    out = []
    for jj, j in enumerate(moving):
        name = model.joint_names[j]
        values = offsets[jj][np.isfinite(offsets[jj])]
        error = holdout['identified'].get(name)
        if values.size >= 2 and error and np.ptp(values) > error:
            which = ('the median' if how[jj] == 'median'
                     else "the fit's common constant")
            out.append(f'{name}: its effort offset differs between the training recordings by '
                       f'{np.ptp(values):.3g} (from {values.min():.3g} to {values.max():.3g}), '
                       f'more than its held-out RMS error {error:.3g}; identify deploys '
                       f'{which} {deployed[jj]:.3g}; recalibrate the offset on the robot '
                       'if it drifts')
    return out


def _score(fit, A, c, yy, n, prior, sigma_j, moving, model, ext=None):
    """Return a candidate's row of the model choice: fitted on training, held-out errors.

    Used by :func:`rnea_ros.analysis.choice._select`.

    With ``ext`` (:meth:`Accumulator.system` extras) one effort offset per joint and recording
    is fitted, and each held-out stretch is predicted with its recording's offset; ``bins``:
    per held-out bin the weighted squared error (for the standard error of a difference).
    """
    moments = ext['moments'] if ext else None
    train = fit.parts(False)
    Af, cf, yf, nf = fit.system(A, c, yy, n, train, moments)
    beta = weighted_least_squares(Af, cf, yf, nf, sigma_j, fit.beta_nom, fit.scale, prior)[0]
    offsets = None if moments is None else fit.offsets(beta, *fit.moments(moments, train))

    def sse(parts):
        return held_out_sse(fit, beta, fit.system(A, c, yy, n, parts),
                            None if moments is None else fit.moments(moments, parts), offsets)
    sse_all, nh = sse((2, 3))
    sse_moving, nm = sse((2,))
    bins, bins_moving = [], []
    for hA, hc, hy, hn, (hS, hT, hM), moving_part in (ext['bins'] if ext else []):
        for out, (A_, c_, y_, n_, S_, T_, M_) in ((bins, (hA, hc, hy, hn, hS, hT, hM)),
                                                  (bins_moving, moving_part)):
            held = (A_[:, fit.sel][:, :, fit.sel], c_[:, fit.sel], y_, n_)
            e = held_out_sse(fit, beta, held, (S_[:, :, fit.sel], T_, M_), offsets)[0]
            out.append(float(np.sum(e / sigma_j ** 2)))
    rms = np.sqrt(sse_all / np.maximum(nh, 1))
    return {'name': fit.fm.name, 'parameters': list(fit.fm.parameter_names),
            'holdout_rms': {model.joint_names[j]: float(r) for j, r in zip(moving, rms)},
            'score': float(np.sum(sse_all / sigma_j ** 2) / max(int(nh.sum()), 1)),
            'score_moving': float(np.sum(sse_moving / sigma_j ** 2) / max(int(nm.sum()), 1)),
            'bins': bins, 'equations': int(nh.sum()), 'bins_moving': bins_moving,
            'equations_moving': int(nm.sum()), 'sse': sse_all, 'count': nh}


def pooled_rows(rows):
    """Return one candidate's row of its rows on several held-out classes (K-fold).

    Each class's bins predicted by the fit of the others: errors and counts add up, the per-bin
    errors join (Hastie, Tibshirani and Friedman, 7.10: every bin held out once, so the
    standard error of a difference comes from every bin, not one class of them).
    """
    out = dict(rows[0])
    sse, count = sum(r['sse'] for r in rows), sum(r['count'] for r in rows)
    rms = np.sqrt(sse / np.maximum(count, 1))
    out['holdout_rms'] = dict(zip(rows[0]['holdout_rms'], map(float, rms)))
    for part in ('', '_moving'):
        equations = sum(r['equations' + part] for r in rows)
        out['score' + part] = float(sum(r['score' + part] * r['equations' + part]
                                        for r in rows) / max(equations, 1))
        out['equations' + part] = equations
        out['bins' + part] = [b for r in rows for b in r['bins' + part]]
    out['sse'], out['count'] = sse, count
    return out


def _score_folds(fit, folds, prior, sigma_j, moving, model):
    """Return a candidate's row of the model choice from recordings left out in turn.

    Used by :func:`rnea_ros.analysis.choice._select`.

    ``folds``: per training recording ((its fit sums, extras), its measured sums) on the union
    columns (:meth:`Accumulator.system`).  Each recording is predicted by the candidate fitted
    on the others, one offset per joint and recording, the left-out recording's offset the
    median of the others' (as deployed): the variation between runs, not only within one,
    decides.  ``bins``: per recording the weighted squared error.
    """
    used = fit.parts(False)
    every = used + tuple(k + 4 for k in used)
    own = [fit.system(*system, every, ext['moments']) for (system, ext), _ in folds]
    moments = [fit.moments(ext['moments'], every) for (_, ext), _ in folds]
    total = [sum(o[i] for o in own) for i in range(4)]
    sse_all, sse_moving = np.zeros(len(moving)), np.zeros(len(moving))
    n_all, n_moving, bins = np.zeros(len(moving)), np.zeros(len(moving)), []
    bins_moving = []
    for k, (_, measured) in enumerate(folds):
        Af, cf, yf, nf = (t - o for t, o in zip(total, own[k]))
        beta = weighted_least_squares(Af, cf, yf, nf, sigma_j, fit.beta_nom, fit.scale,
                                      prior)[0]
        others = [fit.offsets(beta, *m) for r, m in enumerate(moments) if r != k]
        beta = fit.deploy(beta, np.concatenate(others, axis=1))
        e, m = held_out_sse(fit, beta, fit.system(*measured, (0, 1, 2, 3)), None, None)
        e_m, m_m = held_out_sse(fit, beta, fit.system(*measured, (0, 2)), None, None)
        sse_all, n_all = sse_all + e, n_all + m
        sse_moving, n_moving = sse_moving + e_m, n_moving + m_m
        bins.append(float(np.sum(e / sigma_j ** 2)))
        bins_moving.append(float(np.sum(e_m / sigma_j ** 2)))
    rms = np.sqrt(sse_all / np.maximum(n_all, 1))
    return {'name': fit.fm.name, 'parameters': list(fit.fm.parameter_names),
            'holdout_rms': {model.joint_names[j]: float(r) for j, r in zip(moving, rms)},
            'score': float(np.sum(sse_all / sigma_j ** 2) / max(int(n_all.sum()), 1)),
            'score_moving': float(np.sum(sse_moving / sigma_j ** 2)
                                  / max(int(n_moving.sum()), 1)),
            'bins': bins, 'equations': int(n_all.sum()), 'bins_moving': bins_moving,
            'equations_moving': int(n_moving.sum())}


def _noise(row, other, part=''):
    """Return the standard error of the difference of two candidates' held-out scores.

    From the per-bin weighted squared errors: the differences between bins are the noise of
    the held-out score (paired: both candidates predict the same equations).  ``part``:
    '_moving' for the score of the moving equations.
    """
    d = np.array(row['bins' + part]) - np.array(other['bins' + part])
    if d.size < 2:
        return 0.0
    return float(math.sqrt(d.size * np.var(d, ddof=1)) / max(row['equations' + part], 1))


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
