"""Input bookkeeping and output shaping for the rnea node, free of any ROS graph.

Everything the node does besides talking to ROS lives here so it can be unit-tested with plain
arrays: merging joint states by name (with mimic joints following their drivers), desired
accelerations and the computed-torque reference with their timeouts, external wrenches, the
acceleration of a moving base (parameter, topic or IMU), effort limits with ramp-in, and the
statistics the diagnostics report.  Inputs are validated: a message with NaN/Inf, wrong lengths
or unknown names is rejected as a whole with a reason (a string), and nothing of it is kept.

Times are plain floats in seconds (the node passes the steady clock).  Arrays passed in may be
``array.array('d')`` fields of ROS messages; they are viewed, not copied.
"""

import array
from collections import Counter
import math
import re
import zlib

import numpy as np
from rnea_ros.node import params as node_params

_MAX_NAME_CACHE = 32
# Joint positions (rad or m) and velocities (rad/s or m/s) beyond this are sensor garbage.
MAX_JOINT_STATE = 1e6
# Accelerometer and gyro readings beyond these are sensor garbage (about 1000 g, 160 rev/s).
MAX_IMU_ACCELERATION = 1e4
MAX_IMU_ANGULAR_VELOCITY = 1e3
# Desired / reference accelerations (rad/s^2 or m/s^2) and reference positions and velocities.
MAX_ACCELERATION = 1e6
# External wrenches (N, N m) and base accelerations (m/s^2, rad/s^2, like the IMU's bound).
MAX_WRENCH = 1e7
MAX_BASE_ACCELERATION = 1e4
# Output guard: an effort (N m or N) or reaction-wrench component above this is never published.
MAX_OUTPUT = 1e9
# Names a message may carry (joint states of the biggest robots have a few hundred joints).
MAX_NAMES = 4096
# Unknown joint names remembered (and shown in diagnostics); log lines show at most this many.
MAX_UNKNOWN_NAMES = 32
_NO_GRAVITY = np.zeros(3)         # the core's gravity while an IMU gives a_0 (gravity included)
_NO_GRAVITY.flags.writeable = False


def as_array(values):
    """View a sequence of floats (e.g. an ``array.array('d')`` message field) as a numpy array."""
    if isinstance(values, np.ndarray):
        return values.astype(float, copy=False)
    try:
        return np.frombuffer(values, dtype=np.float64)
    except (TypeError, ValueError):
        return np.asarray(values, dtype=float)


def topic_token(name):
    """Turn a joint name into a valid ROS topic name token (letters, digits, underscores)."""
    token = re.sub(r'[^A-Za-z0-9_]', '_', name)
    token = re.sub(r'_+', '_', token)
    if not token or token[0].isdigit():
        token = 'j_' + token
    return token


def topic_tokens(names):
    """Return one distinct topic token per joint name (injective :func:`topic_token`).

    A name keeps its readable token unless another joint maps to the same one (``arm.joint``
    and ``arm_joint``): then every colliding name that is not its token already gets the
    suffix ``_`` + the CRC-32 of the name in hex, so the result depends only on the names.
    Raise ValueError in the (constructed) case that the suffixed tokens still collide.
    """
    tokens = [topic_token(name) for name in names]
    counts = Counter(tokens)
    tokens = [token if counts[token] == 1 or token == name
              else f'{token}_{zlib.crc32(name.encode()):08x}'
              for name, token in zip(names, tokens)]
    if len(set(tokens)) != len(tokens):
        clash = sorted(t for t, c in Counter(tokens).items() if c > 1)
        raise ValueError(f'joint names give the same reaction-wrench topic: {clash}')
    return tokens


def duplicates(names):
    """Return the names that occur more than once, sorted (linear time)."""
    return sorted(name for name, count in Counter(names).items() if count > 1)


def truncated(names, limit=10):
    """Return a short printable list: at most ``limit`` names, then how many more."""
    names = list(names)
    text = ', '.join(names[:limit])
    return text + (f' ... ({len(names) - limit} more)' if len(names) > limit else '')


class NameMap:
    """Cached name -> model-index mapping for the name lists messages carry.

    Publishers send the same name list over and over, so the mapping of one list is computed
    once and reused (keyed by the tuple of names).
    """

    def __init__(self, joint_names):
        """Index the model's joint names."""
        self.joint_names = tuple(joint_names)
        self.index = {name: i for i, name in enumerate(self.joint_names)}
        self._cache = {}

    def lookup(self, names):
        """Return (src, dst, unknown, error) for a message's name list.

        ``src`` indexes the message arrays, ``dst`` the model arrays, ``unknown`` lists names the
        model lacks, ``error`` is set for duplicate names.
        """
        if len(names) > MAX_NAMES:
            return None, None, (), f'{len(names)} names (at most {MAX_NAMES})'
        key = tuple(names)
        hit = self._cache.get(key)
        if hit is None:
            hit = self._build(key)
            if len(self._cache) >= _MAX_NAME_CACHE:
                self._cache.clear()
            self._cache[key] = hit
        return hit

    def _build(self, names):
        if len(set(names)) != len(names):
            return (None, None, (),
                    f'names a joint more than once: {truncated(duplicates(names))}')
        src, dst, unknown = [], [], []
        for i, name in enumerate(names):
            j = self.index.get(name)
            if j is None:
                unknown.append(name)
            else:
                src.append(i)
                dst.append(j)
        return (np.array(src, dtype=np.intp), np.array(dst, dtype=np.intp), tuple(unknown),
                None)


def _finite_error(what, values, bound=None):
    if values.size and not np.isfinite(values).all():
        return f'{what} contains NaN or Inf'
    if bound is not None and values.size and np.abs(values).max() > bound:
        return f'{what} has a magnitude above {bound:g} (|value| = {np.abs(values).max():g})'
    return None


class MimicTable:
    """Mimic joints of a model as index arrays: q[m] = multiplier * q[driver] + offset."""

    def __init__(self, joint_names, mimic):
        """Keep the mimic entries whose joint and driver are both model joints."""
        index = {name: i for i, name in enumerate(joint_names)}
        rows = [(index[j], index[d], float(mult), float(off))
                for j, d, mult, off in (mimic or ()) if j in index and d in index]
        self.joint = np.array([r[0] for r in rows], dtype=np.intp)
        self.driver = np.array([r[1] for r in rows], dtype=np.intp)
        self.multiplier = np.array([r[2] for r in rows])
        self.offset = np.array([r[3] for r in rows])

    def __len__(self):
        """Return the number of mimic joints."""
        return len(self.joint)

    def fill(self, values, mask, with_offset):
        """Set values[m] from values[driver] for the mimic joints where ``mask`` is True."""
        for k in range(len(self.joint)):
            if mask[self.joint[k]]:
                values[self.joint[k]] = self.multiplier[k] * values[self.driver[k]] + (
                    self.offset[k] if with_offset else 0.0)


class JointStateInput:
    """Joint positions and velocities merged by name from (possibly partial) JointState messages.

    Names the model lacks are ignored (reported once through :attr:`new_unknown`; at most
    ``MAX_UNKNOWN_NAMES`` are remembered, :attr:`unknown_count` counts the rest); a missing
    velocity counts as 0; a mimic joint that no message names follows its driver.  ``q`` and
    ``qd`` may be views into bigger arrays (e.g. behind a floating base).
    """

    def __init__(self, joint_names, mimic=(), q=None, qd=None):
        """Prepare the merged state of the given model joints (all unknown at first)."""
        n = len(joint_names)
        self.names = NameMap(joint_names)
        self.q = np.zeros(n) if q is None else q
        self.qd = np.zeros(n) if qd is None else qd
        self.received = np.zeros(n, dtype=bool)
        self.mimic = MimicTable(joint_names, mimic)
        self._follow = np.zeros(n, dtype=bool)
        self._follow[self.mimic.joint] = True
        self.ready = n == 0
        self.unknown = set()
        self.unknown_count = 0
        self.new_unknown = ()

    def update(self, names, position, velocity=()):
        """Merge one message; return None, or why it was rejected (then nothing is kept)."""
        position = as_array(position)
        velocity = as_array(velocity)
        if len(position) != len(names):
            return f'{len(names)} names but {len(position)} positions'
        if len(velocity) not in (0, len(names)):
            return f'{len(names)} names but {len(velocity)} velocities'
        error = (_finite_error('position', position, MAX_JOINT_STATE)
                 or _finite_error('velocity', velocity, MAX_JOINT_STATE))
        if error:
            return error
        src, dst, unknown, error = self.names.lookup(names)
        if error:
            return error
        if not len(dst):    # empty or only unknown names: it must not refresh the watchdog
            return (f'names none of the model joints (got {truncated(names, 5)}); model joints: '
                    f'{truncated(self.names.joint_names, 5)}')
        self._note_unknown(unknown)
        self.q[dst] = position[src]
        self.qd[dst] = velocity[src] if len(velocity) else 0.0
        if not self.ready or len(self.mimic):
            self.received[dst] = True
            self._follow &= ~self.received
            self.ready = self.ready or bool((self.received | self._follow).all())
        if len(self.mimic):
            self.mimic.fill(self.q, self._follow, True)
            self.mimic.fill(self.qd, self._follow, False)
        return None

    def adopt(self, other):
        """Take over the state of same-named joints from another input (after a model reload).

        Joints the old input received stay received; a joint that followed a driver keeps
        following it when the new model still has the mimic (else it keeps its last value).
        """
        for name, i in other.names.index.items():
            j = self.names.index.get(name)
            if j is None:
                continue
            followed = other.ready and not other.received[i]
            if other.received[i] or (followed and not self._follow[j]):
                self.q[j], self.qd[j] = other.q[i], other.qd[i]
                self.received[j] = True
        self._follow &= ~self.received
        self.ready = self.ready or bool((self.received | self._follow).all())
        self.mimic.fill(self.q, self._follow, True)
        self.mimic.fill(self.qd, self._follow, False)

    def missing(self):
        """Return the model joints that still have no position."""
        have = self.received | self._follow
        return [name for name, ok in zip(self.names.joint_names, have) if not ok]

    def _note_unknown(self, unknown):
        """Remember new unknown names, at most MAX_UNKNOWN_NAMES of them (memory is bounded)."""
        self.new_unknown = ()
        if not unknown or len(self.unknown) >= MAX_UNKNOWN_NAMES:
            if unknown and not self.unknown.issuperset(unknown):
                self.unknown_count += 1      # messages with names past the bound
            return
        new = [name for name in unknown if name not in self.unknown]
        if new:
            self.new_unknown = tuple(new)
            self.unknown.update(new[:MAX_UNKNOWN_NAMES - len(self.unknown)])


class AccelerationInput:
    """Desired joint accelerations, zero when none arrived within ``timeout`` seconds."""

    def __init__(self, joint_names, timeout):
        """Start with no desired accelerations (zero)."""
        self.names = NameMap(joint_names)
        self.n = len(joint_names)
        self.timeout = timeout
        self.qdd = np.zeros(self.n)
        self._zero = np.zeros(self.n)
        self.stamp = -math.inf

    def from_trajectory(self, names, points, now):
        """Take points[0].accelerations by name (joints not named get 0); None or an error."""
        if not points:
            return 'trajectory has no points'
        acc = as_array(points[0].accelerations)
        if len(acc) != len(names):
            return f'{len(names)} joint names but {len(acc)} accelerations in points[0]'
        error = _finite_error('accelerations', acc, MAX_ACCELERATION)
        if error:
            return error
        src, dst, unknown, error = self.names.lookup(names)
        if error or unknown:
            return error or f'unknown joints {truncated(unknown)}'
        self.qdd[:] = 0.0
        self.qdd[dst] = acc[src]
        self.stamp = now
        return None

    def from_array(self, data, now):
        """Take accelerations in model joint order; None or an error (wrong length, NaN)."""
        data = as_array(data)
        if len(data) != self.n:
            return f'expected {self.n} accelerations (model joint order), got {len(data)}'
        error = _finite_error('accelerations', data, MAX_ACCELERATION)
        if error:
            return error
        self.qdd[:] = data
        self.stamp = now
        return None

    def stale(self, now):
        """Return True when the last desired accelerations are older than the timeout."""
        return now - self.stamp > self.timeout

    def current(self, now):
        """Return the desired accelerations, or zeros when they are stale."""
        return self._zero if self.stale(now) else self.qdd


class ReferenceInput:
    """The computed-torque reference (positions, velocities, accelerations) and control law.

    qdd_cmd = qdd_ref + kp (q_ref - q) + kd (qd_ref - qd).  Joints the reference does not name
    get no position feedback (qdd_cmd = -kd qd: gravity compensation with damping), except
    mimic joints, which follow their driver's reference.  Before any reference arrives every
    joint is treated that way.  When the reference is older than ``timeout`` its velocities and
    accelerations count as zero and its positions are held.
    """

    def __init__(self, joint_names, mimic=(), timeout=0.1):
        """Start without a reference."""
        n = len(joint_names)
        self.names = NameMap(joint_names)
        self.mimic = MimicTable(joint_names, mimic)
        self.timeout = timeout
        self.q = np.zeros(n)
        self.qd = np.zeros(n)
        self.qdd = np.zeros(n)
        self.active = np.zeros(n, dtype=bool)
        self.stamp = -math.inf

    def from_trajectory(self, names, points, now):
        """Take points[0] by joint name; None or why it was rejected."""
        if not points:
            return 'trajectory has no points'
        point = points[0]
        pos = as_array(point.positions)
        if len(pos) != len(names):
            return f'{len(names)} joint names but {len(pos)} positions in points[0]'
        fields = [pos]
        for label in ('velocities', 'accelerations'):
            values = as_array(getattr(point, label))
            if len(values) not in (0, len(names)):
                return f'{len(names)} joint names but {len(values)} {label} in points[0]'
            fields.append(values)
        bounds = (MAX_JOINT_STATE, MAX_JOINT_STATE, MAX_ACCELERATION)
        for label, values, bound in zip(('positions', 'velocities', 'accelerations'), fields,
                                        bounds):
            error = _finite_error(label, values, bound)
            if error:
                return error
        src, dst, unknown, error = self.names.lookup(names)
        if error or unknown:
            return error or f'unknown joints {truncated(unknown)}'
        self._store(dst, src, fields)
        self.stamp = now
        return None

    def _store(self, dst, src, fields):
        self.active[:] = False
        self.active[dst] = True
        for target, values in zip((self.q, self.qd, self.qdd), fields):
            target[:] = 0.0
            if len(values):
                target[dst] = values[src]
        follow = np.zeros(len(self.active), dtype=bool)
        follow[self.mimic.joint] = ~self.active[self.mimic.joint]
        follow[self.mimic.joint] &= self.active[self.mimic.driver]
        self.mimic.fill(self.q, follow, True)
        self.mimic.fill(self.qd, follow, False)
        self.mimic.fill(self.qdd, follow, False)
        self.active |= follow

    def command(self, q, qd, kp, kd, now, out):
        """Write qdd_cmd into ``out`` and return it."""
        np.subtract(self.q, q, out=out)
        out[~self.active] = 0.0
        out *= kp
        if now - self.stamp <= self.timeout:
            out += kd * (self.qd - qd)
            out += self.qdd
        else:
            out -= kd * qd
        return out


class WrenchInput:
    """External wrenches by link: [fx, fy, fz, tx, ty, tz] in the link frame about its origin."""

    def __init__(self, link_names):
        """Start with no external wrench."""
        self.link_names = frozenset(link_names)
        self.wrenches = {}

    def update(self, link, wrench):
        """Set (or clear, when all zero) the wrench on a link; None or why it was rejected."""
        if link not in self.link_names:
            return f"frame_id '{link}' is not a link of the model"
        wrench = np.array(wrench, dtype=float).reshape(6)
        error = _finite_error('wrench', wrench, MAX_WRENCH)
        if error:
            return error
        if not wrench.any():
            self.wrenches.pop(link, None)
        else:
            self.wrenches[link] = wrench
        return None

    def adopt(self, other):
        """Keep the wrenches of another input on links this model also has (model reload)."""
        self.wrenches = {k: v for k, v in other.wrenches.items() if k in self.link_names}

    @property
    def f_ext(self):
        """Return the dict for the dynamics functions, or None when there is no wrench."""
        return self.wrenches or None


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
        """Write tau clamped to the limits into ``out``; return how many joints were clamped."""
        np.clip(tau, -self.limits, self.limits, out=out)
        return int(np.count_nonzero(out != tau))

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
        with np.errstate(invalid='ignore'):         # inf - inf for joints without a range
            self._mid = np.where(ranged, 0.5 * (lower + upper), 0.0)
            self._half = np.where(ranged, 0.5 * (upper - lower) + margin, np.inf)
        velocity = np.asarray(velocity, dtype=float)
        self.vmax = np.where(velocity > 0.0, velocity * (1.0 + velocity_margin), np.inf)

    def violation(self, q, qd):
        """Return why (q, qd) is outside the limits (first joint), or None."""
        if (np.abs(q - self._mid) <= self._half).all() and (np.abs(qd) <= self.vmax).all():
            return None
        for i, name in enumerate(self.names):
            if not self.lower[i] <= q[i] <= self.upper[i]:
                return (f"joint '{name}' at {q[i]:.4g} is outside its limits "
                        f'[{self.lower[i]:.4g}, {self.upper[i]:.4g}] (margin included)')
            if not abs(qd[i]) <= self.vmax[i]:
                return (f"joint '{name}' moves at {qd[i]:.4g}, over its velocity limit "
                        f'{self.vmax[i]:.4g} (margin included)')
        return None


class CycleStats:
    """Counters for diagnostics: input rate, compute time, clamp events, rejected inputs."""

    def __init__(self, now=0.0):
        """Start counting at ``now``."""
        self.total_clamped = 0
        self.total_rejected = 0
        self.reset(now)

    def reset(self, now):
        """Start a new reporting period."""
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
        }


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

    Raises ValueError (with the reason) when the parameters do not fit the model: per-joint
    array lengths, unknown command joints.
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
                raise ValueError(error)
        command_joints = tuple(cfg.get('command_joints') or names)
        error = node_params.check_joint_names('command_joints', command_joints, names)
        if error:
            raise ValueError(error)
        self.mode = cfg['mode']
        self.gravity = np.array(cfg['gravity'], dtype=float)
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


class BaseAccelerationInput:
    """Acceleration of a moving fixed base: a fresh topic, else a fresh IMU, else the parameter.

    [ax, ay, az, alpha_x, alpha_y, alpha_z] in the world (= root link) frame.  A topic message
    (``frame_id`` empty or the root link) wins while it is younger than ``timeout``; then an
    IMU (:attr:`imu`, an :class:`ImuInput` when enabled) while its last message is younger than
    its timeout; then the parameter value applies again.  :meth:`select` returns None for a
    zero base acceleration (the core's fast path).
    """

    def __init__(self, root_link, default, timeout, floating_base=False):
        """Start from the parameter value; raise ValueError when the model cannot take it."""
        self.root_link = root_link
        self.floating_base = floating_base
        self.timeout = timeout
        self.stamp = -math.inf
        self.topic = np.zeros(6)
        self.default = None
        self.imu = None
        self.source = 'none'
        self.set_default(default)

    def set_imu(self, enabled, link_body, filter_time, timeout):
        """Enable (keeping a running IMU input) or disable the IMU; ValueError for a floating base.

        ``link_body`` is the model's ``RobotModel.link_body``.
        """
        if not enabled:
            self.imu = None
            return
        if self.floating_base:
            raise ValueError('use_imu is for fixed-base models; with floating_base the base '
                             'acceleration is part of the state')
        if self.imu is None:
            self.imu = ImuInput(self.root_link, link_body, timeout, filter_time)
        self.imu.timeout = timeout
        self.imu.filter_time = filter_time

    def set_default(self, values):
        """Set the parameter value (6 numbers); raise ValueError for a floating base."""
        values = np.zeros(6) if values is None else np.array(values, dtype=float).reshape(6)
        if values.any() and self.floating_base:
            raise ValueError('base_acceleration is for fixed-base models; with floating_base '
                             'the base acceleration is part of the state')
        self.default = values if values.any() else None

    def update(self, frame_id, values, now):
        """Take a topic message; return None or why it was rejected (then nothing is kept)."""
        if self.floating_base:
            return 'base_acceleration is for fixed-base models (floating_base is true)'
        if frame_id not in ('', self.root_link):
            return (f"frame_id '{frame_id}': give the acceleration in the world frame, i.e. "
                    f"the root link '{self.root_link}' (or leave frame_id empty)")
        values = np.array(values, dtype=float).reshape(6)
        error = _finite_error('base acceleration', values, MAX_BASE_ACCELERATION)
        if error:
            return error
        self.topic[:] = values
        self.stamp = now
        return None

    def select(self, now, gravity):
        """Return (gravity, base acceleration) for the core now; note the source in ``source``.

        With a fresh IMU the gravity is 0 and the base acceleration is the IMU's a_0 (it holds
        gravity already); otherwise ``gravity`` and the topic's or the parameter's value.
        ``source`` is one of 'topic', 'imu', 'parameter', 'none'.
        """
        if now - self.stamp <= self.timeout:
            self.source = 'topic'
            return gravity, (self.topic if self.topic.any() else None)
        imu = self.imu
        if imu is not None and imu.fresh(now):
            self.source = 'imu'
            return _NO_GRAVITY, imu.a0
        self.source = 'none' if self.default is None else 'parameter'
        return gravity, self.default


class ImuInput:
    """The fictitious base acceleration a_0 = a_base - g of a moving fixed base, from an IMU.

    An accelerometer measures the specific force f = R^T (a - g) in its own frame: at rest and
    level it reads +9.81 m/s^2 on its up axis.  Rotated into the root frame, f is a_imu - g, so
    the IMU gives a_0 directly, the base's tilt against gravity included (a rolling ship): the
    node then passes gravity 0 to the core.  The IMU frame (``frame_id``, empty = root link) must
    be rigidly attached to the root link (merged into it by fixed joints); at position r from
    the root origin the reading is moved there with the measured angular velocity w and the
    angular acceleration alpha: a_origin - g = R f - alpha x r - w x (w x r).

    alpha is the finite difference of w between consecutive messages (sensor stamps), low-pass
    filtered with time constant ``filter_time`` seconds (0: alpha is taken as 0).  A gap longer
    than ``timeout``, or no gyro (angular_velocity_covariance[0] = -1), restarts it at 0.  The
    base velocity itself is not an input of the RNEA (taken as 0).  :attr:`a0` holds
    [linear, angular] in the root frame; it is used while the last message is younger than
    ``timeout`` (steady clock).
    """

    def __init__(self, root_link, link_body, timeout, filter_time):
        """Index the links rigidly attached to the root (``RobotModel.link_body`` entries)."""
        self.root_link = root_link
        self.links = frozenset(link_body)
        self.frames = {link: (np.array(R, dtype=float), np.array(p, dtype=float))
                       for link, (body, R, p) in link_body.items() if body < 0}
        if root_link in self.frames:
            self.frames[''] = self.frames[root_link]
        self.timeout = timeout
        self.filter_time = filter_time
        self.a0 = np.zeros(6)
        self.w = np.zeros(3)
        self.alpha = np.zeros(3)
        self.stamp = -math.inf          # steady clock time of the last accepted message
        self._sensor_time = None        # sensor stamp of the last gyro sample (differencing)

    def fresh(self, now):
        """Return True while the last accepted message is younger than the timeout."""
        return now - self.stamp <= self.timeout

    def _frame(self, frame_id):
        frame = self.frames.get(frame_id)
        if frame is not None:
            return frame, None
        if frame_id not in self.links:
            return None, (f"frame_id '{frame_id}' is not a link of the model (the IMU frame "
                          f"must be a link rigidly attached to the root link '{self.root_link}'"
                          ', or empty for the root link)')
        return None, (f"frame_id '{frame_id}' is a link moved by the robot's joints: the IMU "
                      f"must be rigidly attached to the root link '{self.root_link}' (fixed "
                      'joints only)')

    def update(self, frame_id, angular_velocity, linear_acceleration, gyro_covariance0,
               accel_covariance0, sensor_time, now):
        """Take one Imu message; return None or why it was rejected (then nothing is kept).

        ``angular_velocity`` (rad/s) and ``linear_acceleration`` (m/s^2) are 3 numbers in the
        IMU frame; the covariances' first elements flag a missing field with -1 (REP 145).
        ``sensor_time`` is the header stamp in seconds (<= 0: unstamped, ``now`` is used).
        """
        frame, error = self._frame(frame_id)
        if error:
            return error
        if accel_covariance0 == -1.0:
            return ('linear_acceleration is not provided (linear_acceleration_covariance[0] = '
                    '-1, REP 145): this IMU cannot give the base acceleration')
        lin = np.array(linear_acceleration, dtype=float).reshape(3)
        gyro = gyro_covariance0 != -1.0
        w_imu = np.array(angular_velocity, dtype=float).reshape(3) if gyro else np.zeros(3)
        error = (_finite_error('linear_acceleration', lin, MAX_IMU_ACCELERATION)
                 or _finite_error('angular_velocity', w_imu, MAX_IMU_ANGULAR_VELOCITY))
        if error:
            return error
        t = sensor_time if sensor_time > 0.0 else now
        last = self._sensor_time
        if gyro and last is not None and -1.0 <= t - last <= 0.0:
            return (f'stamp {t:.9f} is not after the previous IMU stamp {last:.9f} (out of '
                    'order or repeated)')
        R, r = frame
        w = R @ w_imu
        if not gyro or self.filter_time <= 0.0 or last is None or not 0.0 < t - last <= \
                self.timeout:
            self.alpha[:] = 0.0         # no gyro, angular part off, first sample or a gap
        else:
            dt = t - last
            gain = -math.expm1(-dt / self.filter_time)
            self.alpha += gain * ((w - self.w) / dt - self.alpha)
        self.w[:] = w
        self._sensor_time = t if gyro else None
        alpha = self.alpha
        self.a0[:3] = R @ lin - np.cross(alpha, r) - np.cross(w, np.cross(w, r))
        self.a0[3:] = alpha
        self.stamp = now
        return None


class StampCheck:
    """Order check of input stamps: negative, malformed and out-of-order stamps are rejected.

    A stamp older than the last accepted one by at most ``reset`` seconds is out of order (a
    late or replayed message); a bigger jump back is a clock reset (simulation or bag restart)
    and is accepted, so the node never locks itself out.  ``nanosec`` must be below 10^9.

    One message stamped in the future (a glitch up to ``reset`` seconds ahead) must not stop a
    correct stream: after it, the correct messages look out of order.  When ``recover``
    consecutive rejected stamps increase among themselves, the stream has moved on without the
    outlier: the last of them is accepted and becomes the new reference.  So one outlier costs
    ``recover - 1`` rejected messages (2 ms at 1 kHz with the default 3), while a single late
    message (or an isolated burst of fewer than ``recover``) is still rejected.  A zero stamp (a
    simulator at t = 0, drivers without a clock) is accepted; :meth:`check` reports it once
    through ``zero_note``.
    """

    def __init__(self, reset=1.0, recover=3):
        """Accept any first stamp."""
        self.reset = reset
        self.recover = recover
        self.last = None
        self.zero_note = None
        self.recovered = None           # set to the skipped outlier's stamp on a recovery
        self._zero_noted = False
        self._behind = []               # consecutive rejected (out-of-order) stamps

    def check(self, sec, nanosec):
        """Return (error or None, stamp in seconds); :meth:`accept` it once the input is kept."""
        stamp = sec + 1e-9 * nanosec
        self.zero_note = None
        self.recovered = None
        if sec < 0:
            return f'negative stamp {stamp:.9f}', stamp
        if not 0 <= nanosec < 1_000_000_000:
            return f'stamp nanosec {nanosec} is not in [0, 10^9)', stamp
        last = self.last
        if last is not None and stamp < last and last - stamp <= self.reset:
            behind = self._behind
            if behind and stamp <= behind[-1]:
                behind.clear()
            behind.append(stamp)
            if len(behind) < self.recover:
                return (f'stamp {stamp:.9f} is older than the last accepted {last:.9f} (out of '
                        'order)'), stamp
            self.recovered = last
        self._behind.clear()
        if stamp == 0.0 and not self._zero_noted:
            self._zero_noted = True
            self.zero_note = 'zero stamp: efforts carry stamp 0 (is the publisher stamping?)'
        return None, stamp

    def accept(self, stamp):
        """Remember the stamp of an accepted input."""
        self.last = stamp
