"""Part of ``bench_soak.py``: the monitor's view of an arm (answers taken raw, checked in batches).

The answers (``<ns>/rnea/joint_efforts``, sensor_msgs/JointState) and the commands
(``<ns>/effort_controller/commands``, std_msgs/Float64MultiArray) are subscribed raw: a callback
keeps the CDR bytes (and, for an answer, the time it came), nothing else; rclpy builds no
message (for a 9-joint JointState, 9 strings and three arrays, 2,000 times a second).  Every
housekeeping tick :meth:`Arm.flush` decodes what came with numpy: the messages of one length
whose bytes agree outside the stamp and the float64 arrays (the node publishes one serialized
template) share a layout, read once from the first (:func:`joint_state_arrays`,
:func:`multi_array_arrays`) and checked once against rclpy's deserializer; their stamps and
arrays are then read as columns of one (messages, bytes) array.  Bytes that do not fit a checked
layout are deserialized one by one (a message rclpy cannot read counts as a wrong answer).

Each answer is then checked as before, in order: non-finite (efforts, positions, velocities),
else the gravity torque of the model in use at its positions (``rnea_ros.gravity_torques`` per
row, vectorised comparison); after a reload the node may answer with the old model until it
switches to the one published last (before the answer came), never back.  Each command is
checked for non-finite values, its length and the URDF effort limits.
"""

import array
import bisect
import os
import struct
import subprocess
import sys
import time

from bench_soak_parts import last_error_line, PublisherRun, rss_mb, STAMP, TOL
import numpy as np

_U32 = struct.Struct('<I')
COUNT_KEYS = ('inputs_total', 'outputs_total', 'rejected_inputs_total')


def _align(at, size):
    """Return ``at`` aligned to ``size`` bytes of the CDR payload (which starts at byte 4)."""
    return 4 + (at - 4 + size - 1) // size * size


def _after_string(data, at):
    at = _align(at, 4)
    return at + 4 + _U32.unpack_from(data, at)[0]


def _doubles(data, at):
    """Return (offset, count, end) of the float64 sequence whose length is at ``at``."""
    at = _align(at, 4)
    count = _U32.unpack_from(data, at)[0]
    start = _align(at + 4, 8) if count else at + 4
    return start, count, start + 8 * count


def _count(data, at):
    at = _align(at, 4)
    count = _U32.unpack_from(data, at)[0]
    if count > len(data) // 4:
        raise ValueError('sequence longer than the message')
    return count, at + 4


def joint_state_arrays(data):
    """Return [(offset, count)] of position, velocity, effort of a little-endian CDR JointState."""
    names, at = _count(data, _after_string(data, 12))     # header: stamp at 4, frame_id at 12
    for _ in range(names):
        at = _after_string(data, at)
    out = []
    for _ in range(3):
        start, count, at = _doubles(data, at)
        out.append((start, count))
    if at > len(data):
        raise ValueError('arrays beyond the message')
    return out


def multi_array_arrays(data):
    """Return [(offset, count)] of the data of a little-endian CDR Float64MultiArray."""
    dims, at = _count(data, 4)
    for _ in range(dims):                       # label, size, stride
        at = _align(_after_string(data, at), 4) + 8
    start, count, end = _doubles(data, _align(at, 4) + 4)     # after data_offset
    if end > len(data):
        raise ValueError('data beyond the message')
    return [(start, count)]


class Decoder:
    """Raw CDR messages of one type decoded in batches (see the module docstring)."""

    def __init__(self, msg_type, arrays, fields, stamped):
        """``arrays(bytes)``: the layout parser; ``fields``: the message's float64 arrays."""
        self.type, self.arrays, self.fields, self.stamped = msg_type, arrays, fields, stamped
        self.checked = {}           # (length, bytes outside stamp and arrays) -> layout or None
        self.slow = 0               # messages deserialized one by one

    def decode(self, raws):
        """Yield (row indices, stamps ns or None, [(rows, count) float64 array per field])."""
        by_length = {}
        for i, data in enumerate(raws):
            by_length.setdefault(len(data), []).append(i)
        for length, rows in by_length.items():
            rows = np.asarray(rows)
            block = np.frombuffer(b''.join(raws[i] for i in rows), dtype=np.uint8)
            block = block.reshape(len(rows), length)
            while len(rows):
                layout = self._layout(block[0])
                if layout is None:
                    yield from self._one_by_one([raws[i] for i in rows], rows)
                    break
                fixed, spans = layout
                same = (block[:, fixed] == block[0, fixed]).all(axis=1)
                yield rows[same], self._stamps(block[same]), [
                    np.ascontiguousarray(block[same, at:at + 8 * n]).view('<f8')
                    for at, n in spans]
                rows, block = rows[~same], block[~same]

    def _stamps(self, block):
        if not self.stamped:
            return None
        sec = np.ascontiguousarray(block[:, 4:8]).view('<i4')[:, 0].astype(np.int64)
        nanosec = np.ascontiguousarray(block[:, 8:12]).view('<u4')[:, 0].astype(np.int64)
        return sec * 1_000_000_000 + nanosec

    def _layout(self, row):
        """Return (fixed byte indices, [(offset, count)]) of a checked layout, or None."""
        data = row.tobytes()
        try:
            spans = self.arrays(data)
        except (ValueError, struct.error):
            return None
        mask = np.ones(len(data), dtype=bool)
        if self.stamped:
            mask[4:12] = False
        for at, n in spans:
            mask[at:at + 8 * n] = False
        fixed = np.flatnonzero(mask)
        key = (len(data), row[fixed].tobytes())
        if key not in self.checked:
            self.checked[key] = (fixed, spans) if self._agrees(data, spans) else None
        return self.checked[key]

    def _agrees(self, data, spans):
        """Return whether rclpy deserializes ``data`` into what the layout reads."""
        from rclpy.serialization import deserialize_message
        try:
            msg = deserialize_message(data, self.type)
        except Exception:  # noqa: B902 - any failure: not a layout to trust
            return False
        if self.stamped and STAMP.unpack_from(data, 4) != (msg.header.stamp.sec,
                                                           msg.header.stamp.nanosec):
            return False
        return all(np.array_equal(np.frombuffer(data, '<f8', n, at),
                                  np.asarray(getattr(msg, name), dtype=float), equal_nan=True)
                   for (at, n), name in zip(spans, self.fields))

    def _one_by_one(self, raws, rows):
        """Yield each message as a batch of one, deserialized by rclpy (no arrays: unreadable)."""
        from rclpy.serialization import deserialize_message
        for i, data in zip(rows, raws):
            self.slow += 1
            try:
                msg = deserialize_message(data, self.type)
            except Exception:  # noqa: B902 - an unreadable answer is a wrong one
                yield np.array([i]), np.array([-1]) if self.stamped else None, None
                continue
            stamp = None
            if self.stamped:
                stamp = np.array([msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec])
            yield np.array([i]), stamp, [np.asarray(getattr(msg, name), dtype=float)[None, :]
                                         for name in self.fields]


class Arm:
    """One namespaced rnea node, its publisher process, its answers and its faults."""

    def __init__(self, soak, name):
        """Subscribe to the node's outputs and create the fault publishers and clients."""
        from diagnostic_msgs.msg import DiagnosticArray
        from geometry_msgs.msg import WrenchStamped
        from rcl_interfaces.srv import (DescribeParameters, GetParameters, ListParameters,
                                        SetParameters, SetParametersAtomically)
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray, String
        self.soak, self.name, node = soak, name, soak.node
        ns = f'/{name}'
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.description = node.create_publisher(String, f'{ns}/robot_description', qos)
        # Deeper than the node's queues (10): a burst of 12 is not cut here, at the sender.
        self.bad = {'joint_states': node.create_publisher(JointState, f'{ns}/joint_states', 50),
                    'rnea/external_wrenches': node.create_publisher(
                        WrenchStamped, f'{ns}/rnea/external_wrenches', 50),
                    'rnea/desired_accelerations_array': node.create_publisher(
                        Float64MultiArray, f'{ns}/rnea/desired_accelerations_array', 50)}
        node.create_subscription(JointState, f'{ns}/rnea/joint_efforts', self._on_efforts, 1000,
                                 raw=True)
        node.create_subscription(Float64MultiArray, f'{ns}/effort_controller/commands',
                                 self._on_command, 1000, raw=True)
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 100)
        self.answer_decoder = Decoder(JointState, joint_state_arrays,
                                      ('position', 'velocity', 'effort'), True)
        self.command_decoder = Decoder(Float64MultiArray, multi_array_arrays, ('data',), False)
        self.pending, self.pending_commands = [], []
        self.counts = {}                    # the node's own totals (its diagnostics), this life
        srv = f'{ns}/rnea/'
        self.clients = {'list': node.create_client(ListParameters, srv + 'list_parameters'),
                        'describe': node.create_client(DescribeParameters,
                                                       srv + 'describe_parameters'),
                        'get': node.create_client(GetParameters, srv + 'get_parameters'),
                        'set_parameters': node.create_client(SetParameters,
                                                             srv + 'set_parameters'),
                        'set_parameters_atomically': node.create_client(
                            SetParametersAtomically, srv + 'set_parameters_atomically'),
                        'set_payload': node.create_client(SetParametersAtomically,
                                                          srv + 'set_payload')}
        self.times, self.stamps, self.status = array.array('d'), array.array('q'), \
            array.array('b')
        self.commands = self.bad_commands = self.nonfinite = 0
        self.variant = self.latest = 0      # the model the node uses / the last one published
        self.published = [(float('-inf'), 0)]   # (time, model) of each model published
        self.switches = []                  # (time published, time switched)
        self.proc = self.publisher = None
        self.runs, self.lives, self.deaths = [], [], []
        self.injected = []                  # (wall ns, topic) of every bad message sent
        self.cases, self.case_index, self.values = [], 0, {}
        self.accepted = []                  # [t from, t to] of accepted bad parameters
        self.ready = False
        self.message_index = self.reload_index = self.declared = 0
        self.alive_at_end = False

    # -- monitor ----------------------------------------------------------------------------

    def _on_efforts(self, data):
        self.times.append(time.monotonic())
        self.pending.append(data)
        if not self.ready:
            self.ready = True
            sec, nanosec = STAMP.unpack_from(data, 4)
            self.lives[-1].update(first_answer=self.times[-1],
                                  first_stamp=sec * 1_000_000_000 + nanosec)

    def _on_command(self, data):
        self.pending_commands.append(data)

    def _on_diagnostics(self, msg):
        for status in msg.status:
            if status.name == f'/{self.name}/rnea: rnea' and self.lives:
                values = {kv.key: kv.value for kv in status.values}
                stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
                life = self.lives[-1]
                if 'outputs_total' in values and stamp >= life['wall_start']:
                    self.counts = {k: int(values[k]) for k in COUNT_KEYS}
                    life['diag'].append((stamp, self.counts))
                    life['loaded'] = life['loaded'] or values.get('model', 'none') != 'none'

    def flush(self):
        """Decode and check the answers and commands that came since the last flush."""
        raws, self.pending = self.pending, []
        if raws:
            self._check_answers(raws)
        raws, self.pending_commands = self.pending_commands, []
        if raws:
            self._check_commands(raws)

    def _check_answers(self, raws):
        soak, n = self.soak, len(raws)
        nq, nv = soak.models[0].nq, soak.models[0].nv
        times = np.frombuffer(self.times, dtype=float)[len(self.stamps):len(self.stamps) + n]
        stamps = np.full(n, -1, dtype=np.int64)
        finite, sized = np.ones(n, dtype=bool), np.zeros(n, dtype=bool)
        q, effort = np.zeros((n, nq)), np.zeros((n, nv))
        for rows, row_stamps, arrays in self.answer_decoder.decode(raws):
            stamps[rows] = row_stamps
            if arrays is None:
                continue
            finite[rows] = np.logical_and.reduce([np.isfinite(a).all(axis=1) for a in arrays])
            if arrays[0].shape[1] == nq and arrays[2].shape[1] == nv:
                q[rows], effort[rows] = arrays[0], arrays[2]
                sized[rows] = True
        status = np.where(~finite, 2, np.where(sized, 0, 1)).astype(np.int8)
        self.nonfinite += int((~finite).sum())
        rows = np.flatnonzero(finite & sized)
        ok = soak.correct_rows(self.variant, q[rows], effort[rows])
        i = 0
        while True:
            bad = np.flatnonzero(~ok[i:])
            if not bad.size:
                break
            j = i + int(bad[0])
            r = rows[j]
            k = bisect.bisect_right(self.published, (times[r], float('inf'))) - 1
            when, latest = self.published[k]
            if latest != self.variant and soak.correct_rows(latest, q[r:r + 1],
                                                            effort[r:r + 1])[0]:
                self.switches.append((when, times[r]))
                self.variant = latest
                ok[j:] = soak.correct_rows(latest, q[rows[j:]], effort[rows[j:]])
            else:
                status[r] = 1
            i = j + 1
        self.stamps.frombytes(stamps.tobytes())
        self.status.frombytes(status.tobytes())

    def _check_commands(self, raws):
        limits = self.soak.limits
        self.commands += len(raws)
        for rows, _, arrays in self.command_decoder.decode(raws):
            if arrays is None:
                self.bad_commands += len(rows)
                continue
            data = arrays[0]
            finite = np.isfinite(data).all(axis=1)
            self.nonfinite += int((~finite).sum())
            if data.shape[1] != len(limits):
                self.bad_commands += len(rows)
            else:
                self.bad_commands += int((~finite | (np.abs(data) > limits).any(axis=1)).sum())

    def model_published(self, index):
        """Note that model ``index`` was published now (answers may switch to it from now)."""
        self.latest = index
        self.published.append((time.monotonic(), index))

    # -- processes --------------------------------------------------------------------------

    def start_node(self, zero_base=False):
        """Start the rnea node of this arm (the shipped gravity compensation settings).

        ``zero_base``: no joint state reaches the node before its model is loaded and the
        publisher is started (its counts from zero are the whole life's, see
        ``Soak.node_counts``).
        """
        log = open(os.path.join(self.soak.logdir, f'{self.name}_{len(self.lives)}.log'), 'w')
        self.proc = self.soak.start(
            [sys.executable, '-m', 'rnea_ros.node', '--ros-args', '-r', f'__ns:=/{self.name}',
             '--params-file', os.path.join(self.soak.root, 'config', 'gravity_compensation.yaml'),
             '-p', 'enabled:=true'], stdout=log, stderr=subprocess.STDOUT)
        self.lives.append({'start': time.monotonic(), 'wall_start': time.time_ns(), 'rss': [],
                           'log': log.name, 'first_answer': None, 'diag': [], 'loaded': False,
                           'zero_base': zero_base, 'answers_before': len(self.times)})
        self.counts = {}
        self.ready = False

    def alive(self):
        """Return whether the node process runs; note (and print) its death once."""
        if self.proc is None:
            return False
        if self.proc.poll() is None:
            return True
        life = self.lives[-1]
        life.update(end=time.monotonic(), wall=time.time_ns(), returncode=self.proc.returncode,
                    last_line=last_error_line(life['log']))
        self.deaths.append(life)
        self.proc = None
        print(f"{self.name} node died (exit {life['returncode']}): {life['last_line']}",
              flush=True)
        return False

    def sample_rss(self):
        """Append (time, RSS MB) of the node process; return it (NaN if dead)."""
        if self.alive():
            mb = rss_mb(self.proc.pid)
            if mb == mb:
                self.lives[-1]['rss'].append((time.monotonic(), mb))
            return mb
        return float('nan')

    def start_publisher(self):
        """Start a joint-state publisher process."""
        self.publisher = PublisherRun(self.soak, self.name)
        self.runs.append(self.publisher)


def correct(model, gravity_torques, q, effort):
    """Return per row whether ``effort`` is g(q) of ``model`` (to 1e-9 relative)."""
    if not len(q):
        return np.zeros(0, dtype=bool)
    tau = np.array([gravity_torques(model, row) for row in q])
    return (np.abs(effort - tau) <= TOL * np.maximum(1.0, np.abs(tau))).all(axis=1)


def cpu_seconds():
    """Return the user + system CPU time of this process (all its threads) in seconds."""
    with open('/proc/self/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
