"""The demo's "real" robot: a seeded perturbation within its ranges, and MuJoCo agrees with it.

Ground truth consistency: the MuJoCo robot built from the truth URDF (with its friction and
rotor inertia) accelerates exactly as rnea_ros's inverse dynamics of the truth says, and not as
the nominal URDF says.
"""
import mujoco
import numpy as np
import pytest

from rnea_ros.core.dynamics import inverse_dynamics
from rnea_ros.core.model import RobotModel
from rnea_ros.core.urdf import parse_urdf
from rnea_ros.demo.perturbation import (COM_RANGE, INERTIA_RANGE, MASS_RANGE, perturb_inertia,
                                        perturb_robot, physically_consistent)
from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses
from rnea_ros.sim.sim_launch import default_urdf_file, read_urdf


@pytest.fixture(scope='module')
def nominal():
    """Return the panda URDF text."""
    return read_urdf(default_urdf_file())


def test_same_seed_same_truth_other_seed_other_truth(nominal):
    """The perturbation is reproducible from its seed and changes with it."""
    first, again, other = (perturb_robot(nominal, seed) for seed in (3, 3, 4))
    assert first.truth_urdf == again.truth_urdf
    assert first.truth_urdf != other.truth_urdf
    assert first.friction_coulomb != other.friction_coulomb
    assert 'seed 3' in first.summary() and first.payload.link in first.summary()


@pytest.mark.parametrize('seed', [0, 1, 2])
def test_links_stay_within_ranges_and_physically_consistent(nominal, seed):
    """Masses within 20 %, COM within 2 cm per axis, principal inertias within 30 %."""
    truth = perturb_robot(nominal, seed)
    links = {spec.name: spec for spec in parse_urdf(nominal)[1]}
    perturbed = {spec.name: spec for spec in parse_urdf(truth.truth_urdf)[1]}
    changed = 0
    for name, spec in links.items():
        if spec.mass <= 0:
            continue
        new = perturbed[name]
        assert abs(new.mass / spec.mass - 1) <= MASS_RANGE
        assert np.all(np.abs(np.subtract(new.com, spec.com)) <= COM_RANGE + 1e-12)
        ratios = np.linalg.eigvalsh(new.inertia) / np.linalg.eigvalsh(spec.inertia)
        assert np.all(np.abs(ratios - 1) <= INERTIA_RANGE + 1e-9)
        assert physically_consistent(new.mass, new.inertia)
        changed += not np.isclose(new.mass, spec.mass)
    assert changed == len(truth.links) >= 8
    payload = perturbed[truth.payload.link_name]
    assert payload.mass == pytest.approx(truth.payload.mass) and payload.mass > 0.5


def test_principal_second_moments_scaled_keep_the_triangle_inequality():
    """A thin rod scaled to its limits still satisfies Ixx + Iyy >= Izz (and permutations)."""
    rod = np.diag([1.0, 1.0, 1e-6])
    for factors in ([0.7, 1.3, 1.3], [1.3, 0.7, 0.7], [1.3, 1.3, 0.7]):
        inertia = perturb_inertia(rod, factors)
        moments = np.linalg.eigvalsh(inertia)
        assert moments.min() > 0 and moments[0] + moments[1] >= moments[2] - 1e-15
    assert not physically_consistent(1.0, np.diag([1.0, 1.0, 2.5]))


def _mujoco_truth(truth, names):
    model = build_mujoco_model(truth.truth_urdf, urdf_dynamics=True,
                               armature=truth.armature)
    return model, mujoco.MjData(model), joint_addresses(model, names)


@pytest.mark.parametrize('seed', [0, 5])
def test_mujoco_truth_equals_inverse_dynamics_of_the_truth(nominal, seed):
    """Efforts from ID(truth) + friction + armature make MuJoCo accelerate as asked.

    Velocities are above MuJoCo's friction-loss regularisation band (there its friction is
    Fs sign(qd), as the model's); the nominal model's efforts miss the asked acceleration.
    """
    truth = perturb_robot(nominal, seed)
    model = truth.truth_model()
    nominal_model = RobotModel.from_urdf_string(nominal)
    names = model.joint_names
    mj_model, data, (qpos, dof) = _mujoco_truth(truth, names)
    rng = np.random.default_rng(seed)
    lower, upper = mj_model.jnt_range[:, 0], mj_model.jnt_range[:, 1]
    assert np.all(mj_model.jnt_limited == 1)
    worst, nominal_error = 0.0, []
    for _ in range(5):
        q = np.empty(len(names))
        for k, name in enumerate(names):
            j = mujoco.mj_name2id(mj_model, mujoco.mjtObj.mjOBJ_JOINT, name)
            q[k] = rng.uniform(lower[j] + 0.2 * (upper[j] - lower[j]),
                               upper[j] - 0.2 * (upper[j] - lower[j]))
        qd = rng.choice([-1.0, 1.0], len(names)) * rng.uniform(0.3, 1.0, len(names))
        qdd = rng.uniform(-2.0, 2.0, len(names))
        tau = inverse_dynamics(model, q, qd, qdd)
        data.qpos[qpos], data.qvel[dof] = q, qd
        data.qfrc_applied[:] = 0.0
        data.qfrc_applied[dof] = tau
        mujoco.mj_forward(mj_model, data)
        worst = max(worst, np.abs(data.qacc[dof] - qdd).max())
        tau_nominal = inverse_dynamics(nominal_model, q, qd, qdd)
        nominal_error.append(np.abs(tau_nominal - tau).max())
    assert worst < 1e-6
    assert min(nominal_error) > 0.5


def test_limits_are_enforced_by_default_and_can_be_lifted(nominal):
    """Joint limits stay enforced unless limits=False; per-joint dynamics reach MuJoCo."""
    truth = perturb_robot(nominal, 0)
    limited = build_mujoco_model(truth.truth_urdf)
    free = build_mujoco_model(truth.truth_urdf, limits=False)
    assert np.all(limited.jnt_limited == 1) and not np.any(free.jnt_limited)
    dynamics = build_mujoco_model(nominal, damping={'panda_joint1': 0.7},
                                  frictionloss={'panda_joint2': 0.4},
                                  armature={'panda_joint3': 0.1})
    _, dof = joint_addresses(dynamics, ['panda_joint1', 'panda_joint2', 'panda_joint3'])
    assert dynamics.dof_damping[dof].tolist() == [0.7, 0.0, 0.0]
    assert dynamics.dof_frictionloss[dof].tolist() == [0.0, 0.4, 0.0]
    assert dynamics.dof_armature[dof].tolist() == [0.0, 0.0, 0.1]
    with pytest.raises(ValueError, match='no_such_joint'):
        build_mujoco_model(nominal, damping={'no_such_joint': 1.0})
