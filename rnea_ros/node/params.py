"""The rnea node's parameters: one table of names, types, defaults, ranges and descriptions.

The table is plain Python (no ROS import), so the node declares its parameters from it, the tests
compare it with ``config/rnea.yaml``, and :func:`check_value` validates a new value with a reason
that the node's on-set-parameters callback returns to the caller.

Values arrive typed as YAML reads them (``-p name:=value``, parameter files and ``ros2 param
set`` all guess the type from the text): :func:`normalise` is the one rule that turns them into
the table's types (``off``, read as false, is the word 'off'; integers are doubles; ``[]`` is the
parameter's own empty array) for every parameter of the table, those other modules add included.

Per-joint arrays (``kp``, ``kd``, ``max_effort``) hold either one value for every joint or one
value per model joint, in model joint order (the order of ``name`` in ``~/joint_efforts``).
``fixed_joints`` / ``fixed_joint_positions`` (parallel arrays, :func:`fixed_joint_positions`)
hold joints that no driver publishes.

Joint friction and rotor inertia (``friction_viscous``, ``friction_coulomb``, ``armature``):
ROS parameters cannot be maps, so a name -> value map is given as the parallel arrays
``friction_joints`` (names) and the coefficient arrays (one value per name, or one for all the
named joints).  Without ``friction_joints`` the arrays hold one value for all the
``command_joints`` (default: all model joints) or one value per command joint, in that order;
joints outside that list get 0.  :func:`joint_coefficients` turns them into the maps the core's
``RobotModel.from_urdf_string`` takes.
"""

from collections import Counter
from dataclasses import dataclass
import math

import numpy as np
from rnea_ros.core.layout import DEFAULT_GRAVITY
from rnea_ros.core.sensor import SENSOR_OPTIONS
from rnea_ros.node import monitor_params, observer_params
from rnea_ros.node import payload_estimation_params

MODES = ('inverse_dynamics', 'gravity_compensation', 'gravity_coriolis', 'computed_torque')

# Parameters whose change rebuilds the model (from the current description).
MODEL_PARAMETERS = ('robot_description', 'urdf_file', 'floating_base', 'friction_joints',
                    'friction_viscous', 'friction_coulomb', 'armature', 'use_urdf_friction',
                    'friction_viscous_negative', 'friction_coulomb_negative',
                    'friction_stribeck', 'effort_offset', 'friction_law', 'coulomb_band',
                    'stribeck_velocity', 'friction_coulomb_band', 'friction_stribeck_velocity',
                    *SENSOR_OPTIONS)
# Friction, offset, armature and sensor coefficients: maps by joint name (joint_coefficients()).
COEFFICIENT_PARAMETERS = ('friction_viscous', 'friction_coulomb', 'armature',
                          'friction_viscous_negative', 'friction_coulomb_negative',
                          'friction_stribeck', 'effort_offset', 'friction_coulomb_band',
                          'friction_stribeck_velocity', *SENSOR_OPTIONS)
# The friction law's settings (rnea_ros.core.friction), passed to the model when set.
LAW_PARAMETERS = ('friction_law', 'coulomb_band', 'stribeck_velocity')
# Per-joint arrays: one value for all joints or one per model joint.
PER_JOINT_PARAMETERS = ('kp', 'kd', 'max_effort')
GAINS = {'kp': 'position', 'kd': 'velocity'}     # never empty: [] is refused, not 0


class ParameterError(ValueError):
    """Parameters that do not fit the model (not a fault of the robot description)."""


@dataclass(frozen=True)
class ParamSpec:
    """One parameter: its type, default and documentation (with units, REP 103)."""

    name: str
    kind: str                 # 'bool', 'double', 'string', 'double_array', 'string_array'
    default: object           # [] for arrays: "not set" (every parameter has a value)
    description: str
    low: float = None         # inclusive bounds for doubles and each element of double arrays
    high: float = None
    choices: tuple = ()
    constraints: str = ''


PARAMETERS = (
    ParamSpec('robot_description', 'string', '',
              'URDF XML of the robot. When set (or urdf_file is set) it is used instead of the '
              'robot_description topic. Setting it at run time reloads the model.'),
    ParamSpec('urdf_file', 'string', '',
              'Path of a URDF file, used when robot_description is empty. Setting it at run '
              'time reloads the model.'),
    ParamSpec('floating_base', 'bool', False,
              'Model the root link as a free-flying base (base at the identity pose, at rest; '
              'the base wrench is published on ~/base_wrench).'),
    ParamSpec('mode', 'string', 'inverse_dynamics',
              'inverse_dynamics: tau = ID(q, qd, qdd_desired, f_ext); gravity_compensation: '
              'tau = ID(q, 0, 0, f_ext); gravity_coriolis: tau = ID(q, qd, 0, f_ext); '
              'computed_torque: tau = ID(q, qd, qdd_ref + kp (q_ref - q) + kd (qd_ref - qd), '
              'f_ext) with the reference from ~/reference.', choices=MODES),
    ParamSpec('gravity', 'double_array', list(DEFAULT_GRAVITY),
              'Gravity acceleration [x, y, z] in m/s^2, in the root link frame.',
              low=-1000.0, high=1000.0, constraints='exactly 3 finite values'),
    ParamSpec('rate', 'double', 0.0,
              'Computation rate in Hz. 0: compute each time joint states arrive (event '
              'driven); > 0: compute on a fixed-rate timer from the latest inputs.',
              low=0.0, high=10000.0),
    ParamSpec('desired_timeout', 'double', 0.1,
              'Seconds (steady clock) after which desired accelerations and the velocity and '
              'acceleration of the computed-torque reference count as zero.',
              low=0.001, high=3600.0),
    ParamSpec('reference_sync', 'bool', False,
              'computed_torque, event driven (rate 0): answer a joint state only once a '
              '~/reference point stamped at or after its stamp is in (header.stamp + '
              'time_from_start of points[0]), up to desired_timeout behind the stream. A '
              'header stamp of 0 is time 0 (the first point of a simulated clock); against '
              'joint states stamped on the wall clock it is far behind, so a reference stamped '
              '0 there is not waited for; under a simulated clock, a publisher that leaves the '
              'stamp 0 gets no answers for the first desired_timeout. For lock-step '
              'simulators: the command then never uses the reference of the previous step. '
              'Off: the newest reference is used.'),
    ParamSpec('joint_state_timeout', 'double', 0.5,
              'Seconds (steady clock) without joint states after which commands stop and '
              'diagnostics report ERROR.', low=0.001, high=3600.0),
    ParamSpec('publish_reaction_wrenches', 'bool', True,
              'Publish ~/reaction_wrenches/<joint> (one WrenchStamped per joint; computed and '
              'sent only while a topic has subscribers).'),
    ParamSpec('reaction_wrenches_rate', 'double', 10.0,
              'Rate in Hz at which each ~/reaction_wrenches/<joint> topic with subscribers is '
              'sent (spread round robin over the cycles). 0: every topic every cycle, which '
              'costs a Python publish per topic per cycle (too much at 1 kHz on a big robot); '
              'the default 10 Hz adds 320 publishes a second on a 32-joint robot.',
              low=0.0, high=10000.0),
    ParamSpec('command_topic', 'string', '',
              'Topic for std_msgs/Float64MultiArray effort commands (the format of ros2_control '
              'forward_command_controller), e.g. /effort_controller/commands. Empty: no '
              'commands.'),
    ParamSpec('command_joints', 'string_array', [],
              'Joint order of the command array. []: all model joints in model order.',
              constraints='names of model joints, no duplicates'),
    ParamSpec('fixed_joints', 'string_array', [],
              'Joints no driver publishes (e.g. the fingers of an arm-only driver), held at '
              'fixed_joint_positions with velocity 0 so that the node computes without them in '
              'joint_states; a joint_states message that names one wins from then on. []: '
              'none (the node waits until every model joint has a position).',
              constraints='names of model joints, no duplicates'),
    ParamSpec('fixed_joint_positions', 'double_array', [],
              'Positions in rad or m of the fixed_joints, in their order (one value for all, '
              'or one per fixed joint). []: 0 for every fixed joint.',
              low=-1e6, high=1e6),
    ParamSpec('clamp_efforts', 'bool', True,
              'Clamp efforts (~/joint_efforts and commands) to the URDF effort limits.'),
    ParamSpec('max_effort', 'double_array', [],
              'Extra effort limit per joint in N m or N (one value for all joints, or one per '
              'model joint in model order); applied even when clamp_efforts is false. []: '
              'no extra limit.', low=0.0, high=1e9),
    ParamSpec('ramp_time', 'double', 0.0,
              'Seconds over which commands ramp from 0 to full scale whenever command output '
              'starts (start-up, enable, recovery from stale joint states). 0: no ramp.',
              low=0.0, high=600.0),
    ParamSpec('enabled', 'bool', True,
              'Publish commands on command_topic. Switching it off sends one zero command. '
              'Also switched by the ~/enable service (std_srvs/SetBool).'),
    ParamSpec('joint_limit_guard', 'string', 'zero',
              'When a measured joint leaves its URDF position range (plus joint_limit_margin) or '
              'exceeds its URDF velocity limit (times 1 + velocity_limit_margin), command output '
              'stops and diagnostics report ERROR until the joint is back and commands are '
              're-enabled (enabled := true or ~/enable). zero: send one zero command; hold: '
              'send nothing (the controller keeps its last command); off: no guard.',
              choices=('zero', 'hold', 'off')),
    ParamSpec('joint_limit_margin', 'double', 0.05,
              'Margin in rad or m added on both sides of the URDF position range.',
              low=0.0, high=10.0),
    ParamSpec('velocity_limit_margin', 'double', 0.1,
              'Fraction added to the URDF velocity limit (0.1: trips above 110 %).',
              low=0.0, high=100.0),
    ParamSpec('zero_on_timeout', 'bool', False,
              'Send one zero command when joint states go stale or the node shuts down '
              '(otherwise command output just stops and the controller keeps its last '
              'command).'),
    ParamSpec('friction_joints', 'string_array', [],
              'Joints the friction_viscous / friction_coulomb / armature arrays name, in their '
              'order (a name -> value map as parallel arrays). []: the arrays follow '
              'command_joints (default: all model joints, model order).',
              constraints='names of model joints, no duplicates'),
    ParamSpec('friction_viscous', 'double_array', [],
              'Viscous friction Fv per joint in N m s/rad or N s/m: tau += Fv qd (one value for '
              'all joints, or one per friction_joints / command_joints entry). []: 0, or '
              'the URDF damping with use_urdf_friction.', low=0.0, high=1e9),
    ParamSpec('friction_coulomb', 'double_array', [],
              'Coulomb friction Fs per joint in N m or N: tau += Fs s(qd), s = sign(qd) linear '
              'inside |qd| < coulomb_band (one value for all joints, or one per '
              'friction_joints / command_joints entry). []: 0, or the URDF friction with '
              'use_urdf_friction.', low=0.0, high=1e9),
    ParamSpec('friction_viscous_negative', 'double_array', [],
              'Viscous friction Fv- for qd < 0 per joint (as friction_viscous). []: the same as '
              'for qd > 0.', low=0.0, high=1e9),
    ParamSpec('friction_coulomb_negative', 'double_array', [],
              'Coulomb friction Fs- for qd < 0 per joint (as friction_coulomb). []: the same as '
              'for qd > 0.', low=0.0, high=1e9),
    ParamSpec('friction_stribeck', 'double_array', [],
              'Stribeck excess Fx per joint in N m or N (static minus Coulomb friction): tau += '
              'Fx exp(-(qd / stribeck_velocity)^2) s(qd). []: 0.', low=0.0, high=1e9),
    ParamSpec('effort_offset', 'double_array', [],
              'Constant effort offset per joint in N m or N, added to every command, at rest '
              'too (identified by rnea-ros identify). []: 0.', low=-1e9, high=1e9),
    ParamSpec('sensor_crosstalk_u', 'double_array', [],
              'Joint torque sensor crosstalk per joint (dimensionless, any sign): tau += c_u m_u, '
              'm_u the bending moment of the joint reaction wrench about the first axis '
              'perpendicular to the joint axis, in the parent link frame (rnea_ros.core.sensor; '
              'identified by rnea-ros identify where held-out data asks for it). One value for '
              'all joints, or one per friction_joints / command_joints entry. []: 0.',
              low=-10.0, high=10.0),
    ParamSpec('sensor_crosstalk_w', 'double_array', [],
              'As sensor_crosstalk_u, about the second perpendicular axis (joint axis x the '
              'first). []: 0.', low=-10.0, high=10.0),
    ParamSpec('friction_law', 'string', 'linear',
              'Sign s(qd) of the Coulomb and Stribeck terms: linear = qd / coulomb_band '
              'clipped to [-1, 1]; tanh = tanh(qd / coulomb_band).', choices=('linear', 'tanh')),
    ParamSpec('coulomb_band', 'double', 0.01,
              'Velocity scale v_s of s(qd) in rad/s or m/s, for every joint that '
              'friction_coulomb_band does not set.', low=1e-9, high=1e3),
    ParamSpec('stribeck_velocity', 'double', 0.1,
              'Stribeck velocity v_st in rad/s or m/s, for every joint that '
              'friction_stribeck_velocity does not set.', low=1e-9, high=1e3),
    ParamSpec('friction_coulomb_band', 'double_array', [],
              'Velocity scale v_s of s(qd) per joint in rad/s or m/s (one value for all joints, '
              'or one per friction_joints / command_joints entry; as identified by rnea-ros '
              'identify). []: coulomb_band for every joint.', low=1e-9, high=1e3),
    ParamSpec('friction_stribeck_velocity', 'double_array', [],
              'Stribeck velocity v_st per joint in rad/s or m/s (as friction_coulomb_band). []: '
              'stribeck_velocity for every joint.', low=1e-9, high=1e3),
    ParamSpec('armature', 'double_array', [],
              'Rotor inertia (reflected motor inertia) Ia per joint in kg m^2 or kg: tau += Ia '
              'qdd (one value for all joints, or one per friction_joints / command_joints '
              'entry). []: 0.', low=0.0, high=1e9),
    ParamSpec('use_urdf_friction', 'bool', False,
              "Take Fv and Fs from each joint's URDF <dynamics damping friction> (explicit "
              'friction_viscous / friction_coulomb values win). Off by default: URDF values are '
              'often tuned for a simulator.'),
    ParamSpec('base_acceleration', 'double_array', [0.0] * 6,
              'Acceleration of a moving fixed base (ship, mobile platform) [ax, ay, az, '
              'alpha_x, alpha_y, alpha_z] in m/s^2 and rad/s^2, world (= root link) frame; '
              'gravity still applies. The ~/base_acceleration topic (AccelStamped) overrides it '
              'while its last message is younger than desired_timeout. Fixed-base models only.',
              low=-1e4, high=1e4, constraints='exactly 6 finite values'),
    ParamSpec('use_imu', 'bool', False,
              'Take the acceleration of a moving fixed base from an IMU on ~/imu '
              '(sensor_msgs/Imu, sensor-data QoS) on any link of the URDF (frame_id = the '
              'link, sensor frames merged over fixed joints included; empty = root link). Its '
              'accelerometer gives a_base - g including the tilt against gravity, so the '
              'gravity parameter is not applied while the IMU is used. On a link that joints '
              'move, the motion of the joints (last joint states, and the accelerations of the '
              'cycle: desired or commanded in inverse_dynamics / computed_torque, zero in the '
              'gravity modes) is taken out of the reading with the model. Priority: a fresh '
              '~/base_acceleration message, then the IMU while its last message is younger '
              'than desired_timeout, then the base_acceleration parameter with gravity. '
              'Fixed-base models only.'),
    ParamSpec('imu_angular_acceleration_filter', 'double', 0.05,
              'Time constant in s of the first-order low-pass filter on the angular '
              'acceleration of the base, differentiated from the IMU gyro between consecutive '
              'messages (header stamps). 0: angular acceleration taken as 0 (the gyro still '
              'moves the reading to the root origin: - w x (w x r)).', low=0.0, high=100.0),
    ParamSpec('kp', 'double_array', [400.0],
              'computed_torque position gain per joint in 1/s^2 (one value for all joints or '
              'one per model joint).', low=0.0, high=1e7),
    ParamSpec('kd', 'double_array', [40.0],
              'computed_torque velocity gain per joint in 1/s (one value for all joints or one '
              'per model joint).', low=0.0, high=1e5),
)

SPECS = {spec.name: spec for spec in PARAMETERS}

# Effort residual, contact and payload parameters (issue 9): rnea_ros/monitor_params.py.
PARAMETERS += tuple(ParamSpec(**entry) for entry in monitor_params.PARAMETERS)
PARAMETERS += tuple(ParamSpec(**entry) for entry in payload_estimation_params.PARAMETERS)
SPECS.update({spec.name: spec for spec in PARAMETERS})
MODEL_PARAMETERS += monitor_params.MODEL_PARAMETERS
PER_JOINT_PARAMETERS += monitor_params.PER_JOINT_PARAMETERS
# Momentum observer and collisions (issue 22): rnea_ros/node/observer_params.py.
PARAMETERS += tuple(ParamSpec(**entry) for entry in observer_params.PARAMETERS)
SPECS.update({spec.name: spec for spec in PARAMETERS})
PER_JOINT_PARAMETERS += observer_params.PER_JOINT_PARAMETERS


def model_parameter_names():
    """Return, in table order, the parameters :func:`node_model` reads and the description's.

    The description sources (``robot_description``, ``urdf_file``), the base, the friction law
    and its coefficients (``friction_joints``, or ``command_joints``, whose order positional
    coefficient arrays follow without it) and the payload: what any node that builds the rnea
    node's model declares (the trajectory feed-forward node), so that one parameter file gives
    both the same model.
    """
    wanted = set(MODEL_PARAMETERS) | {'command_joints'}
    return tuple(spec.name for spec in PARAMETERS if spec.name in wanted)


# YAML 1.1 (rcl's `-p name:=value` and parameter files, `ros2 param set`) reads these unquoted
# words as booleans; a string parameter given one gets the word it documents for it.
YAML_BOOLEAN_WORDS = 'true/false, yes/no, on/off'
_BOOLEAN_WORDS = {False: 'off', True: 'on'}


def normalise(name, value):
    """Return (value in the type of parameter ``name``, None) or (value, why it cannot be).

    The one rule for values typed the way YAML reads them: a boolean given to a string
    parameter becomes its documented word ('off' / 'on', when the parameter has that choice;
    otherwise the reason says to quote it), an integer given to a double becomes a float,
    integers in a double array floats, and an empty list of any type is the parameter's own
    empty array.  ``value`` is a plain Python value (lists, not array.array); unknown names
    and None pass unchanged.
    """
    spec = SPECS.get(name)
    if spec is None or value is None:
        return value, None
    kind = spec.kind
    if kind == 'string':
        if isinstance(value, bool):
            word = _BOOLEAN_WORDS[value]
            if word in spec.choices:
                return word, None
            told = (f'{name} got the boolean {str(value).lower()} (YAML reads unquoted '
                    f'{YAML_BOOLEAN_WORDS} as booleans)')
            if spec.choices:
                return value, f'{told}: give one of {list(spec.choices)}'
            return value, f"{told}: quote the word, e.g. -p \"{name}:='no'\" or {name}: 'no'"
        if not isinstance(value, str):
            return value, f'{name} must be a string, got {value!r}'
    elif kind == 'bool':
        if not isinstance(value, bool):
            return value, f'{name} must be true or false, got {value!r}'
    elif kind == 'double':
        if isinstance(value, int) and not isinstance(value, bool):
            return float(value), None
    elif isinstance(value, (list, tuple)):
        if kind == 'double_array' and all(isinstance(v, int) and not isinstance(v, bool)
                                          for v in value):
            return [float(v) for v in value], None
        if not value:
            return [], None
    return value, None


def _check_double(spec, value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return f'{spec.name} must be a number, got {value!r}'
    if not math.isfinite(value):
        return f'{spec.name} must be finite, got {value}'
    if spec.low is not None and not spec.low <= value <= spec.high:
        return f'{spec.name} must be in [{spec.low}, {spec.high}], got {value}'
    return None


def _check_double_array(spec, value):
    if isinstance(value, (str, bytes)) or not hasattr(value, '__len__'):
        return f'{spec.name} must be a list of numbers, got {value!r}'
    for item in value:
        error = _check_double(spec, item)
        if error:
            return f'{spec.name}: every element ' + error.split(' ', 1)[1]
    if spec.name == 'gravity' and len(value) != 3:
        return f'gravity must have exactly 3 values [x, y, z], got {len(value)}'
    if spec.name == 'base_acceleration' and len(value) != 6:
        return ('base_acceleration must have exactly 6 values [linear xyz, angular xyz], got '
                f'{len(value)}')
    return None


def _check_string_array(spec, value):
    if isinstance(value, (str, bytes)) or not hasattr(value, '__len__') or \
            any(not isinstance(item, str) or not item for item in value):
        return f'{spec.name} must be a list of non-empty names'
    counts = Counter(value)                 # linear in the number of names
    duplicates = sorted(item for item, count in counts.items() if count > 1)
    if duplicates:
        return f'{spec.name} names a joint twice: {duplicates[:10]}'
    return None


def check_value(name, value, joint_names=None):
    """Return why ``value`` is invalid for parameter ``name``, or None when it is valid.

    ``joint_names`` (the current model's joints, if any) enables the model-dependent checks:
    per-joint array lengths and command joint names.
    """
    spec = SPECS.get(name)
    if spec is None or value is None:
        return None
    value, error = normalise(name, value)
    if error:
        return error
    if spec.kind == 'double':
        return _check_double(spec, value)
    if spec.kind == 'string' and spec.choices and value not in spec.choices:
        return f"{name} must be one of {list(spec.choices)}, got '{value}'"
    if spec.kind == 'double_array':
        error = _check_double_array(spec, value)
        if error is None and name in GAINS and len(value) == 0:
            error = (f'{name} [] would mean no {GAINS[name]} feedback at all: give 1 value (all '
                     f'joints) or one per model joint, [0.0] to switch the feedback off')
        if error is None and joint_names is not None and name in PER_JOINT_PARAMETERS:
            error = check_per_joint_length(name, value, joint_names)
        return error
    if spec.kind == 'string_array':
        error = _check_string_array(spec, value)
        if error is None and joint_names is not None:
            error = check_joint_names(name, value, joint_names)
        return error
    return None


def check_per_joint_length(name, values, joint_names):
    """Return why a per-joint array does not fit the model, or None."""
    if len(values) in (0, 1, len(joint_names)):
        return None
    return (f'{name} has {len(values)} values; give 1 (all joints) or {len(joint_names)}, one '
            f'per model joint in this order: {list(joint_names)}')


def check_joint_names(name, names, joint_names):
    """Return why a list of joint names does not fit the model, or None."""
    known = set(joint_names)
    unknown = [item for item in names if item not in known]
    if unknown:
        return (f'{name} names joints the model lacks: {unknown[:10]}; model joints: '
                f'{list(joint_names)}')
    return None


def fixed_joint_positions(cfg, joint_names):
    """Return (model indices, positions) of the ``fixed_joints``; ParameterError if unfit."""
    names = list(cfg.get('fixed_joints') or [])
    values = list(cfg.get('fixed_joint_positions') or [])
    error = check_joint_names('fixed_joints', names, joint_names)
    if error:
        raise ParameterError(error)
    if len(values) not in (0, 1, len(names)) or (values and not names):
        raise ParameterError(f'fixed_joint_positions has {len(values)} values; give 1 (all '
                             f'fixed joints) or {len(names)}, one per fixed_joints entry in '
                             f'this order: {names}')
    index = [list(joint_names).index(name) for name in names]
    return index, per_joint(values, len(names), 0.0)


def per_joint(values, n, fill):
    """Broadcast a per-joint parameter (None, 1 value or n values) to an array of n floats."""
    if not values:
        return np.full(n, float(fill))
    if len(values) == 1:
        return np.full(n, float(values[0]))
    if len(values) != n:
        raise ValueError(f'expected 1 or {n} values, got {len(values)}')
    return np.array(values, dtype=float)


def joint_coefficients(cfg, joint_names):
    """Return {option: {joint: value}} for the model's friction and armature parameters.

    ``cfg`` holds the node parameters, ``joint_names`` the model's moving joints.  Raise
    :class:`ParameterError` with the reason when the arrays do not fit the names they refer to.
    """
    names = cfg.get('friction_joints')
    what = 'friction_joints'
    if not names:
        names = cfg.get('command_joints') or list(joint_names)
        what = 'command_joints' if cfg.get('command_joints') else 'model joints'
    error = check_joint_names(what, names, joint_names)
    if error:
        raise ParameterError(error)
    options = {}
    for name in COEFFICIENT_PARAMETERS:
        values = cfg.get(name)
        if not values:
            continue
        if len(values) not in (1, len(names)):
            raise ParameterError(f'{name} has {len(values)} values; give 1 (all joints) or '
                                 f'{len(names)}, one per {what} entry in this order: '
                                 f'{list(names)}')
        options[name] = dict(zip(names, per_joint(values, len(names), 0.0).tolist()))
    for name in LAW_PARAMETERS:
        if cfg.get(name) not in (None, SPECS[name].default):
            options[name] = cfg[name]
    return options


def node_config(values):
    """Return the node's configuration: each parameter's default, overridden by ``values``.

    ``values`` maps parameter names to values as a parameter file gives them (typed as YAML
    reads them); each is normalised and checked as the node does it (:func:`check_value`), and
    :class:`ParameterError` names the first invalid one.  Names outside the table are ignored
    (the node has no such parameter).
    """
    cfg = {spec.name: list(spec.default) if isinstance(spec.default, list) else spec.default
           for spec in PARAMETERS}
    for name, value in values.items():
        if name not in SPECS:
            continue
        error = check_value(name, value)
        if error:
            raise ParameterError(error)
        cfg[name] = normalise(name, value)[0]
    return cfg


def node_model(description, cfg, bare=None):
    """Return the node's model of a parsed description: friction, armature, offsets, payload.

    ``description``: (name, links, joints) from :func:`rnea_ros.core.urdf.parse_urdf`;
    ``cfg``: the node's configuration (:func:`node_config`).  The one way the node turns its
    parameters into a :class:`~rnea_ros.core.model.RobotModel` (the friction law and its
    coefficients by :func:`joint_coefficients`, the payload by
    :func:`rnea_ros.node.monitor_params.attach_payload`), used offline too.  ParameterError
    when the coefficient arrays do not fit the model's joints; ValueError from the core when
    the description is unusable.  ``bare``: the model of the description without options (the
    same ``floating_base``), if the caller has it (it is frozen: it can be shared).
    """
    from rnea_ros.core.model import RobotModel
    name, links, joints = description
    floating = cfg['floating_base']
    model = bare if bare is not None else RobotModel.from_specs(
        links, joints, floating_base=floating, name=name)
    options = joint_coefficients(cfg, model.joint_names)
    if options or cfg['use_urdf_friction']:
        model = RobotModel.from_specs(links, joints, floating_base=floating, name=name,
                                      friction_from_urdf=cfg['use_urdf_friction'], **options)
    return monitor_params.attach_payload(model, cfg, description, False)


def needs_rebuild(changes, cfg):
    """Return whether parameter ``changes`` (merged into ``cfg``) require a new model."""
    if any(name in changes for name in MODEL_PARAMETERS):
        return True
    positional = not cfg.get('friction_joints') and any(cfg.get(n) for n in COEFFICIENT_PARAMETERS)
    return 'command_joints' in changes and positional
