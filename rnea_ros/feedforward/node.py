"""The ``trajectory_feedforward`` node: joint trajectories in, the same with model efforts out.

Subscribes to ``input_topic`` (trajectory_msgs/JointTrajectory, default ``~/joint_trajectory``,
where a planner or script publishes), fills every point's ``effort`` with the model's inverse
dynamics plus friction, rotor inertia and payload (:mod:`rnea_ros.feedforward.filler`), and
publishes the trajectory to ``output_topic`` (default
``joint_trajectory_controller/joint_trajectory``, the controller's topic, relative so it follows
the namespace).  A trajectory that cannot be filled (unknown joints, wrong lengths, NaN, times
that do not increase, no model yet) is logged with the reason and not published.

The model comes from the ``robot_description`` topic (transient local, as robot_state_publisher
publishes it) or the ``robot_description`` / ``urdf_file`` parameters, and is the rnea node's
model: every parameter the rnea node builds its model from
(:func:`rnea_ros.node.params.model_parameter_names`: the friction law and all its coefficients,
effort offsets, rotor inertia, the joints they refer to, the base and the payload) is declared
here with the rnea node's descriptor and checks, and the model is built by the same function
(:func:`rnea_ros.node.runtime.load_model`, i.e. :func:`rnea_ros.node.params.node_model`), so one
parameter file (``rnea-ros identify --params-out``) gives both nodes one model.  ``gravity`` too.
``hold_joints`` / ``hold_positions``: model joints no trajectory names (e.g. the fingers of an
arm trajectory), held at these positions.
"""

import math
import signal
import sys

from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult
import rclpy
from rclpy.exceptions import ParameterException
from rclpy.node import Node
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.signals import SignalHandlerOptions
from rnea_ros.feedforward.filler import TrajectoryFiller
from rnea_ros.feedforward.messages import fill_trajectory
from rnea_ros.node import param_guard
from rnea_ros.node import params as node_params
from rnea_ros.node import runtime
from std_msgs.msg import String
from trajectory_msgs.msg import JointTrajectory

# The rnea node's parameters that make its model (from its table, not copied) and gravity,
# declared here with the same descriptors and checks.
SHARED = node_params.model_parameter_names() + ('gravity',)
OWN = {
    'input_topic': ('~/joint_trajectory', 'JointTrajectory input (from a planner or script)'),
    'output_topic': ('joint_trajectory_controller/joint_trajectory',
                     "JointTrajectory output with efforts: the controller's joint_trajectory "
                     'topic (relative: follows the namespace)'),
}
HOLD = {
    'hold_joints': ([], 'model joints no trajectory names, held at hold_positions'),
    'hold_positions': ([], 'positions (rad, m) of hold_joints, one per name; [] = all 0'),
}
# The kind of every parameter that can change at run time (param_guard checks the ROS type
# of each new value against it before anything reads the value; issue 29).
KINDS = dict({name: node_params.SPECS[name].kind for name in SHARED},
             hold_joints='string_array', hold_positions='double_array')
DESCRIPTION_QOS = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL)


def _plain(value, name):
    """Return a parameter value as a plain Python value in its table type (lists for arrays)."""
    return node_params.normalise(name, runtime.plain(value))[0]


def declare_shared(node, spec):
    """Declare one of the rnea node's parameters on ``node`` as the rnea node declares it.

    Same descriptor (:func:`rnea_ros.node.runtime.descriptor`, dynamic typing); a file's
    ``name: []`` (read by rcl as "not set") keeps the typed default; a value typed as YAML reads
    it (``100``, ``[0, 5]``, ``off``) is stored in the table's type
    (:func:`rnea_ros.node.runtime.typed_parameter`).
    """
    node.declare_parameter(spec.name, spec.default, runtime.descriptor(spec))
    param = node.get_parameter_or(spec.name)
    if param.type_ == Parameter.Type.NOT_SET:
        node.undeclare_parameter(spec.name)
        node.declare_parameter(spec.name, spec.default, runtime.descriptor(spec),
                               ignore_override=True)
        param = node.get_parameter(spec.name)
    typed = runtime.typed_parameter(param)
    if typed is not param:
        node.set_parameters([typed])


def build_filler(cfg, topic_description=None):
    """Return (source, TrajectoryFiller) for a configuration, or (None, None) with no model.

    The model is the rnea node's for the same parameters: :func:`node_params.node_config` (every
    parameter at its default, then ours, normalised and checked) and the rnea node's
    :func:`runtime.load_model`.
    """
    if cfg['robot_description']:
        label, text = 'parameter robot_description', cfg['robot_description']
    elif cfg['urdf_file']:
        label, text = 'file ' + cfg['urdf_file'], cfg['urdf_file']
    elif topic_description:
        label, text = 'topic robot_description', topic_description
    else:
        return None, None
    model_cfg = node_params.node_config({name: cfg[name] for name in SHARED})
    model = runtime.load_model(label, text, model_cfg)
    names, positions = list(cfg['hold_joints']), list(cfg['hold_positions'])
    if positions and len(positions) != len(names):
        raise ValueError(f'hold_positions has {len(positions)} values for {len(names)} '
                         'hold_joints')
    held = dict(zip(names, positions or [0.0] * len(names)))
    return label, TrajectoryFiller(model, held=held, gravity=cfg['gravity'])


class TrajectoryFeedforwardNode(Node):
    """Fill JointTrajectory points with model efforts for joint_trajectory_controller."""

    def __init__(self, **kwargs):
        """Declare the parameters, load a model if a parameter gives one, connect the topics."""
        super().__init__(kwargs.pop('node_name', 'trajectory_feedforward'), **kwargs)
        self._log = self.get_logger()
        self._topic_description = None
        self._filler = None
        if hasattr(self, 'add_pre_set_parameters_callback'):    # rclpy >= Iron
            self.add_pre_set_parameters_callback(param_guard.guarded_pre_set(self._typed))
        for name in SHARED:
            declare_shared(self, node_params.SPECS[name])
        for name, (default, text) in OWN.items():
            self.declare_parameter(name, default, ParameterDescriptor(
                description=text, read_only=True))
        for name, (default, text) in HOLD.items():      # [] = not set: typed when set
            descriptor = ParameterDescriptor(description=text, dynamic_typing=True)
            self.declare_parameter(name, default, descriptor)
            if self.get_parameter_or(name).type_ == Parameter.Type.NOT_SET:    # file: `[]`
                self.undeclare_parameter(name)
                self.declare_parameter(name, default, descriptor, ignore_override=True)
            param = self.get_parameter(name)
            typed = param_guard.converted(param, KINDS[name])   # [] is a byte array in rclpy
            if typed is not param:
                self.set_parameters([typed])
        error = next(filter(None, (self._type_reason(self.get_parameter(name))
                                   for name in KINDS)), None)    # a file's wrong type
        if error:
            raise ValueError(error)
        self._cfg = self._config({})
        error = self._check(self._cfg) or self._topics_error(self._cfg)
        if error:
            raise ValueError(error)
        self._source, self._filler = build_filler(self._cfg)
        if self._filler is not None:
            self._log.info(self._loaded_line())
        self.add_on_set_parameters_callback(
            param_guard.guarded_on_set(self._on_set_parameters, self._log))
        self._pub = self.create_publisher(JointTrajectory, self._cfg['output_topic'], 10)
        self.create_subscription(JointTrajectory, self._cfg['input_topic'], self._on_trajectory,
                                 10)
        self.create_subscription(String, 'robot_description', self._on_description,
                                 DESCRIPTION_QOS)
        self._log.info(f'feed-forward from {self.resolve_topic_name(self._cfg["input_topic"])} '
                       f'to {self.resolve_topic_name(self._cfg["output_topic"])}')
        param_guard.guard_services(self, self._log)     # no request can end the node

    @staticmethod
    def _typed(params):
        """Pre-set callback: values in their kinds' types (never raises; see param_guard)."""
        return [runtime.typed_parameter(p) if p.name in node_params.SPECS
                else param_guard.converted(p, KINDS[p.name]) if p.name in KINDS else p
                for p in params]

    @staticmethod
    def _type_reason(param):
        """Return why a new value's ROS type does not fit its parameter (deletes too), or None."""
        if param.name in node_params.SPECS:
            return runtime.type_reason(param)
        if param.name in KINDS:
            return param_guard.type_reason(param.name, KINDS[param.name], param)
        return None

    def _topics_error(self, cfg):
        for name in OWN:
            error = param_guard.topic_reason(self, name, cfg[name])
            if error:
                return error
        return None

    def _config(self, changes):
        cfg = {name: _plain(self.get_parameter(name).value, name)
               for name in SHARED + tuple(OWN) + tuple(HOLD)}
        cfg.update({p.name: _plain(p.value, p.name) for p in changes})
        for name in HOLD:
            cfg[name] = list(cfg[name] or [])
        return cfg

    @staticmethod
    def _check(cfg):
        for name in SHARED:
            error = node_params.check_value(name, cfg[name])
            if error:
                return error
        if any(not isinstance(n, str) or not n for n in cfg['hold_joints']):
            return 'hold_joints must be a list of joint names'
        if any(isinstance(x, (bool, str)) or not isinstance(x, (int, float)) or
               not math.isfinite(x) for x in cfg['hold_positions']):
            return 'hold_positions must be a list of finite numbers'
        return None

    def _loaded_line(self):
        model = self._filler.model
        given = [name for name in SHARED if name not in ('robot_description', 'urdf_file') and
                 self._cfg[name] != node_params.SPECS[name].default]
        return (f"model '{model.name}' from {self._source}: {model.nv} joints "
                f'{list(model.joint_names)}; model parameters set: {given or "none"}')

    def _on_set_parameters(self, params):
        error = next(filter(None, map(self._type_reason, params)), None)   # deletes, types
        if error:
            return SetParametersResult(successful=False, reason=error)
        cfg = self._config(params)
        error = self._check(cfg)
        if error is None:
            try:
                source, filler = build_filler(cfg, self._topic_description)
            except (ValueError, OSError) as exc:
                error = str(exc)
        if error:
            return SetParametersResult(successful=False, reason=error)
        self._cfg, self._source, self._filler = cfg, source, filler
        return SetParametersResult(successful=True)

    def _on_description(self, msg):
        self._topic_description = msg.data
        if self._cfg['robot_description'] or self._cfg['urdf_file']:
            return
        try:
            self._source, self._filler = build_filler(self._cfg, msg.data)
        except (ValueError, OSError) as exc:
            self._log.error(f'robot description rejected (previous model kept): {exc}')
            return
        self._log.info(self._loaded_line())

    def _on_trajectory(self, msg):
        if self._filler is None:
            self._log.warning('trajectory not forwarded: no robot model yet (robot_description '
                              'topic or parameter, or urdf_file)',
                              throttle_duration_sec=5.0)
            return
        try:
            fill_trajectory(self._filler, msg)
        except ValueError as exc:
            self._log.error(f'trajectory rejected, nothing published: {exc}',
                            throttle_duration_sec=1.0)
            return
        self._pub.publish(msg)


def main(args=None, stop=None):
    """Run the node until Ctrl-C / SIGTERM; return the exit code."""
    from rnea_ros.node.rnea_node import make_executor, serve
    stop = [] if stop is None else stop
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.append(True))
    try:
        rclpy.init(args=sys.argv if args is None else args,
                   signal_handler_options=SignalHandlerOptions.NO)
        node = TrajectoryFeedforwardNode()
    except (ParameterException, ValueError, TypeError, OSError, RuntimeError) as exc:
        print(f'trajectory_feedforward: cannot start: {param_guard.one_line(exc)}',
              file=sys.stderr)
        rclpy.try_shutdown()
        return 2
    executor = make_executor('events')
    return serve(node, executor, stop)


if __name__ == '__main__':
    sys.exit(main())
