"""``rnea-ros identify`` reading real-looking logs: chunks, joints the log lacks, progress."""

import io
import json
import shutil

from identification_data import realworld_recording
import numpy as np
import pytest
from rnea_ros.analysis.cli import main
from rnea_ros.analysis.identify import load_recordings, Progress
from rnea_ros.core.model import RobotModel
import yaml

FINGERS = ('panda_finger_joint1', 'panda_finger_joint2')


@pytest.fixture(scope='module')
def recording(tmp_path_factory):
    """Return a 12 s panda log without its fingers (held at 0.03 m by the truth), and a bag."""
    rec = realworld_recording('panda', seed=11, duration=12.0, held=0.03)
    return rec, rec.write(tmp_path_factory.mktemp('bags') / 'log')


def test_joints_the_recording_lacks_are_held_at_zero_or_at_fixed(recording):
    rec, bag = recording
    model = RobotModel.from_urdf_file(rec.urdf)
    fingers = [model.joint_names.index(j) for j in FINGERS]
    default = load_recordings([bag], model, progress=False)
    assert default.held == dict.fromkeys(FINGERS, 0.0)
    assert np.all(default.data[0][:, fingers] == 0.0)
    held = load_recordings([bag], model, fixed={FINGERS[0]: 0.03, FINGERS[1]: 0.03},
                           progress=False)
    assert np.all(held.data[0][:, fingers] == 0.03)
    for X in held.data[1:]:                   # no velocity, acceleration or effort
        assert np.all(X[:, fingers] == 0.0)
    assert 'held still' in '\n'.join(held.lines())


def test_identify_a_log_without_the_gripper_keeps_the_fingers_nominal(recording, tmp_path,
                                                                      capsys):
    rec, bag = recording
    params = tmp_path / 'p.yaml'
    code = main(['identify', bag, '--urdf', rec.urdf, '--out', str(tmp_path / 'id.urdf'),
                 '--params-out', str(params), '--fixed', 'panda_finger_joint1=0.03',
                 'panda_finger_joint2=0.03', '--json'])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary['held_joints'] == dict.fromkeys(FINGERS, 0.03)
    assert not set(FINGERS) & set(summary['moving_joints'])
    document = yaml.safe_load(params.read_text())
    node = next(iter(document.values()))['ros__parameters']      # '/**' or the node's name
    nominal = RobotModel.from_urdf_file(rec.urdf, friction_from_urdf=True)
    for j in FINGERS:
        k = node['friction_joints'].index(j)
        i = nominal.joint_names.index(j)
        assert node['friction_viscous'][k] == pytest.approx(nominal.friction_viscous[i])
        assert node['armature'][k] == pytest.approx(nominal.armature[i])
    signal = summary['signals'][bag]
    assert signal['repeated_states'] > 0 and signal['method'] == 'chosen'
    assert all(0.5 < c < 20.0 for c in signal['cutoff_hz'].values())
    choice = summary['signals']['filter_choice']       # the search, its scores and choice
    assert choice['chosen_hz'] in [row['cutoff_hz'] for row in choice['candidates']]
    assert choice['validation_hz'] <= choice['chosen_hz']


@pytest.mark.parametrize('fixed, message', [
    (['nope=1'], "'nope' is not a joint of the model"),
    (['panda_joint1=0.1'], 'names joints the recording has'),
    (['panda_finger_joint1'], 'give joint=value'),
    (['panda_finger_joint1=x'], 'is not a number'),
])
def test_bad_fixed_values_exit_2_with_a_message(recording, tmp_path, capsys, fixed, message):
    rec, bag = recording
    out = tmp_path / 'id.urdf'
    assert main(['identify', bag, '--urdf', rec.urdf, '--out', str(out), '--fixed',
                 *fixed]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_chunked_reading_gives_the_one_chunk_result(recording):
    rec, bag = recording
    model = RobotModel.from_urdf_file(rec.urdf)
    one = load_recordings([bag], model, chunk=10 ** 6, progress=False)
    many = load_recordings([bag], model, chunk=997, progress=False)
    for a, b in zip(one.data, many.data):
        np.testing.assert_allclose(a, b, atol=1e-6)


def test_validation_uses_its_own_filter_at_most_the_given_cutoff(recording, tmp_path, capsys):
    rec, bag = recording
    copy = shutil.copytree(bag, tmp_path / 'copy')     # another recording, the same rows
    code = main(['identify', bag, '--urdf', rec.urdf, '--out', str(tmp_path / 'id.urdf'),
                 '--validate', str(copy), '--cutoff', '3.5', '--json'])
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary['signals'][bag]['method'] == 'given'
    assert set(summary['signals'][bag]['cutoff_hz'].values()) == {3.5}
    check = summary['signals'][f'validation {copy}']
    assert check['method'] == 'validation'
    assert set(check['cutoff_hz'].values()) == {summary['signals']['filter_choice'][
        'validation_hz']}
    assert 0.5 <= summary['signals']['filter_choice']['validation_hz'] <= 3.5


class _Terminal(io.StringIO):

    def isatty(self):
        return True


def test_progress_is_redrawn_on_a_terminal_and_quiet_on_short_logs():
    screen = _Terminal()
    bar = Progress('reading log', 1000, stream=screen)
    for _ in range(10):
        bar.update(100)
    bar.close()
    assert screen.getvalue().count('\r') == 10 and '100 %' in screen.getvalue()
    pipe = io.StringIO()
    bar = Progress('reading log', 1000, stream=pipe)
    bar.update(1000)
    assert pipe.getvalue() == ''                      # short and not a terminal: nothing
    bar = Progress('reading log', 2_000_000, stream=pipe)
    for _ in range(20):
        bar.update(100_000)
    assert pipe.getvalue().count('\n') == 11          # long: a line every 10 %


def test_blas_and_numba_run_on_one_thread_inside_the_block_and_are_restored():
    import ctypes
    import glob
    import os
    from rnea_ros.analysis.blas import single_threaded
    folder = os.path.join(os.path.dirname(os.path.dirname(np.__file__)), 'numpy.libs')
    found = glob.glob(os.path.join(folder, '*openblas*.so*'))
    if not found:
        pytest.skip('numpy is not linked with a bundled OpenBLAS')
    import numba
    get = ctypes.CDLL(found[0]).scipy_openblas_get_num_threads64_
    before, numba_before = get(), numba.get_num_threads()
    with single_threaded():
        assert get() == 1 and numba.get_num_threads() == 1
    assert get() == before and numba.get_num_threads() == numba_before


def test_the_filter_search_reads_only_the_rows_the_conditioner_keeps(recording):
    """A logger's repeated states and stale stamps are out of the motion band's rows too."""
    from rnea_ros.analysis.conditioning import search_pieces
    from rnea_ros.analysis.signals import clean_rows
    rec, bag = recording
    model = RobotModel.from_urdf_file(rec.urdf)
    (t, Q, QD, E), = search_pieces([bag], model, '/joint_states', {}, None)[0]
    keep, stale, repeated = clean_rows(t, np.hstack([Q, QD, E]), None,
                                       np.any(QD != 0.0, axis=1))
    assert keep.all() and stale == repeated == 0
    rows, repeats = clean_rows(rec.t, np.hstack([rec.Q, rec.QD, rec.E]), None,
                               np.any(rec.QD != 0.0, axis=1))[::2]
    assert repeats > 0 and t.size == rows.sum()
