"""The manual (doc/): it builds without a warning, and its reference pages are the code's.

- The reference pages ``doc/generate.py`` writes (node parameters, topics, command line,
  launch arguments, API) are rebuilt here and must equal the committed ones; each parameter,
  topic, option and launch argument the code declares is on its page with the text the code
  gives it, so a missing or differently described one fails by name.
- The launch tables the generator reads are what the launch files declare (their source, and
  the launch descriptions themselves where ``launch`` is installed).
- The YAML comments of ``config/*.yaml`` on the rnea node's parameters are the descriptors'
  text (``doc/generate.py`` writes them): each parameter is described once, in its descriptor.
- Every log line of the nodes that begins with fixed text is explained in
  ``doc/troubleshooting.md``.
- ``sphinx-build -W`` (what ``make doc`` runs) ends with 0 warnings (skipped, with the reason,
  where sphinx or myst-parser is not installed).

The shell and Python snippets of the manual are checked by test/test_readme_commands.py.
"""

import ast
import glob
import importlib.util
import os
import re
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, 'doc')


def generator():
    """Return doc/generate.py as a module."""
    path = os.path.join(DOC, 'generate.py')
    spec = importlib.util.spec_from_file_location('doc_generate', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GENERATE = generator()


def page(name):
    """Return the text of a committed reference page."""
    with open(os.path.join(DOC, 'reference', name), encoding='utf-8') as stream:
        return stream.read()


def table_rows(text, section):
    """Return {first cell: cells} of the Markdown table under the heading ``section``.

    ``section`` is a level-2 heading's text, or a whole heading line ('### rnea-ros torques').
    """
    heading = section if section.startswith('#') else '## ' + section
    body = text.split(f'\n{heading}\n', 1)[1]
    body = re.split(r'\n#+ ', body, maxsplit=1)[0]
    rows = {}
    for line in body.split('\n'):
        if line.startswith('| `'):
            cells = [c.strip() for c in re.split(r'(?<!\\)\|', line)[1:-1]]
            rows[cells[0].strip('`')] = cells
    return rows


def test_generated_reference_pages_are_what_the_code_gives():
    problems = GENERATE.topic_problems()
    stale = GENERATE.stale_pages()
    assert not problems and not stale, (
        '\n'.join(problems + [f'{p} is stale' for p in stale]) +
        '\nrun `python doc/generate.py` (and fill doc/topics.yaml) and commit the pages')


@pytest.mark.parametrize('spec', GENERATE.rnea_parameters(), ids=lambda spec: spec.name)
def test_every_rnea_parameter_is_on_its_page_as_its_descriptor_says(spec):
    rows = table_rows(page('node_parameters.md'),
                      'rnea (`rnea_node`, `rnea_lifecycle_node`)')
    assert spec.name in rows, f'{spec.name} is missing from doc/reference/node_parameters.md'
    cells = rows[spec.name]
    assert cells[3].split(' *(')[0] == GENERATE.cell(spec.description), \
        f'{spec.name} is described differently'
    assert cells[2] == GENERATE.code(spec.default), f'{spec.name}: another default'


@pytest.mark.parametrize('node, module', [('mujoco_sim', 'rnea_ros.sim.mujoco_sim'),
                                          ('reference_trajectory',
                                           'rnea_ros.sim.reference_trajectory')])
def test_every_simulation_node_parameter_is_on_its_page(node, module):
    rows = table_rows(page('node_parameters.md'), node)
    for name, default, kind, description in GENERATE.sim_parameters(module):
        assert name in rows, f'{node}: {name} is missing'
        assert rows[name][3] == GENERATE.cell(description), f'{node}: {name} described otherwise'


def test_every_feedforward_parameter_is_on_its_page():
    rows = table_rows(page('node_parameters.md'), 'trajectory_feedforward')
    for name, default, description in GENERATE.feedforward_parameters():
        assert rows[name][2] == GENERATE.cell(description), name
    text = page('node_parameters.md').split('## trajectory_feedforward', 1)[1]
    from rnea_ros.feedforward import node
    for name in node.SHARED:
        assert f'`{name}`' in text.split('\n## ', 1)[0], f'{name} (shared) is not named'


def test_every_topic_and_service_is_on_its_page():
    text = page('topics.md')
    notes = GENERATE.topic_notes()
    for node, found in GENERATE.node_interfaces().items():
        rows = table_rows(text, node)
        for kind, type_, name in found:
            shown = notes[node][name].get('shown', name)
            assert shown in rows, f'{node}: {kind} {name} is missing from topics.md'
            assert rows[shown][1] == f'`{type_}`' and rows[shown][2] == kind, (node, name)


def test_every_command_line_option_is_on_its_page():
    import argparse
    from rnea_ros.analysis import cli
    text = page('cli.md')
    parser = cli.build_parser()
    subparsers = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    assert set(subparsers.choices) >= {'torques', 'analyze', 'observe', 'identify', 'excite'}
    for name, sub in subparsers.choices.items():
        rows = table_rows(text, f'### rnea-ros {name}')
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            option = ', '.join(action.option_strings) or action.dest
            assert option in rows, f'rnea-ros {name} {option} is missing from cli.md'
            if action.help and '%(' not in action.help:
                assert rows[option][2] == GENERATE.cell(action.help), (name, option)


def declared_tables():
    """Return {launch file: the source text of its generate_launch_description}."""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, 'launch', '*.launch.py'))):
        with open(path, encoding='utf-8') as stream:
            tree = ast.parse(stream.read())
        function = next(node for node in tree.body if isinstance(node, ast.FunctionDef) and
                        node.name == 'generate_launch_description')
        found[os.path.basename(path)] = ast.unparse(function)
    return found


def test_the_launch_tables_are_the_ones_the_launch_files_declare():
    """Each Python launch file declares exactly the table the generator reads for it."""
    tables = GENERATE.python_launch_arguments()
    sources = declared_tables()
    assert set(tables) == set(sources), 'a launch file the generator does not know, or gone'
    for filename, (rows, source) in tables.items():
        call = source.replace('launch_helpers.', '').replace('sim_launch.', '')
        assert call in sources[filename], f'{filename} does not declare {source}'


@pytest.mark.parametrize('python_file', ['rnea.launch.py', 'gravity_compensation.launch.py'])
def test_each_xml_launch_file_declares_its_python_twins_arguments(python_file):
    xml_file = python_file.replace('.py', '.xml')
    python_rows = GENERATE.python_launch_arguments()[python_file][0]
    xml_rows = GENERATE.xml_launch_arguments(xml_file)
    assert [row[0] for row in xml_rows] == [row[0] for row in python_rows]
    for (name, default, _), (_, xml_default, _) in zip(python_rows, xml_rows):
        if name != 'params_file':       # the XML file's empty default means the same file
            assert xml_default == default, f'{xml_file}: {name} defaults to {xml_default!r}'


def test_the_launch_descriptions_declare_what_the_reference_says():
    """Where ``launch`` is installed, the loaded descriptions declare the tables' arguments."""
    try:
        import launch
        from launch.actions import DeclareLaunchArgument
        from launch.launch_description_sources import AnyLaunchDescriptionSource
    except ImportError:
        pytest.skip('the launch package is not installed (not on PyPI): the launch files '
                    'were checked against their tables from source only')
    os.environ.setdefault('AMENT_PREFIX_PATH', sys.prefix)
    expected = GENERATE.launch_arguments()
    for filename, names in expected.items():
        path = os.path.join(ROOT, 'launch', filename)
        description = AnyLaunchDescriptionSource(path).get_launch_description(
            launch.LaunchContext())
        declared = {entity.name for entity in description.entities
                    if isinstance(entity, DeclareLaunchArgument)}
        assert declared == names, f'{filename}: declares {sorted(declared)}'


def test_config_yaml_comments_are_the_descriptors():
    stale = GENERATE.stale_configs()
    assert not stale, (f'{stale}: a parameter comment differs from its descriptor; run '
                       '`python doc/generate.py` and commit')


def log_lines():
    """Return (file:line, fixed text) of the nodes' log calls that begin with fixed text."""
    files = sorted(glob.glob(os.path.join(ROOT, 'rnea_ros', 'node', '**', '*.py'),
                             recursive=True) +
                   glob.glob(os.path.join(ROOT, 'rnea_ros', 'feedforward', '*.py')) +
                   [os.path.join(ROOT, 'rnea_ros', 'sim', 'mujoco_sim.py')])
    found = []
    for path in files:
        with open(path, encoding='utf-8') as stream:
            tree = ast.parse(stream.read())
        for call in ast.walk(tree):
            if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and
                    call.func.attr in ('warning', 'warn', 'error', 'fatal') and call.args):
                continue
            first = call.args[0]
            while isinstance(first, ast.BinOp):
                first = first.left
            if isinstance(first, ast.JoinedStr) and first.values and \
                    isinstance(first.values[0], ast.Constant):
                text = first.values[0].value
            elif isinstance(first, ast.Constant) and isinstance(first.value, str):
                text = first.value
            else:
                continue            # a message built elsewhere: its parts are checked there
            if len(text.strip()) >= 8:
                found.append((f'{os.path.relpath(path, ROOT)}:{call.lineno}', text.strip()))
    return found


def test_every_fixed_log_line_of_the_nodes_is_in_troubleshooting():
    with open(os.path.join(DOC, 'troubleshooting.md'), encoding='utf-8') as stream:
        text = ' '.join(stream.read().split())
    lines = log_lines()
    assert len(lines) >= 10
    missing = [f'{where}: {message!r}' for where, message in lines
               if ' '.join(message.split()) not in text]
    assert not missing, 'not explained in doc/troubleshooting.md:\n' + '\n'.join(missing)


def test_the_manual_builds_without_warnings(tmp_path):
    """``make doc``'s build: sphinx-build -W, 0 warnings (pages already checked fresh above)."""
    for module in ('sphinx', 'myst_parser'):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f'{module} is not installed (pip install -r requirements.txt)')
    assert not GENERATE.stale_pages(), 'stale reference pages (see the test above)'
    done = subprocess.run([sys.executable, '-m', 'sphinx', '-W', '--keep-going', '-b', 'html',
                           '-q', '-d', str(tmp_path / 'doctrees'), DOC, str(tmp_path / 'html')],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    warnings = [line for line in done.stderr.splitlines() if 'WARNING' in line or
                'ERROR' in line]
    assert done.returncode == 0 and not warnings, done.stderr[-3000:]
    assert os.path.isfile(tmp_path / 'html' / 'reference' / 'node_parameters.html')
    with open(tmp_path / 'html' / 'reference' / 'api.html', encoding='utf-8') as stream:
        api = stream.read()
    assert 'id="rnea_ros.core.dynamics.inverse_dynamics"' in api, 'autodoc documented nothing'


def test_the_documented_merge_of_identified_parameters_keeps_the_safety_settings(tmp_path):
    """The README's step 3 (and the tutorial's): its python3 -c line merges the two files.

    Run as written on the shipped gravity-compensation file and a file laid out as
    ``rnea-ros identify --params-out`` writes it (``/**: ros__parameters:``): the result keeps
    ``enabled: false`` and the ramp, holds the identified friction, and the node accepts it.
    """
    import shutil
    import yaml
    from rnea_ros.node import params
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as stream:
        line = next(text for text in stream.read().split('\n')
                    if text.startswith('python3 -c "import yaml;'))
    source = line.split('"', 1)[1].rsplit('"', 1)[0]
    shutil.copy(os.path.join(ROOT, 'config', 'gravity_compensation.yaml'), tmp_path / 'my_gc.yaml')
    identified = {'friction_joints': ['joint1', 'joint2'], 'friction_viscous': [0.5, 0.4],
                  'friction_coulomb': [1.0, 0.8], 'effort_offset': [0.01, -0.02],
                  'armature': [0.1, 0.1], 'friction_law': 'tanh', 'coulomb_band': 0.05}
    (tmp_path / 'rnea_identified.yaml').write_text(
        yaml.safe_dump({'/**': {'ros__parameters': identified}}))
    done = subprocess.run([sys.executable, '-c', source], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    merged = yaml.safe_load((tmp_path / 'my_gc.yaml').read_text())['/**']['ros__parameters']
    assert merged['enabled'] is False and merged['ramp_time'] == 3.0
    assert merged['mode'] == 'gravity_compensation'
    assert {name: merged[name] for name in identified} == identified
    config = params.node_config(merged)
    assert config['friction_viscous'] == [0.5, 0.4] and config['enabled'] is False


def test_a_descriptor_described_differently_makes_its_page_and_yaml_comment_stale(monkeypatch):
    """The checks above can fail: change one descriptor's text and both differ."""
    import dataclasses
    from rnea_ros.node import params
    changed = dataclasses.replace(params.SPECS['ramp_time'], description='Something else.')
    table = tuple(changed if spec.name == 'ramp_time' else spec for spec in params.PARAMETERS)
    monkeypatch.setattr(GENERATE, 'rnea_parameters', lambda: table)
    assert 'doc/reference/node_parameters.md' in GENERATE.stale_pages()
    specs = dict(params.SPECS, ramp_time=changed)
    for path, (text, _) in GENERATE.config_texts().items():
        assert GENERATE.yaml_with_descriptions(text, specs) != text, path


def test_yaml_comments_keep_the_files_notes_and_drop_what_follows_a_value():
    from rnea_ros.node import params
    text = ('/**:\n  ros__parameters:\n    # Safety.\n\n    # an old description\n'
            '    # Here: why this file sets it.\n    ramp_time: 3.0    # s, old comment\n'
            '                      # its continuation\n    # max_effort: [30.0]\n')
    new = GENERATE.yaml_with_descriptions(text, params.SPECS)
    assert '    # Safety.\n\n' in new and 'an old description' not in new
    assert '    # Here: why this file sets it.\n    ramp_time: 3.0\n' in new
    assert 'old comment' not in new and 'continuation' not in new
    assert ' '.join(params.SPECS['max_effort'].description.split()) in ' '.join(
        line.lstrip('# ') for line in new.split('\n'))
    assert GENERATE.yaml_with_descriptions(new, params.SPECS) == new


def test_the_readme_is_a_front_page_that_reaches_gravity_compensation_early():
    """Issue 30's targets: at most 250 lines, the gravity-compensation launch by line 80."""
    with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as stream:
        lines = stream.read().split('\n')
    assert len(lines) <= 250
    first = next(number for number, line in enumerate(lines, 1)
                 if line.startswith('ros2 launch rnea_ros gravity_compensation.launch'))
    assert first <= 80, f'the gravity-compensation launch is on line {first}'
    linked = set(re.findall(r'\]\((doc/[\w/]+\.md)\)', '\n'.join(lines)))
    sections = {os.path.relpath(os.path.dirname(p), ROOT)
                for p in glob.glob(os.path.join(DOC, '*', '*.md'))} - {'doc/_build'}
    for folder in ('doc/tutorials', 'doc/concepts', 'doc/reference', 'doc/measured'):
        assert folder in sections and any(p.startswith(folder + '/') for p in linked), folder
