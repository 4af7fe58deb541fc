"""Parts of ``bench_soak.py``: the fault cases, the publisher process, an arm, the report.

The bad parameters are generated from what a running node declares (:func:`parameter_cases`),
the bad messages from the joint names (:func:`bad_joint_states`, :func:`bad_side_messages`).
Run as a script, this module is the joint-state publisher process of one arm
(:func:`serve_publisher`): ``python bench_soak_parts.py NAMESPACE RATE SPEC_JSON``.
"""

import array
import json
import math
import os
import random
import signal
import subprocess
import sys
import threading
import time

from builtin_interfaces.msg import Time
from rcl_interfaces.msg import ParameterType, ParameterValue
import rclpy
from sensor_msgs.msg import JointState

ARMS = ('left', 'right')
TOL = 1e-9
CHECK_AFTER = 5          # answers after each fault that must be correct
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


def serve_publisher(ns, rate, spec):
    """Publish joint states at ``rate`` on <ns>/joint_states; report what was sent on stdout.

    Message k is stamped origin + k periods (a grid: an answer's stamp says which message it
    answers).  Waits for a subscriber (the node), publishes 0.5 s not counted, then prints
    ``start <origin ns> <first counted k> <period ns>``, every 10 messages ``sent <k>`` (printed
    once they are out: what a SIGKILL cuts off is not counted), and ``skip <k> <k'>`` when it was
    starved for 5 ms (the slots k to k' - 1 are not sent: no burst of more than 5 messages).
    """
    names, centers = spec['names'], spec['centers']
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: os._exit(0))
    from rclpy.signals import SignalHandlerOptions
    rclpy.init(signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node(f'soak_joint_states_{random.randrange(1 << 30)}', namespace=ns)
    pub = node.create_publisher(JointState, 'joint_states', 10)
    end = time.monotonic() + 120.0
    while pub.get_subscription_count() == 0 and time.monotonic() < end:
        time.sleep(0.01)
    msg = JointState(name=names)
    period_ns = int(round(1e9 / rate))
    period = period_ns * 1e-9
    first = int(round(0.5 / period))
    origin, t0, k = time.time_ns(), time.monotonic(), 0
    print(f'start {origin} {first} {period_ns}', flush=True)
    while True:
        left = t0 + k * period - time.monotonic()
        if left > 0:
            time.sleep(left)
        elif left < -0.005:
            skip = int((time.monotonic() - t0) / period)
            if skip > first:
                print(f'skip {max(k, first)} {skip}', flush=True)
            k = skip
        stamp = origin + k * period_ns
        msg.position, msg.velocity = trajectory(centers, stamp * 1e-9)
        msg.header.stamp = Time(sec=stamp // 10 ** 9, nanosec=stamp % 10 ** 9)
        pub.publish(msg)
        if k >= first and k % 10 == 9:
            print(f'sent {k}', flush=True)
        k += 1


class PublisherRun:
    """One joint-state publisher process and what it confirmed sending."""

    def __init__(self, soak, arm):
        """Start the process and a thread reading its reports."""
        self.origin = self.first = self.last = self.period = self.started = None
        self.skips = []
        self.proc = soak.start([sys.executable, os.path.abspath(__file__), f'/{arm}',
                                str(soak.args.rate), json.dumps(soak.stream)],
                               stdout=subprocess.PIPE, text=True)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            words = line.split()
            if words[:1] == ['start']:
                self.origin, self.first, self.period = (int(w) for w in words[1:4])
            elif words[:1] == ['sent']:
                if self.last is None:
                    self.started = time.monotonic()
                self.last = int(words[1])
            elif words[:1] == ['skip']:
                self.skips.append((int(words[1]), int(words[2])))

    def sent(self):
        """Return the sorted stamps (ns) this run confirmed sending (counted ones only)."""
        import numpy as np
        if self.last is None:
            return np.zeros(0, dtype=np.int64)
        k = np.arange(self.first, self.last + 1, dtype=np.int64)
        for a, b in self.skips:
            k = k[(k < a) | (k >= b)]
        return self.origin + k * self.period

    def kill(self):
        """SIGKILL the process (what it did not confirm is not counted)."""
        self.proc.kill()
        self.proc.wait()
        self.thread.join(timeout=5.0)


class Arm:
    """One namespaced rnea node, its publisher process, its answers and its faults."""

    def __init__(self, soak, name):
        """Subscribe to the node's outputs and create the fault publishers and clients."""
        from geometry_msgs.msg import WrenchStamped
        from rcl_interfaces.srv import (DescribeParameters, GetParameters, ListParameters,
                                        SetParameters, SetParametersAtomically)
        from std_msgs.msg import Float64MultiArray, String
        from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
        self.soak, self.name, node = soak, name, soak.node
        ns = f'/{name}'
        qos = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.description = node.create_publisher(String, f'{ns}/robot_description', qos)
        self.bad = {'joint_states': node.create_publisher(JointState, f'{ns}/joint_states', 10),
                    'rnea/external_wrenches': node.create_publisher(
                        WrenchStamped, f'{ns}/rnea/external_wrenches', 10),
                    'rnea/desired_accelerations_array': node.create_publisher(
                        Float64MultiArray, f'{ns}/rnea/desired_accelerations_array', 10)}
        node.create_subscription(JointState, f'{ns}/rnea/joint_efforts', self._on_efforts, 1000)
        node.create_subscription(Float64MultiArray, f'{ns}/effort_controller/commands',
                                 self._on_command, 1000)
        from diagnostic_msgs.msg import DiagnosticArray
        node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diagnostics, 100)
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
        self.switches = []                  # (time published, time switched)
        self.published_at = 0.0
        self.proc = self.publisher = None
        self.runs, self.lives, self.deaths = [], [], []
        self.cases, self.case_index, self.values = [], 0, {}
        self.accepted = []                  # [t from, t to] of accepted bad parameters
        self.ready = False
        self.message_index = self.reload_index = self.declared = 0
        self.alive_at_end = False

    # -- monitor ----------------------------------------------------------------------------

    def _on_efforts(self, msg):
        now = time.monotonic()
        import numpy as np
        effort = np.asarray(msg.effort, dtype=float)
        position = np.asarray(msg.position, dtype=float)
        status = 0
        if not (np.isfinite(effort).all() and np.isfinite(position).all()
                and np.isfinite(np.asarray(msg.velocity, dtype=float)).all()):
            self.nonfinite += 1
            status = 2
        elif not self.soak.correct(self.variant, position, effort):
            if self.latest != self.variant and self.soak.correct(self.latest, position, effort):
                self.switches.append((self.published_at, now))
                self.variant = self.latest
            else:
                status = 1
        self.times.append(now)
        self.stamps.append(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)
        self.status.append(status)
        if not self.ready:
            self.ready = True
            self.lives[-1].update(first_answer=now, first_stamp=self.stamps[-1])

    def _on_diagnostics(self, msg):
        for status in msg.status:
            if status.name == f'/{self.name}/rnea: rnea':
                values = {kv.key: kv.value for kv in status.values}
                if 'outputs_total' in values:
                    self.counts = {k: int(values[k]) for k in
                                   ('inputs_total', 'outputs_total', 'rejected_inputs_total')}

    def _on_command(self, msg):
        import numpy as np
        data = np.asarray(msg.data, dtype=float)
        self.commands += 1
        if not np.isfinite(data).all():
            self.nonfinite += 1
            self.bad_commands += 1
        elif len(data) != len(self.soak.limits) or (np.abs(data) > self.soak.limits).any():
            self.bad_commands += 1

    # -- processes --------------------------------------------------------------------------

    def start_node(self):
        """Start the rnea node of this arm (the shipped gravity compensation settings)."""
        log = open(os.path.join(self.soak.logdir, f'{self.name}_{len(self.lives)}.log'), 'w')
        self.proc = self.soak.start(
            [sys.executable, '-m', 'rnea_ros.node', '--ros-args', '-r', f'__ns:=/{self.name}',
             '--params-file', os.path.join(self.soak.root, 'config', 'gravity_compensation.yaml'),
             '-p', 'enabled:=true'], stdout=log, stderr=subprocess.STDOUT)
        self.lives.append({'start': time.monotonic(), 'rss': [], 'log': log.name,
                           'first_answer': None, 'answers_before': len(self.times)})
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
        """Append (time, RSS MB) of the node process."""
        if self.alive():
            mb = rss_mb(self.proc.pid)
            if mb == mb:
                self.lives[-1]['rss'].append((time.monotonic(), mb))

    def start_publisher(self):
        """Start a joint-state publisher process."""
        self.publisher = PublisherRun(self.soak, self.name)
        self.runs.append(self.publisher)


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


def fault_table(faults, accepted_messages):
    """Return rows (category, kind, injected, refused, accepted, killed, no answer, ok, wrong).

    For a message, accepted: the node answered it (refused: '-', not observable).
    """
    rows = {}
    for f in faults:
        row = rows.setdefault((f['category'], f['kind']), [0] * 7)
        row[0] += 1
        outcome = f['outcome']
        row[1] += outcome == 'refused'
        row[2] += outcome.startswith('accepted')
        row[3] += outcome == 'killed the node'
        row[4] += outcome == 'no answer'
        row[5] += f.get('after') == 'ok'
        row[6] += f.get('after') == 'WRONG'
    for (category, kind), row in rows.items():
        if category == 'message':
            row[1], row[2] = '-', accepted_messages.get(kind, 0)
    return [key + tuple(value) for key, value in sorted(rows.items())]


def verdicts(res):
    """Return [(target, figure text, passed)] of the issue 29 soak targets."""
    arms = res['arms'].values()
    enough = (res['duration'] - res['warmup']) / 2 / 60.0    # minutes: half the soak at least
    growth = [g[1] - g[0] for arm in arms for g in arm['rss'] if g and g[2] >= enough]
    sent = sum(a['sent'] for a in arms)
    answered = sum(a['answered'] for a in arms)
    drop = (sent - answered) / sent if sent else float('nan')
    wrong = sum(f.get('after') == 'WRONG' for f in res['faults'])
    checked = sum(f.get('after') == 'ok' for f in res['faults'])
    mismatches = sum(a['mismatches'] for a in arms)
    kills = sum(len(a['deaths']) for a in arms)
    return [
        ('RSS growth after warm-up <= 5 MB',
         ', '.join(f'{g:+.2f} MB' for g in growth) or
         'not measured (no node lived half the soak after its warm-up)',
         bool(growth) and max(growth) <= 5.0),
        ('drops <= 0.1 %', f'{sent - answered} of {sent} ({100 * drop:.3f} %)',
         sent > 0 and drop <= 0.001),
        ('non-finite outputs = 0', str(sum(a['nonfinite'] for a in arms)),
         sum(a['nonfinite'] for a in arms) == 0),
        ('efforts correct after every fault',
         f'{checked} faults followed by correct answers, {wrong} by wrong ones; {mismatches} '
         'wrong answers in all', checked > 0 and wrong == 0 and mismatches == 0),
        ('no node killed', f'{kills} node deaths', kills == 0),
    ]


def report(res):
    """Print the figures and one PASS/FAIL line per target; return whether all passed."""
    def loads(x):
        return ' / '.join(f'{v:.2f}' for v in x)
    print(f"\nrnea soak ({time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
          f'{os.uname().nodename}, tree {tree()}): two panda rnea nodes (/left, /right), gravity '
          f"compensation, {res['rate']:.0f} Hz for {res['duration']:.0f} s, warm-up "
          f"{res['warmup']:.0f} s, {os.cpu_count()} CPUs, load averages (1, 5, 15 min) before "
          f"{loads(res['load_before'])}, after {loads(res['load_after'])}\n")
    head = ('fault', 'kind', 'injected', 'refused', 'accepted (set back)', 'killed a node',
            'no answer', 'answers correct after', 'wrong after')
    print('| ' + ' | '.join(head) + ' |\n|' + '---|' * len(head))
    for row in fault_table(res['faults'], res['accepted_messages']):
        print('| ' + ' | '.join(str(x) for x in row) + ' |')
    head = ('arm', 'parameter cases tried / generated', 'RSS after warm-up / end MB (minutes; '
            'growth in the last half)',
            'sent', 'answered', 'drops', 'non-finite', 'wrong answers', 'not judged',
            'commands (bad)', 'reloads taken (median s)', 'alive at end')
    print('\n| ' + ' | '.join(head) + ' |\n|' + '---|' * len(head))
    for name, a in res['arms'].items():
        rss = '; '.join(f'{g[0]:.1f} / {g[1]:.1f} ({g[2]:.1f} min; {g[3]:+.1f})'
                        for g in a['rss'] if g)
        med = sorted(a['reload_s'])[len(a['reload_s']) // 2] if a['reload_s'] else float('nan')
        print(f"| {name} | {a['tried']} / {a['cases']} ({a['declared']} parameters) | "
              f"{rss or '-'} | "
              f"{a['sent']} | {a['answered']} | {a['sent'] - a['answered']} | {a['nonfinite']} | "
              f"{a['mismatches']} | {a['not judged']} | {a['commands']} ({a['bad_commands']}) | "
              f"{a['reloads_taken']} ({med:.2f}) | {'yes' if a['alive'] else 'NO'} |")
    for name, a in res['arms'].items():
        for d in a['deaths']:
            print(f"{name} node died (exit {d['returncode']}), killed by "
                  f"{d.get('killed_by') or 'no parameter in flight'}: {d['last_line']}")
    for name, a in res['arms'].items():
        c = a.get('counts') or {}
        if c:
            print(f"{name}: the node's own count (its diagnostics, last life): "
                  f"{c['inputs_total']} joint states received, "
                  f"{c['rejected_inputs_total']} refused, {c['outputs_total']} answered; the "
                  f"benchmark received {a['answers_last_life']} of those answers; the "
                  f"publishers sent {a['sent_all']} good and {a['bad_joint_states']} bad joint "
                  'states in all')
    for name, a in res['arms'].items():
        blame = sorted(a['blame'].items(), key=lambda x: -x[1])
        print(f'{name}: missing answers by the fault just before them: ' +
              (', '.join(f'{k} {v}' for k, v in blame[:8]) or 'none') +
              f"; publisher slots skipped (starved 5 ms, not counted): {a['skipped']}")
    accepted = sorted({f"{f['detail'].split(' via ')[0]} ({f['kind']})" for f in res['faults']
                       if f['outcome'].startswith('accepted')})
    if accepted:
        print('bad parameters accepted (then set back): ' + '; '.join(accepted))
    print(f"node logs: {res['logs']}")
    killers = sorted({f['detail'] for f in res['faults'] if f['outcome'] == 'killed the node'})
    if killers:
        print('parameters that killed a node: ' + '; '.join(killers))
    if res['quarantine']:
        print('kinds not injected again after a kill (--respawn): ' + ', '.join(res['quarantine']))
    print()
    ok = True
    for target, figure, passed in verdicts(res):
        print(f"{'PASS' if passed else 'FAIL'}  {target}: {figure}")
        ok = ok and passed
    return ok


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
    serve_publisher(sys.argv[1], float(sys.argv[2]), json.loads(sys.argv[3]))
