"""Joint-state signals as loggers write them: cleaned, resampled, filtered, differentiated.

One estimation path for ``rnea-ros identify`` (fit and validation report) and
``rnea-ros analyze``.  The recording (stamps t, positions q, velocities qd when recorded,
efforts) goes through, chunk by chunk (memory does not grow with the recording):

1. **Clean.**  A row whose stamp does not increase (repeated or out-of-order stamp) is dropped,
   and so is a row that repeats the previous row's state exactly (q, qd and effort: a logger
   re-sending its last sample under a new stamp; that state belongs to the earlier stamp) while
   its velocities say the robot moves (at rest, velocities exactly 0, a repeat is the truth).
2. **Uniform grid.**  dt is the median interval of the clean stamps; q, qd and effort are
   linearly interpolated at t0 + k dt.  An interval longer than ``GAP`` dt is a gap: nothing
   is interpolated across it and the recording is split there into segments.
3. **Noise band.**  Per joint, the power spectral density of the velocity on the grid (Welch,
   Hann windows of up to 16 s) is averaged in bands of 1/20 decade.  The noise floor is the
   larger of the white noise of the raw samples (each sample against the line through its
   neighbours, :func:`white_noise_variance`) and the lower part of the spectrum's plateau
   between fs/100 and fs/8 (resampling adds noise of its own); the motion band ends at the
   highest frequency whose band power is above ``KNEE`` times the floor (where the motion
   stops standing out of the noise).  The joint's cutoff is twice that knee (``MARGIN``: the
   zero-phase Butterworth's gain 1 / (1 + (f / fc)^8) is 0.996 at fc / 2, so the motion band
   passes undistorted), kept within [2 / (window length), 0.4 fs].
   Without recorded velocities the same is done on the positions' central difference (its
   noise floor shaped by the difference).
4. **Zero-phase low-pass.**  A Butterworth filter of order 4 run forward and backward
   (``scipy.signal.sosfiltfilt``: no delay, gain |H|^2) at each joint's cutoff gives the
   velocity; its central difference is the acceleration (or, without velocities, the filter
   is applied to q and differentiated twice).  The filter runs over chunks with margins of
   6 / fc on each side (the transient of the filter is below 1e-6 after that), keeping the
   middle: chunked and whole-record results agree.
5. **Decimation.**  The grid is thinned to every m-th sample, m the largest such that the
   kept rate stays at least 200 Hz and 5 times the highest cutoff: the velocities carry nothing
   above the cutoff, and positions and efforts are low-passed at 0.4 times the kept rate
   before thinning (anti-aliasing; the efforts are not filtered at the velocity cutoff, so that
   friction's fast changes at velocity reversals stay in them).  It is a signal-processing
   step, not a memory bound: identify streams every kept sample into its sums
   (:class:`rnea_ros.analysis.identification.Accumulator`).  ``max_samples`` (default None)
   can cap the samples of a recording of ``expected_rows`` for a preview.

``window`` (samples) replaces steps 3-4 by the Savitzky-Golay derivative of earlier versions
(order 2, on the grid); ``cutoff`` (Hz) replaces step 3.  Filtering and decimation follow
Khalil and Dombre, *Modeling, identification and control of robots*, ch. 12 (data
filtering: zero-phase low-pass, central differences, decimation) and Gautier 1997.
"""

from dataclasses import dataclass, field
import math

import numpy as np

GAP = 25.0          # an interval longer than GAP * dt splits the recording
KNEE = 3.0          # band power above KNEE * noise floor is motion
MARGIN = 2.0        # cutoff = MARGIN * knee: the filter's gain is 0.996 at the knee
ORDER = 4           # Butterworth order (run twice: zero phase)
MIN_RATE = 200.0    # decimation keeps at least this rate (Hz) ...
RATE_PER_CUTOFF = 5.0   # ... and this many times the highest cutoff


def clean_rows(t, X, previous=None, moving=None):
    """Return (keep mask, repeated stamps, repeated states) of rows (t (N,), X (N, k)).

    A row is dropped when its stamp is not after the last kept stamp, or when X equals the
    previous row's X exactly while ``moving`` (N,) says that a recorded velocity is not zero
    (a robot at rest, velocities exactly 0, repeats its state legitimately; None: any repeat
    is dropped).  ``previous``: (t, x) of the row before the chunk, or None.
    """
    t = np.asarray(t, dtype=float)
    n = t.size
    keep = np.ones(n, dtype=bool)
    if n == 0:
        return keep, 0, 0
    same = np.zeros(n, dtype=bool)
    same[1:] = np.all(X[1:] == X[:-1], axis=1)
    if previous is not None:
        same[0] = bool(np.all(X[0] == previous[1]))
    if moving is not None:
        same &= moving
    keep &= ~same
    last = -math.inf if previous is None else previous[0]
    running = np.maximum.accumulate(np.where(keep, t, -math.inf))
    before = np.concatenate([[last], running[:-1]])
    before = np.maximum(before, last)
    stale = keep & (t <= before)
    keep &= ~stale
    return keep, int(stale.sum()), int(same.sum())


def median_interval(t):
    """Return the median interval of increasing stamps (ValueError when there is none)."""
    d = np.diff(np.asarray(t, dtype=float))
    d = d[d > 0]
    if d.size == 0:
        raise ValueError('the stamps do not increase: no time grid')
    return float(np.median(d))


def butter_sos(cutoff, dt, order=ORDER):
    """Return the second-order sections of a Butterworth low-pass (cutoff Hz, grid step dt s)."""
    from scipy.signal import butter
    nyquist = 0.5 / dt
    return butter(order, min(float(cutoff), 0.99 * nyquist), fs=1.0 / dt, output='sos')


def lowpass(x, dt, cutoff, order=ORDER):
    """Return x (N,) or (N, k) filtered forward and backward (zero phase) at cutoff Hz.

    ``cutoff`` is a number or one per column.  Columns whose cutoff is None or at least the
    Nyquist frequency are returned unchanged.
    """
    from scipy.signal import sosfiltfilt
    x = np.asarray(x, dtype=float)
    out = x.copy()
    flat = out.reshape(x.shape[0], -1)
    cut = np.broadcast_to(np.asarray(cutoff, dtype=object), (flat.shape[1],))
    for value in {c for c in cut if c is not None and c < 0.5 / dt}:
        cols = [k for k in range(flat.shape[1]) if cut[k] == value]
        sos = butter_sos(value, dt, order)
        if flat.shape[0] > 3 * (2 * len(sos) + 1):
            flat[:, cols] = sosfiltfilt(sos, flat[:, cols], axis=0)
    return out


def derivative(x, dt):
    """Return the central difference of x (N,) or (N, k) on a grid of step dt."""
    x = np.asarray(x, dtype=float)
    if x.shape[0] < 2:
        return np.zeros_like(x)
    return np.gradient(x, dt, axis=0)


def savitzky_golay_derivative(x, dt, window, order=2):
    """Return dx/dt by Savitzky-Golay polynomials of ``window`` samples on a grid."""
    from scipy.signal import savgol_filter
    x = np.asarray(x, dtype=float)
    w = min(int(window), x.shape[0])
    w -= 1 - w % 2                      # odd
    order = min(int(order), w - 1)
    if w < 3 or order < 1:
        return derivative(x, dt)
    return savgol_filter(x, w, order, deriv=1, delta=dt, axis=0)


def band_power(x, dt, seconds=16.0):
    """Return (f, p, freq, psd): Welch PSD of x (N, k), and it averaged in 1/20 decade bands.

    ``freq, psd`` are Welch's bins (the zero frequency left out), ``f, p`` the bands' centres
    (geometric mean of their bins) and mean power.
    """
    from scipy.signal import welch
    n = x.shape[0]
    nper = int(min(n, 2 ** math.ceil(math.log2(max(seconds / dt, 16)))))
    freq, psd = welch(x, fs=1.0 / dt, nperseg=nper, axis=0, detrend='linear')
    freq, psd = freq[1:], psd[1:]
    which = np.floor(20.0 * np.log10(freq)).astype(int)
    centres, power = [], []
    for b in np.unique(which):
        sel = which == b
        centres.append(math.exp(np.mean(np.log(freq[sel]))))
        power.append(psd[sel].mean(axis=0))
    return np.array(centres), np.array(power), freq, psd


def white_noise_variance(t, x):
    """Return per column the variance of white noise on samples x (N, k) at stamps t (N,).

    Each sample is compared with the straight line through its two neighbours:
    r = x_1 - (w_0 x_0 + w_2 x_2), w_0 = (t_2 - t_1) / (t_2 - t_0), w_2 = 1 - w_0.  A smooth
    signal leaves r ~ x'' dt^2 (negligible at logger rates), white noise of variance s^2 leaves
    E r^2 = s^2 (1 + w_0^2 + w_2^2).  The median of r^2 / (1 + w_0^2 + w_2^2) / 0.455 (the median
    of a chi-square of one degree) is robust to outliers.
    """
    t = np.asarray(t, dtype=float)
    x = np.asarray(x, dtype=float).reshape(t.size, -1)
    if t.size < 3:
        return np.zeros(x.shape[1])
    span = t[2:] - t[:-2]
    w0 = np.where(span > 0, (t[2:] - t[1:-1]) / np.where(span > 0, span, 1.0), 0.5)
    w2 = 1.0 - w0
    r = x[1:-1] - (w0[:, None] * x[:-2] + w2[:, None] * x[2:])
    return np.median(r ** 2 / (1.0 + w0 ** 2 + w2 ** 2)[:, None], axis=0) / 0.4549


def estimate_cutoffs(x, dt, variance, knee=KNEE, differenced=False, margin=MARGIN):
    """Return the cutoff (Hz) per column of signals x (N, k) on a grid of step dt.

    ``variance``: the white measurement noise of each column (:func:`white_noise_variance` of
    the raw samples), whose one-sided density is the floor 2 variance dt.  ``differenced``: x
    is the central difference of the measured signal (positions without velocities: the
    difference whitens the spectrum, which a window's leakage would otherwise fill); the
    floor is then 2 variance dt (sin(2 pi f dt) / dt)^2.  The cutoff is the highest frequency
    whose band power is above ``knee`` times the floor, times ``margin`` (module doc, step 3).
    Columns without motion above the noise get the lowest cutoff, noise-free ones 0.4 / dt.
    """
    x = np.asarray(x, dtype=float).reshape(x.shape[0], -1)
    fs = 1.0 / dt
    if x.shape[0] < 64:
        return np.full(x.shape[1], 0.4 * fs)
    centres, power, freq, psd = band_power(x, dt)
    shape = ((np.sin(2.0 * math.pi * centres * dt) / dt) ** 2 if differenced
             else np.ones_like(centres))
    floor = 2.0 * np.asarray(variance, dtype=float) * dt
    plateau = (centres >= fs / 100.0) & (centres <= fs / 8.0)
    if plateau.sum() >= 3:          # resampling adds noise the raw samples do not show
        floor = np.maximum(floor, np.percentile(power[plateau] / shape[plateau, None], 30,
                                                axis=0))
    shape = shape[:, None]
    lowest = 2.0 * freq[0]
    out = np.empty(x.shape[1])
    for k in range(x.shape[1]):
        above = np.flatnonzero(power[:, k] > knee * floor[k] * shape[:, 0])
        f = centres[above[-1]] if above.size else lowest
        out[k] = min(max(margin * f, lowest), 0.4 * fs)
    return out


@dataclass
class Report:
    """What the signal processing chose and found (printed by identify and analyze)."""

    rows: int = 0                   # rows read
    repeated_stamps: int = 0        # rows dropped: stamp not after the previous one
    repeated_states: int = 0        # rows dropped: state equal to the previous row's
    irregular: int = 0              # clean intervals off dt by more than 10 %
    intervals: int = 0
    gaps: int = 0                   # intervals longer than GAP dt (recording split there)
    dt: float = 0.0                 # grid step, s
    grid: int = 0                   # grid samples
    kept: int = 0                   # samples kept after decimation
    decimation: int = 1
    cutoff: np.ndarray = None       # Hz per joint (None with a window)
    floor: np.ndarray = None        # white noise variance per joint (velocity, else position)
    method: str = ''                # 'estimated', 'given', 'training' or 'savitzky-golay'
    window: int = 0
    joints: list = field(default_factory=list)
    unwrapped: object = 0           # per joint: 2 pi jumps of a wrapped angle undone
    effort_cutoff: float = None     # Hz: efforts low-passed too (parallel filtering), or None
    choice: dict = None             # the cutoff search (rnea_ros.analysis.cutoff), if any

    def lines(self):
        """Return the report as text lines."""
        out = [f'signals: {self.rows} rows read; dropped {self.repeated_states} repeating the '
               f'previous state (logger duplicates) and {self.repeated_stamps} with a stamp not '
               'after the previous one',
               f'  time grid: dt = {1e3 * self.dt:.4g} ms (median interval); '
               f'{100.0 * self.irregular / max(self.intervals, 1):.1f} % of the intervals are '
               f'off it by > 10 % and were resampled (linear interpolation); {self.gaps} '
               f'gap(s) > {GAP:g} dt split the recording']
        if np.any(self.unwrapped):
            out.append('  wrapped angles: undone ' + ', '.join(
                f'{j} {int(k)}x' for j, k in zip(self.joints, np.broadcast_to(
                    self.unwrapped, (len(self.joints),))) if k) + ' (jumps > pi between samples)')
        if self.method == 'savitzky-golay':
            out.append(f'  accelerations: Savitzky-Golay derivative of the velocities, order 2 '
                       f'over {self.window} samples (--window)')
        else:
            why = {'given': 'given (--cutoff)', 'chosen': 'chosen by held-out torque prediction',
                   'validation': 'the validation filter (module cutoff)',
                   'training': "the training recording's estimate"}.get(
                self.method, f'estimated: {MARGIN:g} x where the velocity spectrum falls to '
                             f'{KNEE:g} x its noise floor')
            cuts = ', '.join(f'{j} {c:.3g}' for j, c in zip(self.joints, self.cutoff))
            out.append(f'  accelerations: zero-phase Butterworth (order {ORDER}, forward and '
                       f'backward) on the velocities, then central differences; cutoff (Hz) '
                       f'{why}: {cuts}')
        if self.effort_cutoff:
            out.append(f'  efforts low-passed at {self.effort_cutoff:.3g} Hz as well (the same '
                       'zero-phase filter on both sides of the comparison)')
        out.append(f'  kept every {self.decimation}. grid sample: {self.kept} of {self.grid} '
                   f'(rate {1.0 / (self.dt * self.decimation):.4g} Hz)')
        return out

    def to_dict(self):
        """Return the report as a JSON-ready dict."""
        return {'rows': self.rows, 'repeated_stamps': self.repeated_stamps,
                'repeated_states': self.repeated_states,
                'resampled_fraction': self.irregular / max(self.intervals, 1),
                'gaps': self.gaps, 'dt': self.dt, 'grid_samples': self.grid,
                'kept_samples': self.kept, 'decimation': self.decimation,
                'method': self.method, 'window': self.window or None,
                'cutoff_hz': (None if self.cutoff is None else
                              dict(zip(self.joints, map(float, self.cutoff)))),
                'unwrapped': dict(zip(self.joints, map(int, np.broadcast_to(
                    self.unwrapped, (len(self.joints),))))),
                'effort_cutoff_hz': self.effort_cutoff, 'cutoff_choice': self.choice}


class Conditioner:
    """Streaming steps 1-5 of the module doc over chunks of one recording.

    ``feed(t, Q, QD, E)`` takes rows (QD None when not recorded) and returns a list of
    processed blocks ``(t, Q, QD, QDD, E)`` (uniform, decimated); ``finish()`` returns the
    last.  The cutoffs are estimated from the first ``estimate_seconds`` of the recording
    unless ``cutoff`` or ``window`` is given.  ``cutoff`` / ``dt`` / ``decimation`` may be
    taken from another Conditioner (the same estimate for training and validation).
    """

    def __init__(self, joints, cutoff=None, window=None, dt=None, decimation=None,
                 expected_rows=None, max_samples=None, estimate_seconds=30.0,
                 block=32768, effort_cutoff=None, reported=False, rate_cutoff=None):
        """Set the options (see the class doc)."""
        self.report = Report(joints=list(joints))
        self.n = len(joints)
        self.effort_cutoff = effort_cutoff
        self.reported = reported
        self.rate_cutoff = rate_cutoff  # Hz: decimate as for this cutoff too (streams alike)
        self.wraps = np.zeros(self.n)       # 2 pi turns added to each joint's angle so far
        self.last_q = None
        self.cutoff = None if cutoff is None else np.broadcast_to(
            np.asarray(cutoff, dtype=float), (self.n,)).copy()
        self.window = int(window) if window else None
        self.dt = dt
        self.decimation = decimation
        self.expected = expected_rows
        self.max_samples = max_samples
        self.estimate_seconds = estimate_seconds
        self.block = block
        self.pending = []               # raw rows kept before the grid is fixed
        self.pending_rows = 0
        self.previous = None            # last clean row (t, x) put on the grid
        self.last_raw = None            # last clean row (t, x) seen
        self.has_velocity = None
        self.grid_t0 = None
        self.buffer = None              # (k0, X) grid samples not yet emitted, k0 grid index
        self.emitted = None             # next grid index to emit
        self.margin = 0
        self.ready = False

    # -- steps 1-2 ----------------------------------------------------------------------------

    def feed(self, t, Q, QD, E):
        """Take raw rows; return the processed blocks that are final."""
        t = np.asarray(t, dtype=float)
        if self.has_velocity is None:
            self.has_velocity = QD is not None
        parts = [Q] + ([QD] if self.has_velocity else []) + [E]
        X = np.hstack([np.asarray(p, dtype=float).reshape(t.size, -1) for p in parts])
        order = np.argsort(t, kind='stable')
        if np.any(order != np.arange(t.size)):
            t, X = t[order], X[order]
        moving = None
        if self.has_velocity:
            moving = np.any(X[:, self.n:2 * self.n] != 0.0, axis=1)
        keep, stamps, states = clean_rows(t, X, self.last_raw, moving)
        if t.size:          # (last kept stamp, last row's state) for the next chunk
            stamp = t[keep][-1] if keep.any() else self.last_raw[0]
            self.last_raw = (stamp, X[-1].copy())
        self.report.rows += t.size
        self.report.repeated_stamps += stamps
        self.report.repeated_states += states
        t, X = t[keep], X[keep]
        if t.size == 0:
            return []
        X[:, :self.n] = self._unwrap(X[:, :self.n])
        if not self.ready:
            self.pending.append((t, X))
            self.pending_rows += t.size
            span = self.pending[-1][0][-1] - self.pending[0][0][0]
            if span < self.estimate_seconds:
                return []
            return self._start()
        return self._grid(t, X)

    def _unwrap(self, Q):
        """Return clean positions with the 2 pi jumps of wrapped angles removed (step 1).

        A logger that wraps an endless joint to [-pi, pi] makes it jump by about 2 pi between
        two samples; no joint moves by more than pi in one logging interval, so every step
        larger than pi is such a jump and is undone (the count per joint is reported).
        Harmless for the dynamics (sines and cosines), essential for differences and filters.
        """
        prev = self.wraps * 0.0 if self.last_q is None else self.last_q
        steps = np.diff(np.vstack([prev[None], Q]), axis=0)
        if self.last_q is None:
            steps[0] = 0.0
        turns = np.where(np.abs(steps) > math.pi, np.round(steps / (2.0 * math.pi)), 0.0)
        if np.any(turns):
            self.report.unwrapped = (self.report.unwrapped
                                     + np.count_nonzero(turns, axis=0)).astype(int)
        Q = Q - 2.0 * math.pi * (self.wraps + np.cumsum(turns, axis=0))
        self.wraps = self.wraps + turns.sum(axis=0)
        self.last_q = Q[-1] + 2.0 * math.pi * self.wraps
        return Q

    def finish(self):
        """Return the last processed blocks (call once, after the last feed)."""
        out = []
        if not self.ready:
            if not self.pending:
                return []
            out += self._start()
        out += self._flush(final=True)
        return out

    def _start(self):
        t = np.concatenate([p[0] for p in self.pending])
        X = np.concatenate([p[1] for p in self.pending])
        self.pending = []
        if self.dt is None:
            self.dt = median_interval(t) if t.size > 1 else 1.0
        self.report.dt = self.dt
        self.grid_t0 = t[0]
        if self.window:
            self.report.method, self.report.window = 'savitzky-golay', self.window
            self.margin = self.window + 2
        else:
            if self.cutoff is None:
                self.report.method = 'estimated'
                self.cutoff, self.report.floor = self._estimate(t, X)
            elif not self.report.method:
                self.report.method = 'given'
            self.report.cutoff = self.cutoff
            self.margin = int(math.ceil(6.0 / (float(self.cutoff.min()) * self.dt))) + 4
        if self.decimation is None:
            rate = 1.0 / self.dt
            keep_rate = max(MIN_RATE, RATE_PER_CUTOFF * (0.0 if self.cutoff is None
                                                         else float(self.cutoff.max())),
                            RATE_PER_CUTOFF * (self.rate_cutoff or 0.0))
            m = max(1, int(rate // keep_rate))
            if self.expected and self.max_samples:
                m = max(m, int(math.ceil(self.expected / self.max_samples)))
            self.decimation = m
        self.report.decimation = self.decimation
        self.ready = True
        return self._grid(t, X)

    def _estimate(self, t, X):
        """Return (cutoffs, floors) of the joints from the first rows (module doc, step 3)."""
        runs = self._resample(t, X, 0, None)[1]
        segment = max(runs, key=lambda run: len(run[1])) if runs else None    # the longest
        if segment is None:
            raise ValueError('the recording has no stretch without gaps to estimate its noise '
                             'band; give --cutoff')
        cols = slice(self.n, 2 * self.n) if self.has_velocity else slice(0, self.n)
        variance = white_noise_variance(t, X[:, cols])
        x = segment[1][:, cols]
        if not self.has_velocity:
            x = derivative(x, self.dt)
        return (estimate_cutoffs(x, self.dt, variance, differenced=not self.has_velocity),
                variance)

    def _resample(self, t, X, k_from, previous):
        """Return (first gap-free run (k0, X grid), all runs) of rows t, X from grid index."""
        if previous is not None:
            t = np.concatenate([[previous[0]], t])
            X = np.vstack([previous[1][None], X])
        if t.size < 2:
            return None, []
        k_lo = max(k_from, int(math.ceil((t[0] - self.grid_t0) / self.dt - 1e-6)))
        k_hi = int(math.floor((t[-1] - self.grid_t0) / self.dt + 1e-6))
        runs = []
        if k_hi >= k_lo:
            k = np.arange(k_lo, k_hi + 1)
            g = self.grid_t0 + k * self.dt
            i = np.clip(np.searchsorted(t, g, side='right') - 1, 0, t.size - 2)
            span = t[i + 1] - t[i]
            w = np.clip((g - t[i]) / np.where(span > 0, span, 1.0), 0.0, 1.0)
            Y = X[i] + w[:, None] * (X[i + 1] - X[i])
            idx = np.flatnonzero(span <= GAP * self.dt)     # runs of grid points, no gap
            if idx.size:
                breaks = np.flatnonzero(np.diff(idx) > 1) + 1
                for run in np.split(idx, breaks):
                    runs.append((int(k[run[0]]), Y[run]))
        return (runs[0] if runs else None), runs

    def _grid(self, t, X):
        """Resample clean rows onto the grid and filter what is final."""
        d = np.diff(np.concatenate([[self.previous[0]], t]) if self.previous else t)
        self.report.intervals += d.size
        self.report.irregular += int(np.sum(np.abs(d - self.dt) > 0.1 * self.dt))
        self.report.gaps += int(np.sum(d > GAP * self.dt))
        k_from = 0 if self.emitted is None else self._next_index()
        runs = self._resample(t, X, k_from, self.previous)[1]
        self.previous = (t[-1], X[-1].copy())
        out = []
        for k0, Y in runs:
            if self.buffer is not None and k0 != self.buffer[0] + len(self.buffer[1]):
                out += self._flush(final=True)          # a gap: the segment ends
            for s in range(0, len(Y), self.block):     # filter at most a block at a time
                piece = Y[s:s + self.block]
                if self.buffer is None:
                    self.buffer = (k0 + s, piece)
                    self.emitted = k0 + s
                else:
                    self.buffer = (self.buffer[0], np.vstack([self.buffer[1], piece]))
                if len(self.buffer[1]) >= self.block + 2 * self.margin:
                    out += self._flush(final=False)
        return out

    def _next_index(self):
        if self.buffer is None:
            return self.emitted
        return self.buffer[0] + len(self.buffer[1])

    # -- steps 3-5 ----------------------------------------------------------------------------

    def _flush(self, final):
        """Filter the buffer; return its final samples as blocks (all of them when final)."""
        if self.buffer is None:
            return []
        k0, Y = self.buffer
        n = len(Y)
        stop = n if final else n - self.margin
        start = self.emitted - k0
        out = []
        if stop > start and n >= 2:
            block = self._process(k0, Y)
            k = k0 + np.arange(start, stop)
            sel = start + np.flatnonzero(k % self.decimation == 0)
            if sel.size:
                out.append(tuple(x[sel] for x in block))
                self.report.kept += sel.size
            self.report.grid += stop - start
        self.emitted = k0 + stop
        if final:
            self.buffer = None
        else:
            keep = max(0, stop - self.margin)
            self.buffer = (k0 + keep, Y[keep:])
        return out

    def _process(self, k0, Y):
        """Return (t, Q, QD, QDD, E) of a gap-free run of grid samples."""
        n, dt = self.n, self.dt
        t = self.grid_t0 + (k0 + np.arange(len(Y))) * dt
        Q = Y[:, :n]
        QD = Y[:, n:2 * n] if self.has_velocity else None
        E = Y[:, (2 if self.has_velocity else 1) * n:]
        reported = QD
        anti_alias = 0.4 / (dt * self.decimation) if self.decimation > 1 else None
        if self.window:
            if QD is None:
                QD = savitzky_golay_derivative(Q, dt, self.window)
            QDD = savitzky_golay_derivative(QD, dt, self.window)
        elif QD is None:
            Qf = lowpass(Q, dt, self.cutoff)
            QD = derivative(Qf, dt)
            QDD = derivative(QD, dt)
        else:
            QD = lowpass(QD, dt, self.cutoff)
            QDD = derivative(QD, dt)
        if self.effort_cutoff:
            E = lowpass(E, dt, self.effort_cutoff)
        if anti_alias is not None:
            Q = lowpass(Q, dt, anti_alias)
            if not self.effort_cutoff or self.effort_cutoff > anti_alias:
                E = lowpass(E, dt, anti_alias)
        if not self.reported:
            return t, Q, QD, QDD, E
        if reported is None:
            reported = QD
        elif anti_alias is not None:
            reported = lowpass(reported, dt, anti_alias)
        return t, Q, QD, QDD, E, reported


def condition(t, Q, QD, E, joints=None, cutoff=None, window=None, decimation=1):
    """Return ((t, Q, QD, QDD, E) on the grid, Report) of whole arrays (QD may be None)."""
    n = np.asarray(Q).reshape(len(t), -1).shape[1]
    c = Conditioner(joints if joints is not None else [str(k) for k in range(n)],
                    cutoff=cutoff, window=window, decimation=decimation,
                    estimate_seconds=math.inf)
    E = np.zeros((len(t), 0)) if E is None else E
    blocks = c.feed(t, Q, QD, E) + c.finish()
    if not blocks:
        raise ValueError('no samples left after cleaning the recording')
    return tuple(np.concatenate([b[k] for b in blocks]) for k in range(5)), c.report
