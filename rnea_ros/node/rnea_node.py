"""The ``rnea`` ROS 2 node: joint states in, joint efforts (and effort commands) out.

Inputs: the robot description (``robot_description`` topic, transient local, or the
``robot_description`` / ``urdf_file`` parameters), ``joint_states``, ``~/desired_accelerations``
(JointTrajectory), ``~/desired_accelerations_array`` (Float64MultiArray, model joint order),
``~/reference`` (JointTrajectory, computed_torque mode), ``~/external_wrenches``
(WrenchStamped, frame_id = link), ``~/base_acceleration`` (AccelStamped, world frame: the
acceleration of a moving fixed base) and, with ``use_imu``, ``~/imu`` (sensor_msgs/Imu on a link
fixed to the root: the base acceleration, tilt against gravity included; a fresh topic message
wins over the IMU, a fresh IMU over the ``base_acceleration`` parameter; the base velocity is
taken as zero).  Outputs: ``~/joint_efforts`` (JointState stamped with the input stamp),
``~/reaction_wrenches/<joint>``, optional commands on ``command_topic`` (Float64MultiArray for
ros2_control's forward_command_controller) and ``/diagnostics``.
Service ``~/enable`` (std_srvs/SetBool) switches command output.

The node is a thin shell: input bookkeeping and validation live in
:mod:`rnea_ros.node.bookkeeping`, the parameter table in :mod:`rnea_ros.node.params`, the
dynamics in the core.  Run it with
``ros2 run rnea_ros rnea_node`` or ``python -m rnea_ros.node``.
"""

import argparse
import signal
import sys
import threading
import time

from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from geometry_msgs.msg import AccelStamped, WrenchStamped
import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor, SetParametersResult
import rclpy
from rclpy.exceptions import ParameterException, ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rclpy.utilities import remove_ros_args
from rnea_ros import inverse_dynamics, reaction_wrenches, RobotModel
from rnea_ros.core.urdf import parse_urdf, read_urdf_file
from rnea_ros.node import bookkeeping as node_io
from rnea_ros.node import checks as node_checks
from rnea_ros.node import params as node_params
from rnea_ros.node.monitor_params import attach_payload
from sensor_msgs.msg import Imu, JointState
from std_msgs.msg import Float64MultiArray, String
from std_srvs.srv import SetBool
from trajectory_msgs.msg import JointTrajectory

_TYPES = {
    'bool': Parameter.Type.BOOL,
    'double': Parameter.Type.DOUBLE,
    'string': Parameter.Type.STRING,
    'double_array': Parameter.Type.DOUBLE_ARRAY,
    'string_array': Parameter.Type.STRING_ARRAY,
}
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)
INPUT_DEPTH = 10
_BASE_Q = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])


def descriptor(spec):
    """Return the ParameterDescriptor of a :class:`node_params.ParamSpec`."""
    desc = ParameterDescriptor(name=spec.name, type=_TYPES[spec.kind].value,
                               description=spec.description)
    constraints = []
    if spec.choices:
        constraints.append('one of: ' + ', '.join(spec.choices))
    if spec.low is not None:
        constraints.append(f'each value in [{spec.low}, {spec.high}]')
        if spec.kind == 'double':
            desc.floating_point_range = [FloatingPointRange(
                from_value=float(spec.low), to_value=float(spec.high), step=0.0)]
    if spec.constraints:
        constraints.append(spec.constraints)
    desc.additional_constraints = '; '.join(constraints)
    return desc


def load_model(label, text, cfg):
    """Build the model of a description (file path or XML) with the friction parameters.

    The description is read and parsed once (:mod:`rnea_ros.core.urdf`); the model is rebuilt
    from the parsed records when friction or a payload needs the joint names first.
    """
    description = parse_urdf(read_urdf_file(text) if label.startswith('file') else text)
    name, links, joints = description
    floating = cfg['floating_base']
    model = RobotModel.from_specs(links, joints, floating_base=floating, name=name)
    options = node_params.joint_coefficients(cfg, model.joint_names)
    if options or cfg['use_urdf_friction']:
        model = RobotModel.from_specs(links, joints, floating_base=floating, name=name,
                                      friction_from_urdf=cfg['use_urdf_friction'], **options)
    return attach_payload(model, cfg, description, False)


class ModelRuntime:
    """Everything built once per model: inputs, state arrays, preallocated output messages."""

    def __init__(self, model, cfg):
        """Allocate for ``model``; raise ValueError when the parameters do not fit it."""
        self.model = model
        self.warnings = list(model.warnings) + node_checks.check_model(model)
        self.settings = node_io.NodeSettings(model.joint_names, model.effort_limits, cfg)
        names = model.joint_names
        n = len(names)
        self.offset_q, self.offset_v = (7, 6) if model.floating_base else (0, 0)
        self.q = np.zeros(model.nq)
        self.qd = np.zeros(model.nv)
        self.qdd = np.zeros(model.nv)
        self.zero_v = np.zeros(model.nv)
        if model.floating_base:
            self.q[:7] = _BASE_Q
        self.q_j = self.q[self.offset_q:]
        self.qd_j = self.qd[self.offset_v:]
        self.qdd_j = self.qdd[self.offset_v:]
        self.joints = node_io.JointStateInput(names, model.mimic, q=self.q_j, qd=self.qd_j)
        self.accelerations = node_io.AccelerationInput(names, cfg['desired_timeout'])
        self.reference = node_io.ReferenceInput(names, model.mimic, cfg['desired_timeout'])
        self.wrenches = node_io.WrenchInput(model.link_names)
        self.ws = model.create_workspace()
        self.position = node_io.FloatBuffer(n)
        self.velocity = node_io.FloatBuffer(n)
        self.effort = node_io.FloatBuffer(n)
        self.effort_msg = JointState(name=list(names))
        self.wrench_msgs = [WrenchStamped() for _ in names]
        for msg, link in zip(self.wrench_msgs, model.child_links):
            msg.header.frame_id = link
        self.wrench_targets, self.wrench_rows = [], []    # topics with subscribers
        self.base_acceleration = node_io.BaseAccelerationInput(
            model.root_link, cfg['base_acceleration'], cfg['desired_timeout'],
            model.floating_base)
        self.base_acceleration.set_imu(cfg['use_imu'], model.link_body,
                                       cfg['imu_angular_acceleration_filter'],
                                       cfg['desired_timeout'])
        self.base_msg = WrenchStamped()
        self.base_msg.header.frame_id = model.root_link
        # Compile (numba) and check the model once, off the hot path.
        inverse_dynamics(model, self.q, self.zero_v, self.zero_v, ws=self.ws)
        reaction_wrenches(model, self.q, self.zero_v, self.zero_v, ws=self.ws)

    def update_settings(self, cfg):
        """Rebuild the settings from new parameters, keeping the ramp state."""
        settings = node_io.NodeSettings(self.model.joint_names, self.model.effort_limits, cfg)
        self.base_acceleration.set_default(cfg['base_acceleration'])
        self.base_acceleration.set_imu(cfg['use_imu'], self.model.link_body,
                                       cfg['imu_angular_acceleration_filter'],
                                       cfg['desired_timeout'])
        settings.limiter.ramp_start = self.settings.limiter.ramp_start
        self.settings = settings
        self.accelerations.timeout = cfg['desired_timeout']
        self.reference.timeout = cfg['desired_timeout']
        self.base_acceleration.timeout = cfg['desired_timeout']


class BackgroundLoader:
    """Builds model runtimes off the executor thread; the newest request wins.

    The executor keeps serving joint states while a (possibly big) description is parsed; the
    finished runtime is handed over through :meth:`take` from the executor thread (polled via
    :attr:`pending` each cycle and by the watchdog timer: the EventsExecutor has no guard
    conditions), so the switch happens between two cycles and no cycle sees a half-built model.
    """

    def __init__(self):
        """Start idle."""
        self.pending = False
        self._lock = threading.Lock()
        self._request = None
        self._result = None
        self._running = False

    def request(self, cfg, label, text):
        """Build a runtime from ``text`` with parameters ``cfg`` (replaces a waiting request)."""
        with self._lock:
            self._request = (dict(cfg), label, text)
            if not self._running:
                self._running = True
                threading.Thread(target=self._run, name='rnea_model_loader', daemon=True).start()

    def take(self):
        """Return the newest (runtime or None, label, error or None, cfg) once, or None."""
        with self._lock:
            result, self._result = self._result, None
            self.pending = False
        return result

    def _run(self):
        while True:
            with self._lock:
                request, self._request = self._request, None
                if request is None:
                    self._running = False
                    return
            cfg, label, text = request
            try:
                result = (ModelRuntime(load_model(label, text, cfg), cfg), label, None, cfg)
            except Exception as exc:  # noqa: B902 - any failure must keep the previous model
                result = (None, label, f'robot description from {label} rejected, keeping the '
                          f'previous model: {exc}', cfg)
            with self._lock:
                self._result = result
                self.pending = True


class RneaNode(Node):
    """Inverse dynamics for the robot's joint states, published as efforts and commands."""

    def __init__(self, **kwargs):
        """Declare parameters, create the interfaces and load the model if a parameter gives it."""
        super().__init__('rnea', **kwargs)
        self._log = self.get_logger()
        self._rt = None
        self._applying = False
        self._topic_description = None
        self._description_note = None
        self._last_error = ''
        self._stamp = None
        self._last_joint_state = None
        self._stale = False
        self._commanding = False
        self._cmd_msg = Float64MultiArray()
        self._cmd_pub = None
        self._rate_timer = None
        self._wrench_pubs = {}
        self._next_wrenches = 0.0
        self._stats = node_io.CycleStats(time.monotonic())
        self._stamps = node_io.StampCheck()
        self._loader = BackgroundLoader()
        self.add_on_set_parameters_callback(self._on_set_parameters)
        for spec in node_params.PARAMETERS:
            value = _TYPES[spec.kind] if spec.default is None else spec.default
            self.declare_parameter(spec.name, value, descriptor(spec))
        self._cfg = {spec.name: self._initial_value(spec.name) for spec in node_params.PARAMETERS}
        self._create_interfaces()
        from rnea_ros.node.monitor import ModelMonitor      # ~/effort_residual, ~/contact, payload
        self._monitor = ModelMonitor(self)
        self._applying = True
        if self._description_source():
            self._reload_model(raise_errors=False)

    # -- set-up -----------------------------------------------------------------------------

    def _initial_value(self, name):
        try:
            return self.get_parameter(name).value
        except ParameterUninitializedException:
            return None   # declared by type only: "not set"

    def _create_interfaces(self):
        self._efforts_pub = self.create_publisher(JointState, '~/joint_efforts', INPUT_DEPTH)
        self._base_pub = None
        self._diag_pub = self.create_publisher(DiagnosticArray, '/diagnostics', INPUT_DEPTH)
        self.create_subscription(String, 'robot_description', self._on_description,
                                 DESCRIPTION_QOS)
        self.create_subscription(JointState, 'joint_states', self._on_joint_state, INPUT_DEPTH)
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
            raise ValueError(f'robot description from {label} rejected, keeping the previous '
                             f'model: {exc}') from None

    def _reload_model(self, cfg=None, raise_errors=True):
        """Build the model from the current description; on failure keep the old one."""
        cfg = self._cfg if cfg is None else cfg
        try:
            runtime, label = self._build_runtime(cfg)
        except ValueError as exc:
            self._last_error = str(exc)
            self._log.error(self._last_error)
            if raise_errors:
                raise
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
        wanted = {node_io.topic_token(j) for j in model.joint_names}
        for token in list(self._wrench_pubs):
            if token not in wanted:
                self.destroy_publisher(self._wrench_pubs.pop(token))
        for token in sorted(wanted - set(self._wrench_pubs)):
            self._wrench_pubs[token] = self.create_publisher(
                WrenchStamped, f'~/reaction_wrenches/{token}', INPUT_DEPTH)
        self._wrench_list = [self._wrench_pubs[node_io.topic_token(j)]
                             for j in model.joint_names]
        self._refresh_wrench_subscribers()

    def _refresh_wrench_subscribers(self):
        """Note which reaction-wrench topics have subscribers (polled, off the hot path)."""
        rt = self._rt
        if rt is None:
            return
        active = [pub.get_subscription_count() > 0 for pub in self._wrench_list]
        rt.wrench_targets = [(pub, msg) for pub, msg, on in
                             zip(self._wrench_list, rt.wrench_msgs, active) if on]
        rt.wrench_rows = [i for i, on in enumerate(active) if on]

    # -- parameters ------------------------------------------------------------------------

    def _on_set_parameters(self, params):
        joint_names = self._rt.model.joint_names if self._rt is not None else None
        for param in params:
            error = node_params.check_value(param.name, param.value, joint_names)
            if error:
                return SetParametersResult(successful=False, reason=error)
        if self._applying:
            try:
                self._apply({p.name: p.value for p in params})
            except ValueError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    def _apply(self, changes):
        """Apply validated parameter changes; raise ValueError to reject them all."""
        changes = {k: v for k, v in changes.items() if k in self._cfg}
        cfg = dict(self._cfg, **changes)
        if node_params.needs_rebuild(changes, cfg):
            runtime, label = self._build_runtime(cfg)
            if runtime is not None:
                self._cfg = cfg
                self._install(runtime, label)
        elif self._rt is not None:
            self._rt.update_settings(cfg)
        self._cfg = cfg
        if 'command_topic' in changes:
            self._set_command_topic(cfg['command_topic'])
        if 'rate' in changes:
            self._set_rate(cfg['rate'])
        if 'use_imu' in changes:
            self._set_imu_subscription(cfg['use_imu'])
        if 'joint_state_timeout' in changes:
            self._set_watchdog(cfg['joint_state_timeout'])
        if 'enabled' in changes:
            self._log.info('command output ' + ('enabled' if cfg['enabled'] else 'disabled'))
        if 'enabled' in changes and not cfg['enabled']:
            self._stop_commands(send_zero=True)

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
        source = self._description_source()
        if source[0] != 'topic robot_description':
            if self._description_note != source[0]:
                self._description_note = source[0]
                self._log.info(f'ignoring the robot_description topic: using {source[0]}')
            return
        self._loader.request(self._cfg, *source)

    def _take_loaded_model(self):
        """Install a model the background loader built (executor thread, between cycles)."""
        result = self._loader.take()
        if result is None:
            return
        runtime, label, error, cfg = result
        source = self._description_source()
        if source is None or source[0] != label:
            return                      # a parameter now names the description
        if cfg != self._cfg:
            self._loader.request(self._cfg, *source)   # parameters changed meanwhile
        elif error:
            self._last_error = error
            self._log.error(error)
        else:
            self._install(runtime, label)

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
        if self._stamps.zero_note and not self.get_parameter('use_sim_time').value:  # sim: t0 = 0
            self._log.warning('joint_states: ' + self._stamps.zero_note)
        if rt.joints.new_unknown:
            self._log.warning(f'joint_states names joints the model lacks (ignored): '
                              f'{list(rt.joints.new_unknown)}')
        now = time.monotonic()
        self._monitor.take_efforts(msg, rt.model.joint_names)
        self._last_joint_state = now
        self._stamp = stamp
        if self._stale:
            self._stale = False
            self._log.info('joint states resumed')
        if self._rate_timer is None:
            self._compute(now)

    def _on_rate_timer(self):
        if self._stamp is not None and not self._stale:
            self._compute(time.monotonic())

    def _on_desired_trajectory(self, msg):
        if self._rt is not None:
            error = self._rt.accelerations.from_trajectory(msg.joint_names, msg.points,
                                                           time.monotonic())
            if error:
                self._reject('desired_accelerations', error)

    def _on_desired_array(self, msg):
        if self._rt is not None:
            error = self._rt.accelerations.from_array(msg.data, time.monotonic())
            if error:
                self._reject('desired_accelerations_array', error)

    def _on_reference(self, msg):
        if self._rt is not None:
            error = self._rt.reference.from_trajectory(msg.joint_names, msg.points,
                                                       time.monotonic())
            if error:
                self._reject('reference', error)

    def _on_wrench(self, msg):
        if self._rt is not None:
            f, t = msg.wrench.force, msg.wrench.torque
            error = self._rt.wrenches.update(msg.header.frame_id,
                                             (f.x, f.y, f.z, t.x, t.y, t.z))
            if error:
                self._reject('external_wrenches', error)

    def _on_base_acceleration(self, msg):
        if self._rt is not None:
            lin, ang = msg.accel.linear, msg.accel.angular
            error = self._rt.base_acceleration.update(
                msg.header.frame_id, (lin.x, lin.y, lin.z, ang.x, ang.y, ang.z), time.monotonic())
            if error:
                self._reject('base_acceleration', error)

    def _on_imu(self, msg):
        imu = self._rt.base_acceleration.imu if self._rt is not None else None
        if imu is not None:
            w, a, stamp = msg.angular_velocity, msg.linear_acceleration, msg.header.stamp
            error = imu.update(msg.header.frame_id, (w.x, w.y, w.z), (a.x, a.y, a.z),
                               msg.angular_velocity_covariance[0],
                               msg.linear_acceleration_covariance[0],
                               stamp.sec + 1e-9 * stamp.nanosec, time.monotonic())
            if error:
                self._reject('imu', error)

    # -- the cycle -------------------------------------------------------------------------

    def _accelerations(self, rt, now):
        """Fill rt.qdd for the mode; return the velocity vector the mode uses."""
        mode = rt.settings.mode
        if mode == 'inverse_dynamics':
            rt.qdd_j[:] = rt.accelerations.current(now)
        elif mode == 'computed_torque':
            rt.reference.command(rt.q_j, rt.qd_j, rt.settings.kp, rt.settings.kd, now, rt.qdd_j)
        else:
            rt.qdd_j[:] = 0.0
            if mode == 'gravity_compensation':
                return rt.zero_v
        return rt.qd

    def _compute(self, now):
        rt = self._rt
        if not rt.joints.ready:
            return
        start = time.perf_counter()
        settings = rt.settings
        qd = self._accelerations(rt, now)
        f_ext = rt.wrenches.f_ext
        gravity, base = rt.base_acceleration.select(now, settings.gravity)
        try:
            tau = inverse_dynamics(rt.model, rt.q, qd, rt.qdd, f_ext, gravity,
                                   base_acceleration=base, ws=rt.ws)
            wrenches = None
            if settings.publish_reaction_wrenches and rt.wrench_rows and \
                    now >= self._next_wrenches:
                self._next_wrenches = now + settings.wrench_period
                wrenches = reaction_wrenches(rt.model, rt.q, qd, rt.qdd, f_ext, gravity,
                                             base_acceleration=base, ws=rt.ws)
        except ValueError as exc:       # inputs are validated: a guard, not a code path
            self._reject('computation', str(exc))
            return
        if not np.isfinite(tau).all() or (wrenches is not None and
                                          not np.isfinite(wrenches).all()):
            self._reject('output', 'non-finite efforts computed; nothing published')
            return
        clamped = settings.limiter.clamp(tau[rt.offset_v:], rt.effort.view)
        self._publish_efforts(rt, qd)
        self._monitor.cycle(rt, self._stamp, f_ext, gravity, self._cfg['contact_thresholds'],
                            base)
        if wrenches is not None:
            self._publish_wrenches(rt, wrenches)
        if rt.offset_v:
            self._publish_base_wrench(rt, tau)
        if self._cmd_pub is not None and self._cfg['enabled']:
            self._publish_command(rt, now)
        self._stats.cycle(time.perf_counter() - start, clamped)

    def _publish_efforts(self, rt, qd):
        msg = rt.effort_msg
        msg.header.stamp = self._stamp
        rt.position.view[:] = rt.q_j
        rt.velocity.view[:] = qd[rt.offset_v:]
        msg.position = rt.position.array
        msg.velocity = rt.velocity.array
        msg.effort = rt.effort.array
        self._efforts_pub.publish(msg)

    def _publish_wrenches(self, rt, wrenches):
        stamp = self._stamp
        for (pub, msg), w in zip(rt.wrench_targets, wrenches[rt.wrench_rows].tolist()):
            msg.header.stamp = stamp
            force, torque = msg.wrench.force, msg.wrench.torque
            force.x, force.y, force.z, torque.x, torque.y, torque.z = w
            pub.publish(msg)

    def _publish_base_wrench(self, rt, tau):
        msg = rt.base_msg
        msg.header.stamp = self._stamp
        force, torque = msg.wrench.force, msg.wrench.torque
        force.x, force.y, force.z, torque.x, torque.y, torque.z = tau[:6].tolist()
        self._base_pub.publish(msg)

    def _publish_command(self, rt, now):
        limiter = rt.settings.limiter
        if not self._commanding:
            self._commanding = True
            limiter.start_ramp(now)
            self._log.info(f"commands start (ramp {self._cfg['ramp_time']} s)")
        self._cmd_msg.data = rt.settings.fill_command(rt.effort.view, limiter.scale(now))
        self._cmd_pub.publish(self._cmd_msg)

    def _stop_commands(self, send_zero):
        """Stop command output (the ramp restarts next time); optionally send one zero."""
        if self._commanding and send_zero and self._cmd_pub is not None and self._rt:
            self._cmd_msg.data = self._rt.settings.zero_command
            self._cmd_pub.publish(self._cmd_msg)
        self._commanding = False

    def _watchdog(self):
        if self._loader.pending:
            self._take_loaded_model()
        self._refresh_wrench_subscribers()
        if self._last_joint_state is None or self._stale:
            return
        if time.monotonic() - self._last_joint_state > self._cfg['joint_state_timeout']:
            self._stale = True
            self._last_error = (f"no joint states for {self._cfg['joint_state_timeout']} s: "
                                'commands stopped')
            self._log.error(self._last_error)
            self._stop_commands(send_zero=self._cfg['zero_on_timeout'])

    def shutdown_outputs(self):
        """Stop commanding before the node goes away (one zero command if zero_on_timeout)."""
        self._stop_commands(send_zero=self._cfg['zero_on_timeout'])

    # -- diagnostics -----------------------------------------------------------------------

    def _publish_diagnostics(self):
        now = time.monotonic()
        period = self._stats.summary(now)
        self._stats.reset(now)
        rt = self._rt
        ready = rt is not None and rt.joints.ready
        level, message = node_io.diagnostic_level(rt is not None, ready, self._stale, period)
        status = DiagnosticStatus(level=bytes([level]), name=f'{self.get_name()}: rnea',
                                  message=message,
                                  hardware_id=rt.model.name if rt is not None else '')
        values = {
            'model': repr(rt.model) if rt is not None else 'none',
            'mode': self._cfg['mode'],
            'joints_ready': str(ready),
            'missing_joints': ', '.join(rt.joints.missing()) if rt is not None else '',
            'stale_inputs': ', '.join(self._stale_inputs(now)),
            'commanding': str(self._commanding and not self._stale),
            'enabled': str(self._cfg['enabled']),
            'ramp_scale': f'{rt.settings.limiter.scale(now):.3f}' if rt is not None else '',
            'base_acceleration_source': self._base_source(rt, now),
            'ignored_joint_names': ', '.join(sorted(rt.joints.unknown)) if rt else '',
            'last_error': self._last_error,
        }
        values.update({key: f'{value:.1f}' if isinstance(value, float) else str(value)
                       for key, value in period.items()})
        values.update(self._monitor.diagnostics(self._cfg))
        status.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        msg = DiagnosticArray(status=[status])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._diag_pub.publish(msg)

    @staticmethod
    def _base_source(rt, now):
        """Return where the base acceleration comes from now: topic, imu, parameter or none."""
        if rt is None:
            return 'none'
        rt.base_acceleration.select(now, rt.settings.gravity)
        return rt.base_acceleration.source

    def _stale_inputs(self, now):
        rt = self._rt
        stale = ['joint_states'] if self._stale else []
        if rt is None:
            return stale
        if rt.settings.mode == 'inverse_dynamics' and rt.accelerations.stamp > -np.inf \
                and rt.accelerations.stale(now):
            stale.append('desired_accelerations')
        if rt.settings.mode == 'computed_torque' and now - rt.reference.stamp > \
                rt.reference.timeout:
            stale.append('reference')
        imu = rt.base_acceleration.imu
        if imu is not None and not imu.fresh(now):
            stale.append('imu')
        return stale


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


def main(args=None):
    """Run the node until Ctrl-C / SIGTERM; return the exit code."""
    args = sys.argv if args is None else args
    parser = argparse.ArgumentParser(description='rnea ROS 2 node')
    parser.add_argument('--executor', choices=('events', 'single'), default='events',
                        help='events: rclpy EventsExecutor (default, lowest CPU and latency); '
                        'single: SingleThreadedExecutor')
    options = parser.parse_args(remove_ros_args(args)[1:])
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)
    stop = []
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.append(True))
    try:
        node = RneaNode()
    except ParameterException as exc:
        print(f'rnea: invalid parameters: {exc}', file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    executor = make_executor(options.executor)
    try:
        spin_until_signal(node, executor, lambda: bool(stop))
    finally:
        node.shutdown_outputs()
        executor.shutdown(timeout_sec=1.0)
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


if __name__ == '__main__':
    sys.exit(main())
