"""Messages as bytes: outputs kept serialized, joint states read without a message.

Outputs: the fixed part written once, stamp and numbers in place (:class:`SerializedMessage`).
Input: :class:`JointStateReader` reads repeated joint states from their bytes.

On every publish rclpy converts a message to C and the middleware serializes it: for the effort
message of a 32-joint robot (32 names, three arrays) about 5 of the ~30 us a publish takes
(quiet machine; the rest is the middleware's write).  The names and frame of an output never
change while a model is loaded, so its CDR bytes have a fixed layout.
:class:`SerializedMessage` serializes one message with rclpy, with marker values in its float64
fields, finds the stamp and those fields in the bytes, and keeps numpy
views of them *inside* the bytes.  The node writes q, qd, efforts or a wrench there and
publishes the bytes (``Publisher.publish(bytes)``: rmw's serialized publish, the path of
``ros2 bag play``); subscribers receive the same message.

The layout is checked at construction: rclpy must deserialize the bytes, with new values written
through the views, into the message with those values.  When it is not as expected (another
serialization, a marker not found), :attr:`SerializedMessage.raw` is False and
:meth:`SerializedMessage.message` returns a message object filled from the same views instead,
so callers are the same either way.
"""

import array
import struct

import numpy as np
from rclpy.serialization import deserialize_message, serialize_message

_STAMP = struct.Struct('<iI')          # builtin_interfaces/Time: int32 sec, uint32 nanosec
_MARK_SEC, _MARK_NSEC = 0x5EC0A11, 0x1A2B3C4D

# The largest joint state read (bytes): 10 000 joints with 64-character names and three arrays
# take 0.9 MB.  A larger message is refused before anything is decoded from it: decoding would
# build an object per name, and the allocator keeps the memory it grew for them.
MAX_JOINT_STATE_BYTES = 1 << 20


class Field:
    """A run of float64 values of a message: its length and how to read and write it."""

    def __init__(self, size, get, put):
        """``get(msg)`` returns the values, ``put(msg, values)`` sets them."""
        self.size, self.get, self.put = size, get, put


def _markers(fields):
    """Return distinct, unlikely float64 marker values per field."""
    out, start = {}, 0
    for name, field in fields.items():
        out[name] = np.pi * 1e7 + np.arange(start, start + field.size) * np.e
        start += field.size
    return out


def _unique_offset(data, key):
    """Return the offset of ``key`` in ``data`` if it occurs exactly once, else -1."""
    at = data.find(key)
    return at if at >= 0 and data.find(key, at + 1) < 0 else -1


class SerializedMessage:
    """One output message kept as its CDR bytes; float64 fields are numpy views into them.

    ``msg`` has a ``header`` (stamped per publish) and its fixed content (names, frame_id) set;
    ``fields`` maps a name to a :class:`Field`.  After construction write into
    ``views[name]``, call :meth:`stamp`, then publish :meth:`message`.
    """

    def __init__(self, msg, fields):
        """Serialize the template once, locate the stamp and the fields, check the layout."""
        self._msg, self._fields = msg, fields
        markers = _markers(fields)
        for name, field in fields.items():
            field.put(msg, markers[name])
        msg.header.stamp.sec, msg.header.stamp.nanosec = _MARK_SEC, _MARK_NSEC
        data = serialize_message(msg)
        offsets = {name: (_unique_offset(data, m.tobytes()) if m.size else -1)
                   for name, m in markers.items()}
        self._stamp_at = _unique_offset(data, _STAMP.pack(_MARK_SEC, _MARK_NSEC))
        self.raw = (data[:2] == b'\x00\x01' and self._stamp_at >= 0     # CDR, little endian
                    and all(at >= 0 and (at - 4) % 8 == 0 for at in offsets.values()))
        if self.raw:
            # The payload (after the 4-byte encapsulation) starts 4 bytes before an 8-byte
            # boundary, so that the float64 views are aligned (numba and numpy fast paths).
            store = np.zeros(len(data) + 8, dtype=np.uint8)
            start = (-(store.ctypes.data + 4)) % 8
            self._bytes = store[start:start + len(data)]
            self._bytes[:] = np.frombuffer(data, dtype=np.uint8)
            self.views = {name: self._bytes[at:at + 8 * fields[name].size].view(np.float64)
                          for name, at in offsets.items()}
            self.raw = self._check()
        if not self.raw:
            self.views = {name: np.zeros(field.size) for name, field in fields.items()}
        for view in self.views.values():
            view[:] = 0.0

    def _check(self):
        """Return whether the bytes, with new values, deserialize into the expected message."""
        rng = np.random.default_rng(0)
        for view in self.views.values():
            view[:] = rng.normal(size=view.size)
        self.stamp(_Time(123456, 789))
        try:
            back = deserialize_message(self._bytes.tobytes(), type(self._msg))
        except Exception:   # noqa: BLE001 - any failure means: publish messages instead
            return False
        return (back.header.stamp.sec, back.header.stamp.nanosec) == (123456, 789) and all(
            np.array_equal(np.asarray(field.get(back), dtype=float), self.views[name])
            for name, field in self._fields.items())

    def stamp(self, stamp):
        """Write the header stamp, a builtin_interfaces/Time."""
        if self.raw:
            _STAMP.pack_into(self._bytes, self._stamp_at, stamp.sec, stamp.nanosec)
        else:
            self._msg.header.stamp = stamp

    def message(self):
        """Return what to publish: the bytes (raw) or the message filled from the views."""
        if self.raw:
            return self._bytes.tobytes()
        for name, field in self._fields.items():
            field.put(self._msg, self.views[name])
        return self._msg


class _Time:
    """A stand-in for builtin_interfaces/Time in the layout check."""

    def __init__(self, sec, nanosec):
        self.sec, self.nanosec = sec, nanosec


def _array_field(attr, n):
    return Field(n, lambda msg: getattr(msg, attr),
                 lambda msg, values: setattr(msg, attr, array.array('d', values.tobytes())))


def joint_state_output(msg_type, names):
    """Return a SerializedMessage for a JointState with fixed names: position, velocity, effort."""
    n = len(names)
    fields = {attr: _array_field(attr, n) for attr in ('position', 'velocity', 'effort')}
    return SerializedMessage(msg_type(name=list(names)), fields)


def _put_wrench(msg, values):
    force, torque = msg.wrench.force, msg.wrench.torque
    force.x, force.y, force.z, torque.x, torque.y, torque.z = (float(v) for v in values)


def _get_wrench(msg):
    force, torque = msg.wrench.force, msg.wrench.torque
    return [force.x, force.y, force.z, torque.x, torque.y, torque.z]


def wrench_output(msg_type, frame_id):
    """Return a SerializedMessage for a WrenchStamped in a fixed frame: [force, torque]."""
    msg = msg_type()
    msg.header.frame_id = frame_id
    return SerializedMessage(msg, {'wrench': Field(6, _get_wrench, _put_wrench)})


_U32 = struct.Struct('<I')
_EMPTY = np.zeros(0)
_CDR_LE = b'\x00\x01'


def _align(at, size):
    """Return ``at`` aligned to ``size`` bytes of the CDR payload (which starts at byte 4)."""
    return 4 + (at - 4 + size - 1) // size * size


class _Header:
    __slots__ = ('stamp',)


class JointStateView:
    """What the node reads of a JointState: header.stamp, name, position, velocity, effort.

    The arrays are read-only numpy views of the received bytes; ``name`` is the reader's list.
    """

    __slots__ = ('header', 'name', 'position', 'velocity', 'effort')

    def __init__(self):
        """Start empty."""
        self.header = _Header()
        self.header.stamp = None
        self.name, self.position, self.velocity, self.effort = [], _EMPTY, _EMPTY, _EMPTY


class JointStateReader:
    """Joint states from their CDR bytes, without building a message while the names repeat.

    A driver sends the same names in every message; rclpy would make 2 + n Python objects of
    each (about 40 us for a 32-joint message on a busy machine, more than the relay's whole
    publish).  The reader keeps the bytes of the last name list rclpy decoded for it.  When a
    message holds the same bytes there (one comparison), stamp and arrays are read at their
    offsets, the arrays as numpy views of the bytes, and the names are the list it already
    has.  Any other message (new names, another encoding, bytes it cannot place) is decoded by
    rclpy, which raises on garbage, and its name list is remembered instead.  One list is
    remembered at a time.  ``time_type`` makes the stamp (builtin_interfaces/Time).  A message
    longer than ``max_bytes`` raises ValueError before anything is decoded (memory stays bounded
    whatever arrives).
    """

    def __init__(self, msg_type, time_type, max_bytes=MAX_JOINT_STATE_BYTES):
        """Remember nothing yet."""
        self._type, self._time = msg_type, time_type
        self.max_bytes = max_bytes
        self._block = None
        self._names = None
        self._view = JointStateView()

    def read(self, data):
        """Return a JointStateView (repeated names) or the decoded message (anything else)."""
        if len(data) > self.max_bytes:
            raise ValueError(f'{len(data)} bytes, more than the {self.max_bytes} a joint state '
                             'may have (refused unread)')
        view = self._fast(data)
        if view is not None:
            return view
        msg = deserialize_message(data, self._type)
        self._remember(data, msg)
        return msg

    def _names_at(self, data):
        """Return the offset of the name list (after the header's frame_id), or -1."""
        if len(data) < 16 or data[:2] != _CDR_LE:
            return -1
        return _align(16 + _U32.unpack_from(data, 12)[0], 4)

    def _fast(self, data):
        block = self._block
        if block is None:
            return None
        at = self._names_at(data)
        end = at + len(block)
        if at < 0 or end > len(data):
            return None
        # Compare the name list's bytes except the alignment padding between strings, which CDR
        # leaves undefined (a serializer may leave stale memory there).
        np.bitwise_and(np.frombuffer(data, np.uint8, len(block), at), self._mask, out=self._seen)
        if self._seen.tobytes() != block:
            return None
        size = len(data)
        arrays = []
        for _ in range(3):                  # position, velocity, effort
            at = _align(end, 4)
            if at + 4 > size:
                return None
            count = _U32.unpack_from(data, at)[0]
            start = _align(at + 4, 8) if count else at + 4
            end = start + 8 * count
            if end > size:
                return None
            arrays.append(np.frombuffer(data, np.float64, count, start) if count else _EMPTY)
        view = self._view
        sec, nanosec = _STAMP.unpack_from(data, 4)
        view.header.stamp = self._time(sec=sec, nanosec=nanosec)
        view.name = self._names
        view.position, view.velocity, view.effort = arrays
        return view

    def _remember(self, data, msg):
        """Keep the name block of a decoded message if it can be placed in the bytes."""
        self._block = None
        at = self._names_at(data)
        if at < 0 or at + 4 > len(data):
            return
        count, end = _U32.unpack_from(data, at)[0], at + 4
        names, padding = [], []
        for _ in range(min(count, len(msg.name) + 1)):
            start, end = end, _align(end, 4)
            padding.extend(range(start - at, end - at))
            if end + 4 > len(data):
                return
            length = _U32.unpack_from(data, end)[0]
            names.append(bytes(data[end + 4:end + 3 + length]).decode('utf-8', 'replace'))
            end += 4 + length
        if names != list(msg.name) or end > len(data):
            return
        self._mask = np.full(end - at, 0xFF, dtype=np.uint8)
        self._mask[padding] = 0
        self._seen = np.empty(end - at, dtype=np.uint8)
        self._block = (np.frombuffer(data, np.uint8, end - at, at) & self._mask).tobytes()
        self._names = names
