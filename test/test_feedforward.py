"""Trajectory feed-forward: efforts in JointTrajectory points equal the core's inverse dynamics.

The filler is checked point by point against ``inverse_dynamics`` on the panda of
example-robot-data (7 arm joints in the trajectory, in shuffled order, fingers held), with
friction, rotor inertia and a payload in the model; the derivatives it uses where points lack
them are checked against scipy's splines of the same kind (joint_trajectory_controller's
interpolation); bad trajectories are refused with the reason and leave the message unchanged;
the node is run with real rclpy in-process (publish a trajectory, receive it filled).
"""

import os
import random
import time

from builtin_interfaces.msg import Duration
import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rnea_ros import inverse_dynamics, RobotModel
from rnea_ros.core.payload import model_with_payload, Payload
from rnea_ros.feedforward.filler import spline_derivatives, TrajectoryFiller
from rnea_ros.feedforward.messages import fill_trajectory, seconds
from robots import urdf_path
import ros_domains
from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

PANDA = urdf_path('panda')
ARM = [f'panda_joint{i}' for i in range(1, 8)]
SHUFFLED = ['panda_joint3', 'panda_joint1', 'panda_joint7', 'panda_joint2', 'panda_joint5',
            'panda_joint4', 'panda_joint6']
FINGERS = {'panda_finger_joint1': 0.02, 'panda_finger_joint2': 0.03}

pytestmark = pytest.mark.skipif(not os.path.isfile(PANDA), reason='example-robot-data missing')


def panda_model():
    """Return the panda with friction, rotor inertia and a 1.2 kg payload on the hand."""
    with open(PANDA, encoding='utf-8') as stream:
        xml = stream.read()
    plain = RobotModel.from_urdf_string(xml)
    names = plain.joint_names
    payload = Payload('panda_hand', 1.2, (0.01, -0.02, 0.08), np.diag([2e-3, 3e-3, 1e-3]))
    return model_with_payload(
        xml, payload, friction_viscous={n: 0.4 + 0.1 * i for i, n in enumerate(names)},
        friction_coulomb={n: 0.8 - 0.05 * i for i, n in enumerate(names)},
        armature={n: 0.05 * (i + 1) for i, n in enumerate(names)})


def motion(n_points, seed=1):
    """Return times, positions, velocities, accelerations of a smooth path (SHUFFLED order)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0.0, 10.0, n_points) + 0.01
    w, a, phase = rng.uniform(0.3, 1.5, 7), rng.uniform(0.2, 1.0, 7), rng.uniform(0, 6, 7)
    P = a * np.sin(np.outer(t, w) + phase)
    V = a * w * np.cos(np.outer(t, w) + phase)
    A = -a * w**2 * np.sin(np.outer(t, w) + phase)
    return t, P, V, A


def trajectory(names, t, P, V=None, A=None):
    """Return a JointTrajectory message with these points."""
    msg = JointTrajectory(joint_names=list(names))
    for k in range(len(t)):
        sec = int(t[k])
        point = JointTrajectoryPoint(
            positions=P[k].tolist(),
            time_from_start=Duration(sec=sec, nanosec=int(round((t[k] - sec) * 1e9))))
        if V is not None:
            point.velocities = V[k].tolist()
        if A is not None:
            point.accelerations = A[k].tolist()
        msg.points.append(point)
    return msg


def full_state(model, names, p, v, a):
    """Return model-order q, qd, qdd: trajectory joints set, fingers held still."""
    q, qd, qdd = np.zeros(model.nq), np.zeros(model.nv), np.zeros(model.nv)
    index = list(model.joint_names)
    for name, value in FINGERS.items():
        q[index.index(name)] = value
    for j, name in enumerate(names):
        i = index.index(name)
        q[i], qd[i], qdd[i] = p[j], v[j], a[j]
    return q, qd, qdd


def test_1000_point_trajectory_efforts_equal_inverse_dynamics_at_each_point():
    """7-DoF panda, 1000 points, shuffled joint order: effort = ID(q, qd, qdd) to 1e-9."""
    model = panda_model()
    t, P, V, A = motion(1000)
    msg = trajectory(SHUFFLED, t, P, V, A)
    filler = TrajectoryFiller(model, held=FINGERS)
    efforts = fill_trajectory(filler, msg)
    assert efforts.shape == (1000, 7)
    worst = 0.0
    for k, point in enumerate(msg.points):
        q, qd, qdd = full_state(model, SHUFFLED, P[k], V[k], A[k])
        tau = inverse_dynamics(model, q, qd, qdd)
        expected = [tau[list(model.joint_names).index(n)] for n in SHUFFLED]
        worst = max(worst, np.max(np.abs(np.array(point.effort) - expected)))
    assert worst <= 1e-9, worst
    # friction, armature and payload are in it: the plain rigid-body model differs
    plain = RobotModel.from_urdf_file(PANDA)
    q, qd, qdd = full_state(plain, SHUFFLED, P[500], V[500], A[500])
    tau_plain = inverse_dynamics(plain, q, qd, qdd)
    assert np.max(np.abs([tau_plain[list(plain.joint_names).index(n)] for n in SHUFFLED]
                         - efforts[500])) > 0.1


def test_points_without_accelerations_use_the_cubic_hermite_segments():
    """Velocities but no accelerations: the second derivative of JTC's cubic segments."""
    from scipy.interpolate import CubicHermiteSpline
    t, P, V, _ = motion(40, seed=2)
    msg = trajectory(SHUFFLED, t, P, V)
    t = np.array([seconds(point.time_from_start) for point in msg.points])   # ns, as sent
    _, A = spline_derivatives(t, P, V, None)
    spline = CubicHermiteSpline(t, P, V)
    # scipy evaluates a knot on the segment that starts there (the last one: its end)
    np.testing.assert_allclose(A, spline(t, 2), rtol=0, atol=1e-9)
    model = panda_model()
    efforts = fill_trajectory(TrajectoryFiller(model, held=FINGERS), msg)
    q, qd, qdd = full_state(model, SHUFFLED, P[7], V[7], A[7])
    tau = inverse_dynamics(model, q, qd, qdd)
    np.testing.assert_allclose(efforts[7], [tau[list(model.joint_names).index(n)]
                                            for n in SHUFFLED], rtol=0, atol=1e-9)


def test_points_with_positions_only_use_the_linear_segments():
    """Positions only: JTC interpolates linearly (velocity = slope, acceleration 0)."""
    t, P, _, _ = motion(30, seed=3)
    V, A = spline_derivatives(t, P, None, None)
    np.testing.assert_allclose(V[:-1], np.diff(P, axis=0) / np.diff(t)[:, None], atol=1e-12)
    assert not V[-1].any() and not A.any()


def test_single_point_without_velocities_is_held_still():
    model = panda_model()
    msg = trajectory(ARM, [2.0], np.full((1, 7), 0.3))
    efforts = fill_trajectory(TrajectoryFiller(model), msg)
    q = np.zeros(model.nq)
    q[:7] = 0.3
    np.testing.assert_allclose(efforts[0], inverse_dynamics(model, q, np.zeros(9),
                                                            np.zeros(9))[:7], atol=1e-12)


def _bad_cases():
    t, P, V, A = motion(5, seed=4)
    nan = P.copy()
    nan[3, 2] = np.nan
    cases = {
        'nan position': (trajectory(ARM, t, nan, V, A), r'positions\[2\] \(panda_joint3\) of '
                                                        r'point 3 is nan'),
        'short point': (trajectory(ARM, t, P, V, A), 'point 2 has 6 positions for 7 joint'),
        'unknown joint': (trajectory(ARM[:6] + ['gripper'], t, P, V, A),
                          r"joints \['gripper'\] are not moving joints"),
        'duplicate joint': (trajectory(ARM[:6] + ['panda_joint1'], t, P, V, A),
                            r"\['panda_joint1'\] are named more than once"),
        'time back': (trajectory(ARM, t[[0, 1, 3, 2, 4]], P, V, A),
                      'time_from_start must increase: point 3'),
        'some velocities': (trajectory(ARM, t, P, V, A), 'point 4 has 0 velocities'),
        'accelerations only': (trajectory(ARM, t, P, None, A), 'accelerations without '
                                                               'velocities'),
    }
    cases['short point'][0].points[2].positions = P[2, :6].tolist()
    cases['some velocities'][0].points[4].velocities = []
    cases['some velocities'][0].points[4].accelerations = []
    return cases


@pytest.mark.parametrize('case', sorted(_bad_cases()))
def test_bad_trajectory_is_refused_with_the_reason_and_left_unchanged(case):
    msg, reason = _bad_cases()[case]
    with pytest.raises(ValueError, match=reason):
        fill_trajectory(TrajectoryFiller(panda_model()), msg)
    assert all(len(point.effort) == 0 for point in msg.points)


def test_empty_trajectory_passes_unchanged():
    """No points: joint_trajectory_controller's stop; nothing to fill."""
    msg = JointTrajectory(joint_names=ARM)
    assert fill_trajectory(TrajectoryFiller(panda_model()), msg).shape == (0, 7)


def test_floating_base_model_is_refused():
    with pytest.raises(ValueError, match='fixed-base'):
        TrajectoryFiller(RobotModel.from_urdf_file(PANDA, floating_base=True))


# -- the node, real rclpy in-process --------------------------------------------------------

@pytest.fixture
def graph():
    """Return (context, executor, peer) on an isolated domain; shut down after the test."""
    context = rclpy.Context()
    rclpy.init(context=context, domain_id=ros_domains.pick())
    executor = SingleThreadedExecutor(context=context)
    peer = rclpy.create_node(f'peer_{random.randrange(1 << 30)}', context=context)
    executor.add_node(peer)
    yield context, executor, peer
    executor.shutdown()
    peer.destroy_node()
    rclpy.shutdown(context=context)


def spin_until(executor, condition, timeout):
    """Spin until ``condition()`` or ``timeout`` s; return whether it holds."""
    end = time.monotonic() + timeout
    while not condition() and time.monotonic() < end:
        executor.spin_once(timeout_sec=0.01)
    return condition()


def test_node_publishes_the_trajectory_filled_and_drops_a_bad_one(graph):
    """In: /ff/joint_trajectory; out: /arm/joint_trajectory_controller/joint_trajectory."""
    from rnea_ros.feedforward.node import TrajectoryFeedforwardNode
    context, executor, peer = graph
    node = TrajectoryFeedforwardNode(
        context=context, node_name='ff', namespace='arm', parameter_overrides=[
            Parameter('urdf_file', value=PANDA), Parameter('friction_viscous', value=[0.5]),
            Parameter('hold_joints', value=list(FINGERS)),
            Parameter('hold_positions', value=list(FINGERS.values()))])
    executor.add_node(node)
    received = []
    peer.create_subscription(JointTrajectory, '/arm/joint_trajectory_controller/joint_trajectory',
                             received.append, 10)
    publisher = peer.create_publisher(JointTrajectory, '/arm/ff/joint_trajectory', 10)
    assert spin_until(executor, lambda: publisher.get_subscription_count() > 0 and
                      node._pub.get_subscription_count() > 0, 10.0)
    t, P, V, A = motion(50, seed=5)
    publisher.publish(trajectory(SHUFFLED, t, P, V, A))
    assert spin_until(executor, lambda: received, 10.0)
    msg = received[0]
    assert list(msg.joint_names) == SHUFFLED and len(msg.points) == 50
    model = RobotModel.from_urdf_file(PANDA,
                                      friction_viscous=dict.fromkeys(ARM + list(FINGERS), 0.5))
    for k in (0, 17, 49):
        q, qd, qdd = full_state(model, SHUFFLED, P[k], V[k], A[k])
        tau = inverse_dynamics(model, q, qd, qdd)
        np.testing.assert_allclose(msg.points[k].effort, [
            tau[list(model.joint_names).index(n)] for n in SHUFFLED], rtol=0, atol=1e-9)
        np.testing.assert_array_equal(msg.points[k].positions, P[k])
    bad = trajectory(SHUFFLED, t, P, V, A)
    bad.points[3].velocities = [float('nan')] * 7
    publisher.publish(bad)
    good_after = trajectory(SHUFFLED, t[:2], P[:2], V[:2], A[:2])
    publisher.publish(good_after)
    assert spin_until(executor, lambda: len(received) >= 2, 10.0)
    executor.spin_once(timeout_sec=0.2)
    assert len(received) == 2 and len(received[1].points) == 2     # the bad one was dropped
    executor.remove_node(node)
    node.destroy_node()


def test_node_waits_for_the_robot_description_topic_then_fills(graph):
    """No model yet: nothing forwarded; the latched robot_description gives the model."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from rnea_ros.feedforward.node import TrajectoryFeedforwardNode
    from std_msgs.msg import String
    context, executor, peer = graph
    node = TrajectoryFeedforwardNode(context=context)
    executor.add_node(node)
    received = []
    peer.create_subscription(JointTrajectory, '/joint_trajectory_controller/joint_trajectory',
                             received.append, 10)
    publisher = peer.create_publisher(JointTrajectory, '/trajectory_feedforward/joint_trajectory',
                                      10)
    assert spin_until(executor, lambda: publisher.get_subscription_count() > 0 and
                      node._pub.get_subscription_count() > 0, 10.0)
    t, P, V, A = motion(10, seed=7)
    publisher.publish(trajectory(ARM, t, P, V, A))
    assert not spin_until(executor, lambda: received, 1.0)     # no model: not forwarded
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    with open(PANDA, encoding='utf-8') as stream:
        peer.create_publisher(String, '/robot_description', latched).publish(
            String(data=stream.read()))
    assert spin_until(executor, lambda: node._filler is not None, 10.0)
    publisher.publish(trajectory(ARM, t, P, V, A))
    assert spin_until(executor, lambda: received, 10.0)
    model = RobotModel.from_urdf_file(PANDA)
    q, qd, qdd = np.zeros(9), np.zeros(9), np.zeros(9)
    q[:7], qd[:7], qdd[:7] = P[4], V[4], A[4]
    np.testing.assert_allclose(received[0].points[4].effort,
                               inverse_dynamics(model, q, qd, qdd)[:7], atol=1e-9)
    executor.remove_node(node)
    node.destroy_node()


# -- one model: the rnea node's parameter file gives the feed-forward node the same model ------

PAYLOAD = {'payload_link': 'panda_hand', 'payload_mass': 0.8, 'payload_com': [0.0, 0.01, 0.06],
           'payload_inertia': [2e-3, 2e-3, 1e-3, 0.0, 0.0, 0.0]}


class _Identified:
    """What ``rnea-ros identify`` hands node_parameters: the options of its friction law."""

    def __init__(self, options):
        self.options = options

    def model_options(self, model):
        return self.options


def identified_file(tmp_path, **extra):
    """Write PARAMS.yaml as `rnea-ros identify --params-out` does, plus a payload; return it.

    The whole law: direction-dependent Fv/Fs, Stribeck, effort offsets (5 N m on joint 2),
    rotor inertia, tanh sign, per-joint Coulomb bands and Stribeck velocities (all 9 panda
    joints, fingers included).
    """
    import yaml
    from rnea_ros.analysis.output import node_parameters
    model = RobotModel.from_urdf_file(PANDA)
    names = model.joint_names

    def per_joint(values):
        return dict(zip(names, values))

    options = {
        'friction_viscous': per_joint([0.5 + 0.1 * i for i in range(9)]),
        'friction_viscous_negative': per_joint([0.9 - 0.05 * i for i in range(9)]),
        'friction_coulomb': per_joint([0.6 + 0.05 * i for i in range(9)]),
        'friction_coulomb_negative': per_joint([1.1 - 0.08 * i for i in range(9)]),
        'friction_stribeck': per_joint([0.3, 0.2, 0.1, 0.4, 0.0, 0.25, 0.15, 0.0, 0.0]),
        'effort_offset': per_joint([0.0, 5.0, -0.3, 0.2, -1.0, 0.1, 0.05, 0.0, 0.0]),
        'armature': per_joint([0.02 * (i + 1) for i in range(9)]),
        'friction_law': 'tanh', 'coulomb_band': 0.02, 'stribeck_velocity': 0.15,
        'friction_coulomb_band': per_joint([0.01, 0.02, 0.03, 0.05, 0.02, 0.02, 0.04, 0.02,
                                            0.02]),
        'friction_stribeck_velocity': per_joint([0.1, 0.15, 0.2, 0.15, 0.3, 0.15, 0.25, 0.15,
                                                 0.15]),
    }
    values = yaml.safe_load(node_parameters(model, _Identified(options)))
    values['/**']['ros__parameters'].update(PAYLOAD, **extra)
    path = tmp_path / 'PARAMS.yaml'
    path.write_text(yaml.safe_dump(values, sort_keys=False))
    return path


def file_model(path):
    """Return the model :func:`node_model` builds from a parameter file and the panda."""
    import yaml
    from rnea_ros.core.urdf import parse_urdf
    from rnea_ros.node.params import node_config, node_model
    values = yaml.safe_load(path.read_text())['/**']['ros__parameters']
    with open(PANDA, encoding='utf-8') as stream:
        description = parse_urdf(stream.read())
    return node_model(description, node_config(values)), node_model(description,
                                                                    node_config(PAYLOAD))


def _args(path):
    return ['--ros-args', '--params-file', str(path), '-p', f'urdf_file:={PANDA}']


def test_identified_parameter_file_gives_the_filler_the_whole_friction_law_and_payload(
        graph, tmp_path):
    """Identify's PARAMS.yaml and a payload: efforts = ID + friction + Ia qdd of node_model.

    The file has the asymmetric tanh law, effort offsets, Stribeck and per-joint bands; every
    filled effort equals the rigid-body ID with the payload plus joint_friction plus rotor
    inertia of the model node_model builds from the same file, to 1e-9.
    """
    from rnea_ros.core.dynamics import joint_friction
    from rnea_ros.feedforward.node import TrajectoryFeedforwardNode
    context, executor, peer = graph
    path = identified_file(tmp_path)
    node = TrajectoryFeedforwardNode(
        context=context, cli_args=_args(path), parameter_overrides=[
            Parameter('hold_joints', value=list(FINGERS)),
            Parameter('hold_positions', value=list(FINGERS.values()))])
    executor.add_node(node)
    # the file's parameters are declared: read back, not "Parameter not set"
    assert list(node.get_parameter('effort_offset').value)[:2] == [0.0, 5.0]
    assert node.get_parameter('friction_law').value == 'tanh'
    assert node.get_parameter('payload_link').value == 'panda_hand'
    received = []
    peer.create_subscription(JointTrajectory, '/joint_trajectory_controller/joint_trajectory',
                             received.append, 10)
    publisher = peer.create_publisher(JointTrajectory, '/trajectory_feedforward/joint_trajectory',
                                      10)
    assert spin_until(executor, lambda: publisher.get_subscription_count() > 0 and
                      node._pub.get_subscription_count() > 0, 10.0)
    t, P, V, A = motion(60, seed=11)
    V[5] = [0.3, -0.3, 0.01, -0.01, 0.0, 1.0, -1.0]     # both directions, inside the bands, 0
    publisher.publish(trajectory(SHUFFLED, t, P, V, A))
    assert spin_until(executor, lambda: received, 10.0)
    model, rigid = file_model(path)     # rigid: the same payload, no joint terms
    assert model.friction_law == 'tanh' and not rigid.has_joint_terms
    index = [list(model.joint_names).index(n) for n in SHUFFLED]
    worst = friction_part = 0.0
    for k in range(60):
        q, qd, qdd = full_state(model, SHUFFLED, P[k], V[k], A[k])
        expected = (inverse_dynamics(rigid, q, qd, qdd) + joint_friction(model, qd) +
                    model.armature * qdd)[index]
        worst = max(worst, np.max(np.abs(np.array(received[0].points[k].effort) - expected)))
        friction_part = max(friction_part, abs(joint_friction(model, qd)[1]))
    assert worst <= 1e-9, worst
    assert friction_part > 5.0      # the 5 N m offset of joint 2 is in it


@pytest.mark.parametrize('joints', ['friction_joints', 'command_joints'])
def test_one_parameter_file_gives_the_rnea_node_and_the_filler_one_model(graph, tmp_path, joints):
    """The same file in an rnea node and a feed-forward node: one model.

    Equal efforts at the same q, qd, qdd (both directions, inside the Coulomb bands) and equal
    friction tables; also with the arrays following ``command_joints`` (arm only, no
    friction_joints).
    """
    import yaml
    from rnea_ros.feedforward.node import TrajectoryFeedforwardNode
    from rnea_ros.node.rnea_node import RneaNode
    context, executor, _ = graph
    path = identified_file(tmp_path)
    if joints == 'command_joints':      # arm-only driver: arrays by command joint, 7 values
        values = yaml.safe_load(path.read_text())
        params = values['/**']['ros__parameters']
        del params['friction_joints']
        for name, value in params.items():
            if isinstance(value, list) and len(value) == 9:
                params[name] = value[:7]
        params['command_joints'] = ARM
        path.write_text(yaml.safe_dump(values, sort_keys=False))
    rnea = RneaNode(context=context, cli_args=_args(path))
    feedforward = TrajectoryFeedforwardNode(context=context, cli_args=_args(path))
    try:
        ours, theirs = feedforward._filler.model, rnea._rt.model
        for name in ('friction_table', 'coulomb_bands', 'stribeck_velocities', 'armature'):
            np.testing.assert_array_equal(getattr(ours, name), getattr(theirs, name), name)
        assert ours.friction_law == theirs.friction_law == 'tanh'
        assert ours.link_names == theirs.link_names     # the payload body too
        t, P, V, A = motion(20, seed=12)
        V[3] = [0.3, -0.3, 0.01, -0.01, 0.0, 1.0, -1.0]
        efforts = fill_trajectory(feedforward._filler, trajectory(ARM, t, P, V, A))
        for k in range(20):
            q, qd, qdd = np.zeros(9), np.zeros(9), np.zeros(9)
            q[:7], qd[:7], qdd[:7] = P[k], V[k], A[k]
            np.testing.assert_allclose(efforts[k], inverse_dynamics(theirs, q, qd, qdd)[:7],
                                       rtol=0, atol=1e-9)
    finally:
        rnea.destroy_node()
        feedforward.destroy_node()


def test_every_parameter_the_rnea_node_builds_its_model_from_is_declared_by_the_filler(graph):
    """Compare the declared parameter names and descriptors of the two nodes.

    The model subset is what :func:`node_model` reads (recorded from a run of it, not from a
    list) plus the description sources: each is declared by the rnea node and by the
    feed-forward node, with the same descriptor, and is in ``model_parameter_names()``.
    """
    from rnea_ros.core.urdf import parse_urdf
    from rnea_ros.feedforward.node import TrajectoryFeedforwardNode
    from rnea_ros.node import params as node_params
    from rnea_ros.node.rnea_node import RneaNode

    class Recording(dict):
        """A configuration that notes every key read from it."""

        def __init__(self, values):
            super().__init__(values)
            self.read = set()

        def __getitem__(self, key):
            self.read.add(key)
            return super().__getitem__(key)

        def get(self, key, default=None):
            self.read.add(key)
            return super().get(key, default)

    with open(PANDA, encoding='utf-8') as stream:
        description = parse_urdf(stream.read())
    cfg = Recording(node_params.node_config(dict(PAYLOAD, effort_offset=[1.0])))
    node_params.node_model(description, cfg)
    used = cfg.read | {'robot_description', 'urdf_file'}
    assert {'effort_offset', 'friction_law', 'friction_coulomb_band', 'command_joints',
            'payload_inertia'} <= used
    assert used <= set(node_params.model_parameter_names())
    context, _, _ = graph
    rnea = RneaNode(context=context)
    feedforward = TrajectoryFeedforwardNode(context=context)
    try:
        declared_rnea = set(rnea.list_parameters([], 0).names)
        declared_ff = set(feedforward.list_parameters([], 0).names)
        assert used <= declared_rnea
        assert used - declared_ff == set()
        names = sorted(used)
        assert feedforward.describe_parameters(names) == rnea.describe_parameters(names)
    finally:
        rnea.destroy_node()
        feedforward.destroy_node()


def test_model_parameters_set_at_run_time_rebuild_the_model_or_are_refused(graph):
    """`ros2 param set` of a model parameter: a new model; a bad value: the rnea node's reason.

    A floating base (which the filler cannot fill) stops the start-up with the reason instead
    of being ignored.
    """
    from rnea_ros.feedforward.node import TrajectoryFeedforwardNode
    context, _, _ = graph
    node = TrajectoryFeedforwardNode(context=context, parameter_overrides=[
        Parameter('urdf_file', value=PANDA)])
    try:
        assert not node._filler.model.has_joint_terms
        result = node.set_parameters([Parameter('effort_offset', value=[5]),
                                      Parameter('friction_law', value='tanh')])
        assert all(r.successful for r in result), result
        assert node.get_parameter('effort_offset').type_ == Parameter.Type.DOUBLE_ARRAY
        assert node._filler.model.friction_law == 'tanh'
        q = np.zeros(9)
        np.testing.assert_allclose(
            node._filler.efforts(np.arange(7), q[None, :7], q[None, :7], q[None, :7])[0],
            inverse_dynamics(RobotModel.from_urdf_file(PANDA), q, q, q)[:7] + [5.0] * 7,
            atol=1e-9)
        for name, value, reason in (('friction_law', 'cubic', 'friction_law must be one of'),
                                    ('coulomb_band', 0.0, 'coulomb_band out of range'),
                                    ('friction_stribeck', [1.0, 2.0], 'friction_stribeck has 2')):
            result = node.set_parameters([Parameter(name, value=value)])[0]
            assert not result.successful and reason in result.reason, result.reason
        assert node._filler.model.friction_law == 'tanh'
    finally:
        node.destroy_node()
    with pytest.raises(ValueError, match='fixed-base'):
        TrajectoryFeedforwardNode(context=context, node_name='floating', parameter_overrides=[
            Parameter('urdf_file', value=PANDA), Parameter('floating_base', value=True)])
