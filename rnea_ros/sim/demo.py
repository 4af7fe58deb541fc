"""Former home of the demo: ``python -m rnea_ros.sim.demo`` runs ``python -m rnea_ros.demo``.

The demo moved to :mod:`rnea_ros.demo`. This alias replaces its process with the new command
(no import: the simulator layer does not depend on the demo above it).
"""
import os
import sys

if __name__ == '__main__':
    os.execv(sys.executable, [sys.executable, '-m', 'rnea_ros.demo'] + sys.argv[1:])
