"""Joint friction and effort offsets: the one definition every part of the package uses.

Per joint, with velocity qd (rad/s or m/s), the friction effort added to the rigid-body effort
(Khalil 2010 eq. 31, ``Fs sign(qd) + Fv qd``, extended by direction, a Stribeck term and an
offset)::

    tau_f = Fv(qd) qd + (Fs(qd) + Fx e(qd)) s(qd) + off

    Fv(qd) = Fv+ if qd > 0 else Fv-          viscous, N m s/rad (N s/m)
    Fs(qd) = Fs+ if qd > 0 else Fs-          Coulomb, N m (N)
    e(qd)  = exp(-(qd / v_st)^2)             Stribeck decay (Armstrong-Helouvry 1991;
                                             Olsson et al. 1998), v_st = stribeck_velocity
    s(qd)  = clip(qd / v_s, -1, 1)           law 'linear' (the default): sign(qd), linear
                                             inside |qd| < v_s = coulomb_band (no chatter at rest)
           = tanh(qd / v_s)                  law 'tanh': the smooth sigmoid sign (as in sigmoid
                                             friction models of torque-controlled arms, e.g.
                                             Gaz et al. 2019)

Fx = F_static - Fs is the Stribeck excess: the breakaway effort above the Coulomb level near
zero velocity.  ``off`` is a constant effort offset (a torque sensor's or current loop's bias):
it acts at rest too.  With Fv+ = Fv-, Fs+ = Fs-, Fx = off = 0 and the linear law this is the
classic ``Fs sign(qd) + Fv qd``.  Every term is linear in the parameters for fixed v_s and v_st,
which identification uses: :func:`basis` gives the columns, in the order of :data:`PARAMETERS`.

The parameters of a joint are one row of a (njoints, 6) *friction table* in that order; a
:class:`~rnea_ros.core.model.RobotModel` holds one (``model.friction_table``, built from its
options ``friction_viscous``, ``friction_viscous_negative``, ``friction_coulomb``,
``friction_coulomb_negative``, ``friction_stribeck``, ``effort_offset``, ``friction_law``,
``coulomb_band`` and ``stribeck_velocity``).  v_s and v_st may differ joint by joint (the model
options ``friction_coulomb_band`` and ``friction_stribeck_velocity``; ``model.coulomb_bands`` and
``model.stribeck_velocities``): every function here takes ``scale`` and ``stribeck_velocity`` as
one value or one per joint (the last axis of qd).
"""

import numpy as np

PARAMETERS = ('Fv+', 'Fv-', 'Fs+', 'Fs-', 'Fx', 'off')
FV_POS, FV_NEG, FS_POS, FS_NEG, FX, OFF = range(6)
NONNEGATIVE = (FV_POS, FV_NEG, FS_POS, FS_NEG, FX)   # friction dissipates: these are >= 0
LAWS = ('linear', 'tanh')
STRIBECK_VELOCITY = 0.1   # default v_st, rad/s or m/s


def check_law(law):
    """Return ``law`` if it is a known sign law, else raise ValueError naming the choices."""
    if law not in LAWS:
        raise ValueError(f'friction_law must be one of {LAWS}, got {law!r}')
    return law


def smooth_sign(qd, scale, law='linear'):
    """Return the smoothed sign: clip(qd / scale, -1, 1) (law 'linear') or tanh(qd / scale)."""
    if law == 'linear':
        return np.clip(qd / scale, -1.0, 1.0)
    return np.tanh(qd / scale)


def stribeck_decay(qd, stribeck_velocity):
    """Return the Stribeck decay exp(-(qd / v_st)^2) of velocities qd."""
    return np.exp(-np.square(qd / stribeck_velocity))


def basis(qd, scale, law='linear', stribeck_velocity=STRIBECK_VELOCITY):
    """Return the (..., 6) regressor columns B with tau_f = B @ [Fv+, Fv-, Fs+, Fs-, Fx, off].

    ``[max(qd, 0), min(qd, 0), s(qd) [qd > 0], s(qd) [qd < 0], e(qd) s(qd), 1]``.
    """
    qd = np.asarray(qd, dtype=float)
    s = smooth_sign(qd, scale, law)
    positive = qd > 0.0
    out = np.empty(qd.shape + (len(PARAMETERS),))
    out[..., FV_POS] = np.where(positive, qd, 0.0)
    out[..., FV_NEG] = np.where(positive, 0.0, qd)
    out[..., FS_POS] = np.where(positive, s, 0.0)
    out[..., FS_NEG] = np.where(positive, 0.0, s)
    out[..., FX] = stribeck_decay(qd, stribeck_velocity) * s
    out[..., OFF] = 1.0
    return out


def friction_effort(table, qd, scale, law='linear', stribeck_velocity=STRIBECK_VELOCITY):
    """Return tau_f of the module doc for velocities qd (..., njoints) and a (njoints, 6) table.

    Written term by term (no basis array) so that a control loop pays only for the terms in
    use: direction-dependent coefficients, the Stribeck term and offsets cost nothing when
    they are absent.
    """
    table = np.asarray(table, dtype=float)
    s = smooth_sign(qd, scale, law)
    fv, fs = table[:, FV_POS], table[:, FS_POS]
    if np.any(table[:, FV_NEG] != fv) or np.any(table[:, FS_NEG] != fs):
        positive = qd > 0.0
        fv = np.where(positive, fv, table[:, FV_NEG])
        fs = np.where(positive, fs, table[:, FS_NEG])
    if np.any(table[:, FX]):
        fs = fs + table[:, FX] * stribeck_decay(qd, stribeck_velocity)
    out = fv * qd + fs * s
    if np.any(table[:, OFF]):
        out = out + table[:, OFF]
    return out


def friction_table(njoints, viscous=None, coulomb=None, viscous_negative=None,
                   coulomb_negative=None, stribeck=None, offset=None):
    """Return a (njoints, 6) table of per-joint arrays (None: 0; a negative side None: as +)."""
    table = np.zeros((njoints, len(PARAMETERS)))
    for col, values in ((FV_POS, viscous), (FS_POS, coulomb), (FX, stribeck), (OFF, offset)):
        if values is not None:
            table[:, col] = values
    table[:, FV_NEG] = table[:, FV_POS] if viscous_negative is None else viscous_negative
    table[:, FS_NEG] = table[:, FS_POS] if coulomb_negative is None else coulomb_negative
    return table


__all__ = ['PARAMETERS', 'LAWS', 'STRIBECK_VELOCITY', 'smooth_sign', 'stribeck_decay', 'basis',
           'friction_effort', 'friction_table', 'check_law']
