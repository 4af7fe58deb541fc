"""Excitation trajectories: Fourier series at rest at both ends, file format, design limits."""

import numpy as np
import pytest

from rnea_ros.analysis.excitation import FourierTrajectory, optimise_excitation
from rnea_ros.core.dynamics import inverse_dynamics_batch
from rnea_ros.core.model import RobotModel
from robots import urdf_path


def some_trajectory(seed=0, n=3, L=4):
    rng = np.random.default_rng(seed)
    a = rng.normal(size=(n, L))
    b = rng.normal(size=(n, L))
    a[:, -1] = -a[:, :-1].sum(axis=1)
    b[:, -1] = -(b[:, :-1] @ np.arange(1, L)) / L
    return FourierTrajectory(['j1', 'j2', 'j3'][:n], 0.2, 10.0, rng.normal(size=n), a, b)


def test_derivatives_are_consistent_and_motion_starts_and_ends_at_rest():
    traj = some_trajectory()
    t = np.linspace(0.3, 9.7, 50)
    h = 1e-5
    q_plus, qd_plus, _ = traj.evaluate(t + h)
    q_minus, qd_minus, _ = traj.evaluate(t - h)
    _, qd, qdd = traj.evaluate(t)
    assert np.allclose((q_plus - q_minus) / (2 * h), qd, atol=1e-6)
    assert np.allclose((qd_plus - qd_minus) / (2 * h), qdd, atol=1e-5)
    for at in (0.0, 10.0):
        q, qd, qdd = traj.evaluate(at)
        assert np.abs(qd).max() < 1e-12 and np.abs(qdd).max() < 1e-12
    assert np.allclose(traj.evaluate(0.0)[0], traj.evaluate(10.0)[0])
    q, qd, qdd = traj.evaluate(np.array([-1.0, 12.0]))     # holds still outside [0, T]
    assert np.allclose(q, traj.evaluate(0.0)[0]) and not qd.any() and not qdd.any()
    assert np.abs(traj.evaluate(2.5)[1]).max() > 0.1         # and it does move


def test_yaml_round_trip(tmp_path):
    traj = some_trajectory(1)
    path = tmp_path / 'traj.yaml'
    traj.to_yaml(str(path))
    again = FourierTrajectory.from_yaml(str(path))
    t = np.linspace(0, 10, 7)
    for x, y in zip(traj.evaluate(t), again.evaluate(t)):
        assert np.array_equal(x, y)
    assert again.joints == traj.joints


@pytest.mark.parametrize('change, message', [
    (lambda e: e.pop('a'), 'missing'),
    (lambda e: e.update(duration=7.0), 'whole number of periods'),
    (lambda e: e['a'][0].__setitem__(0, 5.0), 'start at rest'),
    (lambda e: e.update(harmonics=3), 'harmonics'),
    (lambda e: e.update(q0=[0.0]), 'q0 needs'),
])
def test_malformed_files_are_rejected(change, message):
    data = some_trajectory().to_dict()
    change(data['excitation'])
    with pytest.raises(ValueError, match=message):
        FourierTrajectory.from_dict(data)


def test_design_respects_limits_and_beats_its_random_start():
    model = RobotModel.from_urdf_file(urdf_path('ur5'))
    start = optimise_excitation(model, duration=10.0, seed=3, restarts=1, iterations=0,
                                points=40)
    traj = optimise_excitation(model, duration=10.0, seed=3, restarts=1, iterations=4,
                               points=40)
    assert traj.info['condition_number'] < start.info['condition_number']
    t, Q, QD, QDD = traj.sample(200)
    assert np.all(Q >= model.lower_limits - 1e-9) and np.all(Q <= model.upper_limits + 1e-9)
    assert np.all(np.abs(QD) <= model.velocity_limits + 1e-9)
    tau = inverse_dynamics_batch(model, Q, QD, QDD)
    assert np.all(np.abs(tau) <= model.effort_limits)
    assert np.abs(QD[0]).max() < 1e-12 and np.abs(QD[-1]).max() < 1e-12


def test_design_for_an_arm_with_rounded_joint_angles_is_well_conditioned():
    """xarm7's URDF writes pi/2 as 1.5708: no spurious base column (condition was 6.3e6)."""
    model = RobotModel.from_urdf_file(urdf_path('xarm_description/urdf/xarm7.urdf'))
    traj = optimise_excitation(model, duration=10.0, restarts=4, iterations=3)
    assert traj.info['condition_number'] < 1000.0
