"""The demo: a simulated "real" robot, its nominal URDF, and the model identified from data.

    python -m rnea_ros.demo --out out/demo [--urdf robot.urdf] [--seed 1] [--free-running]

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
d. the same two experiments with the identified URDF and friction parameters.

It prints the before/after table and writes plots (drift, tracking error, predicted vs measured
efforts on the validation data) and summary.json into the output folder. Lock-step is the
default: every physics step waits for its command, so the figures do not depend on machine
load; ``--free-running`` runs in real time and says when its figures are meaningless.
"""
import argparse
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

from rnea_ros.demo import analysis
from rnea_ros.demo import report as demo_report, story
from rnea_ros.sim.sim_launch import DemoScenario
from rnea_ros.sim.trajectories import TrajectoryFile
import yaml

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEFAULT_SEED = 1
LOCK_STEP_TIMEOUT = 5.0     # wall seconds a lock-step waits for its command


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors and aliases (the ROS parameter-file parser rejects them)."""

    def ignore_aliases(self, data):
        """Write every repeated object out in full."""
        return True


class ProcessRunner:
    """Start ROS processes with the venv's python on one isolated domain; stop them all."""

    def __init__(self, folder, domain_id):
        """Prepare the environment (domain id, localhost discovery, this source tree)."""
        self.folder = folder
        self.env = dict(os.environ)
        self.env['ROS_DOMAIN_ID'] = str(domain_id)
        self.env.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
        self.env.setdefault('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
        self.env['PYTHONUNBUFFERED'] = '1'
        self.env['PYTHONPATH'] = os.pathsep.join(
            [SOURCE_ROOT] + [p for p in self.env.get('PYTHONPATH', '').split(os.pathsep) if p])
        self.processes = []

    def start(self, label, module, parameters):
        """Start ``python -m module`` with its parameters in a YAML file; return the Popen."""
        params_file = os.path.join(self.folder, 'params', label + '.yaml')
        os.makedirs(os.path.dirname(params_file), exist_ok=True)
        with open(params_file, 'w') as stream:
            plain = json.loads(json.dumps(parameters, default=lambda value: value.tolist()))
            yaml.dump({'/**': {'ros__parameters': plain}}, stream, Dumper=_PlainDumper)
        log_file = os.path.join(self.folder, 'logs', label + '.log')
        os.makedirs(os.path.dirname(log_file), exist_ok=True)
        with open(log_file, 'w') as log:
            process = subprocess.Popen(
                [sys.executable, '-m', module, '--ros-args', '--params-file', params_file],
                stdout=log, stderr=subprocess.STDOUT, env=self.env, cwd=self.folder)
        process.label = label
        process.log_file = log_file
        self.processes.append(process)
        return process

    def stop_all(self, grace=5.0):
        """Interrupt every running process (SIGINT), kill those still running after grace."""
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        deadline = time.monotonic() + grace
        for process in self.processes:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self.processes = []


class DemoMonitor:
    """The demo's own ROS node: reads the rnea node's /diagnostics, starts the simulator.

    Spins in a background thread on its own rclpy context (isolated domain).
    """

    def __init__(self, domain_id):
        """Start an rclpy context on ``domain_id`` with the subscription and the client."""
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rcl_interfaces.srv import SetParameters
        self._rclpy = rclpy
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=domain_id)
        self.node = rclpy.create_node('rnea_demo_monitor', context=self.context)
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_message, 10)
        self.set_parameters = self.node.create_client(SetParameters,
                                                      '/mujoco_sim/set_parameters')
        self.executor = rclpy.executors.SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.samples = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self):
        while not self._stop.is_set() and self.context.ok():
            self.executor.spin_once(timeout_sec=0.1)

    def _on_message(self, msg):
        for status in msg.status:
            if status.name.endswith(': rnea'):
                with self._lock:
                    self.samples.append({item.key: item.value for item in status.values})

    def take(self):
        """Return and forget the samples collected so far."""
        with self._lock:
            samples, self.samples = self.samples, []
        return samples

    def wait_until_commanding(self, mode, processes, timeout=60.0):
        """Wait for a diagnostics sample showing the node commanding with fresh inputs.

        For computed_torque the reference must be fresh too (so every link between the
        processes is discovered before the experiment starts). Raises PhaseFailed on timeout
        or when one of ``processes`` exits.
        """
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                latest = self.samples[-1] if self.samples else {}
            stale = latest.get('stale_inputs', 'unknown')
            if latest.get('commanding') == 'True' and latest.get('joints_ready') == 'True' and \
                    not (mode == 'computed_torque' and 'reference' in stale):
                return
            for process in processes:
                if process.poll() is not None:
                    raise PhaseFailed('{} exited early (code {}); see {}'.format(
                        process.label, process.returncode, process.log_file))
            time.sleep(0.1)
        raise PhaseFailed('the rnea node did not start commanding within {} s'.format(timeout))

    def unpause_simulator(self, timeout=10.0):
        """Set the simulator's ``paused`` parameter to false (PhaseFailed if impossible)."""
        from rcl_interfaces.msg import Parameter, ParameterType, ParameterValue
        from rcl_interfaces.srv import SetParameters
        if not self.set_parameters.wait_for_service(timeout_sec=timeout):
            raise PhaseFailed('the simulator offers no set_parameters service')
        request = SetParameters.Request(parameters=[Parameter(
            name='paused', value=ParameterValue(type=ParameterType.PARAMETER_BOOL,
                                                bool_value=False))])
        future = self.set_parameters.call_async(request)
        deadline = time.monotonic() + timeout
        while not future.done() and time.monotonic() < deadline:
            time.sleep(0.01)
        if not future.done() or not future.result().results[0].successful:
            raise PhaseFailed('could not unpause the simulator')

    def close(self):
        """Stop the thread and shut the context down."""
        self._stop.set()
        self._thread.join(timeout=2.0)
        self.executor.shutdown()
        self.node.destroy_node()
        self._rclpy.try_shutdown(context=self.context)


class PhaseFailed(RuntimeError):
    """A demo phase did not finish; the message names the logs to read."""


class Phase:
    """One experiment: label, rnea node mode (None: zero torque) and parameter overrides."""

    def __init__(self, label, mode, duration, sim=None, rnea=None, reference=None):
        """Store the experiment; the dicts override the scenario's process parameters."""
        self.label, self.mode, self.duration = label, mode, float(duration)
        self.sim, self.rnea, self.reference = dict(sim or {}), dict(rnea or {}), dict(
            reference or {})


def run_phase(runner, scenario, phase, lock_step, folder, monitor=None, timeout=None):
    """Run one :class:`Phase`; return (record, diagnostics figures).

    ``mode`` None runs the simulator alone (zero torque, as fast as possible); otherwise the rnea
    node runs in that mode (plus the reference publisher for computed_torque). The simulator
    starts paused and runs once the node reports (on /diagnostics) that it is commanding with
    fresh inputs.
    """
    label, mode = phase.label, phase.mode
    record_file = os.path.join(folder, 'records', label + '.npz')
    if os.path.exists(record_file):
        os.remove(record_file)
    controlled = mode is not None
    lock_step = lock_step and controlled
    sim_parameters = scenario.sim_parameters(
        duration=phase.duration, lock_step=lock_step, record_file=record_file,
        real_time_factor=1.0 if controlled else 0.0, wait_for_first_command=controlled,
        sync_reference=mode == 'computed_torque', paused=controlled)
    # A loaded machine can stall a process for a while: wait for it rather than step without
    # the command (each such step would count as a lock-step miss).
    sim_parameters['lock_step_timeout'] = LOCK_STEP_TIMEOUT
    sim_parameters.update(phase.sim)
    simulator = runner.start(label + '_mujoco_sim', 'rnea_ros.sim.mujoco_sim', sim_parameters)
    processes = [simulator]
    if controlled:
        parameters = scenario.rnea_parameters(mode)
        # The demo measures how far each model lets the arm drift: the joint limit guard would
        # stop the node once the arm, falling under the nominal URDF, passes a velocity limit
        # (and a lock-step simulator would then wait for commands that no longer come).
        parameters['joint_limit_guard'] = 'off'
        if lock_step:
            # Time is the simulator's: a stalled process must not make the node drop the
            # reference (desired_timeout) or stop commanding (joint_state_timeout) on the
            # steady clock; every joint state it gets is answered in simulated time.
            parameters.update(desired_timeout=2 * LOCK_STEP_TIMEOUT,
                              joint_state_timeout=2 * LOCK_STEP_TIMEOUT)
        parameters.update(phase.rnea)
        processes.append(runner.start(label + '_rnea', 'rnea_ros.node', parameters))
    if mode == 'computed_torque':
        parameters = scenario.reference_parameters(lock_step)
        parameters.update(phase.reference)
        processes.append(runner.start(label + '_reference', 'rnea_ros.sim.reference_trajectory',
                                      parameters))
    # Lock-step on a loaded machine may run far slower than real time: allow for it.
    timeout = timeout or 120.0 + 60.0 * phase.duration
    try:
        if controlled:
            monitor.wait_until_commanding(mode, processes, timeout=120.0)
            monitor.take()
            monitor.unpause_simulator()
        simulator.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        raise PhaseFailed('{}: the simulator did not finish within {} s; see the logs in {}'
                          .format(label, timeout, os.path.join(folder, 'logs'))) from None
    finally:
        runner.stop_all()
    if simulator.returncode != 0 or not os.path.exists(record_file):
        raise PhaseFailed('{}: the simulator failed (exit code {}); see {}'.format(
            label, simulator.returncode, simulator.log_file))
    samples = monitor.take() if monitor is not None else []
    return analysis.load_record(record_file), analysis.diagnostics_figures(samples)


def run_demo(folder, urdf_file=None, duration=10.0, lock_step=True, domain_id=None,
             plots=True, log=print, seed=DEFAULT_SEED, excitation_duration=30.0,
             gravity_duration=None, excitation_file=None, design_excitation=False):
    """Run the story (nominal, excitation, identify, identified); return the summary dict.

    ``duration``: simulated seconds of each tracking run (``gravity_duration``, default the
    same, of each gravity-compensation run); ``excitation_duration``: of the excitation that
    ``rnea-ros excite`` designs (or designed before: see :func:`story.excitation_trajectory`;
    ``design_excitation`` forces a new design), unless ``excitation_file`` gives one. The
    summary is also written as summary.json.
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

    def run(phase):
        log('[{}] {} ({:g} s simulated) ...'.format(
            len(records) + 1, phase.label, phase.duration))
        records[phase.label], diagnostics[phase.label] = run_phase(
            runner, scenario, phase, lock_step, folder, monitor)
    try:
        run(Phase('nominal_gravity', 'gravity_compensation', gravity_duration, sim=truth))
        run(Phase('zero_torque', None, gravity_duration, sim=truth))
        run(Phase('nominal_tracking', 'computed_torque', duration, sim=truth))
        trajectory_file = excitation_file
        if not trajectory_file:
            log('excitation design ({:g} s, rnea-ros excite) ...'.format(excitation_duration))
            trajectory_file, origin = story.excitation_trajectory(
                folder, scenario.urdf_file, excitation_duration, runner.env,
                design=design_excitation)
            log('excitation: {} ({})'.format(trajectory_file, origin))
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
                                                  validation, runner.env)
        identified = dict(parameters, urdf_file=urdf)
        run(Phase('identified_gravity', 'gravity_compensation', gravity_duration, sim=truth,
                  rnea=identified))
        run(Phase('identified_tracking', 'computed_torque', duration, sim=truth,
                  rnea=identified))
    finally:
        runner.stop_all()
        monitor.close()
    summary = demo_report.summarize(scenario, records, diagnostics, lock_step)
    summary.update({
        'perturbation': {'seed': seed, 'summary': perturbation.summary()},
        'excitation': {'file': trajectory_file, 'duration_s': trajectory.duration,
                       'bag': training},
        'identification': {'urdf': urdf, 'parameters': parameters, 'validation_bag': validation,
                           'report': report},
        'domain_id': domain_id, 'duration_s': duration, 'gravity_duration_s': gravity_duration,
    })
    nominal_model = story.model_of(scenario.urdf_file)
    identified_model = story.model_of(urdf, parameters)
    summary['validation'] = demo_report.validation_figures(
        records['nominal_tracking'], nominal_model, identified_model)
    summary['demo_wall_s'] = time.monotonic() - started
    if plots:
        summary['plots'] = demo_report.write_plots(folder, scenario, records, nominal_model,
                                                   identified_model)
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
    parser.add_argument('--excitation', default=None, metavar='YAML',
                        help='play this excitation trajectory instead of designing one')
    parser.add_argument('--design-excitation', action='store_true',
                        help='run rnea-ros excite even when a design for this URDF and '
                        'duration is at hand (out folder, or shipped for the panda)')
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
                           excitation_file=args.excitation,
                           design_excitation=args.design_excitation)
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
