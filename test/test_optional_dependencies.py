"""A missing optional dependency ends a console script with one line naming how to install it.

Each case runs the console script's function in a fresh interpreter in which one module is made
unimportable (an import hook raises ModuleNotFoundError for it, as when it is not installed),
then checks: a failing exit status, no traceback, one line on stderr naming the package and the pip
command.  Issue 23 item 8: scipy, rosbags, matplotlib and mujoco.
"""
import os
import subprocess
import sys

import numpy as np
import pytest
from rnea_ros.node.launch_helpers import shipped_urdf_file

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARM6 = shipped_urdf_file()

HIDE = """
import sys
class _Hide:
    def find_spec(self, name, path=None, target=None):
        if name == {name!r} or name.startswith({name!r} + '.'):
            raise ModuleNotFoundError(f"No module named '{{name}}'", name=name)
sys.meta_path.insert(0, _Hide())
sys.argv = {argv!r}
from rnea_ros import entry_points
entry_points.{function}()
"""


def run_without(module, function, argv, cwd):
    """Run ``entry_points.<function>()`` with ``argv`` where ``module`` cannot be imported."""
    code = HIDE.format(name=module, argv=argv, function=function)
    env = dict(os.environ, PYTHONPATH=ROOT)
    return subprocess.run([sys.executable, '-c', code], cwd=cwd, env=env, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope='module')
def bag(tmp_path_factory):
    """Return a short rosbag2 recording of arm6 moving, with efforts (written with rosbags)."""
    from rnea_ros import inverse_dynamics, RobotModel
    from rnea_ros.analysis.recordings import write_joint_states
    model = RobotModel.from_urdf_file(ARM6)
    t = np.arange(400) * 0.005
    w = 1.0 + 0.3 * np.arange(model.nv)
    Q, QD, QDD = np.sin(np.outer(t, w)), np.cos(np.outer(t, w)) * w, -np.sin(np.outer(t, w)) * w**2
    E = np.array([inverse_dynamics(model, q, qd, qdd) for q, qd, qdd in zip(Q, QD, QDD)])
    path = tmp_path_factory.mktemp('bags') / 'arm6'
    write_joint_states(str(path), t, model.joint_names, Q, QD, E)
    return str(path)


CASES = {
    'scipy-excite': ('scipy', 'rnea_ros_cli',
                     ['rnea-ros', 'excite', '--urdf', ARM6, '--duration', '2', '--out', 'x.yaml'],
                     'pip install scipy'),
    'scipy-identify': ('scipy', 'rnea_ros_cli',
                       ['rnea-ros', 'identify', '{bag}', '--urdf', ARM6, '--out', 'id.urdf'],
                       'pip install scipy'),
    'rosbags-analyze': ('rosbags', 'rnea_ros_cli',
                        ['rnea-ros', 'analyze', '{bag}', '--urdf', ARM6],
                        'pip install rosbags'),
    'rosbags-identify': ('rosbags', 'rnea_ros_cli',
                         ['rnea-ros', 'identify', '{bag}', '--urdf', ARM6, '--out', 'id.urdf'],
                         'pip install rosbags'),
    'matplotlib-analyze': ('matplotlib', 'rnea_ros_cli',
                           ['rnea-ros', 'analyze', '{bag}', '--urdf', ARM6, '--out', 'plots'],
                           'pip install matplotlib'),
    'mujoco-sim': ('mujoco', 'mujoco_sim', ['mujoco_sim'], 'pip install mujoco'),
}


@pytest.mark.parametrize('case', sorted(CASES))
def test_missing_optional_dependency_is_one_line_with_the_install_hint(case, bag, tmp_path):
    module, function, argv, hint = CASES[case]
    argv = [arg.replace('{bag}', bag) for arg in argv]
    result = run_without(module, function, argv, tmp_path)
    assert 'Traceback' not in result.stderr, result.stderr
    lines = result.stderr.strip().splitlines()
    assert result.returncode != 0, result.stderr
    assert len(lines) == 1 and module in lines[0] and hint in lines[0], result.stderr
    assert not (tmp_path / 'id.urdf').exists() and not (tmp_path / 'x.yaml').exists()


def test_identify_and_analyze_dependencies_are_declared():
    """setup.py's extras name scipy and rosbags for identify and analyze; package.xml scipy."""
    import ast
    with open(os.path.join(ROOT, 'setup.py'), encoding='utf-8') as stream:
        tree = ast.parse(stream.read())
    setup_call = [node for node in ast.walk(tree) if isinstance(node, ast.Call) and
                  getattr(node.func, 'id', '') == 'setup'][0]
    keywords = {k.arg: ast.literal_eval(k.value) for k in setup_call.keywords
                if k.arg in ('extras_require', 'install_requires')}
    for extra in ('identify', 'analyze'):
        assert {'scipy', 'rosbags'} <= set(keywords['extras_require'][extra])
    assert 'mujoco' in keywords['extras_require']['sim']
    with open(os.path.join(ROOT, 'package.xml'), encoding='utf-8') as stream:
        assert '<exec_depend>python3-scipy</exec_depend>' in stream.read()


def test_action_proxy_without_control_msgs_is_one_line(tmp_path):
    """control_msgs is not on PyPI: the proxy program names the ROS package instead."""
    result = run_without('control_msgs', 'feedforward_action_proxy',
                         ['feedforward_action_proxy'], tmp_path)
    assert result.returncode == 1 and 'Traceback' not in result.stderr, result.stderr
    line, = result.stderr.strip().splitlines()
    assert 'control_msgs' in line and 'ros-$ROS_DISTRO-control-msgs' in line
