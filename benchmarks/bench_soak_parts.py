"""Parts of ``bench_soak.py``: the fault cases and the joint-state publisher process.

The bad parameters are generated from what a running node declares (:func:`parameter_cases`),
the bad messages from the joint names (:func:`bad_joint_states`, :func:`bad_side_messages`) and
published as CDR bytes serialized once (:class:`WireMessage`).  Run as a script, this module is
the joint-state publisher process of one arm (:func:`serve_publisher`):
``python bench_soak_parts.py NAMESPACE RATE SPEC_JSON COUNTER_FILE``.
"""

import json
import math
import mmap
import os
import random
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time

from builtin_interfaces.msg import Time
from rcl_interfaces.msg import ParameterType, ParameterValue
import rclpy
from sensor_msgs.msg import JointState

ARMS = ('left', 'right')
TOL = 1e-9
CHECK_AFTER = 5          # answers after each fault that must be correct
COUNTER = struct.Struct('<q')   # the publisher's last k sent, in its counter file
STAMP = struct.Struct('<iI')     # builtin_interfaces/Time in CDR: int32 sec, uint32 nanosec
TYPE_NAMES = {ParameterType.PARAMETER_BOOL: 'bool', ParameterType.PARAMETER_INTEGER: 'integer',
              ParameterType.PARAMETER_DOUBLE: 'double', ParameterType.PARAMETER_STRING: 'string',
              ParameterType.PARAMETER_BYTE_ARRAY: 'byte_array',
              ParameterType.PARAMETER_BOOL_ARRAY: 'bool_array',
              ParameterType.PARAMETER_INTEGER_ARRAY: 'integer_array',
              ParameterType.PARAMETER_DOUBLE_ARRAY: 'double_array',
              ParameterType.PARAMETER_STRING_ARRAY: 'string_array',
              ParameterType.PARAMETER_NOT_SET: 'not set'}
FIELDS = {ParameterType.PARAMETER_BOOL: 'bool_value',
          ParameterType.PARAMETER_INTEGER: 'integer_value',
          ParameterType.PARAMETER_DOUBLE: 'double_value',
          ParameterType.PARAMETER_STRING: 'string_value',
          ParameterType.PARAMETER_BYTE_ARRAY: 'byte_array_value',
          ParameterType.PARAMETER_BOOL_ARRAY: 'bool_array_value',
          ParameterType.PARAMETER_INTEGER_ARRAY: 'integer_array_value',
          ParameterType.PARAMETER_DOUBLE_ARRAY: 'double_array_value',
          ParameterType.PARAMETER_STRING_ARRAY: 'string_array_value'}
# A value of each ROS type, given to parameters of every other type.
OTHER_TYPE = {ParameterType.PARAMETER_BOOL: True, ParameterType.PARAMETER_INTEGER: 7,
              ParameterType.PARAMETER_DOUBLE: 1.5, ParameterType.PARAMETER_STRING: 'heavy',
              ParameterType.PARAMETER_BYTE_ARRAY: [b'\x01', b'\x02'],
              ParameterType.PARAMETER_BOOL_ARRAY: [True, False],
              ParameterType.PARAMETER_INTEGER_ARRAY: [1, 2, 3],
              ParameterType.PARAMETER_DOUBLE_ARRAY: [0.5, 0.5, 0.5],
              ParameterType.PARAMETER_STRING_ARRAY: ['a', 'b'],
              ParameterType.PARAMETER_NOT_SET: None}
NAN, INF = float('nan'), float('inf')
# Bad values of a parameter's own type: (label, value).
OWN_TYPE = {
    ParameterType.PARAMETER_DOUBLE: [('nan', NAN), ('inf', INF), ('-inf', -INF),
                                     ('1e308', 1e308), ('-1e308', -1e308)],
    ParameterType.PARAMETER_INTEGER: [('2^63-1', 2 ** 63 - 1), ('-2^63', -2 ** 63)],
    ParameterType.PARAMETER_STRING: [('100 kB', 'x' * 100_000), ('control chars', '\t\n\r\x7f')],
    ParameterType.PARAMETER_DOUBLE_ARRAY: [('empty', []), ('nan', [NAN] * 3), ('inf', [INF] * 3),
                                           ('10k values', [0.25] * 10_000)],
    ParameterType.PARAMETER_STRING_ARRAY: [('empty', []), ('empty names', [''] * 3),
                                           ('10k names', [f'ghost_{i}' for i in range(10_000)])],
    ParameterType.PARAMETER_INTEGER_ARRAY: [('empty', [])],
    ParameterType.PARAMETER_BOOL_ARRAY: [('empty', [])],
    ParameterType.PARAMETER_BYTE_ARRAY: [('empty', [])],
}


def parameter_cases(described):
    """Return the bad-parameter cases for a node's declared parameters.

    ``described``: [(name, ROS type, read_only)] as the node's describe_parameters service says.
    Each case is (name, kind label, ParameterValue): every other ROS type and a delete (``not
    set``), then the bad values of the parameter's own type (:data:`OWN_TYPE`).  Read-only
    parameters get them too (the node must refuse every one).
    """
    cases = []
    for name, kind, _ in described:
        declared = TYPE_NAMES.get(kind, str(kind))
        for other, value in OTHER_TYPE.items():
            if other != kind:
                cases.append((name, f'{declared} <- {TYPE_NAMES[other]}',
                              parameter_value(other, value)))
        for label, value in OWN_TYPE.get(kind, []):
            cases.append((name, f'{declared}: {label}', parameter_value(kind, value)))
    return cases


def parameter_value(kind, value):
    """Return a rcl_interfaces ParameterValue of ROS type ``kind`` holding ``value``."""
    msg = ParameterValue(type=kind)
    if kind != ParameterType.PARAMETER_NOT_SET:
        setattr(msg, FIELDS[kind], value)
    return msg


def bad_joint_states(names, q):
    """Return [(kind, JointState)]: messages the node must refuse (stamped when published).

    ``names``: the joints the stream names, ``q`` positions within their limits (so that a
    message the node wrongly accepts does not trip its joint limit guard).  The last case keeps
    an invalid nanosec field.
    """
    q, qd = list(q), [0.0] * len(names)
    cases = [
        ('short positions', names, q[:-1], qd), ('long positions', names, q + [0.0], qd),
        ('velocity length', names, q, qd + [0.0]), ('nan position', names, [NAN] + q[1:], qd),
        ('inf position', names, q[:-1] + [INF], qd), ('nan velocity', names, q, [NAN] + qd[1:]),
        ('-inf velocity', names, q, qd[:-1] + [-INF]),
        ('1e300 position', names, [1e300] + q[1:], qd),
        ('empty names', [], q, qd), ('empty message', [], [], []),
        ('duplicate names', names[:-1] + names[:1], q, qd),
        ('empty name string', [''] + names[1:], q, qd),
        ('huge unknown names', [f'ghost_{i}' for i in range(100_000)], [0.0] * 100_000, []),
        ('huge positions', names, [0.0] * 100_000, []),
    ]
    out = []
    for kind, nm, pos, vel in cases:
        out.append((kind, JointState(name=list(nm), position=pos, velocity=vel)))
    msg = JointState(name=list(names), position=q, velocity=qd)
    msg.header.stamp.nanosec = 1_500_000_000
    out.append(('stamp nanosec >= 1e9', msg))
    return out


def bad_side_messages(frame):
    """Return [(kind, topic suffix, message)] for the node's other inputs (must be refused)."""
    from geometry_msgs.msg import WrenchStamped
    from std_msgs.msg import Float64MultiArray
    out = []
    for kind, frame_id, force in (('wrench nan', frame, NAN), ('wrench inf', frame, INF),
                                  ('wrench unknown frame', 'no_such_link', 1.0),
                                  ('wrench empty frame', '', 1.0)):
        msg = WrenchStamped()
        msg.header.frame_id = frame_id
        msg.wrench.force.z = force
        out.append((kind, 'rnea/external_wrenches', msg))
    for kind, data in (('accelerations short', [0.0]), ('accelerations nan', [NAN] * 9),
                       ('accelerations huge', [0.0] * 100_000)):
        out.append((kind, 'rnea/desired_accelerations_array', Float64MultiArray(data=data)))
    return out


def trajectory(centers, t):
    """Return the positions and velocities of the stream at time ``t`` s (smooth, in limits)."""
    q = [c + a * math.sin(0.5 * t * (i + 1) + i) for i, (c, a) in enumerate(centers)]
    qd = [0.5 * (i + 1) * a * math.cos(0.5 * t * (i + 1) + i) for i, (c, a) in enumerate(centers)]
    return q, qd


class WireMessage:
    """A bad message serialized once; published as bytes, restamped in place (cheap to send).

    rclpy converts a message of 100 000 names to C in tens of milliseconds, during which the
    monitor takes no answer; the bytes go out at once.  The stamp of a message with a header is
    at bytes 4 to 12 of its little-endian CDR (checked here against the deserializer).
    """

    def __init__(self, msg):
        """Serialize ``msg``; find out whether its stamp can be written in place."""
        from rclpy.serialization import deserialize_message, serialize_message
        self.data = bytearray(serialize_message(msg))
        self.stamped = hasattr(msg, 'header') and self.data[:2] == b'\x00\x01'
        if self.stamped:
            keep = msg.header.stamp.nanosec
            self.stamp(1234567, keep)
            back = deserialize_message(bytes(self.data), type(msg)).header.stamp
            self.stamped = (back.sec, back.nanosec) == (1234567, keep)
        self.nanosec = msg.header.stamp.nanosec if hasattr(msg, 'header') else 0

    def stamp(self, sec, nanosec):
        """Write the header stamp into the bytes."""
        STAMP.pack_into(self.data, 4, sec, nanosec)

    def __len__(self):
        """Return the size of the message in bytes."""
        return len(self.data)


def serve_publisher(ns, rate, spec, counter):
    """Publish joint states at ``rate`` on <ns>/joint_states; report what was sent.

    Message k is stamped origin + k periods (a grid: an answer's stamp says which message it
    answers).  Waits for a subscriber (the node) and 0.2 s more, then prints ``start <origin
    ns> <first counted k> <period ns>`` and publishes; the first 0.5 s (k < first) are not
    counted in the per-stamp drops, and ``counting`` is printed once the first counted message
    is out.  After every publish the k just sent is stored in the file ``counter`` (int64,
    shared memory: a store, no system call; a SIGKILL between a publish and its store loses
    one), and ``skip <k> <k'>`` is printed when it was starved for 5 ms (the slots k to k' - 1
    are not sent: no burst of more than 5 messages).
    """
    names, centers = spec['names'], spec['centers']
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: os._exit(0))
    from rclpy.signals import SignalHandlerOptions
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node(f'soak_joint_states_{random.randrange(1 << 30)}', namespace=ns)
    pub = node.create_publisher(JointState, 'joint_states', 10)
    with open(counter, 'r+b') as f:
        sent = mmap.mmap(f.fileno(), COUNTER.size)
    end = time.monotonic() + 120.0
    while pub.get_subscription_count() == 0 and time.monotonic() < end:
        time.sleep(0.01)
    time.sleep(0.2)             # the node's side of the match too (else the first is lost)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, 0)   # started at a low priority for its imports
    except OSError:
        pass
    msg = JointState(name=names)
    period_ns = int(round(1e9 / rate))
    period = period_ns * 1e-9
    first = int(round(0.5 / period))
    origin, t0, k, counting = time.time_ns(), time.monotonic(), 0, False
    print(f'start {origin} {first} {period_ns}', flush=True)
    while True:
        left = t0 + k * period - time.monotonic()
        if left > 0:
            time.sleep(left)
        elif left < -0.005:
            skip = int((time.monotonic() - t0) / period)
            print(f'skip {k} {skip}', flush=True)
            k = skip
        stamp = origin + k * period_ns
        msg.position, msg.velocity = trajectory(centers, stamp * 1e-9)
        msg.header.stamp = Time(sec=stamp // 10 ** 9, nanosec=stamp % 10 ** 9)
        pub.publish(msg)
        COUNTER.pack_into(sent, 0, k)
        if not counting and k >= first:
            counting = True
            print('counting', flush=True)
        k += 1


def transports(names):
    """Return the environment naming Fast DDS's built-in transports, or None (unchanged).

    The discovery range is set to SUBNET for that process: with ``LOCALHOST``, rmw_fastrtps
    configures its own transports (shared memory included) and ignores
    ``FASTDDS_BUILTIN_TRANSPORTS``.  The process still finds the nodes: their announcements reach
    its unicast port, and it answers them there.
    """
    return ({'FASTDDS_BUILTIN_TRANSPORTS': names, 'ROS_AUTOMATIC_DISCOVERY_RANGE': 'SUBNET'}
            if names else None)


PUBLISHER_START_NICE = 10   # a (re)started publisher while it imports (then 0, if allowed)


class PublisherRun:
    """One joint-state publisher process and what it sent."""

    def __init__(self, soak, arm):
        """Start the process and a thread reading its reports."""
        self.origin = self.first = self.period = self.started = None
        self.skips, self.final = [], None
        shm = '/dev/shm' if os.path.isdir('/dev/shm') else soak.logdir   # no disk write-back
        fd, self.counter = tempfile.mkstemp(prefix=f'bench_soak_{arm}_', suffix='.sent', dir=shm)
        os.write(fd, COUNTER.pack(-1))
        os.close(fd)
        self.proc = soak.start([sys.executable, os.path.abspath(__file__), f'/{arm}',
                                str(soak.args.rate), json.dumps(soak.stream), self.counter],
                               stdout=subprocess.PIPE, text=True, nice=PUBLISHER_START_NICE,
                               env=transports(soak.args.publisher_transports))
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            words = line.split()
            if words[:1] == ['start']:
                self.origin, self.first, self.period = (int(w) for w in words[1:4])
            elif words[:1] == ['counting']:
                self.started = time.monotonic()
            elif words[:1] == ['skip']:
                self.skips.append((int(words[1]), int(words[2])))

    def reported(self):
        """Return the last k the process stored as sent (-1: none); remove the file once done."""
        if self.final is not None:
            return self.final
        try:
            with open(self.counter, 'rb') as f:
                k = COUNTER.unpack(f.read(COUNTER.size))[0]
        except (OSError, struct.error):
            return -1
        if self.proc.poll() is not None:
            self.final = k
            os.unlink(self.counter)
        return k

    def sent(self, answered=None, until=None, counted=True):
        """Return the sorted stamps (ns) this run sent.

        From its first counted message (``counted``) or its very first, to the last it
        reported or, if later, the last of ``answered`` (sorted answer stamps) on its grid
        before ``until`` (the next run's origin): what a node answered was sent, even when a
        SIGKILL cut the process off before its report.  Skipped slots are left out.
        """
        import numpy as np
        if self.origin is None:
            return np.zeros(0, dtype=np.int64)
        last = self.reported()
        if answered is not None and len(answered):
            mine = answered[(answered >= self.origin) & (answered < (until or 1 << 62))]
            mine = mine[(mine - self.origin) % self.period == 0]
            if mine.size:
                last = max(last, int((mine.max() - self.origin) // self.period))
        k = np.arange(self.first if counted else 0, last + 1, dtype=np.int64)
        for a, b in self.skips:
            k = k[(k < a) | (k >= b)]
        return self.origin + k * self.period

    def kill(self):
        """SIGKILL the process (what it did not report or get answered is not counted)."""
        self.proc.kill()
        self.proc.wait()
        self.thread.join(timeout=5.0)


def last_error_line(path):
    """Return the last line of a node log that names an exception or error, else the last."""
    try:
        with open(path, errors='replace') as f:
            lines = [line.strip() for line in f if line.strip()]
    except OSError:
        return ''
    errors = [line for line in lines if 'Error' in line or 'Exception' in line]
    return (errors or lines or [''])[-1][:200]


def rss_mb(pid):
    """Return the resident memory of a process in MB (NaN if it is gone)."""
    try:
        with open(f'/proc/{pid}/status') as f:
            for line in f:
                if line.startswith('VmRSS:'):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return float('nan')


def panda_variants(path):
    """Return [(label, URDF XML or None if broken)]: the panda, its hand 10 % heavier, broken."""
    import xml.etree.ElementTree as ET
    with open(path) as f:
        text = f.read()
    root = ET.fromstring(text)
    for link in root.iter('link'):
        if link.get('name') == 'panda_hand':
            mass = link.find('inertial/mass')
            mass.set('value', repr(float(mass.get('value')) * 1.1))
    heavy = ET.tostring(root, encoding='unicode')
    return [('panda', text), ('panda, hand +10 %', heavy),
            ('broken (truncated XML)', text[:len(text) // 2])]


def tree():
    """Return the git commit of the tree this file is in (and whether it is modified)."""
    try:
        head = subprocess.run(['git', 'describe', '--always', '--dirty'], text=True,
                              cwd=os.path.dirname(os.path.abspath(__file__)),
                              capture_output=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        head = ''
    return head or 'not a git checkout'


if __name__ == '__main__':
    serve_publisher(sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4])
