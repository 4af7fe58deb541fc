"""What the rnea node builds once per model, off the executor thread (no publishers here).

:func:`load_model` reads the description (a file through the core's
:func:`rnea_ros.core.urdf.read_urdf_file`: regular files only, size-limited, so a FIFO or
``/dev/zero`` is an error instead of a hung executor),
:class:`ModelRuntime` holds the model's input bookkeeping, state arrays and preallocated output
messages, :class:`BackgroundLoader` builds them in a thread while the executor keeps serving.
"""

import copy
import threading

from geometry_msgs.msg import WrenchStamped
import numpy as np
from rcl_interfaces.msg import FloatingPointRange, ParameterDescriptor
from rclpy.parameter import Parameter
from rnea_ros import inverse_dynamics, reaction_wrenches
from rnea_ros.core.urdf import parse_urdf, read_urdf_file
from rnea_ros.node import bookkeeping as node_io
from rnea_ros.node import checks as node_checks
from rnea_ros.node import param_guard
from rnea_ros.node import params as node_params
from rnea_ros.node.bookkeeping import wire
from sensor_msgs.msg import JointState

_TYPES = {
    'bool': Parameter.Type.BOOL,
    'double': Parameter.Type.DOUBLE,
    'string': Parameter.Type.STRING,
    'double_array': Parameter.Type.DOUBLE_ARRAY,
    'string_array': Parameter.Type.STRING_ARRAY,
}
_BASE_Q = np.array([0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0])


def descriptor(spec):
    """Return the ParameterDescriptor of a :class:`node_params.ParamSpec`.

    Every parameter is declared with dynamic typing, so that a value typed as YAML reads it
    (``off`` a boolean, ``100`` an integer, ``[]`` untyped) reaches
    :func:`node_params.normalise` instead of failing rclpy's type check (at start-up that
    killed the node); :func:`typed_parameter` stores it in the parameter's own type and
    :func:`node_params.check_value` refuses any other type with a reason.
    """
    desc = ParameterDescriptor(name=spec.name, type=_TYPES[spec.kind].value,
                               description=spec.description, dynamic_typing=True)
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
    if spec.default == [] and spec.kind.endswith('_array'):
        constraints.append('[] = not set')
    desc.additional_constraints = '; '.join(constraints)
    return desc


def plain(value):
    """Return a parameter value with arrays as lists (rclpy gives array.array for doubles)."""
    return list(value) if isinstance(value, (list, tuple)) or hasattr(value, 'typecode') \
        else value


def type_reason(param):
    """Return why a Parameter's ROS type does not fit its table entry, or None (issue 29).

    :func:`rnea_ros.node.param_guard.type_reason` for the table's kind; a boolean given to a
    string parameter fits when :func:`node_params.normalise` reads it as one of its words
    (YAML's unquoted ``off``).  Names outside the table are not checked here.
    """
    spec = node_params.SPECS.get(param.name)
    if spec is None:
        return None
    if spec.kind == 'string' and param.type_ == Parameter.Type.BOOL:
        error = node_params.normalise(param.name, param.value)[1]
        return error and error.replace(f'{param.name} got', f'{param.name} expects a string, '
                                       'got', 1)
    return param_guard.type_reason(param.name, spec.kind, param)


def typed_parameter(param):
    """Return ``param`` in its table type (:func:`node_params.normalise`), or as it is.

    Never raises (it runs in rclpy's pre-set callback, where an exception ends the node): a
    value of a type that does not fit (:func:`type_reason`) or that cannot be normalised is
    returned unchanged, and the on-set check refuses it with the reason.  An empty list becomes
    the parameter's own empty array (rclpy would type [] as a byte array, `ros2 param set kp
    "[]"` sends a boolean array).
    """
    spec = node_params.SPECS.get(param.name)
    if spec is None or param.type_ == Parameter.Type.NOT_SET or type_reason(param):
        return param
    value, error = node_params.normalise(param.name, plain(param.value))
    if error:
        return param
    return param_guard.converted(param, spec.kind, value)


def rejection(label, exc, keeping=''):
    """Return the one line saying why a description (or the parameters for it) was refused.

    A :class:`node_params.ParameterError` is the parameters' fault, not the description's: the
    line says so instead of "robot description rejected".
    """
    if isinstance(exc, node_params.ParameterError):
        return f'invalid parameters for the model from {label}{keeping}: {exc}'
    return f'robot description from {label} rejected{keeping}: {exc}'


_PARSED = [None]       # (XML, its parsed records, {floating_base: bare model}): the last one


def parsed_description(xml, floating_base=None):
    """Return :func:`parse_urdf` of ``xml``, a copy of the last one when the text is the same.

    A node parses one description again and again: each parameter change that needs a model is
    checked by building one, and the rebuild follows.  Parsing the panda takes about 9 ms of the
    executor thread; a copy of the records, a tenth of that.  With ``floating_base`` (True or
    False) return (records, the model of the records without options), the model kept too (a
    RobotModel is frozen).  The executor and the loader thread both call it: the entry is
    replaced whole, never changed in place but for adding a bare model.
    """
    from rnea_ros.core.model import RobotModel
    entry = _PARSED[0]
    if entry is None or entry[0] != xml:
        entry = (xml, parse_urdf(xml), {})
        _PARSED[0] = entry
    description = copy.deepcopy(entry[1])
    if floating_base is None:
        return description
    bare = entry[2].get(bool(floating_base))
    if bare is None:
        name, links, joints = copy.deepcopy(entry[1])
        bare = RobotModel.from_specs(links, joints, floating_base=bool(floating_base), name=name)
        entry[2][bool(floating_base)] = bare
    return description, bare


def load_model(label, text, cfg):
    """Build the model of a description (file path or XML) with the friction parameters.

    The description is read and parsed once (:mod:`rnea_ros.core.urdf`: a file must be a
    bounded regular file, so a FIFO or ``/dev/zero`` is refused without blocking); the model is
    rebuilt from the parsed records when friction or a payload needs the joint names first.
    """
    xml = read_urdf_file(text) if label.startswith('file') else text
    description, bare = parsed_description(xml, cfg['floating_base'])
    return node_params.node_model(description, cfg, bare)


class ModelRuntime:
    """Everything built once per model: inputs, state arrays, preallocated output messages."""

    def __init__(self, model, cfg):
        """Allocate for ``model``; raise ValueError when the parameters do not fit it."""
        self.model = model
        self.source = None      # (label, text, cfg) when the background loader built it
        self.warnings = list(model.warnings) + node_checks.check_model(model)
        self.limits = (model.lower_limits, model.upper_limits, model.velocity_limits)
        self.settings = node_io.NodeSettings(model.joint_names, model.effort_limits, cfg,
                                             self.limits)
        names = model.joint_names
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
        self.joints.set_fixed(*node_params.fixed_joint_positions(cfg, names))
        self.accelerations = node_io.AccelerationInput(names, cfg['desired_timeout'])
        self.reference = node_io.ReferenceInput(names, model.mimic, cfg['desired_timeout'])
        self.wrenches = node_io.WrenchInput(
            model.link_names, [link for link, (body, _, _) in model.link_body.items() if body < 0])
        self.ws = model.create_workspace()
        # The efforts message and the reaction wrenches are kept serialized (bookkeeping.wire):
        # q, qd and the clamped efforts are written straight into the message bytes.
        self.efforts_out = wire.joint_state_output(JointState, names)
        self.position, self.velocity, self.effort = (
            self.efforts_out.views[k] for k in ('position', 'velocity', 'effort'))
        self.wrench_outs = [wire.wrench_output(WrenchStamped, link) for link in model.child_links]
        self.wrench_targets, self.wrench_rows = [], []    # topics with subscribers
        self.base_acceleration = node_io.BaseAccelerationInput(
            model.root_link, cfg['base_acceleration'], cfg['desired_timeout'],
            model.floating_base)
        self.base_acceleration.set_imu(cfg['use_imu'], model,
                                       cfg['imu_angular_acceleration_filter'],
                                       cfg['desired_timeout'])
        self.base_msg = WrenchStamped()
        self.base_msg.header.frame_id = model.root_link
        # Compile (numba) and check the model once, off the hot path.
        inverse_dynamics(model, self.q, self.zero_v, self.zero_v, ws=self.ws)
        reaction_wrenches(model, self.q, self.zero_v, self.zero_v, ws=self.ws)

    def update_settings(self, cfg):
        """Rebuild the settings from new parameters, keeping the ramp state."""
        settings = node_io.NodeSettings(self.model.joint_names, self.model.effort_limits, cfg,
                                        self.limits)
        fixed = node_params.fixed_joint_positions(cfg, self.model.joint_names)
        self.base_acceleration.set_default(cfg['base_acceleration'])
        self.base_acceleration.set_imu(cfg['use_imu'], self.model,
                                       cfg['imu_angular_acceleration_filter'],
                                       cfg['desired_timeout'])
        settings.limiter.ramp_start = self.settings.limiter.ramp_start
        self.settings = settings
        self.joints.set_fixed(*fixed)
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
                runtime = ModelRuntime(load_model(label, text, cfg), cfg)
                runtime.source = (label, text, cfg)       # what it was built from
                result = (runtime, label, None, cfg)
            except Exception as exc:  # noqa: B902 - any failure must keep the previous model
                result = (None, label, rejection(label, exc), cfg)
            with self._lock:
                self._result = result
                self.pending = True
