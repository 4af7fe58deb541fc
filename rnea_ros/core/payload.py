"""Payloads: a rigid body (point mass or full inertia) attached to a named link of a model.

A payload is one extra link, ``<link>_payload``, hanging on a fixed joint at the origin of the
named link; the model is rebuilt from the URDF's link and joint records plus that pair
(:meth:`RobotModel.from_specs`), so every algorithm sees it exactly as if the URDF had the link.
Units: kg, m (centre of mass in the link frame), kg m^2 (inertia about the centre of mass, link
axes), REP 103.
"""

from dataclasses import dataclass, field
import xml.etree.ElementTree as ElementTree

import numpy as np

from rnea_ros.core.model import RobotModel
from rnea_ros.core.specs import JointSpec, LinkSpec
from rnea_ros.core.urdf import parse_urdf, parse_xml


@dataclass
class Payload:
    """A rigid body fixed to ``link``: mass, centre of mass and inertia about the COM."""

    link: str
    mass: float
    com: tuple = (0.0, 0.0, 0.0)
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))

    def __post_init__(self):
        """Check and normalise the values (ValueError with the reason)."""
        if not isinstance(self.link, str) or not self.link:
            raise ValueError('payload link must be a non-empty link name')
        self.mass = float(self.mass)
        if not np.isfinite(self.mass) or self.mass < 0.0:
            raise ValueError(f'payload mass must be finite and >= 0 kg, got {self.mass}')
        com = np.asarray(self.com, dtype=float)
        if com.shape != (3,) or not np.all(np.isfinite(com)):
            raise ValueError(f'payload com must be 3 finite numbers (m), got {self.com!r}')
        self.com = tuple(com.tolist())
        self.inertia = inertia_matrix(self.inertia)

    @property
    def link_name(self):
        """Return the name of the extra link that carries the payload."""
        return f'{self.link}_payload'

    def describe(self):
        """Return a one-line summary (for logs and diagnostics)."""
        i = self.inertia
        return (f'{self.mass:g} kg on {self.link} at com {list(self.com)} m, inertia '
                f'[{i[0, 0]:g}, {i[1, 1]:g}, {i[2, 2]:g}, {i[0, 1]:g}, {i[0, 2]:g}, '
                f'{i[1, 2]:g}] kg m^2')


def inertia_matrix(values):
    """Return a 3x3 inertia from a 3x3 matrix, 9 values, or 6 [ixx, iyy, izz, ixy, ixz, iyz]."""
    arr = np.asarray(values if values is not None else np.zeros((3, 3)), dtype=float)
    if arr.size == 6:
        ixx, iyy, izz, ixy, ixz, iyz = arr.ravel()
        arr = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    elif arr.size == 9:
        arr = arr.reshape(3, 3)
    else:
        raise ValueError('payload inertia must be 6 values [ixx, iyy, izz, ixy, ixz, iyz] or a '
                         f'3x3 matrix, got {arr.size} values')
    if not np.all(np.isfinite(arr)):
        raise ValueError('payload inertia must be finite')
    return arr


def add_payload(links, joints, payload):
    """Return (links, joints) with the payload link and its fixed joint appended."""
    names = {link.name for link in links}
    if payload.link not in names:
        raise ValueError(f"payload link '{payload.link}' is not a link of the robot; links: "
                         f'{sorted(names)}')
    if payload.link_name in names:
        raise ValueError(f"the robot already has a link named '{payload.link_name}'")
    link = LinkSpec(payload.link_name, mass=payload.mass, com=payload.com,
                    inertia=payload.inertia)
    joint = JointSpec(f'{payload.link_name}_joint', 'fixed', payload.link, payload.link_name)
    return list(links) + [link], list(joints) + [joint]


def model_with_payload(urdf_xml, payload=None, floating_base=False, **options):
    """Return the RobotModel of URDF text with an optional :class:`Payload` attached.

    ``options`` are those of :meth:`RobotModel.from_urdf_string` (friction, armature, ...).
    """
    name, links, joints = parse_urdf(urdf_xml)
    if payload is not None:
        links, joints = add_payload(links, joints, payload)
    return RobotModel.from_specs(links, joints, floating_base=floating_base, name=name,
                                 **options)


def payload_urdf(urdf_xml, payload):
    """Return URDF text with the payload as an extra link on a fixed joint (for simulators)."""
    root = parse_xml(urdf_xml)
    if not any(link.get('name') == payload.link for link in root.findall('link')):
        raise ValueError(f"payload link '{payload.link}' is not a link of the robot")
    link = ElementTree.SubElement(root, 'link', name=payload.link_name)
    inertial = ElementTree.SubElement(link, 'inertial')
    ElementTree.SubElement(inertial, 'origin', rpy='0 0 0',
                           xyz=' '.join(repr(float(c)) for c in payload.com))
    ElementTree.SubElement(inertial, 'mass', value=repr(float(payload.mass)))
    i = payload.inertia
    keys = {'ixx': (0, 0), 'iyy': (1, 1), 'izz': (2, 2), 'ixy': (0, 1), 'ixz': (0, 2),
            'iyz': (1, 2)}
    ElementTree.SubElement(inertial, 'inertia',
                           **{k: repr(float(i[rc])) for k, rc in keys.items()})
    joint = ElementTree.SubElement(root, 'joint', name=f'{payload.link_name}_joint',
                                   type='fixed')
    ElementTree.SubElement(joint, 'parent', link=payload.link)
    ElementTree.SubElement(joint, 'child', link=payload.link_name)
    ElementTree.SubElement(joint, 'origin', xyz='0 0 0', rpy='0 0 0')
    return ElementTree.tostring(root, encoding='unicode')
