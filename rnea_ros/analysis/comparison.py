"""Identified against nominal: never worse than the URDF without saying so, and effort units.

``rnea-ros identify`` compares the identified model with the nominal one (the URDF with its
``<dynamics>`` friction) joint by joint on data the fit did not see, conditioned for
validation (:mod:`rnea_ros.analysis.cutoff`, step 4):

- with ``--validate BAG``: the final model on that recording;
- otherwise, at the prior weight the ladder kept
  (:func:`rnea_ros.analysis.choice._prior_by_holdout`): with 2 to 8 training
  recordings, each one predicted by the chosen model fitted on the others; with one, each
  fifth of its bins in turn predicted by a fit of the rest.  Stretches of one
  recording are pieces of one motion, and the verdict says so.

A joint whose RMS error is above the nominal's by more than ``NOT_WORSE`` is *worse*; then
identify names the joints and by how much, writes nothing and exits with :data:`REFUSED`,
unless ``--force`` (it then writes and says so).

The efforts are what the recording says: ``--effort-scale`` multiplies them on reading (motor
currents times torque constants, or -1 for an opposite sign), and a sign opposite to the
nominal model's is detected (:func:`opposite_sign`) and named with the option that fixes it.
"""

import numpy as np

from rnea_ros.analysis.choice import NOT_WORSE

REFUSED = 3                  # exit status: the identified model is worse than the nominal one
OPPOSITE = -0.5              # correlation with the nominal efforts below this: sign flipped
LOADED = 0.1                 # a joint whose nominal effort RMS is this share of the largest

UNITS = 2.0                  # measured efforts this many times larger or smaller: other units

FOLLOWS = 0.9                # ... on a joint whose efforts correlate this well with the nominal


def parse_effort_scale(items, model):
    """Return {joint: K} of ``--effort-scale`` items ``K`` (every joint) or ``joint=K``."""
    common, out = None, {}
    for item in [i for token in (items or []) for i in token.replace(',', ' ').split()]:
        name, sep, value = item.rpartition('=')
        try:
            k = float(value)
        except ValueError:
            raise ValueError(f'--effort-scale {item!r}: {value!r} is not a number') from None
        if not (np.isfinite(k) and k != 0.0):
            raise ValueError(f'--effort-scale {item!r}: the factor must be finite and not 0')
        if not sep:
            common = k
        elif name not in model.joint_names:
            raise ValueError(f'--effort-scale {item!r}: {name!r} is not a joint of the model; '
                             f'joints: {list(model.joint_names)}')
        else:
            out[name] = k
    if common is None and not out:
        return {}
    return {j: out.get(j, 1.0 if common is None else common) for j in model.joint_names}


def opposite_sign(model, sums, x_nom, moving):
    """Return a warning naming joints whose efforts oppose the nominal model's, or None.

    On loaded joints (nominal effort RMS at least LOADED times the largest), a correlation of
    the measured efforts with the nominal ones below OPPOSITE means the recording's sign
    convention is the opposite of the URDF's (a driver's current, a sensor mounted the other
    way): the warning gives the exact ``--effort-scale`` that fixes it (one factor -1 when
    every loaded joint is flipped: one convention for the whole arm).
    """
    if sums.samples == 0 or not len(moving):
        return None
    corr = sums.correlation(x_nom, moving)
    nominal_rms = sums.effort_rms(moving)
    loaded = [model.joint_names[j] for j, e in zip(moving, nominal_rms)
              if e >= LOADED * nominal_rms.max()]
    names = [model.joint_names[j] for j in moving]
    flipped = [j for j, c in zip(names, corr) if c < OPPOSITE and j in loaded]
    if not flipped:
        return None
    option = ('-1' if set(flipped) == set(loaded) else     # one convention for the arm
              ' '.join(f'{j}=-1' for j in flipped))
    return (f'the efforts of {", ".join(flipped)} correlate negatively with the nominal '
            f'model\'s ({", ".join(f"{c:.2f}" for j, c in zip(names, corr) if j in flipped)}): '
            f'their sign looks opposite to the URDF convention; if so, rerun with '
            f'--effort-scale {option}')


def other_units(model, sums, x_nom, moving, scaled=()):
    """Return a warning naming joints whose efforts look like another unit, or None.

    On loaded joints whose efforts follow the nominal model's closely (correlation at least
    FOLLOWS), a least-squares factor s (measured ~ s x nominal) beyond UNITS either way is not
    a model error: the recording's efforts are in other units (motor currents, a driver's
    per-mille of rated torque).  The warning gives the ``--effort-scale`` that would put them in
    N m (1 / s), to be replaced by the drive's torque constant x gear ratio when known.  Joints
    given an ``--effort-scale`` (``scaled``) are not checked.
    """
    if sums.samples == 0 or not len(moving):
        return None
    corr = sums.correlation(x_nom, moving)
    slope = sums.slope(x_nom, moving)
    measured = sums.effort_rms(moving)
    odd = [(model.joint_names[j], s) for j, c, s, e in zip(moving, corr, slope, measured)
           if c >= FOLLOWS and e >= LOADED * measured.max() and model.joint_names[j] not in scaled
           and not 1.0 / UNITS <= s <= UNITS]
    if not odd:
        return None
    return (f'the efforts of {", ".join(j for j, _ in odd)} follow the nominal model\'s but are '
            f'{", ".join(f"{s:.3g}" for _, s in odd)} times as large: another unit (motor '
            'currents?); if so, rerun with --effort-scale '
            + ' '.join(f'{j}={1.0 / s:.3g}' for j, s in odd)
            + " (or the drive's torque constant x gear ratio)")


def not_worse(summary):
    """Return the comparison of identified and nominal models on held-out data (module doc)."""
    table = summary['residual_rms'].get('validation')
    if table:
        source = 'the --validate recording (final model)'
        rows = {n: (r['nominal'], r['identified']) for n, r in table.items()}
    else:
        held = summary.get('held_out') or {}
        if str(held.get('data', '')).startswith('recordings'):
            source = 'the training recordings, each left out in turn (model fitted on the others)'
        else:
            source = ('held-out stretches of the training recording (model fitted on the rest; '
                      'pieces of one motion: a second recording or --validate checks another)')
        rows = {n: (v, held['identified'][n]) for n, v in held.get('nominal', {}).items()}
    worse = {n: {'nominal': a, 'identified': b, 'ratio': b / a if a > 0 else float('inf')}
             for n, (a, b) in rows.items() if b > a * (1.0 + NOT_WORSE) + 1e-12}
    return {'data': source, 'joints': {n: {'nominal': a, 'identified': b}
                                       for n, (a, b) in rows.items()},
            'worse': worse, 'tolerance': NOT_WORSE}


def verdict_lines(verdict, refused):
    """Return the lines identify prints about the comparison (stderr)."""
    if not verdict['worse']:
        return ['identified model not worse than the nominal URDF on any joint '
                f"({verdict['data']})"] if verdict['joints'] else []
    what = ', '.join(f"{n} {w['identified']:.4g} against {w['nominal']:.4g} N m "
                     f"({w['ratio']:.3g} x)" for n, w in verdict['worse'].items())
    if refused:
        return [f'refused: the identified model predicts {what} worse than the nominal URDF '
                f"on {verdict['data']}; nothing written (exit status {REFUSED}); --force "
                'writes it anyway']
    return [f'WARNING: the identified model predicts {what} worse than the nominal URDF on '
            f"{verdict['data']}; written because of --force"]
