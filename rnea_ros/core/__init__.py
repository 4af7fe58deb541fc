"""The dynamics core: no ROS, no MuJoCo."""
