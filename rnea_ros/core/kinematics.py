"""Forward kinematics of link frames: placement and Jacobian (RBDA §4.1 and §4.2, eq. 4.38).

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

The numba kernels are :mod:`rnea_ros.core.kernels.kinematics`; the numpy references
:func:`rnea_ros.core.reference.link_pose` and :func:`rnea_ros.core.reference.frame_jacobian`.
"""

import numpy as np

from rnea_ros.core import kernels
from rnea_ros.core.checks import (check_quaternion, entry_point, F8, finite_vector, link_frame,
                                  raise_status, workspace)
from rnea_ros.core.layout import STATUS_OVERFLOW

REFERENCES = ('LOCAL', 'WORLD', 'LOCAL_WORLD_ALIGNED')
_CODE = {name: code for code, name in enumerate(REFERENCES)}   # the kernel's LOCAL, WORLD, ...
_LOCAL = REFERENCES[0]          # the default: identity test before the dict (~10 ns a call)
_empty = np.empty
_placement_kernel = kernels.frame_placement
_jacobian_kernel = kernels.frame_jacobian
_placement_entry = entry_point(_placement_kernel)
_jacobian_entry = entry_point(_jacobian_kernel)


def link_frames(model):
    """Return {link: [body, body_R_link (9), origin in body (3)]}: the kernels' frame rows.

    Built once per model and kept on it (the model is frozen, so they never change), with the
    Jacobian's shape (6, nv).
    """
    try:
        return model._link_frames
    except AttributeError:
        pass
    model._jacobian_shape = (6, model.nv)
    frames = {}
    for link, (body, R, p) in model.link_body.items():
        # writable, as every kernel argument (a read-only array costs numba 100 ns a call)
        frames[link] = np.ascontiguousarray(
            np.concatenate([[float(body)], np.asarray(R, float).ravel(), p]))
    model._link_frames = frames
    return frames


def _run(kernel, model, q, link, ws, out, *extra):
    """Run the checked call: convert and check every input, run the kernel, raise on a status.

    ``ws`` is checked to be the model's like everywhere, though the kernels need none.
    """
    workspace(model, ws)
    q = finite_vector(q, model.nq, 'q', model)
    check_quaternion(model, q)
    link_frame(model, link)
    status = kernel(model.kernel_model, link_frames(model)[link], q, out, *extra)
    if status == STATUS_OVERFLOW:
        raise ValueError(f"the placement of link '{link}' overflows for robot "
                         f"'{model.name}': q too large")
    if status:
        raise_status(model, status, (q,), ('q',))
    return out


def frame_placement(model, q, link, ws=None):
    """Return the 4x4 transform of ``link``'s frame in the root (world) frame at q.

    ValueError for an unknown link, a q of the wrong length or with a non-finite entry, or a
    floating-base quaternion of zero norm.  ``ws`` (a Workspace of the model) is accepted as by
    the other algorithms; the kinematics need none.
    """
    try:       # a 1-D float64 q: the kernel's entry point at once (see checks.entry_point)
        if ws is None and q.dtype is F8 and q.ndim == 1:
            M = _empty((4, 4))
            if not _placement_entry(model.kernel_model, model._link_frames[link], q, M):
                return M
    except (AttributeError, KeyError, TypeError, ValueError):   # first call, bad input
        pass
    return _run(_placement_kernel, model, q, link, ws, _empty((4, 4)))


def frame_jacobian(model, q, link, reference=_LOCAL, ws=None):
    """Return the (6, nv) Jacobian [linear; angular] of ``link``'s frame at q (see module doc).

    ``reference``: 'LOCAL' (default), 'WORLD' or 'LOCAL_WORLD_ALIGNED', as Pinocchio's
    ``getFrameJacobian``.  ValueError for an unknown link or reference and for a bad q.
    """
    try:
        if ws is None and q.dtype is F8 and q.ndim == 1:
            J = _empty(model._jacobian_shape)
            if not _jacobian_entry(model.kernel_model, model._link_frames[link], q, J,
                                   0 if reference is _LOCAL else _CODE[reference]):
                return J
    except (AttributeError, KeyError, TypeError, ValueError):
        pass
    if reference not in _CODE:
        raise ValueError(f'reference must be one of {", ".join(REFERENCES)}, got '
                         f'{reference!r}')
    return _run(_jacobian_kernel, model, q, link, ws, _empty((6, model.nv)), _CODE[reference])


__all__ = ['frame_placement', 'frame_jacobian', 'link_frames', 'REFERENCES']
