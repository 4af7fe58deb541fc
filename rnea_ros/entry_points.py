"""Console scripts: a missing or too old optional dependency is one clear line, not a traceback.

``rnea_ros/__init__.py`` imports the dynamics core lazily, so this module loads without numba;
each script imports its module here and turns an ImportError into ``<program>: <reason>: <how to
install>`` on stderr with exit code 1.  Optional dependencies imported later, where they are used
(scipy by ``excite`` and ``identify``, matplotlib for plots), get the same line when the script
runs into them.
"""
import importlib
import signal
import sys

# How to get each optional dependency: PyPI, and the rosdep key package.xml uses.
INSTALL_HINTS = {
    'numba': "pip install 'numba>=0.57' (rosdep key python3-numba)",
    'mujoco': 'pip install mujoco (rosdep key python3-mujoco-pip)',
    'urdf_parser_py': 'pip install urdfdom-py (rosdep key urdfdom_py)',
    'yaml': 'pip install PyYAML (rosdep key python3-yaml)',
    'matplotlib': 'pip install matplotlib (rosdep key python3-matplotlib)',
    'scipy': 'pip install scipy (rosdep key python3-scipy)',
    'rosbags': 'pip install rosbags (PyPI only)',
    'control_msgs': 'it comes with ROS 2 (apt install ros-$ROS_DISTRO-control-msgs), not '
                    'from PyPI',
}


def missing_optional(error):
    """Return the optional dependency an ImportError says is missing, or None."""
    name = (getattr(error, 'name', None) or '').split('.')[0]
    return name if isinstance(error, ModuleNotFoundError) and name in INSTALL_HINTS else None


def import_error_line(program, error):
    """Return the one-line message for an ImportError of ``program``."""
    missing = (getattr(error, 'name', None) or '').split('.')[0]
    hint = INSTALL_HINTS.get(missing)
    if hint is None and 'numba' in str(error):
        hint = INSTALL_HINTS['numba']
    return f'{program}: {error}' + (f': {hint}' if hint and hint not in str(error) else '')


def run(module_name, program, argv=None, early_stop=False):
    """Import ``module_name`` and return its ``main()``; 1 with one line on an ImportError.

    SIGINT during the import (the first start compiles the numba kernels for many seconds)
    ends the program quietly with code 0, as it does once the node runs.  ``early_stop`` (the
    nodes): SIGINT and SIGTERM are recorded from the start instead of raising
    KeyboardInterrupt, which numba can swallow when it arrives inside one of its callbacks (the
    node then started and ran on); the record is handed to ``main(stop=...)``.
    """
    stop = []
    if early_stop:
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.append(True))
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        print(import_error_line(program, error), file=sys.stderr)
        return 1
    except KeyboardInterrupt:       # Ctrl-C while importing (numba's first compile): a stop
        return 0
    if stop:                        # Ctrl-C or SIGTERM while importing
        return 0
    options = {'stop': stop} if early_stop else {}
    try:        # optional dependencies are imported where they are used (scipy, matplotlib)
        return module.main(**options) if argv is None else module.main(argv, **options)
    except ModuleNotFoundError as error:
        if missing_optional(error) is None:
            raise
        print(import_error_line(program, error), file=sys.stderr)
        return 1


def rnea_node():
    """``rnea_node``: the rnea node."""
    sys.exit(run('rnea_ros.node.rnea_node', 'rnea_node', early_stop=True))


def rnea_lifecycle_node():
    """``rnea_lifecycle_node``: the rnea node as a managed (lifecycle) node."""
    sys.exit(run('rnea_ros.node.lifecycle', 'rnea_lifecycle_node', early_stop=True))


def mujoco_sim():
    """``mujoco_sim``: the MuJoCo simulator node."""
    sys.exit(run('rnea_ros.sim.mujoco_sim', 'mujoco_sim'))


def reference_trajectory():
    """``reference_trajectory``: the reference publisher."""
    sys.exit(run('rnea_ros.sim.reference_trajectory', 'reference_trajectory'))


def rnea_ros_cli():
    """``rnea-ros``: torques and bag analysis from the command line."""
    sys.exit(run('rnea_ros.analysis.cli', 'rnea-ros'))


def trajectory_feedforward():
    """``trajectory_feedforward``: JointTrajectory in, the same with model efforts out."""
    sys.exit(run('rnea_ros.feedforward.node', 'trajectory_feedforward', early_stop=True))


def feedforward_action_proxy():
    """``feedforward_action_proxy``: FollowJointTrajectory with efforts filled (control_msgs)."""
    sys.exit(run('rnea_ros.feedforward.action_proxy', 'feedforward_action_proxy',
                 early_stop=True))


def add_ros2_control():
    """``add_ros2_control``: add a ros2_control block to a URDF."""
    sys.exit(run('rnea_ros.sim.ros2_control_urdf', 'add_ros2_control'))
