"""The demo: a simulated "real" robot, its nominal URDF, and the model identified from data.

    python -m rnea_ros.demo --out out/demo [--urdf robot.urdf] [--seed 1] [--free-running]
        [--excitation-file YAML] [--no-scenes]

The MuJoCo robot differs from the URDF the rnea node uses by a seeded, printed perturbation
(:mod:`rnea_ros.demo.perturbation`: masses, centres of mass, inertias, a payload, joint friction,
rotor inertia; joint limits enforced). Starting the simulator (``mujoco_sim``), the rnea node
and the reference publisher as separate processes on an isolated ROS_DOMAIN_ID, the demo runs
the story a user lives:

a. gravity compensation and computed-torque tracking of a sinusoid with the NOMINAL URDF
   (plus zero torque, for contrast);
b. an excitation run (``rnea-ros excite`` designs it, computed torque follows it), written to a
   rosbag2 (mcap) as is the tracking run (validation data);
c. ``rnea-ros identify`` on the bags;
d. the same two experiments with the identified URDF and friction parameters;
e. the scenes (:mod:`rnea_ros.demo.scenes`): a push the node's momentum observer must detect
   and measure (identified model, then the nominal URDF for its false alarms), and a payload
   that appears on the last link, which the node estimates and commits.

It prints the before/after table and writes plots (drift, tracking error, predicted vs measured
efforts on the validation data) and summary.json into the output folder. Lock-step is the
default: every physics step waits for its command, so the figures do not depend on machine
load; ``--free-running`` runs in real time and says when its figures are meaningless.
"""
import argparse
import json
import os
import random
import sys
import time

from rnea_ros.demo import report as demo_report, scene_runs, story
from rnea_ros.demo.processes import DemoMonitor, Phase, PhaseFailed, ProcessRunner, run_phase
from rnea_ros.sim.sim_launch import DemoScenario
from rnea_ros.sim.trajectories import TrajectoryFile

DEFAULT_SEED = 1


def run_demo(folder, urdf_file=None, duration=10.0, lock_step=True, domain_id=None,
             plots=True, log=print, seed=DEFAULT_SEED, excitation_duration=30.0,
             gravity_duration=None, excitation_file=None, scenes=True, identify_friction=None):
    """Run the story (nominal, excitation, identify, identified, scenes); return the summary.

    ``duration``: simulated seconds of each tracking run (``gravity_duration``, default the
    same, of each gravity-compensation run); ``excitation_duration``: of the excitation that
    ``rnea-ros excite`` designs, unless ``excitation_file`` gives one; ``scenes``: run the push
    and grasp scenes (:mod:`rnea_ros.demo.scene_runs`) after identification;
    ``identify_friction``: identify's ``--friction`` (None: its default). The summary is also
    written as summary.json.
    """
    folder = os.path.abspath(folder)
    os.makedirs(folder, exist_ok=True)
    scenario = DemoScenario(urdf_file)
    gravity_duration = gravity_duration or duration
    domain_id = domain_id if domain_id is not None else random.randint(40, 99)
    runner = ProcessRunner(folder, domain_id)
    log('robot: {} ({} joints), ROS_DOMAIN_ID={}, {} mode'.format(
        scenario.urdf_file, len(scenario.joint_names), domain_id,
        'lock-step' if lock_step else 'free-running real-time'))
    perturbation, truth = story.prepare_robot(folder, scenario, seed)
    log(perturbation.summary())
    monitor = DemoMonitor(domain_id)
    started = time.monotonic()
    records, diagnostics = {}, {}
    scene_results = {}
    design_s = None

    def run(phase):
        log('[{}] {} ({:g} s simulated) ...'.format(
            len(records) + 1, phase.label, phase.duration))
        records[phase.label], diagnostics[phase.label] = run_phase(
            runner, scenario, phase, lock_step, folder, monitor)
        return phase
    try:
        run(Phase('nominal_gravity', 'gravity_compensation', gravity_duration, sim=truth))
        run(Phase('zero_torque', None, gravity_duration, sim=truth))
        run(Phase('nominal_tracking', 'computed_torque', duration, sim=truth))
        trajectory_file = excitation_file
        if not trajectory_file:
            log('excitation design ({:g} s, rnea-ros excite) ...'.format(excitation_duration))
            trajectory_file, design_s = story.excitation_trajectory(
                folder, scenario.urdf_file, excitation_duration, runner.env)
            log('excitation: {} (designed in {:.0f} s)'.format(trajectory_file, design_s))
        trajectory_file = os.path.abspath(trajectory_file)
        trajectory = TrajectoryFile(trajectory_file)
        start = dict(zip(trajectory.joints, trajectory(0.0)[0]))
        initial = [start.get(name, value) for name, value in zip(scenario.joint_names,
                                                                 scenario.pose)]
        run(Phase('excitation', 'computed_torque', trajectory.duration + 1.0,
                  sim=dict(truth, initial_positions=initial),
                  reference={'trajectory_file': trajectory_file}))
        bags = os.path.join(folder, 'identification')
        training = story.record_to_bag(records['excitation'], os.path.join(bags, 'excitation'))
        validation = story.record_to_bag(records['nominal_tracking'],
                                         os.path.join(bags, 'validation'))
        log('identifying: rnea-ros identify {} --validate {} ...'.format(training, validation))
        urdf, parameters, report = story.identify(folder, scenario.urdf_file, [training],
                                                  validation, runner.env,
                                                  friction=identify_friction)
        identified = dict(parameters, urdf_file=urdf)
        run(Phase('identified_gravity', 'gravity_compensation', gravity_duration, sim=truth,
                  rnea=identified))
        run(Phase('identified_tracking', 'computed_torque', duration, sim=truth,
                  rnea=identified))
        if scenes:
            log('collision thresholds: rnea-ros observe {} (identified model) ...'.format(
                training))
            thresholds = story.tune_thresholds(folder, urdf, training, runner.env)
            log('  moving {}, in velocity reversals {} N m'.format(
                [round(v, 2) for v in thresholds['moving']],
                [round(v, 2) for v in thresholds['reversal']]))
            scene_results = scene_runs.run_scenes(
                run, scenario, perturbation.payload.link, truth, identified, gravity_duration,
                log, thresholds)
    finally:
        runner.stop_all()
        monitor.close()
    summary = demo_report.summarize(scenario, records, diagnostics, lock_step)
    summary.update({
        'perturbation': {'seed': seed, 'summary': perturbation.summary()},
        'excitation': {'file': trajectory_file, 'duration_s': trajectory.duration,
                       'bag': training, 'designed': design_s is not None,
                       'design_wall_s': design_s},
        'identification': {'urdf': urdf, 'parameters': parameters, 'validation_bag': validation,
                           'friction': identify_friction or 'default',
                           'report': report},
        'domain_id': domain_id, 'duration_s': duration, 'gravity_duration_s': gravity_duration,
    })
    nominal_model = story.model_of(scenario.urdf_file)
    identified_model = story.model_of(urdf, parameters)
    summary['validation'] = demo_report.validation_figures(
        records['nominal_tracking'], nominal_model, identified_model)
    if scenes:
        summary['scenes'] = scene_runs.scene_summary(
            scenario, records, scene_results, summary, nominal_model, identified_model, folder)
    summary['demo_wall_s'] = time.monotonic() - started
    if plots:
        summary['plots'] = demo_report.write_plots(folder, scenario, records, nominal_model,
                                                   identified_model)
        if scenes:
            summary['plots'].update(scene_runs.write_plots(
                folder, scenario, records, scene_results, summary['scenes']))
    with open(os.path.join(folder, 'summary.json'), 'w') as stream:
        json.dump(summary, stream, indent=2)
    return summary


def parse_arguments(argv):
    """Parse the demo's command line."""
    parser = argparse.ArgumentParser(prog='python -m rnea_ros.demo',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', default='out/demo', help='output folder (plots, logs, records)')
    parser.add_argument('--urdf', default=None, help='nominal URDF (default: example-robot-data '
                        'panda)')
    parser.add_argument('--duration', type=float, default=10.0,
                        help='simulated seconds of each tracking run (default 10)')
    parser.add_argument('--gravity-duration', type=float, default=5.0,
                        help='simulated seconds of each gravity-compensation run (default 5)')
    parser.add_argument('--excitation-duration', type=float, default=30.0,
                        help='seconds of the excitation trajectory (default 30)')
    parser.add_argument('--excitation-file', '--excitation', dest='excitation', default=None,
                        metavar='YAML', help='play this excitation trajectory instead of '
                        'designing one with rnea-ros excite (e.g. '
                        'config/demo_excitation_panda.yaml)')
    parser.add_argument('--identify-friction', default=None,
                        choices=('auto', 'coulomb', 'asymmetric', 'tanh'),
                        help='friction model rnea-ros identify fits (its --friction; default: '
                        'its own default, auto)')
    parser.add_argument('--no-scenes', dest='scenes', action='store_false',
                        help='stop after identification (no push and grasp scenes)')
    parser.add_argument('--seed', type=int, default=DEFAULT_SEED,
                        help='seed of the robot perturbation (default {})'.format(DEFAULT_SEED))
    timing = parser.add_mutually_exclusive_group()
    timing.add_argument('--lock-step', dest='lock_step', action='store_true', default=True,
                        help='every physics step waits for its command (the default: the '
                        'figures do not depend on machine load)')
    timing.add_argument('--free-running', dest='lock_step', action='store_false',
                        help='simulate in real time; figures are flagged when the real-time '
                        'factor or command age makes them meaningless')
    parser.add_argument('--domain-id', type=int, default=None,
                        help='ROS_DOMAIN_ID to use (default: random 40..99)')
    return parser.parse_args(argv)


def main(argv=None):
    """Run the demo and print the figures; return 0 when the targets are met."""
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    try:
        summary = run_demo(args.out, args.urdf, args.duration, args.lock_step, args.domain_id,
                           seed=args.seed, excitation_duration=args.excitation_duration,
                           gravity_duration=args.gravity_duration,
                           excitation_file=args.excitation, scenes=args.scenes,
                           identify_friction=args.identify_friction)
    except (PhaseFailed, story.StoryFailed, ValueError) as error:
        print('demo failed: {}'.format(error), file=sys.stderr)
        return 1
    print(demo_report.format_summary(summary))
    print('summary: {}  (demo took {:.0f} s)'.format(
        os.path.join(os.path.abspath(args.out), 'summary.json'), summary['demo_wall_s']))
    verdict = summary['verdict']
    if not verdict['meaningful']:
        return 0
    return 0 if verdict['met'] else 2


if __name__ == '__main__':
    sys.exit(main())
