"""Offline momentum observer: tune collision thresholds on a recording before the arm moves.

``rnea-ros observe BAG --urdf FILE [--params PARAMS.yaml] [--gains K ...] [--thresholds T ...]
[--reversal-thresholds T ...] [--reversal-band V] [--reversal-hold S] [--filter KF]
[--effort-sampling instant|held] [--hysteresis H] [--min-duration S]
[--fixed JOINT=VALUE ...] [--out DIR] [--json]`` reads ``sensor_msgs/JointState`` (positions,
velocities, efforts) from a rosbag2 recording (joints it lacks held still, as identify holds
them; :func:`rnea_ros.analysis.recordings.read_joint_states`), runs the node's observer
(:func:`rnea_ros.core.observer.observe_recording`: the same code the node runs per cycle) and
prints per joint the largest and 99.9th percentile of |external torque|, the collisions the
thresholds would have raised (time, joints) and a threshold suggestion: ``margin`` (default
1.5) times the largest |r_j| of the recording, which on a recording free of contact is the
lowest threshold without a false alarm on it, and never less than the model's Coulomb jump
``Fs+ + Fs- + 2 Fx`` of the joint (:func:`coulomb_jump`): at a velocity reversal a real joint
sticks, and while it sticks its friction is anything within its static friction, which no
friction law times; the observer sees up to that jump, and the larger the faster the reversal
(the demo's MuJoCo panda with its true model: up to 0.85 of the jump).  A recording of slow or
smooth motion (an identification's excitation) shows less than fast tracking will, so the
floor matters there (``benchmarks/bench_observer_identified.py``).

That floor makes one threshold per joint blind, the rest of the time, to any contact smaller
than a reversal's residual (a 10 N push 8 cm from the shoulder axis is 0.8 N m; the panda's
joint 1 jump is 2.5 N m).  So the command also suggests thresholds **gated by velocity
reversals** (:class:`rnea_ros.core.observer.CollisionDetector`, node parameters
``collision_reversal_thresholds``, ``collision_reversal_band``, ``collision_reversal_hold``):
each joint's samples are split by its reversal windows (``|qd_j| < band`` and ``hold`` s after,
:func:`rnea_ros.core.observer.reversal_windows`); the moving threshold is ``margin`` times the
largest |r_j| outside them, never below ``floor`` (0.2 N m or N: the accuracy the external
torques are held to; a recording gentler than the work it prepares shows less model error
than the work will), the reversal threshold is the one-threshold suggestion (never below the
moving one).  A joint that never left its windows in the recording keeps one threshold.

``--params`` takes the node's parameter file (``params_file:=``, or the PARAMS.yaml of
``rnea-ros identify``, under ``/**``): the model is built from it exactly as the node builds
its own (:func:`rnea_ros.node.params.node_model`: friction law, positive and negative viscous
and Coulomb terms, Stribeck, ``effort_offset``, armature, ``use_urdf_friction``, a configured
payload; the values normalised and checked as the node does), and its ``observer_gains``,
``observer_effort_sampling``, ``observer_max_gap``, ``observer_filter``, ``collision_thresholds``,
``collision_hysteresis``, ``collision_min_duration``, ``collision_reversal_*`` and ``gravity``
are the defaults of the options.  The base is fixed (a recording of joint states has no base
state), whatever ``floating_base`` says.  ``--out DIR`` writes ``external_torques.png`` (r(t)
per joint with thresholds and collisions).
"""

import json
import os

import numpy as np

from rnea_ros.analysis import arguments as arg
from rnea_ros.analysis.analyze import held_lines, smoothed_derivative
from rnea_ros.analysis.conditioning import parse_fixed
from rnea_ros.analysis.recordings import held_joints, model_order, read_joint_states
from rnea_ros.core import friction as fr
from rnea_ros.core.checks import coordinate_name
from rnea_ros.core.model import RobotModel
from rnea_ros.core.observer import (DEFAULT_REVERSAL_BAND, DEFAULT_REVERSAL_HOLD,
                                    observe_recording, reversal_windows)
from rnea_ros.core.urdf import lock_joints, parse_urdf, read_urdf
from rnea_ros.node.params import (COEFFICIENT_PARAMETERS, fixed_joint_positions, node_config,
                                  node_model, SPECS)

NODE = 'rnea'           # the node's name: sections of a parameter file that apply to it
FLOOR = 0.2             # N m or N: the lowest moving threshold suggested
OBSERVER_ARRAYS = ('observer_gains', 'collision_thresholds', 'collision_reversal_thresholds')


def read_params(path, node=NODE):
    """Return the ``ros__parameters`` a node named ``node`` gets from a parameter YAML file.

    The sections ``/**`` and those naming the node (``rnea``, ``/rnea``, ``/left/rnea``,
    ``/**/rnea``) are merged in file order (a later one wins); a file with none of them gives
    its first section.
    """
    import yaml
    try:
        with open(path, encoding='utf-8') as f:
            data = yaml.safe_load(f)
    except yaml.YAMLError as exc:
        raise ValueError(f'{path}: not YAML: {exc}') from None
    except UnicodeDecodeError:
        raise ValueError(f'{path}: not UTF-8 text') from None
    sections = [(str(key), value['ros__parameters']) for key, value in
                (data.items() if isinstance(data, dict) else ())
                if isinstance(value, dict) and isinstance(value.get('ros__parameters'), dict)]
    if not sections:
        raise ValueError(f'{path}: no <node>: ros__parameters: mapping')
    ours = [values for key, values in sections
            if key == '/**' or key.lstrip('/').split('/')[-1] == node]
    params = {}
    for values in ours or sections[:1]:
        params.update(values)
    return params


def without_joints(cfg, held, full, *per_joint):
    """Return ``cfg`` and each of ``per_joint`` with the entries of the ``held`` joints out.

    For a robot whose held joints are locked (:func:`rnea_ros.core.urdf.lock_joints`): the
    friction, offset and armature arrays of ``cfg`` lose the entries of those joints (by
    ``friction_joints``, else ``command_joints``, else the model's joint order) and those
    joints leave the name lists; the observer's per-joint arrays (``cfg``'s and ``per_joint``,
    the command line's) lose them where they have one entry per joint of ``full``.
    """
    cfg = dict(cfg)
    key = 'friction_joints' if cfg.get('friction_joints') else (
        'command_joints' if cfg.get('command_joints') else None)
    names = list(cfg[key]) if key else list(full.joint_names)
    keep = [k for k, n in enumerate(names) if n not in held]
    for name in COEFFICIENT_PARAMETERS:
        values = cfg.get(name)
        if values and len(values) == len(names) > 1:
            cfg[name] = [values[k] for k in keep]
    for name in ('friction_joints', 'command_joints'):
        if cfg.get(name):
            cfg[name] = [n for n in cfg[name] if n not in held]
    cfg['fixed_joints'], cfg['fixed_joint_positions'] = [], []     # locked in the model now
    velocity = [k for k in range(full.nv) if coordinate_name(full, k, True) not in held]

    def cut(values):
        if values is None or np.size(values) != full.nv or full.nv == 1:
            return values
        return [float(np.ravel(values)[k]) for k in velocity]

    for name in OBSERVER_ARRAYS:
        cfg[name] = cut(cfg.get(name))
    return (cfg, *(cut(v) for v in per_joint))


def observe(urdf_xml, t, names, Q, QD, E, params=None, gains=None, thresholds=None,
            hysteresis=None, min_duration=None, margin=1.5, effort_sampling=None,
            reversal_thresholds=None, reversal_band=None, reversal_hold=None, floor=FLOOR,
            output_filter=None, fixed=None):
    """Run the observer over arrays in bag order ``names``; return a dict of results.

    ``params``: the node's parameters (a parameter file's values, :func:`read_params`): the
    model is the node's (:func:`rnea_ros.node.params.node_model`, fixed base) and arguments
    left None take the node's values (its defaults where ``params`` says nothing).  ValueError
    (a :class:`rnea_ros.node.params.ParameterError`) names an invalid parameter.

    Model joints the recording lacks are held still at ``fixed`` ({joint: position}; default:
    the parameters' ``fixed_joints`` at ``fixed_joint_positions``, as the node holds them, else
    0): the robot is observed with them locked (``held`` in the result), and per-joint values
    given for every joint lose their entries (:func:`without_joints`).

    Suggestions (see the module docstring): ``suggested`` (one threshold per joint),
    ``suggested_moving`` and ``suggested_reversal`` (thresholds gated by velocity reversals,
    with ``reversal_band`` and ``reversal_hold``); ``max_moving`` / ``max_reversal``: the
    largest |r_j| outside / inside the joint's reversal windows, ``window_share`` the share of
    the samples inside.
    """
    cfg = node_config(params or {})
    if E is None:
        raise ValueError('the joint states carry no efforts: the observer needs them')
    full = RobotModel.from_urdf_string(urdf_xml)
    if not fixed and cfg.get('fixed_joints'):          # the node's own: as it holds them
        index, values = fixed_joint_positions(cfg, full.joint_names)
        fixed = {full.joint_names[i]: float(v) for i, v in zip(index, values)
                 if full.joint_names[i] not in names}
    held = held_joints(names, full, fixed)
    if held:
        urdf_xml = lock_joints(urdf_xml, held)
        cfg, gains, thresholds, reversal_thresholds = without_joints(
            cfg, held, full, gains, thresholds, reversal_thresholds)
    model = node_model(parse_urdf(urdf_xml), dict(cfg, floating_base=False))
    cols = model_order(names, model)
    Q, E = Q[:, cols], E[:, cols]
    QD = smoothed_derivative(t, Q) if QD is None else QD[:, cols]
    gains = cfg['observer_gains'] if gains is None else gains
    if thresholds is None:
        thresholds = cfg['collision_thresholds'] or None
    hysteresis = cfg['collision_hysteresis'] if hysteresis is None else hysteresis
    if min_duration is None:
        min_duration = cfg['collision_min_duration']
    sampling = effort_sampling or cfg['observer_effort_sampling']
    if reversal_thresholds is None:
        reversal_thresholds = cfg.get('collision_reversal_thresholds') or None
    band = cfg.get('collision_reversal_band', DEFAULT_REVERSAL_BAND) if reversal_band is None \
        else reversal_band
    hold = cfg.get('collision_reversal_hold', DEFAULT_REVERSAL_HOLD) if reversal_hold is None \
        else reversal_hold
    result = observe_recording(model, t, Q, QD, E, gains=gains, thresholds=thresholds,
                               hysteresis=hysteresis, min_duration=min_duration,
                               gravity=cfg['gravity'], effort_sampling=sampling,
                               max_gap=cfg['observer_max_gap'],
                               reversal_thresholds=reversal_thresholds, reversal_band=band,
                               reversal_hold=hold,
                               output_filter=(cfg['observer_filter'] if output_filter is None
                                              else output_filter))
    R = result['r']
    used = np.isfinite(R).all(axis=1)
    A = np.abs(R[used]) if used.any() else np.zeros((1, model.nv))
    windows = reversal_windows(t, QD, band, hold)
    window = windows[used] if used.any() else np.ones((1, model.nv), dtype=bool)
    jump = coulomb_jump(model)
    largest = A.max(axis=0)
    moving = np.where(window, 0.0, A).max(axis=0)
    reversing = np.where(window, A, 0.0).max(axis=0)
    suggested = np.maximum(margin * largest, jump)
    # Gated: moving thresholds from the samples outside the windows (floored); a joint that
    # never left its windows keeps one threshold (no evidence for a lower one).
    outside = (~window).any(axis=0)
    suggested_moving = np.where(outside, np.maximum(margin * moving, floor), suggested)
    suggested_reversal = np.maximum(np.maximum(margin * reversing, jump), suggested_moving)
    result.update(model=model, t=t - t[0], t0=float(t[0]), gains=gains, thresholds=thresholds,
                  held=held,
                  hysteresis=hysteresis, min_duration=min_duration,
                  reversal_thresholds=reversal_thresholds, reversal_band=band,
                  reversal_hold=hold, max=largest, p999=np.percentile(A, 99.9, axis=0),
                  jump=jump, suggested=suggested, margin=margin, used=int(used.sum()),
                  max_moving=moving, max_reversal=reversing, window_share=window.mean(axis=0),
                  suggested_moving=suggested_moving, suggested_reversal=suggested_reversal,
                  floor=floor, windows=windows,
                  output_filter=cfg['observer_filter'] if output_filter is None else
                  output_filter)
    return result


def coulomb_jump(model):
    """Return per velocity coordinate the model's Coulomb jump Fs+ + Fs- + 2 Fx (N m or N).

    The step of the model's friction from the positive to the negative direction (Coulomb and
    Stribeck terms of :mod:`rnea_ros.core.friction`): the largest error a velocity reversal
    can leave in the observer's residual when the real joint sticks (its friction then is
    anything its static friction allows).  0 for a floating base's rows.
    """
    table = np.asarray(model.friction_table, dtype=float).reshape(-1, len(fr.PARAMETERS))
    out = np.zeros(model.nv)
    out[model.nv - table.shape[0]:] = (np.abs(table[:, fr.FS_POS]) + np.abs(table[:, fr.FS_NEG])
                                       + 2.0 * np.abs(table[:, fr.FX]))
    return out


def _floats(values):
    """Return one value or an array as a list of plain floats (for the report's text)."""
    return [float(v) for v in np.atleast_1d(values)]


def report(result):
    """Return the observer run as readable text."""
    model, t = result['model'], result['t']
    lines = [f'{model!r}: {t.size} samples over {t[-1]:.3f} s, {result["used"]} used',
             f'gains K = {_floats(result["gains"])} 1/s'
             + (f', output filter {result["output_filter"]:g} 1/s' if result['output_filter']
                else '') + '; external torques r in N m (N for prismatic joints)',
             *held_lines(result['held']),
             f"{'joint':<24}{'max |r|':>10}{'p99.9':>10}{'Fs jump':>10}{'suggest':>10}"
             f"{'moving':>10}{'reversal':>10}{'share':>7}{'moving':>10}{'reversal':>10}"]
    for j, name in enumerate(result['names']):
        lines.append(f"{name:<24}{result['max'][j]:10.4f}{result['p999'][j]:10.4f}"
                     f"{result['jump'][j]:10.4f}{result['suggested'][j]:10.4f}"
                     f"{result['max_moving'][j]:10.4f}{result['max_reversal'][j]:10.4f}"
                     f"{100 * result['window_share'][j]:6.0f}%"
                     f"{result['suggested_moving'][j]:10.4f}"
                     f"{result['suggested_reversal'][j]:10.4f}")
    lines.append(f'suggest = the larger of {result["margin"]:g} x max |r| (the lowest thresholds '
                 'without a false alarm on this recording, if it has no contact) and the '
                 "model's Coulomb jump Fs+ + Fs- + 2 Fx (what a fast velocity reversal can "
                 'show)')
    lines.append(f'gated by velocity reversals (|qd| < {result["reversal_band"]:g} and '
                 f'{result["reversal_hold"]:g} s after): max |r| moving / in reversal '
                 'windows, the share of samples in them, and the suggested moving threshold '
                 f'({result["margin"]:g} x max |r| moving, at least {result["floor"]:g}) and '
                 'reversal threshold (suggest); as node parameters:')
    lines.append('  collision_thresholds: ' + _yaml_list(result['suggested_moving']))
    lines.append('  collision_reversal_thresholds: '
                 + _yaml_list(result['suggested_reversal']))
    lines.append(f'  collision_reversal_band: {result["reversal_band"]:g}')
    lines.append(f'  collision_reversal_hold: {result["reversal_hold"]:g}')
    if result['thresholds'] is None:
        lines.append('no thresholds given: no collision detection (--thresholds)')
    else:
        gated = result['reversal_thresholds']
        lines.append(f'thresholds {_floats(result["thresholds"])}'
                     + (f' ({_floats(gated)} in reversal windows)'
                        if gated is not None else '')
                     + f', hysteresis {result["hysteresis"]:g}, min duration '
                     f'{result["min_duration"]:g} s: '
                     f'{sum(e.kind == "collision" for e in result["events"])} collision(s)')
    t0 = result['t0']
    for event in result['events']:
        lines.append('  ' + event.describe().replace(f'{event.t:.3f}', f'{event.t - t0:.3f}'))
    reasons = {}
    for _, reason in result['suspended']:
        reasons[reason] = reasons.get(reason, 0) + 1
    for reason, count in reasons.items():
        lines.append(f'suspended {count} sample(s): {reason}')
    for when, note in result['notes']:
        lines.append(f'at t = {when - t0:.3f} s: {note}')
    return '\n'.join(lines)


def _yaml_list(values):
    """Return values as a YAML flow list with 4 decimals ([0.2, 1.2345])."""
    return '[' + ', '.join(f'{float(v):.4f}' for v in values) + ']'


def summary(result):
    """Return the observer run as a JSON-friendly dict."""
    t0 = result['t0']
    return {'samples': int(result['t'].size), 'used': result['used'],
            'held_joints': result['held'],
            'joints': {n: {'max': float(result['max'][j]), 'p99.9': float(result['p999'][j]),
                           'coulomb_jump': float(result['jump'][j]),
                           'suggested_threshold': float(result['suggested'][j]),
                           'max_moving': float(result['max_moving'][j]),
                           'max_reversal': float(result['max_reversal'][j]),
                           'reversal_window_share': float(result['window_share'][j]),
                           'suggested_moving_threshold': float(result['suggested_moving'][j]),
                           'suggested_reversal_threshold':
                               float(result['suggested_reversal'][j])}
                       for j, n in enumerate(result['names'])},
            'events': [{'kind': e.kind, 't': e.t - t0, 'start': e.start - t0,
                        'joints': list(e.joints), 'peak': e.peak} for e in result['events']],
            'reversal_band': result['reversal_band'], 'reversal_hold': result['reversal_hold'],
            'suspended': len(result['suspended']), 'notes': [n for _, n in result['notes']]}


def plot(result, out_dir):
    """Write external_torques.png (r per joint, thresholds, collisions); return its path."""
    import matplotlib
    matplotlib.use('Agg')
    import matplotlib.pyplot as plt
    os.makedirs(out_dir, exist_ok=True)
    t, R, names = result['t'], result['r'], result['names']
    n = len(names)
    th = result['thresholds']
    th = None if th is None else np.broadcast_to(np.asarray(th, dtype=float), (n,))
    gated = result['reversal_thresholds']
    gated = None if gated is None or th is None else np.broadcast_to(
        np.asarray(gated, dtype=float), (n,))
    fig, axes = plt.subplots(n, 1, figsize=(9, 1.6 * n + 0.6), sharex=True, squeeze=False)
    for j, ax in enumerate(axes[:, 0]):
        ax.plot(t, R[:, j], 'C0', lw=0.8)
        if gated is not None:           # the threshold of each sample (reversal windows)
            line = np.where(result['windows'][:, j], gated[j], th[j])
            ax.plot(t, line, color='C3', lw=0.6, ls='--')
            ax.plot(t, -line, color='C3', lw=0.6, ls='--')
        elif th is not None:
            ax.axhline(th[j], color='C3', lw=0.6, ls='--')
            ax.axhline(-th[j], color='C3', lw=0.6, ls='--')
        for event in result['events']:
            if event.kind == 'collision':
                ax.axvline(event.t - result['t0'], color='C3', lw=0.8)
        ax.set_ylabel(names[j], fontsize=7)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel('time (s)')
    fig.suptitle('external torques (momentum observer), collisions in red', fontsize=9)
    fig.tight_layout()
    path = os.path.join(out_dir, 'external_torques.png')
    fig.savefig(path, dpi=80)
    plt.close(fig)
    return path


def add_arguments(parser):
    """Add the ``observe`` options to an argparse (sub)parser."""
    arg.add_recording(parser)
    arg.add_fixed(parser)
    parser.add_argument('--params', type=arg.YAML_FILE, help="the node's parameter YAML "
                        '(friction, armature, observer settings)')
    parser.add_argument('--gains', nargs='+', type=arg.GAIN, help='K in 1/s, in (0, 1e6]: 1 '
                        'value or 1 per joint (default: --params, else '
                        f"{SPECS['observer_gains'].default[0]:g})")
    parser.add_argument('--thresholds', nargs='+', type=arg.POSITIVE,
                        help='collision thresholds in N m or N, > 0: 1 value or 1 per joint')
    parser.add_argument('--reversal-thresholds', nargs='+', type=arg.POSITIVE,
                        help='thresholds inside velocity-reversal windows (>= --thresholds): '
                        '1 value or 1 per joint (default: --params, else not gated)')
    parser.add_argument('--reversal-band', type=arg.BAND,
                        help='rad/s or m/s: a joint slower than this is reversing (0: never; '
                        f'default: --params, else {DEFAULT_REVERSAL_BAND:g})')
    parser.add_argument('--reversal-hold', type=arg.DURATION,
                        help='s a joint stays in its reversal window after (0: none; default: '
                        f'--params, else {DEFAULT_REVERSAL_HOLD:g})')
    parser.add_argument('--filter', type=arg.FILTER, dest='output_filter',
                        help='1/s: low-pass on the external torques for noisy velocities '
                        '(default: --params, else 0 = none)')
    parser.add_argument('--floor', type=arg.NON_NEGATIVE, default=FLOOR,
                        help=f'lowest suggested moving threshold (0: no floor; default {FLOOR:g})')
    parser.add_argument('--effort-sampling', choices=('instant', 'held'),
                        help='instant: efforts read at the stamp (sensor, current); held: '
                        'applied over the step ending at the stamp (simulator); default '
                        'instant')
    parser.add_argument('--hysteresis', type=arg.FRACTION,
                        help='fraction in [0, 1) (0: none; default 0.2)')
    parser.add_argument('--min-duration', type=arg.DURATION,
                        help='s (0: the first sample over a threshold; default 0.005)')
    parser.add_argument('--margin', type=arg.POSITIVE, default=1.5,
                        help='suggested threshold = margin x max |r| (default 1.5)')
    parser.add_argument('--out', type=arg.OUTPUT_FOLDER,
                        help='folder for the plot (default: no plot)')
    parser.add_argument('--json', action='store_true', help='print JSON')


def run(args):
    """Run ``rnea-ros observe``; return the exit code."""
    params = read_params(args.params) if args.params else {}
    urdf_xml = read_urdf(args.urdf)
    t, names, Q, QD, E = read_joint_states(args.bag, args.topic)
    fixed = parse_fixed(args.fixed, RobotModel.from_urdf_string(urdf_xml))
    result = observe(urdf_xml, t, names, Q, QD, E, params, gains=args.gains,
                     thresholds=args.thresholds, hysteresis=args.hysteresis,
                     min_duration=args.min_duration, margin=args.margin,
                     effort_sampling=args.effort_sampling,
                     reversal_thresholds=args.reversal_thresholds,
                     reversal_band=args.reversal_band, reversal_hold=args.reversal_hold,
                     floor=args.floor, output_filter=args.output_filter, fixed=fixed)
    path = plot(result, args.out) if args.out else None
    if args.json:
        out = summary(result)
        out['plot'] = path
        print(json.dumps(out, indent=2))
    else:
        print(report(result))
        if path:
            print(f'plot: {path}')
    return 0
