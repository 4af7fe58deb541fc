"""The one URDF reader of rnea_ros: file, string or topic text -> LinkSpec / JointSpec records.

Everything that reads a URDF goes through here: the model constructors, the node (parameter,
file and topic), payloads, the simulator and the launch helpers.

- :func:`read_urdf_file` reads a file with a size limit (:data:`MAX_URDF_BYTES`) and refuses
  anything that is not a regular file (a FIFO or a device such as ``/dev/zero`` would block or
  never end); :func:`read_urdf` also accepts text that already is XML.
- :func:`parse_xml` checks well-formedness, the ``<robot>`` root and the nesting depth
  (:data:`MAX_DEPTH`: deeper documents are refused before any recursive code sees them) and
  returns the ElementTree root, for tools that edit the XML (simulator, ros2_control block).
- :func:`lock_joints` returns the URDF with some joints fixed at given positions (a recording
  that lacks them: the tools hold them there).
- :func:`parse_urdf` reads links and joints with urdfdom-py (the ROS-maintained parser) and
  checks the numbers the dynamics relies on: joint limits and mimic coefficients must be
  numbers (NaN is refused), mimic coefficients finite, ``effort`` and ``velocity`` >= 0.  An
  effort limit of 0 means "no limit" (inf): published URDFs write 0 for joints that are not
  driven (the URDF format makes the attribute mandatory); any positive value is the limit.
"""

import math
import os
import stat
import xml.etree.ElementTree as ET

import numpy as np

from rnea_ros.core.spatial import matrix_to_rpy, rot_axis, rpy_to_matrix
from rnea_ros.core.specs import JointSpec, LinkSpec, spec_from_urdf_origin

MAX_URDF_BYTES = 32 * 1024 * 1024     # the largest URDF file read (bytes)
MAX_DEPTH = 100                       # the deepest element nesting accepted (URDFs use < 10)


def read_urdf_file(path):
    """Return the text of a URDF file; ValueError if it is not a readable, bounded regular file."""
    path = os.path.expanduser(os.fspath(path))

    def refuse(reason):
        return ValueError(f'cannot read URDF file {path!r}: {reason}')

    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise refuse('not a regular file')
        # O_NONBLOCK: should the path be swapped for a FIFO after the check, open does not wait.
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    except OSError as e:
        raise refuse(e.strerror) from None
    with os.fdopen(fd, 'rb') as f:
        if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
            raise refuse('not a regular file')
        data = f.read(MAX_URDF_BYTES + 1)
    if len(data) > MAX_URDF_BYTES:
        raise refuse(f'larger than {MAX_URDF_BYTES} bytes')
    try:
        return decode_urdf(data)
    except ValueError as e:
        raise refuse(str(e).replace('invalid URDF: ', '', 1)) from None


def decode_urdf(data):
    """Return URDF bytes as text, strictly UTF-8; ValueError naming the first bad byte's offset.

    Nothing is replaced: a description whose bytes are not UTF-8 (a file in another encoding, a
    corrupted message) is refused instead of becoming names with U+FFFD in them.
    """
    try:
        return bytes(data).decode('utf-8')
    except UnicodeDecodeError as e:
        raise ValueError(f'invalid URDF: not UTF-8 text ({e.reason} at byte {e.start}: '
                         f'{bytes(data[e.start:e.start + 4])!r})') from None


def read_urdf(source):
    """Return URDF text from a file path, or ``source`` itself when it already is XML text."""
    if isinstance(source, (bytes, bytearray)):
        source = decode_urdf(source)
    if isinstance(source, str) and source.lstrip().startswith('<'):
        return source
    return read_urdf_file(source)


def _check_depth(root):
    """Raise ValueError when elements nest deeper than MAX_DEPTH (iterative: no recursion)."""
    stack = [(root, 1)]
    while stack:
        element, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise ValueError(f'invalid URDF: elements nested more than {MAX_DEPTH} levels deep')
        stack.extend((child, depth + 1) for child in element)


def parse_xml(xml):
    """Return the ElementTree root of URDF text; ValueError if empty, malformed or not <robot>."""
    if isinstance(xml, (bytes, bytearray)):
        xml = decode_urdf(xml)
    if not isinstance(xml, str) or not xml.strip():
        raise ValueError('invalid URDF: the robot description is empty')
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as e:
        raise ValueError(f'malformed URDF: not well-formed XML: {e}') from None
    _check_depth(root)
    if root.tag != 'robot':
        raise ValueError(f'not a URDF: the root element is <{root.tag}>, not <robot>')
    return root


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


def _dynamics_only(root):
    """Return the URDF text with only what dynamics needs: links (without geometry) and joints.

    Visuals, collisions, materials, transmissions and simulator extensions are dropped, so that
    a mesh or plugin the parser does not understand cannot make a valid kinematic tree fail.
    """
    for child in list(root):
        if child.tag not in ('link', 'joint'):
            root.remove(child)
        elif child.tag == 'link':
            for geometry in [g for g in child if g.tag in ('visual', 'collision')]:
                child.remove(geometry)
    return ET.tostring(root, encoding='unicode')


def _number(value, default, what, joint, low=-math.inf, finite=False):
    """Return a URDF attribute as a float (default when absent); ValueError if out of range."""
    if value is None:
        return default
    x = float(value)
    if math.isnan(x) or x < low or (finite and not math.isfinite(x)):
        bound = ' finite' if finite else ''
        bound += f' and >= {low:g}' if low > -math.inf else ''
        raise ValueError(f"invalid URDF: {what} of joint '{joint}' must be a{bound} number, "
                         f'got {x}')
    return x


def _link_spec(link):
    inertial = link.inertial
    if inertial is None:
        return LinkSpec(link.name)
    R, xyz = spec_from_urdf_origin(inertial.origin)
    mass = float(inertial.mass) if inertial.mass is not None else 0.0
    i = inertial.inertia
    if i is None:
        Ic = np.zeros((3, 3))
    else:
        Ic = np.array([[i.ixx, i.ixy, i.ixz],
                       [i.ixy, i.iyy, i.iyz],
                       [i.ixz, i.iyz, i.izz]], dtype=float)
    return LinkSpec(link.name, mass=mass, com=xyz, inertia=R @ Ic @ R.T)


def _joint_spec(j):
    if j.parent is None or j.child is None:
        raise ValueError(f"invalid URDF: joint '{j.name}' lacks a parent or child link")
    R, xyz = spec_from_urdf_origin(j.origin)
    limit, dyn = j.limit, j.dynamics
    mimic = None
    if j.mimic is not None:
        mimic = (j.mimic.joint,
                 _number(j.mimic.multiplier, 1.0, 'mimic multiplier', j.name, finite=True),
                 _number(j.mimic.offset, 0.0, 'mimic offset', j.name, finite=True))
    if j.type == 'continuous':
        lower, upper = -math.inf, math.inf
    else:
        lower = _number(getattr(limit, 'lower', None), -math.inf, 'lower limit', j.name)
        upper = _number(getattr(limit, 'upper', None), math.inf, 'upper limit', j.name)
    effort = _number(getattr(limit, 'effort', None), math.inf, 'effort limit', j.name, low=0.0)
    velocity = _number(getattr(limit, 'velocity', None), math.inf, 'velocity limit', j.name,
                       low=0.0)
    return JointSpec(
        j.name, j.type, j.parent, j.child, rotation=R, translation=xyz,
        axis=tuple(j.axis) if j.axis is not None else (1.0, 0.0, 0.0),
        lower=lower, upper=upper,
        effort=effort if effort > 0.0 else math.inf,        # 0 = no limit (module doc)
        velocity=velocity,
        mimic=mimic,
        damping=_number(getattr(dyn, 'damping', None), 0.0, 'damping', j.name),
        friction=_number(getattr(dyn, 'friction', None), 0.0, 'friction', j.name))


def parse_urdf(xml):
    """Return (robot name, [LinkSpec], [JointSpec]) of URDF text; ValueError if unusable."""
    root = parse_xml(xml)
    try:
        robot, _ = _quiet_parse(_dynamics_only(root))
    except Exception as e:  # noqa: B902 - the parser raises many unrelated exception types
        raise ValueError(f'invalid URDF: {type(e).__name__}: {e}') from None
    if robot is None or not getattr(robot, 'links', None):
        raise ValueError('invalid URDF: the robot has no links')
    links = [_link_spec(link) for link in robot.links]
    joints = [_joint_spec(j) for j in robot.joints]
    return robot.name, links, joints


MOVABLE = ('revolute', 'continuous', 'prismatic')


def lock_joints(xml, positions):
    """Return URDF text with each joint of ``positions`` ({joint: q}) fixed at q.

    A locked joint becomes ``type="fixed"`` with its motion at q folded into its origin (a
    rotation about its axis after the origin's for a revolute or continuous joint, a shift
    along its axis for a prismatic one): the kinematics and dynamics of every other joint are
    those of the original robot with that joint held at q.  A joint that mimics a locked joint
    is locked too, at ``multiplier q + offset``.  ValueError names a joint that is not a
    revolute, continuous or prismatic joint of the robot, or a position that is not finite.
    """
    root = parse_xml(xml)
    joints = {j.get('name'): j for j in root.findall('joint')}
    locked = {}
    for name, q in positions.items():
        joint = joints.get(name)
        if joint is None or joint.get('type') not in MOVABLE:
            movable = [n for n, j in joints.items() if j.get('type') in MOVABLE]
            raise ValueError(f'cannot hold {name!r}: not a moving joint of the robot; its '
                             f'moving joints: {movable}')
        if not math.isfinite(float(q)):
            raise ValueError(f'cannot hold {name!r} at {q}: the position must be finite')
        locked[name] = float(q)
    changed = True
    while changed:                      # mimic joints follow their locked driver
        changed = False
        for name, joint in joints.items():
            mimic = joint.find('mimic')
            if name in locked or mimic is None or mimic.get('joint') not in locked:
                continue
            locked[name] = (float(mimic.get('multiplier', 1.0)) * locked[mimic.get('joint')]
                            + float(mimic.get('offset', 0.0)))
            changed = True
    for name, q in locked.items():
        _fold(joints[name], q)
    return ET.tostring(root, encoding='unicode')


def _fold(joint, q):
    """Make a joint element fixed at q, its motion folded into its <origin>."""
    origin = joint.find('origin')
    values = {key: [float(v) for v in origin.get(key, '0 0 0').split()]
              if origin is not None else [0.0, 0.0, 0.0] for key in ('xyz', 'rpy')}
    axis_element = joint.find('axis')
    axis = np.array([float(v) for v in axis_element.get('xyz', '1 0 0').split()]
                    if axis_element is not None else [1.0, 0.0, 0.0])
    axis = axis / np.linalg.norm(axis)
    R = rpy_to_matrix(values['rpy'])
    xyz = np.array(values['xyz'])
    if joint.get('type') == 'prismatic':
        xyz = xyz + R @ axis * q
    else:
        R = R @ rot_axis(axis, q)
    if origin is None:
        origin = ET.SubElement(joint, 'origin')
    origin.set('xyz', ' '.join(repr(float(v)) for v in xyz))
    origin.set('rpy', ' '.join(repr(float(v)) for v in matrix_to_rpy(R)))
    joint.set('type', 'fixed')
    for tag in ('axis', 'limit', 'mimic', 'dynamics', 'safety_controller', 'calibration'):
        for child in joint.findall(tag):
            joint.remove(child)
