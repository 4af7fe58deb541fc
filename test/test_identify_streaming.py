"""Streaming identification: sums accumulated block by block, every sample, bounded memory."""

import os
import tracemalloc

from identification_data import measured, states_along, truth_model
import numpy as np
import pytest
from rnea_ros.analysis import signals
from rnea_ros.analysis.blas import single_threaded
from rnea_ros.analysis.excitation import FourierTrajectory
from rnea_ros.analysis.identification import Accumulator, identify, identify_accumulated, predict
from rnea_ros.analysis.identify import Excerpt, residual_rms, summarise
from rnea_ros.core.model import RobotModel
from rnea_ros.core.regressor import inertial_parameters, joint_parameters
from robots import urdf_path

EXCITATION = os.path.join(os.path.dirname(__file__), '..', 'config', 'excitation_panda.yaml')


@pytest.fixture(scope='module')
def panda_data():
    """Return (nominal, Q, QD, QDD, E): 30 s of the panda excitation at 200 Hz, a truth."""
    nominal = RobotModel.from_urdf_file(urdf_path('panda'))
    traj = FourierTrajectory.from_yaml(EXCITATION)
    Q, QD, QDD = states_along(nominal, traj, np.arange(0.0, traj.duration, 1 / 200.0))
    E = measured(truth_model('panda', 1), Q, QD, QDD, 0.05, np.random.default_rng(101))
    return nominal, Q, QD, QDD, E


def streamed(model, data, block, **options):
    """Return the Accumulator of the data fed in blocks of ``block`` samples."""
    sums = Accumulator(model, **options)
    with single_threaded():
        for k in range(0, data[0].shape[0], block):
            sums.add(*(X[k:k + block] for X in data))
    return sums


def test_streamed_blocks_give_the_in_memory_identification(panda_data):
    """997-sample blocks (bins doubled 8 times on the way) give identify()'s estimate."""
    nominal, *data = panda_data
    whole = identify(nominal, *data)
    sums = streamed(nominal, data, 997)
    assert sums.samples == data[0].shape[0] and 20 <= len(sums.bins) <= 40
    part = identify_accumulated(sums)
    assert part.friction_model == whole.friction_model
    assert [r['chosen'] for r in part.selection] == [r['chosen'] for r in whole.selection]
    # Per-recording offsets are profiled out of the sums (a Schur complement that cancels
    # digits): the orders of summation agree to 1e-7, not to 1e-9.
    np.testing.assert_allclose([r['score'] for r in part.selection],
                               [r['score'] for r in whole.selection], rtol=1e-7)
    np.testing.assert_allclose(part.beta, whole.beta, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(part.sigma_percent, whole.sigma_percent, rtol=1e-6)
    # The consistent set is an iterative fit: equal to its tolerance where the data decides.
    np.testing.assert_allclose(part.beta_consistent, whole.beta_consistent, atol=1e-5)
    moving = nominal.nv - nominal.njoints + whole.moving
    error = predict(nominal, whole, *data[:3])[:, moving] - data[3][:, moving]
    change = predict(nominal, part, *data[:3])[:, moving] - data[3][:, moving] - error
    assert np.all(np.sqrt(np.mean(change ** 2, axis=0))
                  < 1e-3 * np.sqrt(np.mean(error ** 2, axis=0)))


def test_residuals_from_the_sums_equal_those_of_the_samples(panda_data):
    """The validation report's RMS from accumulated sums equals predict() on the samples."""
    nominal, *data = panda_data
    result = identify(nominal, *data)
    joints = result.moving
    x_nom = np.concatenate([inertial_parameters(nominal), joint_parameters(nominal)])
    sums = streamed(nominal, data, 1500, friction=[result.friction_model])
    for x in (x_nom, result):
        np.testing.assert_allclose(sums.residual_rms(x, joints),
                                   residual_rms(nominal, x, data, joints), rtol=1e-7)
    off = nominal.nv - nominal.njoints
    np.testing.assert_allclose(sums.effort_rms(joints),
                               np.sqrt(np.mean(data[3][:, off + joints] ** 2, axis=0)))
    table = summarise(nominal, result, x_nom, sums, sums)['residual_rms']
    assert table['training'] == table['validation']
    identified = [row['identified'] for row in table['training'].values()]
    np.testing.assert_allclose(identified, residual_rms(nominal, result, data, joints),
                               rtol=1e-7)


def test_accumulation_memory_does_not_grow_with_the_recording(panda_data):
    """The tracemalloc peak of accumulating 4x the samples is that of 1x (the sums are bounded)."""
    nominal, *data = panda_data
    four = [np.concatenate([X] * 4) for X in data]
    peaks, sizes = [], []
    for arrays in (data, four):
        # 997-sample blocks: both lengths pass through the largest bin count (40) on the way,
        # so that the peaks compare the bounded sums, not how close a length came to the bound.
        tracemalloc.start()
        sums = streamed(nominal, arrays, 997)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        sizes.append(sum(x.nbytes for b in sums.bins for joint in b for x in joint))
        assert sums.samples == arrays[0].shape[0]
    assert sizes[1] <= sizes[0]
    assert peaks[1] < 1.1 * peaks[0]


def test_decimation_keeps_the_rate_not_a_sample_budget():
    """An hour's expected rows do not thin the grid more than 30 s (only the rate decides)."""
    from identification_data import realworld_recording
    rec = realworld_recording('panda', seed=8, duration=6.0)
    factors = []
    for rows in (rec.t.size, 3_600_000):
        stream = signals.Conditioner(rec.names, expected_rows=rows, estimate_seconds=5.0)
        stream.feed(rec.t, rec.Q, rec.QD, rec.E)
        stream.finish()
        factors.append(stream.report.decimation)
    assert factors[0] == factors[1] > 1
    assert 1.0 / (stream.report.dt * factors[0]) >= signals.MIN_RATE


def test_excerpt_for_plots_spans_the_stream_every_kth_sample():
    rng = np.random.default_rng(0)
    excerpt = Excerpt(limit=100)
    x = np.arange(5000.0)
    start = 0
    while start < x.size:
        n = int(rng.integers(1, 300))
        excerpt.add(x[start:start + n], 2.0 * x[start:start + n])
        start += n
    kept, doubled = excerpt.data()
    np.testing.assert_array_equal(kept, x[::excerpt.step])
    np.testing.assert_array_equal(doubled, 2.0 * kept)
    assert kept.size <= 100 and excerpt.step == 64


def test_cli_fits_every_kept_sample_of_the_log(tmp_path, capsys):
    """`rnea-ros identify` streams the log: the fit's sample count is the conditioner's."""
    import json
    import shutil
    from identification_data import realworld_recording
    from rnea_ros.analysis.cli import main
    rec = realworld_recording('panda', seed=3, duration=12.0)
    bag = rec.write(tmp_path / 'log')
    copy = str(shutil.copytree(bag, tmp_path / 'copy'))     # another recording, the same rows
    assert main(['identify', bag, '--urdf', rec.urdf, '--out', str(tmp_path / 'id.urdf'),
                 '--validate', copy, '--json']) == 0
    summary = json.loads(capsys.readouterr().out)
    signal = summary['signals'][bag]
    assert summary['samples'] == signal['kept_samples'] > 2000
    assert signal['kept_samples'] * signal['decimation'] >= signal['grid_samples'] - 1
    for joint, row in summary['residual_rms']['training'].items():   # same data, same sums
        assert row == pytest.approx(summary['residual_rms']['validation'][joint], rel=1e-9)
