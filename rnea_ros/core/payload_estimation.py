"""Payload estimation on the fly: mass, COM and inertia of a load on a link, by RLS.

Use::

    from rnea_ros import PayloadEstimator
    from rnea_ros.core.payload import model_with_payload

    est = PayloadEstimator(model, 'wrist_3_link', duration=5.0)   # slow motion, or poses=4
    for t, q, qd, qdd, effort in stream:          # measured joint efforts, model joint order
        est.add_sample(q, qd, qdd, effort, t)
    # static poses instead (the arm held still in each):  est.add_pose(q, effort)
    est.progress()              # EstimationProgress: fraction done, current mass and COM
    result = est.estimate()     # PayloadEstimate: mass, com, inertia, their sigma, ok, reason
    if result.ok:
        loaded = model_with_payload(urdf_xml, result.payload())   # or the node's ~/set_payload
    else:
        print(result.reason)    # e.g. 'COM along z of tool0 unobservable: ...'

``model`` is the robot *without* the payload (with its friction and armature, identified or
configured); :func:`estimate_payload` runs the same on arrays; :func:`default_payload_link`
names the flange.  The load's parameters from joint efforts are those of Atkeson, An &
Hollerbach, *Estimation of inertial parameters of manipulator loads and links* (IJRR 1986),
here from the joint-torque regressor instead of a wrist force sensor.

This module is the estimator (recursive least squares, the decision, :func:`estimate_payload`);
the load's parameters and their transformation live in :mod:`rnea_ros.core.payload_inertia`,
the samples from a joint-state stream (:class:`AccelerationWindow`, :class:`StillPose`) in
:mod:`rnea_ros.core.payload_samples`.  All of them are importable from here, as before.

**Model.**  The payload's ten parameters ``phi_P = [m, h, I_O]`` (Khalil's standard parameters
of :mod:`rnea_ros.core.regressor`: mass, first moment h = m c, rotational inertia about the
origin) are expressed in the frame of link L, which may be a link merged into its body over
fixed joints (a flange, a tool frame).  With body b's frame B and the link's placement
``B_R_L, B_p_L`` in it, the body parameters are linear in the link ones (parallel axis theorem;
Khalil & Dombre, chapter 9): ``phi_b = A(R, p) phi_P`` with ``m' = m``, ``h' = R h + m p``,
``I' = R I_O R^T - m [p][p] - [p][R h] - [R h][p]``.  The payload's joint efforts are
``tau_P = Y_b(q, qd, qdd) A phi_P``, Y_b the ten regressor columns of body b (joint rows only).
The measurement is the residual of the model::

    r = tau_measured - (Y(q, qd, qdd) phi_model + joint_friction(model, qd) + Ia qdd)
      = Y_b A phi_P + noise.

**Recursive least squares** (Ljung & Söderström, *Theory and Practice of Recursive
Identification*, 1983, chapter 2), in information form with forgetting factor lambda::

    Phi_j,k = lambda Phi_j,k-1 + y_j,k^T y_j,k,   beta_j,k = lambda beta_j,k-1 + y_j,k^T r_j,k,
    phi = (sum_j w_j Phi_j)^-1 sum_j w_j beta_j,

kept per joint j (y_j the joint's row of Y_b A), so that the joints can be weighted by the
inverse of their residual variances (weighted least squares, Gautier & Poignet 2001; Khalil &
Dombre section 12.5.2): w_j = 1 / sigma_j^2, sigma_j^2 from the residuals of the unweighted
fit, then of the weighted one (twice).  A shoulder the model predicts to 0.1 N m no longer
drowns a wrist predicted to 0.01 N m, where most of the COM shows.  The covariance form's
``P_k = Phi_k^-1`` without its round-off drift; memory is one 10x10 matrix per joint whatever
the number of samples, and the eigen-decomposition of Phi = sum_j Phi_j (parameters scaled by
``mass_scale`` kg and ``length_scale`` m) tells exactly which parameters the data excites.
When some directions are not excited, phi is the minimum-norm solution over the excited ones,
so a parameter with no share in the unexcited directions is still the unique one.

**What is observable.**  At rest the payload's effort is ``J^T [m g_L; h x g_L]`` (g_L gravity
in the link frame): mass and the COM across g_L only.  Static poses therefore give mass and COM
(the COM along an axis needs poses that tilt the link about the other two axes; two poses with
non-parallel g_L suffice in theory, 4 to 6 in practice) and never the inertia, which is then
reported unobservable.  Slow motion adds the inertia through accelerations and velocities.

**Uncertainty and decision.**  The covariance is that of the unweighted fit, ``s^2 Phi^-1``
(Phi = sum_j Phi_j) with s^2 its residual variance over all joints (at least
``effort_noise^2``), times ``correlation``, the number of consecutive samples that share their
errors (1: independent samples; the node passes its filter window times its sample rate).  It
is the larger, honest one: the weighted fit's own ``(sum_j Phi_j / sigma_j^2)^-1`` treats the
residuals as white noise, while the model's errors (friction, the identified inertias) follow
the motion for seconds, and it understated the demo's COM error by 4x.  Sigmas of COM and
inertia about the COM by linear propagation.  The estimate is refused (``ok`` False,
``reason`` says why) when a parameter of mass or COM is not excited (its direction in the null
space of Phi) or too uncertain (sigma of mass above
``mass_tolerance * m + 0.005 kg``, of a COM coordinate above ``com_tolerance``), or when the mass
is not positive.  Inertia is kept only when it is excited, its sigmas are within
``inertia_tolerance`` times its mean principal moment (at least 1e-4 kg m^2) and the inertia
about the COM is physically consistent (positive definite, triangle inequality); otherwise the
estimate is a point mass at the COM and ``inertia_note`` says why (mass and COM are those of
the fit of all ten parameters, unbiased by the inertia left out).
"""

from dataclasses import dataclass, field

import numpy as np

from rnea_ros.core.dynamics import joint_friction
from rnea_ros.core.layout import PARENT
from rnea_ros.core.payload import Payload
from rnea_ros.core.payload_inertia import (inertia_consistency, inertia_entries,
                                           payload_parameters, physical_values,
                                           propagate_covariance, six_moments, transform_matrix)
from rnea_ros.core.payload_samples import AccelerationWindow, StillPose
from rnea_ros.core.regressor import inertial_parameters, NPARAM, regressor
from rnea_ros.core.spatial import skew

AXES = 'xyz'
_NULL_RTOL = 1e-10      # eigenvalue of scaled Phi / largest below this: not excited at all
_NULL_SHARE = 1e-3      # share of a parameter in the unexcited directions that marks it so
_MASS_FLOOR = 0.005     # kg added to the relative mass tolerance
_INERTIA_FLOOR = 1e-4   # kg m^2: the inertia tolerance is relative to at least this


@dataclass
class PayloadEstimate:
    """The result of :meth:`PayloadEstimator.estimate` (units kg, m, kg m^2; link frame).

    ``ok`` False: refused, ``reason`` says why, and the values (possibly NaN) must not be
    committed.  ``inertia`` is about the COM; zero with ``point_mass``.  Sigmas are one standard
    deviation (inf: not excited).  ``parameters`` and ``covariance`` are the fitted ten
    parameters [m, h, I_O] in the link frame and their covariance.
    """

    link: str
    ok: bool
    reason: str
    mass: float
    com: np.ndarray
    inertia: np.ndarray
    mass_sigma: float
    com_sigma: np.ndarray
    inertia_sigma: np.ndarray          # [ixx, iyy, izz, ixy, ixz, iyz] about the COM
    point_mass: bool
    inertia_note: str
    samples: int
    poses: int
    residual_rms: float                # N m, the model's residual before the payload
    fit_rms: float                     # N m, left after the fit
    parameters: np.ndarray = field(repr=False)
    covariance: np.ndarray = field(repr=False)

    def payload(self):
        """Return the :class:`rnea_ros.core.payload.Payload` to commit (ValueError if refused)."""
        if not self.ok:
            raise ValueError(f'payload estimate refused, nothing to commit: {self.reason}')
        return Payload(self.link, self.mass, self.com, self.inertia)

    def describe(self):
        """Return a readable one-line summary with sigmas."""
        if not self.ok:
            return f'payload on {self.link} refused: {self.reason}'
        com = ', '.join(f'{c:.4f}+-{s:.4f}' for c, s in zip(self.com, self.com_sigma))
        text = (f'payload on {self.link}: {self.mass:.4f}+-{self.mass_sigma:.4f} kg, com '
                f'[{com}] m')
        if self.point_mass:
            return text + f', point mass ({self.inertia_note})'
        i = self.inertia
        return text + (f', inertia about com [{i[0, 0]:.2e}, {i[1, 1]:.2e}, {i[2, 2]:.2e}, '
                       f'{i[0, 1]:.2e}, {i[0, 2]:.2e}, {i[1, 2]:.2e}] kg m^2')

    def as_dict(self):
        """Return plain values (lists, floats) for logs, YAML and messages."""
        return {'link': self.link, 'ok': self.ok, 'reason': self.reason,
                'mass': float(self.mass), 'com': np.asarray(self.com).tolist(),
                'inertia': [float(v) for v in six_moments(self.inertia)],
                'mass_sigma': float(self.mass_sigma),
                'com_sigma': np.asarray(self.com_sigma).tolist(),
                'inertia_sigma': np.asarray(self.inertia_sigma).tolist(),
                'point_mass': self.point_mass, 'inertia_note': self.inertia_note,
                'samples': self.samples, 'poses': self.poses,
                'residual_rms': float(self.residual_rms), 'fit_rms': float(self.fit_rms)}


@dataclass
class EstimationProgress:
    """Where an estimation stands: ``fraction`` of the target in [0, 1] and a current guess."""

    fraction: float
    samples: int
    poses: int
    span: float          # s between the first and last stamped sample
    mass: float          # current mass and COM (NaN while not determined)
    com: np.ndarray


class PayloadEstimator:
    """Recursive least squares for a payload rigidly attached to ``link`` (see module doc)."""

    def __init__(self, model, link, gravity=None, forgetting=1.0, duration=None, poses=None,
                 effort_noise=0.01, mass_tolerance=0.01, com_tolerance=0.003,
                 inertia_tolerance=0.15, mass_scale=1.0, length_scale=0.1, correlation=1.0):
        """Prepare for ``model`` (without the payload) and a link of it.

        ``duration`` (s of stamped motion samples) or ``poses`` (static poses) is the target
        that :meth:`progress` measures; ``forgetting`` in (0, 1] (1: plain least squares);
        ``effort_noise`` (N m) the smallest residual standard deviation assumed;
        ``correlation`` (>= 1) how many consecutive samples share their errors (samples taken
        inside one filter window): the covariance is multiplied by it;
        the tolerances are the largest sigmas accepted (mass and inertia: relative).
        """
        if link not in model.link_body:
            raise ValueError(f"payload link '{link}' is not a link of robot '{model.name}'; "
                             f'links: {sorted(model.link_names)}')
        body, R, p = model.link_body[link]
        if body < 0:
            raise ValueError(f"link '{link}' is fixed to the world: a payload on it loads no "
                             'joint and cannot be estimated')
        forgetting = float(forgetting)
        if not 0.0 < forgetting <= 1.0:
            raise ValueError(f'forgetting factor must be in (0, 1], got {forgetting}')
        for name, value in (('duration', duration), ('poses', poses)):
            if value is not None and not (np.isfinite(value) and value > 0):
                raise ValueError(f'{name} must be positive, got {value}')
        for name, value in (('effort_noise', effort_noise), ('mass_tolerance', mass_tolerance),
                            ('com_tolerance', com_tolerance),
                            ('inertia_tolerance', inertia_tolerance),
                            ('mass_scale', mass_scale), ('length_scale', length_scale),
                            ('correlation', correlation)):
            if not (np.isfinite(value) and value > 0):
                raise ValueError(f'{name} must be positive and finite, got {value}')
        self.model, self.link = model, link
        self.gravity = None if gravity is None else np.asarray(gravity, dtype=float)
        if self.gravity is not None and (self.gravity.shape != (3,)
                                         or not np.all(np.isfinite(self.gravity))):
            raise ValueError(f'gravity must be 3 finite numbers, got {gravity!r}')
        self.forgetting = forgetting
        self.duration, self.target_poses = duration, poses
        self.effort_noise = float(effort_noise)
        self.correlation = max(1.0, float(correlation))
        self.mass_tolerance, self.com_tolerance = float(mass_tolerance), float(com_tolerance)
        self.inertia_tolerance = float(inertia_tolerance)
        self._cols = slice(NPARAM * body, NPARAM * (body + 1))
        self._A = transform_matrix(R, p)
        self._phi_model = inertial_parameters(model)
        self._off = model.nv - model.njoints
        self._scale = np.array([mass_scale] + [mass_scale * length_scale] * 3
                               + [mass_scale * length_scale ** 2] * 6)
        self.reset()

    def reset(self):
        """Forget every sample."""
        n = self.model.njoints
        self._Phi = np.zeros((n, NPARAM, NPARAM))     # per joint: sum of Y_j^T Y_j
        self._beta = np.zeros((n, NPARAM))            # per joint: sum of Y_j^T r_j
        self._rr = np.zeros(n)           # per joint: sum of r_j^2 (with forgetting)
        self._rows = np.zeros(n)         # per joint: number of residual rows (with forgetting)
        self.joint_sigma = np.full(n, np.nan)   # per-joint residual sigma of the last estimate
        self.samples, self.poses = 0, 0
        self._inertia_note = ''
        self._t0 = self._t1 = None

    # -- data -------------------------------------------------------------------------------

    def _check(self, values, n, what):
        arr = np.asarray(values, dtype=float)
        if arr.shape != (n,):
            raise ValueError(f'{what} must have {n} values (model order), got shape '
                             f'{arr.shape}')
        if not np.isfinite(arr).all():
            bad = np.flatnonzero(~np.isfinite(arr))
            names = self.model.joint_names
            skip = 0 if what == 'effort' else n - self.model.njoints    # floating base
            where = [names[i - skip] if i >= skip else f'base {i}' for i in bad]
            raise ValueError(f'{what} is not finite at {where}: sample refused')
        return np.ascontiguousarray(arr)

    def rows(self, q, qd, qdd, effort):
        """Return (Y_P, r): the payload regressor (njoints x 10) and the model's residual."""
        m = self.model
        q = self._check(q, m.nq, 'q')
        qd = self._check(qd, m.nv, 'qd')
        qdd = self._check(qdd, m.nv, 'qdd')
        effort = self._check(effort, m.njoints, 'effort')
        Y = (regressor(m, q, qd, qdd) if self.gravity is None
             else regressor(m, q, qd, qdd, gravity=self.gravity))[self._off:]
        predicted = (Y @ self._phi_model + joint_friction(m, qd)[self._off:]
                     + m.armature * qdd[self._off:])
        return Y[:, self._cols] @ self._A, effort - predicted

    def add_sample(self, q, qd, qdd, effort, t=None):
        """Add one sample of motion: state, acceleration and measured efforts (joints only).

        ``t`` (s) stamps the sample for the ``duration`` progress.  Raise ValueError (nothing
        added) when a value is missing or not finite.
        """
        Y, r = self.rows(q, qd, qdd, effort)
        self._accumulate(Y, r)
        self.samples += 1
        if t is not None:
            t = float(t)
            self._t0 = t if self._t0 is None else self._t0
            self._t1 = t

    def add_pose(self, q, effort):
        """Add one static pose (the arm held still): positions and measured efforts.

        The efforts should be averaged over the time the arm is held still.
        """
        zero = np.zeros(self.model.nv)
        Y, r = self.rows(q, zero, zero, effort)
        self._accumulate(Y, r)
        self.samples += 1
        self.poses += 1

    def _accumulate(self, Y, r):
        lam = self.forgetting
        self._Phi = lam * self._Phi + Y[:, :, None] * Y[:, None, :]
        self._beta = lam * self._beta + Y * r[:, None]
        self._rr = lam * self._rr + r * r
        self._rows = lam * self._rows + 1.0

    @property
    def span(self):
        """Return the seconds between the first and last stamped sample."""
        return 0.0 if self._t0 is None else self._t1 - self._t0

    @property
    def fraction(self):
        """Return the fraction of the target done: duration or poses, whichever is further."""
        parts = []
        if self.duration:
            parts.append(self.span / self.duration)
        if self.target_poses:
            parts.append(self.poses / self.target_poses)
        return min(1.0, max(parts)) if parts else 0.0

    def progress(self):
        """Return an :class:`EstimationProgress` (fraction of duration or poses, current guess)."""
        fraction = self.fraction
        mass, com = float('nan'), np.full(3, np.nan)
        if self.samples:
            phi = self._fit()[0]
            if phi[0] > 0.0:
                mass, com = float(phi[0]), phi[1:4] / phi[0]
        return EstimationProgress(fraction, self.samples, self.poses, self.span, mass, com)

    @property
    def done(self):
        """Return True when the duration or pose target is reached."""
        return self.fraction >= 1.0

    # -- the estimate -----------------------------------------------------------------------

    def _joint_ssr(self, phi):
        """Return each joint's sum of squared residuals of the fit phi."""
        return np.maximum(self._rr - 2.0 * self._beta @ phi
                          + np.einsum('i,jik,k->j', phi, self._Phi, phi), 0.0)

    def _pooled_variance(self, phi, rank):
        """Return correlation x the residual variance of the unweighted fit phi (floored)."""
        dof = self._rows.sum() - rank
        ssr = float(self._joint_ssr(phi).sum())
        s2 = ssr / dof if dof > 0 else np.inf
        return self.correlation * max(s2, self.effort_noise ** 2)

    def _weights(self, phi, rank):
        """Return the per-joint weights 1 / sigma_j^2 of the residuals of the fit phi.

        sigma_j^2 is joint j's residual variance, its share of the degrees of freedom taken
        by the ``rank`` fitted parameters removed, and at least ``effort_noise^2``.
        """
        total = self._rows.sum()
        dof = self._rows * max(1.0 - rank / total, 0.0) if total > 0 else self._rows
        ssr = self._joint_ssr(phi)
        s2 = np.where(dof > 0, ssr / np.where(dof > 0, dof, 1.0), np.inf)
        self.joint_sigma = np.sqrt(np.maximum(s2, self.effort_noise ** 2))
        return 1.0 / self.joint_sigma ** 2

    def _fit(self, weights=None):
        """Return the weighted least-squares fit over the excited directions (scaled Phi).

        ``weights``: per joint (default 1).  Return (phi (10,), (sum_j w_j Phi_j)^+ (10 x 10),
        share of each parameter in the unexcited directions (10,), those directions (10 x k),
        rank): phi is the minimum-norm solution, so the parameters with no share in the
        unexcited directions are the unique ones.
        """
        w = np.ones(self.model.njoints) if weights is None else weights
        Phi = np.einsum('j,jik->ik', w, self._Phi)
        beta = w @ self._beta
        d = self._scale
        lam, V = np.linalg.eigh(Phi * np.outer(d, d))
        top = max(lam[-1], 0.0)
        null = lam <= _NULL_RTOL * top if top > 0.0 else np.ones(lam.size, dtype=bool)
        share = np.sum(V[:, null] ** 2, axis=1)
        inv = (V[:, ~null] / lam[~null]) @ V[:, ~null].T * np.outer(d, d)
        return inv @ beta, inv, share, V[:, null], int(np.sum(~null))

    def _weighted_fit(self):
        """Return :meth:`_fit` weighted by the joints' residual variances, and the weights.

        Joints differ by orders of magnitude in how well the model (identified or configured)
        predicts them: a shoulder's residual of 0.1 N m would drown the wrist's 0.01 N m, where
        the COM shows most.  Weighted least squares (Gautier & Poignet 2001; Khalil & Dombre,
        section 12.5.2): an ordinary fit gives each joint's residual variance, the fit weighted
        by their inverses is repeated twice.  ``(sum_j Phi_j / sigma_j^2)^-1`` would be its
        covariance if the residuals were white; :meth:`estimate` reports the unweighted fit's
        (see the module doc).
        """
        fit = self._fit()
        weights = np.ones(self.model.njoints)
        for _ in range(2):
            weights = self._weights(fit[0], fit[4])
            fit = self._fit(weights)
        return fit, weights

    def estimate(self):
        """Return the :class:`PayloadEstimate` of the samples so far (refused ones say why)."""
        self._inertia_note = ''
        if self.samples == 0:
            return self._refused('no samples', np.full(NPARAM, np.nan), np.nan)
        phi0, inv, share, null, rank = self._fit()
        phi = self._weighted_fit()[0][0]
        ssr = float(self._joint_ssr(phi).sum())
        reason = self._unexcited_reason(share[:4], null)
        if reason:
            return self._refused(reason, phi, ssr)
        cov = self._pooled_variance(phi0, rank) * inv
        note = self._inertia_check(phi, cov, share)
        if not note:
            return self._decide(phi, cov, point_mass=False, note='', ssr=ssr)
        self._inertia_note = note
        point = phi.copy()          # a point mass at the fitted COM: consistent parameters
        if phi[0] > 0.0:
            c = phi[1:4] / phi[0]
            point[4:] = inertia_entries(-phi[0] * skew(c) @ skew(c))
        cov[4:, :] = 0.0
        cov[:, 4:] = 0.0
        return self._decide(point, cov, point_mass=True, note=note, ssr=ssr)

    def _inertia_check(self, phi, cov, share):
        """Return why the fitted inertia cannot be kept ('' when it can)."""
        if np.any(share[4:] > _NULL_SHARE):
            return 'inertia not excited (' + (
                'static poses carry no inertia information' if self.samples == self.poses
                else 'the motion does not excite every inertia parameter') + ')'
        if not phi[0] > 0.0:
            return 'mass not positive'
        sig = propagate_covariance(phi, cov)[2]
        inertia = physical_values(phi)[2]
        limit = self.inertia_tolerance * max(np.trace(inertia) / 3.0, _INERTIA_FLOOR)
        if np.any(sig > limit):
            return (f'inertia too uncertain: largest sigma {sig.max():.2e} kg m^2 > '
                    f'{limit:.2e}')
        return inertia_consistency(inertia)

    def _refused(self, reason, phi, ssr):
        return PayloadEstimate(
            self.link, False, reason, float('nan'), np.full(3, np.nan), np.full((3, 3), np.nan),
            float('inf'), np.full(3, np.inf), np.full(6, np.inf), True, self._inertia_note,
            self.samples, self.poses, self._rms(self._rr.sum()), self._rms(ssr), phi,
            np.full((NPARAM, NPARAM), np.nan))

    def _decide(self, phi, cov, point_mass, note, ssr):
        """Return the estimate of fitted parameters, refused when mass or COM fail the tests."""
        m = phi[0]
        if not m > 0.0:
            return self._refused(f'fitted mass {m:.4g} kg is not positive: no payload, or the '
                                 'model is heavier than the measurements', phi, ssr)
        _, com_sigma, inertia_sigma, mass_sigma = propagate_covariance(phi, cov)
        m, c, inertia = physical_values(phi)
        if point_mass:
            inertia = np.zeros((3, 3))
            inertia_sigma = np.full(6, np.inf)
        reason = ''
        if mass_sigma > self.mass_tolerance * m + _MASS_FLOOR:
            reason = (f'mass too uncertain: sigma {mass_sigma:.3g} kg for {m:.3g} kg (limit '
                      f'{self.mass_tolerance:g} m + {_MASS_FLOOR} kg); add poses or motion')
        else:
            bad = [k for k in range(3) if not com_sigma[k] <= self.com_tolerance]
            if bad:
                axes = '/'.join(AXES[k] for k in bad)
                reason = (f'COM along {axes} too uncertain: sigma '
                          f'{[round(float(com_sigma[k]), 4) for k in bad]} m > '
                          f'{self.com_tolerance:g} m; add poses that tilt {self.link} more')
        return PayloadEstimate(self.link, not reason, reason, float(m), c, inertia,
                               float(mass_sigma), com_sigma, inertia_sigma, point_mass, note,
                               self.samples, self.poses, self._rms(self._rr.sum()),
                               self._rms(ssr),
                               phi, cov)

    def _unexcited_reason(self, share, null):
        """Return why mass or a COM coordinate is not excited at all ('' when all are)."""
        if not np.any(share > _NULL_SHARE):
            return ''
        if np.all(share > _NULL_SHARE):
            return (f'mass and COM unobservable: the samples produce no effort of a load on '
                    f'{self.link} at the measured joints')
        if share[0] > _NULL_SHARE:
            return (f'mass unobservable: its weight on {self.link} moves no measured joint '
                    'effort independently of the COM')
        directions = null[1:4]                      # h components of the unexcited directions
        U, sv, _ = np.linalg.svd(directions)
        k = int(np.sum(sv > np.sqrt(_NULL_SHARE)))
        basis = U[:, :max(k, 1)]
        names = []
        for vec in basis.T:
            axis = int(np.argmax(np.abs(vec)))
            names.append(AXES[axis] if abs(vec[axis]) > 0.95
                         else '[' + ', '.join(f'{v:.2f}' for v in vec) + ']')
        along = '/'.join(names)
        what = 'poses' if self.samples == self.poses else 'samples'
        if k >= 2:
            return (f'COM along {along} of {self.link} unobservable: the {what} do not rotate '
                    'the link against gravity enough; add poses with different tilts')
        axis = int(np.argmax(np.abs(basis[:, 0])))
        if abs(basis[axis, 0]) > 0.95:
            about = '/'.join(a for i, a in enumerate(AXES) if i != axis)
            return (f'COM along {along} of {self.link} unobservable: the {what} do not rotate '
                    f'the link about {about} (gravity stayed along its {along} axis); add poses '
                    'that tilt it')
        return (f'COM along {along} of {self.link} unobservable: the {what} do not rotate the '
                'link about axes perpendicular to that direction (gravity stayed along it in '
                'the link frame); add poses that tilt it')

    def _rms(self, ssr):
        rows = self._rows.sum()
        return float(np.sqrt(max(ssr, 0.0) / rows)) if rows > 0 else float('nan')


def default_payload_link(model):
    """Return the link of the deepest body moved by a revolute or continuous joint (a flange)."""
    depth = np.zeros(model.nbodies, dtype=int)
    for b in range(model.nbodies):
        parent = model.ints[b, PARENT]
        depth[b] = depth[parent] + 1 if parent >= 0 else 1
    body_joint = dict(zip(model.joint_body, model.joint_types))
    rotary = [b for b in range(model.nbodies) if body_joint.get(b) in ('revolute', 'continuous')]
    if not rotary:
        return model.body_links[-1]
    return model.body_links[max(rotary, key=lambda b: (depth[b], b))]


def estimate_payload(model, link, Q, QD, QDD, E, t=None, window=0.1, period=0.005, **options):
    """Return the :class:`PayloadEstimate` of arrays of samples (N x nq, N x nv, N x njoints).

    ``QD`` None: the rows are static poses (efforts averaged while held).  ``QDD`` None: the
    accelerations come from an :class:`AccelerationWindow` of ``window`` s over the stamps ``t``
    (the node's way), one sample every ``period`` s, with the covariance scaled by the samples
    per window.  ``options``: those of :class:`PayloadEstimator`.
    """
    est = PayloadEstimator(model, link, **options)
    if QD is None:
        for k in range(len(Q)):
            est.add_pose(Q[k], E[k])
    elif QDD is not None:
        for k in range(len(Q)):
            est.add_sample(Q[k], QD[k], QDD[k], E[k], None if t is None else t[k])
    else:
        if t is None:
            raise ValueError('accelerations from the velocities need the stamps t')
        filtered, last = AccelerationWindow(window), -np.inf
        for k in range(len(Q)):
            sample = filtered.add(t[k], np.asarray(Q[k], dtype=float),
                                  np.asarray(QD[k], dtype=float), np.asarray(E[k], dtype=float),
                                  t[k] - last >= period * (1.0 - 1e-6))
            if sample is not None:
                last = t[k]
                est.add_sample(*sample[1:], sample[0])
        if est.span > 0.0:
            est.correlation = max(1.0, window * est.samples / est.span)
    return est.estimate()


__all__ = ['PayloadEstimator', 'PayloadEstimate', 'EstimationProgress', 'estimate_payload',
           'default_payload_link', 'AccelerationWindow', 'StillPose',
           'payload_parameters', 'transform_matrix', 'inertia_consistency']
