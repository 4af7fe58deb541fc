"""Base parameters: the analytic base set of a planar arm, and rank = count on real arms."""

import numpy as np
import pytest

from rnea_ros.analysis.base_parameters import base_parameters, random_states
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import regressor_batch
from rnea_ros.core.specs import JointSpec, LinkSpec
from robots import urdf_path


def planar_2r(l1=0.5):
    """Return a 2R arm moving in the x-y plane (axes z), second joint at (l1, 0, 0)."""
    links = [LinkSpec('base'), LinkSpec('link1', 2.0, (0.2, 0.01, 0.0), np.eye(3) * 0.1),
             LinkSpec('link2', 1.5, (0.3, -0.02, 0.0), np.eye(3) * 0.05)]
    joints = [JointSpec('j1', 'revolute', 'base', 'link1', axis=(0, 0, 1)),
              JointSpec('j2', 'revolute', 'link1', 'link2', translation=(l1, 0.0, 0.0),
                        axis=(0, 0, 1))]
    return RobotModel.from_specs(links, joints)


def test_planar_2r_arm_has_the_textbook_base_set():
    """Khalil and Dombre's 2R result: ZZ1 + l1^2 M2, MX1 + l1 M2, MY1, ZZ2, MX2, MY2.

    With gravity in the plane; with gravity along the axes MX1R and MY1 drop out.
    """
    model = planar_2r()
    bp = base_parameters(model, numbered=True, gravity=(0.0, -9.81, 0.0))
    assert bp.names == ['MX1 + 0.5*M2', 'MY1', 'ZZ1 + 0.25*M2', 'MX2', 'MY2', 'ZZ2']
    flat = base_parameters(model, numbered=True, gravity=(0.0, 0.0, -9.81))
    assert flat.names == ['ZZ1 + 0.25*M2', 'MX2', 'MY2', 'ZZ2']
    with_joints = base_parameters(model, friction=True, numbered=True,
                                  gravity=(0.0, 0.0, -9.81))
    assert with_joints.names[0] == 'ZZ1 + 0.25*M2 + Ia1'      # rotor inertia 1 regroups too
    assert 'Ia2' in with_joints.names and 'off1' in with_joints.names


@pytest.mark.parametrize('robot', ['panda', 'ur5'])
@pytest.mark.parametrize('friction', [False, True])
def test_rank_equals_base_count_and_base_regressor_reproduces_efforts(robot, friction):
    model = RobotModel.from_urdf_file(urdf_path(robot))
    bp = base_parameters(model, friction=friction, seed=1)
    Q, QD, QDD = random_states(model, 80, np.random.default_rng(99))
    W = regressor_batch(model, Q, QD, QDD, friction=friction)
    assert np.linalg.matrix_rank(W) == bp.count
    phi = np.random.default_rng(4).normal(size=W.shape[1])
    assert np.allclose(W @ phi, W[:, bp.base] @ bp.values(phi), rtol=0, atol=1e-9 *
                       np.abs(W @ phi).max())
