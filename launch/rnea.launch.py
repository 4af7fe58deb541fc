"""Start the rnea node.

    ros2 launch rnea_ros rnea.launch.py [urdf_file:=robot.urdf] [mode:=gravity_compensation]
        [params_file:=my.yaml] [command_topic:=effort_controller/commands]
        [command_joints:=j1,j2,...] [namespace:=arm] [use_sim_time:=true]
        [publish_robot_description:=true]

Without urdf_file the node reads the robot_description topic (e.g. from robot_state_publisher).
The logic lives in rnea_ros.node.launch_helpers (unit-tested); launch/rnea.launch.xml is the same
for XML launch files.
"""

from launch import LaunchDescription
from launch.actions import OpaqueFunction
from rnea_ros.node.launch_helpers import arguments, declare_arguments, rnea_launch_setup


def generate_launch_description():
    """Declare the arguments and start the node from them."""
    return LaunchDescription(declare_arguments(arguments()) +
                             [OpaqueFunction(function=rnea_launch_setup)])
