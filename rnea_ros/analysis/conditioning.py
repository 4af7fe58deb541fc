"""Conditioning: recordings read chunk by chunk, cleaned, filtered and handed to the fit's sums.

Stage 1 of ``rnea-ros identify`` (:mod:`rnea_ros.analysis.identify`): the bags' JointState rows
go through :class:`rnea_ros.analysis.signals.Conditioner` (logger duplicates dropped, wrapped
angles undone, a uniform grid, the low-pass and its derivative, decimation) in model order to
sinks such as :meth:`rnea_ros.analysis.identification.Accumulator.add`, nothing kept; a second
conditioning of the same rows feeds the validation sums.  The start of the training
recordings is read first to choose the filter (:func:`filter_choice`,
:mod:`rnea_ros.analysis.cutoff`).
"""

import os
import sys
import time

import numpy as np

from rnea_ros.analysis import cutoff, signals
from rnea_ros.analysis.recordings import count_joint_states, held_joints, iter_joint_states


class Progress:
    """A progress line on stderr: redrawn on a terminal; elsewhere every 10 %, long runs only."""

    def __init__(self, label, total, stream=None, long_rows=1_000_000):
        """Show progress of ``total`` rows (0: unknown, nothing shown)."""
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, 'isatty') and self.stream.isatty()
        self.label, self.total = label, int(total)
        self.show = self.total > 0 and (self.tty or self.total >= long_rows)
        self.done, self.shown, self.start = 0, -1, time.monotonic()

    def update(self, rows):
        """Count rows read; redraw when due."""
        self.done += rows
        if not self.show:
            return
        percent = min(100, int(100 * self.done / self.total))
        step = percent if self.tty else percent // 10 * 10
        if step != self.shown:
            self.shown = step
            line = (f'{self.label}: {percent:3d} % ({self.done / 1e6:.2f} of '
                    f'{self.total / 1e6:.2f} M rows, {time.monotonic() - self.start:.0f} s)')
            self.stream.write(('\r' + line) if self.tty else line + '\n')
            self.stream.flush()

    def close(self):
        """End the line on a terminal."""
        if self.show and self.tty:
            self.stream.write('\n')
            self.stream.flush()


def parse_fixed(items, model):
    """Return {joint: position} of ``--fixed joint=value`` items (ValueError when malformed)."""
    fixed = {}
    for item in [i for token in (items or []) for i in token.replace(',', ' ').split()]:
        name, sep, value = item.partition('=')
        if not sep:
            raise ValueError(f'--fixed {item!r}: give joint=value')
        if name not in model.joint_names:
            raise ValueError(f'--fixed {item!r}: {name!r} is not a joint of the model; joints: '
                             f'{list(model.joint_names)}')
        try:
            fixed[name] = float(value)
        except ValueError:
            raise ValueError(f'--fixed {item!r}: {value!r} is not a number') from None
        if not np.isfinite(fixed[name]):
            raise ValueError(f'--fixed {item!r}: the position must be finite')
    return fixed


class Samples:
    """Conditioned samples of one or more bags in model order, and how they were made.

    ``data``: (Q, QD, QDD, E) (N, nq), (N, nv) x 3, or None when the samples were streamed
    into sinks (:func:`read_recordings`) instead of kept; ``reports``: {bag: signals.Report};
    ``held``: {joint: position} of the model joints the recordings lack.
    """

    def __init__(self, data, reports, held):
        """Store the fields."""
        self.data, self.reports, self.held = data, reports, held

    def lines(self):
        """Return text lines: the signal processing of each bag, the joints held."""
        out = []
        for bag, report in self.reports.items():
            out.append(f'{bag}:')
            out += ['  ' + line for line in report.lines()]
        if self.held:
            out.append('joints not in the recording, held still (their friction and rotor '
                       'inertia keep the nominal values): '
                       + ', '.join(f'{j} = {v:g}' for j, v in self.held.items()))
        return out


class Excerpt:
    """Every k-th sample of a stream, at most about ``limit`` samples (for plots).

    k doubles (every other kept sample dropped) whenever more than ``limit`` are kept, so that
    the excerpt spans the whole recording in bounded memory; the fit never uses it.
    """

    def __init__(self, limit=20_000):
        """Start empty, keeping every sample."""
        self.limit, self.step, self.seen, self.parts = int(limit), 1, 0, []

    def add(self, *arrays):
        """Take a block of samples (arrays with one row per sample)."""
        n = arrays[0].shape[0]
        first = (-self.seen) % self.step
        self.parts.append([a[first::self.step].copy() for a in arrays])
        self.seen += n
        if sum(p[0].shape[0] for p in self.parts) > self.limit:
            data = self.data()
            self.step *= 2
            self.parts = [[a[::2] for a in data]]

    def data(self):
        """Return the kept samples as arrays (one per array given to :meth:`add`)."""
        if not self.parts:
            return None
        return tuple(np.concatenate([p[k] for p in self.parts])
                     for k in range(len(self.parts[0])))


def load_recordings(bags, model, topic='/joint_states', window=None, cutoff=None, fixed=None,
                    like=None, max_samples=None, chunk=20_000, progress=True):
    """Return the :class:`Samples` of bags with every sample kept in arrays.

    See :func:`read_recordings`; ``max_samples`` caps the samples kept (by decimation: a
    preview, the fit streams instead and uses them all).
    """
    parts = []
    recording = read_recordings(bags, model, topic, window, cutoff, fixed, like,
                                sinks=[lambda *block: parts.append(list(block[:4]))],
                                max_samples=max_samples, chunk=chunk, progress=progress)
    if not parts:
        raise ValueError('no samples left after cleaning the recordings')
    data = []
    for k in range(4):                  # one array at a time, its parts freed (peak memory)
        data.append(np.concatenate([p[k] for p in parts]))
        for p in parts:
            p[k] = None
    recording.data = tuple(data)
    return recording


def read_recordings(bags, model, topic='/joint_states', window=None, cutoff=None, fixed=None,
                    like=None, sinks=(), max_samples=None, chunk=20_000, progress=True,
                    effort_scale=None, check=None, method=None, effort_cutoff=None,
                    bag_sinks=None):
    """Read and condition bags chunk by chunk; pass each block to every sink; return Samples.

    Each sink is called with (Q, QD, QDD, E, QDR) of a block of conditioned samples in model
    order, QDR the reported velocities (e.g.
    :meth:`rnea_ros.analysis.identification.Accumulator.add`); nothing is kept here, so
    memory does not grow with the recording (the returned :class:`Samples` has ``data`` None).
    The cutoffs are estimated on the first bag (module doc of :mod:`rnea_ros.analysis.signals`)
    unless ``cutoff`` / ``window`` is given or ``like`` (the Samples of the training bags)
    provides them.  ``fixed``: {joint: position} of model joints the recording lacks (others
    lacking are held at 0).  ``effort_scale``: {joint: K} multiplying the recorded efforts (on
    reading).  ``check``: (cutoff Hz, sinks): a second conditioning of the same rows, velocities
    and efforts low-passed at that cutoff (validation; its reports in ``Samples.checks``).
    ``method``: how a given ``cutoff`` was found (the report's word).  ``bag_sinks``: per bag,
    (sinks, check sinks) that get that bag's blocks too (held-out recordings).
    """
    fixed = dict(fixed or {})
    checks = {}
    if like is not None:
        first = next(iter(like.reports.values()))
        window = first.window or None
        cutoff = None if window else dict(zip(first.joints, first.cutoff))
    counts = [count_joint_states(bag, topic) for bag in bags]
    total = sum(counts)
    reports, held, blocks = {}, {}, 0
    off_q, off_v = model.nq - model.njoints, model.nv - model.njoints

    def emit(block, to, count=True, source=None):
        nonlocal blocks
        if source is not None and id(to) not in begun:
            begun.add(id(to))
            begin_recording(to, source.dt * source.decimation)
        data = _model_order(block, model, present, held, off_q, off_v)
        for sink in to:
            sink(*data)
        blocks += count

    for number, (bag, count) in enumerate(zip(bags, counts)):
        extra, extra_check = bag_sinks[number] if bag_sinks else ((), ())
        fit_sinks, check_sinks = list(sinks) + list(extra), None
        if check is not None:
            check_sinks = list(check[1]) + list(extra_check)
        bar = Progress(f'reading {os.path.basename(os.path.normpath(bag))}',
                       count if progress else 0)
        begun = set()
        conditioner, cols, present, checker, scale = None, None, None, None, None
        for t, names, Q, QD, E in iter_joint_states(bag, topic, chunk):
            if E is None:
                raise ValueError(f'bag {bag!r}: the joint states on {topic!r} carry no efforts; '
                                 'identification needs measured efforts')
            if conditioner is None:
                held.update(held_joints(names, model, fixed, f'bag {bag!r}'))
                present = [j for j in model.joint_names if j in names]
                cols = [names.index(j) for j in present]
                given = cutoff
                if isinstance(cutoff, dict):      # the first bag's estimate, by joint
                    given = [cutoff.get(j, min(cutoff.values())) for j in present]
                conditioner = signals.Conditioner(
                    present, cutoff=given, window=window, expected_rows=total or None,
                    max_samples=max_samples, reported=True, effort_cutoff=effort_cutoff)
                if isinstance(cutoff, dict):
                    conditioner.report.method = 'training'
                elif method and given is not None:
                    conditioner.report.method = method
                if check is not None:
                    checker = signals.Conditioner(
                        present, cutoff=check[0],
                        expected_rows=total or None, max_samples=max_samples, reported=True,
                        rate_cutoff=None if given is None else float(np.max(given)))
                    checker.report.method = 'validation'
                scale = np.array([(effort_scale or {}).get(j, 1.0) for j in present])
            rows = (t, Q[:, cols], None if QD is None else QD[:, cols], E[:, cols] * scale)
            for block in conditioner.feed(*rows):
                emit(block, fit_sinks, source=conditioner)
            if checker is not None:
                for block in checker.feed(*rows):
                    emit(block, check_sinks, False, source=checker)
            bar.update(t.size)
        bar.close()
        if conditioner is None:
            raise ValueError(f'topic {topic!r} in {bag!r} has no usable messages')
        for block in conditioner.finish():
            emit(block, fit_sinks, source=conditioner)
        reports[bag] = conditioner.report
        if checker is not None:
            for block in checker.finish():
                emit(block, check_sinks, False, source=checker)
            checks[bag] = checker.report
        if cutoff is None and window is None:     # later bags use the first bag's estimate
            cutoff = dict(zip(conditioner.report.joints, conditioner.report.cutoff))
    if not blocks:
        raise ValueError('no samples left after cleaning the recordings')
    out = Samples(None, reports, held)
    out.checks = checks
    return out


def search_pieces(bags, model, topic, fixed, effort_scale, seconds=cutoff.SEARCH_SECONDS):
    """Return (pieces, to_model): raw rows of the start of the bags for the filter search.

    ``pieces``: per bag (t, Q, QD, E) of the joints the first bag records (efforts scaled,
    positions unwrapped), at most ``seconds`` in all; ``to_model(block)``: the model-order
    (Q, QD, QDD, E, QDR) of a conditioned block of them.
    """
    pieces, present, left = [], None, seconds
    for bag in bags:
        if left <= 0:
            break
        rows = []
        for t, names, Q, QD, E in iter_joint_states(bag, topic):
            if E is None:
                raise ValueError(f'bag {bag!r}: the joint states on {topic!r} carry no '
                                 'efforts; identification needs measured efforts')
            if present is None:
                present = [j for j in model.joint_names if j in names]
                if not present:
                    raise ValueError(f'bag {bag!r}: the joint states name none of the model '
                                     f'joints {list(model.joint_names)}; they name {names}')
            if any(j not in names for j in present):
                break
            cols = [names.index(j) for j in present]
            scale = np.array([(effort_scale or {}).get(j, 1.0) for j in present])
            rows.append((t, Q[:, cols], None if QD is None else QD[:, cols], E[:, cols] * scale))
            if t[-1] - rows[0][0][0] >= left:
                break
        if not rows:
            continue
        t = np.concatenate([r[0] for r in rows])
        order = np.argsort(t, kind='stable')
        t = t[order]
        keep = t <= t[0] + left
        Q = np.concatenate([r[1] for r in rows])[order][keep]
        QD = None if rows[0][2] is None else np.concatenate([r[2] for r in rows])[order][keep]
        E = np.concatenate([r[3] for r in rows])[order][keep]
        t = t[keep]
        # The rows the conditioner keeps (repeated states and stale stamps dropped), so that
        # the motion band is the motion's, not that of a logger's repeats.
        X = np.hstack([Q] + ([] if QD is None else [QD]) + [E])
        clean = signals.clean_rows(t, X, None, None if QD is None
                                   else np.any(QD != 0.0, axis=1))[0]
        t, Q, E = t[clean], np.unwrap(Q[clean], axis=0), E[clean]
        QD = None if QD is None else QD[clean]
        pieces.append((t, Q, QD, E))
        left -= t[-1] - t[0]
    if not pieces:
        raise ValueError('no samples in the recordings')
    held = {j: fixed.get(j, 0.0) for j in model.joint_names if j not in present}
    off_q, off_v = model.nq - model.njoints, model.nv - model.njoints
    return pieces, lambda block: _model_order(block, model, present, held, off_q, off_v)


def filter_choice(args, model, fixed, effort_scale):
    """Return (cutoff for the fit, report): chosen by held-out prediction unless given.

    :mod:`rnea_ros.analysis.cutoff`; with ``--cutoff`` or ``--window`` the report holds only
    the motion band and the validation filter.
    """
    pieces, to_model = search_pieces(args.bags, model, args.topic, fixed, effort_scale)
    if args.cutoff is None and args.window is None:
        return cutoff.search(model, pieces, to_model, args.band, args.prior)
    f_m = max(cutoff.motion_band(p[0], p[1], p[2]) for p in pieces)
    dt = min(signals.median_interval(p[0]) for p in pieces if p[0].size > 1)
    return args.cutoff, {'motion_band_hz': f_m,
                         'validation_hz': cutoff.validation_cutoff(f_m, dt, args.cutoff)}


def begin_recording(sinks, dt):
    """Tell the sinks that can hear it (an Accumulator's ``add``) that a recording begins.

    Its samples get their own effort offsets, and parallel filtering its step ``dt`` (s).
    """
    for sink in sinks:
        owner = getattr(sink, '__self__', None)
        if hasattr(owner, 'begin_recording'):
            owner.begin_recording(dt)


def _model_order(block, model, present, held, off_q, off_v):
    """Return (Q, QD, QDD, E) in model order of a block of the recorded joints."""
    t, Qr, QDr, QDDr, Er, QDRr = block
    n = t.size
    Q = np.zeros((n, model.nq))
    QD, QDD, E, QDR = (np.zeros((n, model.nv)) for _ in range(4))
    index = [model.joint_names.index(j) for j in present]
    for j, value in held.items():
        Q[:, off_q + model.joint_names.index(j)] = value
    Q[:, off_q + np.asarray(index)] = Qr
    for X, Xr in ((QD, QDr), (QDD, QDDr), (E, Er), (QDR, QDRr)):
        X[:, off_v + np.asarray(index)] = Xr
    return [Q, QD, QDD, E, QDR]


def load_samples(bags, model, topic, window=None, order=2, cutoff=None, fixed=None):
    """Return (Q, QD, QDD, E) of all bags in model order (see :func:`load_recordings`)."""
    return load_recordings(bags, model, topic, window=window, cutoff=cutoff, fixed=fixed,
                           progress=False).data
