"""The FollowJointTrajectory proxy: goals reach the controller's action with their efforts filled.

Needs control_msgs (a ROS 2 install; not on PyPI): skipped by name where it is missing.  A fake
controller (an action server in the test) records what it receives and succeeds.
"""

import time

import numpy as np
import pytest

control_msgs_action = pytest.importorskip(
    'control_msgs.action', reason='control_msgs is not installed (ROS 2 install only, not on '
    'PyPI): the FollowJointTrajectory proxy cannot be tested here')

import rclpy  # noqa: E402 (after the skip)
from rclpy.action import ActionClient, ActionServer  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rnea_ros import inverse_dynamics, RobotModel  # noqa: E402
import ros_domains  # noqa: E402
from test_feedforward import full_state, motion, PANDA, SHUFFLED, trajectory  # noqa: E402

FollowJointTrajectory = control_msgs_action.FollowJointTrajectory


def test_goal_is_filled_forwarded_and_its_result_returned():
    from rnea_ros.feedforward.action_proxy import FollowJointTrajectoryProxy
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domains.pick())
    executor = SingleThreadedExecutor(context=context)
    received = []

    def controller(goal_handle):
        received.append(goal_handle.request.trajectory)
        goal_handle.succeed()
        return FollowJointTrajectory.Result(error_code=0)

    peer = rclpy.create_node('peer', context=context)
    ActionServer(peer, FollowJointTrajectory,
                 '/joint_trajectory_controller/follow_joint_trajectory', controller)
    proxy = FollowJointTrajectoryProxy(context=context, parameter_overrides=[
        Parameter('urdf_file', value=PANDA)])
    client = ActionClient(peer, FollowJointTrajectory, '/follow_joint_trajectory')
    for node in (peer, proxy):
        executor.add_node(node)

    def call(goal):
        end = time.monotonic() + 10.0
        while not (client.server_is_ready() and proxy._client.server_is_ready()):
            assert time.monotonic() < end
            executor.spin_once(timeout_sec=0.05)
        future = client.send_goal_async(goal)
        executor.spin_until_future_complete(future, timeout_sec=10.0)
        result = future.result().get_result_async()
        executor.spin_until_future_complete(result, timeout_sec=10.0)
        return result.result().result

    try:
        t, P, V, A = motion(20, seed=6)
        result = call(FollowJointTrajectory.Goal(trajectory=trajectory(SHUFFLED, t, P, V, A)))
        assert result.error_code == 0 and len(received) == 1
        model = RobotModel.from_urdf_file(PANDA)
        q, qd, qdd = full_state(model, SHUFFLED, P[5], V[5], A[5])
        q[7:] = 0.0                   # no hold_positions here: the fingers at 0
        tau = inverse_dynamics(model, q, qd, qdd)
        np.testing.assert_allclose(received[0].points[5].effort, [
            tau[list(model.joint_names).index(n)] for n in SHUFFLED], atol=1e-9)
        bad = trajectory(SHUFFLED[:6] + ['gripper'], t, P, V, A)
        result = call(FollowJointTrajectory.Goal(trajectory=bad))
        assert result.error_code == FollowJointTrajectory.Result.INVALID_GOAL
        assert 'gripper' in result.error_string and len(received) == 1
    finally:
        executor.shutdown()
        proxy.destroy_node()
        peer.destroy_node()
        rclpy.shutdown(context=context)
