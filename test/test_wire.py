"""Output messages kept serialized decode into the messages they stand for, or fall back.

Bytes are compared by decoding: CDR padding bytes are not defined (rclpy leaves them as they
were in memory), so two serializations of one message may differ there.
"""

from builtin_interfaces.msg import Time
from geometry_msgs.msg import WrenchStamped
import numpy as np
import pytest
from rclpy.serialization import deserialize_message, serialize_message
from rnea_ros import RobotModel
from rnea_ros.node.bookkeeping import wire
from robots import urdf_path
import ros_domains
from sensor_msgs.msg import JointState

NAME_LISTS = {
    'talos_reduced': list(RobotModel.from_urdf_file(urdf_path('talos_reduced')).joint_names),
    'panda': list(RobotModel.from_urdf_file(urdf_path('panda')).joint_names),
    'one': ['a'],
    'padding': ['ab', 'abc', 'abcd', 'abcde', 'x' * 13],    # every string length mod 4
}


@pytest.mark.parametrize('names', NAME_LISTS.values(), ids=NAME_LISTS.keys())
def test_joint_state_bytes_decode_into_the_message_with_the_values_written(names):
    out = wire.joint_state_output(JointState, names)
    assert out.raw
    rng = np.random.default_rng(len(names))
    for sec, nanosec in [(0, 0), (1795464932, 999999999), (-3, 17)]:
        values = {k: rng.normal(size=len(names)) * 100
                  for k in ('position', 'velocity', 'effort')}
        for k, v in values.items():
            out.views[k][:] = v
        out.stamp(Time(sec=sec, nanosec=nanosec))
        expected = JointState(name=names, **{k: v.tolist() for k, v in values.items()})
        expected.header.stamp = Time(sec=sec, nanosec=nanosec)
        data = out.message()
        assert isinstance(data, bytes)
        assert len(data) == len(serialize_message(expected))
        assert deserialize_message(data, JointState) == expected


@pytest.mark.parametrize('frame', ['', 'a', 'ab', 'abc', 'panda_link7', 'arm_left_7_link'])
def test_wrench_bytes_decode_into_the_message_with_the_values_written(frame):
    out = wire.wrench_output(WrenchStamped, frame)
    assert out.raw
    values = np.array([1.5, -2.25, 3e5, -4e-7, 5.0, np.pi])
    out.views['wrench'][:] = values
    out.stamp(Time(sec=12, nanosec=34))
    expected = WrenchStamped()
    expected.header.frame_id = frame
    expected.header.stamp = Time(sec=12, nanosec=34)
    f, t = expected.wrench.force, expected.wrench.torque
    f.x, f.y, f.z, t.x, t.y, t.z = values.tolist()
    data = out.message()
    assert len(data) == len(serialize_message(expected))
    assert deserialize_message(data, WrenchStamped) == expected


def test_unexpected_serialization_falls_back_to_filled_messages(monkeypatch):
    """A layout it cannot verify (here: big-endian bytes) gives messages from the same views."""
    monkeypatch.setattr(wire, 'serialize_message',
                        lambda msg: b'\x00\x00' + serialize_message(msg)[2:])
    out = wire.joint_state_output(JointState, ['j1', 'j2'])
    assert not out.raw
    out.views['effort'][:] = [3.0, -4.0]
    out.stamp(Time(sec=5, nanosec=6))
    msg = out.message()
    assert isinstance(msg, JointState)
    assert list(msg.effort) == [3.0, -4.0] and list(msg.name) == ['j1', 'j2']
    assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == (5, 6)


def test_no_joints_falls_back_to_a_message():
    out = wire.joint_state_output(JointState, [])
    assert not out.raw and isinstance(out.message(), JointState)


def test_published_bytes_arrive_as_the_message():
    """Publisher.publish(bytes) through DDS: a subscriber receives the JointState."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    import time
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domains.pick())
    try:
        node = rclpy.create_node('wire_test', context=context)
        got = []
        pub = node.create_publisher(JointState, 'wire_states', 10)
        node.create_subscription(JointState, 'wire_states', got.append, 10)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)
        out = wire.joint_state_output(JointState, ['j1', 'j2', 'j3'])
        out.views['position'][:] = [0.1, 0.2, 0.3]
        out.stamp(Time(sec=1, nanosec=2))
        deadline = time.monotonic() + 10.0
        while not got and time.monotonic() < deadline:
            pub.publish(out.message())
            executor.spin_once(timeout_sec=0.05)
        assert got and list(got[0].position) == [0.1, 0.2, 0.3]
        assert list(got[0].name) == ['j1', 'j2', 'j3'] and got[0].header.stamp.nanosec == 2
    finally:
        rclpy.shutdown(context=context)


def _joint_state(names, sec, nanosec, frame='', rng=None, velocity=True, effort=False):
    rng = rng or np.random.default_rng(0)
    msg = JointState(name=list(names), position=rng.normal(size=len(names)).tolist(),
                     velocity=rng.normal(size=len(names)).tolist() if velocity else [],
                     effort=rng.normal(size=len(names)).tolist() if effort else [])
    msg.header.stamp = Time(sec=sec, nanosec=nanosec)
    msg.header.frame_id = frame
    return msg


def _same(got, msg):
    return ((got.header.stamp.sec, got.header.stamp.nanosec)
            == (msg.header.stamp.sec, msg.header.stamp.nanosec)
            and list(got.name) == list(msg.name)
            and all(np.array_equal(np.asarray(getattr(got, k), dtype=float),
                                   np.asarray(getattr(msg, k), dtype=float))
                    for k in ('position', 'velocity', 'effort')))


@pytest.mark.parametrize('names', NAME_LISTS.values(), ids=NAME_LISTS.keys())
def test_reader_gives_what_rclpy_decodes_and_skips_decoding_repeated_names(names):
    reader = wire.JointStateReader(JointState, Time)
    rng = np.random.default_rng(1)
    for i, (frame, velocity, effort) in enumerate([('', True, False), ('', True, False),
                                                   ('base', True, True), ('base', False, False),
                                                   ('odd', True, True)]):
        msg = _joint_state(names, 100 + i, 999_999_999 - i, frame, rng, velocity, effort)
        got = reader.read(serialize_message(msg))
        assert _same(got, msg)
        assert isinstance(got, wire.JointStateView) == (i > 0)   # decoded once, then read


def test_reader_follows_a_new_name_list_and_back():
    reader = wire.JointStateReader(JointState, Time)
    full, part = NAME_LISTS['panda'], NAME_LISTS['panda'][:7]
    kinds = []
    for names in [full, full, part, part, full, full]:
        msg = _joint_state(names, 1, 2)
        got = reader.read(serialize_message(msg))
        assert _same(got, msg)
        kinds.append(isinstance(got, wire.JointStateView))
    assert kinds == [False, True, False, True, False, True]


def test_reader_refuses_truncated_or_garbage_bytes_with_rclpy_errors():
    reader = wire.JointStateReader(JointState, Time)
    data = serialize_message(_joint_state(NAME_LISTS['talos_reduced'], 1, 2))
    reader.read(data)                                   # the names are now remembered
    for bad in [data[:-8], data[:100], data[:20], b'\x00\x01\x00\x00' + b'\xff' * 40]:
        with pytest.raises(Exception):                  # noqa: B017 - rclpy's own error types
            reader.read(bad)
    assert _same(reader.read(data), deserialize_message(data, JointState))


def test_reader_refuses_a_message_beyond_its_size_bound_unread_and_reads_the_next():
    reader = wire.JointStateReader(JointState, Time)
    data = serialize_message(_joint_state(NAME_LISTS['panda'], 1, 2))
    reader.read(data)
    names = [f'unknown_joint_{k:06d}' for k in range(60_000)]
    huge = serialize_message(_joint_state(names, 3, 4))
    assert len(huge) > wire.MAX_JOINT_STATE_BYTES
    with pytest.raises(ValueError, match='refused unread'):
        reader.read(huge)
    got = reader.read(data)                             # the remembered names are kept
    assert isinstance(got, wire.JointStateView) and _same(got, deserialize_message(data,
                                                                                   JointState))
    small = wire.JointStateReader(JointState, Time, max_bytes=len(data) - 1)
    with pytest.raises(ValueError, match=f'{len(data)} bytes'):
        small.read(data)
