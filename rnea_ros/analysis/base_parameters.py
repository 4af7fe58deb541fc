"""Base inertial parameters: the combinations of standard parameters the dynamics can see.

Some standard parameters never affect the joint efforts (the first link's XX, YY of a fixed-base
arm), and others act only in fixed combinations (ZZ2 with a mass times a length squared of a
later link).  The *base parameters* (Gautier and Khalil 1990; Khalil and Dombre, *Modeling,
identification and control of robots*, section 12.4) are a minimal set: ``tau = W_b beta`` with
``beta = K phi``.

Numerical method (Gautier 1991, Khalil and Dombre section 12.4.3): the regressor ``W`` of many
random states (positions within the joint limits, random velocities and accelerations) is
decomposed by QR with column pivoting, ``W P = Q R``.  Its rank r is the number of base
parameters; the first r pivoted columns are independent (the *base columns* ``b``), the others
are ``W_d = W_b beta_d`` with ``beta_d = R_11^-1 R_12``.  Hence ``W phi = W_b (phi_b + beta_d
phi_d)`` and ``K`` has the identity on the base columns and ``beta_d`` on the others.  Each base
parameter is named as its combination of standard names, e.g. ``ZZ[link2] + 0.1225*M[link3]``
(numeric coefficients; :func:`rnea_ros.core.regressor.parameter_names` gives Khalil's ``ZZ2``
numbering for MDH robots).
"""

from dataclasses import dataclass

import numpy as np

from rnea_ros.core.regressor import parameter_names, regressor_batch


@dataclass
class BaseParameters:
    """The base set of a regressor: ``W phi = W[:, base] (K phi)``."""

    base: np.ndarray        # (r,) column indices of the base parameters
    K: np.ndarray           # (r, p) with beta = K phi
    names: list             # (r,) readable combination of each base parameter
    standard_names: list    # (p,) names of the standard parameters (columns of W)

    @property
    def count(self):
        """Return the number of base parameters."""
        return int(self.base.size)

    def values(self, phi):
        """Return beta = K phi."""
        return self.K @ np.asarray(phi, dtype=float)


def random_states(model, n, rng, scale=1.0, moving=None, hold=None):
    """Return (Q, QD, QDD) of n random states: positions within limits, unit quaternions.

    ``moving`` (joint indices, default all) move; the other joints stay at ``hold`` (their
    positions, njoints values) with zero velocity and acceleration.
    """
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
    joints = rng.uniform(lo, hi, (n, model.njoints))
    still = np.ones(model.njoints, dtype=bool)
    still[np.arange(model.njoints) if moving is None else np.asarray(moving, dtype=int)] = False
    if still.any():
        joints[:, still] = np.asarray(hold, dtype=float)[still]
    if model.floating_base:
        quat = rng.normal(size=(n, 4))
        quat /= np.linalg.norm(quat, axis=1, keepdims=True)
        Q = np.hstack([rng.uniform(-1.0, 1.0, (n, 3)), quat, joints])
    else:
        Q = joints
    QD = rng.uniform(-scale, scale, (n, model.nv))
    QDD = rng.uniform(-scale, scale, (n, model.nv))
    off = model.nv - model.njoints
    QD[:, off + np.flatnonzero(still)] = 0.0
    QDD[:, off + np.flatnonzero(still)] = 0.0
    return Q, QD, QDD


def khalil_priority(nbodies, njoints=0):
    """Return the column order in which base columns are chosen: Khalil's regrouping order.

    Per body XX XY XZ YY YZ ZZ MX MY MZ M (body after body), then the joint columns: a later
    column that depends on earlier ones is regrouped into them, as in Khalil and Dombre's
    tables (M3 into ZZ2 and MX2, Ia1 into ZZ1).
    """
    within = [4, 5, 6, 7, 8, 9, 1, 2, 3, 0]
    order = [10 * b + k for b in range(nbodies) for k in within]
    return np.array(order + [10 * nbodies + k for k in range(4 * njoints)], dtype=int)


def base_from_regressor(W, standard_names, priority=None, tol=1e-8, zero=1e-9):
    """Return the :class:`BaseParameters` of a stacked regressor W.

    Columns are taken in ``priority`` order (default: as given), scaled to unit norm, and kept
    when their distance to the span of the kept ones exceeds ``tol`` (the diagonal of R of a QR
    decomposition, Householder, in that order); the others are written on the kept ones by
    least squares: ``W_d = W_b beta_d``.  Coefficients of K below ``zero`` are set to 0 (a URDF
    written with rounded angles, 1.5708 for pi/2, turns exact dependencies into ones of ~1e-6:
    identification uses 1e-5 for both).
    """
    from scipy.linalg import qr
    W = np.asarray(W, dtype=float)
    p = W.shape[1]
    order = np.arange(p) if priority is None else np.asarray(priority, dtype=int)
    scale = np.linalg.norm(W, axis=0)
    live = order[scale[order] > tol * max(scale.max(), 1e-300)]
    R = qr(W[:, live] / scale[live], mode='r')[0]
    diag = np.abs(np.diag(R)[:live.size]) if live.size else np.zeros(0)
    base = np.sort(live[diag > tol])
    dep = np.setdiff1d(np.arange(p), base)
    K = np.zeros((base.size, p))
    K[np.arange(base.size), base] = 1.0
    if dep.size and base.size:
        Wb = W[:, base] / scale[base]
        beta = np.linalg.lstsq(Wb, W[:, dep], rcond=None)[0] / scale[base][:, None]
        K[:, dep] = beta
    K[np.abs(K) < zero] = 0.0
    names = [combination_name(K[i], standard_names, base[i]) for i in range(base.size)]
    return BaseParameters(base=base, K=K, names=names, standard_names=list(standard_names))


def combination_name(row, standard_names, lead):
    """Return ``A + 0.5*B - C`` for one row of K, the base column's own name first."""
    terms = [standard_names[lead]]
    for k in np.flatnonzero(row):
        if k == lead:
            continue
        c = row[k]
        mag = abs(c)
        text = standard_names[k] if abs(mag - 1.0) < 1e-9 else f'{mag:.6g}*{standard_names[k]}'
        terms.append(('- ' if c < 0 else '+ ') + text)
    return ' '.join(terms)


def base_parameters(model, friction=False, samples=None, seed=0, numbered=False,
                    gravity=None, moving=None, hold=None):
    """Return the :class:`BaseParameters` of a model from the regressor of random states.

    ``friction=True`` includes the joint columns [Fv, Fs, Ia, off] (rotor inertia Ia of the first
    joint then combines with the first link's ZZ, as in Khalil and Dombre's tables).
    ``moving``/``hold``: only these joints move and only their efforts are used (the others
    are held at ``hold``, see :func:`random_states`): the base set of a partial excitation.
    """
    rng = np.random.default_rng(seed)
    p = 10 * model.nbodies + (4 * model.njoints if friction else 0)
    n = samples or max(50, 3 * p // max(model.nv, 1) + 20)
    Q, QD, QDD = random_states(model, n, rng, moving=moving, hold=hold)
    W = regressor_batch(model, Q, QD, QDD, gravity=gravity, friction=friction)
    if moving is not None:
        off = model.nv - model.njoints
        rows = np.concatenate([np.arange(off), off + np.asarray(moving, dtype=int)])
        W = W.reshape(n, model.nv, -1)[:, rows, :].reshape(-1, W.shape[1])
    names = parameter_names(model, friction=friction, numbered=numbered)
    priority = khalil_priority(model.nbodies, model.njoints if friction else 0)
    return base_from_regressor(W, names, priority)
