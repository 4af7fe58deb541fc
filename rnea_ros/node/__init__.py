"""The ROS 2 node (rclpy) and its launch-file helpers."""
