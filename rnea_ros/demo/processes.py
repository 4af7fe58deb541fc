"""The demo's processes: start them on an isolated domain, watch them, run one phase.

- :class:`ProcessRunner` starts ``python -m module`` processes with parameter files and stops
  them;
- :class:`DemoMonitor` is the demo's own ROS node: the rnea node's /diagnostics, the
  simulator's ``paused`` parameter, topics recorded during a phase, service calls;
- :class:`Phase` and :func:`run_phase`: one experiment (simulator, rnea node, reference).
"""
import importlib
import json
import os
import signal
import subprocess
import sys
import threading
import time

from rnea_ros.demo import analysis
import yaml

SOURCE_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class _PlainDumper(yaml.SafeDumper):
    """YAML without anchors and aliases (the ROS parameter-file parser rejects them)."""

    def ignore_aliases(self, data):
        """Write every repeated object out in full."""
        return True


def _represent_float(dumper, value):
    """Write a subnormal float as 0.0: rcl's parameter-file parser cannot read one."""
    if value != 0.0 and abs(value) < 2.2250738585072014e-308:
        value = 0.0
    return yaml.SafeDumper.represent_float(dumper, value)


_PlainDumper.add_representer(float, _represent_float)


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

    def write_parameters(self, label, parameters):
        """Write ``parameters`` to ``params/<label>.yaml`` under ``/**``; return its path."""
        params_file = os.path.join(self.folder, 'params', label + '.yaml')
        os.makedirs(os.path.dirname(params_file), exist_ok=True)
        with open(params_file, 'w') as stream:
            plain = json.loads(json.dumps(parameters, default=lambda value: value.tolist()))
            yaml.dump({'/**': {'ros__parameters': plain}}, stream, Dumper=_PlainDumper)
        return params_file

    def start(self, label, module, parameters):
        """Start ``python -m module`` with its parameters in a YAML file; return the Popen."""
        params_file = self.write_parameters(label, parameters)
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

    def topic_types(self):
        """Return {topic: type name} of the ROS graph as this node sees it."""
        return {name: types[0] for name, types in self.node.get_topic_names_and_types()}

    def record_topics(self, topics, timeout=10.0):
        """Subscribe to the ``topics`` that exist (types looked up in the graph); return them.

        Each message is kept as a :func:`flatten_message` dict (deep queue: nothing is lost
        while this thread lags behind a 1 kHz topic). Topics that do not appear within
        ``timeout`` are left out (the node does not offer them).
        """
        from rclpy.qos import QoSProfile, ReliabilityPolicy
        deadline = time.monotonic() + timeout
        found = {}
        while time.monotonic() < deadline:
            types = self.topic_types()
            found = {topic: types[topic] for topic in topics if topic in types}
            if len(found) == len(topics):
                break
            time.sleep(0.2)
        self.recorded = {topic: [] for topic in found}
        self._subscriptions = []
        qos = QoSProfile(depth=100000, reliability=ReliabilityPolicy.RELIABLE)
        for topic, type_name in found.items():
            def keep(msg, store=self.recorded[topic]):
                store.append(flatten_message(msg))
            self._subscriptions.append(self.node.create_subscription(
                interface_class(type_name), topic, keep, qos))
        return found

    def stop_recording(self, settle=1.0):
        """Let queued messages arrive (``settle`` s), unsubscribe, return {topic: messages}."""
        time.sleep(settle)
        for subscription in getattr(self, '_subscriptions', []):
            self.node.destroy_subscription(subscription)
        self._subscriptions = []
        recorded, self.recorded = getattr(self, 'recorded', {}), {}
        return recorded

    def call(self, service, type_name, request=None, timeout=30.0):
        """Call ``service`` (type looked up by name) with ``request`` fields; return response.

        Returns None when the service does not exist within 5 s or does not answer in time.
        """
        kind = interface_class(type_name)
        client = self.node.create_client(kind, service)
        try:
            if not client.wait_for_service(timeout_sec=5.0):
                return None
            message = kind.Request()
            if request:
                set_fields(message, request)
            future = client.call_async(message)
            deadline = time.monotonic() + timeout
            while not future.done() and time.monotonic() < deadline:
                time.sleep(0.01)
            return future.result() if future.done() else None
        finally:
            self.node.destroy_client(client)

    def get_parameters(self, node, names, timeout=10.0):
        """Return {name: value} of a node's parameters (missing ones left out)."""
        from rclpy.parameter import parameter_value_to_python
        response = self.call('{}/get_parameters'.format(node), 'rcl_interfaces/srv/GetParameters',
                             {'names': list(names)}, timeout)
        if response is None:
            return {}
        return {name: parameter_value_to_python(value)
                for name, value in zip(names, response.values) if value.type != 0}

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


def flatten_message(msg):
    """Return the fields of a message that the scenes read, as plain Python values.

    ``stamp`` (s) from a header; ``name`` and ``effort`` of a JointState; ``wrench`` [f, m] of a
    WrenchStamped; ``data`` of a std_msgs scalar; everything else by :func:`message_fields`
    under ``fields``.
    """
    out = {}
    header = getattr(msg, 'header', None)
    if header is not None:
        out['stamp'] = header.stamp.sec + 1e-9 * header.stamp.nanosec
    if hasattr(msg, 'effort') and hasattr(msg, 'name'):
        out['name'] = list(msg.name)
        out['effort'] = list(msg.effort)
    elif hasattr(msg, 'wrench'):
        force, torque = msg.wrench.force, msg.wrench.torque
        out['wrench'] = [force.x, force.y, force.z, torque.x, torque.y, torque.z]
        out['frame'] = header.frame_id if header is not None else ''
    elif hasattr(msg, 'data') and len(msg.get_fields_and_field_types()) == 1:
        out['data'] = msg.data
    else:
        out['fields'] = message_fields(msg)
    return out


def interface_class(type_name):
    """Return the message or service class of ``'pkg/msg/Name'`` or ``'pkg/srv/Name'``.

    The generated Python module of the interface package is imported directly, so the demo
    needs no ``rosidl_runtime_py`` (not on PyPI). Unknown names raise ValueError.
    """
    parts = type_name.split('/')
    if len(parts) != 3 or parts[1] not in ('msg', 'srv', 'action') or not all(parts):
        raise ValueError(f'{type_name!r} is not an interface name like pkg/msg/Name')
    try:
        return getattr(importlib.import_module(f'{parts[0]}.{parts[1]}'), parts[2])
    except (ImportError, AttributeError) as error:
        raise ValueError(f'no interface {type_name!r} here: {error}') from None


def set_fields(message, values):
    """Set ``message``'s fields from a dict (nested dicts for nested messages); return it."""
    for name, value in values.items():
        if not hasattr(message, name):
            raise ValueError(f'{type(message).__name__} has no field {name!r}')
        if isinstance(value, dict):
            set_fields(getattr(message, name), value)
        else:
            setattr(message, name, value)
    return message


def message_fields(msg):
    """Return a message as a dict of plain values (nested messages as dicts, arrays as lists)."""
    if not hasattr(msg, 'get_fields_and_field_types'):
        if isinstance(msg, (list, tuple)) or type(msg).__name__ in ('array', 'ndarray'):
            return [message_fields(item) for item in msg]
        return msg
    return {name: message_fields(getattr(msg, name))
            for name in msg.get_fields_and_field_types()}


class PhaseFailed(RuntimeError):
    """A demo phase did not finish; the message names the logs to read."""


class Phase:
    """One experiment: label, rnea node mode (None: zero torque) and parameter overrides.

    ``topics``: rnea node topics the demo records during the run (see
    :meth:`DemoMonitor.record_topics`); ``during(monitor, simulator)``: run once the simulator
    runs (service calls in simulated time; ``simulator`` is its Popen); its result is kept as
    ``phase.result``.
    """

    def __init__(self, label, mode, duration, sim=None, rnea=None, reference=None, topics=(),
                 during=None):
        """Store the experiment; the dicts override the scenario's process parameters."""
        self.label, self.mode, self.duration = label, mode, float(duration)
        self.sim, self.rnea, self.reference = dict(sim or {}), dict(rnea or {}), dict(
            reference or {})
        self.topics, self.during = tuple(topics), during
        self.recorded, self.result = {}, None


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
    sim_parameters.update(phase.sim)
    simulator = runner.start(label + '_mujoco_sim', 'rnea_ros.sim.mujoco_sim', sim_parameters)
    processes = [simulator]
    if controlled:
        parameters = scenario.rnea_parameters(mode, lock_step=lock_step)
        # The demo measures how far each model lets the arm drift: the joint limit guard would
        # stop the node once the arm, falling under the nominal URDF, passes a velocity limit
        # (and a lock-step simulator would then wait for commands that no longer come).
        parameters['joint_limit_guard'] = 'off'
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
            if phase.topics:
                monitor.record_topics(phase.topics)
            monitor.take()
            monitor.unpause_simulator()
            if phase.during is not None:
                phase.result = phase.during(monitor, simulator)
        simulator.wait(timeout=timeout)
        if phase.topics:
            phase.recorded = monitor.stop_recording()
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
