"""Benchmark: input->output latency of the rnea node at a fixed joint-state rate.

The rnea node runs in its own process (``python -m rnea_ros.node``); this process publishes joint
states at ``--rate`` Hz for ``--duration`` s (each stamped with the wall-clock time of
publishing) and listens to ``~/joint_efforts``, whose stamp is the input's, so latency = time
received - stamp.  For the panda the 7 arm joints stream; the gripper joint is published once at
the start (merged by the node, the mimic finger follows).  Reports p50/p99/max latency, drops
(inputs without an answer), the node's CPU use and its own compute time per cycle (from
/diagnostics), for one or several node configurations, as a table.  With reaction wrenches,
every ``~/reaction_wrenches/<joint>`` topic is subscribed by a separate sink process (as rqt or
a logger would be), so that the node computes and sends them while this process's latency
stamps are not delayed by their callbacks.

Load sweep (issue 7): ``--rates 1000,2000 --robots panda,talos_reduced --wrenches`` runs every
robot at every rate with all reaction-wrench topics subscribed and states the highest rate each
robot sustained (no drop above 0.1 % and p99 <= 1 ms).  Soak: ``--soak 600`` runs one robot at
``--rate`` for 600 s and reports the node's resident memory (RSS) growth and the latency of each
``--window`` (creep: last window's p99 against the first).

Issue 15 check: ``--rates 1000 --robots panda,talos_reduced --wrenches --with-relay`` also runs
the trivial relay before each robot run (same rate, same machine, same minute) and prints the
node's p99 against the relay's (target: drops <= 0.1 %, p99 <= 1.3x relay) with the node's
default ``reaction_wrenches_rate``.  ``--hostile`` mixes bad messages into the stream (after
every 10th joint state one of: 50 never-seen joint names, a NaN position, duplicate names,
only unknown names, a stamp 0.5-1 s ahead); they are not counted as sent, nor the 2 joint
states after a future stamp (the node drops them by design before it follows the stream
again, see ``StampCheck``), and with ``--soak``
the RSS growth shows whether the node's memory stays bounded.

Issue 22 check: ``--observer`` runs two rnea nodes all along, one with the momentum observer
on (``observer_enabled``, collision thresholds, ``external_wrench_frame`` = the last link,
subscribed by a sink process) and one with it off, and streams the same joint states (every
joint, with efforts g(q) + a little noise, so the observer runs and no collision fires) to
each in alternating blocks as ``--with-relay`` does; prints p99 with the observer against
without (target <= 1.1x) and the drops (target <= 0.1 %).  ``--paired`` streams to both at
once instead, message by message half a period apart, so that load bursts of the machine fall
on both alike (blocks of 2 s leave a burst to one of them).

Usage: python benchmarks/bench_node.py [--rate 1000] [--duration 10] [--robot panda]
       [--urdf FILE] [--stream-joints 7] [--compare]
       python benchmarks/bench_node.py --rates 1000,2000 --robots panda,talos_reduced \
           --duration 60 --wrenches
       python benchmarks/bench_node.py --soak 600 --rate 1000 --robot panda --wrenches
       python benchmarks/bench_node.py --observer --rate 1000 --duration 20 --robot panda
       python benchmarks/bench_node.py --observer --paired --rate 1000 --duration 30
"""

import argparse
import os
import random
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

from builtin_interfaces.msg import Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rnea_ros import RobotModel  # noqa: E402
from robots import urdf_path  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

CLK_TCK = os.sysconf('SC_CLK_TCK')

# name -> (node executor, extra node parameters); 'relay' is the floor: a trivial rclpy node
# that republishes each joint state at once (what rclpy and DDS cost without any work).
CONFIGS = {
    'events': ('events', []),
    'single-threaded': ('single', []),
    'events, reaction wrenches subscribed': ('events', []),
    'relay (rclpy + DDS floor)': ('relay', []),
}


def cpu_seconds(pid):
    """Return user + system CPU seconds used so far by a process."""
    with open(f'/proc/{pid}/stat') as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def rss_mb(pid):
    """Return the resident memory of a process in MB."""
    with open(f'/proc/{pid}/status') as f:
        for line in f:
            if line.startswith('VmRSS:'):
                return int(line.split()[1]) / 1024.0
    return float('nan')


def relay(prefix):
    """Run a trivial node that republishes <prefix>joint_states on <prefix>joint_efforts.

    Same QoS as the rnea node (input best effort, output depth 10 reliable) and the same
    executor; ``prefix`` is '/rnea/' (in place of the node) or '/relay/' (beside it).
    """
    from rclpy.experimental import EventsExecutor
    rclpy.init()
    from rnea_ros.node.rnea_node import INPUT_DEPTH, JOINT_STATE_QOS   # the node's own QoS
    node = rclpy.create_node('relay')
    pub = node.create_publisher(JointState, prefix + 'joint_efforts', INPUT_DEPTH)
    states = '/joint_states' if prefix == '/rnea/' else prefix + 'joint_states'
    node.create_subscription(JointState, states, pub.publish, JOINT_STATE_QOS)
    executor = EventsExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        pass


def wrench_sink(joints):
    """Subscribe to every reaction-wrench topic (as rqt or a logger would); print 'ready'.

    Ready once every subscription sees the node's publisher, so that the node sends every
    wrench before the measured window starts.  A name starting with '/' is a whole topic.
    """
    from rclpy.experimental import EventsExecutor
    rclpy.init()
    node = rclpy.create_node(f'wrench_sink_{random.randrange(1 << 30)}')
    subs = [node.create_subscription(
        WrenchStamped, joint if joint.startswith('/') else f'/rnea/reaction_wrenches/{joint}',
        lambda msg: None, 100) for joint in joints]
    executor = EventsExecutor()
    executor.add_node(node)
    announced = False
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.05)
            if not announced and all(sub.get_publisher_count() for sub in subs):
                print('ready', flush=True)
                announced = True
    except KeyboardInterrupt:
        pass


def start_process(args, domain, **kwargs):
    """Start a process of this benchmark's on the given ROS domain."""
    env = dict(os.environ, ROS_DOMAIN_ID=str(domain),
               PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]))
    return subprocess.Popen(args, env=env, cwd=ROOT, stderr=subprocess.DEVNULL, **kwargs)


def start_wrench_sink(joints, domain):
    """Start the wrench sink in its own process (see :func:`wait_sink_ready`)."""
    return start_process([sys.executable, os.path.abspath(__file__), '--serve-wrench-sink',
                          *joints], domain, stdout=subprocess.PIPE, text=True)


def wait_sink_ready(sink):
    """Block until the sink printed 'ready' (its topics connected to the node)."""
    if sink.stdout.readline().strip() != 'ready':
        raise RuntimeError('the wrench sink did not connect to the node')


def start_node(urdf, executor, extra, domain, remap=()):
    """Start the rnea node (gravity compensation), or the relay, in its own process."""
    args = [sys.executable, '-m', 'rnea_ros.node', '--executor', executor, '--ros-args',
            '-p', f'urdf_file:={urdf}', '-p', 'mode:=gravity_compensation']
    for item in remap:
        args += ['-r', item]
    if executor in ('relay', 'relay beside'):
        args = [sys.executable, os.path.abspath(__file__), '--serve-relay',
                '/rnea/' if executor == 'relay' else '/relay/']
    for item in extra:
        args += ['-p', item]
    return start_process(args, domain, stdout=subprocess.DEVNULL)


class Driver:
    """Publishes joint states on time and records when each answer comes back."""

    def __init__(self, context, model, stream_joints, hostile=False, relay=False, targets=None,
                 efforts=False):
        """Create the peer node, its publishers and its subscriptions.

        ``relay``: also drive a relay beside the node (on /relay/joint_states, answering on
        /relay/joint_efforts); :attr:`target` chooses which of the two the stream goes to.
        ``targets``: {name: (joint-state topic, efforts topic)} instead (the first is the
        default target).  ``efforts``: the joint states carry efforts (g(q) plus noise).
        """
        self.hostile = hostile
        self.sent = 0
        self.bad_sent = 0
        self.unrecorded = 0       # answers the node drops by design after a future stamp
        self.node = rclpy.create_node(f'bench_driver_{random.randrange(1 << 30)}',
                                      context=context)
        self.executor = self._executor(context)
        self.executor.add_node(self.node)
        self.pubs, self.subs, self.latencies = {}, {}, {}
        if targets is None:
            targets = {'node': ('/joint_states', '/rnea/joint_efforts')}
            if relay:
                targets['relay'] = ('/relay/joint_states', '/relay/joint_efforts')
        for target, (states, answers) in targets.items():
            self.pubs[target] = self.node.create_publisher(JointState, states, 10)
            self.latencies[target] = {}
            self.subs[target] = self.node.create_subscription(
                JointState, answers, self._answer(self.latencies[target]), 100)
        self.target = next(iter(targets))
        self.node.create_subscription(DiagnosticArray, '/diagnostics', self._on_diag, 10)
        names = list(model.joint_names)
        mimic = {m[0] for m in model.mimic}
        self.stream = names[:stream_joints]
        self.once = [n for n in names[stream_joints:] if n not in mimic]
        mid = (np.nan_to_num(model.lower_limits) + np.nan_to_num(model.upper_limits)) / 2
        self.q = {n: float(np.clip(v, -3, 3)) for n, v in zip(names, mid)}
        self.msg = JointState(name=self.stream, position=[self.q[n] for n in self.stream],
                              velocity=[0.1] * len(self.stream))
        self.effort = None
        if efforts:
            from rnea_ros import gravity_torques
            self.effort = gravity_torques(model, np.array([self.q[n] for n in names]))
            self.noise = np.random.default_rng(0).normal(0.0, 0.01, (1000, len(names)))
        self.compute_us = []
        self.recording = False

    @property
    def latency(self):
        """Return {stamp ns: latency ns or None (no answer yet)} of the current target."""
        return self.latencies[self.target]

    @latency.setter
    def latency(self, value):
        self.latencies[self.target].clear()
        self.latencies[self.target].update(value)

    @staticmethod
    def _executor(context):
        try:
            from rclpy.experimental import EventsExecutor
            return EventsExecutor(context=context)
        except ImportError:
            return SingleThreadedExecutor(context=context)

    @staticmethod
    def _answer(latency):
        def on_effort(msg):
            now = time.time_ns()
            stamp = msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec
            if stamp in latency:
                latency[stamp] = now - stamp
        return on_effort

    def _on_diag(self, msg):
        if not self.recording:
            return
        for status in msg.status:
            values = {kv.key: kv.value for kv in status.values}
            if 'compute_mean_us' in values and float(values.get('output_rate_hz', 0)) > 0:
                self.compute_us.append(float(values['compute_mean_us']))

    def publish(self, record):
        """Publish one joint state stamped now; remember its stamp if recording."""
        now = time.time_ns()
        self.msg.header.stamp = Time(sec=now // 1_000_000_000, nanosec=now % 1_000_000_000)
        if self.effort is not None:
            self.msg.effort = (self.effort + self.noise[self.sent % 1000]).tolist()
        if self.unrecorded:
            self.unrecorded -= 1  # StampCheck: 2 messages follow the outlier before recovery
        elif record:
            self.latency[now] = None
        pub = self.pubs[self.target]
        pub.publish(self.msg)
        self.sent += 1
        if self.hostile and self.sent % 10 == 0:
            pub.publish(self._bad(now))
            self.bad_sent += 1

    def _bad(self, now):
        """Return one hostile joint state (never recorded, so never counted as a drop)."""
        kind = self.bad_sent % 5
        names, q = list(self.msg.name), list(self.msg.position)
        sec, nanosec = now // 1_000_000_000, now % 1_000_000_000
        if kind == 0:             # never-seen names: the node must not remember them all
            names += [f'ghost_{self.bad_sent}_{i}' for i in range(50)]
            q += [0.0] * 50
        elif kind == 1:
            q[0] = float('nan')
        elif kind == 2:
            names[-1] = names[0]
        elif kind == 3:
            names = [f'stranger_{self.bad_sent}']
            q = [0.0]
        else:                     # a stamp ahead of the stream (the node must recover)
            sec += 1
            nanosec = nanosec // 2
            self.unrecorded = 2
        msg = JointState(name=names, position=q)
        msg.header.stamp = Time(sec=sec, nanosec=nanosec)
        return msg

    def wait_ready(self, timeout=60.0):
        """Wait for the node: publish the slow joints, then until an answer comes back."""
        end = time.monotonic() + timeout
        sub, pub = self.subs[self.target], self.pubs[self.target]
        while sub.get_publisher_count() == 0 or pub.get_subscription_count() == 0:
            if time.monotonic() > end:
                raise RuntimeError(f'the {self.target} did not come up')
            self.executor.spin_once(timeout_sec=0.05)
        got = []
        self.latency = {}
        once = JointState(name=self.once, position=[self.q[n] for n in self.once])
        while not got and time.monotonic() < end:
            if self.once:         # again each time: the node subscribes best effort
                pub.publish(once)
            self.publish(record=True)
            self.executor.spin_once(timeout_sec=0.05)
            got = [v for v in self.latency.values() if v is not None]
        if not got:
            raise RuntimeError(f'the {self.target} does not answer joint states')

    def run(self, rate, seconds, record, drain=0.5, alternate=()):
        """Publish at ``rate`` Hz for ``seconds``; return the seconds it took.

        Answers are handled in between and for ``drain`` s after (not counted in the time).
        ``alternate``: targets that take turns, one message each (each gets rate / len Hz).
        """
        period = 1.0 / rate
        start = time.monotonic()
        count = int(round(rate * seconds))
        for i in range(count):
            due = start + i * period
            while True:
                left = due - time.monotonic()
                if left <= 0:
                    break
                self.executor.spin_once(timeout_sec=left)
            if alternate:
                self.target = alternate[i % len(alternate)]
            self.publish(record)
        elapsed = time.monotonic() - start
        end = time.monotonic() + drain
        while time.monotonic() < end:
            self.executor.spin_once(timeout_sec=0.01)
        return elapsed

    def close(self):
        """Destroy the driver node."""
        self.node.destroy_node()


def _latency_ms(latency):
    return np.array([v for v in latency.values() if v is not None], dtype=float) / 1e6


def soak(driver, proc, args):
    """Run for args.soak s in windows; return [(t, rss MB, p50, p99, max, drops)] per window."""
    windows = []
    start = time.monotonic()
    while time.monotonic() - start < args.soak:
        driver.latency = {}
        driver.run(args.rate, args.window, record=True)
        lat = _latency_ms(driver.latency)
        windows.append((time.monotonic() - start, rss_mb(proc.pid),
                        np.percentile(lat, 50), np.percentile(lat, 99), lat.max(),
                        len(driver.latency) - len(lat)))
        print('soak t=%4.0f s  RSS %.1f MB  p50 %.3f  p99 %.3f  max %.3f ms  drops %d'
              % windows[-1], flush=True)   # noqa: Q000
    return windows


def measure(name, urdf, model, args, context, domain, wrenches=False):
    """Run one configuration; return its row of figures."""
    executor, extra = CONFIGS[name]
    if args.wrench_rate is not None:
        extra = extra + [f'reaction_wrenches_rate:={args.wrench_rate}']
    proc = start_node(urdf, executor, extra, domain)
    driver = Driver(context, model, args.stream_joints, args.hostile)
    sink = None
    if ('subscribed' in name or wrenches) and executor != 'relay':
        sink = start_wrench_sink(model.joint_names, domain)
    try:
        driver.wait_ready()
        if sink is not None:
            wait_sink_ready(sink)
        driver.run(args.rate, min(1.0, args.duration), record=False)   # warm-up
        driver.latency = {}
        driver.compute_us = []
        driver.recording = True
        rss0 = rss_mb(proc.pid)
        if args.soak:
            windows = soak(driver, proc, args)
            return {'config': name, 'rss0': rss0, 'windows': windows}
        cpu0, driver_cpu0 = cpu_seconds(proc.pid), time.process_time()
        elapsed = driver.run(args.rate, args.duration, record=True)
        node_cpu = (cpu_seconds(proc.pid) - cpu0) / elapsed * 100.0
        driver_cpu = (time.process_time() - driver_cpu0) / elapsed * 100.0
    finally:
        driver.close()
        for process in (proc, sink):
            if process is not None:
                process.terminate()
                process.wait(timeout=10)
    return dict(latency_figures(driver.latency), config=name, robot=model.name, rate=args.rate,
                node_cpu_pct=node_cpu, driver_cpu_pct=driver_cpu, compute_us=_mean(driver))


def _mean(driver):
    return float(np.mean(driver.compute_us)) if driver.compute_us else float('nan')


def latency_figures(latency):
    """Return sent, answered, drops and the p50 / p99 / max latency (ms) of one record."""
    lat = _latency_ms(latency)
    return {
        'sent': len(latency),
        'answered': len(lat),
        'drops': len(latency) - len(lat),
        'p50_ms': np.percentile(lat, 50) if len(lat) else float('nan'),
        'p99_ms': np.percentile(lat, 99) if len(lat) else float('nan'),
        'max_ms': lat.max() if len(lat) else float('nan'),
    }


def measure_with_relay(urdf, model, args, context, domain):
    """Run the node and the trivial relay beside it in alternating blocks; return both rows.

    Both processes run all along; the joint-state stream goes to one of them at a time, in
    blocks of ``args.block`` s in the order relay, node, node, relay, relay, node... until each
    had ``args.duration`` s.  So both see the same minutes of this shared machine (a relay run
    before the node's, as earlier versions did, saw its p99 move between 0.36 and 0.72 ms from
    one minute to the next).  The wrench sink (``--wrenches``) is subscribed all along.
    """
    extra = [] if args.wrench_rate is None else [f'reaction_wrenches_rate:={args.wrench_rate}']
    procs = [start_node(urdf, 'events', extra, domain), start_node(urdf, 'relay beside', [],
                                                                   domain)]
    driver = Driver(context, model, args.stream_joints, args.hostile, relay=True)
    sink = start_wrench_sink(model.joint_names, domain) if args.wrenches else None
    busy = {'node': 0.0, 'relay': 0.0}
    try:
        for target in busy:
            driver.target = target
            driver.wait_ready()
        if sink is not None:
            procs.append(sink)
            wait_sink_ready(sink)
        for target in busy:
            driver.target = target
            driver.run(args.rate, min(1.0, args.duration), record=False)   # warm-up
            driver.latency = {}
        driver.compute_us = []
        driver.recording = True
        cpu0 = cpu_seconds(procs[0].pid)
        blocks = max(1, int(round(args.duration / args.block)))
        for i in range(blocks):
            for target in ('relay', 'node') if i % 2 == 0 else ('node', 'relay'):
                driver.target = target
                busy[target] += driver.run(args.rate, args.duration / blocks, record=True,
                                           drain=0.002)
        driver.run(args.rate, 0.0, record=False)      # the last answers
        node_cpu = (cpu_seconds(procs[0].pid) - cpu0) / busy['node'] * 100.0
    finally:
        driver.close()
        for process in procs:
            process.terminate()
            process.wait(timeout=10)
    rows = [dict(latency_figures(driver.latencies[target]), config=target, robot=model.name,
                 rate=args.rate, blocks=blocks,
                 latency_ms=_latency_ms(driver.latencies[target])) for target in ('node', 'relay')]
    rows[0].update(node_cpu_pct=node_cpu, compute_us=_mean(driver))
    return rows


def measure_observer(urdf, model, args, context, domain):
    """Run two nodes, momentum observer on and off, in alternating blocks; return both rows.

    As :func:`measure_with_relay`: both nodes run all along and see the same minutes of the
    machine; the stream (every joint with efforts) goes to one at a time in blocks of
    ``args.block`` s, in the order off, on, on, off, off, on...

    With ``args.paired`` both nodes get their stream at the same time instead, message by
    message: the driver publishes at twice the rate to off and on in turn, so each node sees
    ``args.rate`` and the two streams are half a period apart (which comes first swaps every
    ``args.block`` s: the driver's own publish delays the answer that comes back during it);
    every millisecond of the machine's load falls on both alike (two nodes busy at once, and
    the driver at twice the rate: latencies higher than in blocks).
    """
    last = model.body_links[-1]
    observer = ['observer_enabled:=true', 'collision_thresholds:=[5.0]',
                'collision_reaction:=float']
    if args.gated:                      # thresholds gated by velocity reversals
        observer += ['collision_reversal_thresholds:=[10.0]', 'collision_reversal_band:=0.1',
                     'collision_reversal_hold:=0.02']
    if not args.no_wrench:
        observer.append(f'external_wrench_frame:={last}')
    procs = [start_node(urdf, 'events', [], domain),
             start_node(urdf, 'events', observer, domain,
                        remap=['__node:=rnea_observer', 'joint_states:=/observer/joint_states'])]
    targets = {'off': ('/joint_states', '/rnea/joint_efforts'),
               'on': ('/observer/joint_states', '/rnea_observer/joint_efforts')}
    driver = Driver(context, model, len(model.joint_names), targets=targets, efforts=True)
    sink = None                         # a subscriber of ~/external_wrench, as a user's
    if not args.no_wrench:
        sink = start_wrench_sink(['/rnea_observer/external_wrench'], domain)
    if sink is not None:
        procs.append(sink)
    busy = {'off': 0.0, 'on': 0.0}
    try:
        for target in busy:
            driver.target = target
            driver.wait_ready()
        if sink is not None:
            wait_sink_ready(sink)
        for target in busy:
            driver.target = target
            driver.run(args.rate, min(1.0, args.duration), record=False)   # warm-up
            driver.latency = {}
        cpu0 = [cpu_seconds(p.pid) for p in procs[:2]]
        blocks = 0 if args.paired else max(1, int(round(args.duration / args.block)))
        for i in range(blocks):
            for target in ('off', 'on') if i % 2 == 0 else ('on', 'off'):
                driver.target = target
                busy[target] += driver.run(args.rate, args.duration / blocks, record=True,
                                           drain=0.002)
        pairs = max(1, int(round(args.duration / args.block))) if args.paired else 0
        for i in range(pairs):          # which node comes first swaps every block
            busy['on'] += driver.run(2.0 * args.rate, args.duration / pairs, record=True,
                                     drain=0.002, alternate=('on', 'off')[::1 - 2 * (i % 2)])
        driver.run(args.rate, 0.0, record=False)      # the last answers
        cpu = [(cpu_seconds(p.pid) - c) / (busy['off'] + busy['on']) * 100.0
               for p, c in zip(procs[:2], cpu0)]
    finally:
        driver.close()
        for process in procs:
            process.terminate()
            process.wait(timeout=10)
    rows = [dict(latency_figures(driver.latencies[target]), config=f'observer {target}',
                 robot=model.name, rate=args.rate, blocks=blocks, node_cpu_pct=c)
            for target, c in zip(('off', 'on'), cpu)]
    return rows


def _loads(loads):
    return ' / '.join(f'{x:.2f}' for x in loads)


def print_observer(rows, args, model):
    """Print the observer on/off comparison and the issue 22 verdict."""
    print(f'\nrnea node with the momentum observer on and off: {model.name}, every joint '
          f'streamed with efforts at {args.rate:.0f} Hz, {args.duration:.0f} s each '
          + ('at once, message by message (paired)' if args.paired else
             f'in {rows[0]["blocks"]} alternating block pairs')
          + (', collision thresholds gated by velocity reversals' if args.gated else '')
          + f', {os.cpu_count()} CPUs, load averages '
          f'(1, 5, 15 min) before {_loads(args.load_before)}, after {_loads(os.getloadavg())}'
          '\n')
    head = ('node', 'sent', 'drops', 'p50 ms', 'p99 ms', 'max ms', 'node CPU % (of the run)')
    print('| ' + ' | '.join(head) + ' |')
    print('|' + '|'.join('---' for _ in head) + '|')
    for r in rows:
        print(f"| {r['config']} | {r['sent']} | {r['drops']} | {r['p50_ms']:.3f} | "
              f"{r['p99_ms']:.3f} | {r['max_ms']:.3f} | {r['node_cpu_pct']:.0f} |")
    off, on = rows
    ratio = on['p99_ms'] / off['p99_ms']
    drops = on['drops'] / max(on['sent'], 1)
    verdict = 'met' if ratio <= 1.1 and drops <= 0.001 else 'NOT met'
    print(f'\np99 with the observer {ratio:.2f}x without; drops with it {100 * drops:.3f} %: '
          f'target (<= 1.1x, <= 0.1 %) {verdict}')


def print_table(rows, args, model):
    """Print the figures as a markdown table."""
    print(f'\nrnea node latency: {model.name} ({args.stream_joints} joints streamed of '
          f'{len(model.joint_names)}), {args.rate:.0f} Hz for {args.duration:.0f} s, '
          f'gravity_compensation, {os.cpu_count()} CPUs\n')
    head = ('node config', 'sent', 'answered', 'drops', 'p50 ms', 'p99 ms', 'max ms',
            'node CPU %', 'compute us/cycle')
    print('| ' + ' | '.join(head) + ' |')
    print('|' + '|'.join('---' for _ in head) + '|')
    for r in rows:
        print(f"| {r['config']} | {r['sent']} | {r['answered']} | {r['drops']} | "
              f"{r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.3f} | "
              f"{r['node_cpu_pct']:.0f} | {r['compute_us']:.0f} |")
    driver = ', '.join('%.0f %%' % r['driver_cpu_pct'] for r in rows)
    print(f'\n(driver process CPU: {driver})')


def sustained(row, max_p99_ms=1.0, max_drop=0.001):
    """Return whether a run sustained its rate: drops <= 0.1 % and p99 <= 1 ms."""
    return row['drops'] <= max_drop * row['sent'] and row['p99_ms'] <= max_p99_ms


def print_sweep(rows, args):
    """Print the robot x rate sweep and the highest rate each robot sustained."""
    print(f'\nrnea node load sweep: {args.duration:.0f} s per run, events executor, '
          f"gravity_compensation, reaction wrenches {'subscribed' if args.wrenches else 'off'} "
          f'(reaction_wrenches_rate {_wrench_rate(args)}), '
          f'{os.cpu_count()} CPUs (shared machine)\n')
    head = ('robot', 'DoF', 'rate Hz', 'sent', 'drops', 'p50 ms', 'p99 ms', 'max ms',
            'node CPU %', 'compute us/cycle', 'sustained')
    print('| ' + ' | '.join(head) + ' |')
    print('|' + '|'.join('---' for _ in head) + '|')
    for r in rows:
        print(f"| {r['robot']} | {r['dof']} | {r['rate']:.0f} | {r['sent']} | {r['drops']} | "
              f"{r['p50_ms']:.3f} | {r['p99_ms']:.3f} | {r['max_ms']:.3f} | "
              f"{r['node_cpu_pct']:.0f} | {r['compute_us']:.0f} | "
              f"{'yes' if sustained(r) else 'no'} |")
    for r in rows:
        if 'relay_p99_ms' in r:
            ratio = r['p99_ms'] / r['relay_p99_ms']
            verdict = 'met' if r['drops'] <= 0.001 * r['sent'] and ratio <= 1.3 else 'NOT met'
            print(f"{r['robot']} {r['rate']:.0f} Hz, {r['blocks']} block pairs: node p50 "
                  f"{r['p50_ms']:.3f} / p99 {r['p99_ms']:.3f} ms, relay p50 "
                  f"{r['relay_p50_ms']:.3f} / p99 {r['relay_p99_ms']:.3f} ms (p99 ratio "
                  f"{ratio:.2f}), node drops {r['drops']} of "
                  f"{r['sent']} ({100.0 * r['drops'] / r['sent']:.3f} %), relay drops "
                  f"{r['relay_drops']}: target (drops <= 0.1 %, p99 <= 1.3x relay) {verdict}")
    for robot in dict.fromkeys(r['robot'] for r in rows):
        ok = [r['rate'] for r in rows if r['robot'] == robot and sustained(r)]
        print(f'\nhighest rate sustained by {robot}: {max(ok):.0f} Hz' if ok else
              f'\n{robot}: no rate sustained')


def _wrench_rate(args):
    if args.wrench_rate is None:
        from rnea_ros.node.params import SPECS
        return f"{SPECS['reaction_wrenches_rate'].default:g} Hz (node default)"
    return f'{args.wrench_rate:g} Hz, 0 = every cycle'


def print_soak(row, args, model):
    """Print the soak summary: RSS growth and latency creep."""
    w = row['windows']
    print(f'\nrnea node soak: {model.name}, {args.rate:.0f} Hz for {w[-1][0]:.0f} s, '
          f'windows of {args.window:.0f} s, reaction wrenches '
          f"{'subscribed' if args.wrenches else 'off'}"
          f"{', bad messages mixed in (1 per 10)' if args.hostile else ''}")
    print(f"RSS: {row['rss0']:.1f} MB after warm-up, {w[0][1]:.1f} MB after the first window, "
          f'{w[-1][1]:.1f} MB at the end: growth {w[-1][1] - w[0][1]:+.1f} MB since the first '
          f"window ({w[-1][1] - row['rss0']:+.1f} MB since warm-up)")
    print(f'p99 first window {w[0][3]:.3f} ms, last {w[-1][3]:.3f} ms; p50 first {w[0][2]:.3f} '
          f'ms, last {w[-1][2]:.3f} ms; max over all {max(x[4] for x in w):.3f} ms; drops '
          f'{sum(x[5] for x in w)}')


def main():
    """Parse arguments, run the configurations, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--rate', type=float, default=1000.0, help='joint states per second')
    parser.add_argument('--duration', type=float, default=10.0, help='seconds measured')
    parser.add_argument('--robot', default='panda', help='example-robot-data robot name')
    parser.add_argument('--urdf', help='URDF file (instead of --robot)')
    parser.add_argument('--stream-joints', type=int, default=7,
                        help='number of model joints streamed at the rate (others once)')
    parser.add_argument('--compare', action='store_true',
                        help='also run the single-threaded executor, with reaction-wrench '
                        'subscribers, and the trivial relay (floor)')
    parser.add_argument('--rates', help='comma-separated rates (Hz): load sweep')
    parser.add_argument('--robots', help='comma-separated robots for the sweep (e.g. '
                        'panda,talos_reduced); all joints stream, except the gripper of panda')
    parser.add_argument('--wrench-rate', type=float, default=None,
                        help='node parameter reaction_wrenches_rate (Hz, 0: every cycle; '
                        "default: the node's default)")
    parser.add_argument('--with-relay', action='store_true',
                        help='sweep: run the trivial relay beside the node, the stream going '
                        'to each in alternating blocks, and compare p99')
    parser.add_argument('--block', type=float, default=2.0,
                        help='--with-relay, --observer: seconds per block (default 2)')
    parser.add_argument('--observer', action='store_true',
                        help='run two nodes, momentum observer on and off, in alternating '
                        'blocks and compare p99 (issue 22)')
    parser.add_argument('--no-wrench', action='store_true',
                        help='--observer: no external_wrench_frame (external torques only)')
    parser.add_argument('--gated', action='store_true',
                        help='--observer: collision thresholds gated by velocity reversals '
                        '(collision_reversal_thresholds 10 over collision_thresholds 5)')
    parser.add_argument('--paired', action='store_true',
                        help='--observer: both nodes streamed at once, message by message, '
                        'half a period apart (instead of blocks)')
    parser.add_argument('--hostile', action='store_true',
                        help='mix bad messages (unknown names, NaN, duplicates, future stamps) '
                        'into the stream')
    parser.add_argument('--wrenches', action='store_true',
                        help='subscribe to every reaction-wrench topic (the node computes them)')
    parser.add_argument('--soak', type=float, default=0.0,
                        help='soak seconds at --rate: RSS growth and latency creep')
    parser.add_argument('--window', type=float, default=30.0, help='soak window seconds')
    parser.add_argument('--plot', metavar='PNG',
                        help='with --rates/--robots and --with-relay: draw the latency '
                             'distributions of the node and the relay')
    parser.add_argument('--serve-relay', help=argparse.SUPPRESS)
    parser.add_argument('--serve-wrench-sink', nargs='+', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_relay:
        return relay(args.serve_relay)
    if args.serve_wrench_sink:
        return wrench_sink(args.serve_wrench_sink)
    if args.rates or args.robots:
        return sweep(args)
    urdf = os.path.abspath(args.urdf or urdf_path(args.robot))
    model = RobotModel.from_urdf_file(urdf)
    args.stream_joints = min(args.stream_joints, len(model.joint_names))
    domain = random.randint(100, 200)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    names = list(CONFIGS) if args.compare else ['events']
    if args.observer:
        args.load_before = os.getloadavg()
        try:
            rows = measure_observer(urdf, model, args, context, domain)
        finally:
            rclpy.shutdown(context=context)
        return print_observer(rows, args, model)
    try:
        rows = [measure(name, urdf, model, args, context, domain, args.wrenches)
                for name in names[:1 if args.soak else None]]
    finally:
        rclpy.shutdown(context=context)
    if args.soak:
        print_soak(rows[0], args, model)
    else:
        print_table(rows, args, model)


def sweep(args):
    """Run every robot at every rate (events executor) and print the sweep table."""
    rates = [float(x) for x in (args.rates or str(args.rate)).split(',')]
    robots = (args.robots or args.robot).split(',')
    domain = random.randint(100, 200)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    rows = []
    try:
        for robot in robots:
            urdf = os.path.abspath(urdf_path(robot))
            model = RobotModel.from_urdf_file(urdf)
            args.stream_joints = 7 if robot == 'panda' else len(model.joint_names)
            for rate in rates:
                args.rate = rate
                if args.with_relay:
                    row, relay_row = measure_with_relay(urdf, model, args, context, domain)
                    row['relay_p99_ms'] = relay_row['p99_ms']
                    row['relay_p50_ms'] = relay_row['p50_ms']
                    row['relay_drops'] = relay_row['drops']
                    row['relay_latency_ms'] = relay_row['latency_ms']
                else:
                    row = measure('events', urdf, model, args, context, domain, args.wrenches)
                row['dof'] = len(model.joint_names)
                rows.append(row)
                print(f"{robot} {rate:.0f} Hz: p99 {row['p99_ms']:.3f} ms, drops "
                      f"{row['drops']}", flush=True)
    finally:
        rclpy.shutdown(context=context)
    print_sweep(rows, args)
    if args.plot and args.with_relay:
        print(f'plot: {plot_latencies(rows, args.plot)}')


def plot_latencies(rows, path):
    """Draw, per robot and rate, the latency distribution of the node and of the relay."""
    import matplotlib
    matplotlib.use('Agg')
    from matplotlib import pyplot, ticker
    figure, axes = pyplot.subplots(1, len(rows), figsize=(4.2 * len(rows), 3.2), squeeze=False)
    for ax, row in zip(axes[0], rows):
        for key, label, colour in (('relay_latency_ms', 'relay (decode + publish)', '0.5'),
                                   ('latency_ms', 'rnea node', 'C0')):
            lat = np.sort(row[key])
            if lat.size:
                ax.plot(lat, np.arange(1, lat.size + 1) / lat.size, color=colour,
                        label=f'{label}: p50 {np.percentile(lat, 50):.3f}, '
                              f'p99 {np.percentile(lat, 99):.3f} ms')
        ax.set_xscale('log')
        ax.xaxis.set_major_locator(ticker.FixedLocator([0.1, 0.2, 0.5, 1, 2, 5, 10]))
        ax.xaxis.set_major_formatter(ticker.FormatStrFormatter('%g'))
        ax.xaxis.set_minor_formatter(ticker.NullFormatter())
        ax.axhline(0.99, color='0.8', linewidth=0.8)
        ax.set_xlabel('input -> output latency (ms)', fontsize=8)
        ax.set_ylabel('share of joint states', fontsize=8)
        ax.set_title(f"{row['robot']} ({row['dof']} joints), {row['rate']:.0f} Hz", fontsize=9)
        ax.legend(fontsize=7, loc='lower right')
        ax.tick_params(labelsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    pyplot.close(figure)
    return path


if __name__ == '__main__':
    main()
