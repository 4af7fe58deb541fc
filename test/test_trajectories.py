"""Reference trajectories are smooth and self-consistent (velocity = d position / dt, ...)."""
import numpy as np
import pytest

from rnea_ros.sim.trajectories import min_jerk, min_jerk_scalar, ReferenceProfile, sinusoid

START = np.array([0.3, -0.5, 1.0])


def profiles():
    """Return the profiles under test."""
    return [
        ReferenceProfile('sinusoid', START, amplitude=[0.1, 0.2, -0.05], frequency=0.4),
        ReferenceProfile('min_jerk', START, goal=[0.8, -0.2, 0.5], duration=1.5, repeat=True),
        ReferenceProfile('min_jerk', START, goal=[0.8, -0.2, 0.5], duration=1.5, repeat=False),
    ]


@pytest.mark.parametrize('profile', profiles(), ids=['sinusoid', 'min_jerk_repeat', 'min_jerk'])
def test_derivatives_are_consistent(profile):
    """Central differences of position and velocity match velocity and acceleration."""
    step = 1e-5
    for t in np.linspace(0.01, 5.0, 37):
        before, now, after = profile(t - step), profile(t), profile(t + step)
        np.testing.assert_allclose((after[0] - before[0]) / (2 * step), now[1], atol=1e-6)
        np.testing.assert_allclose((after[1] - before[1]) / (2 * step), now[2], atol=1e-4)


@pytest.mark.parametrize('profile', profiles(), ids=['sinusoid', 'min_jerk_repeat', 'min_jerk'])
def test_starts_at_rest_at_the_start_positions(profile):
    """At and before t = 0 the reference is the start pose with zero velocity."""
    for t in (-1.0, 0.0):
        positions, velocities, accelerations = profile(t)
        np.testing.assert_array_equal(positions, START)
        assert not np.any(velocities) and not np.any(accelerations)
    np.testing.assert_allclose(profile(1e-6)[0], START, atol=1e-6)


def test_sinusoid_swings_to_start_plus_twice_amplitude_at_half_period():
    """q(T/2) = start + 2 amplitude, velocity zero there, and q(T) = start again."""
    amplitude, frequency = np.array([0.1, 0.2, -0.05]), 0.5
    positions, velocities, _ = sinusoid(1.0, START, amplitude, frequency)
    np.testing.assert_allclose(positions, START + 2 * amplitude)
    np.testing.assert_allclose(velocities, 0.0, atol=1e-12)
    np.testing.assert_allclose(sinusoid(2.0, START, amplitude, frequency)[0], START)


def test_min_jerk_reaches_goal_at_rest_then_holds_or_returns():
    """The move ends at the goal with zero velocity and acceleration; repeat comes back."""
    goal = np.array([0.8, -0.2, 0.5])
    for t in (1.5, 2.5):
        positions, velocities, accelerations = min_jerk(t, START, goal, 1.5)
        np.testing.assert_allclose(positions, goal)
        np.testing.assert_allclose(velocities, 0.0, atol=1e-12)
        np.testing.assert_allclose(accelerations, 0.0, atol=1e-9)
    np.testing.assert_allclose(min_jerk(3.0, START, goal, 1.5, repeat=True)[0], START)
    np.testing.assert_allclose(min_jerk(0.75, START, goal, 1.5)[0], 0.5 * (START + goal))


def test_min_jerk_blend_boundaries():
    """The normalized blend goes 0 -> 1 with zero slope and curvature at both ends."""
    assert min_jerk_scalar(0.0) == (0.0, 0.0, 0.0)
    assert min_jerk_scalar(1.0) == (1.0, 0.0, 0.0)
    assert min_jerk_scalar(0.5)[0] == pytest.approx(0.5)


def test_sample_returns_arrays_per_time_and_joint():
    """sample() evaluates many times at once in (times, joints) arrays."""
    profile = profiles()[0]
    times = np.linspace(0.0, 2.0, 11)
    positions, velocities, accelerations = profile.sample(times)
    assert positions.shape == velocities.shape == accelerations.shape == (11, 3)
    np.testing.assert_allclose(positions[4], profile(times[4])[0])


@pytest.mark.parametrize('kwargs, message', [
    ({'profile': 'square'}, 'unknown profile'),
    ({'profile': 'sinusoid', 'amplitude': [0.1, 0.2]}, 'amplitude needs 1 or 3'),
    ({'profile': 'sinusoid', 'frequency': np.nan}, 'frequency must be finite'),
    ({'profile': 'min_jerk', 'duration': 0.0}, 'duration must be positive'),
    ({'profile': 'min_jerk', 'goal': [1.0, 2.0]}, 'goal needs 1 or 3'),
])
def test_bad_parameters_raise_value_error(kwargs, message):
    """Unknown profiles, wrong lengths and non-finite values are rejected with a reason."""
    with pytest.raises(ValueError, match=message):
        ReferenceProfile(start=START, **kwargs)


def test_trajectory_file_is_a_profile_at_rest_outside_its_duration(tmp_path):
    """An excitation YAML plays as a profile: sample = calls, rest before 0 and after T."""
    from rnea_ros.analysis.excitation import FourierTrajectory
    from rnea_ros.sim.trajectories import TrajectoryFile
    trajectory = FourierTrajectory(['j1', 'j2'], 0.5, 2.0, [0.1, -0.2],
                                   [[0.3, -0.3], [0.1, -0.1]], [[0.2, -0.1], [0.0, 0.0]])
    path = str(tmp_path / 'excitation.yaml')
    trajectory.to_yaml(path)
    profile = TrajectoryFile(path)
    assert profile.joints == ['j1', 'j2'] and profile.duration == 2.0
    times = np.linspace(-0.5, 2.5, 31)
    sampled = profile.sample(times)
    for k, t in enumerate(times):
        for field in range(3):
            np.testing.assert_allclose(profile(t)[field], sampled[field][k], atol=1e-12)
    assert np.any(np.abs(sampled[1][10]) > 0.05)
    for t in (-0.5, 2.5):
        q, qd, qdd = profile(t)
        np.testing.assert_allclose(q, profile(0.0)[0], atol=1e-12)
        assert not np.any(qd) and not np.any(qdd)
    with pytest.raises(ValueError):
        TrajectoryFile(str(tmp_path / 'missing.yaml'))
