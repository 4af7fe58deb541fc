"""The mujoco_sim and reference_trajectory nodes, with real rclpy on an isolated domain."""
import inspect
import os

import numpy as np
import pytest
import rclpy
from rclpy.parameter import Parameter
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rnea_ros import gravity_torques, RobotModel
from rnea_ros.demo.analysis import load_record
from rnea_ros.sim.mujoco_sim import MujocoSimNode, SimulationLoop
from rnea_ros.sim.reference_trajectory import ReferenceTrajectoryNode
from rnea_ros.sim.sim_launch import default_urdf_file, PANDA_POSE
from rnea_ros.sim.trajectories import ReferenceProfile
import ros_domains
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64MultiArray, String
from trajectory_msgs.msg import JointTrajectory

PANDA = default_urdf_file()
JOINTS = list(PANDA_POSE)
POSE = [PANDA_POSE[name] for name in JOINTS]
ROBOT = RobotModel.from_urdf_file(PANDA)


@pytest.fixture
def context():
    """Return an rclpy context on a random domain of its own."""
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=ros_domains.pick())
    yield ctx
    rclpy.try_shutdown(context=ctx)


class Controller:
    """Test helper: answers every joint state with gravity torques (or a fixed command)."""

    def __init__(self, context, command=None, answer=True, max_answers=None):
        """Create the helper node; ``command`` overrides the gravity torques."""
        self.node = rclpy.create_node('test_controller', context=context)
        self.publisher = self.node.create_publisher(
            Float64MultiArray, '/effort_controller/commands', 10)
        self.states, self.clocks = [], []
        self.command = command
        self.answer = answer
        self.max_answers = max_answers
        self.answers = 0
        self.node.create_subscription(JointState, '/joint_states', self.on_state, 10)
        self.node.create_subscription(Clock, '/clock', self.clocks.append, 10)

    def on_state(self, msg):
        """Record the state; publish the answering command."""
        self.states.append(msg)
        if not self.answer or (self.max_answers is not None and
                               self.answers >= self.max_answers):
            return
        self.answers += 1
        tau = gravity_torques(ROBOT, np.array(msg.position)) if self.command is None \
            else self.command
        self.publisher.publish(Float64MultiArray(data=list(tau)))


def simulator(context, **parameters):
    """Return a MujocoSimNode with parameters (panda at the demo pose by default)."""
    values = {'urdf_file': PANDA, 'initial_positions': POSE, 'lock_step': True,
              'duration': 0.2}
    values.update(parameters)
    overrides = [Parameter(name, value=value) for name, value in values.items()]
    return MujocoSimNode(context=context, parameter_overrides=overrides)


def run(context, sim, *helpers):
    """Run the simulation loop (sim + helper nodes in one executor) until ``duration``."""
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    for node in (sim,) + tuple(helper.node for helper in helpers):
        executor.add_node(node)
    loop = SimulationLoop(sim, executor)
    loop.run()
    for _ in range(20):
        executor.spin_once(timeout_sec=0.01)
    return loop


def test_lock_step_gravity_compensation_holds_and_publishes_every_step(context, tmp_path):
    """Each 1 ms step publishes joint_states and /clock; answered gravity torques hold."""
    record = str(tmp_path / 'run.npz')
    sim = simulator(context, record_file=record)
    controller = Controller(context)
    loop = run(context, sim, controller)
    loop.finish()
    assert sim.simulation.steps == 200 and sim.lock_step_timeouts == 0
    stamps = [s.header.stamp.sec + 1e-9 * s.header.stamp.nanosec for s in controller.states]
    assert stamps[-1] == pytest.approx(0.2)
    assert np.allclose(np.diff(stamps[-200:]), 0.001)
    assert controller.clocks[-1].clock.nanosec == 200000000
    last = controller.states[-1]
    assert list(last.name) == JOINTS
    np.testing.assert_allclose(last.position, POSE, atol=1e-9)
    np.testing.assert_allclose(last.effort, gravity_torques(ROBOT, np.array(last.position)),
                               atol=1e-9)
    saved = load_record(record)
    assert saved['position'].shape == (201, 9) and saved['steps'] == 200
    assert saved['joint_names'] == JOINTS


def test_without_commands_the_arm_falls_and_efforts_are_zero(context):
    """No controller: zero torque, the arm moves away from the start pose."""
    sim = simulator(context, lock_step=False, real_time_factor=0.0)
    observer = Controller(context, answer=False)
    run(context, sim, observer)
    assert np.abs(np.array(observer.states[-1].position) - POSE).max() > 0.01
    assert not np.any(observer.states[-1].effort)


@pytest.mark.parametrize('command', [[1.0, 2.0], [np.nan] * 9], ids=['length', 'nan'])
def test_wrong_length_and_nan_commands_are_rejected(context, command):
    """Malformed commands are counted and never applied."""
    sim = simulator(context, duration=0.02, lock_step_timeout=0.05)
    bad = Controller(context, command=command)
    run(context, sim, bad)
    assert sim.commands_rejected > 0 and sim.commands_received == 0
    assert not np.any(bad.states[-1].effort)


def test_stale_command_drops_to_zero(context):
    """A command older than command_timeout stops being applied."""
    sim = simulator(context, lock_step=False, real_time_factor=0.0, duration=0.05,
                    command_timeout=0.01, wait_for_first_command=True)
    once = Controller(context, max_answers=1)
    run(context, sim, once)
    assert sim.commands_received == 1
    assert not np.any(once.states[-1].effort)
    assert sim.simulation.command_age > 0.01


def test_wait_for_first_command_freezes_time(context):
    """Until a command arrives the state is republished at t = 0 and physics does not run."""
    sim = simulator(context, wait_for_first_command=True, duration=0.01)
    observer = Controller(context, answer=False)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(sim)
    executor.add_node(observer.node)
    loop = SimulationLoop(sim, executor)
    for _ in range(3):
        sim.publish_state()
        loop.spin_until(0.0)
        for _ in range(5):
            executor.spin_once(timeout_sec=0.02)
    assert sim.simulation.steps == 0
    assert observer.states and all(s.header.stamp.sec == 0 and s.header.stamp.nanosec == 0
                                   for s in observer.states)


class BurstController:
    """Test helper: slow on its first states, then answers the queued held states in a burst.

    Held states (no efforts) are kept until ``queue`` of them arrived, then answered one at
    once and the rest every 2 ms, minus the ``dropped`` first ones (never answered, as by a
    controller still loading). A running state stamped t is answered at once with t on every
    joint, so a recorded effort names the state it answered.
    """

    def __init__(self, context, queue=3, dropped=0):
        """Create the helper node."""
        self.node = rclpy.create_node('burst_controller', context=context)
        self.publisher = self.node.create_publisher(
            Float64MultiArray, '/effort_controller/commands', 10)
        self.node.create_subscription(JointState, '/joint_states', self.on_state, 10)
        self.queue, self.dropped, self.held, self.owed = queue, dropped, 0, 0
        self.timer = None

    def answer(self, stamp):
        """Publish the command answering a state stamped ``stamp``."""
        seconds = stamp.sec + 1e-9 * stamp.nanosec
        self.publisher.publish(Float64MultiArray(data=[seconds] * len(JOINTS)))

    def on_state(self, msg):
        """Queue held states until the burst; answer running states at once."""
        if msg.effort:
            self.answer(msg.header.stamp)
            return
        self.held += 1
        if self.held == self.queue:
            self.owed = self.queue - self.dropped - 1
            self.answer(msg.header.stamp)
            self.timer = self.node.create_timer(0.002, self.on_burst)

    def on_burst(self):
        """Send one more answer to a held state (stamp 0) of the burst."""
        if self.owed > 0:
            self.owed -= 1
            self.answer(Clock().clock)


@pytest.mark.parametrize('dropped', [0, 1])
def test_lock_step_pairs_each_step_with_its_answer_after_a_burst_of_held_answers(
        context, tmp_path, dropped):
    """Answers to held states still in flight never pass for the answer to a running step.

    The controller answers the held states it queued in a burst (all of them, or all but one
    it dropped); every running step is then applied the command answering its own state.
    """
    record = str(tmp_path / 'run.npz')
    sim = simulator(context, wait_for_first_command=True, duration=0.05, record_file=record)
    controller = BurstController(context, dropped=dropped)
    loop = run(context, sim, controller)
    loop.finish()
    saved = load_record(record)
    assert sim.simulation.steps == 50 and sim.lock_step_timeouts == 0
    assert controller.owed == 0 and sim.commands_received == 51 + 3 - dropped
    applied = saved['effort'][1:, 0]
    np.testing.assert_allclose(applied, saved['time'][:-1], atol=1e-12)


def test_robot_description_topic_and_command_order(context):
    """The URDF can come from /robot_description (transient local); joints sets the order."""
    latched = QoSProfile(depth=1, reliability=ReliabilityPolicy.RELIABLE,
                         durability=DurabilityPolicy.TRANSIENT_LOCAL)
    publisher_node = rclpy.create_node('description_publisher', context=context)
    publisher = publisher_node.create_publisher(String, '/robot_description', latched)
    with open(PANDA) as stream:
        publisher.publish(String(data=stream.read()))
    order = ['panda_joint2', 'panda_joint1']
    overrides = [Parameter('joints', value=order), Parameter('initial_positions', value=[
        -0.4, 0.3]), Parameter('lock_step', value=True), Parameter('duration', value=0.01)]
    sim = MujocoSimNode(context=context, parameter_overrides=overrides)
    controller = Controller(context, command=[-7.0, 5.0])
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    for node in (sim, controller.node, publisher_node):
        executor.add_node(node)
    SimulationLoop(sim, executor).run()
    assert sim.simulation.command_joints == order
    np.testing.assert_allclose(sim.simulation.efforts[:2], [5.0, -7.0])
    np.testing.assert_allclose(sim.simulation.positions[:2], [0.3, -0.4], atol=0.01)


def test_bad_joint_parameter_is_a_clear_error(context):
    """Unknown command joints are refused with their names."""
    with pytest.raises(ValueError, match='panda_joint9'):
        simulator(context, joints=['panda_joint9'], initial_positions=[0.0])


def test_lock_step_sync_waits_for_the_reference_of_each_step(context):
    """With sync_topic, each joint state goes out after a reference stamped at its time."""
    sim = simulator(context, sync_topic='/rnea/reference', duration=0.05)
    overrides = [Parameter('joints', value=JOINTS), Parameter('start_positions', value=POSE),
                 Parameter('use_sim_time', value=True), Parameter('start_time', value=0.0)]
    reference = ReferenceTrajectoryNode(context=context, parameter_overrides=overrides)
    seen = []
    reference_watch = Controller(context)
    reference_watch.node.create_subscription(JointTrajectory, '/rnea/reference', seen.append,
                                             100)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    for node in (sim, reference, reference_watch.node):
        executor.add_node(node)
    while not seen:
        executor.spin_once(timeout_sec=0.05)
    SimulationLoop(sim, executor).run()
    for _ in range(200):
        executor.spin_once(timeout_sec=0.005)
    assert sim.simulation.steps == 50 and sim.sync_timeouts == 0
    stamps = {m.header.stamp.nanosec for m in seen}
    assert {int(round(k * 1e6)) for k in range(51)} <= stamps


def test_reference_node_publishes_the_profile_at_node_time(context):
    """Points equal the sinusoid at (stamp - start); names and start from the parameters."""
    overrides = [Parameter('joints', value=['a', 'b']),
                 Parameter('start_positions', value=[0.1, -0.2]),
                 Parameter('amplitude', value=[0.3, 0.05]), Parameter('frequency', value=[2.0]),
                 Parameter('rate', value=200.0)]
    node = ReferenceTrajectoryNode(context=context, parameter_overrides=overrides)
    listener = rclpy.create_node('listener', context=context)
    seen = []
    listener.create_subscription(JointTrajectory, '/rnea/reference', seen.append, 100)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(listener)
    while len(seen) < 20:
        executor.spin_once(timeout_sec=0.1)
    profile = ReferenceProfile('sinusoid', [0.1, -0.2], amplitude=[0.3, 0.05], frequency=2.0)
    for msg in seen:
        t = (msg.header.stamp.sec * 1000000000 + msg.header.stamp.nanosec -
             node.start_time) * 1e-9
        point = msg.points[0]
        expected = profile(t)
        assert list(msg.joint_names) == ['a', 'b']
        for field, values in zip(('positions', 'velocities', 'accelerations'), expected):
            np.testing.assert_allclose(getattr(point, field), values, atol=1e-6)
    assert any(abs(msg.points[0].velocities[0]) > 0.1 for msg in seen)


def test_reference_node_takes_names_and_start_from_joint_states(context):
    """Without joints/start_positions, the first joint state provides both."""
    node = ReferenceTrajectoryNode(context=context)
    talker = rclpy.create_node('talker', context=context)
    publisher = talker.create_publisher(JointState, '/joint_states', 10)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(talker)
    for _ in range(50):
        publisher.publish(JointState(name=['x', 'y'], position=[0.5, 1.5]))
        executor.spin_once(timeout_sec=0.02)
        if node.profile is not None:
            break
    assert node.joint_names == ['x', 'y']
    np.testing.assert_array_equal(node.profile.start, [0.5, 1.5])


def test_reference_node_rejects_bad_rate(context):
    """A non-positive rate is a clear error."""
    with pytest.raises(ValueError, match='rate'):
        ReferenceTrajectoryNode(context=context, parameter_overrides=[
            Parameter('rate', value=0.0)])


def test_console_entry_points_are_declared():
    """setup.py installs mujoco_sim, reference_trajectory and add_ros2_control.

    Through rnea_ros.entry_points (one line for a missing dependency), which runs each
    module's main.
    """
    from rnea_ros import entry_points
    with open(os.path.join(os.path.dirname(__file__), '..', 'setup.py')) as stream:
        text = stream.read()
    for name, module in (('mujoco_sim', 'rnea_ros.sim.mujoco_sim'),
                         ('reference_trajectory', 'rnea_ros.sim.reference_trajectory'),
                         ('add_ros2_control', 'rnea_ros.sim.ros2_control_urdf')):
        assert f'{name} = rnea_ros.entry_points:{name}' in text
        assert f"'{module}'" in inspect.getsource(getattr(entry_points, name))


def test_paused_holds_until_unpaused_and_only_paused_changes_at_run_time(context):
    """paused=true freezes time (states without efforts); false releases; others refused."""
    sim = simulator(context, paused=True, duration=0.01)
    result = sim.set_parameters([Parameter('physics_rate', value=500.0)])[0]
    assert not result.successful and 'only paused' in result.reason
    controller = Controller(context)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(sim)
    executor.add_node(controller.node)
    loop = SimulationLoop(sim, executor)
    released = []

    def release():
        released.append(sim.simulation.steps)
        return len(released) > 3
    loop.hold(release)
    assert sim.simulation.steps == 0 and len(released) > 3
    for _ in range(5):
        executor.spin_once(timeout_sec=0.02)
    # A frozen simulation applies nothing: its states carry no efforts (an observer would
    # otherwise read the arm's whole gravity load as a push on a held arm).
    assert controller.states and all(len(s.effort) == 0 for s in controller.states)
    assert sim.set_parameters([Parameter('paused', value=False)])[0].successful
    assert not sim.paused
    loop.run()
    assert sim.simulation.steps == 10


def test_reference_node_plays_an_excitation_file(context, tmp_path):
    """trajectory_file: points equal the Fourier trajectory at (stamp - start), file's joints."""
    from rnea_ros.analysis.excitation import FourierTrajectory
    trajectory = FourierTrajectory(['b', 'a'], 2.0, 1.0, [0.1, -0.2],
                                   [[0.3, -0.3], [0.1, -0.1]], [[0.2, -0.1], [0.0, 0.0]])
    path = str(tmp_path / 'excitation.yaml')
    trajectory.to_yaml(path)
    overrides = [Parameter('trajectory_file', value=path), Parameter('rate', value=200.0)]
    node = ReferenceTrajectoryNode(context=context, parameter_overrides=overrides)
    listener = rclpy.create_node('listener', context=context)
    seen = []
    listener.create_subscription(JointTrajectory, '/rnea/reference', seen.append, 100)
    executor = rclpy.executors.SingleThreadedExecutor(context=context)
    executor.add_node(node)
    executor.add_node(listener)
    while len(seen) < 20:
        executor.spin_once(timeout_sec=0.1)
    for msg in seen:
        t = (msg.header.stamp.sec * 1000000000 + msg.header.stamp.nanosec -
             node.start_time) * 1e-9
        assert list(msg.joint_names) == ['b', 'a']
        for field, values in zip(('positions', 'velocities', 'accelerations'),
                                 trajectory.evaluate(t)):
            np.testing.assert_allclose(getattr(msg.points[0], field), values, atol=1e-6)
    assert any(abs(msg.points[0].velocities[0]) > 0.1 for msg in seen)
    with pytest.raises(ValueError, match='differ'):
        ReferenceTrajectoryNode(context=context, parameter_overrides=overrides + [
            Parameter('joints', value=['a', 'c'])])


def test_joint_armature_reaches_the_simulated_joints(context):
    """joint_armature (one value per joint, in joints order) becomes MuJoCo's dof_armature."""
    from rnea_ros.sim.mujoco_model import joint_addresses
    values = [0.01 * (k + 1) for k in range(len(POSE))]
    sim = simulator(context, joint_armature=values)
    model = sim.simulation.model
    _, dof = joint_addresses(model, sim.simulation.command_joints)
    np.testing.assert_allclose(model.dof_armature[dof], values)
    with pytest.raises(ValueError, match='joint_armature'):
        simulator(context, joint_armature=[0.1])
