"""A user's machine has PyPI only: no module of rnea_ros needs what only ../shared provides.

``launch``, ``launch_ros``, ``ros2cli`` and ``rosidl_runtime_py`` are not on PyPI; developers
and CI get them from ``../shared/ros2-cli``, a user does not (issue 27). These tests hide them
and import every module of the package, read every import statement of the package, and check
the demo's own replacements for ``rosidl_runtime_py``. ``.ci/run`` also runs the README's
commands in a clean clone with no ``../shared`` beside it (``.ci/user_machine``).
"""
import ast
import os
import subprocess
import sys
import zipfile

import pytest
from rnea_ros.demo.processes import flatten_message, interface_class, message_fields, set_fields

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, 'rnea_ros')
SHARED_WHEELS = os.path.join(ROOT, '..', 'shared', 'ros2-cli', 'wheels')
# The top-level modules of ../shared/ros2-cli's wheels (checked against the wheels below).
SHARED_ONLY = frozenset({
    'composition_interfaces', 'launch', 'launch_ros', 'launch_xml', 'launch_yaml', 'ros2cli',
    'ros2interface', 'ros2launch', 'ros2lifecycle', 'ros2node', 'ros2param', 'ros2pkg', 'ros2run',
    'ros2service', 'ros2topic', 'rosidl_runtime_py'})
# Not on PyPI and not in ../shared either: modules that need them say so in one line.
ROS_INSTALL_ONLY = frozenset({'control_msgs'})

HIDE_AND_IMPORT_ALL = r"""
import importlib, importlib.abc, json, pkgutil, sys
HIDDEN = set(sys.argv[1].split(','))

class Hide(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split('.')[0] in HIDDEN:
            raise ModuleNotFoundError(f'No module named {name!r}', name=name)

sys.meta_path.insert(0, Hide())
import rnea_ros
failures = {}
names = [m.name for m in pkgutil.walk_packages(rnea_ros.__path__, 'rnea_ros.')
         if not m.name.endswith('.__main__')]   # those run a program
for name in names:
    try:
        importlib.import_module(name)
    except ImportError as error:
        failures[name] = [getattr(error, 'name', None) or '', str(error)]
print(json.dumps({'modules': names, 'failures': failures}))
"""


def wheel_top_levels(folder):
    """Return the top-level importable names of the wheels in ``folder``."""
    names = set()
    for wheel in os.listdir(folder):
        if wheel.endswith('.whl'):
            with zipfile.ZipFile(os.path.join(folder, wheel)) as archive:
                for entry in archive.namelist():
                    top = entry.split('/')[0]
                    if '.dist-info' not in top and '.data' not in top:
                        names.add(top[:-3] if top.endswith('.py') else top)
    return names


def import_statements(path):
    """Yield (line, top-level module) of every import statement of a source file."""
    with open(path, encoding='utf-8') as stream:
        tree = ast.parse(stream.read(), path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name.split('.')[0]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module.split('.')[0]


def package_sources():
    """Return every .py file of the rnea_ros package."""
    return sorted(os.path.join(folder, name) for folder, _, files in os.walk(PACKAGE)
                  for name in files if name.endswith('.py'))


def test_the_hidden_list_covers_every_module_of_the_shared_wheels():
    """SHARED_ONLY is what ../shared/ros2-cli installs, so the audit hides all of it."""
    if not os.path.isdir(SHARED_WHEELS):
        pytest.skip(f'{os.path.normpath(SHARED_WHEELS)} (the launch wheels) absent, as on a '
                    'user machine: nothing to compare the hidden list with')
    assert wheel_top_levels(SHARED_WHEELS) <= SHARED_ONLY


def test_no_import_statement_of_the_package_names_a_shared_only_module():
    """Function-level imports too: code paths a plain import never runs (the demo's recorder).

    The launch files' helpers reach launch/launch_ros through ``launch_helpers.launch_module``,
    which names their absence in one line.
    """
    found = [f'{os.path.relpath(path, ROOT)}:{line}: {module}'
             for path in package_sources() for line, module in import_statements(path)
             if module in SHARED_ONLY]
    assert found == []


def test_every_module_imports_with_the_shared_packages_hidden():
    """Import all of rnea_ros with launch, launch_ros, ros2cli, rosidl_runtime_py hidden.

    Only modules that need a ROS-install-only package (control_msgs) may fail, and then for
    that package alone.
    """
    result = subprocess.run(
        [sys.executable, '-c', HIDE_AND_IMPORT_ALL, ','.join(sorted(SHARED_ONLY))],
        cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    report = __import__('json').loads(result.stdout.strip().splitlines()[-1])
    assert len(report['modules']) > 50
    wrong = {name: failure for name, failure in report['failures'].items()
             if failure[0].split('.')[0] not in ROS_INSTALL_ONLY}
    assert wrong == {}


def test_launch_module_names_what_to_install_in_one_line(monkeypatch):
    """Without the launch packages the launch helpers raise one line saying where they come."""
    from rnea_ros.node import launch_helpers
    monkeypatch.setitem(sys.modules, 'launch_ros', None)     # import of it fails
    monkeypatch.setitem(sys.modules, 'launch_ros.actions', None)
    with pytest.raises(ImportError) as caught:
        launch_helpers.launch_module('launch_ros.actions')
    text = str(caught.value)
    assert '\n' not in text and 'launch_ros' in text and 'not from PyPI' in text


def test_interface_class_imports_generated_messages_and_services():
    """'pkg/msg/Name' and 'pkg/srv/Name' resolve to the generated classes; bad names refused."""
    from rcl_interfaces.srv import SetParametersAtomically
    from sensor_msgs.msg import JointState
    assert interface_class('sensor_msgs/msg/JointState') is JointState
    assert interface_class('rcl_interfaces/srv/SetParametersAtomically') is \
        SetParametersAtomically
    for bad in ('sensor_msgs/JointState', 'sensor_msgs/msg/NoSuchType', 'no_pkg/msg/X', ''):
        with pytest.raises(ValueError):
            interface_class(bad)


def test_set_fields_and_message_fields_round_trip_a_nested_message():
    """A nested request set from a dict reads back as the same dict of plain values."""
    from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
    from rcl_interfaces.srv import GetParameters
    request = set_fields(GetParameters.Request(), {'names': ['a', 'b']})
    assert list(request.names) == ['a', 'b']
    with pytest.raises(ValueError):
        set_fields(GetParameters.Request(), {'nope': 1})
    status = DiagnosticStatus(name='x', message='done',
                              values=[KeyValue(key='mass', value='1.5')])
    fields = message_fields(status)
    assert fields['message'] == 'done'
    assert fields['values'] == [{'key': 'mass', 'value': '1.5'}]
    assert flatten_message(status)['fields'] == fields
