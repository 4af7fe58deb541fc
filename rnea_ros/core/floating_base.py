"""Inverse dynamics of a free-floating robot (RBDA ch. 9; Khalil 2010 §7.2).

The base acceleration follows from the composite inertia of the whole robot and the wrench on
the base, then the joint torques follow from RNEA.
"""

import numpy as np

from rnea_ros.core.checks import finite_vector, vector
from rnea_ros.core.crba import mass_matrix
from rnea_ros.core.dynamics import inverse_dynamics


def floating_base_inverse_dynamics(model, q, v, qdd_joints, f_ext=None, base_wrench=None,
                                   gravity=None):
    """Return (base_acceleration, tau_joints) of a free-floating robot.

    Given the state, the joint accelerations, the external wrenches and the wrench acting on
    the base (``base_wrench`` [force, torque], base frame about its origin; default 0: a robot
    in flight or in space), the base acceleration (same convention as qdd[:6]: base frame,
    [linear, angular]) follows from the whole robot's composite inertia I_c^0 = H[:6, :6]
    (Khalil 2010 §7.2, eqs. 95-97): ``I_c^0 a_b = base_wrench - tau_0[:6]``, where tau_0 is
    RNEA with zero base acceleration.
    """
    if not model.floating_base:
        raise ValueError('floating_base_inverse_dynamics needs a model built with '
                         'floating_base=True')
    qdd_joints = vector(qdd_joints, model.njoints, 'qdd_joints', model)
    wrench = np.zeros(6) if base_wrench is None else vector(base_wrench, 6, 'base_wrench',
                                                            model)
    if not np.all(np.isfinite(wrench)):
        raise ValueError(f'base_wrench is not finite: {wrench.tolist()}')
    qdd = np.concatenate([np.zeros(6), qdd_joints])
    tau_0 = inverse_dynamics(model, q, v, qdd, f_ext=f_ext, gravity=gravity)
    H = mass_matrix(model, finite_vector(q, model.nq, 'q', model))
    a_base = np.linalg.solve(H[:6, :6], wrench - tau_0[:6])
    return a_base, tau_0[6:] + H[6:, :6] @ a_base
