"""Add a ``<ros2_control>`` block (effort commands) and the Gazebo plugin to an existing URDF.

Gazebo (gz sim) with gz_ros2_control needs, inside the URDF, a ``<ros2_control>`` element that
lists each joint's command and state interfaces, and a ``<gazebo><plugin>`` that starts the
controller manager with a controllers YAML. This module writes both for every moving joint:
an ``effort`` command interface (limits from the URDF) and position/velocity/effort state
interfaces; mimic joints get state interfaces only (gz_ros2_control forbids command interfaces on
them). Control plugins of Gazebo classic / ROS 1 (``libgazebo_ros_control.so``) are removed. It
can also fix the root link to the world and make mesh paths absolute, so Gazebo finds the meshes
without extra resource paths.

Command line (console script ``add_ros2_control``)::

    add_ros2_control panda.urdf -o panda_gz.urdf --controllers config/gazebo_controllers.yaml
"""
import argparse
import os
import sys
import xml.etree.ElementTree as ElementTree

import numpy as np

from rnea_ros.sim.urdf_tools import parse_urdf_xml, read_urdf, resolve_mesh_path, urdf_joints

GZ_SIM = {
    'hardware': 'gz_ros2_control/GazeboSimSystem',
    'filename': 'gz_ros2_control-system',
    'plugin': 'gz_ros2_control::GazeboSimROS2ControlPlugin',
}
# Humble with Gazebo Fortress ships ign_ros2_control under the old names.
IGNITION = {
    'hardware': 'ign_ros2_control/IgnitionSystem',
    'filename': 'ign_ros2_control-system',
    'plugin': 'ign_ros2_control::IgnitionROS2ControlPlugin',
}


def commanded_joints(urdf_xml):
    """Return the moving joints that get an effort command interface (all but mimic joints)."""
    return [joint.name for joint in urdf_joints(urdf_xml) if joint.mimic is None]


def _param(parent, name, value):
    element = ElementTree.SubElement(parent, 'param', name=name)
    element.text = value
    return element


def _number(value):
    return repr(float(value))


def ros2_control_element(joints, initial_positions=None, name='GazeboSimSystem',
                         hardware=GZ_SIM['hardware']):
    """Return the ``<ros2_control>`` element for ``joints`` (:class:`UrdfJoint` objects)."""
    initial_positions = initial_positions or {}
    root = ElementTree.Element('ros2_control', name=name, type='system')
    plugin = ElementTree.SubElement(ElementTree.SubElement(root, 'hardware'), 'plugin')
    plugin.text = hardware
    for joint in joints:
        element = ElementTree.SubElement(root, 'joint', name=joint.name)
        if joint.mimic is None:
            command = ElementTree.SubElement(element, 'command_interface', name='effort')
            if np.isfinite(joint.effort_limit):
                _param(command, 'min', _number(-joint.effort_limit))
                _param(command, 'max', _number(joint.effort_limit))
        position = ElementTree.SubElement(element, 'state_interface', name='position')
        if joint.name in initial_positions:
            _param(position, 'initial_value', _number(initial_positions[joint.name]))
        ElementTree.SubElement(element, 'state_interface', name='velocity')
        ElementTree.SubElement(element, 'state_interface', name='effort')
    return root


def gazebo_plugin_element(controllers_file, flavour=GZ_SIM):
    """Return the ``<gazebo><plugin>`` element that loads gz_ros2_control with a YAML file."""
    root = ElementTree.Element('gazebo')
    plugin = ElementTree.SubElement(root, 'plugin', filename=flavour['filename'],
                                    name=flavour['plugin'])
    if controllers_file:
        ElementTree.SubElement(plugin, 'parameters').text = controllers_file
    return root


def root_link(root):
    """Return the name of the URDF's root link (the link that is no joint's child)."""
    children = {joint.find('child').get('link') for joint in root.findall('joint')
                if joint.find('child') is not None}
    roots = [link.get('name') for link in root.findall('link')
             if link.get('name') not in children]
    if len(roots) != 1:
        raise ValueError('URDF needs exactly one root link, found {}'.format(roots))
    return roots[0]


def fix_to_world(root):
    """Add a ``world`` link and a fixed joint to the root link (no-op if ``world`` exists)."""
    base = root_link(root)
    if base == 'world':
        return
    root.insert(0, ElementTree.Element('link', name='world'))
    joint = ElementTree.Element('joint', name='world_to_' + base, type='fixed')
    ElementTree.SubElement(joint, 'parent', link='world')
    ElementTree.SubElement(joint, 'child', link=base)
    ElementTree.SubElement(joint, 'origin', xyz='0 0 0', rpy='0 0 0')
    root.insert(1, joint)


def remove_old_control_plugins(root):
    """Remove Gazebo-classic / ROS 1 control plugins (e.g. libgazebo_ros_control.so).

    They would clash with gz_ros2_control; a ``<gazebo>`` element left empty is removed too.
    Returns the removed plugin file names.
    """
    removed = []
    for gazebo in root.findall('gazebo'):
        for plugin in gazebo.findall('plugin'):
            if 'ros_control' in plugin.get('filename', '') or \
                    'ros2_control' in plugin.get('filename', ''):
                gazebo.remove(plugin)
                removed.append(plugin.get('filename'))
        if len(gazebo) == 0 and gazebo.get('reference') is None:
            root.remove(gazebo)
    return removed


def absolute_mesh_uris(root, base_dir=None, share_dirs=None):
    """Rewrite every resolvable mesh filename as a ``file://`` URI with an absolute path."""
    for mesh in root.iter('mesh'):
        path = resolve_mesh_path(mesh.get('filename', ''), base_dir, share_dirs)
        if path is not None:
            mesh.set('filename', 'file://' + path)


def add_ros2_control(urdf_xml, controllers_file='', initial_positions=None, world=True,
                     absolute_meshes=True, ignition=False, base_dir=None, share_dirs=None):
    """Return URDF text with a ``<ros2_control>`` block and the gz_ros2_control plugin added.

    What the arguments mean:
        urdf_xml: the robot's URDF text (must not already have a ``<ros2_control>`` block).
        controllers_file: absolute path of the controllers YAML the plugin loads.
        initial_positions: {joint name: position} written as the state's initial value.
        world: fix the root link to the world with a fixed joint (fixed-base arms).
        absolute_meshes: turn resolvable mesh references into absolute ``file://`` URIs.
        ignition: use the Humble/Fortress ign_ros2_control names instead of gz_ros2_control.
    """
    root = parse_urdf_xml(urdf_xml)
    if root.find('ros2_control') is not None:
        raise ValueError('the URDF already has a <ros2_control> block')
    joints = urdf_joints(urdf_xml)
    if not joints:
        raise ValueError('the URDF has no moving joints to control')
    unknown = sorted(set(initial_positions or {}) - {joint.name for joint in joints})
    if unknown:
        raise ValueError('initial positions for unknown joints: {}'.format(unknown))
    flavour = IGNITION if ignition else GZ_SIM
    remove_old_control_plugins(root)
    if world:
        fix_to_world(root)
    if absolute_meshes:
        absolute_mesh_uris(root, base_dir, share_dirs)
    name = 'IgnitionSystem' if ignition else 'GazeboSimSystem'
    root.append(ros2_control_element(joints, initial_positions, name, flavour['hardware']))
    root.append(gazebo_plugin_element(controllers_file, flavour))
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding='unicode')


def controllers_yaml(joints, update_rate=1000, controller='effort_controller'):
    """Return a controller_manager YAML: joint_state_broadcaster + JointGroupEffortController."""
    lines = [
        'controller_manager:',
        '  ros__parameters:',
        '    update_rate: {}  # Hz'.format(int(update_rate)),
        '    use_sim_time: true',
        '',
        '    joint_state_broadcaster:',
        '      type: joint_state_broadcaster/JointStateBroadcaster',
        '',
        '    {}:'.format(controller),
        '      type: effort_controllers/JointGroupEffortController',
        '',
        '{}:'.format(controller),
        '  ros__parameters:',
        '    joints:',
    ]
    lines += ['      - {}'.format(name) for name in joints]
    return '\n'.join(lines) + '\n'


def parse_arguments(argv):
    """Parse the command line of ``add_ros2_control``."""
    parser = argparse.ArgumentParser(
        prog='add_ros2_control', description=__doc__.split('\n\n')[0])
    parser.add_argument('urdf', help='input URDF file')
    parser.add_argument('-o', '--output', help='output URDF file (default: stdout)')
    parser.add_argument('--controllers', default='',
                        help='controllers YAML path written into the gz_ros2_control plugin')
    parser.add_argument('--write-controllers', metavar='YAML',
                        help='also write a controllers YAML for this robot to this path')
    parser.add_argument('--initial', nargs='*', default=[], metavar='JOINT=VALUE',
                        help='initial joint positions')
    parser.add_argument('--no-world', action='store_true',
                        help='do not fix the root link to the world')
    parser.add_argument('--keep-mesh-uris', action='store_true',
                        help='keep mesh references as they are')
    parser.add_argument('--ignition', action='store_true',
                        help='Humble/Fortress names (ign_ros2_control)')
    return parser.parse_args(argv)


def parse_initial(pairs):
    """Turn ``['joint=value', ...]`` into a dict (ValueError on bad input)."""
    initial = {}
    for pair in pairs:
        name, separator, value = pair.partition('=')
        if not separator:
            raise ValueError('expected JOINT=VALUE, got {!r}'.format(pair))
        initial[name] = float(value)
    return initial


def main(argv=None):
    """Run the ``add_ros2_control`` command line tool."""
    args = parse_arguments(sys.argv[1:] if argv is None else argv)
    try:
        urdf = read_urdf(args.urdf)
        result = add_ros2_control(
            urdf, os.path.abspath(args.controllers) if args.controllers else '',
            parse_initial(args.initial), world=not args.no_world,
            absolute_meshes=not args.keep_mesh_uris, ignition=args.ignition,
            base_dir=os.path.dirname(os.path.abspath(args.urdf)))
        if args.write_controllers:
            with open(args.write_controllers, 'w') as stream:
                stream.write(controllers_yaml(commanded_joints(urdf)))
    except (OSError, ValueError) as error:
        print('add_ros2_control: {}'.format(error), file=sys.stderr)
        return 1
    if args.output:
        with open(args.output, 'w') as stream:
            stream.write(result + '\n')
    else:
        sys.stdout.write(result + '\n')
    return 0


if __name__ == '__main__':
    sys.exit(main())
