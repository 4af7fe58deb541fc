"""Benchmark: the rnea node's joint-state callback against a relay's publish, in one process.

What the node adds to the relay floor of ``bench_node.py --with-relay``, without the noise of
four processes on a shared machine: the node (real rclpy, EventsExecutor not spinning) gets
its raw joint-state callback called directly with the bytes of a fresh message (what its
subscription receives); beside it the relay's work on the same bytes is timed: rclpy's
decoding into a message, then the publish of that message (a trivial relay's callback).  A
sink process subscribes to the efforts, the relay's topic and every reaction-wrench topic, so
DDS delivers everything.  An older node without the raw callback gets rclpy's decoding and its
message callback timed (``git worktree`` an old commit and run this file there).
Between two calls the process sleeps 0.8 ms and (unless ``--warm``) touches 8 MB, as a 1 kHz
node on a busy machine finds its caches.  Node and relay alternate call by call.

Prints per robot the median / p90 / p99 of: the whole node callback, the node up to the moment
its efforts message is out (the latency a controller sees), the relay's decode and publish,
and their ratio.  ``--breakdown`` also times the steps of the cycle (each wrapped, which adds
~0.3 us per step).  Rates and drops are ``bench_node.py``'s business.

Usage: python benchmarks/bench_node_cycle.py [--robots panda,talos_reduced] [--calls 3000]
       [--warm] [--breakdown]
"""

import argparse
import array
import functools
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
from rclpy.serialization import deserialize_message, serialize_message  # noqa: E402
from robots import urdf_path  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402

STEPS = {   # module attribute or class method -> label, for --breakdown
    ('rnea_ros.node.rnea_node', 'RneaNode._publish_efforts'): 'publish efforts',
    ('rnea_ros.node.rnea_node', 'RneaNode._publish_wrenches'): 'reaction wrenches (after)',
    ('rnea_ros.node.bookkeeping.joint_states', 'JointStateInput.update'): 'merge joint state',
    ('rnea_ros.node.outputs', 'inverse_dynamics'): 'inverse dynamics',
    ('rnea_ros.node.rnea_node', 'RneaNode._check_limits'): 'joint limit guard',
    ('rnea_ros.node.bookkeeping.outputs', 'EffortLimiter.clamp'): 'clamp and output guard',
    ('rnea_ros.node.rnea_node', 'RneaNode._accelerations'): 'accelerations of the mode',
    ('rnea_ros.node.bookkeeping.joint_states', 'StampCheck.check'): 'stamp check',
}


def sink(robot):
    """Subscribe to the node's efforts and wrenches and to the relay's topic (DDS delivers)."""
    from rclpy.experimental import EventsExecutor
    from rnea_ros import RobotModel
    from rnea_ros.node.bookkeeping import topic_tokens
    model = RobotModel.from_urdf_file(urdf_path(robot))
    rclpy.init()
    node = rclpy.create_node('cycle_sink')
    for topic in ['/rnea/joint_efforts', '/relay/joint_efforts']:
        node.create_subscription(JointState, topic, lambda msg: None, 100)
    for token in topic_tokens(model.joint_names):
        node.create_subscription(WrenchStamped, f'/rnea/reaction_wrenches/{token}',
                                 lambda msg: None, 100)
    executor = EventsExecutor()
    executor.add_node(node)
    try:
        while rclpy.ok():
            executor.spin_once(timeout_sec=0.1)
    except KeyboardInterrupt:
        pass


def wrap_steps(times):
    """Wrap the cycle's steps with timers appending to ``times[label]``."""
    import importlib
    for (module, attr), label in STEPS.items():
        owner = importlib.import_module(module)
        *path, name = attr.split('.')
        for part in path:
            owner = getattr(owner, part)
        inner = getattr(owner, name)
        times[label] = []

        def timed(*args, _inner=inner, _label=label, **kwargs):
            start = time.perf_counter()
            try:
                return _inner(*args, **kwargs)
            finally:
                times[_label].append(time.perf_counter() - start)
        setattr(owner, name, functools.wraps(inner)(timed))


def measure(robot, args):
    """Return {series: microseconds array} for one robot."""
    from rclpy.experimental import EventsExecutor
    from rnea_ros.node.rnea_node import RneaNode
    steps = {}
    if args.breakdown:
        wrap_steps(steps)
    publish_efforts = RneaNode._publish_efforts
    out_at = [0.0]

    def marked(self, *a):
        publish_efforts(self, *a)
        out_at[0] = time.perf_counter()
    RneaNode._publish_efforts = marked
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get('PYTHONPATH', '')]))
    peer = subprocess.Popen([sys.executable, os.path.abspath(__file__), '--serve-sink', robot],
                            env=env, stderr=subprocess.DEVNULL)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=args.domain)
    try:
        node = RneaNode(context=context, parameter_overrides=[
            Parameter('urdf_file', value=urdf_path(robot)),
            Parameter('mode', value='gravity_compensation')])
        relay = rclpy.create_node('relay', context=context)
        relay_pub = relay.create_publisher(JointState, '/relay/joint_efforts', 10)
        executor = EventsExecutor(context=context)
        executor.add_node(node)
        executor.add_node(relay)
        model = node._rt.model
        end = time.monotonic() + 30.0
        while time.monotonic() < end and not (
                relay_pub.get_subscription_count() and node._efforts_pub.get_subscription_count()
                and all(pub.get_subscription_count() for pub in node._wrench_list)):
            executor.spin_once(timeout_sec=0.05)
        executor.spin_once(timeout_sec=0.05)     # the watchdog notes the wrench subscribers
        node._refresh_wrench_subscribers()
        raw = hasattr(node, '_on_joint_state_data')     # bytes in (wire.JointStateReader)
        mimic = {m[0] for m in model.mimic}
        names = [n for n in model.joint_names if n not in mimic]
        junk = np.zeros(1 << 20)
        series = {'node callback': [], 'node to efforts out': [], 'relay decode + publish': []}
        for _ in range(args.calls):
            for who in ('node', 'relay'):
                now = time.time_ns()
                msg = JointState(name=list(names), position=array.array('d', [0.01] * len(names)),
                                 velocity=array.array('d', [0.1] * len(names)))
                msg.header.stamp = Time(sec=now // 10**9, nanosec=now % 10**9)
                data = serialize_message(msg)
                if not args.warm:
                    junk += 1.0
                time.sleep(0.0008)
                start = time.perf_counter()
                if who == 'node':
                    if raw:
                        node._on_joint_state_data(data)
                    else:               # an older node: rclpy decodes, then the callback
                        node._on_joint_state(deserialize_message(data, JointState))
                    done = time.perf_counter()
                    series['node callback'].append(done - start)
                    series['node to efforts out'].append(out_at[0] - start)
                else:
                    relay_pub.publish(deserialize_message(data, JointState))
                    series['relay decode + publish'].append(time.perf_counter() - start)
        sends = len(steps.get('reaction wrenches (after)', []))
        node.destroy_node()
        relay.destroy_node()
    finally:
        RneaNode._publish_efforts = publish_efforts
        rclpy.shutdown(context=context)
        peer.terminate()
        peer.wait(timeout=10)
    skip = args.calls // 20      # the first calls: caches, numba, DDS settle
    result = {k: 1e6 * np.asarray(v[skip:]) for k, v in series.items()}
    result.update({k: 1e6 * np.asarray(v[skip:]) for k, v in steps.items() if v})
    result['_sends'] = sends
    return result


def main():
    """Parse arguments, measure each robot, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--robots', default='panda,talos_reduced')
    parser.add_argument('--calls', type=int, default=3000, help='calls each of node and relay')
    parser.add_argument('--warm', action='store_true', help='do not evict caches between calls')
    parser.add_argument('--breakdown', action='store_true', help='time the steps of the cycle')
    parser.add_argument('--domain', type=int, default=random.randint(100, 200),
                        help='ROS domain (default: a random one of 100-200)')
    parser.add_argument('--serve-sink', help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve_sink:
        return sink(args.serve_sink)
    os.environ['ROS_DOMAIN_ID'] = str(args.domain)
    state = 'warm' if args.warm else 'caches evicted'
    print(f'node joint-state callback vs relay decode + publish, {args.calls} calls each, '
          f'{state} between calls, sleep 0.8 ms, '
          f'gravity_compensation, every reaction-wrench topic subscribed (10 Hz)\n')
    print('| robot | series | median us | p90 us | p99 us | median / relay |')
    print('|---|---|---|---|---|---|')
    for robot in args.robots.split(','):
        result = measure(robot, args)
        relay = np.median(result['relay decode + publish'])
        for name, values in result.items():
            if name.startswith('_'):
                continue
            print(f'| {robot} | {name} | {np.median(values):.1f} | '
                  f'{np.percentile(values, 90):.1f} | {np.percentile(values, 99):.1f} | '
                  f'{np.median(values) / relay:.2f} |')


if __name__ == '__main__':
    main()
