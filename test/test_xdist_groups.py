"""``make test``'s two workers never run two modules that use ROS at once (test/conftest.py).

Runs pytest with ``-n 2 --dist loadgroup`` (as ``make test`` does) on two small modules that
start ROS nodes and one that does not, and reads from the verbose report which worker ran
each test: every test of the ROS modules on one worker, so that their nodes never share the
network with another ROS test.
"""
import os
import re
import subprocess
import sys

from conftest import group_of
import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
ROS_MODULES = ['test/test_executor_fallback.py', 'test/test_monitor.py']
OTHER_MODULE = 'test/test_friction.py'
REPORTED = re.compile(r'^\[(gw\d+)\].*?(PASSED|FAILED|SKIPPED|ERROR)\s+(\S+?)::', re.MULTILINE)


def test_the_modules_are_what_the_run_below_assumes():
    for module in ROS_MODULES:
        assert group_of(os.path.join(ROOT, module)) == 'ros', module
    assert group_of(os.path.join(ROOT, OTHER_MODULE)) == os.path.relpath(
        os.path.join(ROOT, OTHER_MODULE), HERE)


def test_every_test_of_the_ros_modules_runs_on_one_worker():
    pytest.importorskip('xdist')
    done = subprocess.run(
        [sys.executable, '-m', 'pytest', '-v', '-p', 'no:cacheprovider', '-n', '2',
         '--dist', 'loadgroup'] + ROS_MODULES + [OTHER_MODULE],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    workers = {}
    for worker, _, module in REPORTED.findall(done.stdout):
        workers.setdefault(module, set()).add(worker)
    assert set(workers) == set(ROS_MODULES + [OTHER_MODULE]), done.stdout[-3000:]
    ros_workers = set().union(*(workers[m] for m in ROS_MODULES))
    assert len(ros_workers) == 1, workers
