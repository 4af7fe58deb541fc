"""External joint torques by the generalized-momentum observer, collisions, external wrench.

The observer of De Luca & Mattone (ICRA 2005), surveyed in Haddadin, De Luca & Albu-Schaeffer,
"Robot collisions: a survey on detection, isolation, and identification", IEEE T-RO 2017
(the momentum-based residual).  With the generalized momentum ``p = M(q) qd`` the dynamics
``M qdd + C qd + g + tau_f = tau_m + tau_ext`` and ``Mdot = C + C^T`` give

    pdot = tau_m + C^T(q, qd) qd - g(q) - tau_f(qd) + tau_ext = beta + tau_ext,

and the residual

    r(t) = K (p(t) - p(0) - int_0^t (beta + r) ds),    r(0) = 0,

obeys ``rdot = K (tau_ext - r)``: per joint a first-order low-pass filter of the external
torque with gain (bandwidth) K_j in 1/s, without the joint accelerations.  ``tau_m`` is the
measured joint effort, ``tau_f`` the model's friction (:func:`rnea_ros.core.dynamics.
joint_friction`, the one definition, here by the kernel
:func:`rnea_ros.core.kernels.observer.subtract_friction`), ``C`` the Christoffel Coriolis matrix
(:func:`rnea_ros.coriolis_matrix`; the observer computes ``C^T qd`` without it, by an O(n)
recursion: :mod:`rnea_ros.core.kernels.observer`), ``g`` the gravity torques; ``M`` includes the
rotor inertia.

**Discrete time** (irregular sampling).  Between two samples ``k-1`` and ``k`` (step ``h``) the
integral of beta is taken by the trapezoidal rule and ``rdot = K (tau_ext - r)`` is integrated
exactly with the external torque held over the step (zero-order hold):

    tau_hat_k = (p_k - p_{k-1}) / h - (beta_k + beta_{k-1}) / 2
    r_k = a r_{k-1} + (1 - a) tau_hat_k,       a = exp(-K h)   (per joint).

How the effort of sample k relates to the step is a property of the robot driver
(``effort_sampling``): 'instant' (a torque sensor or current read at t_k: trapezoidal rule, as
above) or 'held' (the effort applied over the step that ends at t_k, which a simulator such as
:mod:`rnea_ros.sim` or a drive reporting its last command publishes: tau_m of the integral is
tau_m,k).  The wrong choice costs half a step of the effort's rate of change, h/2 dtau_m/dt.

Summed over the samples this is the integral form above (the sum of the momentum differences
telescopes to ``p_k - p_0``); for ``K h << 1`` it is its Euler discretization
``r_k = r_{k-1} + K (p_k - p_{k-1} - h (beta + r_{k-1}))``, and it stays stable and exact in the
limit for any ``K h`` (a late sample is a long step, not an overshoot).  The state is fixed in
size: ``r``, ``p_{k-1}``, ``beta_{k-1}`` and the time; the integral ``p_hat = p - r / K`` is
never accumulated, so nothing grows or loses precision over hours.

**Velocity noise and the output filter.**  The residual holds ``K (p - p_hat)``, and p is
computed from the measured velocities: white noise of standard deviation sigma on qd_j reaches
r_j, unfiltered, as white noise of about ``K M_jj sigma`` (the demo's panda at K = 200 1/s
with 0.002 rad/s of velocity noise: residuals up to 5 to 6 N m on the shoulder joints).  With
``output_filter`` = K_f > 0 (1/s) the observer reports r low-passed once more, r_f' = K_f (r -
r_f), integrated exactly as r (:func:`rnea_ros.core.kernels.observer.output_step`): r_f then
follows the external torque as a second-order filter ``K K_f / ((s + K)(s + K_f))`` (about
1/K + 1/K_f of delay) and the white part of the noise is cut by about ``sqrt(K_f h / 2)``
(h the sample period; K_f = 200 1/s at 1 kHz: about 5x in the largest values).  The observer's
own feedback keeps using r.

**Suspension.**  A sample with efforts missing, of the wrong length or not finite, or with a
non-finite state, is not used: :meth:`MomentumObserver.update` returns None and
:attr:`MomentumObserver.suspended` says why.  The next good sample bridges the gap as one longer
step; a gap longer than ``max_gap`` (or time going backwards) restarts the observer (``r = 0``)
and :attr:`MomentumObserver.note` says so.

**Collisions** (:class:`CollisionDetector`): a joint whose |r_j| exceeds its threshold for at
least ``min_duration`` starts a collision event naming the joints; it ends when every |r_j| is
below ``(1 - hysteresis)`` times its threshold (detection by thresholding the residual, as in
Haddadin et al. 2017).  Optionally a joint's threshold is higher while its velocity reverses
(``reversal_thresholds``, see the class): there the model's friction is least right.

**External wrench** (:func:`external_wrench`): ``r = J^T F`` for a wrench F on one link, solved
by damped least squares (Nakamura & Hanafusa 1986; near singularities only, see the function).

:func:`observe_recording` runs observer and detector over a recording (offline tuning).
"""

from dataclasses import dataclass, field
import math

import numpy as np

from rnea_ros.core.checks import gravity_acceleration
from rnea_ros.core.kernels import observer as kernel
from rnea_ros.core.kernels.observer import (damped_least_squares, exceed, exceed_gated,
                                            observer_step)
from rnea_ros.core.layout import (STATUS_BAD_Q, STATUS_BAD_QD, STATUS_BAD_QUATERNION,
                                  STATUS_LEN_Q, STATUS_LEN_QD)

DEFAULT_GAIN = 200.0        # 1/s: time constant 5 ms; 98 % of a step after 20 ms
DEFAULT_MAX_GAP = 0.1       # s
DEFAULT_REVERSAL_BAND = 0.1     # rad/s or m/s: a joint slower than this is reversing
DEFAULT_REVERSAL_HOLD = 0.02    # s: and stays in its reversal window that long after
EFFORT_SAMPLING = ('instant', 'held')
MAX_EFFORT = 1e9            # N m or N: a larger measured effort is garbage, not a torque
_F8 = np.dtype(np.float64)


class MomentumObserver:
    """The generalized-momentum observer of one model (see the module docstring).

    ``gains``: K per velocity coordinate in 1/s (one value for all, or ``nv`` values; joints
    only, ``njoints`` values, for a floating base, whose 6 base rows then get the first joint's
    gain).  ``gravity``: (3,) in the root frame (default (0, 0, -9.81)).  ``friction``: subtract
    the model's joint friction (``joint_friction``).  ``max_gap``: the longest step (s) the
    observer bridges; longer gaps restart it.  ``output_filter``: K_f in 1/s of the low-pass on
    what the observer reports (0: r itself; see the module docstring, velocity noise).

    An update is one kernel call (:func:`rnea_ros.core.kernels.observer.observer_step`: the
    efforts, p = M qd and beta = C^T qd - g - tau_f by an O(n) recursion, the residual step) on
    a state allocated here, once.  :attr:`largest` holds the largest |r_j| since
    :meth:`clear_largest`.
    """

    def __init__(self, model, gains=DEFAULT_GAIN, gravity=None, friction=True,
                 max_gap=DEFAULT_MAX_GAP, effort_sampling='instant', output_filter=0.0):
        """Prepare the observer's state for ``model`` (started by the first sample)."""
        if effort_sampling not in EFFORT_SAMPLING:
            raise ValueError(f'effort_sampling must be one of {list(EFFORT_SAMPLING)}, got '
                             f'{effort_sampling!r}')
        self.model = model
        self.nv, self.offset = model.nv, model.nv - model.njoints
        gains = self._gains(gains)
        if not (isinstance(max_gap, (int, float)) and max_gap > 0.0 and math.isfinite(max_gap)):
            raise ValueError(f'max_gap must be a positive number of seconds, got {max_gap!r}')
        self.max_gap = float(max_gap)
        self.held = effort_sampling == 'held'
        self.friction = bool(friction)
        self._ws = model.create_workspace()        # its a_0 = -gravity
        gravity_acceleration(gravity, None, self._ws.a0)
        self._ws.custom = True
        self._buffer, self._kernel_model = self._ws.buffer, model.kernel_model
        self._state = np.zeros((kernel.STATE_ROWS, self.nv))
        self.r = self._state[kernel.OUT]           # a view: valid until the next update
        self.gains = self._state[kernel.GAINS]
        self.gains[:] = gains
        self.largest = self._state[kernel.LARGEST]
        self._friction_table = np.ascontiguousarray(np.column_stack(     # writable, 8 columns
            [model.friction_table, model.coulomb_bands, model.stribeck_velocities]))
        scalars = self._scalars = np.zeros(kernel.SCALARS)
        scalars[kernel.MAX_GAP], scalars[kernel.HELD] = self.max_gap, self.held
        scalars[kernel.FRICTION] = self.friction and model.has_joint_terms
        scalars[kernel.OFFSET] = self.offset
        scalars[kernel.TANH] = model.friction_law == 'tanh'
        scalars[kernel.MAX_EFFORT] = MAX_EFFORT
        self.set_output_filter(output_filter)
        # Efforts in model order: of all nv coordinates, or of the joints only.
        self._in_order = {n: np.arange(n, dtype=np.intp) for n in (self.nv, model.njoints)}
        self.suspended = ''              # why the last sample was not used ('' = it was)
        self.note = ''                   # what the last update did besides the step
        self.samples = 0

    def _gains(self, gains):
        g = np.atleast_1d(np.asarray(gains, dtype=float))
        if g.ndim != 1 or g.size not in (1, self.nv, self.nv - self.offset):
            raise ValueError(f'gains: give 1 value or {self.nv - self.offset} (one per joint), '
                             f'got {g.size}')
        if not np.all(np.isfinite(g)) or np.any(g <= 0.0) or np.any(g > 1e6):
            raise ValueError(f'gains must be in (0, 1e6] 1/s, got {g.tolist()}')
        out = np.empty(self.nv)
        if g.size == self.nv:
            out[:] = g
        else:
            out[self.offset:] = g
            out[:self.offset] = g[0]
        return out

    def set_output_filter(self, bandwidth):
        """Set K_f of the output low-pass in 1/s, 0 for none (ValueError and nothing changed)."""
        if not (isinstance(bandwidth, (int, float)) and not isinstance(bandwidth, bool)
                and (bandwidth == 0.0 or 0.0 < bandwidth <= 1e6)):
            raise ValueError(f'output_filter must be 0 (none) or in (0, 1e6] 1/s, got '
                             f'{bandwidth!r}')
        self.output_filter = float(bandwidth)
        self._scalars[kernel.FILTER] = self.output_filter

    def set_gains(self, gains):
        """Change K (the estimate so far is kept; ValueError and nothing changed if bad)."""
        self.gains[:] = self._gains(gains)

    @property
    def started(self):
        """Return whether a sample was used since the start or the last restart."""
        return self._scalars[kernel.STARTED] != 0.0

    @property
    def t(self):
        """Return the time of the last sample used (None before the first)."""
        return float(self._scalars[kernel.T]) if self.started else None

    def reset(self):
        """Forget the state: the next sample starts the observer again (r = 0)."""
        self._scalars[kernel.STARTED] = 0.0
        self.r[:] = 0.0
        self._state[kernel.R] = 0.0

    def clear_largest(self):
        """Start :attr:`largest` (the largest |r_j| of the samples used) again from 0."""
        self.largest[:] = 0.0

    def _suspend(self, reason):
        self.suspended = reason
        return None

    def update(self, t, q, qd, tau_m, index=None):
        """Use one sample; return r (external torques, nv, valid until the next update) or None.

        ``t`` in s (any origin, increasing), ``q`` (nq), ``qd`` (nv), ``tau_m`` the measured
        efforts (nv, or njoints for a floating base: the base rows are 0), or with ``index``
        (integers, njoints or nv of them) any vector whose ``tau_m[index]`` they are, such as a
        joint-state message's efforts.  None: the sample was not used (:attr:`suspended` says
        why).  The first sample (and one after a restart, :attr:`note`) returns r = 0.
        """
        self.note = ''
        if tau_m is None:
            return self._suspend('no measured efforts')
        try:    # 1-D float64 arrays: the kernel at once; anything else is converted (TypeError)
            status = observer_step(self._kernel_model, self._buffer, q, qd, tau_m,
                                   self._in_order[len(tau_m)] if index is None else index, t,
                                   self._state, self._scalars, self._friction_table)
        except (TypeError, KeyError):
            status = self._converted_step(t, q, qd, tau_m, index)
            if isinstance(status, str):
                return self._suspend(status)
        if status == kernel.STEP_OK:
            self.suspended = ''
            self.samples += 1
            return self.r
        return self._outcome(status, t, q, qd, tau_m, index)

    def _converted_step(self, t, q, qd, tau_m, index):
        """Convert and check the inputs, then run the kernel; return its status or an error."""
        try:
            t = float(t)
        except (TypeError, ValueError):
            return f'time {t!r} is not a number'
        try:
            q = np.array(q, dtype=np.float64, ndmin=1)
            qd = np.array(qd, dtype=np.float64, ndmin=1)
        except (TypeError, ValueError):
            return 'positions or velocities are not numbers'
        try:
            e = np.ascontiguousarray(tau_m, dtype=np.float64)
        except (TypeError, ValueError):
            return 'efforts are not numbers'
        nj = self.nv - self.offset
        if e.ndim != 1:
            return f'efforts of shape {e.shape}, expected a vector of {nj}'
        if index is None:
            if e.size not in self._in_order:
                return f'efforts for {e.size} joints, expected {nj} (partial efforts)'
            index = self._in_order[e.size]
        else:
            try:
                index = np.ascontiguousarray(index, dtype=np.intp)
            except (TypeError, ValueError):
                return 'the effort index is not integers'
            if index.ndim != 1 or index.size not in self._in_order:
                return f'an effort index of {index.size} joints, expected {nj}'
        if q.ndim != 1 or qd.ndim != 1:
            return f'state of shapes {q.shape}, {qd.shape}; expected ({self.model.nq},), ' \
                   f'({self.nv},)'
        return observer_step(self._kernel_model, self._buffer, q, qd, e, index, t,
                             self._state, self._scalars, self._friction_table)

    def _outcome(self, status, t, q, qd, tau_m, index):
        """Return r and set :attr:`note` (a start), or None and :attr:`suspended` (see kernel)."""
        if status <= kernel.STEP_GAP:
            self.suspended = ''
            self.samples += 1
            h = float(self._scalars[kernel.STEP])
            if status == kernel.STEP_BACK:
                self.note = f'time went back by {-h:.6g} s: observer restarted'
            elif status == kernel.STEP_GAP:
                self.note = (f'gap of {h:.6g} s > max_gap {self.max_gap:g} s: observer '
                             'restarted')
            return self.r
        return self._suspend(self._reason(status, t, q, qd, tau_m, index))

    def _reason(self, status, t, q, qd, tau_m, index):
        """Return why a sample was not used (a :func:`observer_step` status)."""
        if status == kernel.STEP_TIME:
            return f'time {t} is not finite'
        if status == kernel.STEP_SAME:
            return 'the time did not advance (same sample)'
        if status == kernel.STEP_PARTIAL:
            return (f'efforts for {np.size(tau_m)} joints do not hold the '
                    f'{self.nv - self.offset} of the model (partial efforts)')
        if status == kernel.STEP_EFFORT:
            e = np.asarray(tau_m, dtype=np.float64)
            e = e[np.asarray(index)] if index is not None else e
            bad = np.flatnonzero(~(np.abs(e) <= MAX_EFFORT)).tolist()
            return f'efforts not finite (or above {MAX_EFFORT:g}) at index {bad[:10]}'
        if status == kernel.STEP_FRICTION:
            return 'the joint friction is not finite for this state'
        if status == kernel.STEP_OVERFLOW:
            return 'the residual overflowed: observer restarted'
        status -= kernel.STEP_TERMS
        if status in (STATUS_BAD_Q, STATUS_BAD_QD):
            return 'positions or velocities not finite'
        if status in (STATUS_LEN_Q, STATUS_LEN_QD):
            return (f'state of shapes {np.shape(q)}, {np.shape(qd)}; expected '
                    f'({self.model.nq},), ({self.nv},)')
        if status == STATUS_BAD_QUATERNION:
            return 'the base quaternion has zero norm'
        return 'the model terms are not finite for this state'


@dataclass
class CollisionEvent:
    """A collision starting (``kind`` 'collision') or ending ('clear') at time ``t`` (s).

    ``joints``: the joints above threshold (start) or involved (end); ``peak``: the largest
    |r_j| of each of them so far, N m or N; ``start``: when the collision began (the first
    sample above threshold).
    """

    kind: str
    t: float
    joints: tuple
    peak: dict = field(default_factory=dict)
    start: float = 0.0

    def describe(self):
        """Return one readable line naming the joints."""
        values = ', '.join(f'{j} {v:.3g}' for j, v in self.peak.items())
        if self.kind == 'collision':
            return (f'collision at t = {self.t:.3f} s on joints {list(self.joints)} '
                    f'(|external torque| {values})')
        return (f'collision cleared at t = {self.t:.3f} s after {self.t - self.start:.3f} s '
                f'(joints {list(self.joints)}, peak {values})')


class CollisionDetector:
    """Thresholds with hysteresis and a minimum duration on the observer's residual.

    ``names``: the joint of each entry of r; ``thresholds`` (N m or N): one value or one per
    entry, all > 0; ``hysteresis`` in [0, 1): a collision ends when every |r_j| is below
    ``(1 - hysteresis) threshold_j``; ``min_duration`` (s): a joint must stay above its
    threshold that long (0: the first sample above starts the collision).

    **Thresholds gated by velocity reversals** (optional).  Friction is the part of the model
    a real joint matches worst where its velocity changes sign: the measured friction turns
    over a finite time and a velocity range wider than the model's Coulomb band, and the
    residual of that joint shows the mismatch, up to the Coulomb jump ``Fs+ + Fs-``, while the
    joint is slow.  A single threshold above that peak hides every contact smaller than it
    during the rest of the motion.  With ``reversal_thresholds`` (one value or one per entry,
    each >= its threshold) a joint uses them inside its reversal window, while
    ``|qd_j| < reversal_band`` (rad/s or m/s) and for ``reversal_hold`` s after, and
    ``thresholds`` outside it, when it moves: thresholds that vary with the joint's velocity
    to absorb modelling errors (Sotoudehnejad, Takhmar, Kermani & Polushin, "Counteracting
    modeling errors for sensitive observer-based manipulator collision detection", IROS 2012;
    Haddadin et al. 2017, collision detection with time-variant thresholds).
    :meth:`update` then needs the velocities.  A contact during a joint's reversal window is
    raised on that joint only above its reversal threshold (or once the window ends).
    """

    def __init__(self, names, thresholds, hysteresis=0.2, min_duration=0.005,
                 reversal_thresholds=None, reversal_band=DEFAULT_REVERSAL_BAND,
                 reversal_hold=DEFAULT_REVERSAL_HOLD):
        """Check and keep the settings; ValueError when they do not fit ``names``."""
        self.names = tuple(names)
        n = len(self.names)
        self.moving = self._thresholds(thresholds, n, 'thresholds')
        if not 0.0 <= hysteresis < 1.0:
            raise ValueError(f'hysteresis must be in [0, 1), got {hysteresis}')
        if not (0.0 <= min_duration < 3600.0):
            raise ValueError(f'min_duration must be in [0, 3600) s, got {min_duration}')
        self.hysteresis = float(hysteresis)
        self.min_duration = float(min_duration)
        self.reversal = None
        if reversal_thresholds is not None and np.size(reversal_thresholds):
            self.reversal = self._thresholds(reversal_thresholds, n, 'reversal_thresholds')
            low = np.flatnonzero(self.reversal < self.moving)
            if low.size:
                raise ValueError('reversal_thresholds must be >= thresholds (joints '
                                 f'{[self.names[i] for i in low]})')
            if not (0.0 <= reversal_band < 1e6 and math.isfinite(reversal_band)):
                raise ValueError(f'reversal_band must be in [0, 1e6) rad/s or m/s, got '
                                 f'{reversal_band}')
            if not (0.0 <= reversal_hold < 3600.0):
                raise ValueError(f'reversal_hold must be in [0, 3600) s, got {reversal_hold}')
        self.reversal_band = float(reversal_band)
        self.reversal_hold = float(reversal_hold)
        self.thresholds = self.moving.copy()        # each joint's threshold at the last update
        self._slow_until = np.full(n, -np.inf)
        self._since = np.full(n, np.nan)
        self._peak = np.zeros(n)
        self._abs = np.zeros(n)
        self._pending = False           # some joint above its threshold, not yet long enough
        self.active = False
        self.start = None
        self.joints = ()

    @staticmethod
    def _thresholds(values, n, what):
        th = np.atleast_1d(np.asarray(values, dtype=float))
        if th.ndim != 1 or th.size not in (1, n):
            raise ValueError(f'{what}: give 1 value or {n} (one per joint), got {th.size}')
        if not np.all(np.isfinite(th)) or np.any(th <= 0.0):
            raise ValueError(f'{what} must be finite and > 0, got {th.tolist()}')
        return np.broadcast_to(th, (n,)).copy()

    @property
    def gated(self):
        """Return whether the thresholds follow velocity reversals (reversal_thresholds)."""
        return self.reversal is not None

    def reset(self):
        """Forget any collision in progress (and the joints' reversal windows)."""
        self._since[:] = np.nan
        self._peak[:] = 0.0
        self._slow_until[:] = -np.inf
        self._pending = False
        self.active = False
        self.start = None
        self.joints = ()

    def update(self, t, r, qd=None):
        """Take the residual r (and the velocities qd when gated) at t; an event or None."""
        a = self._abs
        if self.reversal is None:
            try:        # a float64 vector (the observer's r): the kernel at once
                count = exceed(r, self.moving, a)
            except TypeError:
                count = exceed(np.ascontiguousarray(r, dtype=np.float64), self.moving, a)
        else:
            if qd is None:
                raise ValueError('reversal thresholds need the joint velocities qd')
            try:
                count = exceed_gated(r, qd, t, self.moving, self.reversal,
                                     self.reversal_band, self.reversal_hold, self._slow_until,
                                     self.thresholds, a)
            except TypeError:
                count = exceed_gated(np.ascontiguousarray(r, dtype=np.float64),
                                     np.ascontiguousarray(qd, dtype=np.float64), float(t),
                                     self.moving, self.reversal, self.reversal_band,
                                     self.reversal_hold, self._slow_until, self.thresholds, a)
        if count < 0:
            raise ValueError(f'r has {np.size(r)} entries'
                             + (f', qd {np.size(qd)}' if self.reversal is not None else '')
                             + f', the detector {a.size} joints')
        if not self.active and count == 0:          # the common case: one kernel call
            if self._pending:
                self._since[:] = np.nan
                self._pending = False
            return None
        above = a > self.thresholds
        if not self.active:
            self._pending = True
            since = self._since
            since[above & np.isnan(since)] = t
            since[~above] = np.nan
            due = above & (t - since >= self.min_duration - 1e-12)
            if not due.any():
                return None
            self.active = True
            self.start = float(np.nanmin(since))
            self._peak[:] = np.where(above, a, 0.0)
            idx = np.flatnonzero(above)
            self.joints = tuple(self.names[i] for i in idx)
            return CollisionEvent('collision', float(t), self.joints,
                                  {self.names[i]: float(a[i]) for i in idx}, self.start)
        np.maximum(self._peak, np.where(above, a, 0.0), out=self._peak)
        if above.any():
            new = [self.names[i] for i in np.flatnonzero(above) if self.names[i] not in
                   self.joints]
            if new:
                self.joints = self.joints + tuple(new)
        if np.all(a < (1.0 - self.hysteresis) * self.thresholds):
            idx = [self.names.index(j) for j in self.joints]
            event = CollisionEvent('clear', float(t), self.joints,
                                   {self.names[i]: float(self._peak[i]) for i in idx},
                                   self.start)
            slow_until = self._slow_until.copy()
            self.reset()
            self._slow_until[:] = slow_until
            return event
        return None


class WrenchEstimator:
    """The wrench on one link from external torques, with its buffers allocated once.

    ``WrenchEstimator(model, link, reference, damping)(q, r)`` equals
    ``external_wrench(model, q, r, link, reference, damping)`` (see there) and returns a new
    (6,) array; ValueError for an unknown link or reference or a bad damping.
    """

    def __init__(self, model, link, reference='LOCAL', damping=0.05):
        """Check the settings once (the frame Jacobian checks link and reference)."""
        from rnea_ros import frame_jacobian
        self._jacobian = frame_jacobian
        if not (isinstance(damping, (int, float)) and damping >= 0.0
                and math.isfinite(damping)):
            raise ValueError(f'damping must be finite and >= 0, got {damping!r}')
        self.model, self.link, self.reference = model, link, reference
        self.damping = float(damping)
        frame_jacobian(model, np.zeros(model.nq) if not model.floating_base else
                       np.r_[np.zeros(6), 1.0, np.zeros(model.nq - 7)], link,
                       reference=reference)
        self._A, self._V, self._b = np.empty((6, 6)), np.empty((6, 6)), np.empty(6)

    def __call__(self, q, r):
        """Return the wrench [force, torque] of the environment on the link (see class doc)."""
        model = self.model
        J = self._jacobian(model, q, self.link, reference=self.reference)
        r = np.ascontiguousarray(r, dtype=np.float64)
        if r.shape != (model.nv,):
            raise ValueError(f'r has shape {r.shape}, expected ({model.nv},)')
        F = np.empty(6)
        if damped_least_squares(J, r, self.damping, self._A, self._V, self._b, F) < 0:
            raise ValueError('external_wrench: r is not finite')
        return F


def external_wrench(model, q, r, link, reference='LOCAL', damping=0.05):
    """Return the wrench [force, torque] on ``link`` that explains the external torques r.

    Solves ``r = J(q)^T F`` with J = ``frame_jacobian(model, q, link, reference)`` (rows
    [linear; angular]): F is the wrench *of the environment on the link*, in the frame of
    ``reference`` ('LOCAL': link axes, about the link origin; 'LOCAL_WORLD_ALIGNED': world
    axes, about the link origin; 'WORLD': world axes, about the world origin).  ``r`` has nv
    entries (model order).  With J = U S V^T, ``F = U diag(s / (s^2 + l^2)) V^T r``: least
    squares when nv > 6, the smallest wrench when nv < 6 (the directions the joints cannot feel
    are not estimated), and damped least squares near a singularity with
    ``l^2 = max(0, damping^2 - s_min^2)`` (s_min: the smallest of the min(6, nv) singular
    values): exact while s_min is above ``damping``, and a gain bounded by 1 / damping inside.
    Computed as ``(J J^T + l^2 I)^-1 J r`` by the numba kernel
    :func:`rnea_ros.core.kernels.observer.damped_least_squares` (Jacobi eigenvalues of J J^T).
    """
    return WrenchEstimator(model, link, reference, damping)(q, r)


def observe_recording(model, t, Q, QD, E, gains=DEFAULT_GAIN, thresholds=None, hysteresis=0.2,
                      min_duration=0.005, gravity=None, friction=True,
                      max_gap=DEFAULT_MAX_GAP, effort_sampling='instant',
                      reversal_thresholds=None, reversal_band=DEFAULT_REVERSAL_BAND,
                      reversal_hold=DEFAULT_REVERSAL_HOLD, output_filter=0.0):
    """Run the observer (and a detector when ``thresholds`` are given) over a recording.

    ``t`` (N,) s, ``Q`` (N, nq), ``QD`` (N, nv), ``E`` (N, njoints or nv) measured efforts, in
    model order.  ``reversal_*``: the detector's thresholds gated by velocity reversals
    (:class:`CollisionDetector`); ``output_filter``: see :class:`MomentumObserver`.  Returns a
    dict: ``r`` (N, nv) external torques (NaN where a sample was not used), ``events`` (list of
    :class:`CollisionEvent`), ``suspended`` (list of (t, reason)), ``notes`` (list of (t,
    note): restarts).
    """
    t = np.asarray(t, dtype=float)
    N = t.shape[0]
    Q = np.asarray(Q, dtype=float)
    QD = np.asarray(QD, dtype=float)
    E = np.asarray(E, dtype=float)
    if Q.shape[0] != N or QD.shape[0] != N or E.shape[0] != N:
        raise ValueError(f'the recording arrays have {N}, {Q.shape[0]}, {QD.shape[0]} and '
                         f'{E.shape[0]} rows; they must match')
    observer = MomentumObserver(model, gains, gravity=gravity, friction=friction,
                                max_gap=max_gap, effort_sampling=effort_sampling,
                                output_filter=output_filter)
    names = _velocity_names(model)
    detector = (CollisionDetector(names, thresholds, hysteresis, min_duration,
                                  reversal_thresholds, reversal_band, reversal_hold)
                if thresholds is not None and np.size(thresholds) else None)
    R = np.full((N, model.nv), np.nan)
    events, suspended, notes = [], [], []
    for k in range(N):
        r = observer.update(t[k], Q[k], QD[k], E[k])
        if observer.note:
            notes.append((float(t[k]), observer.note))
            if detector is not None:
                detector.reset()
        if r is None:
            suspended.append((float(t[k]), observer.suspended))
            continue
        R[k] = r
        if detector is not None:
            event = detector.update(t[k], r, QD[k])
            if event is not None:
                events.append(event)
    return {'t': t, 'r': R, 'names': names, 'events': events, 'suspended': suspended,
            'notes': notes}


def reversal_windows(t, QD, band=DEFAULT_REVERSAL_BAND, hold=DEFAULT_REVERSAL_HOLD):
    """Return (N, n) booleans: sample k of joint j is in its reversal window.

    The detector's rule (:class:`CollisionDetector`) over a recording: ``|QD[k, j]| < band``
    (or not finite), or a sample of the last ``hold`` s before it was.  ``t`` (N,) s,
    increasing; ``QD`` (N, n).
    """
    t = np.asarray(t, dtype=float)
    slow = ~(np.abs(np.asarray(QD, dtype=float)) >= band)
    index = np.arange(t.size)[:, None]
    last = np.maximum.accumulate(np.where(slow, index, -1), axis=0)   # last slow sample
    since = t[:, None] - np.where(last >= 0, t[np.maximum(last, 0)], -np.inf)
    return since <= hold


def _velocity_names(model):
    base = ('base_vx', 'base_vy', 'base_vz', 'base_wx', 'base_wy', 'base_wz')
    return (base if model.floating_base else ()) + tuple(model.joint_names)


__all__ = ['MomentumObserver', 'CollisionDetector', 'CollisionEvent', 'external_wrench',
           'WrenchEstimator', 'observe_recording', 'reversal_windows']
