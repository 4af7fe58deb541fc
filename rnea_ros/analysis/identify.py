"""``rnea-ros identify`` and ``rnea-ros excite``: from recordings to an identified URDF.

``rnea-ros identify BAG [BAG ...] --urdf NOMINAL.urdf --out IDENTIFIED.urdf
[--params-out PARAMS.yaml] [--topic /joint_states] [--validate BAG] [--report DIR] [--json]``

1. reads ``sensor_msgs/JointState`` (positions, velocities, efforts) from each bag (mcap or
   sqlite3) in chunks (:func:`rnea_ros.analysis.analyze.iter_joint_states`), and conditions
   them (:mod:`rnea_ros.analysis.signals`): logger duplicates dropped, a uniform time grid,
   the noise band estimated from the first training bag, zero-phase low-pass velocities and
   their derivative, anti-aliased decimation to a rate still far above the motion band.  Each
   block of samples goes straight into the fit's sums
   (:class:`rnea_ros.analysis.identification.Accumulator`: per-joint normal equations per
   held-out bin) and the samples are dropped: every sample is used and memory does not grow
   with the recording (an hour at 1 kHz fits like 30 s; a progress line on long runs).  The
   same cutoffs serve every bag, training and validation; ``--cutoff HZ`` or ``--window N``
   (Savitzky-Golay) override the estimate.  Model joints the recording lacks are held at 0
   or at ``--fixed joint=value`` (their parameters keep the nominal values);
2. identifies the base parameters by weighted least squares with the nominal values as a
   prior (weakly excited directions keep them, and are named), for each candidate friction
   model (``--friction``, default ``auto``: chosen by held-out prediction error, among the
   models that predict the moving joints' equations within 2 % of the best), then a
   physically consistent full set with friction, offsets and rotor inertia
   (:mod:`rnea_ros.analysis.identification`);
3. writes IDENTIFIED.urdf (:func:`rnea_ros.analysis.output.identified_urdf`) and PARAMS.yaml
   (under ``/**``: the node's friction, offset and armature parameters and the friction law,
   :func:`rnea_ros.analysis.output.node_parameters`, for ``params_file:=``), each to a
   temporary file renamed into place, and only after everything succeeded;
4. reports the residual RMS per joint with the nominal and identified models, on the training
   data and on ``--validate`` data (both from sums accumulated while streaming, the validation
   bag read after the fit), the friction models' held-out errors, the condition number,
   the joint terms (an Ia only identifiable in a sum with link inertias flagged) and the base
   parameters with %sigma and the share the data decided (text, or ``--json``; plots into
   ``--report DIR``; the plots show an :class:`Excerpt` of at most 20 000 samples).

The nominal model includes the URDF's ``<dynamics damping friction>``.  Bad input (no efforts,
too few samples, data that excites no joint) ends with a message and exit status 2; weakly
excited data is identified with a warning.

``rnea-ros excite --urdf U --duration 30 --out traj.yaml [--joints ...] [--seed N]`` designs an
excitation trajectory (:mod:`rnea_ros.analysis.excitation`).
"""

import json
import os
import sys
import time

import numpy as np

from rnea_ros.analysis import cutoff, signals
from rnea_ros.analysis.analyze import count_joint_states, iter_joint_states
from rnea_ros.analysis.comparison import (not_worse, opposite_sign, parse_effort_scale, REFUSED,
                                          verdict_lines)
from rnea_ros.analysis.identification import Accumulator, predict
from rnea_ros.analysis.output import identified_urdf, node_parameters, write_atomic
from rnea_ros.core import friction as fr
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import inertial_parameters, joint_parameters


MAX_FOLDS = 8      # up to this many training recordings, each is held out in turn


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

    def emit(block, to, count=True):
        nonlocal blocks
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
        conditioner, cols, present, checker, scale = None, None, None, None, None
        for t, names, Q, QD, E in iter_joint_states(bag, topic, chunk):
            if E is None:
                raise ValueError(f'bag {bag!r}: the joint states on {topic!r} carry no efforts; '
                                 'identification needs measured efforts')
            if conditioner is None:
                present = [j for j in model.joint_names if j in names]
                if not present:
                    raise ValueError(f'bag {bag!r}: the joint states name none of the model '
                                     f'joints {list(model.joint_names)}; they name {names}')
                recorded = [j for j in fixed if j in present]
                if recorded:
                    raise ValueError(f'--fixed names joints the recording has: {recorded}; '
                                     'it holds joints the recording lacks')
                for j in model.joint_names:
                    if j not in present:
                        held[j] = fixed.get(j, 0.0)
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
                emit(block, fit_sinks)
            if checker is not None:
                for block in checker.feed(*rows):
                    emit(block, check_sinks, False)
            bar.update(t.size)
        bar.close()
        if conditioner is None:
            raise ValueError(f'topic {topic!r} in {bag!r} has no usable messages')
        for block in conditioner.finish():
            emit(block, fit_sinks)
        reports[bag] = conditioner.report
        if checker is not None:
            for block in checker.finish():
                emit(block, check_sinks, False)
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
        Q = np.unwrap(np.concatenate([r[1] for r in rows])[order][keep], axis=0)
        QD = None if rows[0][2] is None else np.concatenate([r[2] for r in rows])[order][keep]
        E = np.concatenate([r[3] for r in rows])[order][keep]
        pieces.append((t[keep], Q, QD, E))
        left -= t[keep][-1] - t[0]
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


def residual_rms(model, x, data, joints):
    """Return the per-joint RMS of measured - predicted efforts (x: parameters or result)."""
    Q, QD, QDD, E = data
    P = predict(model, x, Q, QD, QDD)
    off = model.nv - model.njoints
    return np.sqrt(np.mean((E[:, off + joints] - P[:, off + joints]) ** 2, axis=0))


def _scale_value(value):
    """Return a velocity scale for the summary: a float, or a list per joint."""
    return [float(v) for v in value] if isinstance(value, tuple) else float(value)


def summarise(model, result, x_nom, train, validation):
    """Return the report as a JSON-ready dict.

    ``train`` and ``validation`` (or None): the :class:`Accumulator` of the samples (the
    residuals come from its sums: no samples kept), or (Q, QD, QDD, E) arrays.
    """
    joints = result.moving
    names = [model.joint_names[j] for j in joints]
    fm = result.friction_model
    out = {'robot': model.name, 'samples': result.samples, 'moving_joints': names,
           'robot_joints': list(model.joint_names),
           'condition_number': result.condition, 'warnings': list(result.warnings),
           'friction_model': {'name': fm.name, 'law': fm.law,
                              'velocity_scale': _scale_value(fm.scale),
                              'stribeck_velocity': _scale_value(fm.stribeck_velocity),
                              'parameters': list(fm.parameter_names)},
           'friction_models': result.selection,
           'weak_parameters': result.weak,
           'base_parameters': [{'name': n, 'value': float(v), 'sigma_percent': float(s),
                                'consistent_value': float(c), 'data_share': float(d)}
                               for n, v, s, c, d in zip(result.base_names, result.beta,
                                                        result.sigma_percent,
                                                        result.beta_consistent,
                                                        result.data_share)],
           'joints': {model.joint_names[j]: _joint_row(model, result, j) for j in joints},
           'residual_rms': {}, 'held_out': result.holdout, 'prior': result.prior}
    for label, data in (('training', train), ('validation', validation)):
        if data is None:
            continue
        if not isinstance(data, Accumulator):    # arrays: their sums (the same figures)
            sums = Accumulator(model, [result.friction_model])
            sums.add(*data)
            data = sums
        nominal = data.residual_rms(x_nom, joints)
        identified = data.residual_rms(result, joints)
        effort = data.effort_rms(joints)
        out['residual_rms'][label] = {
            n: {'nominal': float(a), 'identified': float(b), 'effort_rms': float(e)}
            for n, a, b, e in zip(names, nominal, identified, effort)}
    return out


def _joint_row(model, result, j):
    """Return one joint's identified terms: Fv, Fs (positive side), Fv-, Fs-, Fx, Ia, offset."""
    t = result.friction_table[j]
    row = {'Fv': float(t[fr.FV_POS]), 'Fs': float(t[fr.FS_POS]), 'Fv-': float(t[fr.FV_NEG]),
           'Fs-': float(t[fr.FS_NEG]), 'Fx': float(t[fr.FX]), 'Ia': float(result.armature[j]),
           'offset': float(t[fr.OFF])}
    combined = result.armature_combined.get(model.joint_names[j])
    if combined:
        row['Ia_identifiable_only_as'] = combined
    return row


def text_report(summary):
    """Return the report as text."""
    lines = [f"robot {summary['robot']}: {summary['samples']} samples, moving joints "
             f"{', '.join(summary['moving_joints'])}",
             f"condition number of the base regressor: {summary['condition_number']:.4g}"]
    lines += [f'WARNING: {w}' for w in summary['warnings']]
    for label, table in summary['residual_rms'].items():
        lines.append(f'residual RMS on {label} data (N m or N): nominal -> identified '
                     '(effort RMS)')
        for name, row in table.items():
            lines.append(f"  {name:<24} {row['nominal']:10.4f} -> {row['identified']:10.4f}   "
                         f"({row['effort_rms']:.4f})")
    models = summary.get('friction_models') or []
    if models:
        lines.append('friction models, RMS error on held-out blocks of the training data '
                     '(N m or N), * = chosen (the simplest within 2 % of the best; "per joint": '
                     'that law with the v_s that predicts each joint best, if it is better), x '
                     '= not admissible (predicts the moving joints > 2 % worse than the best):')
        joints = list(models[0]['holdout_rms'])
        lines.append(f"  {'model':<18}" + ''.join(f'{n[-12:]:>13}' for n in joints)
                     + '   score (moving joints)')
        for m in models:
            mark = '*' if m['chosen'] else (' ' if m.get('admissible', True) else 'x')
            lines.append(f"{mark} {m['name']:<18}"
                         + ''.join(f"{m['holdout_rms'][n]:13.4f}" for n in joints)
                         + f"   {m['score']:.4g} ({m.get('score_moving', m['score']):.4g})")
    fm = summary['friction_model']
    v_s, v_st = fm['velocity_scale'], fm['stribeck_velocity']
    per_joint = isinstance(v_s, list)
    lines.append(f"friction model {fm['name']}: tau_f = Fv(qd) qd + (Fs(qd) + Fx e(qd)) s(qd) "
                 f"+ offset, s = {'clip' if fm['law'] == 'linear' else 'tanh'}(qd / "
                 f"{'v_s' if per_joint else format(v_s, 'g')}), e = exp(-(qd / "
                 f"{'v_st' if per_joint else format(v_st, 'g')})^2)")
    if per_joint:
        lines.append('  per joint v_s / v_st (rad/s or m/s): ' + ', '.join(
            f'{name} {a:g}/{b:g}' for name, a, b in zip(summary['robot_joints'], v_s, v_st)))
    lines.append('joint friction and rotor inertia: Fv+/Fv- (N m s/rad), Fs+/Fs- and Fx (N m), '
                 'Ia (kg m^2), offset (N m)')
    flagged = []
    for name, p in summary['joints'].items():
        mark = ''
        if 'Ia_identifiable_only_as' in p:
            mark = ' (Ia: see note)'
            flagged.append(f"  {name}: only the sum {p['Ia_identifiable_only_as']} is "
                           'identifiable; Ia is its share kept near the nominal')
        lines.append(f"  {name:<24} Fv {p['Fv']:8.4f}/{p['Fv-']:8.4f}  Fs {p['Fs']:8.4f}/"
                     f"{p['Fs-']:8.4f}  Fx {p['Fx']:7.4f}  Ia {p['Ia']:8.4f}  "
                     f"offset {p['offset']:8.4f}{mark}")
    if flagged:
        lines.append('note: rotor inertia that only a sum with link inertias determines:')
        lines += flagged
    lines.append(f"base parameters ({len(summary['base_parameters'])}): WLS value, %sigma, "
                 'physically consistent value, share decided by the data')
    for p in summary['base_parameters']:
        lines.append(f"  {p['value']:12.5g} {p['sigma_percent']:8.2f}% "
                     f"{p['consistent_value']:12.5g} {100 * p['data_share']:4.0f}%"
                     f"  {p['name']}")
    return '\n'.join(lines)


def plot(model, result, x_nom, data, out_dir, label, step=1):
    """Write measured / nominal / identified efforts of the moving joints to a PNG; return it.

    ``data``: (Q, QD, QDD, E) of every ``step``-th sample (an :class:`Excerpt`).
    """
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    Q, QD, QDD, E = data[:4]
    off = model.nv - model.njoints
    P_nom = predict(model, x_nom, Q, QD, QDD)
    P_id = predict(model, result, Q, QD, QDD)
    n = result.moving.size
    fig, axes = plt.subplots(n, 1, figsize=(10, 1.9 * n), sharex=True, squeeze=False)
    for k, j in enumerate(result.moving):
        ax = axes[k][0]
        ax.plot(E[:, off + j], 'k', lw=1.0, label='measured')
        ax.plot(P_nom[:, off + j], 'C0', lw=0.8, label='nominal URDF')
        ax.plot(P_id[:, off + j], 'C1--', lw=0.8, label='identified')
        ax.set_ylabel(model.joint_names[j], fontsize=7)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    axes[-1][0].set_xlabel('sample' if step == 1 else f'sample (1 in {step} shown)')
    fig.tight_layout()
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, f'identify_{label}.png')
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def run_identify(args):
    """Run ``rnea-ros identify``; return the exit code."""
    from rnea_ros.analysis.blas import single_threaded
    with single_threaded():
        return _run_identify(args)


def _run_identify(args):
    """Run ``rnea-ros identify`` (see :func:`run_identify`)."""
    try:
        with open(args.urdf, encoding='utf-8') as f:
            xml = f.read()
    except OSError as e:
        raise ValueError(f'cannot read URDF file {args.urdf!r}: {e.strerror}') from None
    model = RobotModel.from_urdf_string(xml, friction_from_urdf=True)
    if args.window is not None and args.window < 3:
        raise ValueError(f'--window {args.window}: give at least 3 samples')
    if args.cutoff is not None and not args.cutoff > 0:
        raise ValueError(f'--cutoff {args.cutoff}: give a positive frequency in Hz')
    if not args.prior > 0:
        raise ValueError(f'--prior {args.prior}: give a positive weight (1 = one weighted '
                         'equation per prior scale)')
    fixed = parse_fixed(args.fixed, model)
    scale = parse_effort_scale(getattr(args, 'effort_scale', None), model)
    friction = getattr(args, 'friction', 'auto')
    cut, choice = filter_choice(args, model, fixed, scale)
    f_v = choice['validation_hz']
    train = Accumulator(model, friction, args.band)
    check = Accumulator(model, train.candidates, args.band)
    folds = None
    if 2 <= len(args.bags) <= MAX_FOLDS:     # each recording held out in turn
        folds = [(Accumulator(model, train.candidates, args.band),
                  Accumulator(model, train.candidates, args.band)) for _ in args.bags]
    shown = Excerpt() if args.report else None
    loaded = read_recordings(args.bags, model, args.topic, window=args.window,
                             cutoff=cut, fixed=fixed, effort_scale=scale,
                             method='chosen' if choice.get('candidates') else None,
                             sinks=[train.add] + ([shown.add] if shown else []),
                             check=(f_v, [check.add]),
                             bag_sinks=folds and [([f.add], [k.add]) for f, k in folds])
    result = train.identify(prior=args.prior, check=check, folds=folds)
    validation, checked, shown_check = None, None, None
    if args.validate:
        validation = Accumulator(model, [result.friction_model], args.band)
        shown_check = Excerpt() if args.report else None
        checked = read_recordings([args.validate], model, args.topic, fixed=fixed, cutoff=f_v,
                                  method='validation', effort_scale=scale,
                                  sinks=[validation.add]
                                  + ([shown_check.add] if shown_check else []))
    x_nom = np.concatenate([inertial_parameters(model), joint_parameters(model)])
    summary = summarise(model, result, x_nom, check, validation)
    summary['effort_scale'] = scale
    summary['signals'] = {bag: r.to_dict() for bag, r in loaded.reports.items()}
    summary['signals'].update({f'validation filter {bag}': r.to_dict()
                               for bag, r in loaded.checks.items()})
    summary['signals']['filter_choice'] = choice
    if checked is not None:
        summary['signals'].update({f'validation {bag}': r.to_dict()
                                   for bag, r in checked.reports.items()})
    summary['held_joints'] = loaded.held
    sign = opposite_sign(model, check, x_nom, result.moving)
    if sign:
        summary['warnings'].append(sign)
    verdict = not_worse(summary)
    summary['comparison'] = verdict
    refused = bool(verdict['worse']) and not getattr(args, 'force', False)
    urdf_text = identified_urdf(xml, model, result.phi, result.joint_params)
    RobotModel.from_urdf_string(urdf_text)                    # it must load back
    params_text = node_parameters(model, result) if args.params_out else None
    plots = []
    if args.report and not refused:
        for data, label in ((shown, 'training'), (shown_check, 'validation')):
            if data is not None and data.data() is not None:
                plots.append(plot(model, result, x_nom, data.data(), args.report, label,
                                  step=data.step))
        write_atomic(os.path.join(args.report, 'identify.json'), json.dumps(summary, indent=2))
    if not refused:
        write_atomic(args.out, urdf_text)
        if params_text is not None:
            write_atomic(args.params_out, params_text)
    summary['outputs'] = ({} if refused else
                          {'urdf': args.out, 'params': args.params_out, 'plots': plots})
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        lines = loaded.lines()
        lines += cutoff.lines(choice) if choice.get('candidates') else []
        for bag, report in ({} if checked is None else checked.reports).items():
            lines += [f'validation {bag}:'] + ['  ' + line for line in report.lines()]
        print('\n'.join(lines))
        print(text_report(summary))
    for line in verdict_lines(verdict, refused):
        print(line, file=sys.stderr)
    return REFUSED if refused else 0


def add_identify_arguments(parser):
    """Add the ``identify`` options to an argparse (sub)parser."""
    parser.add_argument('bags', nargs='+', metavar='BAG', help='rosbag2 recordings (training)')
    parser.add_argument('--urdf', required=True, help='nominal URDF')
    parser.add_argument('--out', required=True, help='identified URDF to write')
    parser.add_argument('--params-out', help='node parameter YAML (friction, armature)')
    parser.add_argument('--topic', default='/joint_states', help='JointState topic')
    parser.add_argument('--validate', metavar='BAG', help='recording for validation')
    parser.add_argument('--report', metavar='DIR', help='folder for plots and identify.json')
    parser.add_argument('--band', type=float, default=0.05,
                        help='|qd| below which a joint equation is left out (stick-slip), rad/s')
    parser.add_argument('--friction', default='auto',
                        choices=('auto', 'coulomb', 'asymmetric', 'tanh'),
                        help='friction model: auto (chosen by held-out prediction error, the '
                        'default), coulomb, asymmetric or tanh (README: Identify the real '
                        'robot)')
    parser.add_argument('--prior', type=float, default=1.0,
                        help='weight of the pull toward the nominal parameters (default 1)')
    parser.add_argument('--cutoff', type=float, metavar='HZ',
                        help='low-pass cutoff for velocities and accelerations (default: '
                             'estimated per joint from the recording, and printed)')
    parser.add_argument('--window', type=int, metavar='N',
                        help='instead of the low-pass: Savitzky-Golay derivative over N '
                             'samples (the earlier default was 21)')
    parser.add_argument('--fixed', nargs='*', metavar='JOINT=VALUE',
                        help='position of model joints the recording lacks (default 0)')
    parser.add_argument('--json', action='store_true', help='print JSON')
    parser.add_argument('--effort-scale', nargs='*', metavar='[JOINT=]K',
                        help='multiply the recorded efforts on reading: one K for every joint '
                        'or joint=K (motor currents times their torque constant and gear '
                        'ratio; -1 for an opposite sign convention)')
    parser.add_argument('--force', action='store_true',
                        help='write the outputs even when the identified model predicts a '
                        'joint worse than the nominal URDF on held-out data (without it '
                        f'identify then writes nothing and exits with status {REFUSED})')


def run_excite(args):
    """Run ``rnea-ros excite``; return the exit code."""
    from rnea_ros.analysis.excitation import optimise_excitation
    model = RobotModel.from_urdf_file(args.urdf)
    joints = [j for token in (args.joints or []) for j in token.replace(',', ' ').split()]
    traj = optimise_excitation(model, duration=args.duration, joints=joints or None,
                               base_frequency=args.base_frequency, harmonics=args.harmonics,
                               seed=args.seed, restarts=args.restarts,
                               iterations=args.iterations)
    traj.to_yaml(args.out)
    print(f'wrote {args.out}: {len(traj.joints)} joints, {traj.duration:g} s, f = '
          f'{traj.base_frequency:g} Hz, {traj.harmonics} harmonics, condition number '
          f"{traj.info['condition_number']:.4g}, peak effort "
          f"{100 * traj.info['max_effort_ratio']:.0f} % of the limits")
    return 0


def add_excite_arguments(parser):
    """Add the ``excite`` options to an argparse (sub)parser."""
    parser.add_argument('--urdf', required=True, help='URDF of the robot')
    parser.add_argument('--duration', type=float, default=30.0, help='seconds (default 30)')
    parser.add_argument('--out', required=True, help='trajectory YAML to write')
    parser.add_argument('--joints', nargs='*', help='joints to excite (default: all moving)')
    parser.add_argument('--seed', type=int, default=0, help='random seed (default 0)')
    parser.add_argument('--harmonics', type=int, default=5, help='harmonics (default 5)')
    parser.add_argument('--base-frequency', type=float,
                        help='Hz (default: periods of about 10 s fitting the duration)')
    parser.add_argument('--restarts', type=int, default=16,
                        help='random coefficient sets tried first (default 16)')
    parser.add_argument('--iterations', type=int, default=10,
                        help='L-BFGS-B iterations refining the best (default 10)')
