"""The low-pass for velocities and accelerations, chosen by how well it predicts torque.

Differentiated noise in the regressor (errors in variables) biases a least-squares fit: too
high a cutoff lets it in, too low a cutoff distorts the motion.  No spectral rule knows where
the balance lies for a given arm, so ``rnea-ros identify`` asks the data (Khalil and Dombre,
*Modeling, identification and control of robots*, ch. 12: filter, differentiate, decimate;
Gautier 1997: the same filter on both sides of the equations):

1. **Motion band** f_m (:func:`motion_band`): the frequency below which 95 % of the power of
   the recorded velocities lies (all joints together, so the joints that move most count
   most), looked for below min(fs / 4, 25 Hz) so that the noise of a fast logger cannot
   lift it.
2. **Candidates** (:func:`ladder`): f_m times LADDER (a geometric ladder), at least
   MIN_CUTOFF and at most 0.4 fs: the ladder follows the motion and the sampling rate.
3. **Score** (:func:`search`): the first SEARCH_SECONDS of the training recordings are
   conditioned at each candidate (:class:`rnea_ros.analysis.signals.Conditioner`), summed into
   an :class:`rnea_ros.analysis.identification.Accumulator` with one friction model, fitted on
   its training bins and scored by the RMS error with which it predicts the efforts of the
   bins it did not see (every fifth), per moving joint.  Each cutoff is scored twice from the
   same sums: fitted on the measured equations, and with parallel filtering (every column and
   the effort low-passed at the cutoff, then decimated: :class:`Accumulator` ``parallel``);
   both predict the measured efforts of the held-out bins.  Every candidate predicts the same
   measured efforts, so the scores compare: noise in the accelerations makes the predictions
   noisy and the fit biased, distortion makes them late and small.  The score of a candidate
   is the mean over joints of (its RMS / the best candidate's RMS)^2; the lowest wins (ties:
   the lower cutoff).
4. **Validation filter**: the comparisons of identified and nominal models (identify's
   report, its refusal) use signals conditioned apart from the fit's: velocities low-passed
   at f_v, the lowest candidate whose score is within VALIDATION_SLACK of the best (the
   smoothest filter that does not distort what the model has to predict), accelerations
   their central difference, efforts as recorded (anti-aliased only).  Its accelerations
   carry no more noise than the fit's, and the validation stream is filtered on its own, so
   the comparison does not reward a fit to the fit's own differentiated noise.  With
   ``--cutoff`` the same rule uses the motion band (:func:`validation_cutoff`).
"""

import math

import numpy as np

from rnea_ros.analysis import signals

LADDER = (1.5, 2.5, 4.0, 6.5, 10.0, 16.0)   # candidate cutoffs, multiples of the motion band
MIN_CUTOFF = 0.5                            # Hz
SEARCH_SECONDS = 120.0                      # of training recording used to choose
VALIDATION_MULTIPLE = 4.0                   # the validation filter, times the motion band
VALIDATION_SLACK = 0.02                     # ... or the lowest candidate this close to the best
POWER_SHARE = 0.95                          # the motion band holds this share of the power


def motion_band(t, Q, QD=None):
    """Return f_m (Hz): below it lies POWER_SHARE of the velocities' power (step 1).

    ``t`` (N,) stamps, ``Q`` (N, k) unwrapped positions, ``QD`` (N, k) the recorded velocities
    (None: the central difference of the positions).  Resampled on the median interval.
    """
    from scipy.signal import welch
    t = np.asarray(t, dtype=float)
    if t.size < 32:
        return MIN_CUTOFF
    dt = signals.median_interval(t)
    grid = np.arange(t[0], t[-1], dt)
    x = QD if QD is not None else Q
    x = np.column_stack([np.interp(grid, t, x[:, k]) for k in range(x.shape[1])])
    if QD is None:
        x = signals.derivative(x, dt)
    n = x.shape[0]
    nper = int(min(n, 2 ** math.ceil(math.log2(max(16.0 / dt, 16)))))
    freq, psd = welch(x, fs=1.0 / dt, nperseg=nper, axis=0, detrend='linear')
    top = min(0.25 / dt, 25.0)
    sel = (freq > 0) & (freq <= top)
    if sel.sum() < 2:
        return MIN_CUTOFF
    power = psd[sel].sum(axis=1)
    cumulative = np.cumsum(power) / max(power.sum(), 1e-300)
    k = min(int(np.searchsorted(cumulative, POWER_SHARE)), int(sel.sum()) - 1)
    return float(max(freq[sel][k], 2.0 * freq[1]))


def ladder(f_m, dt):
    """Return the candidate cutoffs (Hz) for a motion band and a grid step (step 2)."""
    out = []
    for k in LADDER:
        c = min(max(k * f_m, MIN_CUTOFF), 0.4 / dt)
        if not out or c > out[-1] * 1.05:
            out.append(float(c))
    return out


def validation_cutoff(f_m, dt, chosen=None):
    """Return the validation filter's cutoff (Hz, step 4)."""
    c = min(max(VALIDATION_MULTIPLE * f_m, MIN_CUTOFF), 0.4 / dt)
    return float(c if chosen is None else min(c, chosen))


def search(model, pieces, to_model, band, prior=1.0):
    """Return (chosen cutoff, report dict): the candidate that predicts torque best (step 3).

    ``pieces``: raw (t, Q, QD, E) of the recorded joints (QD may be None) from the start of
    the training recordings, unwrapped positions; ``to_model(block)``: model-order
    (Q, QD, QDD, E, QDR) of a conditioned block (the caller knows the joints' mapping).
    """
    from rnea_ros.analysis.identification import Accumulator, friction_models, holdout_rms
    t0 = np.concatenate([p[0] for p in pieces])
    if t0.size < 50:
        raise ValueError(f'{t0.size} samples: identification needs at least 50')
    f_m = max(motion_band(p[0], p[1], p[2]) for p in pieces)
    dt = min(signals.median_interval(p[0]) for p in pieces if p[0].size > 1)
    cuts = ladder(f_m, dt)
    fm = friction_models(model, 'asymmetric')
    rows, results, modes = [], [], []
    for cut in cuts:
        sums = None                          # one candidate's sums at a time (memory)
        sums = Accumulator(model, fm, band, parallel=cut)
        for t, Q, QD, E in pieces:
            names = [str(k) for k in range(Q.shape[1])]
            c = signals.Conditioner(names, cutoff=cut, reported=True,
                                    estimate_seconds=math.inf)
            blocks = c.feed(t, Q, QD, E) + c.finish()
            sums.begin_recording(c.dt * c.decimation if c.dt else None)
            for block in blocks:
                sums.add(*to_model(block))
        for parallel in (False, True):       # the same sums: measured or filtered equations
            results.append(holdout_rms(sums, prior, raw_fit=not parallel))
            rows.append({'cutoff_hz': cut, 'parallel': parallel})
            modes.append(cut)
    usable = [k for k, (m, r) in enumerate(results) if r.size]
    if not usable:
        raise ValueError('the data does not excite the robot: no joint moves enough to choose '
                         'a filter or to identify anything; record an excitation trajectory '
                         '(rnea-ros excite) that moves every joint through its range')
    joints = results[usable[0]][0]
    common = [k for k in usable if np.array_equal(results[k][0], joints)]
    best = np.min([results[k][1] for k in common], axis=0)
    for k in common:
        rows[k]['score'] = float(np.mean((results[k][1] / np.maximum(best, 1e-12)) ** 2))
        rows[k]['holdout_rms'] = [float(v) for v in results[k][1]]
    chosen = min(common, key=lambda k: (round(rows[k]['score'], 9), modes[k],
                                        rows[k]['parallel']))
    same = [k for k in common if rows[k]['parallel'] == rows[chosen]['parallel']]
    smooth = min(same, key=lambda k: modes[k] if rows[k]['score'] <= rows[chosen]['score']
                 * (1.0 + VALIDATION_SLACK) else math.inf)
    report = {'motion_band_hz': f_m, 'seconds': float(t0.size and sum(
        p[0][-1] - p[0][0] for p in pieces)), 'friction_model': fm[0].name,
        'candidates': rows, 'chosen_hz': modes[chosen], 'parallel': rows[chosen]['parallel'],
        'validation_hz': min(modes[smooth], modes[chosen]),
        'joints': [model.joint_names[j] for j in joints]}
    return modes[chosen], report


def lines(report):
    """Return text lines of a search report (identify prints them)."""
    out = [f"  filter chosen by held-out torque prediction ({report['seconds']:.0f} s of the "
           f"training recordings, friction model {report['friction_model']}): motion band "
           f"{report['motion_band_hz']:.3g} Hz; candidates (cutoff Hz: score, 1 = best on "
           'every joint; held-out RMS per joint):']
    for row in report['candidates']:
        mark = '*' if (row['cutoff_hz'] == report['chosen_hz']
                       and row.get('parallel') == report.get('parallel')) else ' '
        rms = ' '.join(f'{v:.4g}' for v in row.get('holdout_rms', []))
        kind = 'parallel' if row.get('parallel') else 'measured'
        out.append(f"  {mark} {row['cutoff_hz']:8.3g} {kind:>8}: "
                   f"{row.get('score', math.nan):8.4f}   {rms}")
    out.append('  validation (nominal against identified): velocities low-passed at '
               f"{report['validation_hz']:.3g} Hz (the lowest candidate within "
               f'{100 * VALIDATION_SLACK:g} % of the best), accelerations their central '
               'difference, conditioned apart from the fit')
    return out
