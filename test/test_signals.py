"""Signals of real-looking logs (:mod:`rnea_ros.analysis.signals`): the truth is known.

The recordings are :func:`identification_data.realworld_recording`: the panda following its
excitation (motion up to 0.5 Hz), logged at about 1 kHz with stamps 0.7 to 8.8 ms apart, 6 %
of the rows repeating the previous state, some repeated stamps, Gaussian velocity noise.
"""

from identification_data import realworld_recording, XARM7
import numpy as np
import pytest
from rnea_ros.analysis import signals
from rnea_ros.analysis.analyze import smoothed_derivative

EDGE = slice(500, -500)      # the ends of a record are not compared (filter start-up)


def truth_at(rec, t):
    """Return (q, qd, qdd) of the recording's true motion at times t."""
    return rec.traj.evaluate((np.asarray(t) - 100.0) % rec.traj.duration)


def acceleration_errors(rec, **options):
    """Return (RMS error per joint of the new accelerations, of the old SG 21, report)."""
    (t, _, _, QDD, _), report = signals.condition(rec.t, rec.Q, rec.QD, rec.E, rec.names,
                                                  decimation=1, **options)
    new = np.sqrt(np.mean((QDD - truth_at(rec, t)[2])[EDGE] ** 2, axis=0))
    old_qdd = smoothed_derivative(rec.t, rec.QD, 21)          # the old default, raw stamps
    old = np.sqrt(np.mean((old_qdd - truth_at(rec, rec.clean[0])[2])[EDGE] ** 2, axis=0))
    return new, old, report


@pytest.mark.parametrize('seed, noise', [(0, 0.002), (1, 0.005), (2, 0.02), (3, 0.005)])
def test_accelerations_of_a_jittered_duplicated_noisy_log_beat_the_old_window(seed, noise):
    """Within 0.02 rad/s^2 RMS per joint at every noise level, 5x better than SG over 21."""
    rec = realworld_recording('panda', seed=seed, velocity_noise=noise)
    new, old, report = acceleration_errors(rec)
    assert new.max() < 0.02, new
    assert np.all(new < old / 5.0), (new, old)
    # The cutoff is above the motion (0.5 Hz) and far below the logger's Nyquist frequency.
    assert np.all(report.cutoff > 1.0) and np.all(report.cutoff < 10.0), report.cutoff


def test_the_cutoff_falls_as_the_noise_rises():
    """More velocity noise moves the knee of the spectrum down (same motion, same seed)."""
    cuts = [acceleration_errors(realworld_recording('panda', seed=4, velocity_noise=n))[2]
            .cutoff.mean() for n in (0.001, 0.01, 0.1)]
    assert cuts[0] > cuts[1] > cuts[2], cuts


def test_the_chosen_cutoff_is_near_the_best_fixed_one():
    """No fixed cutoff does more than 1.5x better than the estimated one (xarm7, seed 3)."""
    rec = realworld_recording(XARM7, seed=3, velocity_noise=0.01)
    chosen = acceleration_errors(rec)[0].mean()
    best = min(acceleration_errors(rec, cutoff=fc)[0].mean() for fc in (1.0, 2.0, 3.0, 5.0))
    assert chosen < 1.5 * best, (chosen, best)


def test_logger_duplicates_and_repeated_stamps_are_dropped_and_counted():
    rec = realworld_recording('panda', seed=5, duration=10.0)
    (t, *_), report = signals.condition(rec.t, rec.Q, rec.QD, rec.E, rec.names, decimation=1)
    assert report.repeated_states == rec.duplicate.sum() > 0.04 * rec.t.size
    stale, last = 0, -np.inf          # stamps not after the last row kept
    for stamp, duplicate in zip(rec.t, rec.duplicate):
        if not duplicate:
            stale += stamp <= last
            last = max(last, stamp)
    assert report.repeated_stamps == stale > 0
    assert np.all(np.diff(t) > 0)
    assert abs(report.dt - 1e-3) < 0.1e-3               # the median interval of the log
    text = '\n'.join(report.lines())
    assert f'dropped {report.repeated_states} repeating the previous state' in text
    assert 'cutoff (Hz) estimated' in text


def test_streaming_over_chunks_gives_the_whole_record_result():
    """Chunks of 3000 rows and filter blocks of 4000 samples (margins kept) = one pass."""
    rec = realworld_recording(XARM7, seed=1, duration=12.0)
    whole, report = signals.condition(rec.t, rec.Q, rec.QD, rec.E, rec.names, decimation=1)
    stream = signals.Conditioner(rec.names, cutoff=report.cutoff, decimation=1, block=4000)
    blocks = []
    for s in range(0, rec.t.size, 3000):
        part = slice(s, s + 3000)
        blocks += stream.feed(rec.t[part], rec.Q[part], rec.QD[part], rec.E[part])
    blocks += stream.finish()
    for k, expected in enumerate(whole):
        got = np.concatenate([b[k] for b in blocks])
        np.testing.assert_allclose(got, expected, atol=1e-6)
    assert stream.report.repeated_states == report.repeated_states


def test_a_gap_splits_the_recording_and_nothing_is_invented_inside_it():
    rec = realworld_recording('panda', seed=6, duration=12.0, duplicates=0.0)
    late = rec.t > 106.0
    t = np.where(late, rec.t + 0.5, rec.t)              # half a second lost
    (tg, *_), report = signals.condition(t, rec.Q, rec.QD, rec.E, rec.names, decimation=1)
    assert report.gaps == 1
    assert not np.any((tg > t[~late][-1]) & (tg < t[late][0]))


def test_positions_only_are_differentiated_twice():
    """Without recorded velocities: q filtered at its own knee, then central differences."""
    rec = realworld_recording(XARM7, seed=2, duration=20.0, position_noise=1e-5)
    (t, _, QD, QDD, _), report = signals.condition(rec.t, rec.Q, None, rec.E, rec.names,
                                                   decimation=1)
    _, qd, qdd = truth_at(rec, t)
    assert np.sqrt(np.mean((QD - qd)[EDGE] ** 2)) < 0.005
    assert np.sqrt(np.mean((QDD - qdd)[EDGE] ** 2)) < 0.05


def test_window_overrides_with_savitzky_golay_on_the_grid():
    rec = realworld_recording('panda', seed=7, duration=5.0)
    (t, _, QD, QDD, _), report = signals.condition(rec.t, rec.Q, rec.QD, rec.E, rec.names,
                                                   window=21, decimation=1)
    assert report.method == 'savitzky-golay' and report.cutoff is None
    np.testing.assert_allclose(QDD, signals.savitzky_golay_derivative(QD, report.dt, 21))
    assert 'Savitzky-Golay' in '\n'.join(report.lines())


def test_white_noise_variance_of_irregular_samples():
    rng = np.random.default_rng(0)
    t = np.cumsum(rng.uniform(0.7e-3, 1.3e-3, 20000))
    x = np.sin(2.0 * np.pi * 0.4 * t)[:, None] + rng.normal(0.0, [0.01, 0.001], (t.size, 2))
    np.testing.assert_allclose(np.sqrt(signals.white_noise_variance(t, x)), [0.01, 0.001],
                               rtol=0.05)


def test_decimation_keeps_the_rate_and_caps_the_samples():
    rec = realworld_recording('panda', seed=8, duration=10.0)
    stream = signals.Conditioner(rec.names, expected_rows=rec.t.size, max_samples=1000,
                                 estimate_seconds=5.0)
    blocks = stream.feed(rec.t, rec.Q, rec.QD, rec.E) + stream.finish()
    t = np.concatenate([b[0] for b in blocks])
    assert 900 <= t.size <= 1000 and stream.report.kept == t.size
    assert np.allclose(np.diff(t), stream.report.dt * stream.report.decimation)
