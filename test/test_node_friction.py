"""The node applies the whole friction law and the effort offsets (real rclpy, test_node harness).

The published efforts equal the core's inverse dynamics of a model built with the same options
(rnea_ros.core.friction: direction-dependent Fv/Fs, Stribeck, tanh sign, offsets).
"""

import numpy as np
from rnea_ros import inverse_dynamics, RobotModel
import test_node
from test_node import _array, _state, ARM, PANDA

context = test_node.context
make = test_node.make
panda = test_node.panda

ZERO = np.zeros(9)
OFFSETS = [0.3, -0.2, 0.1, -0.05, 0.02, 0.0, -0.1]


def _model(**options):
    with open(PANDA, encoding='utf-8') as f:
        return RobotModel.from_urdf_string(f.read(), **options)


def test_whole_friction_law_and_offsets_reach_the_efforts(make, panda):
    h = make(mode='inverse_dynamics', friction_joints=ARM, friction_viscous=[0.5],
             friction_viscous_negative=[1.5], friction_coulomb=[0.4],
             friction_coulomb_negative=[0.8], friction_stribeck=[0.3], effort_offset=OFFSETS,
             friction_law='tanh', coulomb_band=0.05, stribeck_velocity=0.2,
             clamp_efforts=False)
    model = _model(friction_viscous=dict.fromkeys(ARM, 0.5),
                   friction_viscous_negative=dict.fromkeys(ARM, 1.5),
                   friction_coulomb=dict.fromkeys(ARM, 0.4),
                   friction_coulomb_negative=dict.fromkeys(ARM, 0.8),
                   friction_stribeck=dict.fromkeys(ARM, 0.3),
                   effort_offset=dict(zip(ARM, OFFSETS)), friction_law='tanh',
                   coulomb_band=0.05, stribeck_velocity=0.2)
    q, qd, qdd = _state(panda, seed=30)
    qd[:7] = [0.3, -0.3, 0.02, -0.02, 1.0, -1.0, 0.0]       # both directions, slow and fast
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(model, q, qd, qdd), rtol=1e-12,
                               atol=1e-12)
    assert not np.allclose(out.effort, inverse_dynamics(_model(), q, qd, qdd), atol=1e-3)


BANDS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.03, 0.07]
STRIBECK_VELOCITIES = [0.05, 0.1, 0.2, 0.3, 0.5, 0.08, 0.15]


def test_per_joint_velocity_scales_reach_the_efforts(make, panda):
    """friction_coulomb_band / friction_stribeck_velocity: the core's law with each joint's v_s."""
    h = make(mode='inverse_dynamics', friction_joints=ARM, friction_viscous=[0.5],
             friction_coulomb=[0.4], friction_stribeck=[0.3], friction_law='tanh',
             friction_coulomb_band=BANDS, friction_stribeck_velocity=STRIBECK_VELOCITIES,
             clamp_efforts=False)
    common = {'friction_viscous': dict.fromkeys(ARM, 0.5),
              'friction_coulomb': dict.fromkeys(ARM, 0.4),
              'friction_stribeck': dict.fromkeys(ARM, 0.3), 'friction_law': 'tanh'}
    model = _model(friction_coulomb_band=dict(zip(ARM, BANDS)),
                   friction_stribeck_velocity=dict(zip(ARM, STRIBECK_VELOCITIES)), **common)
    q, qd, qdd = _state(panda, seed=32)
    qd[:7] = [0.02, -0.03, 0.04, -0.05, 0.06, -0.07, 0.0]   # inside the bands: scales matter
    h.publish('accelerations_array', _array(qdd))
    out = h.joint_state(panda.joint_names, q, qd)
    np.testing.assert_allclose(out.effort, inverse_dynamics(model, q, qd, qdd), rtol=1e-12,
                               atol=1e-12)
    assert not np.allclose(out.effort, inverse_dynamics(_model(**common), q, qd, qdd),
                           atol=1e-3)


def test_effort_offsets_apply_in_gravity_compensation(make, panda):
    h = make(mode='gravity_compensation', friction_joints=ARM, effort_offset=OFFSETS,
             friction_viscous=[5.0])
    q, qd, _ = _state(panda, seed=31)
    out = h.joint_state(panda.joint_names, q, qd)
    expected = inverse_dynamics(panda, q, ZERO, ZERO)
    expected[:7] += OFFSETS
    np.testing.assert_allclose(out.effort, expected, rtol=1e-12, atol=1e-12)
