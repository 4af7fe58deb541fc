"""The logic behind launch/rnea.launch.py and launch/gravity_compensation.launch.py.

Launch files stay declarative: they declare the arguments listed here and hand the launch
configuration (a dict of strings) to :func:`rnea_launch_setup`, which turns it into launch_ros
actions.  The pure functions (argument parsing, parameter lists) are unit-tested without
``launch``; only :func:`declare_arguments` and :func:`rnea_launch_setup` import it.
"""

import importlib
import os
import re
import sysconfig

from rnea_ros.core.urdf import read_urdf_file

PACKAGE = 'rnea_ros'
SHIPPED_ROBOT = 'arm6.urdf'

# (name, default, description) of rnea.launch.py's arguments.
RNEA_ARGUMENTS = (
    ('urdf_file', '', 'URDF file for the rnea node; empty: use the robot_description topic'),
    ('mode', '', 'inverse_dynamics, gravity_compensation, gravity_coriolis or computed_torque; '
                 'empty: as in params_file'),
    ('params_file', '', 'YAML parameter file (default: the installed config/rnea.yaml)'),
    ('command_topic', '', 'Float64MultiArray effort command topic (e.g. '
                          'effort_controller/commands, relative to the namespace); empty: as '
                          'in params_file'),
    ('command_joints', '', 'comma-separated joint order of the commands; empty: as in '
                           'params_file'),
    ('namespace', '', 'ROS namespace of the node'),
    ('use_sim_time', '', 'use /clock (true/false); empty: as in params_file (else false)'),
    ('publish_robot_description', 'false',
     'also start robot_state_publisher with urdf_file or robot_description (true/false)'),
    ('robot_description', '', 'URDF file, xacro file (.xacro: needs xacro installed) or URDF '
                              'XML, given to the node as its robot_description parameter; '
                              'empty: urdf_file or the robot_description topic'),
    ('node_name', 'rnea', 'name of the node (its topics and services are ~/ of it)'),
    ('lifecycle', 'false', 'true: the managed (lifecycle) node, rnea_lifecycle_node, which '
                           'starts unconfigured'),
    ('log_level', '', 'log level of the node: debug, info, warn, error or fatal; empty: info'),
)
LOG_LEVELS = ('debug', 'info', 'warn', 'error', 'fatal')
XACRO_HINT = 'pip install xacro, or apt install ros-$ROS_DISTRO-xacro'

# gravity_compensation.launch.py: same arguments, hardware defaults.
GRAVITY_COMPENSATION_DEFAULTS = {
    'mode': 'gravity_compensation',
    'params_file': 'gravity_compensation.yaml',
    # relative: in namespace:=left it is /left/effort_controller/commands, so two namespaced
    # robots never command one controller
    'command_topic': 'effort_controller/commands',
}

# A launch configuration the XML twins set to their own file name, so that a refusal names the
# file the user ran (not the Python file the XML includes).
LAUNCH_FILE_CONFIGURATION = 'rnea_launch_file'


def arguments(defaults=None):
    """Return the (name, default, description) rows with some defaults replaced.

    The params_file default is the full path of the installed YAML file.
    """
    defaults = dict(defaults or {})
    defaults['params_file'] = shipped_params_file(defaults.get('params_file'))
    return tuple((name, defaults.get(name, default), text)
                 for name, default, text in RNEA_ARGUMENTS)


def share_dir(folder):
    """Return a data folder of the package (installed share, else the source tree)."""
    try:
        from ament_index_python.packages import get_package_share_directory
        return os.path.join(get_package_share_directory(PACKAGE), folder)
    except (ImportError, LookupError, OSError):
        pass
    source_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    here = os.path.join(source_root, folder)
    if os.path.isdir(here):
        return here
    return os.path.join(sysconfig.get_paths()['data'], 'share', PACKAGE, folder)


def config_dir():
    """Return the folder of the package's YAML files (installed share, else the source tree)."""
    return share_dir('config')


def shipped_urdf_file():
    """Return the URDF of arm6, the 6-axis arm shipped in the package (urdf/arm6.urdf)."""
    return os.path.join(share_dir('urdf'), SHIPPED_ROBOT)


def shipped_params_file(name=None):
    """Return the installed parameter file ``name`` (default ``rnea.yaml``)."""
    return os.path.join(config_dir(), name or 'rnea.yaml')


def resolve_params_file(value, default=None):
    """Return the absolute path of the parameter file ``value``; ValueError if there is none.

    Empty: the installed ``default`` (``rnea.yaml``).  Otherwise the user's path wins, relative
    to the working directory as in a shell; only when no such file exists is a bare name of a
    shipped file (``gravity_compensation.yaml``) read from the installed config folder.  A file
    that is found nowhere stops the launch with one line: never a silent fallback.
    """
    text = str(value or '').strip()
    if not text:
        return shipped_params_file(default)
    path = os.path.abspath(os.path.expanduser(text))
    if os.path.exists(path):
        if not os.path.isfile(path):
            raise ValueError(f"params_file '{text}': {path} is not a regular file")
        return path
    shipped = os.path.join(config_dir(), text)
    if os.path.basename(text) == text and os.path.isfile(shipped):
        return shipped
    where = '' if os.path.isabs(os.path.expanduser(text)) else \
        f' (a relative path is read from the working directory {os.getcwd()})'
    raise ValueError(f"params_file '{text}' not found: no file {path}{where}; the shipped "
                     f'files are in {config_dir()}')


def parse_bool(value, name):
    """Parse a launch argument true/false (also 1/0, yes/no); ValueError otherwise."""
    text = str(value).strip().lower()
    if text in ('true', '1', 'yes', 'on'):
        return True
    if text in ('false', '0', 'no', 'off', ''):
        return False
    raise ValueError(f"launch argument {name} must be true or false, got '{value}'")


def parse_list(value):
    """Parse a comma-separated (optionally bracketed) list of names."""
    text = str(value).strip().strip('[]')
    return [item.strip().strip('\'"') for item in text.split(',') if item.strip()]


def rnea_parameters(config):
    """Return the ``parameters`` list for the rnea node from the launch configuration.

    The parameter file comes first; launch arguments that are set override it.
    """
    overrides = {}
    if config.get('use_sim_time'):
        overrides['use_sim_time'] = parse_bool(config['use_sim_time'], 'use_sim_time')
    if config.get('urdf_file'):
        overrides['urdf_file'] = os.path.abspath(os.path.expanduser(config['urdf_file']))
    description = robot_description_xml(config)
    if description is not None:
        if config.get('urdf_file'):
            raise ValueError('give urdf_file or robot_description, not both')
        overrides['robot_description'] = description
    for name in ('mode', 'command_topic'):
        if config.get(name):
            overrides[name] = config[name]
    joints = parse_list(config.get('command_joints', ''))
    if joints:
        overrides['command_joints'] = joints
    return [resolve_params_file(config.get('params_file')), overrides]


def robot_description_xml(config):
    """Return the URDF XML of the robot_description argument, or None when it is empty.

    The argument is URDF XML (it starts with ``<``) or a file, relative to the working
    directory: a ``.xacro`` file is expanded with xacro (ValueError naming how to install it
    where it is missing), any other file is read as URDF.
    """
    text = str(config.get('robot_description') or '').strip()
    if not text:
        return None
    if text.startswith('<'):
        return text
    path = os.path.abspath(os.path.expanduser(text))
    if not os.path.isfile(path):
        raise ValueError(f"robot_description '{text}' is neither URDF XML nor a file: no file "
                         f'{path}')
    if not path.endswith('.xacro'):
        return read_urdf_file(path)
    try:
        import xacro
    except ImportError:
        raise ValueError(f"robot_description '{text}' is a xacro file and xacro is not "
                         f'installed: {XACRO_HINT}') from None
    try:
        return xacro.process_file(path).toxml()
    except Exception as error:  # noqa: B902 (xacro raises its own and XML errors)
        raise ValueError(f"xacro could not expand robot_description '{text}': "
                         f'{str(error).splitlines()[0] if str(error) else type(error).__name__}'
                         ) from None


def node_arguments(config):
    """Return (executable, name, extra command-line arguments) from the launch interface."""
    lifecycle = parse_bool(config.get('lifecycle', 'false'), 'lifecycle')
    name = str(config.get('node_name') or 'rnea').strip()
    if not re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*', name):
        raise ValueError('launch argument node_name must be a ROS node name (letters, digits, '
                         f"'_', not starting with a digit), got '{name}'")
    level = str(config.get('log_level') or '').strip().lower()
    level = 'warn' if level == 'warning' else level
    if level and level not in LOG_LEVELS:
        raise ValueError(f'launch argument log_level must be one of {list(LOG_LEVELS)}, got '
                         f"'{config.get('log_level')}'")
    extra = ['--ros-args', '--log-level', level] if level else []
    return ('rnea_lifecycle_node' if lifecycle else 'rnea_node'), name, extra


def rnea_node_kwargs(config):
    """Return the keyword arguments of launch_ros.actions.Node for the rnea node."""
    executable, name, extra = node_arguments(config)
    kwargs = {
        'package': PACKAGE,
        'executable': executable,
        'name': name,
        'namespace': config.get('namespace', ''),
        'parameters': rnea_parameters(config),
        'output': 'screen',
        'emulate_tty': True,
    }
    if extra:
        kwargs['arguments'] = extra
    return kwargs


def robot_state_publisher_kwargs(config):
    """Return the Node keyword arguments of robot_state_publisher, or None when not asked for."""
    if not parse_bool(config.get('publish_robot_description', 'false'),
                      'publish_robot_description'):
        return None
    xml = robot_description_xml(config)
    if xml is None and not config.get('urdf_file'):
        raise ValueError('publish_robot_description:=true needs urdf_file:=<path> or '
                         'robot_description:=<file>')
    if xml is None:
        xml = read_urdf_file(config['urdf_file'])
    return {
        'package': 'robot_state_publisher',
        'executable': 'robot_state_publisher',
        'namespace': config.get('namespace', ''),
        'parameters': [{'robot_description': xml,
                        'use_sim_time': parse_bool(config.get('use_sim_time') or 'false',
                                                   'use_sim_time')}],
        'output': 'screen',
    }


LAUNCH_HINT = ('ros2 launch and the launch files need the ROS 2 launch packages (launch, '
               'launch_ros): they come with a ROS 2 install (apt install '
               'ros-$ROS_DISTRO-launch-ros), not from PyPI')


def launch_module(name):
    """Import a module of the ROS 2 launch packages; ImportError in one line if they are absent.

    Only the launch files need them (``ros2 launch``); everything else in rnea_ros runs with
    PyPI packages alone.
    """
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as error:
        raise ModuleNotFoundError(f'no module {error.name!r}: {LAUNCH_HINT}',
                                  name=error.name) from None


def declare_arguments(rows):
    """Return DeclareLaunchArgument actions for (name, default, description) rows."""
    DeclareLaunchArgument = launch_module('launch.actions').DeclareLaunchArgument
    return [DeclareLaunchArgument(name, default_value=default, description=text)
            for name, default, text in rows]


def params_file_command_joints(path):
    """Return the command_joints a parameter file sets for any node, or [] (ValueError if bad)."""
    import yaml
    try:
        with open(os.path.expanduser(path), encoding='utf-8') as stream:
            document = yaml.safe_load(stream) or {}
    except (OSError, yaml.YAMLError) as error:
        raise ValueError(f'cannot read params_file {path}: {error}') from None
    for section in document.values() if isinstance(document, dict) else ():
        parameters = section.get('ros__parameters') if isinstance(section, dict) else None
        if isinstance(parameters, dict) and parameters.get('command_joints'):
            return list(parameters['command_joints'])
    return []


def gravity_compensation_config(config):
    """Return the configuration of gravity_compensation.launch.py, or refuse it.

    Empty arguments take the hardware defaults (an XML include passes every argument, empty
    ones too). ``command_joints`` is required (argument or params_file): without it the node
    would command every URDF joint in URDF order, which rarely matches an effort controller.
    """
    config = dict(config)
    for name, default in GRAVITY_COMPENSATION_DEFAULTS.items():
        if not config.get(name):
            config[name] = shipped_params_file(default) if name == 'params_file' else default
    config['params_file'] = resolve_params_file(config['params_file'])
    launch_file = config.get(LAUNCH_FILE_CONFIGURATION) or 'gravity_compensation.launch.py'
    if not parse_list(config.get('command_joints', '')) and \
            not params_file_command_joints(config['params_file']):
        raise ValueError(
            f'{launch_file} needs command_joints:=j1,j2,... (the joints of '
            'your effort controller, in its order) or a params_file that sets command_joints; '
            'refusing to command every URDF joint')
    return config


def rnea_launch_setup(context, *args, **kwargs):
    """Return the actions of the OpaqueFunction: the rnea node (and robot_state_publisher)."""
    return rnea_actions(dict(context.launch_configurations))


def gravity_compensation_launch_setup(context, *args, **kwargs):
    """Return the actions of gravity_compensation.launch.py (refuses without command_joints)."""
    return rnea_actions(gravity_compensation_config(context.launch_configurations))


def params_file_message(config):
    """Return the launch's line naming the parameter file the rnea node gets.

    Which file a ``params_file:=`` resolved to is shown, never left to guess: a bare name of a
    shipped file (``gravity_compensation.yaml``) with no such file in the working directory
    is the installed one, and the line says so.
    """
    given = str(config.get('params_file') or '').strip()
    path = resolve_params_file(given)
    if os.path.dirname(path) == os.path.abspath(config_dir()):
        where = ('the installed default' if not given else
                 'the installed, shipped file: no file of that name in the working directory '
                 f'{os.getcwd()}' if os.path.basename(given) == given else
                 'the installed, shipped file')
        return f'rnea parameters: {path} ({where})'
    return f'rnea parameters: {path}'


def rnea_actions(config):
    """Return the launch actions for a configuration: the parameter file's line, the nodes."""
    LogInfo = launch_module('launch.actions').LogInfo
    Node = launch_module('launch_ros.actions').Node
    actions = [LogInfo(msg=params_file_message(config)), Node(**rnea_node_kwargs(config))]
    rsp = robot_state_publisher_kwargs(config)
    if rsp is not None:
        actions.insert(1, Node(**rsp))
    return actions
