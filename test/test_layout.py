"""The package's layers: what imports what, and one URDF reader for everyone (issue 13)."""

import os
import subprocess
import sys

import numpy as np
from rnea_ros import gravity_torques, RobotModel
from rnea_ros.core import urdf as core_urdf
from rnea_ros.node import runtime as rnea_node      # the node builds models in node/runtime.py
from robots import urdf_path

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def imported_after(statement):
    """Return the rnea_ros modules and whether mujoco is loaded after ``statement`` runs alone."""
    code = (f'import sys\n{statement}\n'
            "print(' '.join(m for m in sys.modules if m.startswith('rnea_ros')))\n"
            "print('mujoco' in sys.modules)\n")
    out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout.split('\n')
    return out[0].split(), out[1] == 'True'


def test_the_core_imports_no_upper_layer():
    """Importing the library (rnea_ros, rnea_ros.core) loads no node, sim, analysis or khalil."""
    modules, mujoco = imported_after('import rnea_ros, rnea_ros.core.payload')
    assert modules and all(m == 'rnea_ros' or m.startswith('rnea_ros.core') for m in modules), \
        modules
    assert not mujoco


def test_launch_helpers_and_ros2_control_do_not_need_mujoco():
    """gazebo.launch.py's helpers and add_ros2_control run where MuJoCo is not installed."""
    modules, mujoco = imported_after('import rnea_ros.sim.sim_launch, '
                                     'rnea_ros.sim.ros2_control_urdf')
    assert 'rnea_ros.sim.sim_launch' in modules
    assert not mujoco


def test_the_node_reads_and_parses_a_description_once(monkeypatch):
    """load_model with friction and a payload parses the URDF once (it used to parse 3 times)."""
    calls = []
    parse = core_urdf.parse_urdf

    def counting_parse(xml):
        calls.append(len(xml))
        return parse(xml)

    from rnea_ros.node import runtime
    monkeypatch.setattr(runtime, 'parse_urdf', counting_parse)
    monkeypatch.setattr(core_urdf, 'parse_urdf', counting_parse)
    runtime._PARSED[0] = None               # nothing parsed yet in this process
    cfg = {'floating_base': False, 'use_urdf_friction': False, 'friction_joints': [],
           'command_joints': [], 'friction_viscous': [0.5], 'friction_coulomb': [],
           'armature': [0.1], 'payload_link': 'panda_link7', 'payload_mass': 1.5,
           'payload_com': [0.0, 0.0, 0.1], 'payload_inertia': [0.01, 0.01, 0.01, 0, 0, 0]}
    model = rnea_node.load_model('file ' + urdf_path('panda'), urdf_path('panda'), cfg)
    assert len(calls) == 1
    again = rnea_node.load_model('file ' + urdf_path('panda'), urdf_path('panda'),
                                 dict(cfg, payload_mass=2.0))     # a parameter change
    assert len(calls) == 1 and abs(again.total_mass - model.total_mass - 0.5) < 1e-12
    plain = RobotModel.from_urdf_file(urdf_path('panda'))
    q = np.linspace(-1.0, 1.0, plain.nq)
    assert np.all(model.armature == 0.1) and np.all(model.friction_viscous == 0.5)
    assert abs(model.total_mass - plain.total_mass - 1.5) < 1e-12
    assert not np.allclose(gravity_torques(model, q), gravity_torques(plain, q))


def _rnea_imports(path):
    """Return the rnea_ros modules a source file imports (module-level or inside functions)."""
    import ast
    with open(path) as stream:
        tree = ast.parse(stream.read(), path)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
            names += ['{}.{}'.format(node.module, alias.name) for alias in node.names]
    return [name for name in names if name.startswith('rnea_ros')]


def test_nothing_imports_the_demo_and_the_demo_sits_on_top():
    """rnea_ros.demo imports sim, node, analysis and core; no other package imports the demo."""
    package = os.path.join(ROOT, 'rnea_ros')
    demo_imports = set()
    for folder, _, files in os.walk(package):
        for name in files:
            if not name.endswith('.py'):
                continue
            path = os.path.join(folder, name)
            imports = _rnea_imports(path)
            if os.path.relpath(folder, package).split(os.sep)[0] == 'demo':
                demo_imports.update(imports)
                continue
            assert not [m for m in imports if m == 'rnea_ros.demo' or
                        m.startswith('rnea_ros.demo.')], path
    assert any(m.startswith('rnea_ros.sim') for m in demo_imports)
    assert not [m for m in demo_imports if m.startswith('rnea_ros.khalil')]


def test_the_demo_runs_as_a_module_and_under_its_former_name():
    """``python -m rnea_ros.demo --help`` and the alias ``python -m rnea_ros.sim.demo`` work."""
    for module in ('rnea_ros.demo', 'rnea_ros.sim.demo'):
        done = subprocess.run([sys.executable, '-m', module, '--help'], cwd=ROOT,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        assert 'python -m rnea_ros.demo' in done.stdout and '--excitation' in done.stdout


MAX_LINES = 600


def _package_modules():
    """Return the repository-relative paths of every Python module under rnea_ros/."""
    package = os.path.join(ROOT, 'rnea_ros')
    return sorted(os.path.relpath(os.path.join(folder, name), ROOT).replace(os.sep, '/')
                  for folder, _, files in os.walk(package) for name in files
                  if name.endswith('.py'))


def test_every_module_is_at_most_600_lines():
    """A pipeline reads as its stages, a module each: no module under rnea_ros/ is longer."""
    modules = _package_modules()
    lengths = {}
    for path in modules:
        with open(os.path.join(ROOT, path), encoding='utf-8') as stream:
            lengths[path] = sum(1 for _ in stream)
    too_long = {p: n for p, n in lengths.items() if n > MAX_LINES}
    assert len(modules) > 50 and not too_long, too_long


def test_recordings_are_read_and_written_by_one_module():
    """analyze, observe and identify read bags through recordings.py, which alone imports rosbags.

    Issue 28 item 5: one module reads and writes recordings; no other copy of a reader.
    """
    import ast
    readers = []
    for path in _package_modules():
        with open(os.path.join(ROOT, path), encoding='utf-8') as stream:
            tree = ast.parse(stream.read(), path)
        for node in ast.walk(tree):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ''] if isinstance(node, ast.ImportFrom) else [])
            if any(n == 'rosbags' or n.startswith('rosbags.') for n in names):
                readers.append(path)
    assert set(readers) == {'rnea_ros/analysis/recordings.py'}, readers
    # identify reads in its conditioning stage (conditioning.py, imported by identify.py)
    assert 'rnea_ros.analysis.conditioning' in _rnea_imports(
        os.path.join(ROOT, 'rnea_ros', 'analysis', 'identify.py'))
    for reader in ('analyze', 'observe', 'conditioning'):
        imports = _rnea_imports(os.path.join(ROOT, 'rnea_ros', 'analysis', f'{reader}.py'))
        assert 'rnea_ros.analysis.recordings' in imports, reader


def test_payload_estimation_keeps_its_public_api_after_the_split():
    """Every name payload_estimation exported still imports from it, after its split in three.

    Issue 28: the estimator, the load's inertial parameters and the samples are modules of their
    own; each name is the object its new module defines.
    """
    import importlib
    from rnea_ros.core import payload_estimation, payload_inertia, payload_samples
    import rnea_ros
    for name in payload_estimation.__all__:
        value = getattr(payload_estimation, name)
        home = importlib.import_module(value.__module__)
        assert home in (payload_estimation, payload_inertia, payload_samples), name
        assert getattr(home, name) is value
    assert rnea_ros.PayloadEstimator is payload_estimation.PayloadEstimator
    assert rnea_ros.estimate_payload is payload_estimation.estimate_payload
