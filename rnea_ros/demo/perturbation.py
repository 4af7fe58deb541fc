"""A "real" robot for the demo: a seeded perturbation of a nominal URDF (pure numpy, no ROS).

A real arm differs from its CAD URDF: masses, centres of mass and inertias are off by tens of
percent, the joints have friction and rotor inertia, and a tool hangs on the flange.
:func:`perturb_robot` draws such a truth from a seed:

- every link with mass: mass x U(1 - 20 %, 1 + 20 %), centre of mass + U(-2 cm, 2 cm) per
  axis, inertia about the centre of mass with each principal second moment of mass
  (the eigenvalues of Sigma = tr(I)/2 1 - I, Wensing et al. 2017) x U(1 - 30 %, 1 + 30 %)
  -- Sigma stays positive semi-definite, so the inertia stays physically consistent (positive
  definite, triangle inequality) and each principal moment changes by at most 30 %;
- a payload (a small solid body) on the arm's last link (the deepest link moved by a rotary
  joint), as an extra link on a fixed joint;
- per moving joint, viscous friction Fv, Coulomb friction Fs and rotor inertia Ia (Khalil &
  Dombre, eq. 31: tau += Fv qd + Fs sign(qd) + Ia qdd), drawn relative to the joint's effort
  limit for rotary joints.

The truth URDF carries Fv and Fs as ``<dynamics damping friction>``, which MuJoCo's importer reads
as joint ``damping`` and ``frictionloss``; ``armature`` goes to the simulator separately.
"""
from dataclasses import dataclass
import xml.etree.ElementTree as ElementTree

import numpy as np

from rnea_ros.core.model import RobotModel
from rnea_ros.core.payload import Payload, payload_urdf
from rnea_ros.core.urdf import parse_urdf

MASS_RANGE = 0.20           # relative
COM_RANGE = 0.02            # m, per axis
INERTIA_RANGE = 0.30        # relative, per principal second moment
PAYLOAD_MASS = (0.6, 1.2)   # kg
PAYLOAD_OFFSET = (0.08, 0.15)   # m along the last link's z axis (beyond the flange)
# Rotary joints, relative to the effort limit (panda: 87 N m -> Fs 0.4 to 1.3 N m).
COULOMB_RANGE = (0.005, 0.015)      # Fs / effort limit
VISCOUS_RANGE = (0.005, 0.015)      # Fv / effort limit per rad/s
ARMATURE_RANGE = (0.0003, 0.001)    # Ia / effort limit, kg m^2 per N m
# Prismatic joints (grippers): absolute values.
PRISMATIC_COULOMB = (0.02, 0.05)    # N
PRISMATIC_VISCOUS = (0.2, 0.5)      # N s/m
ROTARY = ('revolute', 'continuous')


@dataclass
class Perturbation:
    """The truth drawn by :func:`perturb_robot` and how it differs from the nominal URDF."""

    seed: int
    truth_urdf: str             # perturbed inertials, payload link, joint <dynamics>
    payload: Payload
    friction_viscous: dict      # joint -> Fv
    friction_coulomb: dict      # joint -> Fs
    armature: dict              # joint -> Ia
    links: list                 # rows (link, nominal mass, truth mass, com shift, moment ratios)

    def truth_model(self, **options):
        """Return the truth as a RobotModel, friction and rotor inertia included."""
        return RobotModel.from_urdf_string(
            self.truth_urdf, friction_viscous=self.friction_viscous,
            friction_coulomb=self.friction_coulomb, armature=self.armature, **options)

    def joint_values(self, names, what):
        """Return ``friction_viscous``/``friction_coulomb``/``armature`` in ``names`` order."""
        values = getattr(self, what)
        return [float(values.get(name, 0.0)) for name in names]

    def summary(self):
        """Return a printable description of the perturbation."""
        head = ('robot perturbation (seed {}): masses +-{:.0f} %, centres of mass +-{:.0f} cm, '
                'principal inertias +-{:.0f} %')
        lines = [head.format(self.seed, 100 * MASS_RANGE, 100 * COM_RANGE, 100 * INERTIA_RANGE)]
        lines.append('  {:<18} {:>8} {:>8} {:>22} {:>20}'.format(
            'link', 'mass', 'truth', 'com shift (mm)', 'inertia ratios'))
        for name, mass, truth, shift, ratios in self.links:
            lines.append('  {:<18} {:8.3f} {:8.3f} {:>22} {:>20}'.format(
                name, mass, truth, ' '.join('{:+5.1f}'.format(1e3 * s) for s in shift),
                ' '.join('{:.2f}'.format(r) for r in ratios)))
        lines.append('  payload: ' + self.payload.describe())
        lines.append('  {:<20} {:>10} {:>10} {:>12}'.format('joint', 'Fv', 'Fs', 'armature'))
        for name in self.friction_viscous:
            lines.append('  {:<20} {:10.4f} {:10.4f} {:12.5f}'.format(
                name, self.friction_viscous[name], self.friction_coulomb[name],
                self.armature[name]))
        return '\n'.join(lines)


def second_moments(inertia):
    """Return Sigma = tr(I)/2 1 - I, the second moment of mass about the centre of mass."""
    return 0.5 * np.trace(inertia) * np.eye(3) - inertia


def inertia_from_second_moments(sigma):
    """Return I = tr(Sigma) 1 - Sigma (the inverse of :func:`second_moments`)."""
    return np.trace(sigma) * np.eye(3) - sigma


def perturb_inertia(inertia, factors):
    """Scale the principal second moments of ``inertia`` (about the COM) by ``factors`` (3)."""
    values, vectors = np.linalg.eigh(second_moments(np.asarray(inertia, dtype=float)))
    values = np.clip(values, 0.0, None) * np.asarray(factors, dtype=float)
    return inertia_from_second_moments(vectors @ np.diag(values) @ vectors.T)


def physically_consistent(mass, inertia, tolerance=1e-12):
    """Return True for mass > 0 and an inertia (about the COM) whose Sigma is PSD."""
    inertia = np.asarray(inertia, dtype=float)
    return bool(mass > 0 and np.allclose(inertia, inertia.T) and
                np.linalg.eigvalsh(second_moments(inertia)).min() >= -tolerance *
                max(np.trace(inertia), 1e-300))


def _set_inertial(link_element, mass, com, inertia):
    """Replace a URDF link's <inertial> by mass, COM (link frame) and inertia (link axes)."""
    old = link_element.find('inertial')
    if old is not None:
        link_element.remove(old)
    inertial = ElementTree.Element('inertial')
    ElementTree.SubElement(inertial, 'origin', xyz=' '.join(repr(float(c)) for c in com),
                           rpy='0 0 0')
    ElementTree.SubElement(inertial, 'mass', value=repr(float(mass)))
    keys = {'ixx': (0, 0), 'ixy': (0, 1), 'ixz': (0, 2), 'iyy': (1, 1), 'iyz': (1, 2),
            'izz': (2, 2)}
    ElementTree.SubElement(inertial, 'inertia',
                           **{key: repr(float(inertia[rc])) for key, rc in keys.items()})
    link_element.insert(0, inertial)


def _last_rotary_link(urdf_xml):
    """Return the deepest link moved by a rotary joint (the flange of an arm)."""
    _, _, joints = parse_urdf(urdf_xml)
    parent = {joint.child: joint for joint in joints}

    def depth(link):
        count = 0
        while link in parent:
            link, count = parent[link].parent, count + 1
        return count
    rotary = [joint.child for joint in joints if joint.type in ROTARY]
    if not rotary:
        raise ValueError('the robot has no revolute joint to carry a payload')
    return max(rotary, key=depth)


def perturb_robot(urdf_xml, seed=0, mass_range=MASS_RANGE, com_range=COM_RANGE,
                  inertia_range=INERTIA_RANGE, payload_mass=PAYLOAD_MASS, friction=True):
    """Return the :class:`Perturbation` drawn with ``seed`` from the nominal URDF text.

    ``payload_mass`` is a (low, high) range in kg or a number; ``friction`` False leaves the
    joints frictionless and without rotor inertia.
    """
    rng = np.random.default_rng(seed)
    _, link_specs, joint_specs = parse_urdf(urdf_xml)
    root = ElementTree.fromstring(urdf_xml)
    elements = {element.get('name'): element for element in root.findall('link')}
    rows = []
    for spec in link_specs:
        if spec.mass <= 0.0:
            continue
        mass = spec.mass * rng.uniform(1 - mass_range, 1 + mass_range)
        shift = rng.uniform(-com_range, com_range, 3)
        factors = rng.uniform(1 - inertia_range, 1 + inertia_range, 3)
        inertia = perturb_inertia(spec.inertia, factors)
        _set_inertial(elements[spec.name], mass, np.asarray(spec.com) + shift, inertia)
        ratios = np.linalg.eigvalsh(inertia) / np.clip(np.linalg.eigvalsh(spec.inertia),
                                                       1e-300, None)
        rows.append((spec.name, spec.mass, mass, shift, ratios))
    moving = [joint for joint in joint_specs if joint.type in ROTARY + ('prismatic',)]
    fv, fs, ia = {}, {}, {}
    for joint in moving:
        if joint.type in ROTARY:
            effort = joint.effort if np.isfinite(joint.effort) else 10.0
            fs[joint.name] = effort * rng.uniform(*COULOMB_RANGE) if friction else 0.0
            fv[joint.name] = effort * rng.uniform(*VISCOUS_RANGE) if friction else 0.0
            ia[joint.name] = effort * rng.uniform(*ARMATURE_RANGE) if friction else 0.0
        else:
            fs[joint.name] = rng.uniform(*PRISMATIC_COULOMB) if friction else 0.0
            fv[joint.name] = rng.uniform(*PRISMATIC_VISCOUS) if friction else 0.0
            ia[joint.name] = 0.0
    for element in root.findall('joint'):
        name = element.get('name')
        if name in fv:
            old = element.find('dynamics')
            if old is not None:
                element.remove(old)
            ElementTree.SubElement(element, 'dynamics', damping=repr(fv[name]),
                                   friction=repr(fs[name]))
    low, high = np.broadcast_to(np.asarray(payload_mass, dtype=float), (2,))
    mass = rng.uniform(low, high)
    com = (rng.uniform(-0.02, 0.02), rng.uniform(-0.02, 0.02), rng.uniform(*PAYLOAD_OFFSET))
    radius = 0.04       # a solid cylinder of 4 cm radius and 8 cm height about its COM
    side = mass * (3 * radius ** 2 + 0.08 ** 2) / 12.0
    payload = Payload(_last_rotary_link(urdf_xml), mass, com,
                      [side, side, 0.5 * mass * radius ** 2, 0.0, 0.0, 0.0])
    truth = payload_urdf(ElementTree.tostring(root, encoding='unicode'), payload)
    return Perturbation(int(seed), truth, payload, fv, fs, ia, rows)
