"""The MuJoCo simulator, its ROS nodes, launch helpers and the demo."""
