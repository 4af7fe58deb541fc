"""Identification of inertial parameters, joint friction and rotor inertia from measured efforts.

Method (Khalil and Dombre, *Modeling, identification and control of robots*, chapter 12;
Gautier and Khalil 1990; Gautier 1997 for the weighting):

0. **Streaming sums** (:class:`Accumulator`; the in-memory :func:`identify` feeds it all the
   samples at once, ``rnea-ros identify`` block by block while it reads the bags, so that both
   give the same result).  Per joint j of the model, over the standard inertial columns its
   equation can depend on (the bodies it carries) and the F feature columns of every candidate
   friction model (and of the nominal law), the normal equations ``Y_j^T Y_j``, ``Y_j^T tau_j``,
   ``tau_j^T tau_j`` and the count are summed, separately for the equations with
   ``|qd_j| >= band`` and the slow ones, per bin of consecutive samples (20 to 40 bins of one
   length, doubled as the recording grows; every fifth bin is held out), plus per joint the
   range, the share of fast samples and the mean position.  The samples are then dropped:
   every sample is used and memory does not depend on the recording's length.  Everything
   below works on these sums.
1. The joints that the data moves are found (range > 0.02 and at least 50 equations beyond
   the band, however short a share of the recording: :func:`moving`); the others are held at
   their mean position and their efforts are not used.
2. Per candidate friction model (:class:`FrictionModel`: the law of
   :mod:`rnea_ros.core.friction` with some of its terms, plus rotor inertia Ia and an effort
   offset per joint), the base parameters of that motion
   (:mod:`rnea_ros.analysis.base_parameters`): a selection of standard columns and the linear
   map K from the standard to the base parameters.
3. The sums of the moving joints are mapped onto the union of every candidate's base columns
   (standard columns outside a joint's subtree are zero in its equations): normal equations
   ``W_j^T W_j``, ``W_j^T y_j`` per joint, in four parts (training or held-out bins, moving or
   slow).  A joint's equation at a sample where ``|qd_j| < band`` is left out by the
   linear-sign laws (stick-slip near zero velocity does not follow any of the laws and would
   bias Fs).
4. Per candidate: ordinary least squares, per joint the residual variance ``s_j^2`` (with a
   floor of 1 % of the median, so that a light link's joint cannot take all the weight), then
   weighted least squares, every equation of joint j divided by ``s_j`` (Gautier's two-step
   WLS), with the prior: the base parameters are pulled toward their nominal values (a ridge
   in the columns scaled by the prior scales), so directions the data does not excite keep the
   nominal values instead of making the problem singular.  The held-out blocks give each
   candidate's prediction error, on all held-out equations and on those of moving joints
   (``|qd_j| >= band``, where every law applies): with several recordings each one left out
   in turn, with one each fifth of its bins in turn (:mod:`rnea_ros.analysis.choice`).  A
   candidate is admissible when it predicts the moving equations within 2 % of the best of
   them: a law that wins only in the stick band
   (where a sticking joint's effort is anything static friction allows, e.g. a simulator's
   friction constraint) does so by trading its offset against Coulomb asymmetry and biasing
   the rigid body.  The simplest admissible candidate within one standard error (at least
   2 %) of the best admissible error on all held-out equations is chosen and refitted on all
   samples.  The covariance gives the
   relative standard deviation ``%sigma`` of each base parameter, and the share of its
   variance the data removed: base parameters the data leaves near the prior are reported as
   weakly excited, by name.
5. A physically consistent full parameter set: per body the pseudo-inertia
   ``J = [[Sigma, h], [h^T, m]]`` (``Sigma = tr(I)/2 1 - I``) must be positive definite (then
   m > 0 and the inertia about the COM is positive definite and satisfies the triangle
   inequalities), a linear matrix inequality in the ten parameters (Wensing, Kim and Slotine
   2017).  The full set is fitted so that ``K phi`` matches the weighted estimate in the metric
   of the data (``||R_w (K phi - beta)||``, R_w from a QR of W_w: the same as the weighted data
   misfit), plus the prior term pulling every parameter toward the nominal URDF (scaled by each
   body's nominal mass and size), which decides the directions the data cannot see; Fv, Fs,
   Fx and Ia are kept >= 0.  A convex problem, solved to its optimum by the barrier method
   (:func:`consistent_least_squares`): where the weighted estimate is consistent, the
   consistent set is that estimate.
6. The residual RMS of any parameter set over the accumulated samples is a quadratic form of
   the sums (:meth:`Accumulator.residual_rms`): the validation report needs no samples either.

Only when nothing is excited (no joint moves) is the data refused.
"""

from dataclasses import dataclass, field
import math

import numpy as np

from rnea_ros.analysis import accumulator
from rnea_ros.analysis.accumulator import (  # noqa: F401 - the stages, importable from here too
    _Columns, Accumulator, MIN_RANGE, MIN_USABLE, moving_joints, structural_columns)
from rnea_ros.analysis.choice import (  # noqa: F401 - the model choice, importable from here too
    _joint_groups, _per_joint, _prior_by_holdout, _select, _with_crosstalk, held_out_classes,
    NOT_WORSE, PARSIMONY, PRIOR_LADDER)
from rnea_ros.analysis.consistency import (  # noqa: F401
    _prior_scales, consistent_fit, consistent_least_squares, is_physically_consistent, MIN_EXTENT,
    parameters_of_pseudo_inertia, PSEUDO_BASIS, pseudo_inertia, pseudo_inertias,
    strictly_consistent, thickened)
from rnea_ros.analysis.estimation import (  # noqa: F401
    _Fit, _noise, _score, _score_folds, _upper_factor, asked_offsets, BASE_TOL, candidate_base,
    center, deployed_offsets, held_out_sse, joint_weights, offset_report, offset_warnings,
    pooled_rows, weighted_least_squares)
from rnea_ros.analysis.friction_models import (  # noqa: F401
    ASYMMETRIC, CROSSTALK_KEYS, describes_rest, feature_keys, features, friction_models,
    FrictionModel, nominal_friction_model, per_joint_scales, SIGN_BAND, SMOOTH_SCALES,
    STICK_BAND, STRIBECK, STRIBECK_RATIOS, SYMMETRIC, usable_equations, with_crosstalk)
from rnea_ros.core import friction as fr
from rnea_ros.core.dynamics import reaction_wrenches_batch
from rnea_ros.core.regressor import NPARAM, regressor_batch
from rnea_ros.core.sensor import crosstalk_efforts, SENSOR_OPTIONS


POOR_CONDITION = 1000.0      # warn above this condition number of the base regressor
WEAK = 0.5                   # a base parameter the data decides less than this share of is weak


@dataclass
class Identification:
    """Result of :func:`identify` (arrays in model order)."""

    phi: np.ndarray              # (10 nbodies,) physically consistent inertial parameters
    friction_table: np.ndarray   # (njoints, 6): Fv+, Fv-, Fs+, Fs-, Fx, off (core.friction)
    armature: np.ndarray         # (njoints,) Ia
    friction_model: FrictionModel
    moving: np.ndarray           # indices of the joints the data moves
    base_names: list
    beta: np.ndarray             # WLS estimate of the base parameters (with the prior)
    sigma_percent: np.ndarray    # relative standard deviation of each, %
    beta_consistent: np.ndarray  # K x of the consistent set
    condition: float
    joint_sigma: np.ndarray      # per moving joint: residual standard deviation of the OLS
    warnings: list = field(default_factory=list)
    samples: int = 0
    data_share: np.ndarray = None    # per base parameter: share of its variance the data removed
    weak: list = field(default_factory=list)          # weakly excited base parameters
    selection: list = field(default_factory=list)     # per candidate: held-out errors
    armature_combined: dict = field(default_factory=dict)   # joint -> base combination of Ia
    holdout: dict = None         # identified vs nominal on held-out validation equations
    prior: float = 1.0           # the prior weight used
    recording_offsets: dict = None   # joint -> per training recording its fitted offset
    filtering: dict = None       # parallel filtering or the measured equations, and the scores
    sensor_crosstalk: np.ndarray = None   # (njoints, 2) c_u, c_w (core.sensor), or None: 0

    def __post_init__(self):
        """Give ``sensor_crosstalk`` its zeros when the model has none."""
        if self.sensor_crosstalk is None:
            self.sensor_crosstalk = np.zeros((len(self.armature), len(SENSOR_OPTIONS)))

    @property
    def joint_params(self):
        """Return (njoints, 4) [Fv, Fs, Ia, off] (positive-direction Fv, Fs)."""
        t = self.friction_table
        return np.column_stack([t[:, fr.FV_POS], t[:, fr.FS_POS], self.armature,
                                t[:, fr.OFF]])

    def parameters(self):
        """Return x = [phi, per joint Fv+ Fv- Fs+ Fs- Fx off Ia] (see :func:`predict`)."""
        return np.concatenate([self.phi, np.column_stack([self.friction_table,
                                                          self.armature]).ravel()])

    def model_options(self, model):
        """Return the RobotModel options of the identified joint terms (joint -> value)."""
        names = model.joint_names
        t = self.friction_table
        cols = {'friction_viscous': fr.FV_POS, 'friction_viscous_negative': fr.FV_NEG,
                'friction_coulomb': fr.FS_POS, 'friction_coulomb_negative': fr.FS_NEG,
                'friction_stribeck': fr.FX, 'effort_offset': fr.OFF}
        out = {k: dict(zip(names, map(_negligible_to_zero, t[:, c]))) for k, c in cols.items()}
        out['armature'] = dict(zip(names, map(_negligible_to_zero, self.armature)))
        fm = self.friction_model
        if fm.per_joint:                  # the common values: those of the most joints
            v_s, v_st = fm.scales()
            out.update(coulomb_band=_most_common(v_s), stribeck_velocity=_most_common(v_st),
                       friction_coulomb_band=dict(zip(names, map(float, v_s))),
                       friction_stribeck_velocity=dict(zip(names, map(float, v_st))))
        else:
            out.update(coulomb_band=fm.scale, stribeck_velocity=fm.stribeck_velocity)
        out['friction_law'] = fm.law
        if fm.crosstalk:
            out.update({what: dict(zip(names, map(_negligible_to_zero,
                                                  self.sensor_crosstalk[:, k])))
                        for k, what in enumerate(SENSOR_OPTIONS)})
        return out


def _most_common(values):
    """Return the value that occurs most often (the smallest of a tie), as a float."""
    unique, counts = np.unique(values, return_counts=True)
    return float(unique[np.argmax(counts)])


def _negligible_to_zero(value, floor=1e-12):
    """Return ``value`` as a float, 0.0 below ``floor`` in magnitude.

    A bound-constrained solve leaves coefficients at 1e-55 or even the subnormal 5e-324 where
    it means zero; the ROS parameter-file parser (rcl) cannot read a subnormal and rejects
    the whole file.  1e-12 N·m, N·m·s/rad or kg·m² is far below anything a robot feels.
    """
    value = float(value)
    return 0.0 if abs(value) < floor else value


def identify(model, Q, QD, QDD, E, band=STICK_BAND, prior=1.0, seed=0, friction='auto',
             crosstalk=False):
    """Return the :class:`Identification` of the data (arrays (N, nq), (N, nv) x 3, model order).

    ``friction``: the candidate friction models (:func:`friction_models`: 'auto' tries all and
    keeps the simplest within 2 % of the best held-out prediction).  Weakly excited base
    parameters keep their nominal values (the prior) and are named in ``warnings``.  Raises
    ValueError only when the data cannot identify anything (no joint moves, too few samples).
    ``crosstalk``: the chosen law is also tried with a joint torque sensor's crosstalk
    (:mod:`rnea_ros.core.sensor`), kept when it predicts held-out data better (as
    ``rnea-ros identify`` does).  The same as an :class:`Accumulator` fed the samples in any
    blocks, then identified.
    """
    from rnea_ros.analysis.blas import single_threaded
    if Q.shape[0] < 50:
        raise ValueError(f'{Q.shape[0]} samples: identification needs at least 50')
    with single_threaded():
        sums = Accumulator(model, friction, band, crosstalk=crosstalk)
        sums.add(Q, QD, QDD, E)
        return identify_accumulated(sums, prior, seed)


def holdout_rms(sums, prior=1.0, seed=0, raw_fit=False):
    """Return (moving joints, held-out RMS per moving joint) of the first candidate model.

    Fitted (WLS with the prior) on the training bins of an :class:`Accumulator`, predicting its
    held-out bins: the score of one signal conditioning (:mod:`rnea_ros.analysis.cutoff`).
    ``raw_fit``: fitted on the measured equations (parallel filtering off).
    """
    model = sums.model
    moving = sums.moving_joints()
    if moving.size == 0 or sums.samples < 50:
        return moving, np.zeros(0)
    fm = sums.candidates[0]
    base = candidate_base(model, fm, moving, sums.hold(), seed)
    columns = _Columns(model, [base], moving, feature_keys([fm]))
    (A, c, yy, n), ext = sums.system(moving, columns, extras=True, raw_fit=raw_fit)
    fit = _Fit(model, fm, base, columns, moving)
    sigma_j = joint_weights(*fit.system(A, c, yy, n, fit.parts(False), ext['moments']))
    row = _score(fit, A, c, yy, n, prior, sigma_j, moving, model, ext)
    return moving, np.array(list(row['holdout_rms'].values()))


def identify_accumulated(sums, prior=1.0, seed=0, check=None, folds=None):
    """Return the :class:`Identification` of an :class:`Accumulator` (module doc, steps 1-5).

    ``check`` (the same samples conditioned for validation) and ``folds`` (per training
    recording, its fit and check sums) choose the prior weight
    (:func:`rnea_ros.analysis.choice._prior_by_holdout`).
    """
    model, band = sums.model, sums.band
    if sums.samples < 50:
        raise ValueError(f'{sums.samples} samples: identification needs at least 50')
    moving = sums.moving_joints()
    if moving.size == 0:
        raise ValueError(f'the data does not excite the robot: no joint moves through more than '
                         f'{MIN_RANGE} rad (or m) with {MIN_USABLE} samples faster than {band} '
                         'rad/s; record an excitation trajectory (rnea-ros excite) that moves '
                         'every joint through its range')
    candidates = sums.candidates
    bases = [candidate_base(model, fm, moving, sums.hold(), seed) for fm in candidates]
    keys = feature_keys(candidates)
    if sums.crosstalk:                   # the sensor crosstalk the choice may add
        keys += [k for k in CROSSTALK_KEYS if k not in keys]
    columns = _Columns(model, bases, moving, keys)
    modes = [False, True] if sums.parallel else [True]     # parallel filtering, measured
    weights, choices = None, []
    for raw_fit in modes:     # one mode's sums at a time (memory): the choice keeps scores
        (A, c, yy, n), ext = sums.system(moving, columns, extras=True, raw_fit=raw_fit,
                                         bins=False)      # the scores hold out every class
        if n[[0, 2]].sum() < 50:
            raise ValueError(f'{int(n.sum())} usable equations (joint speeds beyond {band} '
                             'rad/s): record longer or faster motion (rnea-ros excite)')
        fits = [_Fit(model, fm, b, columns, moving) for fm, b in zip(candidates, bases)]
        if folds:
            ext['folds'] = [(f.system(moving, columns, extras=True, raw_fit=raw_fit,
                                      bins=False),
                             f.system(moving, columns, raw_fit=True)) for f, _ in folds]
        classes = (lambda raw_fit=raw_fit:                 # noqa: E731 - K-fold, lazily
                   held_out_classes(sums, moving, columns, raw_fit))
        chosen, selection, weights = _select(
            fits, A, c, yy, n, prior, moving, model,
            _per_joint(model, sums, fits, columns, moving, seed), ext, weights, classes,
            _with_crosstalk(model, sums, fits, columns, moving, seed) if sums.crosstalk
            else None)
        choices.append((raw_fit, fits, chosen, selection))
        del A, c, yy, n, ext
    pick = 0
    if len(choices) == 2:                    # measured only if better beyond the noise
        a, b = choices[0][3][choices[0][2]], choices[1][3][choices[1][2]]
        if a.get('bins'):
            pick = int(b['score'] < a['score'] - _noise(b, a))
    raw_fit, fits, chosen, selection = choices[pick]
    filtering = {'parallel': not raw_fit, 'cutoff_hz': sums.parallel,
                 'scores': {('measured' if ch[0] else 'parallel'): ch[3][ch[2]]['score']
                            for ch in choices}}
    for ch in choices:
        for r in ch[3]:
            for key in ('bins', 'equations', 'bins_moving', 'equations_moving', 'sse', 'count'):
                r.pop(key, None)
    (A, c, yy, n), ext = sums.system(moving, columns, extras=True, raw_fit=raw_fit,
                                     bins=False)
    moments = ext['moments']
    fit = fits[chosen]
    holdout, joint_weight = None, np.ones(model.njoints)
    if check is not None and check.samples and (n[2:4].sum() > 0 or folds):
        prior, joint_weight, holdout = _prior_by_holdout(fit, sums, check, A, c, yy, n,
                                                         columns, moving, prior, folds,
                                                         moments, raw_fit)
    scale = fit.scale / np.sqrt(np.append(joint_weight[moving], 1.0)[
        _joint_groups(fit, model, moving)])
    used = fit.parts(False)
    every = used + tuple(k + 4 for k in used)
    Ac, cc, yy_all, n_all = fit.system(A, c, yy, n, every, moments)
    beta, percent, sigma_j, Aw, share, beta_data = weighted_least_squares(
        Ac, cc, yy_all, n_all, beta_prior=fit.beta_nom, scale=scale, prior=prior)
    # The offsets were profiled out per recording: their values are the recordings' own.
    beta = fit.deploy(beta, fit.offsets(beta, *fit.moments(moments, every)))
    for jj, k in fit.off_index.items():
        share[k] = 1.0
        percent[k] = (100.0 * sigma_j[jj] / math.sqrt(max(n_all[jj], 1)) / abs(beta[k])
                      if beta[k] else math.inf)
    # Excitation of the rigid body and rotor inertias: friction-only base parameters (an
    # offset and a Coulomb asymmetry act alike while the joint moves) are left out.
    body = [k for k, name in enumerate(fit.base.names) if not _friction_only(name)]
    ev = np.linalg.eigvalsh(Aw[np.ix_(body, body)])  # squared singular values of W_w
    condition = float(math.sqrt(ev[-1] / ev[0])) if ev[0] > 0 else math.inf
    weak = [{'name': fit.base.names[k], 'sigma_percent': float(percent[k]),
             'data_share': float(share[k])}
            for k in np.flatnonzero(share < WEAK)]
    warnings = _warnings(condition, weak)
    Rw = _upper_factor(Aw)
    phi, jp = consistent_fit(model, fit.base, Rw, beta_data, fit.joint_nom, moving, prior,
                             fit.fm, joint_weight)
    x = np.concatenate([phi, jp.ravel()])
    offsets = fit.offsets(fit.base.K @ x, *fit.moments(moments, every))
    jp = deployed_offsets(fit, jp, offsets, moving)
    x = np.concatenate([phi, jp.ravel()])
    table, armature = fit.fm.table(jp)
    crosstalk = fit.fm.crosstalk_of(jp)
    offsets, deployed, how = asked_offsets(fit, jp, fit.base.K @ x,
                                           fit.moments(moments, every), offsets, moving)
    warnings += offset_warnings(model, moving, offsets, holdout, deployed, how)
    return Identification(phi=phi, friction_table=table, armature=armature,
                          friction_model=fit.fm, moving=moving, base_names=fit.base.names,
                          beta=beta, sigma_percent=percent, beta_consistent=fit.base.K @ x,
                          condition=condition, joint_sigma=sigma_j, warnings=warnings,
                          samples=int(sums.samples), data_share=share, weak=weak,
                          selection=selection, holdout=holdout, prior=prior,
                          armature_combined=_armature_combined(model, fit, moving),
                          recording_offsets=offset_report(model, moving, offsets, deployed, how),
                          filtering=filtering, sensor_crosstalk=crosstalk)


def _warnings(condition, weak):
    """Return the warnings of an identification: poor conditioning, weakly excited parameters."""
    out = []
    rigid = [w for w in weak if not _friction_only(w['name'])]
    if condition > POOR_CONDITION:
        out.append(f'poor excitation: the condition number of the base regressor is '
                   f'{condition:.3g} (> {POOR_CONDITION:g}); the estimate keeps the nominal URDF '
                   'values along the weakly excited directions (record a richer motion with '
                   'rnea-ros excite to identify them)')
    if rigid:
        listed = '; '.join(f"{w['name']} ({w['sigma_percent']:.3g} %sigma, "
                           f"{100 * w['data_share']:.0f} % from data)" for w in rigid[:12])
        more = f' and {len(rigid) - 12} more' if len(rigid) > 12 else ''
        out.append(f'{len(rigid)} base parameters are weakly excited and stay near their '
                   f'nominal values (the prior): {listed}{more}')
    return out


def _friction_only(name):
    """Return whether a base-parameter name combines joint terms only (no link parameter)."""
    terms = [t.strip().split('*')[-1] for t in name.replace(' - ', ' + ').split(' + ')]
    return all(t.split('[')[0] in ('Fv', 'Fv+', 'Fv-', 'Fs', 'Fs+', 'Fs-', 'Fx', 'off', 'Xu',
                                   'Xw') for t in terms)


def _armature_combined(model, fit, moving):
    """Return {joint: base-parameter name} for each moving joint whose Ia is not alone.

    Where the base set regroups Ia_j with link parameters (Khalil and Dombre: Ia1 with ZZ1),
    only that sum is identifiable, not Ia_j itself.
    """
    rigid = NPARAM * model.nbodies
    P = fit.fm.size
    out = {}
    for j in moving:
        col = rigid + P * int(j) + len(fit.fm.groups)
        hit = np.flatnonzero(fit.base.K[:, col])
        if hit.size and not (hit.size == 1 and fit.base.base[hit[0]] == col
                             and np.count_nonzero(fit.base.K[hit[0]]) == 1):
            out[model.joint_names[j]] = ' ; '.join(fit.base.names[k] for k in hit)
    return out


def predict(model, params, Q, QD, QDD, chunk=4000, friction=None):
    """Return the (N, nv) efforts of identified parameters (the law of :mod:`core.friction`).

    ``params``: an :class:`Identification`; or x = [phi, per joint Fv Fs Ia off] (the
    regressor's symmetric joint columns, with the model's sign law); or x = [phi, per joint
    Fv+ Fv- Fs+ Fs- Fx off Ia] (:meth:`Identification.parameters`) with ``friction`` =
    (law, v_s, v_st) (default the model's).
    """
    nj = model.njoints
    crosstalk = None
    if isinstance(params, Identification):
        fm = params.friction_model
        friction = (fm.law, *fm.scales())
        crosstalk = params.sensor_crosstalk if params.sensor_crosstalk.any() else None
        params = params.parameters()
    params = np.asarray(params, dtype=float)
    rigid = NPARAM * model.nbodies
    phi, rest = params[:rigid], params[rigid:]
    if rest.size == 4 * nj:
        jp = rest.reshape(nj, 4)
        table = fr.friction_table(nj, jp[:, 0], jp[:, 1], offset=jp[:, 3])
        armature = jp[:, 2]
    elif rest.size == 7 * nj:
        jp = rest.reshape(nj, 7)
        table, armature = jp[:, :6], jp[:, 6]
    else:
        raise ValueError(f'expected {rigid} + 4 or 7 x {nj} parameters, got {params.size}')
    law, scale, vst = friction or (model.friction_law, model.coulomb_bands,
                                   model.stribeck_velocities)
    off = model.nv - model.njoints
    out = np.empty((Q.shape[0], model.nv))
    for start in range(0, Q.shape[0], chunk):
        sl = slice(start, start + chunk)
        out[sl] = (regressor_batch(model, Q[sl], QD[sl], QDD[sl]) @ phi).reshape(-1, model.nv)
    out[:, off:] += (fr.friction_effort(table, QD[:, off:], scale, law, vst)
                     + armature * QDD[:, off:])
    if crosstalk is not None:        # of the given model's wrenches, as identify fits it
        for start in range(0, Q.shape[0], chunk):
            sl = slice(start, start + chunk)
            out[sl, off:] += crosstalk_efforts(model, Q[sl], reaction_wrenches_batch(
                model, Q[sl], QD[sl], QDD[sl]), crosstalk)
    return out


# The joints-that-move rule, importable from here as before (its name is a local elsewhere).
moving = accumulator.moving
