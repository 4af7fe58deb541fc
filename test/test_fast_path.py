"""The shared fast path of the per-call algorithms (core.checks.fast_path) changes no result."""

import inspect

import numpy as np
import pytest

from rnea_ros import forward_dynamics, inverse_dynamics, RobotModel
from robots import random_state, urdf_path


@pytest.fixture(scope='module', params=[False, True], ids=['fixed', 'floating'])
def panda(request):
    return RobotModel.from_urdf_file(urdf_path('panda'), floating_base=request.param)


def test_fast_and_checked_paths_give_the_same_bits(panda):
    """A plain call (kernel at once) equals the checked call (own workspace, lists)."""
    rng = np.random.default_rng(7)
    ws = panda.create_workspace()
    for _ in range(5):
        q, qd, qdd = random_state(panda, rng)
        tau = inverse_dynamics(panda, q, qd, qdd)
        assert np.array_equal(tau, inverse_dynamics(panda, q, qd, qdd, ws=ws))
        assert np.array_equal(tau, inverse_dynamics(panda, list(q), list(qd), list(qdd)))
        qdd_fd = forward_dynamics(panda, q, qd, tau)
        assert np.array_equal(qdd_fd, forward_dynamics(panda, q, qd, tau, ws=ws))
        assert np.allclose(qdd_fd, qdd, atol=1e-8)


def test_forward_dynamics_takes_the_base_acceleration_of_inverse_dynamics():
    """FD(ID(qdd, a_base), a_base) = qdd for a fixed base on a moving platform."""
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    rng = np.random.default_rng(3)
    q, qd, qdd = random_state(model, rng)
    a_base = [0.5, -1.0, 2.0, 0.3, 0.2, -0.1]
    tau = inverse_dynamics(model, q, qd, qdd, base_acceleration=a_base)
    assert not np.allclose(tau, inverse_dynamics(model, q, qd, qdd))
    np.testing.assert_allclose(forward_dynamics(model, q, qd, tau, base_acceleration=a_base),
                               qdd, atol=1e-9)


def test_friction_models_take_the_checked_path_with_the_same_result():
    """With friction and armature the plain call adds them exactly as a call with ws does."""
    model = RobotModel.from_urdf_file(urdf_path('ur5'), friction_viscous={'elbow_joint': 2.0},
                                      friction_coulomb={'shoulder_pan_joint': 1.5},
                                      armature={'wrist_1_joint': 0.3})
    rng = np.random.default_rng(4)
    q, qd, qdd = random_state(model, rng)
    tau = inverse_dynamics(model, q, qd, qdd)
    assert np.array_equal(tau, inverse_dynamics(model, q, qd, qdd, ws=model.create_workspace()))
    np.testing.assert_allclose(forward_dynamics(model, q, qd, tau), qdd, atol=1e-9)


def test_the_decorated_functions_keep_their_names_and_signatures():
    for fn, third in ((inverse_dynamics, 'qdd'), (forward_dynamics, 'tau')):
        params = list(inspect.signature(fn).parameters)
        assert params == ['model', 'q', 'qd', third, 'f_ext', 'gravity', 'base_acceleration',
                          'ws']
        assert fn.__module__.startswith('rnea_ros.core.') and fn.__doc__.startswith('Return')


def test_a_khalil_table_where_a_model_is_expected_is_a_type_error():
    """Not an AttributeError from deep inside: a TypeError that says how to build a model."""
    from rnea_ros.khalil import data_path, load_mdh
    table = load_mdh(data_path('rx90.yaml'))
    zero = [0.0] * 6
    for fn in (inverse_dynamics, forward_dynamics):
        with pytest.raises(TypeError, match=r'got MDHTable: build one with .*model_from_mdh'):
            fn(table, zero, zero, zero)
