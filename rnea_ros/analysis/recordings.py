"""Recordings: sensor_msgs/JointState in rosbag2 (mcap or sqlite3), read and written.

The first stage of every command that reads a recording (``rnea-ros analyze``, ``observe`` and
``identify``): the bag is read through the ``rosbags`` library (no ROS installation needed).

- :func:`read_joint_states` returns the whole recording as arrays (analyze, observe);
- :func:`iter_joint_states` yields it in chunks (identify: memory does not grow with the
  recording), :func:`count_joint_states` counts its messages from the bag's index;
- :func:`model_order` maps a recording's joint names to a model's joints, :func:`held_joints`
  says which model joints a recording lacks and where they are held;
  :func:`same_recording` tells two paths of one recording apart from two recordings;
- :func:`write_joint_states` and :class:`JointStateWriter` write recordings (the demo, the
  simulated bags, tests and benchmarks).

Messages are decoded in bulk from their CDR bytes (checked against the deserializer once per
byte layout), and a recording is evidence: a NaN or Inf anywhere is an error naming the sample,
never a value to guess.
"""

import numpy as np

JOINT_STATE_TYPE = 'sensor_msgs/msg/JointState'


def _typestore():
    try:
        from rosbags.typesys import get_typestore, Stores
    except ImportError:
        raise ValueError('reading rosbag2 recordings needs the rosbags package: '
                         'pip install rosbags') from None
    return get_typestore(Stores.ROS2_HUMBLE)


def read_joint_states(bag, topic='/joint_states'):
    """Return (t, names, Q, QD, E) from a rosbag2 folder or file; QD/E are None when absent.

    ``t`` is the header stamp in seconds (the bag receive time when the stamp is zero).
    Messages whose joint names differ from the first message's are reordered to them; messages
    lacking a joint are skipped.  Rows are sorted by stamp.  The whole recording is in memory:
    long recordings are read with :func:`iter_joint_states`.
    """
    parts, names = [], None
    for t, names, Q, QD, E in iter_joint_states(bag, topic, check=False):
        parts.append((t, Q, QD, E))
    total = sum(p[0].size for p in parts)
    if total < 3:
        raise ValueError(f'topic {topic!r} in {bag!r} has {total} usable messages; need >= 3')
    t = np.concatenate([p[0] for p in parts])
    order = np.argsort(t, kind='stable')
    t = t[order]
    columns = []
    for k in (1, 2, 3):
        values = [p[k] for p in parts]
        columns.append(None if any(v is None for v in values)
                       else np.concatenate(values)[order])
    _check_finite(t, columns, topic)
    return t, names, columns[0], columns[1], columns[2]


def count_joint_states(bag, topic='/joint_states'):
    """Return the number of messages on ``topic`` in a bag (from its index; 0 if unknown)."""
    from pathlib import Path
    from rosbags.highlevel import AnyReader
    try:
        with AnyReader([Path(bag)], default_typestore=_typestore()) as reader:
            return sum(c.msgcount for c in reader.connections if c.topic == topic)
    except Exception:  # noqa: B902 - the read itself reports bad bags
        return 0


def iter_joint_states(bag, topic='/joint_states', chunk=20_000, check=True):
    """Yield (t, names, Q, QD, E) of ``chunk`` messages at a time (see :func:`read_joint_states`).

    Rows are sorted by stamp within a chunk only.  Messages are decoded in bulk: those with the
    byte layout of the first message of their length (same frame, names and array sizes) are
    read as arrays from their CDR bytes (checked against the deserializer once per layout),
    the others one by one.  Velocities/efforts are None when the first chunk lacks them (later
    rows without them are skipped).  ``check``: raise on NaN/Inf, naming the sample.
    """
    from pathlib import Path
    typestore = _typestore()
    from rosbags.highlevel import AnyReader
    try:
        reader = AnyReader([Path(bag)], default_typestore=typestore)
        reader.open()
    except Exception as exc:  # noqa: B902 - rosbags raises its own errors for bad bags
        raise ValueError(f'cannot read bag {bag!r}: {exc}') from None
    try:
        connections = [c for c in reader.connections if c.topic == topic]
        if not connections:
            topics = sorted({f'{c.topic} ({c.msgtype})' for c in reader.connections})
            raise ValueError(f'bag {bag!r} has no topic {topic!r}; topics: {topics}')
        if any(c.msgtype != JOINT_STATE_TYPE for c in connections):
            raise ValueError(f'topic {topic!r} is not {JOINT_STATE_TYPE}')
        decoder = _Decoder(reader)
        raws, stamps, seen = [], [], 0
        try:
            for connection, stamp_ns, raw in reader.messages(connections=connections):
                raws.append((connection, raw))
                stamps.append(stamp_ns)
                if len(raws) >= chunk:
                    out = decoder.decode(raws, stamps)
                    raws, stamps = [], []
                    if out is not None:
                        if check:
                            _check_finite(out[0], list(out[1:]), topic, seen)
                        seen += out[0].size
                        yield (out[0], decoder.names) + out[1:]
            out = decoder.decode(raws, stamps) if raws else None
        except ValueError:
            raise
        except Exception as exc:  # noqa: B902 - a corrupted chunk raises anything (Overflow...)
            raise ValueError(f'cannot read bag {bag!r}: corrupted data ({type(exc).__name__}: '
                             f'{exc})') from None
        if out is not None:
            if check:
                _check_finite(out[0], list(out[1:]), topic, seen)
            yield (out[0], decoder.names) + out[1:]
    finally:
        reader.close()


def _cdr_layout(raw):
    """Return (names, [(offset, count)] of position/velocity/effort, end of the header part).

    ``raw``: a little-endian CDR sensor_msgs/JointState (4 bytes of encapsulation, then
    stamp sec/nanosec, frame_id, name[], position[], velocity[], effort[]; alignment relative
    to byte 4).  None when it is not little-endian.
    """
    raw = bytes(raw)
    if len(raw) < 12 or raw[1] != 1:
        return None

    def u32(pos):
        pos = 4 + ((pos - 4 + 3) & ~3)
        return int.from_bytes(raw[pos:pos + 4], 'little'), pos + 4

    n, pos = u32(12)                        # frame_id
    pos += n
    count, pos = u32(pos)
    names = []
    for _ in range(count):
        n, pos = u32(pos)
        names.append(raw[pos:pos + n - 1].decode('utf-8'))
        pos += n
    arrays, header_end = [], None
    for _ in range(3):
        count, pos = u32(pos)
        if header_end is None:
            header_end = pos
        if count:
            pos = 4 + ((pos - 4 + 7) & ~7)
        arrays.append((pos, count))
        pos += 8 * count
    return names, arrays, pos


class _Decoder:
    """Decode chunks of raw JointState messages into arrays (see :func:`iter_joint_states`)."""

    def __init__(self, reader):
        self.reader = reader
        self.names = None
        self.present = None             # (velocity, effort) present in the first chunk
        self.layouts = {}               # raw length -> (prefix bytes, layout, order) or None

    def decode(self, raws, stamps):
        """Return (t, Q, QD, E) of the usable messages sorted by stamp, or None."""
        rows_t, rows = [], [[], [], []]
        groups = {}
        for k, (_, raw) in enumerate(raws):
            groups.setdefault(len(raw), []).append(k)
        slow = []
        for length, index in groups.items():
            layout = self._layout(raws[index[0]], length)
            if layout is None:
                slow += index
                continue
            prefix, arrays, order = layout
            if order is None:
                continue
            block = np.frombuffer(b''.join(bytes(raws[k][1]) for k in index),
                                  dtype=np.uint8).reshape(len(index), length)
            same = np.all(block[:, 12:len(prefix)] == prefix[12:], axis=1)
            slow += [index[k] for k in np.flatnonzero(~same)]
            block = block[same]
            idx = np.asarray(index)[same]
            sec = block[:, 4:8].copy().view('<i4')[:, 0].astype(float)
            nsec = block[:, 8:12].copy().view('<u4')[:, 0].astype(float)
            t = sec + 1e-9 * nsec
            log = 1e-9 * np.asarray(stamps, dtype=float)[idx]
            rows_t.append(np.where(t > 0.0, t, log))
            for f, (offset, count) in enumerate(arrays):
                if count == len(self.names):
                    values = block[:, offset:offset + 8 * count].copy().view('<f8')
                    rows[f].append(values[:, order])
                else:
                    rows[f].append(None)
        for k in slow:
            row = self._slow(*raws[k], stamps[k])
            if row is not None:
                rows_t.append(np.array([row[0]]))
                for f in range(3):
                    rows[f].append(None if row[1 + f] is None else row[1 + f][None])
        if not rows_t:
            return None
        t = np.concatenate(rows_t)
        if self.present is None:
            self.present = tuple(all(v is not None for v in rows[f]) for f in (1, 2))
        use = [True] * len(rows_t)
        for f, present in zip((1, 2), self.present):
            if present:
                use = [u and v is not None for u, v in zip(use, rows[f])]
        keep = np.concatenate([np.full(r.size, u) for r, u in zip(rows_t, use)])
        if rows[0] and any(v is None for v in rows[0]):
            raise ValueError('joint states carry no positions')
        out = [t[keep]]
        for f, present in ((0, True), (1, self.present[0]), (2, self.present[1])):
            out.append(np.concatenate([v for v, u in zip(rows[f], use) if u])
                       if present else None)
        if out[0].size == 0:
            return None
        order = np.argsort(out[0], kind='stable')
        return tuple(None if v is None else v[order] for v in out)

    def _layout(self, item, length):
        if length not in self.layouts:
            connection, raw = item
            layout = _cdr_layout(raw)
            if layout is not None:
                names, arrays, end = layout
                msg = self.reader.deserialize(raw, connection.msgtype)
                if self.names is None:
                    self.names = list(msg.name)
                ok = end == len(raw) and names == list(msg.name) and all(
                    np.array_equal(np.frombuffer(bytes(raw[o:o + 8 * c]), '<f8'),
                                   np.asarray(v, dtype=float))
                    for (o, c), v in zip(arrays, (msg.position, msg.velocity, msg.effort)))
                if ok:
                    index = {n: i for i, n in enumerate(names)}
                    order = (None if any(n not in index for n in self.names)
                             else [index[n] for n in self.names])
                    prefix = np.frombuffer(bytes(raw[:arrays[0][0]]), dtype=np.uint8)
                    layout = (prefix, arrays, order)
                else:
                    layout = None
            self.layouts[length] = layout
        return self.layouts[length]

    def _slow(self, connection, raw, stamp_ns):
        """Return (t, q, qd, e) of one message by the deserializer, or None (joints lacking)."""
        msg = self.reader.deserialize(raw, connection.msgtype)
        stamp = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        if self.names is None:
            self.names = list(msg.name)
        index = {n: i for i, n in enumerate(msg.name)}
        if any(n not in index for n in self.names):
            return None
        order = [index[n] for n in self.names]
        return (stamp if stamp > 0.0 else 1e-9 * stamp_ns, _field(msg.position, order),
                _field(msg.velocity, order), _field(msg.effort, order))


def _check_finite(t, columns, topic, first=0):
    """Raise ValueError naming the first sample with NaN or Inf (a bag is evidence: no guess).

    ``first``: the index of the first row in the whole recording (chunks).
    """
    for label, values in zip(('stamp', 'position', 'velocity', 'effort'), [t] + columns):
        if values is None:
            continue
        bad = ~np.isfinite(values)
        if bad.ndim > 1:
            bad = bad.any(axis=1)
        if bad.any():
            k = int(np.argmax(bad))
            raise ValueError(f'{topic!r}: {label} of sample {first + k} (t = {t[k]:.9f} s) is '
                             f'not finite ({int(bad.sum())} samples affected); clean the bag '
                             'first')


def _field(values, order):
    values = np.asarray(values, dtype=float)
    return values[order] if values.size == len(order) else None


def write_joint_states(path, t, names, Q, QD, E, topic='/joint_states', storage='mcap'):
    """Write JointState messages (one per row, header stamp = t) to a new rosbag2 at ``path``."""
    with JointStateWriter(path, names, topic, storage) as writer:
        writer.write(t, Q, QD, E)


class JointStateWriter:
    """A new rosbag2 of JointState messages written in chunks (long recordings).

    ``with JointStateWriter(path, names) as w: w.write(t, Q, QD, E)`` (any number of calls).
    Messages are encoded in bulk: the first row by the serializer, the others by filling its
    CDR bytes (stamp and arrays) with numpy; each chunk's first row is checked against the
    serializer.
    """

    def __init__(self, path, names, topic='/joint_states', storage='mcap'):
        """Open the bag (it must not exist)."""
        from rosbags.rosbag2 import StoragePlugin, Writer
        self.typestore = _typestore()
        self.names = list(names)
        plugin = {'mcap': StoragePlugin.MCAP, 'sqlite3': StoragePlugin.SQLITE3}[storage]
        self.writer = Writer(path, version=9, storage_plugin=plugin)
        self.writer.open()
        self.connection = self.writer.add_connection(topic, JOINT_STATE_TYPE,
                                                     typestore=self.typestore)

    def _serialize(self, ns, q, qd, e):
        types = self.typestore.types
        msg = types[JOINT_STATE_TYPE](
            header=types['std_msgs/msg/Header'](
                stamp=types['builtin_interfaces/msg/Time'](sec=ns // 10**9,
                                                           nanosec=ns % 10**9),
                frame_id=''),
            name=list(self.names), position=np.asarray(q, dtype=float),
            velocity=np.asarray(qd, dtype=float), effort=np.asarray(e, dtype=float))
        return bytes(self.typestore.serialize_cdr(msg, JOINT_STATE_TYPE))

    def write(self, t, Q, QD, E):
        """Append rows (t in s; Q, QD, E (N, n) arrays, (N, 0) for a field left empty)."""
        t = np.asarray(t, dtype=float)
        if t.size == 0:
            return
        ns = np.round(t * 1e9).astype(np.int64)
        fields = [np.asarray(X, dtype=float).reshape(t.size, -1) for X in (Q, QD, E)]
        first = self._serialize(int(ns[0]), *(X[0] for X in fields))
        layout = _cdr_layout(first)
        block = np.tile(np.frombuffer(first, dtype=np.uint8), (t.size, 1))
        block[:, 4:8] = (ns // 10**9).astype('<i4')[:, None].view(np.uint8)
        block[:, 8:12] = (ns % 10**9).astype('<u4')[:, None].view(np.uint8)
        for (offset, count), X in zip(layout[1], fields):
            block[:, offset:offset + 8 * count] = np.ascontiguousarray(
                X, dtype='<f8').view(np.uint8)
        assert bytes(block[0]) == first
        for k in range(t.size):
            self.writer.write(self.connection, int(ns[k]), block[k].tobytes())

    def close(self):
        """Finish the bag."""
        self.writer.close()

    def __enter__(self):
        """Return the writer."""
        return self

    def __exit__(self, *exc):
        """Close the bag."""
        self.close()


def same_recording(a, b):
    """Return whether paths ``a`` and ``b`` name one recording.

    The same file or folder (links resolved), or a rosbag2 folder and a storage file directly
    in it (``bag`` and ``bag/bag_0.mcap``).
    """
    import os
    a, b = os.path.realpath(a), os.path.realpath(b)
    return a == b or os.path.dirname(a) == b or os.path.dirname(b) == a


def held_joints(names, model, fixed=None, bag='the recording'):
    """Return {joint: position} of the model joints that a recording's ``names`` lack.

    Each is held still at ``fixed[joint]`` (``--fixed joint=value``), else at 0.  ValueError
    when the recording names none of the model's joints, or ``fixed`` names a joint it has
    (``--fixed`` holds the joints a recording lacks).
    """
    fixed = dict(fixed or {})
    present = [j for j in model.joint_names if j in names]
    if not present:
        raise ValueError(f'{bag}: the joint states name none of the model joints '
                         f'{list(model.joint_names)}; they name {list(names)}')
    recorded = [j for j in fixed if j in present]
    if recorded:
        raise ValueError(f'--fixed names joints the recording has: {recorded}; it holds '
                         'joints the recording lacks')
    return {j: fixed.get(j, 0.0) for j in model.joint_names if j not in present}


def model_order(names, model):
    """Return the column of each model joint in a bag's name list (ValueError if missing)."""
    missing = [j for j in model.joint_names if j not in names]
    if missing:
        raise ValueError(f'the joint states lack model joints {missing}; they name {names}')
    return [names.index(j) for j in model.joint_names]
