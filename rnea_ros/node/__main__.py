"""``python -m rnea_ros.node``: run the rnea node (same as ``ros2 run rnea_ros rnea_node``).

Through :func:`rnea_ros.entry_points.run`, as the console script: Ctrl-C or SIGTERM during the
imports (numba's first compile) ends it quietly with code 0, a missing dependency is one line.
"""
import sys

from rnea_ros.entry_points import run

sys.exit(run('rnea_ros.node.rnea_node', 'rnea_node', early_stop=True))
