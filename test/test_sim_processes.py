"""The simulator and the reference publisher as processes: SIGINT / SIGTERM give exit code 0.

A terminal's Ctrl-C reaches ``ros2 launch`` and its children, then launch forwards one more
SIGINT, so each process gets two; the second must not interrupt the clean-up either.
"""
import os
import signal
import subprocess
import sys
import time

import pytest
from rnea_ros.entry_points import import_error_line
from rnea_ros.node.launch_helpers import shipped_urdf_file
import ros_domains

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JOINTS = '[joint1,joint2,joint3,joint4,joint5,joint6]'
COMMANDS = {
    'mujoco_sim': ['rnea_ros.sim.mujoco_sim', '-p', f'urdf_file:={shipped_urdf_file()}',
                   '-p', 'real_time_factor:=1.0'],
    'reference_trajectory': ['rnea_ros.sim.reference_trajectory', '-p', f'joints:={JOINTS}',
                             '-p', 'start_positions:=[0.1,0.2,0.3,0.4,0.5,0.6]'],
}
READY = {'mujoco_sim': 'simulating 6 joints', 'reference_trajectory': 'sinusoid reference'}


def start(program, tmp_path):
    """Start ``python -m <module> --ros-args ...`` on a private domain; return (process, log)."""
    module, *parameters = COMMANDS[program]
    log = tmp_path / f'{program}.log'
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONUNBUFFERED='1',
               ROS_DOMAIN_ID=str(ros_domains.pick()))
    with open(log, 'w') as stream:
        process = subprocess.Popen([sys.executable, '-m', module, '--ros-args'] + parameters,
                                   cwd=ROOT, env=env, stdout=stream, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    return process, log


@pytest.mark.parametrize('program', sorted(COMMANDS))
@pytest.mark.parametrize('signals', [(signal.SIGINT, signal.SIGINT), (signal.SIGTERM,)],
                         ids=['sigint-twice', 'sigterm'])
def test_process_stops_on_signal_with_exit_code_0_and_no_traceback(program, signals, tmp_path):
    process, log = start(program, tmp_path)
    try:
        deadline = time.monotonic() + 120.0
        while READY[program] not in log.read_text() and time.monotonic() < deadline:
            assert process.poll() is None, log.read_text()
            time.sleep(0.1)
        assert READY[program] in log.read_text()
        time.sleep(0.5)                              # running: publishing every step / tick
        for number in signals:
            process.send_signal(number)
            time.sleep(0.05)
        code = process.wait(30.0)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)
    output = log.read_text()
    assert code == 0, output
    assert 'Traceback' not in output and 'context is invalid' not in output, output


def test_missing_dependency_is_one_line_with_the_install_hint():
    """An ImportError of mujoco / numba: one line with the program, the module, the fix."""
    line = import_error_line('mujoco_sim', ModuleNotFoundError("No module named 'mujoco'",
                                                               name='mujoco'))
    assert line == ("mujoco_sim: No module named 'mujoco': pip install mujoco (rosdep key "
                    'python3-mujoco-pip)')
    old = ImportError('rnea_ros needs numba >= 0.57 (...), found 0.56.4')
    assert import_error_line('rnea_node', old).startswith('rnea_node: rnea_ros needs numba')
    assert '\n' not in import_error_line('rnea_node', old)


def test_console_script_without_numba_prints_one_line(tmp_path):
    """rnea_node with numba unimportable exits 1 with one line on stderr, no traceback."""
    blocker = tmp_path / 'numba.py'
    blocker.write_text("raise ImportError('numba blocked for this test', name='numba')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path), ROOT]))
    result = subprocess.run([sys.executable, '-c', 'from rnea_ros.entry_points import '
                             'rnea_node; rnea_node()'], cwd=ROOT, env=env, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "rnea_node: numba blocked for this test: pip install 'numba>=0.57' (rosdep key "
        'python3-numba)']
