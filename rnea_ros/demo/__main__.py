"""``python -m rnea_ros.demo``: run the demo (see :mod:`rnea_ros.demo.runner`)."""
import sys

from rnea_ros.demo.runner import main

if __name__ == '__main__':
    sys.exit(main())
