"""ROS_DOMAIN_IDs for tests: each pytest-xdist worker draws from a slice of its own.

Tests that start ROS participants (rclpy, the demo's processes, ``ros2 launch``) run on both
workers of ``make test`` at once. Two participants on one domain hear each other, so every test
takes its domain from :func:`pick`, which draws from the calling worker's slice of the range
``RNEA_TEST_DOMAINS`` (``LO-HI``, inclusive; default 1-230, Fast DDS' ports allow up to 232).
Within one worker the modules run one after another (``--dist loadfile``).
"""
import os
import random
import re

DEFAULT = '1-230'
HIGHEST = 232          # the highest domain id whose ports fit (Fast DDS, Cyclone DDS)


def domain_range(text=None):
    """Return (lo, hi) of ``RNEA_TEST_DOMAINS`` (or ``text``); ValueError if malformed."""
    text = os.environ.get('RNEA_TEST_DOMAINS', DEFAULT) if text is None else text
    match = re.fullmatch(r'\s*(\d+)\s*-\s*(\d+)\s*', text)
    if not match:
        raise ValueError(f'RNEA_TEST_DOMAINS must read LO-HI (e.g. {DEFAULT}), got {text!r}')
    lo, hi = int(match.group(1)), int(match.group(2))
    if not 0 <= lo <= hi <= HIGHEST:
        raise ValueError(f'RNEA_TEST_DOMAINS {text!r}: need 0 <= LO <= HI <= {HIGHEST}')
    return lo, hi


def worker_range(worker=None, count=None, text=None):
    """Return (lo, hi) of the slice of xdist worker ``worker`` (``gw<k>``) of ``count``.

    Defaults: this process's ``PYTEST_XDIST_WORKER`` and ``PYTEST_XDIST_WORKER_COUNT``; without
    xdist the whole range. ValueError if the range has fewer domains than workers.
    """
    lo, hi = domain_range(text)
    worker = os.environ.get('PYTEST_XDIST_WORKER', '') if worker is None else worker
    count = int(os.environ.get('PYTEST_XDIST_WORKER_COUNT', '1')) if count is None else count
    match = re.fullmatch(r'gw(\d+)', worker)
    if not match or count <= 1:
        return lo, hi
    index, size = int(match.group(1)), (hi - lo + 1) // count
    if size < 1:
        raise ValueError(f'RNEA_TEST_DOMAINS {lo}-{hi} has fewer domains than {count} workers')
    return lo + index * size, lo + (index + 1) * size - 1


def pick():
    """Return a random domain id of this worker's slice."""
    return random.randint(*worker_range())
