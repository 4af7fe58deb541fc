"""The executor choice: rclpy's EventsExecutor where it exists, SingleThreadedExecutor where not.

rclpy has ``rclpy.experimental.EventsExecutor`` on Jazzy and Kilted, not on Humble.  The nodes
(:func:`rnea_ros.node.rnea_node.make_executor`, :func:`rnea_ros.sim.ros_helpers` for the
simulator) fall back to the SingleThreadedExecutor when it cannot be imported.  Here the
fallback is exercised by making ``rclpy.experimental`` unimportable in a fresh process (an
import hook, as on a distribution without it) and running the rnea node there: it answers joint
states with the core's efforts and stops cleanly on SIGINT.
"""

import os
import signal
import subprocess
import sys
import time

import numpy as np
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.node.launch_helpers import shipped_urdf_file
import ros_domains
from sensor_msgs.msg import JointState

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

HIDE = """
import sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name == 'rclpy.experimental' or name.startswith('rclpy.experimental.'):
            raise ModuleNotFoundError(f"No module named '{name}'", name=name)
sys.meta_path.insert(0, _Hide())
assert 'rclpy.experimental' not in sys.modules
"""

NODE = HIDE + """
from rnea_ros.node import rnea_node
made = rnea_node.make_executor
def make(kind='events'):
    executor = made(kind)
    print('executor', type(executor).__name__, file=sys.stderr, flush=True)
    return executor
rnea_node.make_executor = make
sys.exit(rnea_node.main(['rnea_node', '--ros-args', '-p', 'urdf_file:={urdf}']))
"""


def run_python(code):
    """Run ``code`` in a fresh interpreter on a private domain; return the completed process."""
    env = dict(os.environ, PYTHONPATH=ROOT, ROS_DOMAIN_ID=str(ros_domains.pick()))
    return subprocess.run([sys.executable, '-c', code], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)


def test_events_executor_is_the_default_where_rclpy_has_it():
    code = """
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rnea_ros.node.rnea_node import make_executor
try:
    from rclpy.experimental import EventsExecutor
    expected = 'EventsExecutor'
except ImportError:
    expected = 'SingleThreadedExecutor'          # Humble: the fallback
rclpy.init()
assert type(make_executor('events')).__name__ == expected   # a pybind11 class on Kilted
assert type(make_executor('single')) is SingleThreadedExecutor
rclpy.shutdown()
print('default', expected)
"""
    result = run_python(code)
    assert result.returncode == 0 and 'default' in result.stdout, result.stderr


def test_without_events_executor_both_choosers_fall_back_to_single_threaded():
    code = HIDE + """
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rnea_ros.node.rnea_node import make_executor
from rnea_ros.sim.ros_helpers import make_executor as sim_make_executor
rclpy.init()
assert type(make_executor('events')) is SingleThreadedExecutor
assert type(sim_make_executor()) is SingleThreadedExecutor
rclpy.shutdown()
print('fell back')
"""
    result = run_python(code)
    assert result.returncode == 0 and 'fell back' in result.stdout, result.stderr


def test_node_runs_on_the_fallback_executor_and_answers_with_core_efforts():
    """The rnea node where EventsExecutor is missing: efforts = ID(q, qd, 0); SIGINT exits 0."""
    domain = ros_domains.pick()
    urdf = shipped_urdf_file()
    model = RobotModel.from_urdf_file(urdf)
    env = dict(os.environ, PYTHONPATH=ROOT, ROS_DOMAIN_ID=str(domain), PYTHONUNBUFFERED='1')
    process = subprocess.Popen([sys.executable, '-c', NODE.replace('{urdf}', urdf)], cwd=ROOT,
                               env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=domain)
    peer = rclpy.create_node('fallback_peer', context=context)
    executor = SingleThreadedExecutor(context=context)
    executor.add_node(peer)
    efforts = []
    peer.create_subscription(JointState, '/rnea/joint_efforts', efforts.append, 10)
    publisher = peer.create_publisher(JointState, '/joint_states', 10)
    q = np.linspace(-0.5, 0.5, model.nq)
    qd = np.linspace(0.3, -0.3, model.nv)
    try:
        end = time.monotonic() + 120.0
        while not efforts and time.monotonic() < end and process.poll() is None:
            msg = JointState(name=list(model.joint_names), position=q.tolist(),
                             velocity=qd.tolist())
            msg.header.stamp.sec = 5
            publisher.publish(msg)
            executor.spin_once(timeout_sec=0.05)
        assert efforts, 'no efforts from the node'
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
        executor.shutdown()
        peer.destroy_node()
        rclpy.shutdown(context=context)
    assert process.returncode == 0, stderr
    assert 'executor SingleThreadedExecutor' in stderr, stderr
    np.testing.assert_allclose(efforts[-1].effort,
                               inverse_dynamics(model, q, qd, np.zeros(model.nv)), atol=1e-9)
