"""The joint-torque regressor: tau = Y phi, numba kernel = numpy reference = Pinocchio's."""

import numpy as np
import pytest

from rnea_ros.core.dynamics import inverse_dynamics
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import (inertial_parameters, joint_parameters, parameter_names,
                                     PINOCCHIO_ORDER, regressor, regressor_batch,
                                     regressor_reference)
from robots import all_urdfs, PinocchioOracle, random_state, URDF, urdf_path

TOL = 1e-10


def relative_error(ours, theirs):
    """Return max |ours - theirs| relative to the largest magnitude (at least 1)."""
    return np.abs(ours - theirs).max(initial=0.0) / max(1.0, np.abs(theirs).max(initial=0.0))


def _loadable(rel, floating):
    try:
        return RobotModel.from_urdf_file(urdf_path(rel), floating_base=floating)
    except ValueError:
        return None


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('rel', all_urdfs())
def test_regressor_times_urdf_parameters_is_inverse_dynamics(rel, floating):
    """Y phi_urdf = ID to 1e-10 on every example-robot-data URDF that loads, both bases."""
    model = _loadable(rel, floating)
    if model is None:
        pytest.skip(f'{rel}: rnea_ros does not load it')
    rng = np.random.default_rng(3)
    phi = inertial_parameters(model)
    for _ in range(3):
        q, qd, qdd = random_state(model, rng, scale=2.0)
        tau = inverse_dynamics(model, q, qd, qdd)
        assert relative_error(regressor(model, q, qd, qdd) @ phi, tau) < TOL


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', sorted(URDF))
def test_numba_kernel_matches_numpy_reference_and_batch(robot, floating):
    model = RobotModel.from_urdf_file(urdf_path(robot), floating_base=floating)
    rng = np.random.default_rng(5)
    states = [random_state(model, rng, scale=2.0) for _ in range(4)]
    gravity = (0.3, -1.0, -9.0)
    for q, qd, qdd in states:
        Y = regressor(model, q, qd, qdd, gravity=gravity)
        assert np.abs(Y - regressor_reference(model, q, qd, qdd, gravity=gravity)).max() < 1e-12 \
            * max(1.0, np.abs(Y).max())
    Q, QD, QDD = (np.array([s[k] for s in states]) for k in range(3))
    Yb = regressor_batch(model, Q, QD, QDD, gravity=gravity)
    for k, (q, qd, qdd) in enumerate(states):
        assert np.array_equal(Yb[k * model.nv:(k + 1) * model.nv],
                              regressor(model, q, qd, qdd, gravity=gravity))


@pytest.mark.parametrize('floating', [False, True], ids=['fixed', 'floating'])
@pytest.mark.parametrize('robot', ['panda', 'ur5', 'talos_reduced', 'anymal'])
def test_regressor_equals_pinocchio_up_to_parameter_order(robot, floating):
    """Pinocchio's computeJointTorqueRegressor has the same columns, reordered per body."""
    pin = pytest.importorskip('pinocchio')
    path = urdf_path(robot)
    model = RobotModel.from_urdf_file(path, floating_base=floating)
    oracle = PinocchioOracle(model, path)
    # body b <-> Pinocchio joint of the body's joint (the root joint for a floating base)
    jid = {b: oracle.jids[j] for j, b in enumerate(model.joint_body)}
    if floating:
        jid[0] = oracle.pm.getJointId('root_joint')
    cols = np.array([10 * (jid[b] - 1) + PINOCCHIO_ORDER[k]
                     for b in range(model.nbodies) for k in range(10)])
    rng = np.random.default_rng(11)
    for _ in range(3):
        q, qd, qdd = random_state(model, rng, scale=2.0)
        Yp = pin.computeJointTorqueRegressor(oracle.pm, oracle.pd, *oracle.to_pin(q, qd, qdd))
        assert relative_error(regressor(model, q, qd, qdd), Yp[oracle.vidx][:, cols]) < 1e-9


def test_joint_columns_reproduce_friction_and_armature():
    """With friction=True, Y [phi; Fv Fs Ia off] = ID of a model with those joint terms."""
    path = urdf_path('panda')
    names = RobotModel.from_urdf_file(path).joint_names
    rng = np.random.default_rng(2)
    model = RobotModel.from_urdf_file(
        path, friction_viscous={n: rng.uniform(0, 1) for n in names},
        friction_coulomb={n: rng.uniform(0, 1) for n in names},
        armature={n: rng.uniform(0, 1) for n in names})
    x = np.concatenate([inertial_parameters(model), joint_parameters(model)])
    assert len(parameter_names(model, friction=True)) == x.size
    for scale in (2.0, 0.004):                       # outside and inside the Coulomb band
        q, qd, qdd = random_state(model, rng, scale=scale)
        Y = regressor(model, q, qd, qdd, friction=True)
        assert Y.shape == (model.nv, x.size)
        assert relative_error(Y @ x, inverse_dynamics(model, q, qd, qdd)) < TOL
    offsets = np.zeros(x.size)
    offsets[10 * model.nbodies + 3::4] = np.arange(model.njoints) + 1.0
    assert np.allclose(Y @ offsets, np.arange(model.njoints) + 1.0)


def test_bad_input_names_the_argument():
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    q = np.zeros(6)
    with pytest.raises(ValueError, match='qd'):
        regressor(model, q, np.full(6, np.nan), q)
    with pytest.raises(ValueError, match=r'q has shape \(5,\)'):
        regressor(model, np.zeros(5), q, q)
    with pytest.raises(ValueError, match='sample 1'):
        Q = np.zeros((2, 6))
        Q[1, 2] = np.inf
        regressor_batch(model, Q, np.zeros((2, 6)), np.zeros((2, 6)))


def test_batch_into_a_reused_out_buffer_equals_a_new_one_and_refuses_a_wrong_one():
    """``out=`` (many rows: the parallel kernel) gets the same numbers; bad buffers are refused."""
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    rng = np.random.default_rng(8)
    Q, QD, QDD = (np.array(x) for x in zip(*[random_state(model, rng) for _ in range(300)]))
    Y = regressor_batch(model, Q, QD, QDD)
    out = np.full_like(Y, np.nan)
    assert regressor_batch(model, Q, QD, QDD, out=out) is out
    assert np.array_equal(out, Y)
    for bad in (np.empty((Y.shape[0] - 1, Y.shape[1])), np.empty(Y.shape, dtype=np.float32),
                np.empty(Y.shape[::-1]).T):
        with pytest.raises(ValueError, match='out must be'):
            regressor_batch(model, Q, QD, QDD, out=bad)
    with pytest.raises(ValueError, match='friction'):
        regressor_batch(model, Q, QD, QDD, friction=True, out=out)
