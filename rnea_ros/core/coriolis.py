"""The Coriolis matrix C(q, qd) of the Christoffel symbols (so that Hdot - 2C is skew).

``C(q, qd) qd`` is the Coriolis and centrifugal effort of :func:`~rnea_ros.core.dynamics.
coriolis_torques`, and ``Hdot = C + C^T``: the C that a momentum observer needs (De Luca &
Mattone 2005; Haddadin, De Luca & Albu-Schäffer, IEEE T-RO 2017), equal to Pinocchio's
``computeCoriolisMatrix``.  The algorithm (in root-frame quantities, composite inertias as in
the CRBA, RBDA Table 6.2) is :func:`rnea_ros.core.reference.coriolis_matrix`.  Model joint order
and velocity layout (floating base: Pinocchio's free-flyer layout); joint friction and rotor
inertia do not enter C (the armature is constant in H).
"""

from rnea_ros.core import reference
from rnea_ros.core.checks import check_quaternion, finite_vector, workspace


def coriolis_matrix(model, q, qd, ws=None):
    """Return the (nv, nv) Coriolis matrix C(q, qd): C qd = Coriolis efforts, Hdot = C + C^T.

    ValueError when q or qd has the wrong length or a non-finite entry (or a floating-base
    quaternion of zero norm).
    """
    ws = workspace(model, ws)
    q = finite_vector(q, model.nq, 'q', model)
    qd = finite_vector(qd, model.nv, 'qd', model)
    check_quaternion(model, q)
    return reference.coriolis_matrix(model, q, qd)


__all__ = ['coriolis_matrix']
