"""The launch helpers, and the launch files themselves when ``launch`` is importable."""

import os
import sys

import pytest
from rnea_ros.node import launch_helpers as lh
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LAUNCH_FILES = ('rnea.launch.py', 'gravity_compensation.launch.py')
GC = lh.GRAVITY_COMPENSATION_DEFAULTS


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
    assert rows['command_topic'] == 'effort_controller/commands'


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
    """Skip unless the ROS 2 launch packages are importable (ROS install or ../shared wheels)."""
    try:
        from launch import LaunchDescription  # noqa: F401 (not the repo's launch/ folder)
        import launch_ros.actions  # noqa: F401
    except ImportError as exc:
        pytest.skip(f'launch/launch_ros not importable here ({exc}); they come with a ROS 2 '
                    'install, not from PyPI')
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)   # XML parsing reads launch's share


def _load(filename):
    """Return the launch description of a launch file of this source tree (.py or .xml)."""
    import launch
    from launch.launch_description_sources import AnyLaunchDescriptionSource
    path = os.path.join(ROOT, 'launch', filename)
    return AnyLaunchDescriptionSource(path).get_launch_description(launch.LaunchContext())


def text(context, value):
    """Return a Node property as text: a plain str (launch_ros >= 0.28) or substitutions."""
    from launch.utilities import perform_substitutions
    return value if isinstance(value, str) else perform_substitutions(context, value)


def declared_arguments(context, description):
    """Return {name: default} of the description's arguments, set into ``context`` too."""
    from launch.actions import DeclareLaunchArgument
    from launch.utilities import perform_substitutions
    declared = {}
    for argument in description.entities:
        if isinstance(argument, DeclareLaunchArgument):
            declared[argument.name] = perform_substitutions(context, argument.default_value)
            context.launch_configurations[argument.name] = declared[argument.name]
    return declared


@pytest.mark.parametrize('filename', LAUNCH_FILES)
def test_launch_file_loads_and_yields_the_rnea_node(filename):
    _launch_modules()
    from launch import LaunchContext
    from launch.actions import OpaqueFunction
    from launch_ros.actions import Node

    description = _load(filename)
    context = LaunchContext()
    declared = declared_arguments(context, description)
    assert set(declared) == {name for name, _, _ in lh.arguments()}
    context.launch_configurations['command_joints'] = 'a, b'    # required by gravity comp.
    opaque = [e for e in description.entities if isinstance(e, OpaqueFunction)]
    actions = opaque[0].execute(context)
    nodes = [a for a in actions if isinstance(a, Node)]
    assert len(nodes) == 1
    assert [text(context, nodes[0].node_package), text(context, nodes[0].node_executable)] == \
        ['rnea_ros', 'rnea_node']


@pytest.mark.parametrize('filename, defaults', [
    ('rnea.launch.xml', None), ('gravity_compensation.launch.xml', GC)])
def test_xml_launch_file_has_the_same_arguments_and_includes_the_python_one(filename, defaults):
    """Same names and defaults as the Python file (params_file: empty = the same YAML)."""
    _launch_modules()
    from launch import LaunchContext
    from launch.actions import IncludeLaunchDescription
    description = _load(filename)
    declared = declared_arguments(LaunchContext(), description)
    rows = {name: default for name, default, _ in lh.arguments(defaults)}
    assert declared.pop('params_file') == ''
    assert lh.resolve_params_file(
        (defaults or {}).get('params_file', '')) == rows.pop('params_file')
    assert declared == rows
    includes = [e for e in description.entities if isinstance(e, IncludeLaunchDescription)]
    assert len(includes) == 1
    context = LaunchContext()
    context.extend_locals({'current_launch_file_directory': os.path.join(ROOT, 'launch')})
    included = includes[0].launch_description_source.get_launch_description(context)
    assert declared_arguments(context, included).keys() == rows.keys() | {'params_file'}
    assert includes[0].launch_description_source.location == os.path.join(
        ROOT, 'launch', filename.replace('.xml', '.py'))


def test_gravity_compensation_refuses_without_command_joints(tmp_path):
    """No command_joints argument and none in params_file: ValueError naming the argument."""
    config = _config(**lh.GRAVITY_COMPENSATION_DEFAULTS)
    with pytest.raises(ValueError, match='needs command_joints'):
        lh.gravity_compensation_config(config)
    accepted = lh.gravity_compensation_config(dict(config, command_joints='j2, j1'))
    assert lh.rnea_parameters(accepted)[1]['command_joints'] == ['j2', 'j1']
    params = tmp_path / 'mine.yaml'
    params.write_text('rnea:\n  ros__parameters:\n    command_joints: [j1, j2]\n')
    assert lh.gravity_compensation_config(dict(config, params_file=str(params)))


def test_gravity_compensation_empty_arguments_take_the_hardware_defaults():
    """An XML include passes empty strings: mode, topic and YAML still the hardware ones."""
    config = lh.gravity_compensation_config(
        {name: '' for name, _, _ in lh.RNEA_ARGUMENTS} | {'command_joints': 'a'})
    params_file, overrides = lh.rnea_parameters(config)
    assert os.path.basename(params_file) == 'gravity_compensation.yaml'
    assert overrides['mode'] == 'gravity_compensation'
    assert overrides['command_topic'] == 'effort_controller/commands'


# -- issue 23 item 1: a user's params_file path wins; a missing one stops the launch ---------

def test_bare_params_file_name_is_read_from_the_working_directory(tmp_path, monkeypatch):
    """``params_file:=mine.yaml`` is the file in the working directory, as a shell reads it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'mine.yaml').write_text('/**:\n  ros__parameters:\n    mode: computed_torque\n')
    assert lh.resolve_params_file('mine.yaml') == str(tmp_path / 'mine.yaml')
    assert lh.rnea_parameters(_config(params_file='mine.yaml'))[0] == str(tmp_path / 'mine.yaml')


def test_users_file_wins_over_the_shipped_file_of_the_same_name(tmp_path, monkeypatch):
    """A ``gravity_compensation.yaml`` of the user's in the working directory is the one used."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'gravity_compensation.yaml').write_text('{}\n')
    config = lh.gravity_compensation_config(
        _config(params_file='gravity_compensation.yaml', command_joints='a'))
    assert lh.rnea_parameters(config)[0] == str(tmp_path / 'gravity_compensation.yaml')


def test_shipped_names_fall_back_to_the_installed_config(tmp_path, monkeypatch):
    """No such file here: a shipped name is the installed one (the documented defaults)."""
    monkeypatch.chdir(tmp_path)
    path = lh.resolve_params_file('gravity_compensation.yaml')
    assert path == os.path.join(lh.config_dir(), 'gravity_compensation.yaml')
    assert os.path.isfile(path)


def test_the_launch_says_which_parameter_file_the_node_gets(tmp_path, monkeypatch):
    """A line names the file: the user's, or the shipped one a bare name fell back to, and why.

    The fallback of a bare shipped name is otherwise invisible (a user's copy launched from
    another folder silently becomes the shipped defaults).
    """
    _launch_modules()
    from launch.actions import LogInfo
    monkeypatch.chdir(tmp_path)
    shipped = os.path.join(lh.config_dir(), 'gravity_compensation.yaml')
    line = lh.params_file_message(_config(params_file='gravity_compensation.yaml'))
    assert shipped in line and 'no file of that name in the working directory' in line
    assert str(tmp_path) in line
    (tmp_path / 'gravity_compensation.yaml').write_text('{}\n')
    line = lh.params_file_message(_config(params_file='gravity_compensation.yaml'))
    assert line == f'rnea parameters: {tmp_path / "gravity_compensation.yaml"}'
    assert 'installed default' in lh.params_file_message(_config(params_file=''))
    config = lh.gravity_compensation_config(
        _config(params_file='gravity_compensation.yaml', command_joints='a'))
    first = lh.rnea_actions(config)[0]
    assert isinstance(first, LogInfo)
    assert str(tmp_path / 'gravity_compensation.yaml') in ''.join(
        getattr(part, 'text', str(part)) for part in first.msg)


@pytest.mark.parametrize('value', ['missing.yaml', 'sub/missing.yaml', '/nowhere/missing.yaml'])
def test_missing_params_file_is_one_clear_line_not_a_silent_fallback(value, tmp_path,
                                                                     monkeypatch):
    """A file that is not there: ValueError, one line, naming the path and the folder tried."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as error:
        lh.rnea_parameters(_config(params_file=value))
    message = str(error.value)
    assert '\n' not in message and 'params_file' in message and value in message
    if not os.path.isabs(value):
        assert str(tmp_path) in message
    with pytest.raises(ValueError, match='params_file'):
        lh.gravity_compensation_config(_config(params_file=value, command_joints='a'))


def test_params_file_that_is_a_folder_is_refused(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'conf.yaml').mkdir()
    with pytest.raises(ValueError, match='not a regular file'):
        lh.resolve_params_file('conf.yaml')


@pytest.mark.parametrize('filename', LAUNCH_FILES)
def test_launch_file_passes_the_working_directory_params_file_to_the_node(
        filename, tmp_path, monkeypatch):
    """Through the launch file's own OpaqueFunction: the node gets the user's file."""
    _launch_modules()
    from launch import LaunchContext
    from launch.actions import OpaqueFunction
    from launch_ros.actions import Node
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'mine.yaml').write_text('/**:\n  ros__parameters:\n    command_joints: [a]\n')
    description = _load(filename)
    context = LaunchContext()
    declared_arguments(context, description)
    context.launch_configurations['params_file'] = 'mine.yaml'
    opaque = [e for e in description.entities if isinstance(e, OpaqueFunction)]
    node = [a for a in opaque[0].execute(context) if isinstance(a, Node)][0]
    files = [p.param_file for p in node._Node__parameters if not isinstance(p, dict)]
    assert [text(context, f) for f in files] == [str(tmp_path / 'mine.yaml')]
    context.launch_configurations['params_file'] = 'missing.yaml'
    with pytest.raises(ValueError, match='missing.yaml'):
        opaque[0].execute(context)


# -- issue 23 item 3: the hardware command topic follows the namespace ------------------------

def test_gravity_compensation_command_topic_is_relative_so_it_follows_the_namespace():
    """Two namespaced launches must not command one controller: no absolute default topic."""
    assert not GC['command_topic'].startswith('/')
    for name in ('gravity_compensation.yaml', 'rnea.yaml'):
        with open(os.path.join(ROOT, 'config', name), encoding='utf-8') as stream:
            topic = yaml.safe_load(stream)['/**']['ros__parameters']['command_topic']
        assert not topic.startswith('/'), (name, topic)
    with open(os.path.join(ROOT, 'launch', 'gravity_compensation.launch.xml')) as stream:
        xml = stream.read()
    assert 'default="/effort_controller' not in xml


# -- issue 23 item 9: the XML launch's refusal names the XML file -----------------------------

def test_gravity_compensation_refusal_names_the_launch_file_the_user_ran():
    config = _config(**GC)
    with pytest.raises(ValueError, match=r'gravity_compensation\.launch\.py needs'):
        lh.gravity_compensation_config(config)
    config[lh.LAUNCH_FILE_CONFIGURATION] = 'gravity_compensation.launch.xml'
    with pytest.raises(ValueError, match=r'gravity_compensation\.launch\.xml needs'):
        lh.gravity_compensation_config(config)


def test_gravity_compensation_xml_tells_the_python_file_its_own_name():
    _launch_modules()
    from launch import LaunchContext
    from launch.actions import IncludeLaunchDescription
    from launch.utilities import perform_substitutions
    include = [e for e in _load('gravity_compensation.launch.xml').entities
               if isinstance(e, IncludeLaunchDescription)][0]
    values = [value for name, value in include.launch_arguments
              if perform_substitutions(LaunchContext(), name) == lh.LAUNCH_FILE_CONFIGURATION]
    assert len(values) == 1
    assert perform_substitutions(LaunchContext(), values[0]) == 'gravity_compensation.launch.xml'


# -- issue 23 item 13: lifecycle, log_level, node_name, robot_description (URDF or xacro) ------

def test_lifecycle_node_name_and_log_level_arguments():
    """lifecycle:=true runs the managed node; node_name and log_level reach the process."""
    names = {name for name, _, _ in lh.arguments()}
    assert {'lifecycle', 'log_level', 'node_name', 'robot_description'} <= names
    kwargs = lh.rnea_node_kwargs(_config(lifecycle='true', node_name='left_arm',
                                         log_level='DEBUG'))
    assert kwargs['executable'] == 'rnea_lifecycle_node' and kwargs['name'] == 'left_arm'
    assert kwargs['arguments'][-3:] == ['--ros-args', '--log-level', 'debug']
    plain = lh.rnea_node_kwargs(_config())
    assert plain['executable'] == 'rnea_node' and plain['name'] == 'rnea'
    assert not plain.get('arguments')


@pytest.mark.parametrize('name, value, reason', [
    ('log_level', 'loud', 'log_level must be one of'),
    ('node_name', '2arm', 'node_name'),
    ('node_name', 'my/arm', 'node_name'),
    ('lifecycle', 'perhaps', 'lifecycle'),
])
def test_bad_launch_interface_values_are_refused_with_their_name(name, value, reason):
    with pytest.raises(ValueError, match=reason):
        lh.rnea_node_kwargs(_config(**{name: value}))


def test_robot_description_argument_takes_a_urdf_file_or_xml(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    xml = '<robot name="r"><link name="base"/></robot>'
    (tmp_path / 'r.urdf').write_text(xml)
    assert lh.rnea_parameters(_config(robot_description='r.urdf'))[1]['robot_description'] == xml
    assert lh.rnea_parameters(_config(robot_description=xml))[1]['robot_description'] == xml
    with pytest.raises(ValueError, match='robot_description.*missing.urdf'):
        lh.rnea_parameters(_config(robot_description='missing.urdf'))
    with pytest.raises(ValueError, match='not both'):
        lh.rnea_parameters(_config(robot_description='r.urdf', urdf_file='r.urdf'))
    rsp = lh.robot_state_publisher_kwargs(_config(robot_description='r.urdf',
                                                  publish_robot_description='true'))
    assert rsp['parameters'][0]['robot_description'] == xml


XACRO = """<?xml version="1.0"?>
<robot name="bar" xmlns:xacro="http://www.ros.org/wiki/xacro">
  <xacro:property name="mass" value="2.5"/>
  <xacro:macro name="body" params="name">
    <link name="${name}"><inertial><mass value="${mass}"/>
      <inertia ixx="0.1" iyy="0.1" izz="0.1" ixy="0" ixz="0" iyz="0"/></inertial></link>
  </xacro:macro>
  <xacro:body name="base"/>
  <xacro:body name="arm"/>
  <joint name="j1" type="revolute"><parent link="base"/><child link="arm"/>
    <axis xyz="0 0 1"/><limit lower="-1" upper="1" effort="10" velocity="1"/></joint>
</robot>
"""


def test_robot_description_xacro_is_expanded_when_xacro_is_installed(tmp_path, monkeypatch):
    pytest.importorskip('xacro', reason='xacro not installed (pip install xacro)')
    from rnea_ros import RobotModel
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'bar.urdf.xacro').write_text(XACRO)
    xml = lh.rnea_parameters(_config(robot_description='bar.urdf.xacro'))[1][
        'robot_description']
    model = RobotModel.from_urdf_string(xml)
    assert list(model.joint_names) == ['j1'] and abs(model.total_mass - 5.0) < 1e-12


def test_robot_description_xacro_without_xacro_says_how_to_get_it(tmp_path, monkeypatch):
    """Where xacro is missing: one line naming the file, xacro and how to install it."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / 'bar.urdf.xacro').write_text(XACRO)
    monkeypatch.setitem(sys.modules, 'xacro', None)
    with pytest.raises(ValueError) as error:
        lh.rnea_parameters(_config(robot_description='bar.urdf.xacro'))
    message = str(error.value)
    assert '\n' not in message and 'bar.urdf.xacro' in message
    assert 'pip install xacro' in message and 'ros-$ROS_DISTRO-xacro' in message


@pytest.mark.parametrize('filename', ['rnea.launch.xml', 'gravity_compensation.launch.xml'])
def test_xml_launch_files_pass_the_new_arguments_on(filename):
    _launch_modules()
    from launch import LaunchContext
    description = _load(filename)
    declared = declared_arguments(LaunchContext(), description)
    assert {'lifecycle', 'log_level', 'node_name', 'robot_description'} <= set(declared)
