"""Physical plausibility checks the rnea node applies to a model before it drives a robot.

The dynamics core accepts any model it can compute with; a node that commands motors is stricter:
a description with no moving joint or an inertia that is not positive semi-definite is rejected
with the reason, and the node keeps its previous model.  Warnings: principal moments that
violate the triangle inequality (no rigid body has them, but the dynamics stays well defined;
some published URDFs have them), and a joint that moves no mass (a leaf link without
``<inertial>``: its effort is 0, inverse dynamics and gravity compensation are well defined;
:func:`rnea_ros.core.crba.massless_joint_warning`, the same warning ``rnea-ros torques``
prints).
"""

import numpy as np
from rnea_ros.core.crba import massless_joint_warning
from rnea_ros.core.layout import MASS
from rnea_ros.core.reference import body_inertia

_TOL = 1e-9


def _rotational_inertia_about_com(model, i):
    spatial = body_inertia(model, i)
    mass = model.reals[i, MASS]
    if mass <= 0.0:
        return spatial[3:, 3:]
    # Featherstone [angular; linear] or [linear; angular]: the block with mass on its diagonal
    # is the linear one; the other diagonal block is the rotational inertia about the origin.
    lin, ang = (spatial[:3, :3], spatial[3:, 3:])
    if not np.allclose(np.diag(lin), mass):
        lin, ang = ang, lin
    cross = spatial[:3, 3:] if lin is spatial[:3, :3] else spatial[3:, :3]
    skew_c = cross / mass      # m [c]x (up to sign and transposition)
    return ang + mass * skew_c @ skew_c   # I_origin - m [c]x[c]x^T  (sign-independent)


def check_inertias(model):
    """Return (error, warnings): why a body's inertia is not positive semi-definite, or None."""
    warnings = []
    for i, link in enumerate(model.body_links):
        inertia = _rotational_inertia_about_com(model, i)
        scale = max(1.0, float(np.abs(inertia).max()))
        if not np.allclose(inertia, inertia.T, atol=_TOL * scale):
            return f"link '{link}': inertia matrix is not symmetric", warnings
        moments = np.linalg.eigvalsh(0.5 * (inertia + inertia.T))
        if moments[0] < -_TOL * scale:
            return (f"link '{link}': inertia is not positive semi-definite (principal moments "
                    f'{moments.tolist()})'), warnings
        if moments[2] > moments[0] + moments[1] + _TOL * scale:
            warnings.append(f"link '{link}': principal moments {moments.tolist()} violate the "
                            'triangle inequality (no rigid body has this inertia)')
    return None, warnings


def check_model(model):
    """Return warnings; raise ValueError when the node should not drive ``model``."""
    if model.njoints == 0:
        raise ValueError(f"robot '{model.name}' has no moving joints: nothing to compute")
    error, warnings = check_inertias(model)
    if error:
        raise ValueError(f"robot '{model.name}': {error}")
    massless = massless_joint_warning(model)        # the rule rnea-ros torques applies too
    return warnings + ([massless] if massless else [])
