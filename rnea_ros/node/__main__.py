"""``python -m rnea_ros.node``: run the rnea node (same as ``ros2 run rnea_ros rnea_node``)."""
import sys

from rnea_ros.node.rnea_node import main

sys.exit(main())
