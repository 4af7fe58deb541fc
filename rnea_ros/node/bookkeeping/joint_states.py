"""Joint states merged by name, with their stamp checks."""

import numpy as np
from rnea_ros.core.kernels.vectors import scatter_bounded
from rnea_ros.node.bookkeeping.names import (as_array, finite_error, MAX_JOINT_STATE,
                                             MAX_UNKNOWN_NAMES, MimicTable, NameMap, truncated)


_NONE = np.zeros(0, dtype=np.intp)


class JointStateInput:
    """Joint positions and velocities merged by name from (possibly partial) JointState messages.

    Names the model lacks are ignored (reported once through :attr:`new_unknown`; at most
    ``MAX_UNKNOWN_NAMES`` are remembered, :attr:`unknown_count` counts the rest); a missing
    velocity counts as 0; a mimic joint that no message names follows its driver.  ``q`` and
    ``qd`` may be views into bigger arrays (e.g. behind a floating base).

    Joints no driver publishes (the fingers of an arm-only driver) can be held at given
    positions with :meth:`set_fixed`: they count as known (velocity 0) until a message names
    them, and from then on the measurement wins.
    """

    def __init__(self, joint_names, mimic=(), q=None, qd=None):
        """Prepare the merged state of the given model joints (all unknown at first)."""
        n = len(joint_names)
        self.names = NameMap(joint_names)
        self.q = np.zeros(n) if q is None else q
        self.qd = np.zeros(n) if qd is None else qd
        self.received = np.zeros(n, dtype=bool)
        self.mimic = MimicTable(joint_names, mimic)
        self._mimic = np.zeros(n, dtype=bool)
        self._mimic[self.mimic.joint] = True
        self._follow = self._mimic.copy()
        self.fixed = np.zeros(n, dtype=bool)
        self.ready = n == 0
        self._merged = None
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
        src, dst, unknown, error = self.names.lookup(names)
        if error:
            return error
        if not len(dst):    # empty or only unknown names: it must not refresh the watchdog
            return (f'names none of the model joints (got {truncated(names, 5)}); model joints: '
                    f'{truncated(self.names.joint_names, 5)}')
        # One kernel call each (checks every value, then writes): velocity checked first, so
        # that a rejected message leaves q and qd as they were.
        if scatter_bounded(velocity, _NONE, self.qd, _NONE, MAX_JOINT_STATE) >= 0:
            return finite_error('velocity', velocity, MAX_JOINT_STATE)
        if scatter_bounded(position, src, self.q, dst, MAX_JOINT_STATE) >= 0:
            return finite_error('position', position, MAX_JOINT_STATE)
        if len(velocity):
            scatter_bounded(velocity, src, self.qd, dst, MAX_JOINT_STATE)
        else:
            self.qd[dst] = 0.0
        self._note_unknown(unknown)
        if dst is not self._merged:     # a name list not merged last time (lookup caches dst)
            self._merged = dst
            self.received[dst] = True
            self._follow &= ~self.received
            self.ready = self.ready or bool((self.received | self._follow | self.fixed).all())
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
            followed = other.ready and not other.received[i] and not other.fixed[i]
            if other.received[i] or (followed and not self._follow[j]):
                self.q[j], self.qd[j] = other.q[i], other.qd[i]
                self.received[j] = True
        self._follow &= ~self.received
        self.ready = self.ready or bool((self.received | self._follow | self.fixed).all())
        self.mimic.fill(self.q, self._follow, True)
        self.mimic.fill(self.qd, self._follow, False)
        self._merged = None

    def set_fixed(self, index, positions):
        """Hold the joints ``index`` (model order) at ``positions`` until a message names them.

        Replaces the previous set: a joint no longer held and never received is missing again.
        A mimic joint whose driver is held follows it.
        """
        index = np.asarray(index, dtype=np.intp)
        positions = np.asarray(positions, dtype=float)
        self.fixed[:] = False
        self.fixed[index] = True
        held = ~self.received[index]
        self.q[index[held]] = positions[held]
        self.qd[index[held]] = 0.0
        self._follow = self._mimic & ~self.received & ~self.fixed
        self.ready = bool((self.received | self._follow | self.fixed).all())
        self.mimic.fill(self.q, self._follow, True)
        self.mimic.fill(self.qd, self._follow, False)
        self._merged = None

    def missing(self):
        """Return the model joints that still have no position."""
        have = self.received | self._follow | self.fixed
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
