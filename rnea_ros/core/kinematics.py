"""Forward kinematics of link frames: placement and Jacobian (RBDA §4.1 and §4.2 (eq. 4.38)).

Conventions (the same as Pinocchio's frames):

- A link frame is any link of the URDF, those merged into a body over fixed joints (tool,
  sensor, flange frames) included; a link fixed to the world of a fixed-base robot has a
  constant placement and a zero Jacobian.
- :func:`frame_placement` is ``0_M_link``, the 4x4 homogeneous transform of the link frame in
  the root frame: the root link's frame for a fixed base, the world frame for a floating base
  (whose pose is q[:7]).
- :func:`frame_jacobian` maps the model's velocity vector qd (model joint order; floating base:
  Pinocchio's free-flyer layout, base twist in the base frame first) to the link's twist
  ``[linear; angular]``, expressed per ``reference`` as ``pinocchio.getFrameJacobian``:
  'LOCAL' (the link's velocity in the link frame, the linear part that of its origin), 'WORLD'
  (the spatial velocity in the root frame, the linear part that of the point at the root
  origin) and 'LOCAL_WORLD_ALIGNED' (the velocity of the link origin and the angular velocity,
  both in root-frame axes).  Column k is zero unless joint k supports the link.
"""

import numpy as np

from rnea_ros.core import reference as ref
from rnea_ros.core.checks import check_quaternion, finite_vector, link_frame, workspace

REFERENCES = ('LOCAL', 'WORLD', 'LOCAL_WORLD_ALIGNED')


def _checked(model, q, link, ws):
    ws = workspace(model, ws)
    q = finite_vector(q, model.nq, 'q', model)
    check_quaternion(model, q)
    link_frame(model, link)
    return q, ws


def frame_placement(model, q, link, ws=None):
    """Return the 4x4 transform of ``link``'s frame in the root (world) frame at q.

    ValueError for an unknown link, a q of the wrong length or with a non-finite entry, or a
    floating-base quaternion of zero norm.
    """
    q, ws = _checked(model, q, link, ws)
    R, p = ref.link_pose(model, q, link)
    M = np.eye(4)
    M[:3, :3] = R
    M[:3, 3] = p
    return M


def frame_jacobian(model, q, link, reference='LOCAL', ws=None):
    """Return the (6, nv) Jacobian [linear; angular] of ``link``'s frame at q (see module doc).

    ``reference``: 'LOCAL' (default), 'WORLD' or 'LOCAL_WORLD_ALIGNED', as Pinocchio's
    ``getFrameJacobian``.  ValueError for an unknown link or reference and for a bad q.
    """
    if reference not in REFERENCES:
        raise ValueError(f'reference must be one of {", ".join(REFERENCES)}, got '
                         f'{reference!r}')
    q, ws = _checked(model, q, link, ws)
    return ref.frame_jacobian(model, q, link, reference)


__all__ = ['frame_placement', 'frame_jacobian', 'REFERENCES']
