"""Forward dynamics by the articulated-body algorithm (RBDA §7.3, Table 7.1): public API.

Same notation and conventions as :mod:`rnea_ros.core.dynamics`.  Joint friction and armature
(Khalil 2010 eq. 31) are applied as in inverse dynamics, so that
``forward_dynamics(q, qd, inverse_dynamics(q, qd, qdd)) == qdd``.  The numba kernel is
:func:`rnea_ros.core.kernels.aba`, its numpy reference :func:`rnea_ros.core.reference.aba`.
"""

import numpy as np

from rnea_ros.core import kernels
from rnea_ros.core.checks import prepare, run_kernel, vector
from rnea_ros.core.dynamics import joint_friction

_empty = np.empty      # module-level names: the per-call fast path looks up less
_aba_kernel = kernels.aba
_NAMES = ('q', 'qd', 'tau')


def forward_dynamics(model, q, qd, tau, f_ext=None, gravity=None, ws=None):
    """Return qdd = FD(q, qd, tau, f_ext) by the articulated-body algorithm (numba kernel).

    Joint friction and armature of the model are applied as in inverse_dynamics, so that
    ``forward_dynamics(q, qd, inverse_dynamics(q, qd, qdd))`` returns qdd.  A singular mass
    matrix (a massless moving subtree without armature) raises ValueError naming the joint.
    """
    # The common call (float64 arrays, no options, no friction) goes straight to the kernel,
    # as in inverse_dynamics; any failure takes the checked path, which raises the error.
    if ws is None and f_ext is None and gravity is None and not model.has_joint_terms:
        ws = model.default_workspace
        if not ws.custom:
            qdd = _empty(model.nv)
            try:
                status = _aba_kernel(model.kernel_model, ws.buffer, q, qd, tau, qdd)
            except (TypeError, ValueError):     # not float64 C-contiguous vectors
                status = -1
            if status == 0:
                return qdd
    ws = prepare(model, ws, f_ext, gravity, None)
    qdd = _empty(model.nv)
    if model.has_joint_terms:                   # friction is taken off tau first
        qd = vector(qd, model.nv, 'qd', model)
        tau = vector(tau, model.nv, 'tau', model) - joint_friction(model, np.nan_to_num(qd))
    run_kernel(_aba_kernel, model, ws, (q, qd, tau), _NAMES, qdd)
    return qdd
