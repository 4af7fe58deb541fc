"""Benchmark: the momentum observer with the IDENTIFIED model on the demo's MuJoCo arm (no ROS).

Issue 22's observer targets, measured in-process (:mod:`observer_identified` in test/):

1. the demo's "real" robot (seeded perturbation of the panda: inertias, a payload, MuJoCo
   viscous and Coulomb friction, rotor inertia; 1 kHz, lock-step computed torque) follows the
   shipped excitation (``config/demo_excitation_panda.yaml``, nominal URDF); the record goes
   through a rosbag2 and ``rnea-ros identify``'s load path and identification;
2. false alarms: ``--seconds`` (default 60) of computed-torque tracking with the identified
   model of each sinusoid of :data:`observer_identified.TRACKING` (the demo's 0.5 Hz push-scene
   swing and faster / wider ones); the library observer with the demo's settings (K 200 1/s,
   efforts held, thresholds 2 N m, hysteresis 0.2, 5 ms) over each record: collisions raised,
   the largest |r_j| per joint relative to its threshold and when it happened; the same with
   per-joint thresholds suggested by ``rnea-ros observe`` on the identification's own
   recording (the larger of ``--margin`` x its largest |r_j| and the model's Coulomb jump
   Fs+ + Fs-), and with the truth model (what a perfect identification with the model's
   friction law would give), and with the thresholds gated by velocity reversals that
   ``rnea-ros observe`` suggests (moving: ``--margin`` x the largest |r_j| outside the
   joint's reversal windows, at least 0.2 N m; reversal: the one-threshold suggestion);
   alarms within the first 0.1 s (the sinusoid's acceleration step at t = 0) are counted
   apart;
3. pushes of 10, 30 and 50 N on panda_link1 ... panda_link7 and panda_hand (a body fixed to
   panda_link7 beyond its flange) during the demo's sinusoid, at its
   fastest instant (1.5 s) for 0.3 s: detection delay and false alarms with the demo's
   thresholds and with the gated ones, joint-torque error from 50 ms on relative to
   max(5 %, 0.2 N m), the wrench error at the last link (panda_link7).

``--noise VELOCITY EFFORT`` adds white noise to what the observer reads (the tracking and push
records, and the excitation the thresholds are tuned on); ``--filter KF`` sets the observer's
output low-pass (1/s; the answer to velocity noise); ``--push-start 1.0`` pushes at a velocity
reversal instead of the fastest instant.

Usage: python benchmarks/bench_observer_identified.py [--seconds 60] [--seed 1]
       [--friction auto] [--margin 1.5] [--noise VELOCITY EFFORT] [--filter 0]
       [--push-start 1.5]
       [--no-pushes] [--no-quiet]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..', 'test'))

import observer_identified as oi  # noqa: E402,I100
from rnea_ros.demo import scenes  # noqa: E402


def short(name):
    """Return a joint name without its robot prefix (panda_finger_joint1 -> finger_joint1)."""
    return name.split('_', 1)[-1]


def quiet_table(arm, models, seconds, thresholds, noise=None, output_filter=0.0, log=print):
    """Print the free-motion runs: collisions and largest |r_j| / threshold per model.

    ``noise``: (seed, velocity sigma, effort sigma) on what the observer reads, or None;
    ``output_filter``: the observer's low-pass (1/s, 0 none).
    """
    names = list(models['identified'].joint_names)
    log(f'{"run":<22}{"model":<12}{"thresholds":<12}{"alarms":>7}{"after 0.1 s":>12}  '
        'first alarms (t s: joints)')
    for label, frequency, amplitude in oi.TRACKING:
        started = time.monotonic()
        record = arm.track(models['identified'], arm.sinusoid(frequency, amplitude), seconds)
        sim_s = time.monotonic() - started
        for name, model in models.items():
            if name != 'identified':
                record_m = arm.track(model, arm.sinusoid(frequency, amplitude), seconds)
            else:
                record_m = record
            if noise is not None:
                record_m = oi.with_sensor_noise(record_m, *noise)
            for rule, (th, reversal) in thresholds.items():
                if name != 'identified' and rule != 'demo':
                    continue
                estimate = oi.observe(record_m, model, arm.last_link, thresholds=th,
                                      reversal_thresholds=reversal,
                                      output_filter=output_filter)
                figures = oi.quiet_figures(record_m, estimate, model, names, th, reversal)
                alarms = '; '.join(f'{t:.3f}: {",".join(j)}' for t, j in zip(
                    figures['alarm_times'][:3], figures['alarm_joints'][:3]))
                log(f'{label:<22}{name:<12}{rule:<12}{figures["false_alarms"]:>7}'
                    f'{figures["false_alarms_after_start"]:>12}  {alarms}')
                log('    max |r|/threshold: ' + ', '.join(
                    f'{short(j)} {figures["max_ratio"][j]:.2f} ({figures["max_residual"][j]:.2f}'
                    f' at {figures["max_time"][j]:.2f} s)' for j in names))
                if reversal is not None:
                    log('    moving (outside reversal windows) max |r|/threshold: ' + ', '.join(
                        f'{short(j)} {figures["max_ratio_moving"][j]:.2f}' for j in names))
                log(f'    max joint speed {figures["max_speed"]:.2f} rad/s over '
                    f'{figures["seconds"]:.0f} s; in collision '
                    f'{100 * figures["alarm_fraction"]:.1f} % of the time')
        log(f'    (simulated {seconds:g} s in {sim_s:.1f} s)')


def push_table(arm, model, thresholds, noise=None, start=1.5, output_filter=0.0, log=print):
    """Print the pushes of 10, 30 and 50 N on each link of :data:`oi.PUSH_POINTS`.

    ``thresholds``: rule -> (thresholds, reversal thresholds or None); the detection delay
    and false alarms of each rule, the torque and wrench figures (the same for all).
    ``noise``, ``output_filter``: as :func:`quiet_table`; ``start``: when the pushes begin (s).
    """
    log(f'{"link":<13}{"F N":>5}{"|J^T f| max":>12}'
        + ''.join(f'{rule + " ms":>12}{"alarms":>7}' for rule in thresholds)
        + f'{"torque err/bound":>18}{"worst joint":>14}{"wrench f, m err":>18}')
    for link in oi.PUSH_POINTS:
        for magnitude in (10.0, 30.0, 50.0):
            runs = {rule: oi.push_run(arm, model, link, magnitude, start=start,
                                      thresholds=th, reversal_thresholds=reversal,
                                      noise=noise, output_filter=output_filter)
                    for rule, (th, reversal) in thresholds.items()}
            f = next(iter(runs.values()))
            detection = ''
            for g in runs.values():
                delay = g['detection_delay_s']
                detection += (f'{"missed" if delay is None else f"{1e3 * delay:.0f}":>12}'
                              f'{g["false_alarms"]:>7}')
            torque = f['torque']
            ratios = [e / max(scenes.TORQUE_RELATIVE * a, scenes.TORQUE_ABSOLUTE)
                      for e, a in zip(torque['max_error'], torque['max_applied'])]
            judged = [k for k, j in enumerate(torque['joints']) if j in torque['judged']]
            worst = max(judged, key=lambda k: ratios[k])
            wrench = f.get('wrench')
            log(f'{link:<13}{magnitude:>5.0f}{f["applied_max"]:>12.2f}{detection}'
                f'{torque["worst_error_over_bound"]:>18.2f}'
                f'{short(torque["joints"][worst]):>14}'
                + (f'{100 * wrench["force_relative"]:>10.1f} %, '
                   f'{100 * wrench["moment_relative"]:.1f} %' if wrench else ''))


def main(argv=None):
    """Run the benchmark and print its tables."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--seconds', type=float, default=60.0,
                        help='simulated seconds of each free-motion run (default 60)')
    parser.add_argument('--seed', type=int, default=oi.SEED, help='perturbation seed')
    parser.add_argument('--friction', default='auto',
                        choices=('auto', 'coulomb', 'asymmetric', 'tanh'),
                        help="rnea-ros identify's --friction (default auto, as identify)")
    parser.add_argument('--margin', type=float, default=1.5,
                        help='suggested threshold >= margin x max |r| (rnea-ros observe)')
    parser.add_argument('--noise', nargs=2, type=float, metavar=('VELOCITY', 'EFFORT'),
                        help='white noise (standard deviations, rad/s and N m) on the '
                        'velocities and efforts the observer reads (and rnea-ros observe tunes '
                        'on); the identification stays on clean data')
    parser.add_argument('--filter', type=float, default=0.0, dest='output_filter',
                        help="the observer's output low-pass K_f in 1/s (default 0: none)")
    parser.add_argument('--push-start', type=float, default=1.5,
                        help="s: 1.5 the swing's fastest instant (default), 1.0 or 2.0 a "
                        'velocity reversal of every joint')
    parser.add_argument('--no-pushes', dest='pushes', action='store_false')
    parser.add_argument('--no-quiet', dest='quiet', action='store_false')
    args = parser.parse_args(argv)
    started = time.monotonic()
    arm = oi.Arm(args.seed)
    excitation = arm.excitation()
    model, result, params, urdf = oi.identify_model(arm, excitation, args.friction)
    print(f'seed {args.seed}: identified ({result.friction_model.name} friction, moving '
          f'joints {[short(model.joint_names[j]) for j in result.moving]}) in '
          f'{time.monotonic() - started:.0f} s')
    fit = oi.effort_residual(excitation, model)
    print('identified model, effort residual RMS on its excitation (N m): '
          + ', '.join(f'{short(j)} {v:.3f}' for j, v in zip(model.joint_names, fit)))
    noise = None if args.noise is None else (args.seed + 100, *args.noise)
    tuned_on = excitation if noise is None else oi.with_sensor_noise(excitation, *noise)
    advice = oi.suggested_thresholds(tuned_on, urdf, params, args.margin, args.output_filter)
    suggested = advice['suggested']
    print(f'thresholds suggested by rnea-ros observe on the excitation (the larger of '
          f'{args.margin:g} x max |r| and the Coulomb jump): '
          + ', '.join(f'{short(j)} {v:.2f}' for j, v in zip(model.joint_names, suggested)))
    print('gated by velocity reversals (|qd| < 0.1 rad/s and 0.02 s after), moving / '
          'reversal: ' + ', '.join(
              f'{short(j)} {m:.2f} / {r:.2f}' for j, m, r in zip(
                  model.joint_names, advice['suggested_moving'],
                  advice['suggested_reversal'])))
    rules = {'demo': (scenes.COLLISION_THRESHOLD, None), 'suggested': (suggested, None),
             'gated': (advice['suggested_moving'], advice['suggested_reversal'])}
    if args.quiet:
        quiet_table(arm, {'identified': model, 'truth': arm.perturbation.truth_model()},
                    args.seconds, rules, noise, args.output_filter)
    if args.pushes:
        push_table(arm, model, {'demo': rules['demo'], 'gated': rules['gated']}, noise,
                   args.push_start, args.output_filter)
    print(f'benchmark took {time.monotonic() - started:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
