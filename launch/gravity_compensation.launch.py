"""Gravity compensation on real hardware whose ros2_control stack is already running.

    ros2 launch rnea_ros gravity_compensation.launch.py command_joints:=j1,j2,...  (required)
        [urdf_file:=robot.urdf] [params_file:=my_gravity_compensation.yaml]
        [command_topic:=effort_controller/commands] [namespace:=arm]

Starts the rnea node in gravity_compensation mode with config/gravity_compensation.yaml: command
output disabled until `ros2 service call /rnea/enable std_srvs/srv/SetBool "{data: true}"`,
then ramped in; efforts clamped; watchdog on joint states.  See that YAML file for each setting.
Refuses to start without command_joints (argument or params_file): the effort controller's
joint order is not the URDF's in general.  launch/gravity_compensation.launch.xml is the same.
"""

from launch import LaunchDescription
from launch.actions import OpaqueFunction
from rnea_ros.node.launch_helpers import (arguments, declare_arguments,
                                          GRAVITY_COMPENSATION_DEFAULTS,
                                          gravity_compensation_launch_setup)


def generate_launch_description():
    """Declare the arguments (hardware defaults) and start the node from them."""
    return LaunchDescription(declare_arguments(arguments(GRAVITY_COMPENSATION_DEFAULTS)) +
                             [OpaqueFunction(function=gravity_compensation_launch_setup)])
