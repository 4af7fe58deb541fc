"""FollowJointTrajectory with feed-forward: the action MoveIt sends, filled, then forwarded.

An action server (``action_name``, default ``follow_joint_trajectory`` in the node's namespace;
point MoveIt's controller entry at it) takes each goal, fills ``goal.trajectory``'s efforts
exactly as the topic node does (:func:`rnea_ros.feedforward.messages.fill_trajectory`), and
sends the goal to the controller's own action (``controller_action``, default
``joint_trajectory_controller/follow_joint_trajectory``).  Feedback and the result come back
unchanged; a cancel is passed on.  A trajectory that cannot be filled ends the goal with
``INVALID_GOAL`` and the reason in ``error_string``; nothing reaches the controller.

The node is :class:`rnea_ros.feedforward.node.TrajectoryFeedforwardNode` (same parameters and
model, the topic interface too) plus this action layer.  It needs ``control_msgs``, which comes
with a ROS 2 install (``ros-$ROS_DISTRO-control-msgs``), not from PyPI: without it this module
does not import and the ``feedforward_action_proxy`` program says so in one line.
"""

import sys

from action_msgs.msg import GoalStatus
from control_msgs.action import FollowJointTrajectory
from rcl_interfaces.msg import ParameterDescriptor
import rclpy
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rnea_ros.feedforward.messages import fill_trajectory
from rnea_ros.feedforward.node import TrajectoryFeedforwardNode


class FollowJointTrajectoryProxy(TrajectoryFeedforwardNode):
    """The feed-forward node with a FollowJointTrajectory server in front of the controller's."""

    def __init__(self, **kwargs):
        """Create the node, the action server and the client of the controller's action."""
        kwargs.setdefault('node_name', 'feedforward_action_proxy')
        super().__init__(**kwargs)
        read_only = ParameterDescriptor(read_only=True)
        name = self.declare_parameter('action_name', 'follow_joint_trajectory',
                                      read_only).value
        target = self.declare_parameter(
            'controller_action', 'joint_trajectory_controller/follow_joint_trajectory',
            read_only).value
        self._forwarded, self._target = {}, target
        self._client = ActionClient(self, FollowJointTrajectory, target)
        self._server = ActionServer(self, FollowJointTrajectory, name, self._execute,
                                    goal_callback=lambda goal: GoalResponse.ACCEPT,
                                    cancel_callback=self._cancel)

    def fill_goal(self, goal):
        """Fill ``goal.trajectory`` in place; return None or why it cannot be filled."""
        if self._filler is None:
            return 'no robot model yet (robot_description topic or parameter, or urdf_file)'
        try:
            fill_trajectory(self._filler, goal.trajectory)
        except ValueError as exc:
            return str(exc)
        return None

    async def _execute(self, goal_handle):
        result = FollowJointTrajectory.Result()
        goal = goal_handle.request
        error = self.fill_goal(goal)
        if error is None and not self._client.server_is_ready():
            error = f'the controller action {self._target} is not available'
        if error is not None:
            self._log.error(f'goal refused, nothing forwarded: {error}')
            result.error_code = FollowJointTrajectory.Result.INVALID_GOAL
            result.error_string = f'feed-forward: {error}'
            goal_handle.abort()
            return result
        sent = await self._client.send_goal_async(
            goal, feedback_callback=lambda msg: goal_handle.publish_feedback(msg.feedback))
        if not sent.accepted:
            result.error_code = FollowJointTrajectory.Result.INVALID_GOAL
            result.error_string = 'the controller rejected the goal'
            goal_handle.abort()
            return result
        key = bytes(goal_handle.goal_id.uuid)
        self._forwarded[key] = sent
        try:
            response = await sent.get_result_async()
        finally:
            self._forwarded.pop(key, None)
        if response.status == GoalStatus.STATUS_SUCCEEDED:
            goal_handle.succeed()
        elif response.status == GoalStatus.STATUS_CANCELED and goal_handle.is_cancel_requested:
            goal_handle.canceled()
        else:
            goal_handle.abort()
        return response.result

    def _cancel(self, goal_handle):
        sent = self._forwarded.get(bytes(goal_handle.goal_id.uuid))
        if sent is not None:
            sent.cancel_goal_async()
        return CancelResponse.ACCEPT


def main(args=None, stop=None):
    """Run the proxy until Ctrl-C / SIGTERM; return the exit code."""
    import signal
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions
    from rnea_ros.node.rnea_node import serve
    stop = [] if stop is None else stop
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.append(True))
    rclpy.init(args=sys.argv if args is None else args,
               signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = FollowJointTrajectoryProxy()
    except (ValueError, OSError) as exc:
        print(f'feedforward_action_proxy: cannot start: {exc}', file=sys.stderr)
        rclpy.try_shutdown()
        return 1
    executor = SingleThreadedExecutor()     # async execute callbacks await the controller
    return serve(node, executor, stop)


if __name__ == '__main__':
    sys.exit(main())
