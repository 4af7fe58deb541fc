"""The demo: a short lock-step run meets the targets; its analysis functions are correct."""
import json
import os

import numpy as np
import pytest

from rnea_ros.sim import demo_analysis as analysis
from rnea_ros.sim.demo import format_summary, GRAVITY_TARGET, run_demo, TRACKING_TARGET
from rnea_ros.sim.trajectories import ReferenceProfile


@pytest.fixture(scope='module')
def demo(tmp_path_factory):
    """Run the demo in lock-step for 3 s of simulated time per experiment."""
    folder = tmp_path_factory.mktemp('demo')
    return run_demo(str(folder), duration=3.0, lock_step=True, log=lambda *_: None), folder


def revolute(summary, values):
    """Return the values of the revolute joints."""
    return [value for value, kind in zip(values, summary['joint_types'])
            if kind != 'prismatic']


def test_gravity_compensation_drift_below_one_milliradian(demo):
    """The rnea node holds the simulated panda: every joint drifts less than 1 mrad."""
    summary, _ = demo
    gravity = summary['gravity_compensation']
    assert gravity['commands']['simulated_s'] == pytest.approx(3.0)
    assert max(revolute(summary, gravity['max_drift'])) < GRAVITY_TARGET
    assert max(gravity['max_drift']) < 1e-3


def test_zero_torque_contrast_falls(demo):
    """Without the node the same pose is not held: joints move by more than 0.1 rad."""
    summary, _ = demo
    assert max(revolute(summary, summary['zero_torque']['max_deviation'])) > 0.1


def test_computed_torque_tracking_rms_below_one_milliradian(demo):
    """Tracking the sinusoid: RMS error below 1 mrad on every revolute joint."""
    summary, _ = demo
    tracking = summary['computed_torque']
    assert tracking['commands']['simulated_s'] == pytest.approx(3.0)
    assert max(revolute(summary, tracking['rms_error'])) < TRACKING_TARGET
    assert max(summary['reference']['amplitude']) > 0.1


def test_lock_step_answers_every_step(demo):
    """In lock-step every physics step got the command answering its joint state."""
    summary, _ = demo
    for phase in ('gravity_compensation', 'computed_torque'):
        commands = summary[phase]['commands']
        assert commands['lock_step_timeouts'] == 0
        assert commands['steps_with_latest_command'] == 1.0
        assert commands['command_rate_hz'] == pytest.approx(1000.0, rel=0.01)


def test_outputs_written(demo):
    """Plots, summary.json and the printed report exist and agree."""
    summary, folder = demo
    for path in summary['plots'].values():
        assert os.path.getsize(path) > 10000
    with open(os.path.join(folder, 'summary.json')) as stream:
        assert json.load(stream)['computed_torque']['rms_error'] == \
            summary['computed_torque']['rms_error']
    report = format_summary(summary)
    assert 'PASS' in report and 'FAIL' not in report


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
