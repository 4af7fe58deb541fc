"""Joint models: ``jcalc`` (RBDA §4.4, Table 4.1) for the joint kinds rnea_ros supports.

A joint's frame coincides with its child link's frame at q = 0 (URDF convention).  The joint
transform ``XJ`` maps motion from the joint's *predecessor* frame (the parent link frame moved by
the fixed placement ``XT``) into the child frame; ``S`` is the motion subspace in the child frame,
``[lin; ang]`` ordered as in :mod:`rnea_ros.core.spatial`.

Kinds (stored as small integers in the frozen model):

- ``REVOLUTE`` (URDF revolute and continuous): rotation q about the unit axis u, S = [0; u].
- ``PRISMATIC``: translation q along the unit axis u, S = [u; 0].
- ``FREE_FLYER``: the floating base, q = [x, y, z, qx, qy, qz, qw] (position and orientation of
  the base in the world), velocity = base twist in the base frame, S = 1 (6x6 identity).
"""

import numpy as np

from rnea_ros.core.spatial import plucker, quat_to_matrix, rot_axis

REVOLUTE = 0
PRISMATIC = 1
FREE_FLYER = 2

KIND_NAMES = {REVOLUTE: 'revolute', PRISMATIC: 'prismatic', FREE_FLYER: 'free-flyer'}
NQ = {REVOLUTE: 1, PRISMATIC: 1, FREE_FLYER: 7}
NV = {REVOLUTE: 1, PRISMATIC: 1, FREE_FLYER: 6}

URDF_KINDS = {'revolute': REVOLUTE, 'continuous': REVOLUTE, 'prismatic': PRISMATIC}


def kind_from_urdf(joint_type, joint_name):
    """Return the kind of a moving URDF joint type, or raise ValueError for unsupported types."""
    try:
        return URDF_KINDS[joint_type]
    except KeyError:
        raise ValueError(
            f'joint {joint_name!r} has type {joint_type!r}, which rnea_ros does not support '
            '(supported: revolute, continuous, prismatic, fixed; a floating base is set with '
            'floating_base=True)') from None


def jcalc(kind, axis, q):
    """Return (XJ, S) for a joint of the given kind, unit axis and joint position(s) q."""
    if kind == REVOLUTE:
        XJ = plucker(rot_axis(axis, q[0]).T, np.zeros(3))
        S = np.concatenate([np.zeros(3), axis]).reshape(6, 1)
    elif kind == PRISMATIC:
        XJ = plucker(np.eye(3), axis * q[0])
        S = np.concatenate([axis, np.zeros(3)]).reshape(6, 1)
    elif kind == FREE_FLYER:
        XJ = plucker(quat_to_matrix(q[3:7]).T, q[:3])
        S = np.eye(6)
    else:
        raise ValueError(f'unknown joint kind {kind}')
    return XJ, S
