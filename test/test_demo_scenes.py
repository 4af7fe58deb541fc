"""The demo's push and grasp scenes: definitions, figures from records, messages (no processes).

The figures are checked on records built from MuJoCo ground truth (a real push on the panda)
with estimates that are exact, late, biased or noisy, so that each figure is seen to measure
what it names.
"""
import numpy as np
import pytest

from rnea_ros import gravity_torques, RobotModel
from rnea_ros.demo import report, scene_runs, scenes
from rnea_ros.demo.processes import flatten_message
from rnea_ros.sim.disturbances import Disturbances, Push
from rnea_ros.sim.mujoco_model import build_mujoco_model, joint_addresses, Simulation
from rnea_ros.sim.sim_launch import default_urdf_file, PANDA_POSE
from rnea_ros.sim.urdf_tools import read_urdf, urdf_joints

PANDA = default_urdf_file()
JOINTS = [joint.name for joint in urdf_joints(read_urdf(PANDA))]
ARM = [name for name in JOINTS if 'finger' not in name]


@pytest.fixture(scope='module')
def pushed_record():
    """Return a 0.4 s record of the panda (held by gravity torques) pushed 0.1 s to 0.2 s."""
    scene = scenes.PushScene('panda_link7', force=(0.0, 30.0, 10.0), point=(0.0, 0.0, 0.1),
                             start=0.1, duration=0.1, run_s=0.4)
    model = build_mujoco_model(read_urdf(PANDA))
    sim = Simulation(model, JOINTS)
    sim.set_state([PANDA_POSE[name] for name in JOINTS])
    robot = RobotModel.from_urdf_file(PANDA)
    push = Push(scene.link, scene.force, scene.point, scene.start, scene.duration)
    disturbances = Disturbances(model, joint_addresses(model, JOINTS)[1], push)
    rows = {key: [] for key in ('time', 'position', 'velocity', 'effort', 'external_torque',
                                'external_force', 'external_rotation')}

    def keep():
        rows['time'].append(sim.time)
        rows['position'].append(sim.positions)
        rows['velocity'].append(sim.velocities)
        rows['effort'].append(sim.efforts)
        rows['external_torque'].append(disturbances.external_torque)
        rows['external_force'].append(disturbances.force)
        rows['external_rotation'].append(disturbances.rotation.ravel())
    keep()
    while sim.time < scene.run_s - 1e-9:
        sim.set_command(gravity_torques(robot, sim.positions))
        disturbances.before_step(sim.data, sim.time)
        sim.step()
        keep()
    record = {key: np.array(value) for key, value in rows.items()}
    record['joint_names'] = JOINTS
    return scene, record


def exact_estimate(record, delay=0.0, bias=0.0, events=None):
    """Return an observer estimate equal to the truth, ``delay`` s late plus ``bias``."""
    times = record['time'] + delay
    return {'source': 'test', 'times': times, 'torques': record['external_torque'] + bias,
            'joints': JOINTS, 'events': [0.1 + delay] if events is None else events}


def test_scenes_default_to_the_last_link_and_issue_ranges():
    """Push: 10-50 N mid-run on the last link; grasp: 0.5-3 kg, COM within 10 cm of the link."""
    push, grasp = scenes.default_scenes('panda_link7')
    assert push.link == grasp.link == 'panda_link7'
    assert 10.0 <= push.magnitude <= 50.0
    assert 0.2 * push.run_s < push.start < 0.8 * push.run_s
    assert push.reaction == 'off'                # the estimate is judged while tracking goes on
    short = push.reaction_scene()
    assert short.reaction in ('hold', 'float')   # both keep commanding a lock-step simulator
    assert short.start < short.run_s and short.force == push.force
    assert 0.5 <= grasp.mass <= 3.0 and np.linalg.norm(grasp.com) <= 0.1 + 1e-12
    parameters = push.sim_parameters()
    assert parameters['push_link'] == 'panda_link7' and parameters['push_duration'] > 0
    assert grasp.sim_parameters(appear_s=0.0)['payload_time'] == 0.0


def test_exact_estimate_meets_every_push_target(pushed_record):
    """An estimate equal to the ground truth: no error, detected at once, no false alarm."""
    scene, record = pushed_record
    figures = scenes.push_figures(scene, record, exact_estimate(record), JOINTS)
    assert figures['detection_delay_s'] == pytest.approx(0.0)
    assert figures['false_alarms'] == 0 and figures['quiet_residual_max'] == 0.0
    assert figures['torque']['worst_error_over_bound'] == pytest.approx(0.0, abs=1e-12)
    assert max(figures['torque']['max_applied']) > 1.0
    assert all(scenes.push_verdict(figures).values())


def test_late_biased_and_false_estimates_are_measured(pushed_record):
    """A 30 ms late detection, a 0.5 N m bias, events before and long after the push all show.

    An event within 0.5 s after the push still belongs to it (the observer settles).
    """
    scene, record = pushed_record
    figures = scenes.push_figures(scene, record, exact_estimate(
        record, delay=0.03, bias=0.5, events=[0.05, 0.13, 0.6, 0.71]), JOINTS)
    assert figures['detection_delay_s'] == pytest.approx(0.03)
    assert figures['false_alarms'] == 2 and figures['first_false_alarm_s'] == 0.05
    verdict = scenes.push_verdict(figures)
    assert not verdict['detected_within_20_ms'] and not verdict['no_false_alarm']
    biased = scenes.push_figures(scene, record, exact_estimate(record, bias=0.5), JOINTS)
    np.testing.assert_allclose(biased['torque']['max_error'], 0.5)
    assert not scenes.push_verdict(biased)['torques_within_5_percent']
    missed = scenes.push_figures(scene, record, exact_estimate(record, events=[]), JOINTS)
    assert missed['detection_delay_s'] is None and missed['reaction_motion'] is None


def test_wrench_in_link_frame_matches_applied_and_noise_shows(pushed_record):
    """The ground-truth wrench is the force in link axes with moment p x f; 5 % noise shows."""
    scene, record = pushed_record
    rows = np.flatnonzero(np.any(record['external_force'], axis=1))
    applied = scenes.wrench_in_link(record['external_force'][rows], scene.point,
                                    record['external_rotation'][rows])
    assert np.allclose(np.linalg.norm(applied[:, :3], axis=1), np.linalg.norm(scene.force))
    np.testing.assert_allclose(applied[:, 3:], np.cross(scene.point, applied[:, :3]))
    estimate = exact_estimate(record)
    wrench = np.zeros((len(record['time']), 6))
    wrench[rows] = applied
    estimate.update(wrench_times=record['time'], wrench=wrench)
    exact = scenes.push_figures(scene, record, estimate, JOINTS)['wrench']
    assert exact['within_target'] and exact['force_error_n'] < 1e-9
    estimate['wrench'] = wrench * 1.15
    off = scenes.push_figures(scene, record, estimate, JOINTS)['wrench']
    assert off['force_relative'] == pytest.approx(0.15) and not off['within_target']


def test_offline_observer_on_the_record_meets_the_push_targets(pushed_record):
    """The library observer over the record, with the true model, meets every push target.

    This checks the scene's wiring of the library (joint order, effort sampling 'held', wrench
    frame) against the simulator's ground truth.
    """
    scene, record = pushed_record
    robot = RobotModel.from_urdf_file(PANDA)
    estimate = scenes.observe_offline(record, robot, scene.link, window=(0.0, 0.4))
    figures = scenes.push_figures(scene, record, estimate, list(robot.joint_names), ARM)
    assert figures['detection_delay_s'] <= scenes.DETECTION_TARGET_S, figures
    assert all(scenes.push_verdict(figures).values()), figures


def test_reaction_motion_measures_the_arm_after_detection(pushed_record):
    """Unheld, the pushed arm moves after the detection: the displacement is reported."""
    scene, record = pushed_record
    motion = scenes.push_figures(scene, record, exact_estimate(record), JOINTS)[
        'reaction_motion']
    assert motion['max_displacement'] > 1e-4


def test_grasp_figures_and_verdict():
    """Mass and COM errors against the truth; drift ratios against the no-payload drift."""
    scene = scenes.GraspScene('panda_link7', mass=2.0, com=(0.0, 0.0, 0.1))
    figures = scenes.grasp_figures(
        scene, {'mass': 2.05, 'com': [0.0, 0.003, 0.104], 'source': 'test'},
        {'no_payload': 1e-4, 'payload_unknown': 0.2, 'payload_committed': 1.5e-4})
    assert figures['mass_relative_error'] == pytest.approx(0.025)
    assert figures['com_error_m'] == pytest.approx(0.005)
    assert figures['drift_ratio_committed'] == pytest.approx(1.5)
    assert figures['drift_ratio_unknown'] == pytest.approx(2000.0)
    assert all(scenes.grasp_verdict(figures).values())
    worse = scenes.grasp_figures(scene, {'mass': 2.2, 'com': [0.02, 0.0, 0.1]},
                                 {'no_payload': 1.5e-3, 'payload_committed': 3.1e-3})
    assert figures['drift_ratio_judged'] == pytest.approx(0.15)
    assert worse['drift_ratio_judged'] == pytest.approx(worse['drift_ratio_committed'])
    assert not any(scenes.grasp_verdict(worse).values())


def test_grasp_drift_is_judged_against_a_floor_not_a_lucky_model():
    """A no-payload drift below 1 mrad counts as 1 mrad; the literal ratio is still reported."""
    scene = scenes.GraspScene('panda_link7')
    tiny = {'no_payload': 3e-5, 'payload_committed': 2.9e-4}      # a near-perfect model
    figures = scenes.grasp_figures(scene, None, tiny)
    assert figures['drift_ratio_committed'] == pytest.approx(9.667, rel=1e-3)
    assert figures['drift_ratio_judged'] == pytest.approx(0.29)
    assert scenes.grasp_verdict(figures) == {'drift_back_within_2x': True}
    fell = scenes.grasp_figures(scene, None, dict(tiny, payload_committed=2.5e-3))
    assert scenes.grasp_verdict(fell) == {'drift_back_within_2x': False}   # 2.5 mrad > 2 x 1
    text = report.format_scenes({'grasp': dict(figures, verdict=scenes.grasp_verdict(
        figures))})
    assert '9.67x' in text and '0.29x' in text and 'drift back within 2x met' in text
    assert scenes.grasp_verdict(scenes.grasp_figures(scene, None, {})) == {}


def test_align_takes_the_last_estimate_at_or_before_each_time():
    """Estimates are compared at the record's times; none before the first estimate."""
    values = scenes.align([0.1, 0.2, 0.3], [[1.0], [2.0], [3.0]], [0.05, 0.1, 0.25, 0.4])
    np.testing.assert_array_equal(values[1:, 0], [1.0, 2.0, 3.0])
    assert np.isnan(values[0, 0])


def test_node_messages_become_estimates_and_events():
    """JointState, WrenchStamped and Bool messages flatten; collision onsets are rising edges."""
    from geometry_msgs.msg import WrenchStamped
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Bool
    state = JointState(name=['b', 'a'], effort=[2.0, 1.0])
    state.header.stamp.sec, state.header.stamp.nanosec = 3, 500000000
    flat = flatten_message(state)
    assert flat == {'stamp': 3.5, 'name': ['b', 'a'], 'effort': [2.0, 1.0]}
    wrench = WrenchStamped()
    wrench.wrench.force.y, wrench.wrench.torque.z = 4.0, -1.0
    wrench.header.frame_id = 'tool'
    assert flatten_message(wrench)['wrench'] == [0.0, 4.0, 0.0, 0.0, 0.0, -1.0]
    assert flatten_message(Bool(data=True)) == {'data': True}
    recorded = {'/rnea/external_torques': [flat], '/rnea/external_wrench': [
        dict(flatten_message(wrench), stamp=3.5)]}
    estimate = scene_runs.estimate_from_topics(recorded, ['a', 'b', 'c'])
    np.testing.assert_array_equal(estimate['torques'][0, :2], [1.0, 2.0])
    assert np.isnan(estimate['torques'][0, 2]) and estimate['source'] == 'node'
    onsets = scene_runs.collision_onsets([
        {'stamp': 1.0, 'data': False}, {'stamp': 1.1, 'data': True},
        {'stamp': 1.2, 'data': True}, {'stamp': 1.3, 'data': False},
        {'stamp': 2.0, 'data': True}])
    assert onsets == [1.1, 2.0]
    from diagnostic_msgs.msg import DiagnosticStatus, KeyValue
    events = [flatten_message(DiagnosticStatus(level=level, values=[
        KeyValue(key='event', value=event), KeyValue(key='stamp', value=stamp)]))
        for level, event, stamp in ((b'\x02', 'collision', '5.004'), (b'\x00', 'clear', '5.4'),
                                    (b'\x02', 'collision', '7.25'))]
    assert scene_runs.collision_onsets(events) == [5.004, 7.25]


def test_scene_table_reports_both_models_and_missing_estimates():
    """The printed scenes table shows nominal vs identified and says what is missing."""
    push = {'magnitude_n': 30.0, 'link': 'l7', 'start_s': 5.0, 'duration_s': 0.3,
            'reaction': 'hold', 'source': 'node', 'detection_delay_s': 0.004,
            'false_alarms': 0, 'observed_s': 10.0, 'quiet_residual_max': 1.234,
            'alarm_fraction_without_contact': 0.0,
            'threshold': 2.0,
            'verdict': {'detected_within_20_ms': True, 'no_false_alarm': True}}
    nominal = dict(push, detection_delay_s=None, false_alarms=7,
                   alarm_fraction_without_contact=0.97)
    grasp = scenes.grasp_figures(scenes.GraspScene('l7'), None,
                                 {'no_payload': 1e-4, 'payload_unknown': 0.3})
    grasp['message'] = 'no service'
    reaction = dict(push, reaction='hold', start_s=1.5, reaction_motion={
        'speed_at_detection': 0.6, 'time_to_still_s': 0.041, 'max_displacement': 0.0123})
    text = report.format_scenes({'push_identified': push, 'push_nominal': nominal,
                                 'push_reaction': reaction, 'grasp': grasp})
    assert 'Reaction hold' in text and 'still 41 ms' in text and 'moved 12.3 mrad' in text
    assert '4 ms' in text and 'missed' in text and ' 7 ' in text and '1.23' in text
    assert '97 %' in text
    assert 'no estimate: no service' in text and 'FAIL' not in text


def test_alarm_fraction_counts_raised_time_away_from_contact():
    """Raised from each event to the next clear (or the end), outside the contact window."""
    time = np.arange(0.0, 10.0, 0.01)
    fraction = scenes.alarm_fraction(time, np.array([1.0, 8.0]), np.array([2.0]), (5.0, 6.0))
    assert fraction == pytest.approx(3.0 / 9.0, abs=0.01)
    assert scenes.alarm_fraction(time, np.array([]), np.array([]), (5.0, 6.0)) == 0.0


def test_grasp_estimation_swing_is_wider_and_inside_the_limits():
    """The grasp's estimation motion swings the arm 2.5x wider than the tracking run, in limits."""
    from rnea_ros.sim.sim_launch import DemoScenario, reference_amplitudes
    scenario = DemoScenario()
    grasp = scenes.default_scenes('panda_link7')[1]
    wide = reference_amplitudes(scenario.joints, scenario.pose, grasp.amplitude)
    revolute = np.array([joint.type != 'prismatic' for joint in scenario.joints])
    assert np.all(np.abs(wide[revolute]) > 2.0 * np.abs(scenario.amplitudes[revolute]))
    lower = np.array([joint.lower for joint in scenario.joints])
    upper = np.array([joint.upper for joint in scenario.joints])
    assert np.all(scenario.pose + 2 * wide <= upper) and np.all(scenario.pose + 2 * wide >= lower)


def test_grasp_wrist_swings_out_of_phase_on_the_last_revolute_joints():
    """The estimation motion's wrist frequencies go to joints 5-7 of the panda, not the fingers."""
    from rnea_ros.sim.sim_launch import DemoScenario
    scenario = DemoScenario()
    grasp = scenes.default_scenes('panda_link7')[1]
    frequencies = dict(zip(scenario.joint_names, grasp.frequencies(scenario.joints)))
    wrist = ['panda_joint5', 'panda_joint6', 'panda_joint7']
    assert [frequencies[name] for name in wrist] == list(grasp.wrist_frequencies)
    others = [value for name, value in frequencies.items() if name not in wrist]
    assert others == [grasp.frequency] * (len(JOINTS) - 3)
    assert len(set(grasp.wrist_frequencies) | {grasp.frequency}) == 4


def test_grasp_wrist_out_of_phase_makes_the_com_along_z_observable():
    """Same swing, same effort noise: the out-of-phase wrist shrinks the COM-z sigma by > 1/3.

    Efforts of the panda carrying the scene's payload (RNEA of the model with it, plus noise)
    along the scene's 5 s of motion, estimated by the core estimator on the model without it.
    """
    from rnea_ros import inverse_dynamics
    from rnea_ros.core.payload import model_with_payload, Payload
    from rnea_ros.core.payload_estimation import estimate_payload
    from rnea_ros.sim.sim_launch import DemoScenario, reference_amplitudes
    from rnea_ros.sim.trajectories import sinusoid
    scenario = DemoScenario()
    grasp = scenes.default_scenes('panda_link7')[1]
    xml = open(PANDA).read()
    bare = model_with_payload(xml)
    loaded = model_with_payload(xml, Payload(grasp.link, grasp.mass, grasp.com,
                                             np.diag(grasp.inertia[:3])))
    amplitude = reference_amplitudes(scenario.joints, scenario.pose, grasp.amplitude)
    times = np.arange(0.8, 0.8 + grasp.motion_s, 0.01)

    def com_sigma(frequency, seed=3):
        rng = np.random.default_rng(seed)
        Q, QD, QDD = zip(*[sinusoid(t, scenario.pose, amplitude, frequency) for t in times])
        E = [inverse_dynamics(loaded, q, qd, qdd) + 0.05 * rng.standard_normal(len(q))
             for q, qd, qdd in zip(Q, QD, QDD)]
        estimate = estimate_payload(bare, grasp.link, np.array(Q), np.array(QD), np.array(QDD),
                                    np.array(E), times, com_tolerance=1.0)
        assert estimate.ok and abs(estimate.mass - grasp.mass) < 0.03 * grasp.mass
        return np.asarray(estimate.com_sigma)

    in_phase = com_sigma([grasp.frequency])
    out_of_phase = com_sigma(grasp.frequencies(scenario.joints))
    assert out_of_phase[2] < 2.0 / 3.0 * in_phase[2]
    assert np.max(out_of_phase) < 1.1 * np.max(in_phase)
