"""Benchmark: the rnea node's joint-state callback with the momentum observer off and on.

Two nodes in one process (real rclpy, EventsExecutor not spinning), as
``bench_node_cycle.py``: one plain, one with ``observer_enabled``, collision thresholds (no
collision fires) and ``external_wrench_frame`` = the last link, get their raw joint-state
callback called alternately with the bytes of the same fresh message (every joint, efforts =
g(q) + noise).  A sink process subscribes to both nodes' efforts and to the observer's
``~/external_torques`` and ``~/external_wrench``, so DDS delivers everything.  Between two calls
the process sleeps 0.8 ms and (unless ``--warm``) touches 8 MB.

Prints per robot the median / p90 / p99 of the whole callback and of the part up to the
efforts message (the latency a controller sees), off and on, and the ratios on / off.  With
``--parts`` it also times the observer's parts in the node with observer on (each method
wrapped by a timer, which adds ~0.3 us to each): the whole observer cycle, reading the efforts
(``take_efforts``), the observer update (one kernel call), the collision detector and the
``~/external_wrench`` computation and publish (at ``external_wrench_rate``, so in a fraction of
the calls, printed), and the mean observer cost per call.

Usage: python benchmarks/bench_observer_cycle.py [--robots panda] [--calls 3000] [--warm]
       [--no-torques] [--parts] [--params name:=value ...]

``--no-torques``: nobody subscribes to ``~/external_torques`` (as in ``bench_node.py
--observer``, where only the wrench has a subscriber).
"""

import argparse
import array
import os
import random
import subprocess
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, 'test'))

from builtin_interfaces.msg import Time  # noqa: E402
from geometry_msgs.msg import WrenchStamped  # noqa: E402
import numpy as np  # noqa: E402
import rclpy  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rclpy.serialization import serialize_message  # noqa: E402
from robots import urdf_path  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402


def sink(torques=True):
    """Subscribe to both nodes' efforts and the observer's outputs (DDS delivers)."""
    from rclpy.experimental import EventsExecutor
    rclpy.init()
    node = rclpy.create_node('observer_cycle_sink')
    for topic in ('/rnea_off/joint_efforts', '/rnea_on/joint_efforts') + \
            (('/rnea_on/external_torques',) if torques else ()):
        node.create_subscription(JointState, topic, lambda msg: None, 100)
    node.create_subscription(WrenchStamped, '/rnea_on/external_wrench', lambda msg: None, 100)
    executor = EventsExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        pass


def parse_overrides(items):
    """Return Parameters from name:=value strings (YAML values)."""
    import yaml
    out = []
    for item in items or []:
        name, text = item.split(':=', 1)
        out.append(Parameter(name, value=yaml.safe_load(text)))
    return out


PARTS = (('observer cycle', 'rnea_ros.node.rnea_node', 'RneaNode', '_observer_cycle'),
         ('take_efforts', 'rnea_ros.node.observer', 'NodeObserver', 'take_efforts'),
         ('observer update', 'rnea_ros.core.observer', 'MomentumObserver', 'update'),
         ('detector', 'rnea_ros.core.observer', 'CollisionDetector', 'update'),
         ('wrench estimate', 'rnea_ros.core.observer', 'WrenchEstimator', '__call__'),
         ('wrench estimate + publish', 'rnea_ros.node.rnea_node', 'RneaNode',
          '_publish_external_wrench'))


def timed_parts(node):
    """Wrap the observer's methods with timers; return ({part: seconds}, what to restore).

    Only the node with the observer has observer objects; of the node methods, the calls on
    ``node`` are timed.
    """
    import importlib
    times, undo = {}, []
    for part, module, cls_name, name in PARTS:
        cls = getattr(importlib.import_module(module), cls_name)
        original = getattr(cls, name)
        spent = times[part] = []

        def timed(self, *a, _f=original, _spent=spent, **k):
            owner = getattr(self, 'node', self)
            if isinstance(owner, type(node)) and owner is not node:
                return _f(self, *a, **k)
            start = time.perf_counter()
            try:
                return _f(self, *a, **k)
            finally:
                _spent.append(time.perf_counter() - start)
        undo.append((cls, name, original))
        setattr(cls, name, timed)
    return times, undo


def measure(robot, args):
    """Return {series: microseconds array} for one robot (and '_parts' with ``--parts``)."""
    from rclpy.experimental import EventsExecutor
    from rnea_ros import gravity_torques
    from rnea_ros.node.rnea_node import RneaNode
    publish_efforts = RneaNode._publish_efforts
    out_at = [0.0]

    def marked(self, *a):
        publish_efforts(self, *a)
        out_at[0] = time.perf_counter()
    RneaNode._publish_efforts = marked
    parts, undo = {}, []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]))
    peer = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--serve-sink', robot]
                            + (['--no-torques'] if args.no_torques else []),
                            env=env, stderr=subprocess.DEVNULL)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=args.domain)
    try:
        common = [Parameter('urdf_file', value=urdf_path(robot)),
                  Parameter('mode', value='gravity_compensation')]
        off = RneaNode(context=context, node_name='rnea_off', parameter_overrides=common)
        model = off._rt.model
        on = RneaNode(context=context, node_name='rnea_on', parameter_overrides=common + [
            Parameter('observer_enabled', value=True),
            Parameter('collision_thresholds', value=[5.0]),
            Parameter('collision_reaction', value='float'),
            Parameter('external_wrench_frame', value=model.body_links[-1])]
            + parse_overrides(args.params))
        executor = EventsExecutor(context=context)
        executor.add_node(off)
        executor.add_node(on)
        obs = on._observer
        end = time.monotonic() + 30.0
        while time.monotonic() < end and not (
                off._efforts_pub.get_subscription_count()
                and on._efforts_pub.get_subscription_count()
                and (args.no_torques or obs.torques_pub.get_subscription_count())
                and obs.wrench_pub.get_subscription_count()):
            executor.spin_once(timeout_sec=0.05)
        executor.spin_once(timeout_sec=0.05)
        names = list(model.joint_names)             # mimic joints too: the observer wants all
        rng = np.random.default_rng(0)
        low, high = model.lower_limits, model.upper_limits
        q = np.where(np.isfinite(low) & np.isfinite(high), 0.5 * (low + high), 0.0)
        columns = [model.joint_names.index(n) for n in names]
        effort = gravity_torques(model, q)[columns]
        junk = np.zeros(1 << 20)
        if args.parts:
            parts, undo = timed_parts(on)
        series = {f'{who} {what}': [] for who in ('off', 'on')
                  for what in ('callback', 'to efforts out')}
        for k in range(args.calls):
            now = time.time_ns()
            noisy = effort + 0.01 * rng.standard_normal(len(names))
            msg = JointState(name=list(names), position=array.array('d', q[columns].tolist()),
                             velocity=array.array('d', [0.0] * len(names)),
                             effort=array.array('d', noisy.tolist()))
            msg.header.stamp = Time(sec=now // 10**9, nanosec=now % 10**9)
            data = serialize_message(msg)
            for who, node in (('off', off), ('on', on)) if k % 2 else (('on', on), ('off', off)):
                if not args.warm:
                    junk += 1.0
                time.sleep(0.0008)
                start = time.perf_counter()
                node._on_joint_state_data(data)
                done = time.perf_counter()
                series[f'{who} callback'].append(done - start)
                series[f'{who} to efforts out'].append(out_at[0] - start)
        status = obs.status
        off.destroy_node()
        on.destroy_node()
    finally:
        RneaNode._publish_efforts = publish_efforts
        for cls, name, original in undo:
            setattr(cls, name, original)
        rclpy.shutdown(context=context)
        peer.terminate()
        peer.wait(timeout=10)
    skip = args.calls // 20
    result = {k: 1e6 * np.asarray(v[skip:]) for k, v in series.items()}
    result['_status'] = status
    result['_parts'] = {k: 1e6 * np.asarray(v[len(v) // 20:]) for k, v in parts.items()}
    return result


def print_parts(robot, parts):
    """Print the observer's parts: median, p99, calls and mean cost per joint-state call."""
    print(f'\nobserver parts in the node with the observer ({robot}; timers add ~0.3 us each)\n')
    print('| part | calls | median us | p99 us | mean us per call |')
    print('|---|---|---|---|---|')
    cycles = max(1, parts['observer cycle'].size)
    for name, values in parts.items():
        if values.size:
            print(f'| {name} | {values.size} | {np.median(values):.1f} | '
                  f'{np.percentile(values, 99):.1f} | {values.sum() / cycles:.1f} |')


def main():
    """Parse arguments, measure each robot, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--robots', default='panda')
    parser.add_argument('--calls', type=int, default=3000, help='calls of each node')
    parser.add_argument('--warm', action='store_true', help='do not evict caches between calls')
    parser.add_argument('--params', nargs='*', help='extra name:=value for the observer node')
    parser.add_argument('--parts', action='store_true',
                        help="time the observer's parts in the node (see the module doc)")
    parser.add_argument('--no-torques', action='store_true',
                        help='the sink does not subscribe to ~/external_torques')
    parser.add_argument('--domain', type=int, default=random.randint(100, 200),
                        help='ROS domain (default: a random one of 100-200)')
    parser.add_argument('--serve-sink', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_sink:
        return sink(not args.no_torques)
    os.environ['ROS_DOMAIN_ID'] = str(args.domain)
    state = 'warm' if args.warm else 'caches evicted'
    print(f'rnea node joint-state callback, observer off and on (interleaved), {args.calls} '
          f'calls each, {state}, sleep 0.8 ms, gravity_compensation, load '
          f'{os.getloadavg()[0]:.2f}\n')
    print('| robot | series | median us | p90 us | p99 us |')
    print('|---|---|---|---|---|')
    for robot in args.robots.split(','):
        result = measure(robot, args)
        status = result.pop('_status')
        parts = result.pop('_parts')
        for name, values in result.items():
            print(f'| {robot} | {name} | {np.median(values):.1f} | '
                  f'{np.percentile(values, 90):.1f} | {np.percentile(values, 99):.1f} |')
        for what in ('callback', 'to efforts out'):
            a, b = result[f'on {what}'], result[f'off {what}']
            print(f'| {robot} | {what} on / off | {np.median(a) / np.median(b):.2f} | '
                  f'{np.percentile(a, 90) / np.percentile(b, 90):.2f} | '
                  f'{np.percentile(a, 99) / np.percentile(b, 99):.2f} |')
        print(f'observer status at the end: {status}')
        if parts:
            print_parts(robot, parts)


if __name__ == '__main__':
    main()
