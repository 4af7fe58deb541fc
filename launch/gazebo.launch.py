"""Gazebo (gz sim) + ros2_control effort interfaces driven by the rnea node.

    ros2 launch rnea_ros gazebo.launch.py [urdf_file:=robot.urdf]
        [controllers_file:=my_controllers.yaml] [mode:=gravity_compensation]
        [command_joints:=j1,j2,...] [world:=empty.sdf] [gz_version:=gz|ignition]

Adds a <ros2_control> block (effort command interfaces) and the gz_ros2_control plugin to the
URDF (rnea_ros.sim.ros2_control_urdf), starts Gazebo (ros_gz_sim), the /clock bridge,
robot_state_publisher, spawns the robot from /robot_description, then the
joint_state_broadcaster and effort_controller (effort_controllers/JointGroupEffortController,
config/gazebo_controllers.yaml) spawners and the rnea node with
command_topic:=/effort_controller/commands. The logic is in rnea_ros.sim.sim_launch (unit-tested).
Needs ros_gz_sim, ros_gz_bridge, robot_state_publisher, controller_manager, gz_ros2_control,
effort_controllers and joint_state_broadcaster (not in package.xml); stops naming the missing
ones with the apt command.
"""

from launch import LaunchDescription
from launch.actions import OpaqueFunction

from rnea_ros.sim.sim_launch import declare, GAZEBO_ARGUMENTS, gazebo_launch_setup


def generate_launch_description():
    """Declare the arguments and start Gazebo, the controllers and the rnea node."""
    return LaunchDescription(declare(GAZEBO_ARGUMENTS) +
                             [OpaqueFunction(function=gazebo_launch_setup)])
