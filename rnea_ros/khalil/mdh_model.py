"""An MDH table as the dynamics core's model, or as URDF text (Khalil 2010 §2 -> RBDA §4.1).

The tree part (frames 1..NL) becomes a :class:`rnea_ros.core.model.RobotModel`: Khalil's
inertia about O_j moves to the centre of mass, Ia becomes armature, Fs and Fv friction.
"""

import math
import os

import numpy as np

from rnea_ros.core.model import RobotModel
from rnea_ros.core.specs import JointSpec, LinkSpec
from rnea_ros.khalil.mdh import khalil_to_com, LIMITS, MDHTable
from rnea_ros.khalil.mdh_files import data_path, load_mdh

_URDF_UNLIMITED = 1e30


# -- conversion to the dynamics core ------------------------------------------------------------

def mdh_to_specs(table):
    """Return ([LinkSpec], [JointSpec]) of the table's equivalent tree (frames 1..NL).

    Frame j is link j's frame; the joint frame at q = 0 is iTj with theta = theta offset
    (revolute) or r = r offset (prismatic), the axis is z_j.  Khalil's inertia about O_j is moved
    to the centre of mass (parallel-axis theorem); Fv and Fs also become the URDF-style
    ``damping`` and ``friction`` of the joint (Ia has no URDF equivalent).
    """
    links = [LinkSpec(table.base)]
    joints = []
    for f in table.tree_frames:
        mass, com, Ic = _com_inertia(f)
        links.append(LinkSpec(f.link_name, mass=mass, com=tuple(com), inertia=Ic))
        X = f.fixed_transform()
        kind = ('revolute', 'prismatic', 'fixed')[f.sigma]
        if kind == 'revolute' and math.isinf(f.lower) and math.isinf(f.upper):
            kind = 'continuous'
        joints.append(JointSpec(
            f.joint_name, kind, table.link_name(f.a), f.link_name, rotation=X[:3, :3],
            translation=tuple(X[:3, 3]), axis=(0.0, 0.0, 1.0), lower=f.lower, upper=f.upper,
            effort=f.effort, velocity=f.velocity, damping=f.Fv, friction=f.Fs))
    return links, joints


def _com_inertia(f):
    """Return (mass, com, inertia about the COM) of frame f, or a clear ValueError.

    Physically consistent: the inertia about the centre of mass, J - M (c.c I - c c^T) with
    c = MS / M, has principal moments >= 0 that satisfy the triangle inequality
    I1 <= I2 + I3 (a body's mass distribution cannot give anything else).
    """
    where = f'MDH frame {f.j}'
    try:
        mass, com, Ic = khalil_to_com(*f.inertia_about_origin())
    except ValueError as e:
        raise ValueError(f'{where}: {e}') from None
    eig = np.linalg.eigvalsh(Ic)
    tol = 1e-9 * max(1.0, np.abs(Ic).max())
    if eig.min() < -tol or eig[2] > eig[0] + eig[1] + tol:
        raise ValueError(f'{where}: the inertial parameters are not physically consistent: the '
                         'inertia about the centre of mass, J - M (c.c I - c c^T) with c = MS / M,'
                         f' has principal moments {eig.tolist()}; they must be >= 0 and the '
                         'largest at most the sum of the other two (triangle inequality)')
    return mass, com, Ic


def model_from_mdh(table, floating_base=False, **options):
    """Return the :class:`RobotModel` of the equivalent tree of an MDH table (Khalil 2010 §2).

    The joint order of the model (``model.joint_names``) is the table order of the moving tree
    frames, i.e. q_tr of eq. (2).  The table's Ia, Fs and Fv become the model's armature and
    joint friction, so the core algorithms include eq. (31) (with the core's smoothed sign(qd),
    see ``coulomb_band``).  ``options`` are passed to :meth:`RobotModel.from_specs` (explicit
    ``armature``, ``friction_viscous``, ``friction_coulomb`` override the table).  Cut joints
    are not part of the tree: see :func:`loop_constraints`.  ``table`` may also be the path of
    a ``.yaml``/``.csv`` table.
    """
    if isinstance(table, (str, os.PathLike)):
        table = load_mdh(table)
    if not isinstance(table, MDHTable):
        raise ValueError(f'expected an MDHTable, got {type(table).__name__}')
    links, joints = mdh_to_specs(table)
    js = table.joints
    terms = {'armature': {f.joint_name: f.Ia for f in js},
             'friction_viscous': {f.joint_name: f.Fv for f in js},
             'friction_coulomb': {f.joint_name: f.Fs for f in js}}
    terms.update(options)
    return RobotModel.from_specs(links, joints, floating_base=floating_base,
                                 joint_names=list(table.joint_names), name=table.name, **terms)


def mdh_to_urdf(table):
    """Return URDF text of the equivalent tree (for robot_state_publisher or the node).

    Revolute joints without limits become ``continuous``; infinite limits of prismatic joints
    and missing effort / velocity limits, which URDF cannot express, are written as +-1e30.
    Rotor inertias Ia are not part of URDF and are dropped.
    """
    links, joints = mdh_to_specs(table)
    out = [f'<robot name="{table.name}">']
    for link in links:
        out.append(f'  <link name="{link.name}">')
        if link.mass > 0.0:
            I_ = [repr(float(link.inertia[a, b])) for a, b in
                  ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))]
            out.append(f'    <inertial><origin xyz="{_fmt(link.com)}" rpy="0 0 0"/>'
                       f'<mass value="{float(link.mass)!r}"/><inertia ixx="{I_[0]}" '
                       f'ixy="{I_[1]}" ixz="{I_[2]}" iyy="{I_[3]}" iyz="{I_[4]}" izz="{I_[5]}"/>'
                       '</inertial>')
        out.append('  </link>')
    for j in joints:
        out.append(f'  <joint name="{j.name}" type="{j.type}">')
        out.append(f'    <parent link="{j.parent}"/><child link="{j.child}"/>')
        out.append(f'    <origin xyz="{_fmt(j.translation)}" rpy="{_fmt(_rpy(j.rotation))}"/>')
        if j.type != 'fixed':
            out.append('    <axis xyz="0 0 1"/>')
        if j.type in ('revolute', 'prismatic'):
            lim = ' '.join(f'{k}="{_urdf_limit(getattr(j, k))!r}"' for k in LIMITS)
            out.append(f'    <limit {lim}/>')
        if j.damping or j.friction:
            out.append(f'    <dynamics damping="{float(j.damping)!r}" '
                       f'friction="{float(j.friction)!r}"/>')
        out.append('  </joint>')
    out.append('</robot>')
    return '\n'.join(out) + '\n'


def _urdf_limit(x):
    """Return x, or +-1e30 for an infinite limit (URDF has no way to write 'unlimited')."""
    return float(x) if math.isfinite(x) else math.copysign(_URDF_UNLIMITED, x)


def _fmt(v):
    return ' '.join(repr(float(x)) for x in v)


def _rpy(R):
    """Return URDF roll, pitch, yaw of R = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if abs(math.cos(pitch)) < 1e-12:
        return (math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0)
    return (math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0]))


def main(argv=None):
    """Print the URDF of an MDH table: ``python -m rnea_ros.khalil table.yaml|table.csv``.

    A name that is not a file but a table shipped in ``rnea_ros/khalil/data`` (rx90.yaml,
    rx90.csv, fourbar.yaml, rpr3.yaml) is read from there.
    """
    import sys
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1:
        print('usage: python -m rnea_ros.khalil TABLE.yaml|TABLE.csv  (prints URDF)',
              file=sys.stderr)
        return 2
    path = args[0]
    if not os.path.exists(path) and os.path.isfile(data_path(os.path.basename(path))):
        path = data_path(os.path.basename(path))           # a shipped table: rx90.yaml, ...
    try:
        sys.stdout.write(mdh_to_urdf(load_mdh(path)))
    except ValueError as e:
        print(f'error: {e}', file=sys.stderr)
        return 1
    return 0
