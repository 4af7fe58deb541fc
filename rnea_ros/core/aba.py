"""Forward dynamics by the articulated-body algorithm (RBDA §7.3, Table 7.1): public API.

Same notation and conventions as :mod:`rnea_ros.core.dynamics`.  Joint friction and armature
(Khalil 2010 eq. 31) are applied as in inverse dynamics, so that
``forward_dynamics(q, qd, inverse_dynamics(q, qd, qdd)) == qdd``.  The numba kernel is
:func:`rnea_ros.core.kernels.aba`, its numpy reference :func:`rnea_ros.core.reference.aba`.
"""

import numpy as np

from rnea_ros.core import kernels
from rnea_ros.core.checks import fast_path, prepare, run_kernel, vector
from rnea_ros.core.dynamics import joint_friction

_NAMES = ('q', 'qd', 'tau')


@fast_path(kernels.aba)
def forward_dynamics(model, q, qd, tau, f_ext=None, gravity=None, base_acceleration=None,
                     ws=None):
    """Return qdd = FD(q, qd, tau, f_ext) by the articulated-body algorithm (numba kernel).

    Joint friction and armature of the model are applied as in inverse_dynamics, so that
    ``forward_dynamics(q, qd, inverse_dynamics(q, qd, qdd))`` returns qdd; ``gravity`` and
    ``base_acceleration`` (fixed base) mean what they mean there.  A singular mass matrix (a
    massless moving subtree without armature) raises ValueError naming the joint.
    """
    # Plain calls never get here: the decorator's fast path runs the kernel directly.
    ws = prepare(model, ws, f_ext, gravity, base_acceleration)
    qdd = np.empty(model.nv)
    if model.has_joint_terms:                   # friction is taken off tau first
        qd = vector(qd, model.nv, 'qd', model)
        tau = vector(tau, model.nv, 'tau', model) - joint_friction(model, np.nan_to_num(qd))
    run_kernel(kernels.aba, model, ws, (q, qd, tau), _NAMES, qdd)
    return qdd
