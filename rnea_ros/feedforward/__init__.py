"""Trajectory feed-forward: model efforts in the points of joint trajectories.

``filler`` (no ROS): :class:`TrajectoryFiller`, arrays in, efforts out.  ``messages``: a
trajectory_msgs/JointTrajectory to arrays and back.  ``node``: the ``trajectory_feedforward``
node (topic to topic).  ``action_proxy``: a FollowJointTrajectory action server that fills the
goal's trajectory and forwards it to the controller's action (needs control_msgs).
"""
