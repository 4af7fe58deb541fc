"""The launch helpers, and the launch files themselves when ``launch`` is importable."""

import importlib.util
import os

import pytest
from rnea_ros.node import launch_helpers as lh
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH_FILES = ('rnea.launch.py', 'gravity_compensation.launch.py')


def _config(**kwargs):
    config = {name: default for name, default, _ in lh.arguments()}
    config.update(kwargs)
    return config


def test_default_params_file_is_the_package_rnea_yaml():
    path = lh.resolve_params_file('')
    assert os.path.basename(path) == 'rnea.yaml'
    with open(path, encoding='utf-8') as f:
        assert 'ros__parameters' in yaml.safe_load(f)['/**']


def test_gravity_compensation_defaults_point_at_its_yaml_and_mode():
    rows = {name: default for name, default, _ in lh.arguments(lh.GRAVITY_COMPENSATION_DEFAULTS)}
    assert os.path.basename(rows['params_file']) == 'gravity_compensation.yaml'
    assert os.path.isfile(rows['params_file'])
    assert rows['mode'] == 'gravity_compensation'
    assert rows['command_topic'] == '/effort_controller/commands'


def test_rnea_launch_declares_every_argument_the_issue_names():
    names = {name for name, _, _ in lh.arguments()}
    assert {'urdf_file', 'mode', 'params_file', 'command_topic', 'namespace',
            'use_sim_time'} <= names


def test_empty_arguments_leave_the_params_file_in_charge():
    params_file, overrides = lh.rnea_parameters(_config())
    assert params_file.endswith('rnea.yaml')
    assert overrides == {}      # use_sim_time too: a params file's value is not overridden


def test_set_arguments_override_the_params_file():
    config = _config(urdf_file='robot.urdf', mode='gravity_compensation',
                     command_topic='/effort_controller/commands',
                     command_joints='[a, b ,c]', use_sim_time='true')
    _, overrides = lh.rnea_parameters(config)
    assert overrides['urdf_file'] == os.path.abspath('robot.urdf')
    assert overrides['mode'] == 'gravity_compensation'
    assert overrides['command_topic'] == '/effort_controller/commands'
    assert overrides['command_joints'] == ['a', 'b', 'c']
    assert overrides['use_sim_time'] is True


def test_bad_boolean_argument_is_refused_with_its_name():
    with pytest.raises(ValueError, match='use_sim_time'):
        lh.rnea_parameters(_config(use_sim_time='maybe'))


def test_node_kwargs_name_the_installed_executable_and_namespace():
    kwargs = lh.rnea_node_kwargs(_config(namespace='arm'))
    assert (kwargs['package'], kwargs['executable'], kwargs['name']) == \
        ('rnea_ros', 'rnea_node', 'rnea')
    assert kwargs['namespace'] == 'arm'


def test_robot_state_publisher_only_on_request_and_with_the_urdf(tmp_path):
    assert lh.robot_state_publisher_kwargs(_config()) is None
    with pytest.raises(ValueError, match='urdf_file'):
        lh.robot_state_publisher_kwargs(_config(publish_robot_description='true'))
    urdf = tmp_path / 'r.urdf'
    urdf.write_text('<robot name="r"><link name="base"/></robot>')
    kwargs = lh.robot_state_publisher_kwargs(
        _config(publish_robot_description='true', urdf_file=str(urdf)))
    assert kwargs['parameters'][0]['robot_description'] == urdf.read_text()


def _launch_modules():
    try:
        from launch import LaunchDescription  # noqa: F401 (not the repo's launch/ folder)
        import launch_ros.actions  # noqa: F401
    except ImportError as exc:
        pytest.skip(f'launch/launch_ros not importable here ({exc}); they come with a ROS 2 '
                    'install, not from PyPI')


def _load(filename):
    path = os.path.join(ROOT, 'launch', filename)
    spec = importlib.util.spec_from_file_location(filename.replace('.', '_'), path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


@pytest.mark.parametrize('filename', LAUNCH_FILES)
def test_launch_file_loads_and_yields_the_rnea_node(filename):
    _launch_modules()
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch.utilities import perform_substitutions
    from launch_ros.actions import Node

    description = _load(filename)
    declared = [e for e in description.entities if isinstance(e, DeclareLaunchArgument)]
    assert {a.name for a in declared} == {name for name, _, _ in lh.arguments()}
    context = LaunchContext()
    for argument in declared:
        context.launch_configurations[argument.name] = perform_substitutions(
            context, argument.default_value)
    opaque = [e for e in description.entities if isinstance(e, OpaqueFunction)]
    actions = opaque[0].execute(context)
    nodes = [a for a in actions if isinstance(a, Node)]
    assert len(nodes) == 1
    text = [value if isinstance(value, str) else perform_substitutions(context, value)
            for value in (nodes[0].node_package, nodes[0].node_executable)]
    assert text == ['rnea_ros', 'rnea_node']
