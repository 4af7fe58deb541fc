"""``rnea-ros identify`` and ``rnea-ros excite``: from recordings to an identified URDF.

``rnea-ros identify BAG [BAG ...] --urdf NOMINAL.urdf --out IDENTIFIED.urdf
[--params-out PARAMS.yaml] [--topic /joint_states] [--validate BAG] [--report DIR] [--json]``

A pipeline of stages, a module each:

1. **Filter choice** (:mod:`rnea_ros.analysis.cutoff`): the start of the training bags is
   conditioned at a ladder of cutoffs relative to the motion band; the one whose fit predicts
   held-out stretches best is used (``--cutoff HZ`` or ``--window N`` override it).
2. **Conditioning** (:mod:`rnea_ros.analysis.conditioning`, :mod:`rnea_ros.analysis.signals`):
   the bags are read in chunks, efforts multiplied by ``--effort-scale``, logger duplicates
   dropped, wrapped angles undone, a uniform grid, zero-phase low-pass velocities and their
   derivative, decimation; each block goes into the fit's sums and, conditioned a second
   time with the validation filter, into the validation sums; nothing is kept (an hour at
   1 kHz fits like 30 s).  Model joints the recording lacks are held at 0 or at
   ``--fixed joint=value``.
3. **Accumulating** (:mod:`rnea_ros.analysis.accumulator`): per-joint normal equations per
   held-out bin, per recording when there are 2 to MAX_FOLDS of them, measured and with
   parallel filtering at the chosen cutoff (every column and the effort alike), and per
   recording the sums that give each recording its own effort offsets.
4. **Fitting and choosing the model** (:mod:`rnea_ros.analysis.identification`,
   :mod:`rnea_ros.analysis.estimation`, :mod:`rnea_ros.analysis.consistency`,
   :mod:`rnea_ros.analysis.friction_models`): weighted least squares with the nominal values
   as a prior, per candidate friction model (``--friction``, default ``auto``: chosen by
   held-out prediction over every row, slow and resting ones included; then the chosen one
   with a joint torque sensor's crosstalk from the bending moments, :mod:`rnea_ros.core.sensor`,
   kept only when it predicts held-out data better; with two or more recordings, see
   ``--crosstalk``); the pull toward the nominal values raised (per joint first) until no
   joint predicts held-out data worse than the nominal model; then a physically consistent
   full set.
5. **Comparing** (:mod:`rnea_ros.analysis.comparison`): identified against nominal per joint
   on held-out data (``--validate`` when given); a joint worse means nothing is written and
   exit status 3 (:data:`REFUSED`) unless ``--force``.  An effort sign opposite to the URDF's
   is detected and the ``--effort-scale`` that fixes it named.
6. **Writing** (:mod:`rnea_ros.analysis.report`, :mod:`rnea_ros.analysis.output`):
   IDENTIFIED.urdf and PARAMS.yaml (the node's friction, offset and armature parameters and
   the friction law, for ``params_file:=``), each to a temporary file renamed into place,
   only after everything succeeded; the report (text or ``--json``; plots into
   ``--report DIR``).

The nominal model includes the URDF's ``<dynamics damping friction>``.  Bad input (no efforts,
too few samples, data that excites no joint, a recording given twice or validated on) ends
with a message and exit status 2; weakly excited data is identified with a warning.

``rnea-ros excite --urdf U --duration 30 --out traj.yaml [--joints ...] [--seed N]`` designs an
excitation trajectory (:mod:`rnea_ros.analysis.excitation`).
"""

import json
import os
import sys

import numpy as np

from rnea_ros.analysis import arguments as arg
from rnea_ros.analysis import cutoff
from rnea_ros.analysis.comparison import (not_worse, opposite_sign, other_units,
                                          parse_effort_scale, REFUSED, verdict_lines)
from rnea_ros.analysis.conditioning import (  # noqa: F401 - the stages, importable from here
    Excerpt, filter_choice, load_recordings, load_samples, parse_fixed, Progress,
    read_recordings, Samples)
from rnea_ros.analysis.friction_models import FAMILIES
from rnea_ros.analysis.identification import Accumulator, identify_accumulated
from rnea_ros.analysis.output import identified_urdf, node_parameters, write_atomic
from rnea_ros.analysis.recordings import same_recording
from rnea_ros.analysis.report import plot, residual_rms, summarise, text_report  # noqa: F401
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import inertial_parameters, joint_parameters

MAX_FOLDS = 8      # up to this many training recordings, each is held out in turn
MIN_VALIDATION = 50     # samples of a --validate recording (as of a training one)

CROSSTALK_MODES = ('auto', 'always', 'off')


def crosstalk_tried(mode, recordings):
    """Return whether identify tries the sensor crosstalk candidate (``--crosstalk``).

    'auto' tries it with two or more training recordings: held-out stretches of one motion do
    not tell a crosstalk coefficient from the inertial parameters it trades with (on the Kinova
    Gen3's run 5 alone the stretches asked for it, 19 % better, and the other runs then
    predicted joint 3 1.4 times worse); another recording is another motion.
    """
    if mode not in CROSSTALK_MODES:
        raise ValueError(f'--crosstalk {mode!r}: give one of {", ".join(CROSSTALK_MODES)}')
    return mode == 'always' or (mode == 'auto' and recordings >= 2)


def check_recordings(bags, validate=None):
    """Raise ValueError when a recording is given twice or ``validate`` is a training one.

    Each training recording counts once (with several, each is held out in turn: a copy in
    the fit would not be held out), and validation is on a recording the fit did not see.
    """
    for i, bag in enumerate(bags):
        for other in bags[:i]:
            if same_recording(bag, other):
                raise ValueError(f'BAG {bag!r} is given twice ({other!r} names the same '
                                 'recording): give each training recording once')
    if validate is not None:
        for bag in bags:
            if same_recording(validate, bag):
                raise ValueError(f'--validate {validate!r} is the training recording {bag!r}: '
                                 'validate on a recording the fit does not see')


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
    check_recordings(args.bags, args.validate)
    fixed = parse_fixed(args.fixed, model)
    scale = parse_effort_scale(getattr(args, 'effort_scale', None), model)
    friction = getattr(args, 'friction', 'auto')
    cut, choice = filter_choice(args, model, fixed, scale)
    f_v = choice['validation_hz']
    parallel = float(cut) if cut and choice.get('parallel') else None
    crosstalk = crosstalk_tried(getattr(args, 'crosstalk', 'auto'), len(args.bags))
    train = Accumulator(model, friction, args.band, parallel=parallel, crosstalk=crosstalk)
    check = Accumulator(model, train.candidates, args.band, crosstalk=crosstalk)
    folds = None
    if 2 <= len(args.bags) <= MAX_FOLDS:     # each recording held out in turn
        folds = [(Accumulator(model, train.candidates, args.band, parallel=parallel,
                              crosstalk=crosstalk),
                  Accumulator(model, train.candidates, args.band, crosstalk=crosstalk))
                 for _ in args.bags]
    shown = Excerpt() if args.report else None
    loaded = read_recordings(args.bags, model, args.topic, window=args.window,
                             cutoff=cut, fixed=fixed, effort_scale=scale,
                             method='chosen' if choice.get('candidates') else None,
                             sinks=[train.add] + ([shown.add] if shown else []),
                             check=(f_v, [check.add]),
                             bag_sinks=folds and [([f.add], [k.add]) for f, k in folds])
    result = identify_accumulated(train, prior=args.prior, check=check, folds=folds)
    validation, checked, shown_check = None, None, None
    if args.validate:
        validation = Accumulator(model, [result.friction_model], args.band)
        shown_check = Excerpt() if args.report else None
        checked = read_recordings([args.validate], model, args.topic, fixed=fixed, cutoff=f_v,
                                  method='validation', effort_scale=scale,
                                  sinks=[validation.add]
                                  + ([shown_check.add] if shown_check else []))
        if validation.samples < MIN_VALIDATION:
            raise ValueError(f'--validate {args.validate!r}: {validation.samples} samples after '
                             f'cleaning; validation needs at least {MIN_VALIDATION}')
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
    for warning in (opposite_sign(model, check, x_nom, result.moving),
                    other_units(model, check, x_nom, result.moving,
                                [n for n, k in scale.items() if k != 1.0])):
        if warning:
            summary['warnings'].append(warning)
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
    parser.add_argument('bags', nargs='+', metavar='BAG', type=arg.RECORDING,
                        help='rosbag2 recordings (training)')
    parser.add_argument('--urdf', required=True, type=arg.URDF, help='nominal URDF')
    parser.add_argument('--out', required=True, type=arg.OUTPUT_FILE,
                        help='identified URDF to write')
    parser.add_argument('--params-out', type=arg.OUTPUT_FILE,
                        help='node parameter YAML (friction, armature)')
    parser.add_argument('--topic', default='/joint_states', type=arg.TOPIC,
                        help='JointState topic')
    parser.add_argument('--validate', metavar='BAG', type=arg.RECORDING,
                        help='recording for validation')
    parser.add_argument('--report', metavar='DIR', type=arg.OUTPUT_FOLDER,
                        help='folder for plots and identify.json')
    parser.add_argument('--band', type=arg.NON_NEGATIVE, default=0.05,
                        help='|qd| below which a joint equation is left out (stick-slip), rad/s '
                        '(0: keep every equation)')
    parser.add_argument('--friction', default='auto',
                        choices=('auto',) + FAMILIES,
                        help='friction model: auto (chosen by held-out prediction error, the '
                        'default), or one of {} (README: Identify the real robot)'.format(
                            ', '.join(FAMILIES)))
    parser.add_argument('--crosstalk', default='auto', choices=CROSSTALK_MODES,
                        help='joint torque sensor crosstalk from the bending moments: the chosen '
                        'friction model is also fitted with it and it is kept only when it '
                        'predicts held-out data better; auto (default): tried with 2 or more '
                        'training recordings, always: with one too, off: never')
    parser.add_argument('--prior', type=arg.PRIOR, default=1.0,
                        help='weight of the pull toward the nominal parameters (default 1)')
    parser.add_argument('--cutoff', type=arg.CUTOFF, metavar='HZ',
                        help='low-pass cutoff for velocities and accelerations (default: '
                             'estimated per joint from the recording, and printed)')
    parser.add_argument('--window', type=arg.WINDOW, metavar='N',
                        help='instead of the low-pass: Savitzky-Golay derivative over N >= 3 '
                             'samples (the earlier default was 21)')
    arg.add_fixed(parser)
    parser.add_argument('--json', action='store_true', help='print JSON')
    parser.add_argument('--effort-scale', nargs='*', metavar='[JOINT=]K', type=arg.SCALE,
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
    parser.add_argument('--urdf', required=True, type=arg.URDF, help='URDF of the robot')
    parser.add_argument('--duration', type=arg.POSITIVE, default=30.0,
                        help='seconds (default 30)')
    parser.add_argument('--out', required=True, type=arg.OUTPUT_FILE,
                        help='trajectory YAML to write')
    parser.add_argument('--joints', nargs='*', type=arg.NAME,
                        help='joints to excite (default: all moving)')
    parser.add_argument('--seed', type=arg.NON_NEGATIVE_INT, default=0,
                        help='random seed, >= 0 (default 0)')
    parser.add_argument('--harmonics', type=arg.HARMONICS, default=5,
                        help='harmonics, >= 2 (default 5)')
    parser.add_argument('--base-frequency', type=arg.POSITIVE,
                        help='Hz (default: periods of about 10 s fitting the duration)')
    parser.add_argument('--restarts', type=arg.POSITIVE_INT, default=16,
                        help='random coefficient sets tried first (default 16)')
    parser.add_argument('--iterations', type=arg.NON_NEGATIVE_INT, default=10,
                        help='L-BFGS-B iterations refining the best (0: none; default 10)')
