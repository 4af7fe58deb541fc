"""The MuJoCo simulator, its ROS nodes (simulator, reference publisher) and launch helpers."""
