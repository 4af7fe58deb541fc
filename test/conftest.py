"""Test-run setup: each pytest-xdist worker's ROS participants keep to a domain slice of its own.

``make test`` runs two workers (``--dist loadfile``: one module at a time on each), so two ROS
tests can run at once. Every test names its domain through :func:`ros_domains.pick`; anything
started without one (``rclpy.init()`` with no domain id, ``ros2 launch``, a subprocess) takes
``ROS_DOMAIN_ID``, which is set here to a domain of this worker's slice. Without xdist the
whole range is one slice.
"""
import os

import ros_domains


def pytest_configure(config):
    """Set this worker's default ROS_DOMAIN_ID (its slice of RNEA_TEST_DOMAINS)."""
    workerinput = getattr(config, 'workerinput', None)
    if workerinput is not None:
        os.environ['PYTEST_XDIST_WORKER'] = workerinput['workerid']
        os.environ['PYTEST_XDIST_WORKER_COUNT'] = str(workerinput['workercount'])
    os.environ['ROS_DOMAIN_ID'] = str(ros_domains.pick())
