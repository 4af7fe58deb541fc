"""MuJoCo-simulated robot driven by the rnea node (the demo's processes on a ROS 2 install).

    ros2 launch rnea_ros mujoco_demo.launch.py [urdf_file:=robot.urdf]
        [mode:=computed_torque|gravity_compensation] [lock_step:=true] [kp:=400.0] [kd:=40.0]

Starts mujoco_sim (the panda of example-robot-data when installed, else the shipped arm6, at a
non-trivial pose, 1 kHz, /joint_states + /clock stamped with simulated time, efforts from
/effort_controller/commands), the rnea node (command_topic to the simulator) and, in
computed_torque mode, reference_trajectory (a sinusoid on /rnea/reference). The scenario is
built by rnea_ros.sim.sim_launch (unit-tested); `python -m rnea_ros.demo` runs the same
scenario and prints the figures.
"""

from launch import LaunchDescription
from launch.actions import OpaqueFunction

from rnea_ros.sim.sim_launch import declare, MUJOCO_DEMO_ARGUMENTS, mujoco_demo_launch_setup


def generate_launch_description():
    """Declare the arguments and start the simulator, the rnea node and the reference."""
    return LaunchDescription(declare(MUJOCO_DEMO_ARGUMENTS) +
                             [OpaqueFunction(function=mujoco_demo_launch_setup)])
