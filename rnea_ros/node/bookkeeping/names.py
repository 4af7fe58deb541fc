"""Joint names and values: name maps, mimic joints, bounds shared by every input."""

from collections import Counter
import re
import zlib

import numpy as np
from rnea_ros.core.kernels.vectors import follow_drivers

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
        model lacks, ``error`` is set for duplicate names and for an empty name (no joint can
        have it: the message is malformed, its values are not used).
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
        if '' in names:
            return None, None, (), f'has an empty joint name (entry {names.index("")})'
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


def finite_error(what, values, bound=None):
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
        self._no_offset = np.zeros(len(rows))

    def __len__(self):
        """Return the number of mimic joints."""
        return len(self.joint)

    def fill(self, values, mask, with_offset):
        """Set values[m] from values[driver] for the mimic joints where ``mask`` is True."""
        follow_drivers(values, self.joint, self.driver, self.multiplier,
                       self.offset if with_offset else self._no_offset, mask)
