"""Choosing the model: the friction law and the prior's pull, by data the fit did not see.

The stage between accumulating (:mod:`rnea_ros.analysis.accumulator`) and the final fit
(:mod:`rnea_ros.analysis.identification`, step 4 of its module doc):

- :func:`_select` scores every candidate friction model (:mod:`.friction_models`) by how well
  its fit predicts equations it did not see: with several training recordings, each one left
  out in turn; with one, its bins in five classes, each class held out in turn (K-fold: every
  bin predicted once, so that the standard error of a difference comes from all of them).
  The prior's pull and the verdict against the nominal model are scored the same way.
  The simplest candidate within one standard error of the best is kept (Hastie, Tibshirani and
  Friedman, *The Elements of Statistical Learning*, 7.10).
- :func:`_prior_by_holdout` picks the pull toward the nominal URDF that predicts held-out data
  best, and pulls harder where a joint would otherwise predict worse than the nominal model.
"""

import numpy as np

from rnea_ros.analysis.accumulator import FOLDS
from rnea_ros.analysis.estimation import (_Fit, _noise, _score, _score_folds, candidate_base,
                                          held_out_sse, joint_weights, pooled_rows,
                                          weighted_least_squares)
from rnea_ros.analysis.friction_models import per_joint_scales, with_crosstalk
from rnea_ros.core.regressor import inertial_parameters, joint_parameters, NPARAM


PARSIMONY = 0.02             # a richer friction model must predict 2 % better to be chosen
PRIOR_LADDER = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)   # prior weights tried against the nominal
NOT_WORSE = 1e-3             # held-out RMS above the nominal's by more than this share: worse


def _prior_by_holdout(fit, sums, check, A, c, yy, n, columns, moving, prior, folds=None,
                      moments=None, raw_fit=False):
    """Return (prior weight, per-joint weights, report): the weakest pull not worse than nominal.

    Held-out data: with ``folds`` (per training recording, its (fit sums, check sums)), each
    recording in turn predicted by the chosen model fitted on the others (a recording the fit
    did not see: offsets that change from run to run show there); otherwise each class of bins
    of ``check`` in turn (every fifth bin), predicted by the fit of the other bins of ``sums``
    (K-fold: every bin predicted once).  ``check`` holds the same
    samples conditioned for validation (:mod:`rnea_ros.analysis.cutoff`, step 4).  The nominal
    model (URDF with its friction) predicts the same equations.

    A joint whose held-out error is above the nominal's by more than NOT_WORSE gets its own
    joint terms (friction, offset, rotor inertia: they act in its equation only) pulled ten
    times harder toward their nominal values, up to 1e5; if that does not suffice, the whole
    prior steps up PRIOR_LADDER.  The first setting with no joint worse is kept (the pull the
    held-out data asks for); if none, the one whose worst ratio is lowest (identify then
    refuses to write).
    """
    model = sums.model
    x_nom = np.concatenate([inertial_parameters(model), joint_parameters(model)])
    names = [model.joint_names[j] for j in moving]
    used = fit.parts(False)
    every = used + tuple(k + 4 for k in used)
    if folds:
        systems = []
        for f, k in folds:
            (Af, cf, yf, nf), ext = f.system(moving, columns, extras=True, raw_fit=raw_fit,
                                             bins=False)
            mom = fit.moments(ext['moments'], every)
            systems.append((fit.system(Af, cf, yf, nf, every, ext['moments']), mom,
                            fit.system(*k.system(moving, columns), (0, 1, 2, 3)), k))
        total = [sum(s[0][i] for s in systems) for i in range(4)]
        tests = [(tuple(t - s[0][i] for i, t in enumerate(total)),
                  [o[1] for o in systems if o is not s], s[2], None) for s in systems]
        nominal_sse = sum(k.residual_rms(x_nom, moving) ** 2 * _counts(k, moving)
                          for _, _, _, k in systems)
        nominal_n = sum(_counts(k, moving) for _, _, _, k in systems)
    else:                        # each class of bins held out in turn (K-fold): every bin
        tests = []
        for held in range(FOLDS):       # one full system at a time, reduced at once (memory)
            (Ar, cr, yr, nr), own = sums.system(moving, columns, extras=True, raw_fit=raw_fit,
                                                bins=False, held=held)
            train = fit.system(Ar, cr, yr, nr, used, own['moments'])
            train_moments = [fit.moments(own['moments'], used)]
            del Ar, cr, yr, nr, own
            (Ak, ck, yk, nk), ext = check.system(moving, columns, extras=True, bins=False,
                                                 held=held)
            tests.append((train, train_moments, fit.system(Ak, ck, yk, nk, (2, 3)),
                          fit.moments(ext['moments'], (2, 3))))
            del Ak, ck, yk, nk, ext
        nominal_n = _counts(check, moving)
        nominal_sse = check.residual_rms(x_nom, moving) ** 2 * nominal_n
    nominal = np.sqrt(nominal_sse / np.maximum(nominal_n, 1))
    sigma_j = joint_weights(*tests[0][0])
    groups = _joint_groups(fit, model, moving)

    def held_out(weight, mult):
        scale = fit.scale / np.sqrt(mult[groups])
        sse, cnt = np.zeros(len(moving)), np.zeros(len(moving))
        for (Af, cf, yf, nf), train_moments, held, held_moments in tests:
            beta = weighted_least_squares(Af, cf, yf, nf, sigma_j, fit.beta_nom, scale,
                                          weight)[0]
            offsets = np.concatenate([fit.offsets(beta, *m) for m in train_moments], axis=1)
            if held_moments is None:      # another recording: the deployed (median) offset
                beta, offsets = fit.deploy(beta, offsets), None
            e, m = held_out_sse(fit, beta, held, held_moments, offsets)
            sse += e
            cnt += m
        return np.sqrt(sse / np.maximum(cnt, 1))

    rows, pick = [], None
    ones = np.ones(len(moving) + 1)
    scores = [float(np.sum((held_out(prior * k, ones) / sigma_j) ** 2)) for k in PRIOR_LADDER]
    start = int(np.argmin(scores))             # the pull that predicts held-out data best
    for k in PRIOR_LADDER[start:]:
        mult = np.ones(len(moving) + 1)          # the last: parameters of no single joint
        for _ in range(6):
            rms = held_out(prior * k, mult)
            worse = rms > nominal * (1.0 + NOT_WORSE) + 1e-12
            rows.append({'prior': prior * k, 'joint_prior': dict(zip(names, mult[:-1].tolist())),
                         'identified': dict(zip(names, map(float, rms))),
                         'worst_ratio': float(np.max(rms / np.maximum(nominal, 1e-12)))})
            if not worse.any() or np.all(mult[:-1][worse] >= 1e5):
                break
            mult[:-1][worse] *= 10.0
        if not worse.any():
            pick = len(rows) - 1
            break
    if pick is None:
        pick = int(np.argmin([r['worst_ratio'] for r in rows]))
    row = rows[pick]
    report = {'data': 'recordings left out in turn' if folds else 'each fifth of the bins in turn',
              'prior_scores': dict(zip(map(str, PRIOR_LADDER), scores)),
              'offsets': 'one per joint and training recording; a recording predicted with '
                         + ("the median of the others'" if folds else 'its own'),
              'nominal': dict(zip(names, map(float, nominal))), 'ladder': rows,
              'prior': row['prior'], 'joint_prior': row['joint_prior'],
              'identified': row['identified'],
              'not_worse': all(row['identified'][m] <= v * (1.0 + NOT_WORSE) + 1e-12
                               for m, v in zip(names, nominal))}
    mult = np.ones(model.njoints)
    for j, m in zip(moving, row['joint_prior'].values()):
        mult[j] = m
    return row['prior'], mult, report


def _counts(sums, moving, held_out=False):
    """Return per moving joint the number of equations of an Accumulator."""
    totals = sums.totals(held_out)
    return np.array([totals[j][3] for j in moving], dtype=float)


def _joint_groups(fit, model, moving):
    """Return per base parameter the index of the moving joint whose terms alone it holds.

    A friction-only base parameter of joint j (its Fv, Fs, offset; Ia when alone) gets j's
    index in ``moving``; any other (rigid body, or regrouped) gets len(moving).
    """
    rigid = NPARAM * model.nbodies
    P = fit.fm.size
    where = {int(j): k for k, j in enumerate(moving)}
    out = np.full(len(fit.base.base), len(moving))
    for k, row in enumerate(fit.base.K):
        cols = np.flatnonzero(row)
        if cols.size and np.all(cols >= rigid):
            joints = {(int(col) - rigid) // P for col in cols}
            if len(joints) == 1 and next(iter(joints)) in where:
                out[k] = where[next(iter(joints))]
    return out


def _fit_in_union(model, fm, sums, columns, moving, seed):
    """Return the :class:`_Fit` of a further candidate, or None when outside the union columns."""
    base = candidate_base(model, fm, moving, sums.hold(), seed)
    rigid = base.base[base.base < NPARAM * model.nbodies]
    if not np.all(np.isin(rigid, columns.rigid)):     # not in the union: not tried
        return None
    return _Fit(model, fm, base, columns, moving)


def _per_joint(model, sums, fits, columns, moving, seed):
    """Return the ``refine`` of :func:`_select`: the chosen smooth law with per-joint scales."""
    def refine(rows, best):
        fm = per_joint_scales(model, [f.fm for f in fits], rows, best, moving)
        return None if fm is None else _fit_in_union(model, fm, sums, columns, moving, seed)
    return refine


def _with_crosstalk(model, sums, fits, columns, moving, seed):
    """Return the ``richer`` of :func:`_select`: the chosen law plus sensor crosstalk."""
    def richer(rows, best):
        fm = fits[best].fm
        if fm.crosstalk:
            return None
        return _fit_in_union(model, with_crosstalk(fm), sums, columns, moving, seed)
    return richer


def _select(fits, A, c, yy, n, prior, moving, model, refine=None, ext=None, weights=None,
            classes=None, richer=None):
    """Return (index of the chosen candidate, per-candidate held-out errors).

    Each candidate is fitted on the training blocks and predicts every held-out equation;
    ``score`` is the weighted mean squared error on all of them (slow ones included),
    ``score_moving`` on those outside the stick band, with the same weights for every candidate.
    Admissible: ``score_moving`` within PARSIMONY of its best (a law must not buy its fit of
    the stick band with worse predictions of the moving joints).  Chosen by the one-standard-
    error rule (Hastie, Tibshirani and Friedman, *The Elements of Statistical Learning*, 7.10):
    the simplest admissible candidate whose ``score`` is within one standard error of the
    difference (:func:`_noise`, paired over the held-out bins) of the best admissible one, and
    at least within PARSIMONY: a richer law is kept only when it predicts better beyond the
    noise of the held-out score.  Among the admissible candidates with as many parameters as
    that one (the same law and terms, other velocity scales: e.g. the Coulomb band and the
    sign law) the lowest ``score`` is chosen.

    ``classes()``: the sums with each class of bins held out in turn, (A, c, yy, n, ext) each
    (:meth:`Accumulator.system` ``held``); the scores then pool every class
    (:func:`pooled_rows`: K-fold, every bin predicted once).

    ``refine(rows, best)``: a further candidate (a :class:`_Fit`, or None) built from the
    scores, e.g. the chosen law with per-joint velocity scales (:func:`per_joint_scales`).  It
    has as many parameters as the chosen one, so it replaces it when admissible and its
    ``score`` is lower by more than that noise; it is appended to ``fits``.

    ``richer(rows, best)``: then a candidate with more parameters built on the chosen one (the
    same law plus sensor crosstalk), appended too; it replaces the chosen one when admissible
    and its ``score`` is lower by more than the noise and at least PARSIMONY (as a richer law
    must be).
    """
    moments = ext['moments'] if ext else None
    sigma_j = weights                        # common weights: the errors are comparable
    if sigma_j is None:
        sigma_j = joint_weights(*fits[0].system(A, c, yy, n, fits[0].parts(False), moments))

    def score_all(candidates):
        if ext and ext.get('folds'):
            return [_score_folds(fit, ext['folds'], prior, sigma_j, moving, model)
                    for fit in candidates]
        if classes is None:
            return [_score(fit, A, c, yy, n, prior, sigma_j, moving, model, ext)
                    for fit in candidates]
        per_class = [[] for _ in candidates]
        for A_, c_, yy_, n_, ext_ in classes():     # one class's sums at a time (memory)
            for rows_, fit in zip(per_class, candidates):
                rows_.append(_score(fit, A_, c_, yy_, n_, prior, sigma_j, moving, model, ext_))
        return [pooled_rows(r) for r in per_class]
    rows = score_all(fits)
    moving_scores = np.array([r['score_moving'] for r in rows])
    admissible = np.ones(len(rows), dtype=bool)
    top_moving = int(np.argmin(moving_scores))
    if n[2].sum() > 0:                       # within the noise (one standard error) or 2 %
        admissible = np.array([s <= moving_scores[top_moving] + max(
            _noise(r, rows[top_moving], '_moving'), PARSIMONY * moving_scores[top_moving])
            for s, r in zip(moving_scores, rows)])
    if n[2:4].sum() == 0:                    # nothing held out: the simplest
        best = 0
    else:
        scores = np.where(admissible, [r['score'] for r in rows], np.inf)
        top = int(np.argmin(scores))
        best = next(k for k in range(len(rows)) if admissible[k] and scores[k] <= scores[top]
                    + max(_noise(rows[k], rows[top]), PARSIMONY * scores[top]))
    if n[2:4].sum() > 0:                     # as many parameters: the better score decides
        chosen = fits[best].fm
        best = min((k for k in range(len(rows)) if admissible[k]
                    and fits[k].fm.law == chosen.law and fits[k].fm.groups == chosen.groups
                    and not fits[k].fm.per_joint), key=lambda k: (rows[k]['score'], k))
    for r, ok in zip(rows, admissible):
        r['admissible'] = bool(ok)
    for make, margin in ((refine, 0.0), (richer, PARSIMONY)):   # as many parameters; more
        extra = make(rows, best) if make is not None and n[2:4].sum() > 0 else None
        if extra is None:
            continue
        fits.append(extra)
        rows.append(score_all([extra])[0])
        ok = rows[-1]['score_moving'] <= moving_scores[top_moving] + max(
            _noise(rows[-1], rows[top_moving], '_moving'),
            PARSIMONY * moving_scores[top_moving])
        rows[-1]['admissible'] = bool(ok or n[2].sum() == 0)
        if ok and rows[-1]['score'] < rows[best]['score'] - max(
                _noise(rows[-1], rows[best]), margin * rows[best]['score']):
            best = len(rows) - 1
    noise = [_noise(r, rows[best]) if n[2:4].sum() else 0.0 for r in rows]
    for k, r in enumerate(rows):
        r['chosen'] = k == best
        r['noise'] = noise[k]
    return best, rows, sigma_j


def held_out_classes(sums, moving, columns, raw_fit=False):
    """Yield (A, c, yy, n, ext) of ``sums`` with each class of bins held out in turn.

    The classes of :meth:`Accumulator.system` (``held``): bins ``k`` with ``k % FOLDS`` equal
    to the class.  One class's sums at a time (memory): :func:`_select`'s ``classes``.
    """
    for held in range(FOLDS):
        (A, c, yy, n), ext = sums.system(moving, columns, extras=True, raw_fit=raw_fit,
                                         held=held)
        yield A, c, yy, n, ext
