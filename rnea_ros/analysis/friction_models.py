"""Candidate friction models of identification: the terms of the law fitted, their columns.

The law itself (sign laws, Stribeck term, offsets) is :mod:`rnea_ros.core.friction`, shared with
the node and ``inverse_dynamics``.  Here: the candidates ``rnea-ros identify`` compares
(:func:`friction_models`: Coulomb-viscous, asymmetric, the sign law whose Coulomb term follows
the reported velocity down to rest, tanh with a Stribeck term), the nominal model's own law,
and their feature columns (:func:`features`), computed once per sample for all candidates.
A candidate may add a joint torque sensor's crosstalk from the bending moments
(:mod:`rnea_ros.core.sensor`: two coefficients per joint, columns ``CROSSTALK_KEYS`` from the
nominal model's reaction wrenches); identify tries it on the chosen law, and keeps it only
when held-out data asks for it (:mod:`rnea_ros.analysis.choice`).
"""

from dataclasses import dataclass, replace

import numpy as np

from rnea_ros.core import friction as fr


STICK_BAND = 0.05            # |qd| below which an equation is left out (stick-slip), rad/s


#                              (and may not predict the moving joints' equations 2 % worse)
SMOOTH_SCALES = (0.01, 0.02, 0.05, 0.1)  # v_s tried for the tanh law, rad/s (or m/s)


SIGN_BAND = 1e-6             # rad/s (m/s): the 'sign' candidate's band, Coulomb = sign(qd)

STRIBECK_RATIOS = (2.0, 5.0)             # v_st / v_s tried


# Parameter groups of the candidate friction models: (name, columns of friction.basis summed).
SYMMETRIC = (('Fv', (fr.FV_POS, fr.FV_NEG)), ('Fs', (fr.FS_POS, fr.FS_NEG)), ('off', (fr.OFF,)))


OFFSET_KEY = ('', 0.0, 0.0, (fr.OFF,))      # the feature key of the effort offset (a constant)


ASYMMETRIC = (('Fv+', (fr.FV_POS,)), ('Fv-', (fr.FV_NEG,)), ('Fs+', (fr.FS_POS,)),
              ('Fs-', (fr.FS_NEG,)), ('off', (fr.OFF,)))

STRIBECK = ASYMMETRIC + (('Fx', (fr.FX,)),)

CROSSTALK = ('Xu', 'Xw')     # sensor crosstalk parameters (core.sensor.SENSOR_OPTIONS order)
CROSSTALK_KEYS = (('X', 0), ('X', 1))      # their feature keys: the two bending moments


@dataclass(frozen=True)
class FrictionModel:
    """A candidate friction law: which terms of :mod:`rnea_ros.core.friction` are fitted.

    ``groups`` name the parameters and the basis columns each multiplies (a symmetric Fv
    multiplies both Fv+ and Fv- columns); every model adds rotor inertia ``Ia``, and with
    ``crosstalk`` the sensor's crosstalk coefficients ``Xu``, ``Xw`` (last).
    """

    name: str
    law: str
    scale: object                 # v_s of the sign (the Coulomb band for the linear law): a
    stribeck_velocity: object     # float, or a tuple per joint (model order); so is v_st
    groups: tuple
    crosstalk: bool = False

    @property
    def size(self):
        """Return the number of parameters per joint (groups, Ia, crosstalk)."""
        return len(self.groups) + 1 + (len(CROSSTALK) if self.crosstalk else 0)

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
        return (tuple(g for g, _ in self.groups) + ('Ia',)
                + (CROSSTALK if self.crosstalk else ()))

    def table(self, params):
        """Return the (njoints, 6) friction table and (njoints,) Ia of per-joint parameters."""
        params = np.asarray(params, dtype=float).reshape(-1, self.size)
        table = np.zeros((params.shape[0], len(fr.PARAMETERS)))
        for k, (_, cols) in enumerate(self.groups):
            for c in cols:
                table[:, c] = params[:, k]
        return table, params[:, len(self.groups)]

    def crosstalk_of(self, params):
        """Return the (njoints, 2) crosstalk coefficients of per-joint parameters (0 without)."""
        params = np.asarray(params, dtype=float).reshape(-1, self.size)
        if not self.crosstalk:
            return np.zeros((params.shape[0], len(CROSSTALK)))
        return params[:, len(self.groups) + 1:].copy()

    def parameters_of(self, table, armature, crosstalk=None):
        """Return the per-joint parameters (njoints, P) of a friction table (group means)."""
        out = [np.mean(table[:, list(cols)], axis=1) for _, cols in self.groups]
        out.append(armature)
        if self.crosstalk:
            c = np.zeros((len(armature), 2)) if crosstalk is None else np.asarray(crosstalk)
            out += [c[:, 0], c[:, 1]]
        return np.column_stack(out)

    def columns(self, qd, qdd, joint=None, moments=None):
        """Return the (..., P) regressor columns of velocities/accelerations of joint ``joint``.

        ``joint=None``: the last axis of qd holds every joint (or the scales are common).
        ``moments`` (..., 2): the joint's bending moments (:mod:`rnea_ros.core.sensor`), the
        crosstalk columns of a model with ``crosstalk``.
        """
        v_s, v_st = self.scales(joint)
        B = fr.basis(qd, v_s, self.law, v_st)
        out = ([B[..., list(cols)].sum(axis=-1) for _, cols in self.groups]
               + [np.asarray(qdd, dtype=float)])
        if self.crosstalk:
            out += [moments[..., 0], moments[..., 1]]
        return np.stack(out, axis=-1)

    def feature_keys(self, joint=None):
        """Return a hashable key per parameter of a joint: equal keys are equal columns.

        Per-joint scales: the keys of joint ``joint``; ``None``: the union over joints.
        """
        if self.per_joint and joint is None:
            return feature_keys([FrictionModel(self.name, self.law, *self.scales(j), self.groups,
                                               self.crosstalk)
                                 for j in range(len(self.scale))])
        v_s, v_st = (float(v) for v in self.scales(joint))
        keys = []
        for _, cols in self.groups:
            shape = any(c in (fr.FS_POS, fr.FS_NEG, fr.FX) for c in cols)
            keys.append((self.law if shape else '', v_s if shape else 0.0,
                         v_st if fr.FX in cols else 0.0, cols))
        return keys + [('Ia',)] + (list(CROSSTALK_KEYS) if self.crosstalk else [])


FAMILIES = ('coulomb', 'sign', 'asymmetric', 'tanh')     # what --friction names, simplest first


def friction_models(model, which='auto'):
    """Return the candidate :class:`FrictionModel` list, simplest first.

    ``which``: 'auto' (all), 'coulomb' (symmetric Fv, Fs, linear sign), 'sign' (as coulomb
    with a band of SIGN_BAND: the Coulomb term follows the sign of the reported velocity down
    to rest, fitted on every row; as many parameters as coulomb), 'asymmetric' (Fv+-, Fs+-,
    linear sign) or 'tanh'
    (Fv+-, Fs+- and a Stribeck term Fx on the tanh sign, every v_s of SMOOTH_SCALES with
    v_st = v_s times each of STRIBECK_RATIOS; named 'tanh v_s/v_st').
    """
    band = model.coulomb_band
    out = {'coulomb': [FrictionModel('coulomb', 'linear', band, fr.STRIBECK_VELOCITY,
                                     SYMMETRIC)],
           'sign': [FrictionModel('sign', 'linear', SIGN_BAND, fr.STRIBECK_VELOCITY,
                                  SYMMETRIC)],
           'asymmetric': [FrictionModel('asymmetric', 'linear', band, fr.STRIBECK_VELOCITY,
                                        ASYMMETRIC)],
           'tanh': [FrictionModel(f'tanh {v:g}/{k * v:g}', 'tanh', v, k * v, STRIBECK)
                    for v in SMOOTH_SCALES for k in STRIBECK_RATIOS]}
    if which == 'auto':
        return [m for family in FAMILIES for m in out[family]]
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


def usable_equations(qd, band=STICK_BAND):
    """Return the mask of joint equations a linear-law fit uses: ``|qd| >= band``.

    Near zero velocity real joints stick and slip (pre-sliding, Stribeck hump) and follow no
    Coulomb law, which would bias Fs up and Fv down: identify and analyze leave those
    equations out (a smooth law may use them, :meth:`Accumulator.system`).
    """
    return np.abs(qd) >= band


def feature_keys(models):
    """Return the union of the feature keys of friction models (first occurrence order)."""
    keys = []
    for fm in models:
        for key in fm.feature_keys():
            if key not in keys:
                keys.append(key)
    return keys


def features(keys, qd, qdd, moments=None):
    """Return the (..., F) feature columns ``keys`` of joint velocities and accelerations (...).

    ``moments`` (..., 2): the bending moments of the joints (the ``CROSSTALK_KEYS`` columns).
    """
    shapes = {(k[0], k[1], k[2]) for k in keys if len(k) == 4 and k[0]}
    basis = {s: fr.basis(qd, s[1], s[0], s[2] or fr.STRIBECK_VELOCITY) for s in shapes}
    plain = fr.basis(qd, 1.0, 'linear', fr.STRIBECK_VELOCITY)     # Fv and off columns
    out = np.empty(np.shape(qd) + (len(keys),))
    for f, key in enumerate(keys):
        if key == ('Ia',):
            out[..., f] = qdd
            continue
        if key in CROSSTALK_KEYS:
            out[..., f] = moments[..., key[1]]
            continue
        law, scale, vst, cols = key
        B = basis[(law, scale, vst)] if law else plain
        out[..., f] = B[..., cols[0]] if len(cols) == 1 else B[..., list(cols)].sum(axis=-1)
    return out


def describes_rest(fm):
    """Return whether a friction model describes slow rows too (fitted on every row).

    A smooth law, and the sign law (a band so narrow that Coulomb friction follows the sign of
    the reported velocity down to rest) do; the linear law with a wide band leaves them out.
    """
    return bool(np.all(rest_joints(fm, 1)))


def rest_joints(fm, njoints):
    """Return per joint whether its law describes slow rows too (:func:`describes_rest`).

    With per-joint scales the linear law may be the sign law on some joints only.
    """
    if fm.law == 'tanh':
        return np.ones(njoints, dtype=bool)
    if fm.law != 'linear':
        return np.zeros(njoints, dtype=bool)
    v_s = np.asarray(fm.scale, dtype=float)
    return np.broadcast_to(v_s <= SIGN_BAND, (njoints,) if v_s.ndim == 0 else v_s.shape).copy()


def per_joint_scales(model, candidates, rows, best, moving):
    """Return the chosen law with each moving joint's own v_s and v_st, or None.

    Per moving joint, among the candidates of the chosen one's law and terms (for the smooth
    law the grid of SMOOTH_SCALES x STRIBECK_RATIOS; for the linear law the model's Coulomb band
    and the sign law's), the scales whose fit predicts that joint's held-out equations best
    (``holdout_rms``; a joint's friction columns enter its own equations only); the other
    joints keep the chosen candidate's.  So a gripper finger that spends its time at rest may
    follow the sign law while the arm's joints keep a band.  None when the chosen model has
    per-joint scales already or every joint picks the chosen scales.
    """
    chosen = candidates[best]
    if chosen.per_joint:
        return None
    peers = [k for k, fm in enumerate(candidates)
             if fm.law == chosen.law and fm.groups == chosen.groups and not fm.per_joint
             and fm.crosstalk == chosen.crosstalk]
    v_s = np.full(model.njoints, float(chosen.scale))
    v_st = np.full(model.njoints, float(chosen.stribeck_velocity))
    for j in moving:
        name = model.joint_names[j]
        k = min(peers, key=lambda k: rows[k]['holdout_rms'][name])
        v_s[j], v_st[j] = candidates[k].scale, candidates[k].stribeck_velocity
    if np.all(v_s == chosen.scale) and np.all(v_st == chosen.stribeck_velocity):
        return None
    name = 'tanh per joint' if chosen.law == 'tanh' else 'coulomb or sign per joint'
    return FrictionModel(name, chosen.law, tuple(map(float, v_s)),
                         tuple(map(float, v_st)), chosen.groups, chosen.crosstalk)


def with_crosstalk(fm):
    """Return the same friction model with the sensor crosstalk terms (named '... + crosstalk')."""
    return replace(fm, name=f'{fm.name} + crosstalk', crosstalk=True)
