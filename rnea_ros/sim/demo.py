"""The demo: a MuJoCo-simulated robot held against gravity and driven along a trajectory.

    python -m rnea_ros.sim.demo --out out/demo [--urdf robot.urdf] [--duration 10] [--lock-step]

Starts the simulator (``mujoco_sim``), the rnea node and the reference publisher as separate
processes on an isolated ROS_DOMAIN_ID and runs three experiments on the panda from
example-robot-data (or any URDF):

1. gravity compensation from a non-trivial pose (rnea node, mode gravity_compensation);
2. the same pose with zero torque, for contrast (the arm falls);
3. computed-torque tracking of a sinusoid per joint (rnea node, mode computed_torque).

It prints drift, tracking errors, command rate and compute time per cycle, and writes PNG plots
(reference vs actual positions, efforts, drift) and summary.json into the output folder.
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

import numpy as np
from rnea_ros.sim import demo_analysis as analysis
from rnea_ros.sim.sim_launch import DemoScenario
import yaml

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GRAVITY_TARGET = 1e-3       # rad: max joint drift under gravity compensation
TRACKING_TARGET = 1e-3      # rad: RMS tracking error per joint


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
            yaml.safe_dump({'/**': {'ros__parameters': parameters}}, stream)
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


def run_phase(runner, scenario, label, mode, duration, lock_step, folder, monitor=None,
              real_time_factor=1.0, timeout=120.0):
    """Run one experiment; return (record, diagnostics figures).

    ``mode`` None runs the simulator alone (zero torque); otherwise the rnea node runs in that
    mode (plus the reference publisher for computed_torque). The simulator starts paused and
    runs once the node reports (on /diagnostics) that it is commanding with fresh inputs.
    """
    record_file = os.path.join(folder, 'records', label + '.npz')
    if os.path.exists(record_file):
        os.remove(record_file)
    controlled = mode is not None
    sim_parameters = scenario.sim_parameters(
        duration=duration, lock_step=lock_step, record_file=record_file,
        real_time_factor=real_time_factor, wait_for_first_command=controlled,
        sync_reference=mode == 'computed_torque', paused=controlled)
    simulator = runner.start(label + '_mujoco_sim', 'rnea_ros.sim.mujoco_sim', sim_parameters)
    processes = [simulator]
    if controlled:
        processes.append(runner.start(label + '_rnea', 'rnea_ros.node',
                                      scenario.rnea_parameters(mode)))
    if mode == 'computed_torque':
        processes.append(runner.start(label + '_reference', 'rnea_ros.sim.reference_trajectory',
                                      scenario.reference_parameters(lock_step)))
    try:
        if controlled:
            monitor.wait_until_commanding(mode, processes)
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


def run_demo(folder, urdf_file=None, duration=10.0, lock_step=False, domain_id=None,
             plots=True, log=print):
    """Run the three experiments and return the summary dict (also written as summary.json)."""
    folder = os.path.abspath(folder)
    os.makedirs(folder, exist_ok=True)
    scenario = DemoScenario(urdf_file)
    domain_id = domain_id if domain_id is not None else random.randint(40, 99)
    runner = ProcessRunner(folder, domain_id)
    log('robot: {} ({} joints), ROS_DOMAIN_ID={}, {} mode, {:.0f} s per experiment'.format(
        scenario.urdf_file, len(scenario.joint_names), domain_id,
        'lock-step' if lock_step else 'free-running real-time', duration))
    monitor = DemoMonitor(domain_id)
    started = time.monotonic()
    try:
        log('[1/3] gravity compensation ...')
        held, held_diag = run_phase(runner, scenario, 'gravity_compensation',
                                    'gravity_compensation', duration, lock_step, folder,
                                    monitor)
        log('[2/3] zero torque (contrast) ...')
        fallen, _ = run_phase(runner, scenario, 'zero_torque', None, duration, False, folder,
                              real_time_factor=0.0)
        log('[3/3] computed-torque tracking ...')
        tracked, tracked_diag = run_phase(runner, scenario, 'computed_torque',
                                          'computed_torque', duration, lock_step, folder,
                                          monitor)
    finally:
        runner.stop_all()
        monitor.close()
    summary = summarize(scenario, held, held_diag, fallen, tracked, tracked_diag)
    summary.update({'lock_step': lock_step, 'duration_s': duration, 'domain_id': domain_id,
                    'demo_wall_s': time.monotonic() - started})
    if plots:
        summary['plots'] = write_plots(folder, scenario, held, fallen, tracked)
    with open(os.path.join(folder, 'summary.json'), 'w') as stream:
        json.dump(summary, stream, indent=2)
    return summary


def summarize(scenario, held, held_diag, fallen, tracked, tracked_diag):
    """Return the demo's figures as a JSON-friendly dict."""
    _, rms, worst = analysis.tracking_errors(tracked['time'], tracked['position'],
                                             scenario.profile())
    drift = analysis.max_drift(held['position'])
    fall = analysis.max_drift(fallen['position'])
    revolute = np.array([joint.type != 'prismatic' for joint in scenario.joints])
    return {
        'robot': scenario.urdf_file,
        'joints': scenario.joint_names,
        'joint_types': [joint.type for joint in scenario.joints],
        'start_pose': scenario.pose.tolist(),
        'reference': {'profile': 'sinusoid', 'amplitude': scenario.amplitudes.tolist(),
                      'frequency_hz': scenario.frequency, 'kp': scenario.kp,
                      'kd': scenario.kd},
        'gravity_compensation': {
            'max_drift': drift.tolist(),
            'max_drift_revolute_rad': float(drift[revolute].max()) if revolute.any() else 0.0,
            'commands': analysis.command_figures(held), 'node': held_diag},
        'zero_torque': {'max_deviation': fall.tolist(),
                        'final_deviation': np.abs(fallen['position'][-1] -
                                                  fallen['position'][0]).tolist()},
        'computed_torque': {
            'rms_error': rms.tolist(), 'max_error': worst.tolist(),
            'rms_error_revolute_max_rad': float(rms[revolute].max()) if revolute.any() else 0.0,
            'commands': analysis.command_figures(tracked), 'node': tracked_diag},
    }


def write_plots(folder, scenario, held, fallen, tracked):
    """Write the PNG plots; return their paths."""
    units = analysis.unit_labels([joint.type for joint in scenario.joints])
    errors, _, _ = analysis.tracking_errors(tracked['time'], tracked['position'],
                                            scenario.profile())
    reference = scenario.profile().sample(tracked['time'])[0]
    return {
        'tracking': analysis.plot_tracking(
            analysis.output_path(folder, 'tracking.png'), tracked['time'], tracked['position'],
            reference, scenario.joint_names, units, errors),
        'efforts': analysis.plot_efforts(
            analysis.output_path(folder, 'efforts.png'), tracked['time'], tracked['effort'],
            scenario.joint_names, units),
        'gravity': analysis.plot_gravity(
            analysis.output_path(folder, 'gravity_compensation.png'), held, fallen,
            scenario.joint_names),
    }


def format_summary(summary):
    """Return the printed report of a demo summary."""
    units = analysis.unit_labels(summary['joint_types'])
    gravity, tracking = summary['gravity_compensation'], summary['computed_torque']
    lines = []

    def status(value, target):
        return 'PASS' if value < target else 'FAIL'

    drift_max = gravity['max_drift_revolute_rad']
    lines.append('Gravity compensation, {:.1f} s from the start pose: max joint drift {:.1e} mrad'
                 ' (target < 1 mrad) {}'.format(gravity['commands']['simulated_s'],
                                                drift_max * 1e3,
                                                status(drift_max, GRAVITY_TARGET)))
    rows = []
    for index, name in enumerate(summary['joints']):
        rows.append([name, units[index],
                     '{:.1e}'.format(gravity['max_drift'][index] * 1e3),
                     '{:.1f}'.format(summary['zero_torque']['max_deviation'][index] * 1e3),
                     '{:.4f}'.format(tracking['rms_error'][index] * 1e3),
                     '{:.4f}'.format(tracking['max_error'][index] * 1e3)])
    lines.append(analysis.format_table(
        ['joint', 'unit', 'gravity comp. drift', 'zero torque: fell by', 'tracking RMS',
         'tracking max'], rows))
    rms_max = tracking['rms_error_revolute_max_rad']
    lines.append('Computed-torque tracking, {:.1f} s: worst joint RMS error {:.4f} mrad (target '
                 '< 1 mrad) {}'.format(tracking['commands']['simulated_s'], rms_max * 1e3,
                                       status(rms_max, TRACKING_TARGET)))
    for label, section in (('gravity compensation', gravity), ('computed torque', tracking)):
        commands, node = section['commands'], section['node']
        lines.append(
            '{}: commands applied {:.0f} /s of simulated time ({} commands, {:.1f}% of steps '
            'with the newest command, age p99 {} ms), real-time factor {:.2f}; rnea node: '
            'output {} Hz, compute {} us mean / {} us max per cycle'.format(
                label, commands['command_rate_hz'], commands['commands'],
                100 * commands['steps_with_latest_command'],
                _fmt(commands['command_age_p99_ms']), commands['real_time_factor'],
                _fmt(node['output_rate_hz'], 0), _fmt(node['compute_mean_us']),
                _fmt(node['compute_max_us'])))
    if 'plots' in summary:
        lines.append('plots: ' + ', '.join(summary['plots'].values()))
    return '\n'.join(lines)


def _fmt(value, digits=1):
    return 'n/a' if value is None else '{:.{}f}'.format(value, digits)


def parse_arguments(argv):
    """Parse the demo's command line."""
    parser = argparse.ArgumentParser(prog='python -m rnea_ros.sim.demo',
                                     description=__doc__.split('\n\n')[0])
    parser.add_argument('--out', default='out/demo', help='output folder (plots, logs, records)')
    parser.add_argument('--urdf', default=None, help='URDF file (default: example-robot-data '
                        'panda)')
    parser.add_argument('--duration', type=float, default=10.0,
                        help='simulated seconds per experiment (default 10)')
    parser.add_argument('--lock-step', action='store_true',
                        help='simulator waits for each command (deterministic, not real time)')
    parser.add_argument('--domain-id', type=int, default=None,
                        help='ROS_DOMAIN_ID to use (default: random 40..99)')
    return parser.parse_args(argv)


def main(argv=None):
    """Run the demo and print the figures; return 0 when all targets are met."""
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    try:
        summary = run_demo(args.out, args.urdf, args.duration, args.lock_step, args.domain_id)
    except (PhaseFailed, ValueError) as error:
        print('demo failed: {}'.format(error), file=sys.stderr)
        return 1
    print(format_summary(summary))
    print('summary: {}  (demo took {:.0f} s)'.format(
        os.path.join(os.path.abspath(args.out), 'summary.json'), summary['demo_wall_s']))
    met = (summary['gravity_compensation']['max_drift_revolute_rad'] < GRAVITY_TARGET and
           summary['computed_torque']['rms_error_revolute_max_rad'] < TRACKING_TARGET)
    return 0 if met else 2


if __name__ == '__main__':
    sys.exit(main())
