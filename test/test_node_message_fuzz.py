"""Issue 29: no message and no service request can stop a node or make it publish a non-finite.

Generated from what each node advertises: the subscriptions and services the running node has
(the graph: get_subscriber_names_and_types_by_node / get_service_names_and_types_by_node), their
message and request types imported from the type names, and the fields of each type
(``get_fields_and_field_types``).  A seed message is built from the fields (joint names and
positions of the panda where a field holds joint names or values, one point in a sequence of
points); each case changes one field of the seed to a hostile value of its own type:

- numbers: NaN, +-Inf, +-1e308, the integer type's extremes;
- arrays: empty, one element too many, all NaN, all Inf, a huge one (100 000 elements);
- strings: empty, 10 kB; name arrays: empty, an empty name, a duplicate name, 10 000 names;
- sequences of messages: empty, 1000 elements; and the default-constructed message.

Each case goes to every subscribed topic (spun until the node's callback took it) and every
service (spun until it answered).  After each: the node is alive (nothing left its executor),
answers the probe (node_fuzz_harness.Probe: a joint state, a trajectory, a command) with
finite values, and nothing any of its topics carried holds a non-finite number (every topic it
publishes is watched, every float of every message checked).  Memory: the huge cases are sent
four more times with tracemalloc on; after the first repeat the Python objects alive (after a
collection) may grow by less than 1 MB while 5 to 16 MB are sent per repeat (a node that kept
its inputs would keep them all); the resident set is printed.
"""

import copy
import gc
import importlib
import math
import os
import time
import tracemalloc

from node_fuzz_harness import _flat, PANDA_JOINTS, POSE, Target
import pytest
from rclpy.qos import (DurabilityPolicy, qos_profile_sensor_data, QoSProfile,
                       ReliabilityPolicy)
from rclpy.serialization import serialize_message
import test_node_param_fuzz as fuzz

context = fuzz.context          # the module-scoped rclpy context of the parameter fuzz
pytestmark = fuzz.pytestmark
SKIPPED_TOPICS = ('/rosout', '/parameter_events')
HUGE = 100000
INT_RANGES = {'int8': (-2 ** 7, 2 ** 7 - 1), 'uint8': (0, 2 ** 8 - 1),
              'int16': (-2 ** 15, 2 ** 15 - 1), 'uint16': (0, 2 ** 16 - 1),
              'int32': (-2 ** 31, 2 ** 31 - 1), 'uint32': (0, 2 ** 32 - 1),
              'int64': (-2 ** 63, 2 ** 63 - 1), 'uint64': (0, 2 ** 64 - 1),
              'octet': (0, 255), 'byte': (0, 255), 'char': (0, 255)}
FLOATS = ('double', 'float', 'float32', 'float64')
JOINT_FIELDS = ('name', 'joint_names')
VALUE_FIELDS = ('position', 'velocity', 'effort', 'positions', 'velocities', 'accelerations',
                'data')
COUNTS = {}
# Reliable and transient local: matches every subscription (robot_description is latched).
ANY_READER = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                        durability=DurabilityPolicy.TRANSIENT_LOCAL)


def import_type(name):
    """Return the class of a ROS type name ('sensor_msgs/msg/JointState', 'pkg/Name')."""
    parts = name.split('/')
    package, kind, cls = (parts[0], 'msg', parts[1]) if len(parts) == 2 else parts
    return getattr(importlib.import_module(f'{package}.{kind}'), cls)


def _element(field_type):
    """Return (element type, is a sequence/array) of a field type string."""
    if field_type.startswith('sequence<'):
        return field_type[len('sequence<'):-1].split(', ')[0], True
    if field_type.endswith(']'):
        return field_type[:field_type.index('[')], True
    return field_type, False


def _fixed_size(field_type):
    return field_type.endswith(']') and not field_type.endswith('[]') and '<=' not in field_type


def seed(cls):
    """Return a message of ``cls`` filled from its fields (panda joints where names go)."""
    msg = cls()
    for field, field_type in msg.get_fields_and_field_types().items():
        element, many = _element(field_type)
        if '/' in element:
            if many and not _fixed_size(field_type):
                setattr(msg, field, [seed(import_type(element))])
            elif not many:
                setattr(msg, field, seed(import_type(element)))
        elif many and element == 'string' and field in JOINT_FIELDS:
            setattr(msg, field, list(PANDA_JOINTS))
        elif many and element in FLOATS and field in VALUE_FIELDS and \
                not _fixed_size(field_type):
            setattr(msg, field, list(POSE) if field.startswith('position') else [0.0] * 9)
        elif field == 'frame_id':
            msg.frame_id = 'panda_hand'
    return msg


def hostile(field, field_type, current):
    """Yield (label, value) hostile values of a field's own type."""
    element, many = _element(field_type)
    if not many:
        if element in FLOATS:
            yield from (('nan', math.nan), ('inf', math.inf), ('-inf', -math.inf),
                        ('1e308', 1e308), ('-1e308', -1e308))
        elif element in INT_RANGES:
            low, high = INT_RANGES[element]
            yield from (('min', low), ('max', high))
        elif element in ('string', 'wstring'):
            yield from (('empty', ''), ('10 kB', 'x' * 10000))
        return
    n = len(current)
    if _fixed_size(field_type):
        if element in FLOATS:
            yield from ((f'all {x}', [x] * n) for x in (math.nan, math.inf))
        return
    if '/' in element:
        yield 'empty', []
        if n:
            yield '1000 elements', [copy.deepcopy(current[0]) for _ in range(1000)]
        return
    yield 'empty', []
    if element in FLOATS:
        yield from (('one more', list(current) + [0.0]), ('all nan', [math.nan] * max(n, 1)),
                    ('all inf', [math.inf] * max(n, 1)), ('huge', [0.0] * HUGE))
    elif element in ('string', 'wstring'):
        yield from (('empty name', [''] * max(n, 1)),
                    ('duplicate', (list(current[:1]) * 2) or ['a', 'a']),
                    ('huge', [f'j{i}' for i in range(10000)]))
    elif element in INT_RANGES or element == 'boolean':
        yield 'huge', [0] * HUGE if element != 'boolean' else [False] * HUGE


def mutations(cls):
    """Return [(label, message)]: the default message, the seed, and one field changed each."""
    base = seed(cls)
    out = [('default', cls()), ('seed', base)]

    def walk(msg, path):
        for field, field_type in msg.get_fields_and_field_types().items():
            current = getattr(msg, field)
            element, many = _element(field_type)
            for label, value in hostile(field, field_type, current):
                changed = copy.deepcopy(base)
                _set(changed, path + [field], value)
                out.append((f'{".".join(map(str, path + [field]))} {label}', changed))
            if '/' in element and not many:
                walk(current, path + [field])
            elif '/' in element and len(current) and not _fixed_size(field_type):
                walk(current[0], path + [field, 0])
    walk(base, [])
    return out


def _set(msg, path, value):
    for step in path[:-1]:
        msg = msg[step] if isinstance(step, int) else getattr(msg, step)
    setattr(msg, path[-1], value)


def non_finite(msg):
    """Return the path of the first non-finite float in a message, or None."""
    for field, field_type in msg.get_fields_and_field_types().items():
        value = getattr(msg, field)
        element, many = _element(field_type)
        if element in FLOATS:
            values = value if many else [value]
            if not all(math.isfinite(x) for x in values):
                return field
        elif '/' in element:
            for item in (value if many else [value]):
                inner = non_finite(item)
                if inner:
                    return f'{field}.{inner}'
    return None


def rss_mb():
    """Return this process's resident set size in MB."""
    with open('/proc/self/status') as stream:
        for line in stream:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return 0.0


class MessageFuzzer:
    """Send hostile messages and requests to one node (see the module docstring)."""

    def __init__(self, target):
        """Watch every topic the node publishes; count deliveries to its subscriptions."""
        self.target = target
        self.failures = []
        self.cases = 0
        self.sent = 0               # serialized bytes sent
        self.outputs = 0
        self.delivered = {}
        node, peer = target.node, target.peer
        # The peer sees the node's endpoints by discovery, one by one: wait until its graph
        # shows as many as the node (in-process) has made, or a loaded machine lists a part.
        where = node.get_name(), node.get_namespace()
        assert target.spin_until(lambda: (
            len(peer.get_publisher_names_and_types_by_node(*where)) >=
            len({p.topic_name for p in node.publishers}) and
            len(peer.get_subscriber_names_and_types_by_node(*where)) >=
            len({s.topic_name for s in node.subscriptions}) and
            len(peer.get_service_names_and_types_by_node(*where)) >=
            len({s.srv_name for s in node.services})), 30.0)
        self.watch = []
        for topic, types in peer.get_publisher_names_and_types_by_node(
                node.get_name(), node.get_namespace()):
            if topic in SKIPPED_TOPICS:
                continue
            self.watch.append(peer.create_subscription(
                import_type(types[0]), topic,
                lambda msg, topic=topic: self._output(topic, msg), qos_profile_sensor_data))
        self.topics = [(topic, import_type(types[0])) for topic, types in
                       peer.get_subscriber_names_and_types_by_node(node.get_name(),
                                                                   node.get_namespace())
                       if topic not in SKIPPED_TOPICS]
        self.services = [(name, import_type(types[0])) for name, types in
                         peer.get_service_names_and_types_by_node(node.get_name(),
                                                                  node.get_namespace())]
        self.publishers = {topic: peer.create_publisher(cls, topic, ANY_READER)
                           for topic, cls in self.topics}
        self.clients = {name: peer.create_client(cls, name) for name, cls in self.services}
        assert target.spin_until(lambda: all(
            p.get_subscription_count() > 0 for p in self.publishers.values()) and all(
            c.service_is_ready() for c in self.clients.values()), 30.0)

    def _output(self, topic, msg):
        self.outputs += 1
        where = non_finite(msg)
        if where:
            self.failures.append(f'{self.target.kind}: published a non-finite {topic} {where}')

    def _count(self):
        for sub in self.target.node.subscriptions:
            if getattr(sub.callback, 'counted', False):
                continue

            def counted(msg, topic=sub.topic_name, callback=sub.callback):
                self.delivered[topic] = self.delivered.get(topic, 0) + 1
                return callback(msg)
            counted.counted = True
            sub.callback = counted

    def _after(self, what, killed):
        target = self.target
        if target.killed > killed:
            self.failures.append(f'{target.kind} {what}: killed the node: {target.died}')
            return
        answer = target.probe.ask()
        if answer is None or not all(map(math.isfinite, _flat(answer))):
            self.failures.append(f'{target.kind} {what}: probe answered {answer!r:.100}')

    def send(self, topic, label, msg):
        """Publish one message; spin until the node's callback took it; check the node."""
        self.cases += 1
        self.sent += len(serialize_message(msg))
        self._count()
        killed, before = self.target.killed, self.delivered.get(topic, 0)
        self.publishers[topic].publish(msg)
        if not self.target.spin_until(lambda: self.delivered.get(topic, 0) > before):
            if self.target.killed == killed:
                self.failures.append(f'{self.target.kind} {topic} {label}: not delivered')
        self._after(f'{topic} {label}', killed)

    def call(self, service, label, request):
        """Call one service; spin until it answered; check the node."""
        self.cases += 1
        self.sent += len(serialize_message(request))
        killed = self.target.killed
        future = self.clients[service].call_async(request)
        if not self.target.spin_until(future.done, 30.0) and self.target.killed == killed:
            self.failures.append(f'{self.target.kind} {service} {label}: no answer')
        self._after(f'{service} {label}', killed)

    def run(self, only=None):
        """Every mutation on every topic and service (``only``: labels containing it)."""
        for topic, cls in self.topics:
            for label, msg in mutations(cls):
                if only is None or only in label:
                    self.send(topic, label, msg)
        for service, cls in self.services:
            for label, request in mutations(cls.Request):
                if only is None or only in label:
                    self.call(service, label, request)


@pytest.fixture(scope='module', params=list(Target.MAKERS))
def target(request, context):
    target = Target(context, request.param)
    yield target
    target.close()


def test_every_topic_and_service_survives_hostile_input_and_publishes_only_finite(target):
    """Every subscribed topic and service x every generated hostile case (module docstring)."""
    fuzzer = MessageFuzzer(target)
    start = time.monotonic()
    fuzzer.run()
    first = time.monotonic() - start
    rss, sent, traced = [rss_mb()], [], []
    tracemalloc.start()
    for _ in range(int(os.environ.get('RNEA_FUZZ_REPEATS', '4'))):
        before = fuzzer.sent
        fuzzer.run(only='huge')
        gc.collect()
        traced.append(tracemalloc.get_traced_memory()[0] / 1e6)
        rss.append(rss_mb())
        sent.append((fuzzer.sent - before) / 1e6)
    tracemalloc.stop()
    growth = traced[-1] - traced[0]     # Python objects kept over the repeats after the first
    COUNTS[target.kind] = fuzzer.cases
    print(f'\n{target.kind}: {fuzzer.cases} cases on {len(fuzzer.topics)} topics '
          f'{[t for t, _ in fuzzer.topics]} and {len(fuzzer.services)} services in '
          f'{first:.1f} s (+ the huge cases x{len(sent)}), {fuzzer.outputs} outputs checked, '
          f'{target.killed} killed the node, {len(fuzzer.failures)} failures; sending '
          f'{sent[0]:.0f} MB per repeat: Python objects {[round(x, 2) for x in traced]} MB, '
          f'RSS {[round(x) for x in rss]} MB')
    assert target.killed == 0 and not fuzzer.failures, '\n'.join(fuzzer.failures[:40])
    # Bounded: over the repeats the node and the test keep less than 1 MB of Python objects
    # (a node that kept its inputs would keep all the MB sent); RSS is printed, it moves with
    # the allocator's and the middleware's pools.
    assert growth < 1.0, (traced, sent)
