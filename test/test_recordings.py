"""Recordings (rosbag2 JointState), the first stage of analyze, observe and identify.

What one command writes with :mod:`rnea_ros.analysis.recordings` the others read back to the
bit, whole or in chunks, in either storage; a recording that is not evidence (NaN, a missing
joint, no such topic) is an error that names the sample or the joint.
"""

import numpy as np
import pytest
from rnea_ros.analysis import recordings

pytest.importorskip('rosbags', reason='reading rosbag2 recordings needs the rosbags package')

NAMES = ['shoulder', 'elbow', 'wrist']


def joint_states(n=200, seed=0):
    """Return (t, Q, QD, E) of ``n`` rows with uneven stamps and random values."""
    rng = np.random.default_rng(seed)
    t = 100.0 + np.cumsum(rng.uniform(0.5e-3, 1.5e-3, n))
    return t, rng.normal(size=(n, 3)), rng.normal(size=(n, 3)), rng.normal(size=(n, 3))


@pytest.mark.parametrize('storage', ['mcap', 'sqlite3'])
def test_a_written_recording_reads_back_bit_for_bit_whole_and_in_chunks(tmp_path, storage):
    t, Q, QD, E = joint_states()
    bag = str(tmp_path / storage)
    recordings.write_joint_states(bag, t, NAMES, Q, QD, E, storage=storage)
    assert recordings.count_joint_states(bag) == t.size
    t2, names, Q2, QD2, E2 = recordings.read_joint_states(bag)
    assert names == NAMES
    np.testing.assert_allclose(t2, t, atol=1e-9)          # nanosecond stamps
    for read, written in ((Q2, Q), (QD2, QD), (E2, E)):
        np.testing.assert_array_equal(read, written)
    chunks = list(recordings.iter_joint_states(bag, chunk=37))
    assert [c[0].size for c in chunks] == [37] * (t.size // 37) + [t.size % 37]
    for k, whole in enumerate((t2, Q2, QD2, E2)):
        np.testing.assert_array_equal(np.concatenate([c[(0, 2, 3, 4)[k]] for c in chunks]),
                                      whole)


def test_the_writer_appends_chunks_and_a_field_left_empty_reads_as_absent(tmp_path):
    t, Q, _, E = joint_states()
    bag = str(tmp_path / 'no_velocities')
    with recordings.JointStateWriter(bag, NAMES) as writer:
        for rows in (slice(0, 120), slice(120, None)):
            writer.write(t[rows], Q[rows], np.zeros((t[rows].size, 0)), E[rows])
    t2, _, Q2, QD2, E2 = recordings.read_joint_states(bag)
    assert QD2 is None and t2.size == t.size
    np.testing.assert_array_equal(Q2, Q)
    np.testing.assert_array_equal(E2, E)


def test_model_order_maps_names_and_names_what_is_missing():
    class Model:
        joint_names = ['wrist', 'shoulder']

    assert recordings.model_order(NAMES, Model) == [2, 0]
    Model.joint_names = ['wrist', 'gripper']
    with pytest.raises(ValueError, match=r"lack model joints \['gripper'\]"):
        recordings.model_order(NAMES, Model)


@pytest.mark.parametrize('field, column', [('position', 1), ('effort', 3)])
def test_a_non_finite_sample_is_an_error_naming_it(tmp_path, field, column):
    data = list(joint_states())
    data[column][57, 1] = np.nan
    bag = str(tmp_path / field)
    recordings.write_joint_states(bag, data[0], NAMES, *data[1:])
    with pytest.raises(ValueError, match=f'{field} of sample 57 '):
        recordings.read_joint_states(bag)
    with pytest.raises(ValueError, match=f'{field} of sample 57 '):
        for _ in recordings.iter_joint_states(bag, chunk=20):
            pass


def test_what_is_not_a_recording_is_a_value_error_naming_it(tmp_path):
    t, Q, QD, E = joint_states(10)
    bag = str(tmp_path / 'run')
    recordings.write_joint_states(bag, t, NAMES, Q, QD, E)
    with pytest.raises(ValueError, match="no topic '/other'"):
        recordings.read_joint_states(bag, '/other')
    empty = tmp_path / 'empty.mcap'
    empty.write_bytes(b'')
    for path in (str(tmp_path / 'missing'), str(empty)):
        with pytest.raises(ValueError, match='cannot read bag'):
            recordings.read_joint_states(path)
        assert recordings.count_joint_states(path) == 0
    recordings.write_joint_states(str(tmp_path / 'short'), t[:2], NAMES, Q[:2], QD[:2], E[:2])
    with pytest.raises(ValueError, match='2 usable messages; need >= 3'):
        recordings.read_joint_states(str(tmp_path / 'short'))
