"""Read a URDF (with urdfdom-py, the ROS-maintained parser) into LinkSpec / JointSpec records."""

import math
import xml.etree.ElementTree as ET

import numpy as np

from rnea_ros.core.model import JointSpec, LinkSpec, spec_from_urdf_origin


def _quiet_parse(xml):
    """Parse URDF XML, collecting the parser's warnings instead of printing them to stderr."""
    from urdf_parser_py import urdf
    from urdf_parser_py.xml_reflection import core
    warnings = []
    previous = core.on_error
    core.on_error = warnings.append
    try:
        return urdf.URDF.from_xml_string(xml), warnings
    finally:
        core.on_error = previous


def _dynamics_only(xml):
    """Return the URDF text with only what dynamics needs: links (without geometry) and joints.

    Visuals, collisions, materials, transmissions and simulator extensions are dropped, so that
    a mesh or plugin the parser does not understand cannot make a valid kinematic tree fail.
    """
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise ValueError(f'invalid URDF: not well-formed XML: {e}') from None
    if root.tag != 'robot':
        raise ValueError(f'invalid URDF: the root element is <{root.tag}>, not <robot>')
    for child in list(root):
        if child.tag not in ('link', 'joint'):
            root.remove(child)
        elif child.tag == 'link':
            for geometry in [g for g in child if g.tag in ('visual', 'collision')]:
                child.remove(geometry)
    return ET.tostring(root, encoding='unicode')


def _limit(value, default):
    return default if value is None else float(value)


def parse_urdf(xml):
    """Return (robot name, [LinkSpec], [JointSpec]) of URDF text; ValueError if unusable."""
    if isinstance(xml, bytes):
        xml = xml.decode('utf-8')
    if not isinstance(xml, str) or not xml.strip():
        raise ValueError('invalid URDF: the robot description is empty')
    xml = _dynamics_only(xml.encode('utf-8'))
    try:
        robot, _ = _quiet_parse(xml)
    except Exception as e:  # noqa: B902 - the parser raises many unrelated exception types
        raise ValueError(f'invalid URDF: {type(e).__name__}: {e}') from None
    if robot is None or not getattr(robot, 'links', None):
        raise ValueError('invalid URDF: the robot has no links')

    links = []
    for link in robot.links:
        inertial = link.inertial
        if inertial is None:
            links.append(LinkSpec(link.name))
            continue
        R, xyz = spec_from_urdf_origin(inertial.origin)
        mass = float(inertial.mass) if inertial.mass is not None else 0.0
        i = inertial.inertia
        if i is None:
            Ic = np.zeros((3, 3))
        else:
            Ic = np.array([[i.ixx, i.ixy, i.ixz],
                           [i.ixy, i.iyy, i.iyz],
                           [i.ixz, i.iyz, i.izz]], dtype=float)
        links.append(LinkSpec(link.name, mass=mass, com=xyz, inertia=R @ Ic @ R.T))

    joints = []
    for j in robot.joints:
        if j.parent is None or j.child is None:
            raise ValueError(f"invalid URDF: joint '{j.name}' lacks a parent or child link")
        R, xyz = spec_from_urdf_origin(j.origin)
        limit = j.limit
        mimic = None
        if j.mimic is not None:
            mimic = (j.mimic.joint, _limit(j.mimic.multiplier, 1.0),
                     _limit(j.mimic.offset, 0.0))
        dyn = j.dynamics
        if j.type == 'continuous':
            lower, upper = -math.inf, math.inf
        else:
            lower = _limit(getattr(limit, 'lower', None), -math.inf)
            upper = _limit(getattr(limit, 'upper', None), math.inf)
        effort = _limit(getattr(limit, 'effort', None), math.inf)
        joints.append(JointSpec(
            j.name, j.type, j.parent, j.child, rotation=R, translation=xyz,
            axis=tuple(j.axis) if j.axis is not None else (1.0, 0.0, 0.0),
            lower=lower, upper=upper,
            effort=effort if effort > 0.0 else math.inf,
            velocity=_limit(getattr(limit, 'velocity', None), math.inf),
            mimic=mimic,
            damping=_limit(getattr(dyn, 'damping', None), 0.0),
            friction=_limit(getattr(dyn, 'friction', None), 0.0)))
    return robot.name, links, joints
