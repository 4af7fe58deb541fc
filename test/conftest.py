"""Test-run layout: with pytest-xdist (``make test`` runs two workers), no two ROS tests at once.

Tests that start ROS participants (rclpy, the demo's processes, ``ros2 launch``) pick their
ROS_DOMAIN_ID per module, some at random; two of them in parallel could hear each other. Every
module that uses ROS (its text or a test helper it imports names ``rclpy`` or a domain id) goes
into one xdist group, which one worker runs in file order; every other module is a group of
its own, so that its module-scoped fixtures are computed once. Without xdist this changes
nothing.
"""
import os
import re

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROS_WORDS = re.compile(r'\brclpy\b|DOMAIN_ID')
HELPER_IMPORT = re.compile(r'^\s*(?:from|import)\s+(\w+)', re.MULTILINE)
_uses_ros = {}


def uses_ros(path):
    """Return whether the test module at ``path`` (or a test helper it imports) uses ROS."""
    if path not in _uses_ros:
        _uses_ros[path] = False                      # a cycle of helpers ends here
        with open(path, encoding='utf-8') as stream:
            text = stream.read()
        helpers = [os.path.join(HERE, name + '.py') for name in HELPER_IMPORT.findall(text)]
        _uses_ros[path] = bool(ROS_WORDS.search(text)) or any(
            uses_ros(helper) for helper in helpers if os.path.isfile(helper))
    return _uses_ros[path]


def group_of(path):
    """Return the xdist group of the test module at ``path``: 'ros' or the module itself."""
    return 'ros' if uses_ros(path) else os.path.relpath(path, HERE)


def pytest_collection_modifyitems(config, items):
    """Mark each test with its module's xdist group (the shared 'ros' one or its own)."""
    for item in items:
        item.add_marker(pytest.mark.xdist_group(group_of(str(item.fspath))))


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """With ``--dist loadgroup``, schedule by :func:`group_of` (the marks alone do not).

    xdist 3.8 groups tests by appending the group to each test's id, which pytest 9 no longer
    lets it change: every test would then be a group of its own and ROS modules would run on
    both workers at once.  This scheduler reads the group from the test's module instead.
    """
    if config.getvalue('dist') != 'loadgroup':
        return None
    from xdist.scheduler import LoadScopeScheduling

    root = str(config.rootpath)

    class ModuleGroupScheduling(LoadScopeScheduling):
        """xdist's scheduling by scope, a test's scope being its module's group."""

        def _split_scope(self, nodeid):
            return group_of(os.path.join(root, nodeid.split('::')[0]))

    return ModuleGroupScheduling(config, log)
