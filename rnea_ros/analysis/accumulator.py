"""Accumulating: the normal equations of a recording, summed block by block (streaming).

Step 0 of :mod:`rnea_ros.analysis.identification`: per joint the sums of its equations over
the standard inertial columns it can depend on and every candidate's friction features, per
bin of consecutive samples and per part (moving or slow rows), so that every sample is used
and memory does not grow with the recording.  Also which joints the data moves.
"""

import math

import numpy as np

from rnea_ros.analysis.base_parameters import random_states
from rnea_ros.analysis.friction_models import (CROSSTALK_KEYS, feature_keys, features,
                                               friction_models, nominal_friction_model,
                                               OFFSET_KEY, STICK_BAND, usable_equations)
from rnea_ros.core.dynamics import reaction_wrenches_batch
from rnea_ros.core.regressor import NPARAM, regressor_batch
from rnea_ros.core.sensor import bending_moments


MIN_RANGE = 0.02             # rad (or m): a joint whose range is smaller is held still

MIN_USABLE = 50              # equations beyond the stick band a moving joint needs

FOLDS = 5                    # every fifth bin held out: bins k with k % FOLDS == a class
HELD = 2                     # ... the class held out by default (validation, the prior)

PARALLEL_RATE = 5.0          # parallel filtering keeps this many samples per period of its cutoff


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
        P = fm.size
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
    the pass, the fitting stage
    (:func:`rnea_ros.analysis.identification.identify_accumulated`) finds the moving joints and
    base parameters and maps the sums onto the union of the candidates' base columns (base
    columns are standard columns: a selection); the in-memory
    :func:`rnea_ros.analysis.identification.identify` is one ``add`` of all samples followed by
    the same fit.  The sums know nothing of the fit: accumulating is the stage below it.
    """

    def __init__(self, model, friction='auto', band=STICK_BAND, bins=20, chunk=1000,
                 parallel=None, crosstalk=False):
        """Prepare empty sums (``friction`` as :func:`rnea_ros.analysis.identification.identify`).

        ``parallel`` (Hz): parallel filtering (Gautier 1997; Khalil and Dombre ch. 12): every
        column of the fit's equations (inertial columns and friction features, computed from
        the conditioned and reported signals) and the effort pass the same low-pass, then are
        decimated; held-out scores and residuals keep the unfiltered equations (the measured
        efforts).  Active in a recording begun with :meth:`begin_recording` and its step.
        ``crosstalk``: also the two bending-moment columns of every joint (``CROSSTALK_KEYS``,
        from the nominal model's reaction wrenches: :mod:`rnea_ros.core.sensor`), which a
        candidate with sensor crosstalk needs (one of the candidates having it implies it).
        """
        self.model, self.band, self.chunk, self.max_bins = model, band, chunk, 2 * bins
        self.candidates = (friction_models(model, friction) if isinstance(friction, str)
                           else list(friction))
        self.nominal = nominal_friction_model(model)
        self.keys = feature_keys(self.candidates + [self.nominal])
        self.crosstalk = bool(crosstalk or any(fm.crosstalk for fm in self.candidates))
        if self.crosstalk:
            self.keys += [k for k in CROSSTALK_KEYS if k not in self.keys]
        self.F = len(self.keys)
        self.off_key = self.keys.index(OFFSET_KEY) if OFFSET_KEY in self.keys else None
        self.cols = structural_columns(model)
        self.sizes = [c.size + self.F for c in self.cols]
        nj = model.njoints
        self.bins, self.moments, self.bin_size, self.samples = [], [], 1, 0
        self.q_min, self.q_max = np.full(nj, np.inf), np.full(nj, -np.inf)
        self.q_sum, self.fast = np.zeros(nj), np.zeros(nj)
        self.parallel = parallel
        self.P = 4 if parallel else 2          # parts per bin: fit (moving, slow), raw (same)
        self.raw = (2, 3) if parallel else (0, 1)
        self.recording, self.in_recording = 0, 0
        self._filter = None

    def begin_recording(self, dt=None):
        """Start the samples of a new recording (its own effort offsets; filter state reset).

        ``dt``: the step of the samples that :meth:`add` will get (for parallel filtering).
        """
        if self.in_recording:
            self.recording += 1
        self.in_recording = 0
        self._filter = None
        if self.parallel and dt:
            from rnea_ros.analysis.signals import butter_sos
            step = max(1, int(1.0 / (dt * PARALLEL_RATE * self.parallel)))
            self._filter = {'sos': butter_sos(min(self.parallel, 0.4 / dt), dt), 'zi': None,
                            'step': step, 'phase': 0}

    def recordings(self):
        """Return the number of recordings summed so far."""
        return self.recording + 1 if self.samples else 0

    def _empty_bin(self):
        P = self.P
        return [(np.zeros((P, m, m)), np.zeros((P, m)), np.zeros(P), np.zeros(P, dtype=int))
                for m in self.sizes]

    def _empty_moments(self):
        P = self.P
        return [(np.zeros((P, m)), np.zeros(P), np.zeros(P)) for m in self.sizes]

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
            moments = []
            for k in range(0, len(self.moments), 2):
                first = self.moments[k]
                for later in self.moments[k + 1:k + 2]:
                    for rec, per_joint in later.items():
                        if rec not in first:
                            first[rec] = per_joint
                            continue
                        for a, b in zip(first[rec], per_joint):
                            for x, y in zip(a, b):
                                x += y
                moments.append(first)
            self.bins, self.moments, self.bin_size = merged, moments, 2 * self.bin_size

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
                self.moments.append({})
            moments = None
            if self.crosstalk:
                moments = bending_moments(model, Q[sl], reaction_wrenches_batch(
                    model, Q[sl], QD[sl], QDD[sl]))
            feats = features(self.keys, QDR[sl, off:], QDD[sl, off:], moments)  # (n, nj, F)
            rows = [np.hstack([W[:, off + j][:, self.cols[j]], feats[:, j]])
                    for j in range(model.njoints)]
            ys = E[sl, off:]
            slow = ~usable_equations(QDR[sl, off:], self.band)
            if not self.parallel:
                self._sum(rows, ys, slow, b, 0)
                continue
            self._sum(rows, ys, slow, b, 2)             # the measured equations
            if self._filter is None:                    # no step known: unfiltered
                self._sum(rows, ys, slow, b, 0)
                continue
            self._sum(*self._filtered(rows, ys, slow, b), 0)
        self.samples += N
        self.in_recording += N

    def _filtered(self, rows, ys, slow, b):
        """Return (rows, efforts, slow, bins) low-passed alike and decimated (parallel filter)."""
        from scipy.signal import sosfilt, sosfilt_zi
        f = self._filter
        X = np.hstack(rows + [ys])
        if f['zi'] is None:                 # start at rest on the first sample: no transient
            f['zi'] = sosfilt_zi(f['sos'])[:, :, None] * X[0][None, None, :]
        X, f['zi'] = sosfilt(f['sos'], X, axis=0, zi=f['zi'])
        n = X.shape[0]
        keep = np.arange((-f['phase']) % f['step'], n, f['step'])
        f['phase'] = (f['phase'] + n) % f['step']
        X = X[keep]
        out, at = [], 0
        for r in rows:
            out.append(X[:, at:at + r.shape[1]])
            at += r.shape[1]
        return out, X[:, at:], slow[keep], b[keep]

    def _sum(self, rows, ys, slow, b, p0):
        """Add equations (per joint rows (n, m_j), efforts (n, nj)) to parts p0 and p0 + 1."""
        if b.size == 0:
            return
        edges = np.concatenate([[0], np.flatnonzero(np.diff(b)) + 1, [b.size]])
        rec = self.recording
        for j, Wj in enumerate(rows):
            yj = ys[:, j]
            for lo, hi in zip(edges[:-1], edges[1:]):
                A, c, yy, n = self.bins[b[lo]][j]
                per_rec = self.moments[b[lo]]
                if rec not in per_rec:
                    per_rec[rec] = self._empty_moments()
                S, T, M = per_rec[rec][j]
                for p in (0, 1):
                    mask = slow[lo:hi, j] == bool(p)
                    if not mask.any():
                        continue
                    Wk, yk = Wj[lo:hi][mask], yj[lo:hi][mask]
                    A[p0 + p] += Wk.T @ Wk
                    c[p0 + p] += yk @ Wk
                    yy[p0 + p] += yk @ yk
                    n[p0 + p] += yk.size
                    S[p0 + p] += Wk.sum(axis=0)
                    T[p0 + p] += yk.sum()
                    M[p0 + p] += yk.size

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
            parts = [b[j] for k, b in enumerate(self.bins) if not held_out or k % FOLDS == HELD]
            raw = list(self.raw)
            out.append(tuple(sum(p[k][raw].sum(axis=0) for p in parts) for k in range(4)))
        return out

    def system(self, moving, columns, extras=False, raw_fit=False, bins=True, held=HELD):
        """Return per part and moving joint (A, c, yy, n) on the union columns of ``columns``.

        Parts (the leading axis): 0 and 1 the training bins' equations with ``|qd_j| >= band``
        and below it (slow: stick-slip near zero velocity, which only a smooth law may use), 2
        and 3 the same for the held-out bins, 4 and 5 the held-out bins' equations as the fit
        sees them (the final fit uses every bin).  Standard columns outside a joint's subtree
        are zero in its equations; its features go to its own block of the union.  With
        parallel filtering parts 0, 1, 4 and 5 are the filtered equations, 2 and 3 the
        measured ones (what a held-out score compares); without, 4 and 5 equal 2 and 3.

        ``extras``: also return a dict with ``moments`` = (S, T, N), per part, moving joint and
        recording the sums of the equations' columns, efforts and counts (what per-recording
        offsets need: :func:`rnea_ros.analysis.estimation.center`), and ``bins``: per held-out
        bin (A, c, yy, n, (S, T, N)) of its equations (parts 2 and 3 together) and
        (A, c, yy, n, S, T, N) of its moving ones (part 2).  ``raw_fit``:
        the training parts are the measured equations too (parallel filtering off).
        ``bins=False``: no per-bin sums (they are large; only the model choice needs them).
        ``held``: the held-out bins are those with index ``k % FOLDS == held`` (every fifth; the
        model choice holds out each of the FOLDS classes in turn).
        """
        nm, size, F = len(moving), columns.size, columns.F
        r = columns.rigid.size
        R = max(self.recordings(), 1)
        A, c = np.zeros((6, nm, size, size)), np.zeros((6, nm, size))
        yy, n = np.zeros((6, nm)), np.zeros((6, nm), dtype=int)
        S, T, M = np.zeros((6, nm, R, size)), np.zeros((6, nm, R)), np.zeros((6, nm, R))
        held_bins = []
        order = [self.keys.index(k) for k in columns.keys]
        raw = self.raw
        fit = raw if raw_fit else (0, 1)
        for k, bin_ in enumerate(self.bins):
            if k % FOLDS == held and extras and bins:
                held_bins.append((np.zeros((nm, size, size)), np.zeros((nm, size)),
                                  np.zeros(nm), np.zeros(nm),
                                  (np.zeros((nm, R, size)), np.zeros((nm, R)),
                                   np.zeros((nm, R))),
                                  (np.zeros((nm, size, size)), np.zeros((nm, size)),
                                   np.zeros(nm), np.zeros(nm), np.zeros((nm, R, size)),
                                   np.zeros((nm, R)), np.zeros((nm, R)))))
        for jj, j in enumerate(moving):
            cols = self.cols[j]
            inside = np.isin(columns.rigid, cols)
            union = np.concatenate([np.flatnonzero(inside), r + jj * F + np.arange(F)])
            local = np.concatenate([np.searchsorted(cols, columns.rigid[inside]),
                                    cols.size + np.asarray(order, dtype=int)])
            ix = np.ix_(union, union)
            lx = np.ix_(local, local)
            for k, bin_ in enumerate(self.bins):
                out_of_fit = k % FOLDS == held
                Ab, cb, yb, nb = bin_[j]
                for p in (0, 1):
                    pairs = ([(2 + p, raw[p]), (4 + p, fit[p])] if out_of_fit
                             else [(p, fit[p])])
                    for out, q in pairs:
                        A[out, jj][ix] += Ab[q][lx]
                        c[out, jj, union] += cb[q][local]
                        yy[out, jj] += yb[q]
                        n[out, jj] += nb[q]
                        for rec, per_joint in self.moments[k].items():
                            Sr, Tr, Mr = per_joint[j]
                            S[out, jj, rec, union] += Sr[q][local]
                            T[out, jj, rec] += Tr[q]
                            M[out, jj, rec] += Mr[q]
                if out_of_fit and extras and bins:
                    hA, hc, hy, hn, (hS, hT, hM), (mA, mc, my, mn, mS, mT, mM) = \
                        held_bins[k // FOLDS]
                    for p in raw:
                        targets = [(hA, hc, hy, hn, hS, hT, hM)]
                        if p == raw[0]:             # the moving equations alone, too
                            targets.append((mA, mc, my, mn, mS, mT, mM))
                        for tA, tc, ty, tn, tS, tT, tM in targets:
                            tA[jj][ix] += Ab[p][lx]
                            tc[jj, union] += cb[p][local]
                            ty[jj] += yb[p]
                            tn[jj] += nb[p]
                            for rec, per_joint in self.moments[k].items():
                                Sr, Tr, Mr = per_joint[j]
                                tS[jj, rec, union] += Sr[p][local]
                                tT[jj, rec] += Tr[p]
                                tM[jj, rec] += Mr[p]
        if not extras:
            return A, c, yy, n
        return (A, c, yy, n), {'moments': (S, T, M), 'bins': held_bins}

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
        if hasattr(params, 'friction_table'):     # an Identification
            phi, fm = params.phi, params.friction_model
            jp = fm.parameters_of(params.friction_table, params.armature,
                                  params.sensor_crosstalk)
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

    def slope(self, x, joints):
        """Return per joint the factor s of measured efforts ~ s x those of parameters x.

        Least squares through the origin, from the sums: ``v^T c / v^T A v`` (x as
        :meth:`correlation`).
        """
        return np.array([float(v @ c / max(v @ A @ v, 1e-300))
                         for v, A, c, yy in self._predicted(x, joints)])

    def correlation(self, x, joints):
        """Return per joint the correlation of measured efforts with those of parameters x.

        x = [phi, per joint Fv Fs Ia off] with the model's own friction law; from the sums:
        ``v^T c / sqrt(tau^T tau v^T A v)`` (not centred: a sign flip gives -1).
        """
        return np.array([float(v @ c / max(math.sqrt(max(yy * (v @ A @ v), 0.0)), 1e-300))
                         for v, A, c, yy in self._predicted(x, joints)])

    def _predicted(self, x, joints):
        """Yield per joint (v, A, c, yy): the column weights of parameters x and the sums."""
        rigid = NPARAM * self.model.nbodies
        jx = np.asarray(x[rigid:], dtype=float).reshape(-1, 4)
        jp = np.column_stack([jx[:, 0], jx[:, 1], jx[:, 3], jx[:, 2]])
        totals = self.totals()
        for j in joints:
            A, c, yy, _ = totals[j]
            yield self.vector(j, x[:rigid], self.nominal, jp[j]), A, c, yy
