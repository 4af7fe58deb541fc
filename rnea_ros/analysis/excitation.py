"""Excitation trajectories for identification: finite Fourier series (Swevers et al. 1997).

Each joint j follows, for 0 <= t <= T,

    q_j(t) = q0_j + sum_{l=1..L} [a_jl / (w l) sin(w l t) - b_jl / (w l) cos(w l t)]

with w = 2 pi f (f the base frequency), so that

    qd_j(t)  = sum_l [a_jl cos(w l t) + b_jl sin(w l t)]
    qdd_j(t) = sum_l w l [-a_jl sin(w l t) + b_jl cos(w l t)].

The series is periodic with period 1/f; T is a whole number of periods.  It starts and ends at
rest: qd(0) = sum_l a_jl = 0 and qdd(0) = w sum_l l b_jl = 0 (hence also at T).  Outside
[0, T] the trajectory holds still at q(0) = q(T).

File format (YAML)::

    excitation:
      robot: panda                      # informative
      joints: [panda_joint1, ...]       # names; arrays below are in this order
      base_frequency: 0.1               # f, Hz
      duration: 30.0                    # T, s (a whole number of periods 1/f)
      harmonics: 5                      # L
      q0: [0.0, ...]                    # per joint, rad or m
      a: [[a_11, ..., a_1L], ...]       # per joint, L coefficients, rad/s or m/s
      b: [[b_11, ..., b_1L], ...]
      condition_number: 123.4           # informative: of the base regressor when optimised

:class:`FourierTrajectory` loads and evaluates it; :func:`optimise_excitation` designs one for
a model: random restarts and a local minimisation of the condition number of the base
regressor along the trajectory, within the joint position, velocity and effort limits
(``rnea-ros excite``).
"""

import math

import numpy as np
import yaml


class FourierTrajectory:
    """A finite Fourier series per joint (see the module doc); arrays in ``joints`` order."""

    def __init__(self, joints, base_frequency, duration, q0, a, b, robot='', info=None):
        """Check and store the coefficients; raise ValueError on a malformed trajectory."""
        self.joints = [str(j) for j in joints]
        n = len(self.joints)
        self.base_frequency = float(base_frequency)
        self.duration = float(duration)
        self.q0 = np.asarray(q0, dtype=float).reshape(-1)
        self.a = np.atleast_2d(np.asarray(a, dtype=float))
        self.b = np.atleast_2d(np.asarray(b, dtype=float))
        self.robot = str(robot)
        self.info = dict(info or {})
        if n == 0 or self.q0.shape != (n,) or self.a.shape[0] != n or self.a.shape != self.b.shape:
            raise ValueError(f'excitation: q0 needs {n} values and a, b {n} rows of L harmonics '
                             f'each; got q0 {self.q0.shape}, a {self.a.shape}, b {self.b.shape}')
        if not (self.base_frequency > 0 and self.duration > 0):
            raise ValueError('excitation: base_frequency and duration must be positive')
        periods = self.duration * self.base_frequency
        if abs(periods - round(periods)) > 1e-6 or round(periods) < 1:
            raise ValueError(f'excitation: duration {self.duration} s is not a whole number of '
                             f'periods 1/f = {1 / self.base_frequency} s')
        values = (self.q0, self.a, self.b)
        if not all(np.all(np.isfinite(v)) for v in values):
            raise ValueError('excitation: coefficients must be finite')
        L = self.harmonics
        w = 2 * math.pi * self.base_frequency
        if (np.abs(self.a.sum(axis=1)).max() > 1e-9
                or np.abs(w * self.b @ np.arange(1, L + 1)).max() > 1e-9):
            raise ValueError('excitation: the series does not start at rest (sum_l a_jl and '
                             'sum_l l b_jl must be 0)')

    @property
    def harmonics(self):
        """Return L, the number of harmonics."""
        return self.a.shape[1]

    def evaluate(self, t):
        """Return (q, qd, qdd) at time t (scalar: (n,) arrays; array of N times: (N, n))."""
        t = np.asarray(t, dtype=float)
        tc = np.clip(t, 0.0, self.duration)
        w = 2 * math.pi * self.base_frequency
        wl = w * np.arange(1, self.harmonics + 1)                      # (L,)
        phase = tc[..., None] * wl                                     # (..., L)
        s, c = np.sin(phase), np.cos(phase)
        q = self.q0 + (s / wl) @ self.a.T - (c / wl) @ self.b.T
        qd = c @ self.a.T + s @ self.b.T
        qdd = (-s * wl) @ self.a.T + (c * wl) @ self.b.T
        outside = (t < 0.0) | (t > self.duration)
        if np.any(outside):
            qd = np.where(outside[..., None], 0.0, qd)
            qdd = np.where(outside[..., None], 0.0, qdd)
        return q, qd, qdd

    def sample(self, rate):
        """Return (t, Q, QD, QDD) sampled at ``rate`` Hz over [0, T]."""
        t = np.arange(int(round(self.duration * rate)) + 1) / float(rate)
        return (t,) + self.evaluate(t)

    def to_dict(self):
        """Return the YAML structure of the module doc."""
        out = {'robot': self.robot, 'joints': list(self.joints),
               'base_frequency': self.base_frequency, 'duration': self.duration,
               'harmonics': self.harmonics, 'q0': self.q0.tolist(),
               'a': self.a.tolist(), 'b': self.b.tolist()}
        out.update({k: v for k, v in self.info.items() if k not in out})
        return {'excitation': out}

    def to_yaml(self, path):
        """Write the trajectory to ``path`` (written to a temporary file, then renamed)."""
        from rnea_ros.analysis.output import write_atomic
        write_atomic(path, yaml.safe_dump(self.to_dict(), sort_keys=False))

    @classmethod
    def from_dict(cls, data):
        """Build from the YAML structure of the module doc."""
        if not isinstance(data, dict) or not isinstance(data.get('excitation'), dict):
            raise ValueError("excitation file: expected a mapping with key 'excitation'")
        e = data['excitation']
        missing = [k for k in ('joints', 'base_frequency', 'duration', 'q0', 'a', 'b')
                   if k not in e]
        if missing:
            raise ValueError(f'excitation file: missing keys {missing}')
        info = {k: v for k, v in e.items()
                if k not in ('joints', 'base_frequency', 'duration', 'q0', 'a', 'b', 'robot',
                             'harmonics')}
        traj = cls(e['joints'], e['base_frequency'], e['duration'], e['q0'], e['a'], e['b'],
                   robot=e.get('robot', ''), info=info)
        if 'harmonics' in e and int(e['harmonics']) != traj.harmonics:
            raise ValueError(f"excitation file: harmonics is {e['harmonics']} but a and b have "
                             f'{traj.harmonics} columns')
        return traj

    @classmethod
    def from_yaml(cls, path):
        """Load a trajectory file (ValueError if unreadable or malformed)."""
        try:
            with open(path, encoding='utf-8') as f:
                data = yaml.safe_load(f)
        except (OSError, yaml.YAMLError) as e:
            raise ValueError(f'cannot read excitation file {path!r}: {e}') from None
        return cls.from_dict(data)


# -- design ---------------------------------------------------------------------------------------

def _coefficients(x, n, L):
    """Return (a, b) (n x L) of the free variables; a_jL, b_jL make the series start at rest."""
    x = x.reshape(2, n, L - 1)
    ell = np.arange(1, L + 1)
    a = np.hstack([x[0], -x[0].sum(axis=1, keepdims=True)])
    b = np.hstack([x[1], -(x[1] @ ell[:-1] / L)[:, None]])
    return a, b


def _limits(model, index, margin, speed):
    """Return (lower, upper, vmax) of the excited joints, with safety margins applied."""
    lo = model.lower_limits[index]
    hi = model.upper_limits[index]
    finite = np.isfinite(lo) & np.isfinite(hi)
    mid = np.where(finite, 0.5 * (lo + hi), 0.0)
    half = np.where(finite, 0.5 * (hi - lo), math.pi) * margin
    vlim = model.velocity_limits[index]
    vmax = np.where(np.isfinite(vlim) & (vlim > 0), vlim, 2.0) * speed
    return mid - half, mid + half, vmax


class _Design:
    """The objective of the excitation design: log cond of the base regressor, limits kept."""

    def __init__(self, model, index, duration, f, L, margin, speed, points, seed):
        from rnea_ros.analysis.base_parameters import base_parameters
        from rnea_ros.core.regressor import inertial_parameters
        self.model, self.index, self.f, self.L = model, np.asarray(index), f, L
        self.lo, self.hi, self.vmax = _limits(model, self.index, margin, speed)
        self.q0 = 0.5 * (self.lo + self.hi)
        self.hold = np.where(np.isfinite(model.lower_limits) & np.isfinite(model.upper_limits),
                             0.5 * (model.lower_limits + model.upper_limits), 0.0)
        self.t = np.linspace(0.0, 1.0 / f, points, endpoint=False)
        self.dense = np.linspace(0.0, 1.0 / f, 5 * points, endpoint=False)   # limits
        from rnea_ros.analysis.identification import BASE_TOL
        self.base = base_parameters(model, friction=True, seed=seed, moving=self.index,
                                    hold=self.hold, tol=BASE_TOL, zero=BASE_TOL)   # as identify
        off = model.nv - model.njoints
        self.rows = off + self.index
        self.effort = model.effort_limits[self.index] * 0.9
        self.phi = inertial_parameters(model)

    def trajectory(self, x):
        """Return the FourierTrajectory of free variables x, scaled into the limits."""
        n = self.index.size
        a, b = _coefficients(x, n, self.L)
        traj = FourierTrajectory([self.model.joint_names[i] for i in self.index], self.f,
                                 1.0 / self.f, self.q0, a, b, robot=self.model.name)
        q, qd, _ = traj.evaluate(self.dense)
        dq = q - self.q0
        up = np.where(dq.max(axis=0) > 0, (self.hi - self.q0) / np.maximum(dq.max(axis=0),
                                                                           1e-12), np.inf)
        down = np.where(dq.min(axis=0) < 0, (self.lo - self.q0) / np.minimum(dq.min(axis=0),
                                                                             -1e-12), np.inf)
        vel = self.vmax / np.maximum(np.abs(qd).max(axis=0), 1e-12)
        s = np.minimum(1.0, np.minimum(np.minimum(up, down), vel))
        traj.a *= s[:, None]
        traj.b *= s[:, None]
        return traj

    def states(self, traj, t):
        """Return (Q, QD, QDD) of the model along the trajectory (other joints held)."""
        q, qd, qdd = traj.evaluate(t)
        n = t.size
        Q = np.tile(self.hold, (n, 1))
        QD = np.zeros((n, self.model.njoints))
        QDD = np.zeros((n, self.model.njoints))
        Q[:, self.index], QD[:, self.index], QDD[:, self.index] = q, qd, qdd
        return Q, QD, QDD

    def condition(self, traj):
        """Return (condition number, max effort ratio to 90 % of the limits) of a trajectory."""
        from rnea_ros.core.regressor import regressor_batch
        Q, QD, QDD = self.states(traj, self.t)
        nv = self.model.nv
        W = regressor_batch(self.model, Q, QD, QDD, friction=True)
        W = W.reshape(self.t.size, nv, -1)[:, self.rows, :].reshape(-1, W.shape[1])
        Wb = W[:, self.base.base]        # W phi = W_b K phi: the base columns are W_b
        # Squared singular values from the Gram matrix (BLAS on one thread: see
        # single_threaded).
        ev = np.linalg.eigvalsh(Wb.T @ Wb)
        sv = np.sqrt(np.clip(ev[::-1], 0.0, None))
        tau = (W[:, :self.phi.size] @ self.phi).reshape(-1, self.rows.size)   # nominal ID
        ratio = np.abs(tau).max(axis=0) / self.effort
        return sv[0] / max(sv[-1], 1e-300), float(np.max(ratio))

    def objective(self, x):
        """Return log cond + a penalty on efforts beyond 90 % of the limits."""
        cond, ratio = self.condition(self.trajectory(x))
        return math.log(cond) + 10.0 * max(0.0, ratio - 1.0) ** 2


def optimise_excitation(model, duration=30.0, joints=None, base_frequency=None, harmonics=5,
                        seed=0, restarts=16, iterations=10, margin=0.9, speed=0.8, points=60):
    """Return a :class:`FourierTrajectory` of low base-regressor condition number for a model.

    ``joints``: names of the joints to excite (default all moving joints; the others are held
    at the middle of their range).  The base frequency defaults to a whole number of periods of
    about 10 s in ``duration``.  Positions stay within ``margin`` of each joint's range around
    its middle, velocities within ``speed`` times the URDF limit (2 rad/s when none), efforts
    within 90 % of the URDF limit (penalised).  ``restarts`` random coefficient sets, the best
    refined by L-BFGS-B for ``iterations``.

    The design is a pure function of (model, options, seed) on a machine: the random starts
    come from ``seed`` alone, there is no time budget, and numba and OpenBLAS run on one thread
    (:func:`rnea_ros.analysis.blas.single_threaded`), so no reduction order changes between
    runs; the seed and options are written into the trajectory's ``info``.
    """
    if model.floating_base:
        raise ValueError('excitation design is for fixed-base robots')
    names = list(model.joint_names) if not joints else list(joints)
    unknown = [j for j in names if j not in model.joint_names]
    if unknown:
        raise ValueError(f'--joints names unknown joints {unknown}; joints: '
                         f'{list(model.joint_names)}')
    index = [model.joint_names.index(j) for j in names]
    duration = float(duration)
    if base_frequency is None:
        base_frequency = max(1, round(duration / 10.0)) / duration
    L = int(harmonics)
    if L < 2:
        raise ValueError('harmonics must be >= 2 (the series must start and end at rest)')
    from rnea_ros.analysis.blas import single_threaded
    with single_threaded():
        return _optimise(model, index, duration, float(base_frequency), L, margin, speed,
                         points, seed, restarts, iterations)


def _optimise(model, index, duration, base_frequency, L, margin, speed, points, seed, restarts,
              iterations):
    """Return the designed trajectory (see :func:`optimise_excitation`)."""
    from scipy.optimize import minimize
    design = _Design(model, index, duration, base_frequency, L, margin, speed, points, seed)
    rng = np.random.default_rng(seed)
    size = 2 * len(index) * (L - 1)
    best, best_x = math.inf, None
    for _ in range(max(1, restarts)):
        x = rng.normal(0.0, 1.0, size)
        value = design.objective(x)
        if value < best:
            best, best_x = value, x
    result = minimize(design.objective, best_x, method='L-BFGS-B',
                      options={'maxiter': int(iterations), 'eps': 1e-6})
    x = result.x if result.fun < best else best_x
    design.dense = np.linspace(0.0, 1.0 / design.f, 20 * design.t.size, endpoint=False)
    one = design.trajectory(x)                  # the limits checked on a finer grid
    cond, ratio = design.condition(one)
    return FourierTrajectory(one.joints, one.base_frequency, duration, one.q0, one.a, one.b,
                             robot=model.name,
                             info={'condition_number': float(cond),
                                   'max_effort_ratio': float(ratio * 0.9),
                                   'seed': int(seed), 'restarts': int(restarts),
                                   'iterations': int(iterations)})
