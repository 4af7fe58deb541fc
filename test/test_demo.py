"""The demo: a short lock-step run of the identification story meets its targets.

The story runs real processes (simulator, rnea node, reference publisher, ``rnea-ros
identify``) on a MuJoCo robot that differs from the nominal URDF by a seeded perturbation. Its
analysis functions are checked on their own below.
"""
import json
import os

import numpy as np
import pytest

from rnea_ros.analysis.excitation import FourierTrajectory
from rnea_ros.analysis.recordings import read_joint_states
from rnea_ros.demo import analysis
from rnea_ros.demo import report as demo_report
from rnea_ros.demo import scene_runs, scenes
from rnea_ros.demo.processes import DemoMonitor, Phase, ProcessRunner, run_phase
from rnea_ros.demo.runner import run_demo
from rnea_ros.demo.story import record_to_bag
from rnea_ros.sim.sim_launch import DemoScenario
from rnea_ros.sim.trajectories import ReferenceProfile
import ros_domains

EXCITATION_S = 10.0
TRACKING_S = 4.0
GRAVITY_S = 2.0
SHORT_RUN_FACTOR = 10.0     # identified vs nominal, as the full demo


def excitation_file(folder):
    """Write a 10 s Fourier excitation (one period, 5 harmonics) around the demo pose."""
    scenario = DemoScenario()
    joints = scenario.joints
    rng = np.random.default_rng(7)
    a = rng.uniform(-1.0, 1.0, (len(joints), 5))
    b = rng.uniform(-1.0, 1.0, (len(joints), 5))
    a -= a.mean(axis=1, keepdims=True)                      # sum_l a_jl = 0
    b -= np.outer(b @ np.arange(1, 6), np.arange(1, 6)) / 55.0  # sum_l l b_jl = 0
    middle = np.array([0.5 * (j.lower + j.upper) for j in joints])
    half = np.array([0.5 * (j.upper - j.lower) for j in joints])
    trajectory = FourierTrajectory(scenario.joint_names, 0.1, EXCITATION_S, middle, a, b)
    span = np.abs(trajectory.sample(100.0)[1] - middle).max(axis=0)
    speed = np.abs(trajectory.sample(100.0)[2]).max(axis=0)
    scale = np.minimum(0.6 * half / span, 1.2 / speed)
    trajectory = FourierTrajectory(scenario.joint_names, 0.1, EXCITATION_S, middle,
                                   a * scale[:, None], b * scale[:, None])
    path = os.path.join(folder, 'excitation.yaml')
    trajectory.to_yaml(path)
    return path


@pytest.fixture(scope='module')
def demo(tmp_path_factory):
    """Run the story in lock-step: 2 s gravity, 4 s tracking, 10 s excitation."""
    folder = str(tmp_path_factory.mktemp('demo'))
    summary = run_demo(folder, duration=TRACKING_S, gravity_duration=GRAVITY_S,
                       excitation_file=excitation_file(folder), log=lambda *_: None,
                       scenes=False, domain_id=ros_domains.pick())
    return summary, folder


def revolute(summary, values):
    """Return the values of the revolute joints."""
    return [value for value, kind in zip(values, summary['joint_types'])
            if kind != 'prismatic']


def test_nominal_urdf_is_wrong_for_the_real_robot(demo):
    """With the nominal URDF the perturbed arm sags and tracks poorly (the error is real)."""
    summary, _ = demo
    assert summary['nominal']['max_drift_worst_rad'] > 0.05
    assert summary['nominal']['rms_error_worst_rad'] > 5e-3
    assert max(revolute(summary, summary['zero_torque']['max_deviation'])) > 0.1


def test_identified_model_beats_the_nominal_by_the_target(demo):
    """Identified URDF + friction: drift and tracking RMS at least 10x smaller."""
    summary, _ = demo
    factors = summary['verdict']['factors']
    assert factors['gravity_drift'] >= SHORT_RUN_FACTOR, factors
    assert factors['tracking_rms'] >= SHORT_RUN_FACTOR, factors
    assert summary['verdict']['met'] and summary['verdict']['meaningful']


def test_identified_model_predicts_validation_efforts(demo):
    """On the validation run (not used to identify) the effort residual shrinks on each joint."""
    summary, _ = demo
    validation = summary['validation']
    for name, kind in zip(summary['joints'], summary['joint_types']):
        if kind == 'prismatic':
            continue
        assert validation['identified'][name] < 0.3 * validation['nominal'][name], name


def test_lock_step_answers_every_step(demo):
    """In lock-step every physics step got the command answering its joint state."""
    summary, _ = demo
    assert set(summary['runs']) == set(demo_report.CONTROLLED)
    for label, run in summary['runs'].items():
        commands = run['commands']
        assert commands['lock_step_timeouts'] == 0, label
        assert commands['steps_with_latest_command'] == 1.0, label
        assert commands['command_rate_hz'] == pytest.approx(1000.0, rel=0.01), label


def test_every_tracking_command_used_the_reference_point_of_its_own_step(demo):
    """The node (reference_sync) never answers a step with the previous step's reference.

    Each command of the nominal tracking run is recomputed from the recorded state and the
    reference at the step's time: it equals the applied effort (a run is then a pure function
    of its inputs, whatever the machine's load).
    """
    from rnea_ros import inverse_dynamics, RobotModel
    _, folder = demo
    scenario = DemoScenario()
    model = RobotModel.from_urdf_file(scenario.urdf_file)
    profile = scenario.profile()
    record = np.load(os.path.join(folder, 'records', 'nominal_tracking.npz'))
    t, q, qd, effort = record['time'], record['position'], record['velocity'], record['effort']
    worst = 0.0
    for k in range(0, len(t) - 1):
        q_ref, qd_ref, qdd_ref = profile(t[k])
        qdd = qdd_ref + scenario.kp * (q_ref - q[k]) + scenario.kd * (qd_ref - qd[k])
        worst = max(worst, np.abs(inverse_dynamics(model, q[k], qd[k], qdd)
                                  - effort[k + 1]).max())
    assert len(t) > 3000
    assert worst < 1e-6


def test_bags_and_outputs_written(demo):
    """The excitation bag holds the run at 1 kHz; plots, summary.json and the report agree."""
    summary, folder = demo
    t, names, q, qd, effort = read_joint_states(summary['excitation']['bag'])
    assert names == summary['joints'] and effort is not None
    assert len(t) == pytest.approx(1000 * (EXCITATION_S + 1.0), abs=2)
    assert np.ptp(q, axis=0)[:7].min() > 0.2
    for path in summary['plots'].values():
        assert os.path.getsize(path) > 10000
    with open(os.path.join(folder, 'summary.json')) as stream:
        assert json.load(stream)['identified']['rms_error'] == summary['identified']['rms_error']
    report = demo_report.format_summary(summary)
    assert 'PASS' in report and 'FAIL' not in report and 'perturbation' not in report
    assert 'seed 1' in summary['perturbation']['summary']


def test_record_to_bag_pairs_each_state_with_the_effort_applied_from_it(tmp_path):
    """Row k's position/velocity go out with row k+1's effort (the effort acting from k on)."""
    record = {'time': np.arange(5) * 0.001, 'joint_names': ['a', 'b'],
              'position': np.arange(10.0).reshape(5, 2),
              'velocity': -np.arange(10.0).reshape(5, 2),
              'effort': 100 + np.arange(10.0).reshape(5, 2)}
    path = record_to_bag(record, str(tmp_path / 'bag'))
    t, names, q, qd, effort = read_joint_states(path)
    np.testing.assert_allclose(t, record['time'][:4])
    np.testing.assert_allclose(q, record['position'][:4])
    np.testing.assert_allclose(effort, record['effort'][1:])


def _run(rtf, age, timeouts=0, seconds=10.0):
    return {'commands': {'simulated_s': seconds, 'real_time_factor': rtf,
                         'command_age_p99_ms': age, 'lock_step_timeouts': timeouts,
                         'sync_timeouts': 0}}


def test_verdict_flags_free_running_figures_of_a_slow_machine():
    """Free-running: a low real-time factor or old commands make the figures meaningless."""
    base = {'nominal': {'max_drift_worst_rad': 1.0, 'rms_error_worst_rad': 0.02},
            'identified': {'max_drift_worst_rad': 0.001, 'rms_error_worst_rad': 0.001}}
    good = demo_report.verdict(dict(base, lock_step=False, runs={'x': _run(1.0, 1.0)}))
    assert good['meaningful'] and good['met']
    assert good['factors']['gravity_drift'] == pytest.approx(1000.0)
    slow = demo_report.verdict(dict(base, lock_step=False, runs={'x': _run(0.4, 174.0)}))
    assert not slow['meaningful'] and len(slow['reasons']) == 2
    assert 'real-time factor 0.40' in slow['reasons'][0]
    missed = demo_report.verdict(dict(base, lock_step=True, runs={'x': _run(0.1, 1.0, 50)}))
    assert not missed['meaningful'] and 'timed out' in missed['reasons'][0]
    slow_lock_step = demo_report.verdict(dict(base, lock_step=True,
                                              runs={'x': _run(0.1, 9.0, 0)}))
    assert slow_lock_step['meaningful'] and slow_lock_step['met']
    weak = dict(base, identified={'max_drift_worst_rad': 0.5, 'rms_error_worst_rad': 0.001})
    assert not demo_report.verdict(dict(weak, lock_step=True, runs={}))['met']


def test_max_drift_and_tracking_errors():
    """Drift is the largest distance from the first sample; tracking error is ref - actual."""
    positions = np.array([[0.0, 1.0], [0.1, 0.5], [-0.3, 1.0]])
    np.testing.assert_allclose(analysis.max_drift(positions), [0.3, 0.5])
    profile = ReferenceProfile('sinusoid', [0.2, -0.1], amplitude=0.3, frequency=0.5)
    times = np.linspace(0.0, 2.0, 201)
    exact = profile.sample(times)[0]
    errors, rms, worst = analysis.tracking_errors(times, exact, profile)
    assert not np.any(errors) and not np.any(rms) and not np.any(worst)
    errors, rms, worst = analysis.tracking_errors(times, exact + [0.001, -0.002], profile)
    np.testing.assert_allclose(rms, [0.001, 0.002])
    np.testing.assert_allclose(worst, [0.001, 0.002])


def test_command_figures_from_a_record():
    """Rates per simulated second, real-time factor and command ages come from the record."""
    record = {'time': np.arange(0, 1.001, 0.001), 'wall_time': np.arange(0, 2.002, 0.002),
              'command_age': np.r_[np.inf, np.full(900, 0.001), np.full(100, 0.004)],
              'commands_received': 960, 'commands_while_running': 950, 'lock_step_timeouts': 0,
              'overruns': 0}
    figures = analysis.command_figures(record)
    assert figures['command_rate_hz'] == pytest.approx(950.0)
    assert figures['real_time_factor'] == pytest.approx(0.5)
    assert figures['steps_with_latest_command'] == pytest.approx(0.9)
    assert figures['command_age_max_ms'] == pytest.approx(4.0)


def test_diagnostics_figures_ignore_idle_samples():
    """Samples before the node runs (rate 0) or with unparsable values are left out."""
    samples = [{'output_rate_hz': '0.0', 'compute_mean_us': '0.0', 'compute_max_us': '0.0'},
               {'output_rate_hz': '1000.0', 'compute_mean_us': '40.0', 'compute_max_us': '90'},
               {'output_rate_hz': '998.0', 'compute_mean_us': '60.0', 'compute_max_us': 'x'}]
    figures = analysis.diagnostics_figures(samples)
    assert figures['output_rate_hz'] == pytest.approx(999.0)
    assert figures['compute_mean_us'] == pytest.approx(50.0)
    assert figures['compute_max_us'] == pytest.approx(90.0)
    assert analysis.diagnostics_figures([])['compute_mean_us'] is None


def test_format_table_aligns_columns():
    """Each column is as wide as its widest cell."""
    lines = analysis.format_table(['a', 'value'], [['long name', '1.0'], ['b', '22.50']])
    lines = lines.split('\n')
    assert len({len(line) for line in lines}) == 1 and lines[1].startswith('---------')


def test_unit_labels():
    """Prismatic joints are reported in mm, the others in mrad."""
    assert analysis.unit_labels(['revolute', 'prismatic', 'continuous']) == \
        ['mrad', 'mm', 'mrad']


def test_push_scene_with_real_processes_reads_the_node_observer(tmp_path):
    """Simulator, rnea node (observer on) and reference as processes: the push is felt.

    The node runs the simulator's own URDF (no model error), so the node's
    ``~/external_torques``, ``~/external_wrench`` and ``~/collision``, recorded by the demo,
    meet the push targets against the simulator's ground truth.
    """
    folder = str(tmp_path)
    scenario = DemoScenario()
    push = scenes.PushScene('panda_link7', start=1.0, run_s=1.6)
    runner = ProcessRunner(folder, ros_domains.pick())
    monitor = DemoMonitor(int(runner.env['ROS_DOMAIN_ID']))
    phase = Phase('push', 'computed_torque', push.run_s, sim=push.sim_parameters(),
                  rnea=scene_runs.observer_parameters(push, 'off'),
                  reference={'frequency': [push.frequency]}, topics=scene_runs.OBSERVER_TOPICS)
    try:
        record, _ = run_phase(runner, scenario, phase, True, folder, monitor)
    finally:
        runner.stop_all()
        monitor.close()
    joints = scenario.joint_names
    estimate = scene_runs.estimate_from_topics(phase.recorded, joints, record['time'][0])
    assert estimate['source'] == 'node'
    arm = [name for name, joint in zip(joints, scenario.joints) if joint.type != 'prismatic']
    figures = scenes.push_figures(push, record, estimate, joints, arm)
    assert all(scenes.push_verdict(figures).values()), figures
