"""Output shaping: effort limits and ramp, the output guard, the joint limit guard, statistics."""

import array
import math

import numpy as np
from rnea_ros.core.kernels.vectors import clamp_bounded, first_outside
from rnea_ros.core.layout import DEFAULT_GRAVITY
from rnea_ros.node import params as node_params
from rnea_ros.node.bookkeeping.names import MAX_OUTPUT


class EffortLimiter:
    """Effort limits (URDF and optional lower ``max_effort``) and the ramp-in of commands."""

    def __init__(self, urdf_limits, clamp, max_effort=None, ramp_time=0.0):
        """Combine the limits: URDF ones if ``clamp``, and ``max_effort`` (array) always."""
        limits = np.full(len(urdf_limits), np.inf)
        if clamp:
            limits = np.minimum(limits, np.abs(np.asarray(urdf_limits, dtype=float)))
        if max_effort is not None:
            limits = np.minimum(limits, np.asarray(max_effort, dtype=float))
        self.limits = limits
        self.ramp_time = float(ramp_time)
        self.ramp_start = None

    def clamp(self, tau, out):
        """Write tau clamped to the limits into ``out``; return how many joints were clamped.

        Returns -1 and writes nothing when a value is non-finite or above ``MAX_OUTPUT`` (the
        output guard, in the same kernel call).
        """
        return clamp_bounded(tau, self.limits, MAX_OUTPUT, out)

    def start_ramp(self, now):
        """Restart the ramp-in (command output starts or resumes)."""
        self.ramp_start = now

    def scale(self, now):
        """Return the ramp-in factor in [0, 1] (1 without ramp)."""
        if self.ramp_time <= 0.0 or self.ramp_start is None:
            return 1.0
        return min(1.0, max(0.0, (now - self.ramp_start) / self.ramp_time))


def output_error(tau, wrenches=None):
    """Return why efforts / reaction wrenches must not be published (NaN, Inf, > MAX_OUTPUT)."""
    for what, values in (('efforts', tau), ('reaction wrenches', wrenches)):
        if values is None:
            continue
        if not values.size or (values.max() <= MAX_OUTPUT and values.min() >= -MAX_OUTPUT):
            continue                    # one pass each way; NaN fails both comparisons
        if not np.isfinite(values).all():
            return f'non-finite {what} computed; nothing published'
        return (f'{what} above {MAX_OUTPUT:g} computed (|value| = {np.abs(values).max():g}); '
                'nothing published')
    return None


class LimitGuard:
    """Joint limit guard: positions outside the URDF range (plus a margin), speeds over the limit.

    ``margin`` (rad or m) widens the URDF [lower, upper] range; ``velocity_margin`` is a fraction
    added to the URDF velocity limit.  Joints without a range (continuous, lower >= upper) or
    without a velocity limit (<= 0) are not checked.  Stateless: the node latches a violation.
    """

    def __init__(self, joint_names, lower, upper, velocity, margin, velocity_margin):
        """Precompute the bounds per model joint."""
        self.names = tuple(joint_names)
        lower, upper = np.asarray(lower, dtype=float), np.asarray(upper, dtype=float)
        ranged = np.isfinite(lower) & np.isfinite(upper) & (lower < upper)
        self.lower = np.where(ranged, lower - margin, -np.inf)
        self.upper = np.where(ranged, upper + margin, np.inf)
        velocity = np.asarray(velocity, dtype=float)
        self.vmax = np.where(velocity > 0.0, velocity * (1.0 + velocity_margin), np.inf)

    def violation(self, q, qd):
        """Return why (q, qd) is outside the limits (first joint), or None."""
        i = first_outside(q, qd, self.lower, self.upper, self.vmax)   # one kernel call
        if i < 0:
            return None
        name = self.names[i]
        if not self.lower[i] <= q[i] <= self.upper[i]:
            return (f"joint '{name}' at {q[i]:.4g} is outside its limits "
                    f'[{self.lower[i]:.4g}, {self.upper[i]:.4g}] (margin included)')
        return (f"joint '{name}' moves at {qd[i]:.4g}, over its velocity limit "
                f'{self.vmax[i]:.4g} (margin included)')


class CycleStats:
    """Counters for diagnostics: input rate, compute time, clamp events, rejected inputs."""

    def __init__(self, now=0.0):
        """Start counting at ``now``."""
        self.total_clamped = 0
        self.total_rejected = 0
        self.total_inputs = self.total_outputs = self.inputs = self.outputs = 0
        self.reset(now)

    def reset(self, now):
        """Start a new reporting period (the totals keep counting)."""
        self.total_inputs += self.inputs
        self.total_outputs += self.outputs
        self.period_start = now
        self.inputs = 0
        self.outputs = 0
        self.compute_sum = 0.0
        self.compute_max = 0.0
        self.clamped = 0
        self.rejected = 0

    def cycle(self, seconds, clamped):
        """Count one computation of ``seconds`` that clamped ``clamped`` joints."""
        self.outputs += 1
        self.compute_sum += seconds
        if seconds > self.compute_max:
            self.compute_max = seconds
        if clamped:
            self.clamped += 1
            self.total_clamped += 1

    def reject(self):
        """Count one rejected input message."""
        self.rejected += 1
        self.total_rejected += 1

    def summary(self, now):
        """Return the period's figures as a dict (rates in Hz, times in microseconds)."""
        span = max(now - self.period_start, 1e-9)
        return {
            'input_rate_hz': self.inputs / span,
            'output_rate_hz': self.outputs / span,
            'compute_mean_us': 1e6 * self.compute_sum / self.outputs if self.outputs else 0.0,
            'compute_max_us': 1e6 * self.compute_max,
            'clamp_events': self.clamped,
            'clamp_events_total': self.total_clamped,
            'rejected_inputs': self.rejected,
            'rejected_inputs_total': self.total_rejected,
            'inputs_total': self.total_inputs + self.inputs,
            'outputs_total': self.total_outputs + self.outputs,
        }


class Notice:
    """When to log a condition that persists (a silent wait): once, then at a low rate.

    :meth:`due` is polled with the time; it is true ``delay`` seconds after the first poll of
    the condition, then every ``period`` seconds while it lasts; :meth:`reset` when it ends.
    """

    def __init__(self, delay, period):
        """Log first after ``delay`` s, then every ``period`` s."""
        self.delay = delay
        self.period = period
        self._next = None

    def due(self, now):
        """Return True when the condition (holding at ``now``) should be logged now."""
        if self._next is None:
            self._next = now + self.delay
        if now < self._next:
            return False
        self._next = now + self.period
        return True

    def reset(self):
        """Forget the condition (it ended): the next one is logged after ``delay`` again."""
        self._next = None


OK, WARN, ERROR = 0, 1, 2


def diagnostic_level(model_loaded, joints_ready, joints_stale, period):
    """Return (level, message) for the node's diagnostic status."""
    if joints_stale:
        return ERROR, 'joint states stale: commands stopped'
    if not model_loaded:
        return WARN, 'waiting for a robot description'
    if not joints_ready:
        return WARN, 'waiting for joint states of every model joint'
    if period['rejected_inputs']:
        return WARN, f"{period['rejected_inputs']} input messages rejected"
    if period['clamp_events']:
        return WARN, f"efforts clamped in {period['clamp_events']} cycles"
    return OK, 'running'


class FloatBuffer:
    """A preallocated ``array.array('d')`` (what float64[] message fields hold) with a numpy view.

    Write through :attr:`view`; assign :attr:`array` to the message field (a memcpy).
    """

    def __init__(self, n):
        """Allocate n zeros."""
        self.array = array.array('d', bytes(8 * n))
        self.view = np.frombuffer(self.array, dtype=np.float64) if n else np.zeros(0)


class NodeSettings:
    """The model-dependent settings of the node, built from the parameters for one model.

    Raises :class:`rnea_ros.node.params.ParameterError` (a ValueError, with the reason) when the
    parameters do not fit the model: per-joint array lengths, unknown command joints.
    """

    def __init__(self, joint_names, effort_limits, cfg, limits=None):
        """Resolve the per-joint parameters and the command joint order against the model.

        ``limits`` = (lower, upper, velocity) URDF limits per joint enable the limit guard.
        """
        names = tuple(joint_names)
        n = len(names)
        for name in node_params.PER_JOINT_PARAMETERS:
            error = node_params.check_value(name, cfg.get(name), names)
            if error:
                raise node_params.ParameterError(error)
        command_joints = tuple(cfg.get('command_joints') or names)
        error = node_params.check_joint_names('command_joints', command_joints, names)
        if error:
            raise node_params.ParameterError(error)
        self.mode = cfg['mode']
        self.gravity = np.array(cfg['gravity'], dtype=float)
        self.default_gravity = bool(np.array_equal(self.gravity, DEFAULT_GRAVITY))
        self.kp = node_params.per_joint(cfg['kp'], n, 0.0)
        self.kd = node_params.per_joint(cfg['kd'], n, 0.0)
        max_effort = cfg.get('max_effort')
        self.limiter = EffortLimiter(
            effort_limits, cfg['clamp_efforts'],
            node_params.per_joint(max_effort, n, math.inf) if max_effort else None,
            cfg['ramp_time'])
        self.command_joints = command_joints
        self.command_index = np.array([names.index(j) for j in command_joints], dtype=np.intp)
        self.command = FloatBuffer(len(command_joints))
        self.zero_command = array.array('d', bytes(8 * len(command_joints)))
        self.publish_reaction_wrenches = bool(cfg['publish_reaction_wrenches'])
        rate = cfg.get('reaction_wrenches_rate') or 0.0
        self.wrench_period = 1.0 / rate if rate > 0.0 else 0.0
        self.limit_action = cfg.get('joint_limit_guard', 'off')
        self.guard = None
        if self.limit_action != 'off' and limits is not None:
            self.guard = LimitGuard(names, *limits, cfg['joint_limit_margin'],
                                    cfg['velocity_limit_margin'])

    def fill_command(self, efforts, scale):
        """Write the command array (command joint order, times the ramp ``scale``)."""
        np.multiply(efforts[self.command_index], scale, out=self.command.view)
        return self.command.array
