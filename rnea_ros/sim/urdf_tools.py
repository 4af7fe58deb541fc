"""URDF helpers of the simulator and its launch files that do not need MuJoCo.

The joint list comes from the one URDF reader, :mod:`rnea_ros.core.urdf` (the same joints,
limits and mimic drivers the rnea node sees); this module adds what simulators need on top:
the moving joints as :class:`UrdfJoint` records, ``package://`` mesh resolution and the
example-robot-data folder.  Imported by :mod:`rnea_ros.sim.mujoco_model`,
:mod:`rnea_ros.sim.ros2_control_urdf` and :mod:`rnea_ros.sim.sim_launch`, so that the Gazebo
launch file and ``add_ros2_control`` run without MuJoCo.
"""
import os
import sysconfig

import numpy as np
from rnea_ros.core.urdf import parse_urdf, parse_xml, read_urdf_file

MOVING_JOINT_TYPES = ('revolute', 'continuous', 'prismatic')
parse_urdf_xml = parse_xml       # ElementTree root of URDF text (ValueError when unusable)
read_urdf = read_urdf_file       # text of a URDF file (ValueError when unreadable)


class UrdfJoint:
    """A non-fixed URDF joint as the simulator needs it."""

    def __init__(self, name, joint_type, effort_limit=np.inf, lower=-np.inf, upper=np.inf,
                 mimic=None):
        """Store the joint's name, type, effort limit, position limits and mimic driver."""
        self.name = name
        self.type = joint_type
        self.effort_limit = effort_limit
        self.lower = lower
        self.upper = upper
        self.mimic = mimic

    def __repr__(self):
        """Return a short description for error messages and logs."""
        return 'UrdfJoint({!r}, {!r})'.format(self.name, self.type)


def urdf_joints(urdf_xml):
    """Return the moving (revolute, continuous, prismatic) joints in URDF document order."""
    return [UrdfJoint(j.name, j.type, j.effort, j.lower, j.upper,
                      None if j.mimic is None else j.mimic[0])
            for j in parse_urdf(urdf_xml)[2] if j.type in MOVING_JOINT_TYPES]


def share_directories():
    """Return folders that hold ROS packages, searched to resolve ``package://`` URIs.

    Order: every prefix of AMENT_PREFIX_PATH (``<prefix>/share``), every ROS_PACKAGE_PATH entry
    and the ``share`` folder of the cmeel prefix that the example-robot-data wheel installs.
    """
    folders = []
    for prefix in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep):
        if prefix:
            folders.append(os.path.join(prefix, 'share'))
    for entry in os.environ.get('ROS_PACKAGE_PATH', '').split(os.pathsep):
        if entry:
            folders.append(entry)
    folders.append(os.path.join(sysconfig.get_paths()['purelib'], 'cmeel.prefix', 'share'))
    return [folder for folder in folders if os.path.isdir(folder)]


def example_robot_data_dir():
    """Return the ``robots`` folder of example-robot-data (installed with its PyPI wheel)."""
    return os.path.join(sysconfig.get_paths()['purelib'], 'cmeel.prefix', 'share',
                        'example-robot-data', 'robots')


def resolve_mesh_path(uri, base_dir=None, share_dirs=None):
    """Return the absolute path of a mesh URI, or None when no file can be found.

    Handles ``package://pkg/path`` (searched in ``share_dirs``, default
    :func:`share_directories`), ``file://`` URIs, absolute paths and paths relative to
    ``base_dir`` (the URDF file's folder).
    """
    if not uri:
        return None
    if uri.startswith('package://'):
        package, _, rest = uri[len('package://'):].partition('/')
        folders = share_directories() if share_dirs is None else share_dirs
        candidates = [os.path.join(folder, package, rest) for folder in folders]
    elif uri.startswith('file://'):
        candidates = [uri[len('file://'):]]
    elif '://' in uri:
        return None
    elif os.path.isabs(uri):
        candidates = [uri]
    else:
        candidates = [os.path.join(base_dir or os.getcwd(), uri)]
    for candidate in candidates:
        if os.path.isfile(candidate):
            return os.path.abspath(candidate)
    return None
