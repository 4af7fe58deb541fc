"""The Coriolis matrix C(q, qd) of the Christoffel symbols (so that Hdot - 2C is skew).

``C(q, qd) qd`` is the Coriolis and centrifugal effort of
:func:`~rnea_ros.core.dynamics.coriolis_torques`, and ``Hdot = C + C^T``: the C that a momentum
observer needs (De Luca & Mattone 2005; Haddadin, De Luca & Albu-Schäffer, IEEE T-RO 2017),
equal to Pinocchio's ``computeCoriolisMatrix``.  The algorithm (root-frame quantities,
composite inertias as in the CRBA, RBDA Table 6.2) is
:func:`rnea_ros.core.reference.coriolis_matrix`, its numba kernel
:func:`rnea_ros.core.kernels.coriolis`.  Model joint order and velocity layout (floating base:
Pinocchio's free-flyer layout); joint friction and rotor inertia do not enter C (the armature
is constant in H).
"""

import numpy as np

from rnea_ros.core import kernels
from rnea_ros.core.checks import (check_quaternion, entry_point, F8, finite_vector,
                                  raise_status, vector, workspace)
from rnea_ros.core.layout import STATUS_OVERFLOW

_empty = np.empty
_kernel = kernels.coriolis
_entry = entry_point(_kernel)


def coriolis_matrix(model, q, qd, ws=None):
    """Return the (nv, nv) Coriolis matrix C(q, qd): C qd = Coriolis efforts, Hdot = C + C^T.

    ValueError when q or qd has the wrong length or a non-finite entry (or a floating-base
    quaternion of zero norm).
    """
    try:       # 1-D float64 q, qd: the kernel's entry point at once (checks.entry_point)
        if q.dtype is F8 and qd.dtype is F8 and q.ndim == 1 and qd.ndim == 1:
            buffer = model.default_workspace.buffer if ws is None else \
                ws.buffer if ws.nbodies == model.nbodies else None
            nv = model.nv
            C = _empty((nv, nv))
            if _entry(model.kernel_model, buffer, q, qd, C) == 0:
                return C
    except (AttributeError, TypeError, ValueError):       # not arrays, not a model
        pass
    ws = workspace(model, ws)
    q = finite_vector(q, model.nq, 'q', model)
    qd = vector(qd, model.nv, 'qd', model)
    check_quaternion(model, q)
    finite_vector(qd, model.nv, 'qd', model)
    C = _empty((model.nv, model.nv))
    status = _kernel(model.kernel_model, ws.buffer, q, qd, C)
    if status == STATUS_OVERFLOW:
        raise ValueError(f"the Coriolis matrix overflows for robot '{model.name}': q or qd "
                         'too large')
    if status:
        raise_status(model, status, (q, qd, qd), ('q', 'qd', 'qd'))
    return C


__all__ = ['coriolis_matrix']
