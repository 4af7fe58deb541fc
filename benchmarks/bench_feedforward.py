"""What trajectory feed-forward adds to a relay of the same trajectory, in one process.

    python benchmarks/bench_feedforward.py [--points 1000] [--repeats 41] [--robot panda]

A JointTrajectory of N points over the 7 panda arm joints (positions, velocities and
accelerations; and a second run with positions and velocities only, where the filler derives
the cubic segments' accelerations) is serialized once.  Each repeat times, interleaved:

- relay: ``deserialize_message`` then ``publish`` (what a plain relay node does with it);
- feed-forward: ``deserialize_message``, ``fill_trajectory`` (arrays, checks, inverse dynamics
  of every point, efforts written into the points), then ``publish``.

The publisher has one subscriber in another context of the same process (so publish really
serializes and sends).  Printed: median and minimum of each, of the fill step alone (the only
step the feed-forward adds to the relay's), and the fill step's median as a multiple of the
relay's.  Target: the fill adds <= 5 ms for 1000 points.
"""

import argparse
import os
import random
import statistics
import sys
import sysconfig
import time

import numpy as np
import rclpy
from rclpy.serialization import deserialize_message, serialize_message

sys.path.insert(0, os.path.join(os.path.dirname(__file__), '..'))

from rnea_ros import RobotModel  # noqa: E402
from rnea_ros.feedforward.filler import TrajectoryFiller  # noqa: E402
from rnea_ros.feedforward.messages import fill_trajectory  # noqa: E402
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint  # noqa: E402,I100

ROBOTS = {'panda': ('panda_description/urdf/panda.urdf', [f'panda_joint{i}' for i in range(1, 8)])}


def urdf(name):
    """Return the path of an example-robot-data URDF."""
    return os.path.join(sysconfig.get_paths()['purelib'], 'cmeel.prefix', 'share',
                        'example-robot-data', 'robots', ROBOTS[name][0])


def make_trajectory(joints, n, accelerations=True):
    """Return a JointTrajectory of n points of a smooth motion."""
    rng = np.random.default_rng(1)
    t = np.linspace(0.01, 10.0, n)
    w, a = rng.uniform(0.3, 1.5, len(joints)), rng.uniform(0.2, 1.0, len(joints))
    msg = JointTrajectory(joint_names=joints)
    for k in range(n):
        point = JointTrajectoryPoint(positions=(a * np.sin(w * t[k])).tolist(),
                                     velocities=(a * w * np.cos(w * t[k])).tolist())
        if accelerations:
            point.accelerations = (-a * w * w * np.sin(w * t[k])).tolist()
        point.time_from_start.sec = int(t[k])
        point.time_from_start.nanosec = int((t[k] - int(t[k])) * 1e9)
        msg.points.append(point)
    return msg


def measure(filler, data, publisher, repeats):
    """Return (relay, feed-forward, fill step) times in s, interleaved repeats."""
    relay, feedforward, fill = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        publisher.publish(deserialize_message(data, JointTrajectory))
        relay.append(time.perf_counter() - start)
        start = time.perf_counter()
        msg = deserialize_message(data, JointTrajectory)
        filling = time.perf_counter()
        fill_trajectory(filler, msg)
        filled = time.perf_counter()
        publisher.publish(msg)
        feedforward.append(time.perf_counter() - start)
        fill.append(filled - filling)
    return relay, feedforward, fill


def main():
    """Print the table."""
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--points', type=int, default=1000)
    parser.add_argument('--repeats', type=int, default=41)
    parser.add_argument('--robot', default='panda', choices=sorted(ROBOTS))
    options = parser.parse_args()
    domain = random.randint(100, 200)
    contexts = [rclpy.Context(), rclpy.Context()]
    for context in contexts:
        rclpy.init(context=context, domain_id=domain)
    node = rclpy.create_node('bench_feedforward', context=contexts[0])
    sink = rclpy.create_node('bench_sink', context=contexts[1])
    publisher = node.create_publisher(JointTrajectory, '/bench_trajectory', 10)
    sink.create_subscription(JointTrajectory, '/bench_trajectory', lambda msg: None, 10)
    end = time.monotonic() + 10.0
    while publisher.get_subscription_count() == 0 and time.monotonic() < end:
        time.sleep(0.05)
    model = RobotModel.from_urdf_file(urdf(options.robot))
    filler = TrajectoryFiller(model)
    joints = ROBOTS[options.robot][1]
    print(f'{options.robot}, {len(joints)} joints in the trajectory, {options.points} points, '
          f'{options.repeats} interleaved repeats (times in ms)')
    print('| points carry | relay median | relay min | feed-forward median | feed-forward min '
          '| fill step median | fill step min | fill / relay (medians) |')
    print('|---|---|---|---|---|---|---|---|')
    for label, accelerations in (('q, qd, qdd', True), ('q, qd (cubic qdd)', False)):
        data = serialize_message(make_trajectory(joints, options.points, accelerations))
        measure(filler, data, publisher, 3)                 # warm-up (numba, caches)
        relay, ff, fill = measure(filler, data, publisher, options.repeats)
        med = statistics.median
        print(f'| {label} | {1e3 * med(relay):.3f} | {1e3 * min(relay):.3f} | '
              f'{1e3 * med(ff):.3f} | {1e3 * min(ff):.3f} | {1e3 * med(fill):.3f} | '
              f'{1e3 * min(fill):.3f} | {med(fill) / med(relay):.2f}x |')
    node.destroy_node()
    sink.destroy_node()
    for context in contexts:
        rclpy.shutdown(context=context)


if __name__ == '__main__':
    main()
