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
   (``|qd_j| >= band``, where every law applies).  A candidate is admissible when it predicts
   the moving equations within 2 % of the best of them: a law that wins only in the stick band
   (where a sticking joint's effort is anything static friction allows, e.g. a simulator's
   friction constraint) does so by trading its offset against Coulomb asymmetry and biasing
   the rigid body.  The simplest admissible candidate within 2 % of the best admissible error
   on all held-out equations is chosen and refitted on all samples.  The covariance gives the
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

from rnea_ros.analysis.base_parameters import base_from_regressor, khalil_priority, random_states
from rnea_ros.core import friction as fr
from rnea_ros.core.regressor import (inertial_parameters, joint_parameters, NPARAM,
                                     parameter_names, regressor_batch)

MIN_EXTENT = 1e-3            # m: no body is thinner (keeps J strictly positive, URDF round trip)
STICK_BAND = 0.05            # |qd| below which an equation is left out (stick-slip), rad/s
MIN_RANGE = 0.02             # rad (or m): a joint whose range is smaller is held still
MIN_USABLE = 50              # equations beyond the stick band a moving joint needs
POOR_CONDITION = 1000.0      # warn above this condition number of the base regressor
WEAK = 0.5                   # a base parameter the data decides less than this share of is weak
BASE_TOL = 1e-5              # a column this close to the span of the others is not a base one
PARSIMONY = 0.02             # a richer friction model must predict 2 % better to be chosen
#                              (and may not predict the moving joints' equations 2 % worse)
SMOOTH_SCALES = (0.01, 0.02, 0.05, 0.1)  # v_s tried for the tanh law, rad/s (or m/s)
SIGN_BAND = 1e-6             # rad/s (m/s): the 'sign' candidate's band, Coulomb = sign(qd)
PRIOR_LADDER = (1.0, 10.0, 100.0, 1e3, 1e4, 1e5)   # prior weights tried against the nominal
NOT_WORSE = 1e-3             # held-out RMS above the nominal's by more than this share: worse
STRIBECK_RATIOS = (2.0, 5.0)             # v_st / v_s tried

# Parameter groups of the candidate friction models: (name, columns of friction.basis summed).
SYMMETRIC = (('Fv', (fr.FV_POS, fr.FV_NEG)), ('Fs', (fr.FS_POS, fr.FS_NEG)), ('off', (fr.OFF,)))
ASYMMETRIC = (('Fv+', (fr.FV_POS,)), ('Fv-', (fr.FV_NEG,)), ('Fs+', (fr.FS_POS,)),
              ('Fs-', (fr.FS_NEG,)), ('off', (fr.OFF,)))
STRIBECK = ASYMMETRIC + (('Fx', (fr.FX,)),)
_JOINT_SCALE = {'F': 0.1, 'o': 0.1, 'I': 0.01}     # prior scales by first letter (Fv.., off, Ia)


@dataclass(frozen=True)
class FrictionModel:
    """A candidate friction law: which terms of :mod:`rnea_ros.core.friction` are fitted.

    ``groups`` name the parameters and the basis columns each multiplies (a symmetric Fv
    multiplies both Fv+ and Fv- columns); every model adds rotor inertia ``Ia``.
    """

    name: str
    law: str
    scale: object                 # v_s of the sign (the Coulomb band for the linear law): a
    stribeck_velocity: object     # float, or a tuple per joint (model order); so is v_st
    groups: tuple

    @property
    def per_joint(self):
        """Return whether v_s and v_st are given joint by joint (tuples)."""
        return isinstance(self.scale, tuple)

    def scales(self, joint=None):
        """Return (v_s, v_st) of one joint (index), or of all (floats or arrays per joint)."""
        if not self.per_joint:
            return self.scale, self.stribeck_velocity
        if joint is None:
            return np.array(self.scale), np.array(self.stribeck_velocity)
        return self.scale[joint], self.stribeck_velocity[joint]

    @property
    def parameter_names(self):
        """Return the per-joint parameter names: the groups, then Ia."""
        return tuple(g for g, _ in self.groups) + ('Ia',)

    def table(self, params):
        """Return the (njoints, 6) friction table and (njoints,) Ia of per-joint parameters."""
        params = np.asarray(params, dtype=float).reshape(-1, len(self.groups) + 1)
        table = np.zeros((params.shape[0], len(fr.PARAMETERS)))
        for k, (_, cols) in enumerate(self.groups):
            for c in cols:
                table[:, c] = params[:, k]
        return table, params[:, -1]

    def parameters_of(self, table, armature):
        """Return the per-joint parameters (njoints, P) of a friction table (group means)."""
        out = [np.mean(table[:, list(cols)], axis=1) for _, cols in self.groups]
        return np.column_stack(out + [armature])

    def columns(self, qd, qdd, joint=None):
        """Return the (..., P) regressor columns of velocities/accelerations of joint ``joint``.

        ``joint=None``: the last axis of qd holds every joint (or the scales are common).
        """
        v_s, v_st = self.scales(joint)
        B = fr.basis(qd, v_s, self.law, v_st)
        return np.stack([B[..., list(cols)].sum(axis=-1) for _, cols in self.groups]
                        + [np.asarray(qdd, dtype=float)], axis=-1)

    def feature_keys(self, joint=None):
        """Return a hashable key per parameter of a joint: equal keys are equal columns.

        Per-joint scales: the keys of joint ``joint``; ``None``: the union over joints.
        """
        if self.per_joint and joint is None:
            return feature_keys([FrictionModel(self.name, self.law, *self.scales(j), self.groups)
                                 for j in range(len(self.scale))])
        v_s, v_st = (float(v) for v in self.scales(joint))
        keys = []
        for _, cols in self.groups:
            shape = any(c in (fr.FS_POS, fr.FS_NEG, fr.FX) for c in cols)
            keys.append((self.law if shape else '', v_s if shape else 0.0,
                         v_st if fr.FX in cols else 0.0, cols))
        return keys + [('Ia',)]


def friction_models(model, which='auto'):
    """Return the candidate :class:`FrictionModel` list, simplest first.

    ``which``: 'auto' (all), 'coulomb' (symmetric Fv, Fs, linear sign), 'asymmetric' (Fv+-,
    Fs+-, linear sign), 'sign' (as asymmetric with a band of SIGN_BAND: the Coulomb term
    follows the sign of the reported velocity down to rest, fitted on every row) or 'tanh'
    (Fv+-, Fs+- and a Stribeck term Fx on the tanh sign, every v_s of SMOOTH_SCALES with
    v_st = v_s times each of STRIBECK_RATIOS; named 'tanh v_s/v_st').
    """
    band = model.coulomb_band
    out = {'coulomb': [FrictionModel('coulomb', 'linear', band, fr.STRIBECK_VELOCITY,
                                     SYMMETRIC)],
           'asymmetric': [FrictionModel('asymmetric', 'linear', band, fr.STRIBECK_VELOCITY,
                                        ASYMMETRIC)],
           'sign': [FrictionModel('sign', 'linear', SIGN_BAND, fr.STRIBECK_VELOCITY,
                                  ASYMMETRIC)],
           'tanh': [FrictionModel(f'tanh {v:g}/{k * v:g}', 'tanh', v, k * v, STRIBECK)
                    for v in SMOOTH_SCALES for k in STRIBECK_RATIOS]}
    if which == 'auto':
        return [m for group in out.values() for m in group]
    if which not in out:
        raise ValueError(f"friction model must be 'auto' or one of {list(out)}, got {which!r}")
    return out[which]


def nominal_friction_model(model):
    """Return the symmetric :class:`FrictionModel` of the model's own law and velocity scales."""
    v_s, v_st = model.coulomb_bands, model.stribeck_velocities
    if np.all(v_s == model.coulomb_band) and np.all(v_st == model.stribeck_velocity):
        return FrictionModel('nominal', model.friction_law, model.coulomb_band,
                             model.stribeck_velocity, SYMMETRIC)
    return FrictionModel('nominal', model.friction_law, tuple(map(float, v_s)),
                         tuple(map(float, v_st)), SYMMETRIC)


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


def usable_equations(qd, band=STICK_BAND):
    """Return the mask of joint equations a linear-law fit uses: ``|qd| >= band``.

    Near zero velocity real joints stick and slip (pre-sliding, Stribeck hump) and follow no
    Coulomb law, which would bias Fs up and Fv down: identify and analyze leave those
    equations out (a smooth law may use them, :meth:`Accumulator.system`).
    """
    return np.abs(qd) >= band


def moving_joints(model, Q, QD, band):
    """Return the indices of the joints the data moves (:func:`moving`)."""
    off_q, off_v = model.nq - model.njoints, model.nv - model.njoints
    span = np.ptp(Q[:, off_q:], axis=0) if len(Q) else np.zeros(model.njoints)
    fast = np.sum(np.abs(QD[:, off_v:]) > band, axis=0) if len(QD) else span
    return moving(span, fast)


def moving(span, fast):
    """Return the joints whose own equations inform the fit: range and usable equations.

    A joint moves when its range exceeds MIN_RANGE and at least MIN_USABLE of its equations
    lie beyond the stick band (``fast``: their count per joint), however short a share of the
    recording that is (a gripper finger opening and closing a few times).  Its equations then
    weigh its body's mass and its friction and rotor inertia directly; what they leave
    undecided keeps the nominal value (the prior).  Without them, the other joints' equations
    alone would decide its body's parameters, through their sums with the bodies around it.
    """
    return np.flatnonzero((np.asarray(span) > MIN_RANGE) & (np.asarray(fast) >= MIN_USABLE))


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


def feature_keys(models):
    """Return the union of the feature keys of friction models (first occurrence order)."""
    keys = []
    for fm in models:
        for key in fm.feature_keys():
            if key not in keys:
                keys.append(key)
    return keys


def features(keys, qd, qdd):
    """Return the (..., F) feature columns ``keys`` of joint velocities and accelerations (...)."""
    shapes = {(k[0], k[1], k[2]) for k in keys if len(k) == 4 and k[0]}
    basis = {s: fr.basis(qd, s[1], s[0], s[2] or fr.STRIBECK_VELOCITY) for s in shapes}
    plain = fr.basis(qd, 1.0, 'linear', fr.STRIBECK_VELOCITY)     # Fv and off columns
    out = np.empty(np.shape(qd) + (len(keys),))
    for f, key in enumerate(keys):
        if key == ('Ia',):
            out[..., f] = qdd
            continue
        law, scale, vst, cols = key
        B = basis[(law, scale, vst)] if law else plain
        out[..., f] = B[..., cols[0]] if len(cols) == 1 else B[..., list(cols)].sum(axis=-1)
    return out


def structural_columns(model, states=12, seed=0):
    """Return per joint the standard inertial columns its equation can depend on.

    A joint's effort depends only on the bodies it carries (its subtree, RBDA section 5.3):
    the regressor's other columns are exactly zero.  Found from random states of every joint
    (an entry of the subtree that is zero at a dozen random states is zero everywhere).
    """
    rng = np.random.default_rng(seed)
    Q, QD, QDD = random_states(model, states, rng)
    W = regressor_batch(model, Q, QD, QDD).reshape(states, model.nv, -1)
    off = model.nv - model.njoints
    return [np.flatnonzero(np.any(W[:, off + j] != 0.0, axis=0)) for j in range(model.njoints)]


class _Columns:
    """The union of the candidates' base columns: rigid ones, then F features per moving joint."""

    def __init__(self, model, bases, moving, keys):
        rigid = NPARAM * model.nbodies
        self.rigid = np.unique(np.concatenate([b.base[b.base < rigid] for b in bases]))
        self.keys, self.moving = list(keys), np.asarray(moving)
        self.F = len(self.keys)
        self.size = self.rigid.size + self.moving.size * self.F
        self.model = model

    def select(self, fm, base):
        """Return the union columns of a candidate's base columns (in base order)."""
        rigid = NPARAM * self.model.nbodies
        P = len(fm.groups) + 1
        where = {j: k for k, j in enumerate(self.moving)}
        out = []
        for col in base.base:
            if col < rigid:
                out.append(int(np.searchsorted(self.rigid, col)))
            else:
                joint, k = divmod(int(col) - rigid, P)
                key = fm.feature_keys(joint)[k]
                out.append(self.rigid.size + where[joint] * self.F + self.keys.index(key))
        return np.array(out, dtype=int)


class Accumulator:
    """Normal equations of a recording accumulated block by block (streaming identification).

    ``add(Q, QD, QDD, E)`` takes conditioned samples (model order, any block length) and keeps
    only sums, never the samples: per joint j of the model, over the standard inertial columns
    its equation can depend on (:func:`structural_columns`) and the F feature columns of every
    candidate friction model and of the nominal model's law (:func:`features`),
    ``A_j = Y_j^T Y_j``, ``c_j = Y_j^T tau_j``, ``tau_j^T tau_j`` and the count, separately for
    the equations with ``|qd_j| >= band`` and the slow ones (stick band), and per bin of
    consecutive samples.  The bins have one length, a power of two, doubled (adjacent bins
    merged) whenever there would be more than ``2 bins``: at the end there are ``bins`` to
    ``2 bins`` bins whatever the recording's length (fewer for fewer samples), and their
    boundaries depend only on the number of samples, not on how they were split into blocks.
    Every fifth bin (2, 7, 12, ...) is held out for the choice of the friction model.  Also kept:
    per joint the range, the count of samples faster than ``band`` and the mean position (what
    :func:`moving_joints` and the held joints' positions need).

    Memory: at most ``2 bins x 2 x sum_j (10 n_j + F)^2`` numbers (n_j bodies carried by joint
    j), 33 MB for the 9-joint panda with every candidate (F = 24), whatever the length.  After
    the pass, :meth:`identify` finds the moving joints and base parameters and maps the sums
    onto the union of the candidates' base columns (base columns are standard columns: a
    selection); the in-memory :func:`identify` is one ``add`` of all samples followed by the
    same :meth:`identify`.
    """

    def __init__(self, model, friction='auto', band=STICK_BAND, bins=20, chunk=4000):
        """Prepare empty sums (``friction`` as :func:`identify`)."""
        self.model, self.band, self.chunk, self.max_bins = model, band, chunk, 2 * bins
        self.candidates = (friction_models(model, friction) if isinstance(friction, str)
                           else list(friction))
        self.nominal = nominal_friction_model(model)
        self.keys = feature_keys(self.candidates + [self.nominal])
        self.F = len(self.keys)
        self.cols = structural_columns(model)
        self.sizes = [c.size + self.F for c in self.cols]
        nj = model.njoints
        self.bins, self.bin_size, self.samples = [], 1, 0
        self.q_min, self.q_max = np.full(nj, np.inf), np.full(nj, -np.inf)
        self.q_sum, self.fast = np.zeros(nj), np.zeros(nj)

    def _empty_bin(self):
        return [(np.zeros((2, m, m)), np.zeros((2, m)), np.zeros(2), np.zeros(2, dtype=int))
                for m in self.sizes]

    def _grow(self, total):
        """Double the bin length until ``total`` samples fit in at most 2 bins bins."""
        while -(-total // self.bin_size) > self.max_bins:
            merged = []
            for k in range(0, len(self.bins), 2):
                pair = self.bins[k:k + 2]
                if len(pair) == 2:
                    for a, b in zip(*pair):
                        for x, y in zip(a, b):
                            x += y
                merged.append(pair[0])
            self.bins, self.bin_size = merged, 2 * self.bin_size

    def add(self, Q, QD, QDD, E, QDR=None):
        """Accumulate samples (N, nq), (N, nv) x 3 in model order.

        ``QDR`` (N, nv): the velocities the recording reported, for the friction features and
        the stick band (friction acts on the joint's own velocity reading, as in the node);
        None: ``QD``.
        """
        QDR = QD if QDR is None else QDR
        model = self.model
        N = Q.shape[0]
        if N == 0:
            return
        if not np.all(np.isfinite(E)):
            raise ValueError('the efforts contain non-finite values')
        off_q, off = model.nq - model.njoints, model.nv - model.njoints
        self.q_min = np.minimum(self.q_min, Q[:, off_q:].min(axis=0))
        self.q_max = np.maximum(self.q_max, Q[:, off_q:].max(axis=0))
        self.q_sum += Q[:, off_q:].sum(axis=0)
        self.fast += np.sum(np.abs(QDR[:, off:]) > self.band, axis=0)
        self._grow(self.samples + N)
        for start in range(0, N, self.chunk):
            sl = slice(start, min(start + self.chunk, N))
            W = regressor_batch(model, Q[sl], QD[sl], QDD[sl])
            W = W.reshape(-1, model.nv, NPARAM * model.nbodies)
            first = self.samples + start
            b = (first + np.arange(W.shape[0])) // self.bin_size
            while len(self.bins) <= b[-1]:
                self.bins.append(self._empty_bin())
            edges = np.concatenate([[0], np.flatnonzero(np.diff(b)) + 1, [b.size]])
            feats = features(self.keys, QDR[sl, off:], QDD[sl, off:])   # (n, njoints, F)
            for j in range(model.njoints):
                row = off + j
                Wj = np.hstack([W[:, row][:, self.cols[j]], feats[:, j]])
                yj = E[sl, row]
                slow = ~usable_equations(QDR[sl, row], self.band)
                for lo, hi in zip(edges[:-1], edges[1:]):
                    A, c, yy, n = self.bins[b[lo]][j]
                    for p in (0, 1):
                        mask = slow[lo:hi] == bool(p)
                        if not mask.any():
                            continue
                        Wk, yk = Wj[lo:hi][mask], yj[lo:hi][mask]
                        A[p] += Wk.T @ Wk
                        c[p] += yk @ Wk
                        yy[p] += yk @ yk
                        n[p] += yk.size
        self.samples += N

    def moving_joints(self):
        """Return the joints the data moves (as :func:`moving_joints`)."""
        if self.samples == 0:
            return np.zeros(0, dtype=int)
        return moving(self.q_max - self.q_min, self.fast)

    def hold(self):
        """Return the mean position of every joint (where the joints that do not move stay)."""
        return self.q_sum / max(self.samples, 1)

    def totals(self, held_out=False):
        """Return per joint (A, c, yy, n) summed over every bin (or the held-out ones)."""
        out = []
        for j in range(self.model.njoints):
            parts = [b[j] for k, b in enumerate(self.bins) if not held_out or k % 5 == 2]
            out.append(tuple(sum(p[k].sum(axis=0) for p in parts) for k in range(4)))
        return out

    def system(self, moving, columns):
        """Return per part and moving joint (A, c, yy, n) on the union columns of ``columns``.

        Parts (the leading axis): 0 and 1 the training bins' equations with ``|qd_j| >= band``
        and below it (slow: stick-slip near zero velocity, which only a smooth law may use), 2
        and 3 the same for the held-out bins.  Standard columns outside a joint's subtree are
        zero in its equations; its features go to its own block of the union.
        """
        nm, size, F = len(moving), columns.size, columns.F
        r = columns.rigid.size
        A, c = np.zeros((4, nm, size, size)), np.zeros((4, nm, size))
        yy, n = np.zeros((4, nm)), np.zeros((4, nm), dtype=int)
        order = [self.keys.index(k) for k in columns.keys]
        for jj, j in enumerate(moving):
            cols = self.cols[j]
            inside = np.isin(columns.rigid, cols)
            union = np.concatenate([np.flatnonzero(inside), r + jj * F + np.arange(F)])
            local = np.concatenate([np.searchsorted(cols, columns.rigid[inside]),
                                    cols.size + np.asarray(order, dtype=int)])
            for k, bin_ in enumerate(self.bins):
                held = 2 if k % 5 == 2 else 0
                Ab, cb, yb, nb = bin_[j]
                for p in (0, 1):
                    A[held + p, jj][np.ix_(union, union)] += Ab[p][np.ix_(local, local)]
                    c[held + p, jj, union] += cb[p][local]
                    yy[held + p, jj] += yb[p]
                    n[held + p, jj] += nb[p]
        return A, c, yy, n

    def vector(self, j, phi, fm, joint_params):
        """Return joint j's local parameter vector of rigid ``phi`` and a model's joint terms."""
        v = np.zeros(self.sizes[j])
        v[:self.cols[j].size] = phi[self.cols[j]]
        for key, value in zip(fm.feature_keys(j), joint_params):
            v[self.cols[j].size + self.keys.index(key)] += value
        return v

    def residual_rms(self, params, joints, held_out=False):
        """Return per joint the RMS of measured minus predicted efforts over every sample.

        ``held_out``: over the held-out bins only.

        ``params``: an :class:`Identification`, or x = [phi, per joint Fv Fs Ia off] with the
        model's own friction law (as :func:`predict`).  From the sums: ``tau^T tau - 2 v^T c +
        v^T A v``, v the joint's parameters in its columns.
        """
        rigid = NPARAM * self.model.nbodies
        if isinstance(params, Identification):
            phi, fm = params.phi, params.friction_model
            jp = fm.parameters_of(params.friction_table, params.armature)
        else:
            params = np.asarray(params, dtype=float)
            phi, fm = params[:rigid], self.nominal
            x = params[rigid:].reshape(-1, 4)                     # Fv Fs Ia off
            jp = np.column_stack([x[:, 0], x[:, 1], x[:, 3], x[:, 2]])   # Fv Fs off Ia
        totals = self.totals(held_out)
        out = []
        for j in joints:
            A, c, yy, n = totals[j]
            v = self.vector(j, phi, fm, jp[j])
            out.append(math.sqrt(max(yy - 2.0 * v @ c + v @ A @ v, 0.0) / max(n, 1)))
        return np.array(out)

    def effort_rms(self, joints, held_out=False):
        """Return per joint the RMS of the measured efforts."""
        totals = self.totals(held_out)
        return np.array([math.sqrt(totals[j][2] / max(totals[j][3], 1)) for j in joints])

    def correlation(self, x, joints):
        """Return per joint the correlation of measured efforts with those of parameters x.

        x = [phi, per joint Fv Fs Ia off] with the model's own friction law; from the sums:
        ``v^T c / sqrt(tau^T tau v^T A v)`` (not centred: a sign flip gives -1).
        """
        rigid = NPARAM * self.model.nbodies
        jx = np.asarray(x[rigid:], dtype=float).reshape(-1, 4)
        jp = np.column_stack([jx[:, 0], jx[:, 1], jx[:, 3], jx[:, 2]])
        totals = self.totals()
        out = []
        for j in joints:
            A, c, yy, n = totals[j]
            v = self.vector(j, x[:rigid], self.nominal, jp[j])
            out.append(float(v @ c / max(math.sqrt(max(yy * (v @ A @ v), 0.0)), 1e-300)))
        return np.array(out)

    def identify(self, prior=1.0, seed=0, check=None, folds=None):
        """Return the :class:`Identification` of the accumulated samples (see :func:`identify`).

        ``check``: an Accumulator of the same samples conditioned for validation (the same
        bins): the prior weight is then raised along PRIOR_LADDER until the fit of the training
        bins predicts no moving joint's held-out equations of ``check`` worse than the nominal
        model (:func:`_prior_by_holdout`).
        """
        return _identify(self, prior, seed, check, folds)


# -- the pseudo-inertia: physical consistency as a linear matrix inequality -----------------------

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


# -- estimation ---------------------------------------------------------------------------------

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


def _base_scales(base, standard_scales):
    """Return a prior scale per base parameter: sqrt(sum_i K_ki^2 s_i^2)."""
    return np.sqrt((base.K ** 2) @ (standard_scales ** 2))


def consistent_fit(model, base, Rw, beta, joint_nom, moving, prior=1.0, fm=None,
                   joint_weight=None):
    """Return (phi, joint_params): the physically consistent set matching beta in the R_w metric.

    Minimises ``||R_w (K x - beta)||^2 + prior ||(x - x_nom) / scale||^2`` over x = [phi, the
    moving joints' parameters] (the other joints keep ``joint_nom``), every body's pseudo-inertia
    positive definite, Fv, Fs, Fx, Ia > 0 (:func:`consistent_least_squares`), offsets free.
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
    P = len(fm.groups) + 1
    rigid = NPARAM * nb
    phi_nom = inertial_parameters(model)
    free = np.zeros((nj, P), dtype=bool)
    free[moving] = True
    jnom = np.asarray(joint_nom, dtype=float).reshape(nj, P)
    signed = np.tile([g == 'off' for g in fm.parameter_names], (nj, 1))[free]
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


def describes_rest(fm):
    """Return whether a friction model describes slow rows too (fitted on every row).

    A smooth law, and the sign law (a band so narrow that Coulomb friction follows the sign of
    the reported velocity down to rest) do; the linear law with a wide band leaves them out.
    """
    return fm.law == 'tanh' or (not fm.per_joint and fm.law == 'linear'
                                and float(fm.scale) <= SIGN_BAND)


def identify(model, Q, QD, QDD, E, band=STICK_BAND, prior=1.0, seed=0, friction='auto'):
    """Return the :class:`Identification` of the data (arrays (N, nq), (N, nv) x 3, model order).

    ``friction``: the candidate friction models (:func:`friction_models`: 'auto' tries all and
    keeps the simplest within 2 % of the best held-out prediction).  Weakly excited base
    parameters keep their nominal values (the prior) and are named in ``warnings``.  Raises
    ValueError only when the data cannot identify anything (no joint moves, too few samples).
    The same as an :class:`Accumulator` fed the samples in any blocks, then identified.
    """
    from rnea_ros.analysis.blas import single_threaded
    if Q.shape[0] < 50:
        raise ValueError(f'{Q.shape[0]} samples: identification needs at least 50')
    with single_threaded():
        sums = Accumulator(model, friction, band)
        sums.add(Q, QD, QDD, E)
        return sums.identify(prior, seed)


def holdout_rms(sums, prior=1.0, seed=0):
    """Return (moving joints, held-out RMS per moving joint) of the first candidate model.

    Fitted (WLS with the prior) on the training bins of an :class:`Accumulator`, predicting its
    held-out bins: the score of one signal conditioning (:mod:`rnea_ros.analysis.cutoff`).
    """
    model = sums.model
    moving = sums.moving_joints()
    if moving.size == 0 or sums.samples < 50:
        return moving, np.zeros(0)
    fm = sums.candidates[0]
    base = candidate_base(model, fm, moving, sums.hold(), seed)
    columns = _Columns(model, [base], moving, feature_keys([fm]))
    A, c, yy, n = sums.system(moving, columns)
    fit = _Fit(model, fm, base, columns, moving)
    sigma_j = joint_weights(*fit.system(A, c, yy, n, fit.parts(False)))
    row = _score(fit, A, c, yy, n, prior, sigma_j, moving, model)
    return moving, np.array(list(row['holdout_rms'].values()))


def _prior_by_holdout(fit, sums, check, A, c, yy, n, columns, moving, prior, folds=None):
    """Return (prior weight, per-joint weights, report): the weakest pull not worse than nominal.

    Held-out data: with ``folds`` (per training recording, its (fit sums, check sums)), each
    recording in turn predicted by the chosen model fitted on the others (a recording the fit
    did not see: offsets that change from run to run show there); otherwise the held-out bins of
    ``check`` predicted by the fit of the training bins of ``sums``.  ``check`` holds the same
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
    if folds:
        systems = [(fit.system(*f.system(moving, columns), used + tuple(k + 2 for k in used)),
                    fit.system(*k.system(moving, columns), (0, 1, 2, 3)), k) for f, k in folds]
        total = [sum(s[0][i] for s in systems) for i in range(4)]
        tests = [(tuple(t - s[0][i] for i, t in enumerate(total)), s[1]) for s in systems]
        nominal_sse = sum(k.residual_rms(x_nom, moving) ** 2 * _counts(k, moving)
                          for _, _, k in systems)
        nominal_n = sum(_counts(k, moving) for _, _, k in systems)
    else:
        train = fit.system(A, c, yy, n, used)
        tests = [(train, fit.system(*check.system(moving, columns), (2, 3)))]
        nominal_n = _counts(check, moving, True)
        nominal_sse = check.residual_rms(x_nom, moving, held_out=True) ** 2 * nominal_n
    nominal = np.sqrt(nominal_sse / np.maximum(nominal_n, 1))
    sigma_j = joint_weights(*tests[0][0])
    groups = _joint_groups(fit, model, moving)

    def held_out(weight, mult):
        scale = fit.scale / np.sqrt(mult[groups])
        sse, cnt = np.zeros(len(moving)), np.zeros(len(moving))
        for (Af, cf, yf, nf), (Ah, ch, yh, nh) in tests:
            beta = weighted_least_squares(Af, cf, yf, nf, sigma_j, fit.beta_nom, scale,
                                          weight)[0]
            sse += np.clip([yh[j] - 2.0 * beta @ ch[j] + beta @ Ah[j] @ beta
                            for j in range(len(nh))], 0.0, None)
            cnt += nh
        return np.sqrt(sse / np.maximum(cnt, 1))

    rows, pick = [], None
    for k in PRIOR_LADDER:
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
    report = {'data': 'recordings left out in turn' if folds else 'held-out bins',
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
    P = len(fit.fm.groups) + 1
    where = {int(j): k for k, j in enumerate(moving)}
    out = np.full(len(fit.base.base), len(moving))
    for k, row in enumerate(fit.base.K):
        cols = np.flatnonzero(row)
        if cols.size and np.all(cols >= rigid):
            joints = {(int(col) - rigid) // P for col in cols}
            if len(joints) == 1 and next(iter(joints)) in where:
                out[k] = where[next(iter(joints))]
    return out


def _identify(sums, prior, seed, check=None, folds=None):
    """Return the :class:`Identification` of an :class:`Accumulator` (module doc, steps 1-5)."""
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
    columns = _Columns(model, bases, moving, feature_keys(candidates))
    A, c, yy, n = sums.system(moving, columns)
    if n[[0, 2]].sum() < 50:
        raise ValueError(f'{int(n.sum())} usable equations (joint speeds beyond {band} rad/s): '
                         'record longer or faster motion (rnea-ros excite)')
    fits = [_Fit(model, fm, b, columns, moving) for fm, b in zip(candidates, bases)]

    def per_joint(rows, best):
        fm = per_joint_scales(model, [f.fm for f in fits], rows, best, moving)
        if fm is None:
            return None
        base = candidate_base(model, fm, moving, sums.hold(), seed)
        rigid = base.base[base.base < NPARAM * model.nbodies]
        if not np.all(np.isin(rigid, columns.rigid)):     # not in the union: not tried
            return None
        return _Fit(model, fm, base, columns, moving)
    chosen, selection = _select(fits, A, c, yy, n, prior, moving, model, per_joint)
    fit = fits[chosen]
    holdout, joint_weight = None, np.ones(model.njoints)
    if check is not None and check.samples and (n[2:].sum() > 0 or folds):
        prior, joint_weight, holdout = _prior_by_holdout(fit, sums, check, A, c, yy, n,
                                                         columns, moving, prior, folds)
    scale = fit.scale / np.sqrt(np.append(joint_weight[moving], 1.0)[
        _joint_groups(fit, model, moving)])
    used = fit.parts(False)
    Ac, cc, yy_all, n_all = fit.system(A, c, yy, n, used + tuple(k + 2 for k in used))
    beta, percent, sigma_j, Aw, share, beta_data = weighted_least_squares(
        Ac, cc, yy_all, n_all, beta_prior=fit.beta_nom, scale=scale, prior=prior)
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
    table, armature = fit.fm.table(jp)
    x = np.concatenate([phi, jp.ravel()])
    return Identification(phi=phi, friction_table=table, armature=armature,
                          friction_model=fit.fm, moving=moving, base_names=fit.base.names,
                          beta=beta, sigma_percent=percent, beta_consistent=fit.base.K @ x,
                          condition=condition, joint_sigma=sigma_j, warnings=warnings,
                          samples=int(sums.samples), data_share=share, weak=weak,
                          selection=selection, holdout=holdout, prior=prior,
                          armature_combined=_armature_combined(model, fit, moving))


def per_joint_scales(model, candidates, rows, best, moving):
    """Return the chosen smooth law with each moving joint's own v_s and v_st, or None.

    Per moving joint, among the candidates of the chosen one's law and terms (the grid of
    SMOOTH_SCALES x STRIBECK_RATIOS), the scales whose fit predicts that joint's held-out
    equations best (``holdout_rms``; a joint's friction columns enter its own equations only);
    the other joints keep the chosen candidate's.  None when the chosen law is not smooth or
    every joint picks the chosen scales.
    """
    chosen = candidates[best]
    if chosen.law != 'tanh' or chosen.per_joint:
        return None
    peers = [k for k, fm in enumerate(candidates)
             if fm.law == chosen.law and fm.groups == chosen.groups and not fm.per_joint]
    v_s = np.full(model.njoints, float(chosen.scale))
    v_st = np.full(model.njoints, float(chosen.stribeck_velocity))
    for j in moving:
        name = model.joint_names[j]
        k = min(peers, key=lambda k: rows[k]['holdout_rms'][name])
        v_s[j], v_st[j] = candidates[k].scale, candidates[k].stribeck_velocity
    if np.all(v_s == chosen.scale) and np.all(v_st == chosen.stribeck_velocity):
        return None
    return FrictionModel(f'{chosen.law} per joint', chosen.law, tuple(map(float, v_s)),
                         tuple(map(float, v_st)), chosen.groups)


def _score(fit, A, c, yy, n, prior, sigma_j, moving, model):
    """Return a candidate's row of :func:`_select`: fitted on training, held-out errors."""
    Af, cf, yf, nf = fit.system(A, c, yy, n, fit.parts(False))
    beta = weighted_least_squares(Af, cf, yf, nf, sigma_j, fit.beta_nom, fit.scale, prior)[0]
    sse, nh = _held_out_sse(fit, beta, A, c, yy, n, fit.parts(True))
    sse_moving, nm = _held_out_sse(fit, beta, A, c, yy, n, (2,))
    rms = np.sqrt(sse / np.maximum(nh, 1))
    return {'name': fit.fm.name, 'parameters': list(fit.fm.parameter_names),
            'holdout_rms': {model.joint_names[j]: float(r) for j, r in zip(moving, rms)},
            'score': float(np.sum(sse / sigma_j ** 2) / max(int(nh.sum()), 1)),
            'score_moving': float(np.sum(sse_moving / sigma_j ** 2) / max(int(nm.sum()), 1))}


def _select(fits, A, c, yy, n, prior, moving, model, refine=None):
    """Return (index of the chosen candidate, per-candidate held-out errors).

    Each candidate is fitted on the training blocks and predicts every held-out equation;
    ``score`` is the weighted mean squared error on all of them (slow ones included),
    ``score_moving`` on those outside the stick band, with the same weights for every candidate.
    Admissible: ``score_moving`` within PARSIMONY of its best (a law must not buy its fit of
    the stick band with worse predictions of the moving joints); chosen: the simplest
    admissible candidate whose ``score`` is within PARSIMONY of the best admissible one.

    ``refine(rows, best)``: a further candidate (a :class:`_Fit`, or None) built from the
    scores, e.g. the chosen law with per-joint velocity scales (:func:`per_joint_scales`).  It
    has as many parameters as the chosen one, so it replaces it when admissible and its
    ``score`` is lower; it is appended to ``fits``.
    """
    first = fits[0].system(A, c, yy, n, fits[0].parts(False))
    sigma_j = joint_weights(*first)          # common weights: the errors are comparable
    rows = [_score(fit, A, c, yy, n, prior, sigma_j, moving, model) for fit in fits]
    moving_scores = np.array([r['score_moving'] for r in rows])
    admissible = np.ones(len(rows), dtype=bool)
    if n[2].sum() > 0:
        admissible = moving_scores <= moving_scores.min() * (1.0 + PARSIMONY)
    if n[2:].sum() == 0:                     # nothing held out: the simplest
        best = 0
    else:
        scores = np.where(admissible, [r['score'] for r in rows], np.inf)
        best = int(np.flatnonzero(scores <= scores.min() * (1.0 + PARSIMONY))[0])
    for r, ok in zip(rows, admissible):
        r['admissible'] = bool(ok)
    extra = refine(rows, best) if refine is not None and n[2:].sum() > 0 else None
    if extra is not None:
        fits.append(extra)
        rows.append(_score(extra, A, c, yy, n, prior, sigma_j, moving, model))
        ok = rows[-1]['score_moving'] <= moving_scores.min() * (1.0 + PARSIMONY)
        rows[-1]['admissible'] = bool(ok or n[2].sum() == 0)
        if ok and rows[-1]['score'] < rows[best]['score']:
            best = len(rows) - 1
    for k, r in enumerate(rows):
        r['chosen'] = k == best
    return best, rows


def _held_out_sse(fit, beta, A, c, yy, n, parts):
    """Return per moving joint (sum of squared errors of beta, equations) over ``parts``."""
    Ah, ch, yh, nh = fit.system(A, c, yy, n, parts)
    sse = np.array([yh[j] - 2.0 * beta @ ch[j] + beta @ Ah[j] @ beta for j in range(len(nh))])
    return np.clip(sse, 0.0, None), nh


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
    return all(t.split('[')[0] in ('Fv', 'Fv+', 'Fv-', 'Fs', 'Fs+', 'Fs-', 'Fx', 'off')
               for t in terms)


def _armature_combined(model, fit, moving):
    """Return {joint: base-parameter name} for each moving joint whose Ia is not alone.

    Where the base set regroups Ia_j with link parameters (Khalil and Dombre: Ia1 with ZZ1),
    only that sum is identifiable, not Ia_j itself.
    """
    rigid = NPARAM * model.nbodies
    P = len(fit.fm.groups) + 1
    out = {}
    for j in moving:
        col = rigid + P * int(j) + P - 1
        hit = np.flatnonzero(fit.base.K[:, col])
        if hit.size and not (hit.size == 1 and fit.base.base[hit[0]] == col
                             and np.count_nonzero(fit.base.K[hit[0]]) == 1):
            out[model.joint_names[j]] = ' ; '.join(fit.base.names[k] for k in hit)
    return out


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


def predict(model, params, Q, QD, QDD, chunk=4000, friction=None):
    """Return the (N, nv) efforts of identified parameters (the law of :mod:`core.friction`).

    ``params``: an :class:`Identification`; or x = [phi, per joint Fv Fs Ia off] (the
    regressor's symmetric joint columns, with the model's sign law); or x = [phi, per joint
    Fv+ Fv- Fs+ Fs- Fx off Ia] (:meth:`Identification.parameters`) with ``friction`` =
    (law, v_s, v_st) (default the model's).
    """
    nj = model.njoints
    if isinstance(params, Identification):
        fm = params.friction_model
        friction = (fm.law, *fm.scales())
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
    return out
