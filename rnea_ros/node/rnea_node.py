"""The ``rnea`` ROS 2 node: joint states in, joint efforts (and effort commands) out.

Inputs: the robot description (``robot_description`` topic, transient local, or the
``robot_description`` / ``urdf_file`` parameters), ``joint_states``, ``~/desired_accelerations``
(JointTrajectory), ``~/desired_accelerations_array`` (Float64MultiArray, model joint order),
``~/reference`` (JointTrajectory, computed_torque mode), ``~/external_wrenches``
(WrenchStamped, frame_id = link), ``~/base_acceleration`` (AccelStamped, world frame: the
acceleration of a moving fixed base) and, with ``use_imu``, ``~/imu`` (sensor_msgs/Imu on any
link, joint motion taken out: the base acceleration, tilt against gravity included; a fresh topic
message wins over the IMU, a fresh IMU over the ``base_acceleration`` parameter; the base
velocity is taken as zero).  Outputs: ``~/joint_efforts`` (JointState stamped with the input
stamp), ``~/reaction_wrenches/<joint>``, optional commands on ``command_topic``
(Float64MultiArray for ros2_control's forward_command_controller) and ``/diagnostics``.
Service ``~/enable`` (std_srvs/SetBool) switches command output.  ``joint_states`` is subscribed
best effort (hears reliable and best-effort publishers; QoS overridable by parameters).  A joint
leaving its limits stops commands until re-enabled (the joint limit guard).  A managed variant is
:mod:`rnea_ros.node.lifecycle`.

The node is a thin shell: input bookkeeping and validation live in
:mod:`rnea_ros.node.bookkeeping`, the parameter table in :mod:`rnea_ros.node.params`, the
dynamics in the core.  Run it with
``ros2 run rnea_ros rnea_node`` or ``python -m rnea_ros.node``.
"""

import argparse
import gc
import signal
import sys
import time

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import AccelStamped, WrenchStamped
from rcl_interfaces.msg import SetParametersResult
import rclpy
from rclpy.exceptions import ParameterException
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import (DurabilityPolicy, HistoryPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)
from rclpy.qos_overriding_options import QoSOverridingOptions
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args
from rnea_ros.node import _cold_start  # first: it times the kernels' compile below
from rnea_ros.node import bookkeeping as node_io
from rnea_ros.node import param_guard
from rnea_ros.node import params as node_params
from rnea_ros.node.bookkeeping import wire
from rnea_ros.node.inputs import InputsMixin
from rnea_ros.node.observer import ObserverMixin
from rnea_ros.node.outputs import CycleMixin
from rnea_ros.node.runtime import (BackgroundLoader, descriptor, load_model, ModelRuntime, plain,
                                   rejection, type_reason, typed_parameter)
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

_cold_start.NOTICE.done()       # the kernels are loaded (imported above)
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
# Joint states: best effort hears best-effort and reliable publishers (robot_state_publisher
# does the same); overridable (qos_overrides./joint_states.subscription.* parameters).
JOINT_STATE_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                             reliability=ReliabilityPolicy.BEST_EFFORT)
INPUT_DEPTH = 10

GIL_SWITCH_INTERVAL = 0.0005     # s: how long the executor waits for the model loader thread


def _plain(value, name=None):
    """Return a parameter value as a plain Python value in its table type (lists for arrays)."""
    value = plain(value)
    return value if name is None else node_params.normalise(name, value)[0]


class RneaNode(ObserverMixin, InputsMixin, CycleMixin, Node):
    """Inverse dynamics for the robot's joint states, published as efforts and commands."""

    MANAGED = False     # the lifecycle variant (rnea_ros.node.lifecycle) loads on configure

    def __init__(self, **kwargs):
        """Declare parameters, create the interfaces and load the model if a parameter gives it."""
        super().__init__(kwargs.pop('node_name', 'rnea'), **kwargs)
        self._log = self.get_logger()
        self._active = not self.MANAGED         # commands only while active
        self._configured = not self.MANAGED     # models load only once configured
        self._enabled_logged = None
        self._limit_fault = None        # latched joint limit violation (reason)
        self._rt = None
        self._applying = False
        self._topic_description = None
        self._description_note = None
        self._last_error = ''
        self._stamp = None
        self._waiting_for_reference = None     # reference_sync: stamp (s) of a joint state
        self._last_joint_state = None
        self._stale = False
        self._commanding = False
        self._cmd_msg = Float64MultiArray()
        self._cmd_pub = None
        self._rate_timer = None
        self._wrench_pubs = {}
        self._wrench_time = time.monotonic()     # reaction wrenches: round robin (outputs)
        self._wrench_budget = float('inf')        # the first cycle sends every topic
        self._wrench_cursor = 0
        self._stats = node_io.CycleStats(time.monotonic())
        self._stamps = node_io.StampCheck()
        self._loader = BackgroundLoader()
        self._wait_notice = node_io.Notice(delay=2.0, period=30.0)     # silent waits (issue 23)
        self._wait_kind = None
        self._command_notice = node_io.Notice(delay=0.0, period=60.0)
        self._other_commanders = []
        # Every path that sets a parameter ends here (issue 29): no exception leaves these.
        if hasattr(self, 'add_pre_set_parameters_callback'):    # rclpy >= Iron
            self.add_pre_set_parameters_callback(
                param_guard.guarded_pre_set(self._typed_parameters))
        self.add_on_set_parameters_callback(
            param_guard.guarded_on_set(self._on_set_parameters, self._log))
        for spec in node_params.PARAMETERS:
            self._declare(spec)
        self._cfg = {spec.name: self._initial_value(spec.name) for spec in node_params.PARAMETERS}
        self._create_interfaces()
        from rnea_ros.node.monitor import ModelMonitor      # ~/effort_residual, ~/contact, payload
        self._monitor = ModelMonitor(self)
        self._observer_setup()      # ~/external_torques, ~/external_wrench, ~/collision
        from rnea_ros.node.payload_estimation import PayloadEstimation   # ~/estimate_payload
        self._payload_estimation = PayloadEstimation(self)
        self._applying = True
        # Added last, so run first (rclpy): no other callback sees a value of a wrong type.
        self.add_on_set_parameters_callback(param_guard.guarded_on_set(self._type_gate,
                                                                       self._log))
        param_guard.guard_services(self, self._log)     # no request can end the node
        if self._configured and self._description_source():
            self._reload_model()        # a description parameter that fails: error at start-up

    # -- set-up -----------------------------------------------------------------------------

    def _declare(self, spec):
        """Declare one parameter with a value in its own type (see runtime.descriptor).

        An empty array from a YAML file stays []; a value typed as YAML reads it (``off``,
        ``100``, ``[]``) is checked in its normalised form and stored in the table's type.
        """
        self.declare_parameter(spec.name, spec.default, descriptor(spec))
        param = self.get_parameter_or(spec.name)
        if param.type_ == Parameter.Type.NOT_SET:
            # rcl reads `name: []` from a parameter file as "not set": keep the typed default.
            self.undeclare_parameter(spec.name)
            self.declare_parameter(spec.name, spec.default, descriptor(spec),
                                   ignore_override=True)
            param = self.get_parameter(spec.name)
        typed = typed_parameter(param)
        if typed is not param:
            self.set_parameters([typed])

    def _typed_parameters(self, params):
        """Pre-set callback: values in their table types (``ros2 param set mode off`` etc.)."""
        return [typed_parameter(param) for param in params]

    def _param_kind(self, name):
        """Return the kind of a parameter: its table entry's, or its current value's."""
        spec = node_params.SPECS.get(name)
        if spec is not None:
            return spec.kind
        return param_guard.KIND_OF_TYPE.get(self.get_parameter_or(name).type_, 'value')

    def _initial_value(self, name):
        try:
            value = self.get_parameter(name).value
        except ParameterUninitializedException:
            return None
        return _plain(value, name)

    def _create_interfaces(self):
        self._efforts_pub = self.create_publisher(JointState, '~/joint_efforts', INPUT_DEPTH)
        self._base_pub = None
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', INPUT_DEPTH)
        self._description_sub = self.create_subscription(
            String, 'robot_description', self._on_description, DESCRIPTION_QOS)
        # Raw: the bytes are read by wire.JointStateReader (no message built while the names
        # repeat); anything else is decoded by rclpy as before.
        self._joint_state_reader = wire.JointStateReader(JointState, Time)
        self._joint_state_sub = self.create_subscription(
            JointState, 'joint_states', self._on_joint_state_data, JOINT_STATE_QOS,
            qos_overriding_options=QoSOverridingOptions.with_default_policies(), raw=True)
        self.create_subscription(JointTrajectory, '~/desired_accelerations',
                                 self._on_desired_trajectory, INPUT_DEPTH)
        self.create_subscription(Float64MultiArray, '~/desired_accelerations_array',
                                 self._on_desired_array, INPUT_DEPTH)
        self.create_subscription(JointTrajectory, '~/reference', self._on_reference, INPUT_DEPTH)
        self.create_subscription(WrenchStamped, '~/external_wrenches', self._on_wrench,
                                 INPUT_DEPTH)
        self.create_subscription(AccelStamped, '~/base_acceleration', self._on_base_acceleration,
                                 INPUT_DEPTH)
        self._imu_sub = None
        self._set_imu_subscription(self._cfg['use_imu'])
        self.create_service(SetBool, '~/enable', self._on_enable)
        self._set_command_topic(self._cfg['command_topic'])
        self._set_rate(self._cfg['rate'])
        self._watchdog_timer = None
        self._set_watchdog(self._cfg['joint_state_timeout'])
        self.create_timer(1.0, self._publish_diagnostics)

    def _set_command_topic(self, topic):
        if self._cmd_pub is not None:
            self._stop_commands(send_zero=True)
            self.destroy_publisher(self._cmd_pub)
            self._cmd_pub = None
        if topic:
            self._cmd_pub = self.create_publisher(Float64MultiArray, topic, INPUT_DEPTH)

    def _set_imu_subscription(self, enabled):
        if enabled and self._imu_sub is None:     # best effort: matches any IMU driver
            self._imu_sub = self.create_subscription(Imu, '~/imu', self._on_imu,
                                                     qos_profile_sensor_data)
        elif not enabled and self._imu_sub is not None:
            self.destroy_subscription(self._imu_sub)
            self._imu_sub = None

    def _set_rate(self, rate):
        if self._rate_timer is not None:
            self.destroy_timer(self._rate_timer)
            self._rate_timer = None
        if rate > 0.0:
            self._rate_timer = self.create_timer(1.0 / rate, self._on_rate_timer)

    def _set_watchdog(self, timeout):
        if self._watchdog_timer is not None:
            self.destroy_timer(self._watchdog_timer)
        self._watchdog_timer = self.create_timer(min(0.05, max(0.001, timeout / 5.0)),
                                                 self._watchdog)

    # -- model -----------------------------------------------------------------------------

    def _description_source(self, cfg=None):
        """Return (source label, URDF XML or file path) or None when there is none yet."""
        cfg = self._cfg if cfg is None else cfg
        if cfg['robot_description']:
            return 'parameter robot_description', cfg['robot_description']
        if cfg['urdf_file']:
            return 'file ' + cfg['urdf_file'], cfg['urdf_file']
        if self._topic_description is not None:
            return 'topic robot_description', self._topic_description
        return None

    def _build_runtime(self, cfg):
        source = self._description_source(cfg)
        if source is None:
            return None, None
        label, text = source
        try:
            return ModelRuntime(load_model(label, text, cfg), cfg), label
        except Exception as exc:  # noqa: B902 - any failure must keep the previous model
            raise ValueError(rejection(label, exc, self._keeping())) from None

    def _keeping(self):
        return ', keeping the previous model' if self._rt is not None else ' (no model loaded)'

    def _reload_model(self, cfg=None, raise_errors=True):
        """Build the model from the current description; on failure keep the old one.

        With ``raise_errors`` the error is raised, not logged: the caller reports it once
        (start-up: ``rnea: cannot start: ...``; lifecycle configure: its FAILURE line).
        """
        cfg = self._cfg if cfg is None else cfg
        try:
            runtime, label = self._build_runtime(cfg)
        except ValueError as exc:
            self._last_error = str(exc)
            if raise_errors:
                raise
            self._log.error(self._last_error)
            return
        if runtime is not None:
            self._install(runtime, label)

    def _install(self, runtime, label):
        """Switch to a new model; a live reload keeps joint states, wrenches and the ramp."""
        old = self._rt
        if old is not None:
            runtime.joints.adopt(old.joints)
            runtime.wrenches.adopt(old.wrenches)
            runtime.settings.limiter.ramp_start = old.settings.limiter.ramp_start
        self._rt = runtime
        model = runtime.model
        self._sync_wrench_publishers(model)
        if model.floating_base and self._base_pub is None:
            self._base_pub = self.create_publisher(WrenchStamped, '~/base_wrench', INPUT_DEPTH)
        self._log.info(f'model {model.name!r} loaded from {label}: {len(model.joint_names)} '
                       f'joints in this order: {list(model.joint_names)}')
        for warning in runtime.warnings:
            self._log.warning(f'model {model.name!r}: {warning}')
        zero_limits = [j for j, lim in zip(model.joint_names, model.effort_limits) if lim <= 0]
        if zero_limits and self._cfg['clamp_efforts']:
            self._log.warning(f'joints {zero_limits} have URDF effort limit 0: with '
                              'clamp_efforts their effort is always 0')

    def _sync_wrench_publishers(self, model):
        tokens = node_io.topic_tokens(model.joint_names)
        wanted = set(tokens)
        for token in list(self._wrench_pubs):
            if token not in wanted:
                self.destroy_publisher(self._wrench_pubs.pop(token))
        for token in sorted(wanted - set(self._wrench_pubs)):
            self._wrench_pubs[token] = self.create_publisher(
                WrenchStamped, f'~/reaction_wrenches/{token}', INPUT_DEPTH)
        self._wrench_list = [self._wrench_pubs[token] for token in tokens]
        self._refresh_wrench_subscribers()

    def _refresh_wrench_subscribers(self):
        """Note which reaction-wrench topics have subscribers (polled, off the hot path)."""
        rt = self._rt
        if rt is None:
            return
        active = [pub.get_subscription_count() > 0 for pub in self._wrench_list]
        rt.wrench_targets = [(pub, out) for pub, out, on in
                             zip(self._wrench_list, rt.wrench_outs, active) if on]
        rt.wrench_rows = [i for i, on in enumerate(active) if on]

    # -- parameters ------------------------------------------------------------------------

    def _on_set_parameters(self, params):
        joint_names = self._rt.model.joint_names if self._rt is not None else None
        refused = self._type_gate(params)
        if not refused.successful:
            return refused
        for param in params:
            if param.type_ == Parameter.Type.NOT_SET:
                continue
            error = node_params.check_value(param.name, _plain(param.value), joint_names)
            value = _plain(param.value, param.name)
            if param.name == 'command_topic' and not error:
                error = param_guard.topic_reason(self, param.name, value)
            if param.name == 'enabled' and value and not error:
                error = self._limit_clear_error()
            if error:
                return SetParametersResult(successful=False, reason=error)
        if self._applying:
            try:
                self._apply({p.name: _plain(p.value, p.name) for p in params})
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _type_gate(self, params):
        """Refuse deletes and values of a wrong ROS type, naming the parameter and its type.

        The first check of every path that sets parameters (issue 29), before anything reads
        the values: it is the last on-set callback added (rclpy runs the newest first) and the
        start of :meth:`_on_set_parameters` (declarations).  A delete request (ros2 param
        delete) is refused once declared; at declaration a file's `name: []` arrives as "not
        set" (see :meth:`_declare`).
        """
        for param in params:
            if param.type_ == Parameter.Type.NOT_SET:
                error = self._applying and param_guard.type_reason(
                    param.name, self._param_kind(param.name), param)
            else:
                error = type_reason(param)
            if error:
                return SetParametersResult(successful=False, reason=error)
        return SetParametersResult(successful=True)

    def _apply(self, changes):
        """Apply validated parameter changes; raise ValueError to reject them all."""
        changes = {k: v for k, v in changes.items() if k in self._cfg}
        cfg = dict(self._cfg, **changes)
        if not self._configured:
            pass                        # lifecycle: the model is built on configure
        elif node_params.needs_rebuild(changes, cfg):
            runtime, label = self._build_runtime(cfg)
            if runtime is not None:
                self._cfg = cfg
                self._install(runtime, label)
        elif self._rt is not None:
            self._rt.update_settings(cfg)
        self._cfg = cfg
        source = self._description_source()
        if self._configured and self._rt is None and source is not None and \
                not node_params.needs_rebuild(changes, cfg):
            self._loader.request(cfg, *source)   # a description refused for a parameter: retry
        if 'command_topic' in changes:
            self._set_command_topic(cfg['command_topic'])
        if 'rate' in changes:
            self._set_rate(cfg['rate'])
        if 'use_imu' in changes:
            self._set_imu_subscription(cfg['use_imu'])
        if 'joint_state_timeout' in changes:
            self._set_watchdog(cfg['joint_state_timeout'])
        if 'enabled' in changes and cfg['enabled'] != self._enabled_logged:
            self._enabled_logged = cfg['enabled']
            self._log.info('command output enabled' if cfg['enabled'] else
                           'command output disabled (one zero command sent if commanding)')
        if 'enabled' in changes and not cfg['enabled']:
            self._stop_commands(send_zero=True)
        if 'enabled' in changes and cfg['enabled'] and self._limit_fault is not None:
            self._log.info(f'joint limit guard cleared, commands re-enabled (was: '
                           f'{self._limit_fault})')
            self._limit_fault = None

    def _on_enable(self, request, response):
        result = self.set_parameters([Parameter('enabled', Parameter.Type.BOOL,
                                                bool(request.data))])[0]
        response.success = result.successful
        response.message = (('enabled' if request.data else 'disabled') if result.successful
                            else result.reason)
        return response

    # -- inputs ----------------------------------------------------------------------------

    def _reject(self, topic, error):
        self._stats.reject()
        self._last_error = f'{topic} rejected: {error}'
        self._log.error(self._last_error, throttle_duration_sec=1.0)

    def _on_description(self, msg):
        self._topic_description = msg.data
        if not self._configured:
            return                      # lifecycle: loaded on configure
        source = self._description_source()
        if source[0] != 'topic robot_description':
            if self._description_note != source[0]:
                self._description_note = source[0]
                self._log.info(f'ignoring the robot_description topic: using {source[0]}')
            return
        if self._rt is not None and self._rt.source == (*source, self._cfg):
            return                      # the description in use, republished: nothing to build
        self._loader.request(self._cfg, *source)

    def _take_loaded_model(self):
        """Install a model the background loader built (executor thread, between cycles)."""
        result = self._loader.take()
        if result is None or not self._configured:
            return
        runtime, label, error, cfg = result
        source = self._description_source()
        if source is None or source[0] != label:
            return                      # a parameter now names the description
        if cfg != self._cfg:
            self._loader.request(self._cfg, *source)   # parameters changed meanwhile
        elif error:
            self._last_error = error + self._keeping()
            self._log.error(self._last_error)
        else:
            self._install(runtime, label)

    def _on_joint_state_data(self, data):
        try:
            msg = self._joint_state_reader.read(data)
        except Exception as exc:  # noqa: B902 - rclpy's decoding errors vary: reject any
            self._stats.inputs += 1
            self._reject('joint_states', f'cannot decode the message: {exc}')
            return
        self._on_joint_state(msg)

    def _on_joint_state(self, msg):
        self._stats.inputs += 1
        if self._loader.pending:
            self._take_loaded_model()
        rt = self._rt
        if rt is None:
            return
        stamp = msg.header.stamp
        error, seconds = self._stamps.check(stamp.sec, stamp.nanosec)
        error = error or rt.joints.update(msg.name, msg.position, msg.velocity)
        if error:
            self._reject('joint_states', error)
            return
        self._stamps.accept(seconds)
        if self._stamps.zero_note and not self.get_parameter('use_sim_time').value:  # t0 = 0
            self._log.warning('joint_states: ' + self._stamps.zero_note)
        if self._stamps.recovered is not None:
            self._log.warning(f'joint_states: the stamp {self._stamps.recovered:.9f} was an '
                              'outlier ahead of the stream; following the stream again')
        if rt.joints.new_unknown:
            self._log.warning(f'joint_states names joints the model lacks (ignored): '
                              f'{node_io.truncated(rt.joints.new_unknown)}')
        self._check_limits(rt)
        now = time.monotonic()
        self._monitor.take_efforts(msg, rt.model.joint_names)
        self._observer_take(msg)
        if self._payload_estimation.running:
            self._payload_estimation.take(msg, rt)
        self._last_joint_state = now
        self._stamp = stamp
        if self._stale:
            self._stale = False
            self._wrench_time, self._wrench_budget = now, 0.0   # no burst of wrenches owed
            self._log.info('joint states resumed')
        if self._rate_timer is None and not self._wait_for_reference(rt, seconds):
            self._compute(now)

    def _on_rate_timer(self):
        if self._stamp is not None and not self._stale:
            self._compute(time.monotonic())


def make_executor(kind='events'):
    """Return rclpy's EventsExecutor (if available and asked for) or a SingleThreadedExecutor."""
    if kind == 'events':
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor()
        except ImportError:
            pass
    return SingleThreadedExecutor()


def spin_until_signal(node, executor, should_stop, period=0.1):
    """Spin with spin_once(timeout) until ``should_stop()`` or the context shuts down."""
    executor.add_node(node)
    while not should_stop() and rclpy.ok(context=node.context):
        executor.spin_once(timeout_sec=period)


def serve(node, executor, stop, before_shutdown=None):
    """Spin ``node`` until ``stop`` (the signal handlers' list) fills; then shut down; return 0.

    ``before_shutdown()`` runs first (e.g. a last safe command); then the executor, the node and
    rclpy are shut down, whatever ended the spin.
    """
    try:
        spin_until_signal(node, executor, lambda: bool(stop))
    finally:
        if before_shutdown is not None:
            before_shutdown()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def main(args=None, node_class=None, stop=None):
    """Run the node until Ctrl-C / SIGTERM; return the exit code.

    ``stop``: the list the console script's early signal handlers append to (see
    :func:`rnea_ros.entry_points.run`), so that a Ctrl-C during the imports or rclpy.init is
    not lost; this function appends to the same list from then on.
    """
    stop = [] if stop is None else stop
    for signum in (signal.SIGINT, signal.SIGTERM):      # first: nothing may swallow a Ctrl-C
        signal.signal(signum, lambda *_: stop.append(True))
    args = sys.argv if args is None else args
    parser = argparse.ArgumentParser(description='rnea ROS 2 node')
    parser.add_argument('--executor', choices=('events', 'single'), default='events',
                        help='events: rclpy EventsExecutor (default, lowest CPU and latency); '
                        'single: SingleThreadedExecutor')
    options = parser.parse_args(remove_ros_args(args)[1:])
    try:
        rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
        node = (node_class or RneaNode)()
    except (ParameterException, ValueError, TypeError, OSError, RuntimeError) as exc:
        # Parameters refused at start-up (a parameter file of a wrong type too): one line, 2.
        print(f'rnea: cannot start: {param_guard.one_line(exc)}', file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    executor = make_executor(options.executor)
    gc.collect()
    gc.freeze()     # start-up objects (numba, rclpy, the model) leave the collector's work
    # While the background loader builds a model the executor thread waits for the GIL; with
    # the default 5 ms switch interval a 1 kHz stream queues up and its oldest states are lost.
    sys.setswitchinterval(GIL_SWITCH_INTERVAL)
    return serve(node, executor, stop, node.shutdown_outputs)


if __name__ == '__main__':
    sys.exit(main())
