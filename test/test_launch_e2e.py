"""End to end, as a ROS user runs it: colcon builds the package, ``ros2 launch`` runs its files.

One colcon build into a temporary workspace serves the whole module.  Each test starts
``ros2 launch rnea_ros <file>`` as a process (after sourcing ``install/setup.bash``), talks to
the nodes over topics and services on its own ROS_DOMAIN_ID, stops it with SIGINT as Ctrl-C
does, and checks the exit: return code 0, every process "finished cleanly", no traceback.
Skipped only where the ROS 2 ``launch`` packages are not importable at all.
"""
import glob
import os
import random
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from rnea_ros import gravity_torques, inverse_dynamics, reaction_wrenches, RobotModel
from rnea_ros.node.bookkeeping import topic_token
from rnea_ros.node.launch_helpers import shipped_urdf_file
from rnea_ros.sim.sim_launch import default_urdf_file
import ros_domains

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = ('package.xml', 'setup.py', 'setup.cfg', 'resource', 'rnea_ros', 'launch', 'config',
           'urdf')
DOMAIN_ID = ros_domains.pick()
ARM6_JOINTS = [f'joint{i}' for i in range(1, 7)]


def require_launch():
    """Skip unless ROS 2 ``launch`` and ``launch_ros`` are importable (a ROS install or wheels)."""
    try:
        from launch import LaunchDescription  # noqa: F401 (not the repo's launch/ folder)
        import launch_ros.actions  # noqa: F401
    except ImportError as error:
        pytest.skip(f'launch/launch_ros not importable here ({error})')


@pytest.fixture(scope='module')
def workspace(tmp_path_factory):
    """Build the package with colcon into a fresh workspace; return (folder, environment)."""
    require_launch()
    colcon = shutil.which('colcon', path=os.path.dirname(sys.executable)) or \
        shutil.which('colcon')
    assert colcon, 'colcon not found: pip install colcon-common-extensions'
    ws = tmp_path_factory.mktemp('ws')
    src = ws / 'src' / 'rnea_ros'
    src.mkdir(parents=True)
    ignore = shutil.ignore_patterns('__pycache__', '*.egg-info', '*.nbi', '*.nbc')
    for name in SOURCES:
        path = os.path.join(ROOT, name)
        if os.path.isdir(path):
            shutil.copytree(path, src / name, ignore=ignore)
        else:
            shutil.copy2(path, src / name)
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN_ID), PYTHONUNBUFFERED='1',
               RMW_IMPLEMENTATION=os.environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp'))
    env['PATH'] = os.path.dirname(sys.executable) + os.pathsep + env.get('PATH', '')
    env.pop('PYTHONPATH', None)        # the installed package, not this source tree
    if not env.get('AMENT_PREFIX_PATH'):
        env['AMENT_PREFIX_PATH'] = sys.prefix      # where the launch wheels are indexed
    build = subprocess.run([colcon, 'build'], cwd=ws, env=env, capture_output=True, text=True,
                           timeout=600)
    assert build.returncode == 0, build.stdout + build.stderr
    assert (ws / 'install' / 'rnea_ros' / 'lib' / 'rnea_ros' / 'rnea_node').exists()
    seed_kernel_cache(ws)
    return ws, env


def seed_kernel_cache(ws):
    """Copy this tree's numba cache of the kernels into the installed package (CI time).

    numba keys a cached kernel on its source file's content, the same in the install: the first
    launch then loads the kernels instead of compiling them (about 35 s, once per ROS
    distribution's run).  A user's first start compiles; the notice it logs meanwhile is
    tested in test_issue23_node.  Files the tree does not have yet are compiled as usual.
    """
    installed = glob.glob(str(ws / 'install' / 'rnea_ros' / 'lib' / 'python*' /
                              'site-packages' / 'rnea_ros'))
    if not installed:
        return
    tree = os.path.join(ROOT, 'rnea_ros')
    for folder, _, files in os.walk(tree):
        if os.path.basename(folder) != '__pycache__':
            continue
        target = os.path.join(installed[0], os.path.relpath(folder, tree))
        for name in files:
            if name.endswith(('.nbi', '.nbc', '.sha256')):
                os.makedirs(target, exist_ok=True)
                shutil.copy2(os.path.join(folder, name), target)


def _default_interrupt():
    """Give the launch the default SIGINT, as a terminal does (in the child, before exec).

    A test run started in the background by a shell without job control (``cmd &`` in a
    script) inherits SIGINT ignored, and ``ros2 launch`` then ignores the Ctrl-C these tests
    send: it kept running, its nodes too, in every interrupt test.
    """
    signal.signal(signal.SIGINT, signal.SIG_DFL)


class Launch:
    """``ros2 launch rnea_ros ...`` in its own session, output in a log file."""

    def __init__(self, workspace, *arguments):
        """Source the workspace and start ros2 launch with ``arguments``."""
        ws, env = workspace
        self.log_path = ws / 'launch-{}.log'.format(random.randrange(1 << 30))
        self.log = open(self.log_path, 'w')
        script = 'source install/setup.bash && exec ros2 launch rnea_ros "$@"'
        self.process = subprocess.Popen(['bash', '-c', script, 'ros2'] + list(arguments),
                                        cwd=ws, env=env, stdout=self.log,
                                        stderr=subprocess.STDOUT, start_new_session=True,
                                        preexec_fn=_default_interrupt)

    def output(self):
        """Return everything the launch printed so far."""
        with open(self.log_path) as stream:
            return stream.read()

    def wait(self, timeout):
        """Wait for the launch to end by itself; return (code, output)."""
        try:
            code = self.process.wait(timeout)
        finally:
            self.close()
        return code, self.output()

    def interrupt(self, timeout=60.0):
        """Send SIGINT (Ctrl-C) to ros2 launch; return (exit code, output).

        ros2 launch itself escalates to SIGTERM and SIGKILL after 5 s each; a launch still
        running after ``timeout`` fails the test with what it printed (and the processes of
        its session are killed).
        """
        self.process.send_signal(signal.SIGINT)
        try:
            return self.wait(timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f'ros2 launch still running {timeout:g} s after SIGINT; it printed:\n'
                        + self.output()[-4000:])

    def close(self):
        """Kill whatever is left of this launch's session (only after a failure)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)
        self.log.close()


def assert_clean_exit(code, output, processes):
    """ros2 launch returned 0 and each named process exited 0 without a traceback."""
    assert code == 0, output
    assert 'Traceback' not in output and 'process has died' not in output, output
    for name in processes:
        assert f'[{name}-' in output, output
    assert output.count('process has finished cleanly') == len(processes), output


class Peer:
    """A node in the test process that talks to the launched nodes (own rclpy context)."""

    def __init__(self):
        """Start the context and node on the module's ROS_DOMAIN_ID."""
        import rclpy
        from rclpy.executors import SingleThreadedExecutor
        self.context = rclpy.Context()
        rclpy.init(context=self.context, domain_id=DOMAIN_ID)
        self.node = rclpy.create_node('e2e_peer', context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def collect(self, msg_type, topic, depth=100):
        """Subscribe to ``topic``; return the list its messages are appended to."""
        received = []
        self.node.create_subscription(msg_type, topic, received.append, depth)
        return received

    def spin_until(self, condition, timeout, every=None):
        """Spin until ``condition()``; call ``every()`` at 20 Hz meanwhile; return the result."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if condition():
                return True
            if every is not None:
                every()
            self.executor.spin_once(timeout_sec=0.05)
        return condition()

    def close(self):
        """Destroy the node and shut the context down."""
        import rclpy
        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)


@pytest.fixture
def peer():
    """Return a peer node for one test."""
    require_launch()
    node = Peer()
    yield node
    node.close()


def joint_state(names, q, qd, stamp):
    """Return a JointState message."""
    from sensor_msgs.msg import JointState
    msg = JointState(name=list(names), position=[float(x) for x in q],
                     velocity=[float(x) for x in qd])
    msg.header.stamp.sec, msg.header.stamp.nanosec = stamp, 0
    return msg


def wrench_array(msg):
    """Return [force, torque] of a WrenchStamped as an array."""
    f, t = msg.wrench.force, msg.wrench.torque
    return np.array([f.x, f.y, f.z, t.x, t.y, t.z])


@pytest.mark.parametrize('launch_file', ['rnea.launch.py', 'rnea.launch.xml'])
def test_rnea_launch_answers_joint_states_with_core_efforts_and_wrenches(workspace, peer,
                                                                         launch_file):
    """Efforts and reaction wrenches of the launched node equal the core's; Ctrl-C exits 0."""
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState
    urdf = default_urdf_file()
    model = RobotModel.from_urdf_file(urdf)
    rng = np.random.default_rng(16)
    q = rng.uniform(-1.0, 1.0, model.nq)
    qd = rng.uniform(-1.0, 1.0, model.nv)
    efforts = peer.collect(JointState, '/rnea/joint_efforts')
    wrenches = {name: peer.collect(WrenchStamped, f'/rnea/reaction_wrenches/{topic_token(name)}')
                for name in model.joint_names[:2]}
    publisher = peer.node.create_publisher(JointState, '/joint_states', 10)
    launch = Launch(workspace, launch_file, f'urdf_file:={urdf}')
    try:
        stamp = 7
        answered = peer.spin_until(
            lambda: any(m.header.stamp.sec == stamp for m in efforts) and
            all(any(m.header.stamp.sec == stamp for m in w) for w in wrenches.values()),
            timeout=90.0,
            every=lambda: publisher.publish(joint_state(model.joint_names, q, qd, stamp)))
        assert answered, launch.output()
        code, output = launch.interrupt()
    finally:
        launch.close()
    assert_clean_exit(code, output, ['rnea_node'])
    msg = next(m for m in efforts if m.header.stamp.sec == stamp)
    assert list(msg.name) == list(model.joint_names)
    zero = np.zeros(model.nv)
    np.testing.assert_allclose(msg.effort, inverse_dynamics(model, q, qd, zero), atol=1e-9)
    expected = reaction_wrenches(model, q, qd, zero)
    for index, name in enumerate(wrenches):
        got = next(m for m in wrenches[name] if m.header.stamp.sec == stamp)
        np.testing.assert_allclose(wrench_array(got), expected[index], atol=1e-9)


def test_mujoco_demo_runs_in_lock_step_and_all_three_exit_cleanly(workspace, peer):
    """Simulator, rnea node and reference run a few simulated seconds; Ctrl-C: all exit 0."""
    pytest.importorskip('mujoco', reason='mujoco not installed (the Jazzy leg has no '
                                         'simulator): the MuJoCo demo launch is not run')
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    states = peer.collect(JointState, '/joint_states', depth=10)
    commands = peer.collect(Float64MultiArray, '/effort_controller/commands', depth=10)
    launch = Launch(workspace, 'mujoco_demo.launch.py', 'lock_step:=true')

    def sim_time():
        return states[-1].header.stamp.sec + 1e-9 * states[-1].header.stamp.nanosec \
            if states else 0.0

    try:
        # Commands too: discovery between this peer and the node can take a few seconds (a
        # participant announces itself again every ~3 s when the first announcements are lost).
        assert peer.spin_until(lambda: sim_time() >= 2.0 and len(commands) >= 10,
                               timeout=120.0), launch.output()
        code, output = launch.interrupt()
    finally:
        launch.close()
    assert commands and all(np.all(np.isfinite(m.data)) for m in commands)
    assert_clean_exit(code, output, ['mujoco_sim', 'rnea_node', 'reference_trajectory'])
    assert 'simulator statistics' in output
    # no warning from our own processes (a lock-step wait can time out on a loaded machine)
    warnings = [line for line in output.splitlines()
                if '[WARN]' in line and 'lock-step:' not in line]
    assert not warnings and 'zero stamp' not in output, output


@pytest.mark.parametrize('launch_file', ['gravity_compensation.launch.py',
                                         'gravity_compensation.launch.xml'])
def test_gravity_compensation_refuses_to_start_without_command_joints(workspace, launch_file):
    """No command_joints (argument or params_file): launch fails and starts no node."""
    launch = Launch(workspace, launch_file, f'urdf_file:={shipped_urdf_file()}')
    try:
        code, output = launch.wait(60.0)
    finally:
        launch.close()
    assert code != 0
    assert f'{launch_file} needs command_joints' in output, output     # the file you ran
    assert 'process started' not in output, output


def test_gravity_compensation_starts_disabled_and_ramps_in_when_enabled(workspace, peer):
    """Efforts but no commands until ~/enable; then g(q) in command_joints order, ramped."""
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from std_srvs.srv import SetBool
    model = RobotModel.from_urdf_file(shipped_urdf_file())
    order = ARM6_JOINTS[::-1]          # the controller's order, not the URDF's
    q = np.array([0.3, -0.6, 0.9, 0.2, -0.4, 0.5])
    from rcl_interfaces.msg import Log
    efforts = peer.collect(JointState, '/rnea/joint_efforts')
    commands = peer.collect(Float64MultiArray, '/effort_controller/commands')
    rosout = peer.collect(Log, '/rosout', depth=1000)
    publisher = peer.node.create_publisher(JointState, '/joint_states', 10)
    stamps = iter(range(1, 1 << 30))

    def publish():
        publisher.publish(joint_state(model.joint_names, q, np.zeros(6), next(stamps)))

    launch = Launch(workspace, 'gravity_compensation.launch.py',
                    f'urdf_file:={shipped_urdf_file()}', 'command_joints:=' + ','.join(order))
    try:
        assert peer.spin_until(lambda: len(efforts) >= 20, 90.0, publish), launch.output()
        assert not commands                          # disabled: efforts only
        client = peer.node.create_client(SetBool, '/rnea/enable')
        assert client.wait_for_service(timeout_sec=10.0)
        future = client.call_async(SetBool.Request(data=True))
        assert peer.spin_until(future.done, 10.0, publish) and future.result().success
        assert peer.spin_until(lambda: len(commands) >= 20, 30.0, publish), launch.output()
        code, output = launch.interrupt()
    finally:
        launch.close()
    assert_clean_exit(code, output, ['rnea_node'])
    # Logged: on the console (launch's output) or, as a second witness, on /rosout (once in
    # about ten CI runs the console line did not reach launch's output file).
    logged = output + '\n'.join(m.msg for m in rosout if m.name == 'rnea')
    assert 'command output enabled' in logged and 'command output starts' in logged, output
    g = gravity_torques(model, q)
    expected = g[[list(model.joint_names).index(name) for name in order]]
    scales = [np.dot(m.data, expected) / (expected @ expected) for m in commands]
    assert 0.0 <= scales[0] < scales[-1] <= 1.0 + 1e-9         # ramp from 0 (3 s in the YAML)
    for msg, scale in zip(commands, scales):
        np.testing.assert_allclose(msg.data, scale * expected, atol=1e-9)


# -- issue 23: params_file from the working directory, namespaced robots side by side ---------

@pytest.mark.parametrize('launch_file', ['rnea.launch.py', 'rnea.launch.xml',
                                         'gravity_compensation.launch.py',
                                         'gravity_compensation.launch.xml'])
def test_missing_params_file_stops_the_launch_with_one_line(workspace, launch_file):
    """params_file:=missing.yaml: no node starts, one line names the file and the folder."""
    launch = Launch(workspace, launch_file, f'urdf_file:={shipped_urdf_file()}',
                    'command_joints:=' + ','.join(ARM6_JOINTS), 'params_file:=missing.yaml')
    code, output = launch.wait(60.0)
    assert code != 0, output
    lines = [line for line in output.splitlines()
             if "params_file 'missing.yaml' not found" in line]
    assert len(lines) == 1 and str(workspace[0]) in lines[0], output
    assert 'process started' not in output and 'Traceback' not in output, output


def test_bare_params_file_name_is_read_from_the_working_directory(workspace, peer):
    """params_file:=mine.yaml in the launch's working directory: its gravity is the one used."""
    from sensor_msgs.msg import JointState
    ws = workspace[0]
    (ws / 'mine.yaml').write_text('/**:\n  ros__parameters:\n    gravity: [0.0, 0.0, -1.0]\n'
                                  '    mode: gravity_compensation\n')
    model = RobotModel.from_urdf_file(shipped_urdf_file())
    q = np.array([0.3, -0.6, 0.9, 0.2, -0.4, 0.5])
    efforts = peer.collect(JointState, '/rnea/joint_efforts')
    publisher = peer.node.create_publisher(JointState, '/joint_states', 10)
    launch = Launch(workspace, 'rnea.launch.py', f'urdf_file:={shipped_urdf_file()}',
                    'params_file:=mine.yaml')
    try:
        assert peer.spin_until(lambda: efforts, 90.0, lambda: publisher.publish(
            joint_state(model.joint_names, q, np.zeros(6), 3))), launch.output()
        code, output = launch.interrupt()
    finally:
        launch.close()
    assert_clean_exit(code, output, ['rnea_node'])
    np.testing.assert_allclose(efforts[-1].effort, gravity_torques(model, q, gravity=(0, 0, -1)),
                               atol=1e-9)


ALLOWED_SHARED = {'/clock', '/tf', '/tf_static', '/rosout', '/parameter_events',
                  # ROS 2's diagnostic convention: every node publishes to /diagnostics (the
                  # aggregator listens there); the status names differ (checked below)
                  '/diagnostics'}


def node_interfaces(node, name, namespace):
    """Return the topic and service names a node publishes, subscribes and serves."""
    topics = {topic for topic, _ in node.get_publisher_names_and_types_by_node(name, namespace)}
    subscribed = node.get_subscriber_names_and_types_by_node(name, namespace)
    topics |= {topic for topic, _ in subscribed}
    services = {s for s, _ in node.get_service_names_and_types_by_node(name, namespace)}
    return topics, services


def test_two_namespaced_launches_share_no_topic_service_or_diagnostic_name(workspace, peer):
    """Two gravity-compensation launches, namespace:=left and :=right: nothing shared.

    Same node name (rnea), one from the Python and one from the XML file: disjoint topics and
    services but for the allowed shared ones, each commanding its own controller, and two
    distinct diagnostic status names.
    """
    from diagnostic_msgs.msg import DiagnosticArray
    joints = 'command_joints:=' + ','.join(ARM6_JOINTS)
    urdf = f'urdf_file:={shipped_urdf_file()}'
    diagnostics = peer.collect(DiagnosticArray, '/diagnostics')
    left = Launch(workspace, 'gravity_compensation.launch.py', urdf, joints, 'namespace:=left')
    right = Launch(workspace, 'gravity_compensation.launch.xml', urdf, joints,
                   'namespace:=right')
    nodes = (('rnea', '/left'), ('rnea', '/right'))

    def status_names():
        return {status.name for msg in diagnostics for status in msg.status}

    try:
        def up():
            present = set(peer.node.get_node_names_and_namespaces())
            return all(n in present for n in nodes) and all(
                node_interfaces(peer.node, *n)[1] for n in nodes)
        assert peer.spin_until(up, 90.0), left.output() + right.output()
        peer.spin_until(lambda: len(status_names()) >= 2, 10.0)    # 1 Hz each
        (left_topics, left_services), (right_topics, right_services) = (
            node_interfaces(peer.node, *n) for n in nodes)
        names = status_names()
        code_left, output_left = left.interrupt()
        code_right, output_right = right.interrupt()
    finally:
        left.close()
        right.close()
    assert '/left/effort_controller/commands' in left_topics, left_topics
    assert '/right/effort_controller/commands' in right_topics, right_topics
    assert (left_topics & right_topics) - ALLOWED_SHARED == set(), left_topics & right_topics
    assert left_services and right_services and not left_services & right_services
    assert len(names) == 2, f'diagnostic status names of the two nodes: {names}'
    assert code_left == 0 and code_right == 0, output_left + output_right


def test_lifecycle_node_name_and_log_level_launch_arguments(workspace, peer):
    """lifecycle:=true node_name:=gc log_level:=debug: the managed node, so named, at debug."""
    launch = Launch(workspace, 'rnea.launch.xml', f'urdf_file:={shipped_urdf_file()}',
                    'namespace:=m', 'node_name:=gc', 'lifecycle:=true', 'log_level:=debug')
    try:
        assert peer.spin_until(
            lambda: '/m/gc/get_state' in node_interfaces(peer.node, 'gc', '/m')[1]
            if ('gc', '/m') in peer.node.get_node_names_and_namespaces() else False,
            90.0), launch.output()
        code, output = launch.interrupt()
    finally:
        launch.close()
    assert_clean_exit(code, output, ['rnea_lifecycle_node'])
    assert '[DEBUG]' in output, output
