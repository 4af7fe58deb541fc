"""Every command, module path and file README.md and the manual mention exists, and runs here.

Generic: nothing here lists the documents' commands.  README.md and every page of the manual
(``doc/**/*.md``) are read as a user reads them:

- every shell line of its ``bash``/``sh`` code blocks (continuations and multi-line quotes
  joined, ``&&``/``;``/``|`` chains split, comments dropped) is classified by its program:
  ``rnea-ros`` and the other console scripts of setup.py, ``ros2 run|launch rnea_ros ...``,
  ``python -m MODULE``, ``python path/script.py``, ``make TARGET``, ``ros2 param ... /rnea NAME``;
  the ones that can run here run in their ``--help`` form (argparse programs only: a node is not
  started) and must exit 0; the others are checked: the console script, launch file, module,
  script, make target or parameter must exist, and every ``name:=value`` of a ``ros2 launch``
  must be an argument that launch file declares (read from the tables the launch files
  declare, ``doc/generate.py``: no ``launch`` package needed), every ``-p name:=value`` of a
  node (``ros2 run rnea_ros NODE``, ``python -m MODULE``) a parameter that node declares.
  Programs that are not this project's (colcon, git, apt, ros2 topic, ...) are left alone.
- commands written as inline code in the prose (`` `ros2 launch rnea_ros FILE [x:=1]` ``,
  `` `rnea-ros identify` ``, `` `make doc` ``, ...) are checked the same way (brackets of
  optional parts dropped; a placeholder in capitals, ``NAME``, skips the line).
- every ``rnea_ros.x.y`` dotted path anywhere in the text (prose and code) must import, the
  last parts possibly attributes (``rnea_ros.core.payload.model_with_payload``); every
  ``from rnea_ros... import a, b`` of its ``python`` blocks must work; every ``python`` block
  runs: a self-contained one as written (in the repository), an excerpt with the names the
  text around it assumes (a model, a state, recordings) made when it first reads them.
- every repository path it names (``config/...``, ``launch/...``, ``doc/...``, ...), every
  ``*.launch.py``/``*.launch.xml`` it names and every relative link target must exist.

A failure names the document, line and what is wrong.  Where a program needs an optional
dependency missing here (mujoco, control_msgs, launch), its check is skipped by name.
"""

import ast
import builtins
import glob
import importlib
import importlib.util
import os
import re
import shlex
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
README = os.path.join(ROOT, 'README.md')
DOC = os.path.join(ROOT, 'doc')
SHELL_LANGUAGES = ('bash', 'sh', 'shell', 'console')
# Optional dependencies that may be missing here: a module needing one is skipped by name.
OPTIONAL = ('mujoco', 'control_msgs', 'launch', 'launch_ros', 'pinocchio', 'xacro')
# Folders of the repository a README path can point into.
REPO_FOLDERS = ('config', 'launch', 'urdf', 'benchmarks', 'test', 'doc', 'rnea_ros',
                'resource')


def documents():
    """Return the paths, relative to the repository, of README.md and the manual's pages."""
    pages = sorted(glob.glob(os.path.join(DOC, '**', '*.md'), recursive=True))
    pages = [p for p in pages if '_build' not in os.path.relpath(p, DOC).split(os.sep)]
    return ['README.md'] + [os.path.relpath(p, ROOT) for p in pages]


def readme_lines(document='README.md'):
    """Return a document (README.md by default) as a list of lines."""
    with open(os.path.join(ROOT, document), encoding='utf-8') as stream:
        return stream.read().split('\n')


def code_blocks(document='README.md'):
    """Return (language, first line number, lines) of every fenced code block."""
    blocks, current, indent = [], None, 0
    for number, line in enumerate(readme_lines(document), 1):
        fence = re.match(r'(\s*)```\{?([\w-]*)', line)
        if fence and current is None:
            current, indent = (fence.group(2).lower(), number + 1, []), len(fence.group(1))
        elif fence and re.match(r'\s*```\s*$', line):
            blocks.append(current)
            current = None
        elif current is not None:
            current[2].append(line[indent:] if line[:indent].isspace() else line)
    return blocks


def shell_commands(only=None):
    """Return ('DOCUMENT:LINE', argv) of every command of the documents' shell code blocks."""
    commands = []
    for document in [only] if only else documents():
        for language, first, lines in code_blocks(document):
            if language not in SHELL_LANGUAGES:
                continue
            buffer, start = '', None
            for offset, line in enumerate(lines):
                if start is None:
                    start = first + offset
                buffer += line + '\n'
                if buffer.rstrip().endswith('\\'):
                    buffer = buffer.rstrip()[:-1] + ' '
                    continue
                try:
                    words = shlex.split(buffer, comments=True)
                except ValueError:          # a quote spans lines: read on
                    continue
                commands.extend((f'{document}:{start}', argv) for argv in split_chain(words))
                buffer, start = '', None
            assert not buffer.strip(), f'{document}:{start}: unbalanced quotes in {buffer!r}'
    return commands


INLINE_COMMAND = re.compile(r'`((?:ros2 (?:run|launch|param) rnea_ros|ros2 param \w+ /rnea|'
                            r'rnea-ros \w|python3? -m rnea_ros|make )[^`]*)`')


def inline_commands(only=None):
    """Return ('DOCUMENT:LINE', argv) of the commands written as inline code in the prose.

    (``ros2 launch rnea_ros FILE [name:=value]``: optional parts in brackets count, without
    the brackets; ``...`` is an ellipsis, not a word.)
    """
    commands = []
    for document in [only] if only else documents():
        fence = False
        for number, line in enumerate(readme_lines(document), 1):
            if re.match(r'\s*```', line):
                fence = not fence
            if fence:
                continue
            for match in INLINE_COMMAND.finditer(line):
                text = match.group(1).replace('[', ' ').replace(']', ' ').replace('...', ' ')
                try:
                    words = shlex.split(text)
                except ValueError:
                    continue
                commands.extend((f'{document}:{number}', argv) for argv in split_chain(words)
                                if not any(re.fullmatch(r'[A-Z_]+|…', word)
                                           for word in argv[:5]))   # a placeholder: NAME
    return commands


def split_chain(words):
    """Split shell words at &&, ||, ;, | and drop redirections and env assignments."""
    argv, chains = [], []
    skip = False
    for word in words + ['&&']:
        if skip:
            skip = False
        elif word in ('&&', '||', ';', '|'):
            if argv:
                chains.append(argv)
            argv = []
        elif word in ('>', '>>', '<', '2>', '2>&1'):
            skip = word != '2>&1'
        elif not argv and (re.match(r'\w+=', word) or word in ('sudo', 'exec', 'time')):
            continue
        else:
            argv.append(word)
    return chains


def console_scripts():
    """Return {name: entry point function name} of setup.py's console_scripts."""
    with open(os.path.join(ROOT, 'setup.py'), encoding='utf-8') as stream:
        tree = ast.parse(stream.read())
    scripts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(r'[\w-]+ = rnea_ros\.entry_points:\w+', node.value):
            name, target = node.value.split(' = ')
            scripts[name] = target.split(':')[1]
    return scripts


def entry_point_module(function):
    """Return the module an entry_points function runs (from its source)."""
    from rnea_ros import entry_points
    import inspect
    source = inspect.getsource(getattr(entry_points, function))
    return re.search(r"run\('([\w.]+)'", source).group(1)


def module_source(module):
    """Return the source text of a module (its __main__ for a package), or ''."""
    spec = importlib.util.find_spec(module)
    path = spec.origin if spec else None
    if spec and spec.submodule_search_locations:
        path = os.path.join(list(spec.submodule_search_locations)[0], '__main__.py')
    if not path or not os.path.isfile(path):
        return ''
    with open(path, encoding='utf-8') as stream:
        text = stream.read()
    imported = re.findall(r'from (rnea_ros[\w.]+) import main', text)
    return text + ''.join(module_source(m) for m in imported)


def missing_optional(module):
    """Return the optional dependency that keeps ``module`` from importing here, or None."""
    try:
        importlib.import_module(module)
    except ImportError as error:
        name = (error.name or '').split('.')[0]
        if name in OPTIONAL:
            return name
        raise
    return None


def run_helps(jobs):
    """Run each job's ``argv + ['--help']`` at once; return the problems (job's line, text)."""
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    running = [(line, label, subprocess.Popen(argv + ['--help'], cwd=ROOT, env=env,
                                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                              text=True))
               for line, argv, label in jobs]
    problems = []
    for line, label, process in running:
        try:
            out, err = process.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            process.kill()
            out, err = process.communicate()
        if process.returncode != 0 or 'usage' not in out.lower():
            problems.append(f'{line}: {label}: `--help` exited {process.returncode}: '
                            f'{err.strip()[-500:]}')
    return problems


class Checks:
    """What each kind of command needs; collects (README line, problem) pairs."""

    def __init__(self):
        """Read setup.py's console scripts and the Makefile's targets."""
        self.scripts = console_scripts()
        self.problems = []
        self.skipped = []
        self.helped = set()
        self.help_jobs = []         # (line, argv, label): run together at the end
        with open(os.path.join(ROOT, 'Makefile'), encoding='utf-8') as stream:
            self.make_targets = set(re.findall(r'^([\w.-]+):', stream.read(), re.M))

    def fail(self, line, text):
        """Record a problem (``line`` is 'DOCUMENT:LINE')."""
        self.problems.append(f'{line}: {text}')

    def command(self, line, argv):
        """Check one command."""
        program = os.path.basename(argv[0])
        if program in self.scripts:
            self.console_script(line, program, argv[1:])
        elif re.fullmatch(r'python3?(\.\d+)?', program):
            self.python(line, argv[1:])
        elif program == 'ros2' and len(argv) > 2:
            self.ros2(line, argv)
        elif program == 'make':
            for target in argv[1:]:
                if not target.startswith('-') and target not in self.make_targets:
                    self.fail(line, f'make target {target!r} is not in the Makefile')

    def console_script(self, line, name, args):
        """Check a console script of this package: it imports; argparse ones get --help."""
        module = entry_point_module(self.scripts[name])
        self.module_runs(line, module, [a for a in args[:1] if not a.startswith('-')],
                         f'{name} (module {module})')

    def module_runs(self, line, module, subcommand, label):
        """Check ``module`` imports; run its --help (with ``subcommand``) if it uses argparse."""
        if importlib.util.find_spec(module) is None:
            self.fail(line, f'{label}: no module {module}')
            return
        missing = missing_optional(module)
        if missing:
            self.skipped.append(f'{line}: {label} needs {missing}, missing here')
            return
        if 'argparse' not in module_source(module) or (module, tuple(subcommand)) in self.helped:
            return
        self.helped.add((module, tuple(subcommand)))
        self.help_jobs.append((line, [sys.executable, '-m', module] + subcommand, label))

    def python(self, line, args):
        """Check ``python -m MODULE ...`` or ``python path/script.py ...``."""
        if args[:1] == ['-m'] and len(args) > 1:
            self.module_runs(line, args[1], [], f'python -m {args[1]}')
            executable = NODE_MODULES.get(args[1])
            if executable:
                self.node_parameters(line, executable, args[2:])
        elif args and args[0].endswith('.py'):
            path = os.path.join(ROOT, args[0])
            if not os.path.isfile(path):
                self.fail(line, f'no file {args[0]} in the repository')
            elif 'argparse' in open(path, encoding='utf-8').read() and path not in self.helped:
                self.helped.add(path)
                self.help_jobs.append((line, [sys.executable, path], f'python {args[0]}'))

    def ros2(self, line, argv):
        """ros2 run|launch rnea_ros ..., ros2 param ... /rnea NAME."""
        verb, rest = argv[1], argv[2:]
        if verb == 'run' and rest[0] == 'rnea_ros':
            if len(rest) < 2 or rest[1] not in self.scripts:
                self.fail(line, f'ros2 run rnea_ros: no executable {rest[1:2]} in setup.py')
            else:
                self.node_parameters(line, rest[1], rest[2:])
        elif verb == 'launch' and rest[0] == 'rnea_ros':
            self.launch(line, rest[1], [a for a in rest[2:] if ':=' in a])
        elif verb == 'param' and len(rest) >= 3 and rest[0] in ('get', 'set', 'describe') and \
                rest[1].rstrip('/').endswith('/rnea'):
            from rnea_ros.node import params
            if rest[2] not in params.SPECS:
                self.fail(line, f'ros2 param: the rnea node has no parameter {rest[2]!r}')

    def node_parameters(self, line, executable, args):
        """-p name:=value of a node: a parameter it declares."""
        declared = node_parameter_names().get(executable)
        if declared is None:
            return
        for flag, value in zip(args, args[1:]):
            if flag == '-p' and value.split(':=')[0] not in declared:
                self.fail(line, f'{executable}: no parameter {value.split(":=")[0]!r}')

    def launch(self, line, filename, assignments):
        """Check the launch file exists and declares every name:= given."""
        path = os.path.join(ROOT, 'launch', filename)
        if not os.path.isfile(path):
            self.fail(line, f'no launch file launch/{filename}')
            return
        declared = launch_arguments(path)
        for assignment in assignments:
            name = assignment.split(':=')[0]
            if name not in declared:
                self.fail(line, f'{filename} declares no argument {name!r} '
                                f'(it has {sorted(declared)})')


def generator():
    """Return doc/generate.py as a module (it reads the tables the code declares)."""
    path = os.path.join(DOC, 'generate.py')
    spec = importlib.util.spec_from_file_location('doc_generate', path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def launch_arguments(path):
    """Return the argument names a launch file declares (from its table; no ``launch``).

    test/test_docs.py checks the tables against the launch descriptions where ``launch`` is
    installed.
    """
    return generator().launch_arguments().get(os.path.basename(path), set())


# Node modules a ``python -m`` line may start, by executable name.
NODE_MODULES = {'rnea_ros.node': 'rnea_node', 'rnea_ros.node.rnea_node': 'rnea_node',
                'rnea_ros.node.lifecycle': 'rnea_lifecycle_node',
                'rnea_ros.sim.mujoco_sim': 'mujoco_sim',
                'rnea_ros.sim.reference_trajectory': 'reference_trajectory',
                'rnea_ros.feedforward.node': 'trajectory_feedforward'}


def node_parameter_names():
    """Return {executable: the parameter names it declares} (from the nodes' tables)."""
    make = generator()
    from rnea_ros.node import params
    rnea = {spec.name for spec in params.PARAMETERS}
    from rnea_ros.feedforward import node
    feedforward = set(node.SHARED) | {row[0] for row in make.feedforward_parameters()}
    return {
        'rnea_node': rnea, 'rnea_lifecycle_node': rnea,
        'trajectory_feedforward': feedforward,
        'feedforward_action_proxy': feedforward | {row[0] for row in make.proxy_parameters()},
        'mujoco_sim': {row[0] for row in make.sim_parameters('rnea_ros.sim.mujoco_sim')},
        'reference_trajectory': {
            row[0] for row in make.sim_parameters('rnea_ros.sim.reference_trajectory')},
    }


def test_readme_has_shell_commands_to_check():
    """The extraction finds commands (documents without any would make the checks vacuous)."""
    assert len(shell_commands('README.md')) >= 10
    commands = shell_commands()
    assert len(commands) >= 50
    assert all(argv for _, argv in commands)
    assert {line.split(':')[0] for line, _ in commands} > {'README.md'}


def test_every_documented_shell_command_runs_or_exists():
    checks = Checks()
    for line, argv in shell_commands() + inline_commands():
        checks.command(line, argv)
    checks.problems += run_helps(checks.help_jobs)
    for note in checks.skipped:
        print('skipped:', note)
    assert not checks.problems, '\n'.join(checks.problems)


def test_documented_console_scripts_are_on_the_path_of_the_repositorys_environment():
    """`rnea-ros ...` as the documents write it runs in the environment `make` builds (.venv).

    `make venv` installs the package editable, so its console scripts sit beside the Python
    that runs the tests: each one the documents name is there, and `rnea-ros torques --help`
    runs from a folder outside the repository.  Outside an environment made by `make` (its
    requirements stamp .installed-*; e.g. a colcon workspace's test run) there is nothing to
    check.
    """
    folder = os.path.dirname(sys.executable)
    if not glob.glob(os.path.join(os.path.dirname(folder), '.installed-*')):
        pytest.skip('not the environment `make venv` builds (no .installed-* stamp)')
    named = {os.path.basename(argv[0]) for _, argv in shell_commands()}
    scripts = sorted(named & set(console_scripts()))
    assert 'rnea-ros' in scripts
    for name in scripts:
        path = os.path.join(folder, name)
        assert os.access(path, os.X_OK), f'{name} is not in {folder} (make venv installs it)'
    done = subprocess.run([os.path.join(folder, 'rnea-ros'), 'torques', '--help'],
                          capture_output=True, text=True, timeout=120, cwd='/')
    assert done.returncode == 0 and '--urdf' in done.stdout, done.stderr


def dotted_paths():
    """Return ('DOCUMENT:LINE', path) of every rnea_ros.a.b dotted path in the documents."""
    found = []
    for document in documents():
        for number, line in enumerate(readme_lines(document), 1):
            for match in re.finditer(r'(?<![\w/.])rnea_ros(?:\.[A-Za-z_]\w*)+', line):
                found.append((f'{document}:{number}', match.group(0)))
    return found


def resolve(path):
    """Import the longest module prefix of a dotted path and get the rest as attributes."""
    parts = path.split('.')
    for cut in range(len(parts), 0, -1):
        module = '.'.join(parts[:cut])
        try:
            spec = importlib.util.find_spec(module)
        except ModuleNotFoundError:
            spec = None
        if spec is None:
            continue
        missing = missing_optional(module)
        if missing:
            return f'needs {missing}'
        value = importlib.import_module(module)
        for attribute in parts[cut:]:
            value = getattr(value, attribute, None)
            if value is None:
                what = 'no such module' if cut == 1 else f'{module} has no ' + \
                    '.'.join(parts[cut:])
                raise AttributeError(f'{path}: {what}')
        return None
    raise ImportError(f'{path}: no such module')


def test_every_module_path_the_documents_name_imports():
    problems = []
    for line, path in dotted_paths():
        try:
            resolve(path)
        except (ImportError, AttributeError) as error:
            problems.append(f'{line}: {error}')
    assert not problems, '\n'.join(problems)


def python_blocks():
    """Return ('DOCUMENT:LINE', source) of every python code block of the documents."""
    return [(f'{document}:{first}', '\n'.join(lines)) for document in documents()
            for language, first, lines in code_blocks(document) if language == 'python']


def free_names(tree):
    """Return the names a module reads but neither assigns, imports nor gets as builtins."""
    bound, read = set(dir(builtins)), set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (bound if isinstance(node.ctx, (ast.Store, ast.Del)) else read).add(node.id)
        elif isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split('.')[0])
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
    return read - bound


def test_every_python_block_import_works():
    problems = []
    for line, source in python_blocks():
        document, first = line.rsplit(':', 1)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and (node.module or '').startswith('rnea_ros'):
                for alias in node.names:
                    try:
                        resolve(f'{node.module}.{alias.name}')
                    except (ImportError, AttributeError) as error:
                        problems.append(f'{document}:{int(first) + node.lineno - 1}: {error}')
    assert not problems, '\n'.join(problems)


# Runs an excerpt: the names the text assumes (a model, a state, recordings) are made when the
# excerpt first reads them, from what it has defined by then (its model or MDH table).
EXCERPT_RUNNER = r'''
import sys
import numpy as np

class Assumed(dict):
    """The excerpt's names; a name it reads before defining is made here (or NameError)."""

    def model(self):
        if 'model' not in self:
            from rnea_ros import RobotModel
            self['model'] = RobotModel.from_urdf_file('panda.urdf')
        return self['model']

    def size(self):
        if 'table' in self and 'model' not in self:
            return len(self['table'].joint_names)
        return self.model().nv

    def __missing__(self, name):
        rng = np.random.default_rng(0)
        n, samples = None, 200
        if name == 'model':
            return self.model()
        if name in ('q', 'qd', 'qdd', 'dq', 'd2q', 'd3q', 'd4q', 'tau_measured'):
            n = self.size()
            value = 0.1 * rng.standard_normal(n)
            if name == 'q' and 'model' in self and self['model'].floating_base:
                raise NameError(name)
        elif name in ('Q', 'QD', 'QDD', 'E'):
            value = 0.1 * rng.standard_normal((samples, self.model().nv))
        elif name == 't':
            value = 0.0
        elif name == 'T':
            value = np.arange(samples) * 1e-3
        elif name in ('table', 'load_mdh', 'data_path'):
            from rnea_ros.khalil import data_path, load_mdh
            value = {'table': lambda: load_mdh(data_path('rx90.yaml')),
                     'load_mdh': lambda: load_mdh, 'data_path': lambda: data_path}[name]()
        elif name == 'urdf_xml':
            value = open('ur5.urdf').read()
        elif name == 'held_poses':
            from rnea_ros import gravity_torques, RobotModel
            arm = RobotModel.from_urdf_file('ur5.urdf')
            poses = [0.6 * rng.standard_normal(arm.nq) for _ in range(6)]
            value = [(pose, gravity_torques(arm, pose)) for pose in poses]
        else:
            raise KeyError(name)
        self[name] = value
        return value


names = Assumed(__name__='__main__')
exec(compile(open(sys.argv[1]).read(), 'excerpt', 'exec'), names, names)
'''


def test_every_python_block_runs(tmp_path):
    """Every python block runs: a self-contained one as written, an excerpt with what it assumes.

    An excerpt uses names the text around it defines (``model``, ``q``, recordings ``Q``,
    ``E``, ``held_poses``, ...): they are made when it first reads them (a panda of
    example-robot-data, random states, the RX-90 table), in a folder holding ``panda.urdf`` and
    ``ur5.urdf``.  Needing an optional dependency missing here skips.
    """
    from rnea_ros.sim.urdf_tools import example_robot_data_dir
    robots = example_robot_data_dir()
    for name, path in (('panda.urdf', 'panda_description/urdf/panda.urdf'),
                       ('ur5.urdf', 'ur_description/urdf/ur5_robot.urdf')):
        with open(os.path.join(robots, path), encoding='utf-8') as stream:
            (tmp_path / name).write_text(stream.read())
    (tmp_path / 'runner.py').write_text(EXCERPT_RUNNER)
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get('PYTHONPATH', ''))
    problems, ran = [], 0
    for number, (line, source) in enumerate(python_blocks()):
        try:
            tree = ast.parse(source)
        except SyntaxError as error:
            problems.append(f'{line}: does not compile: {error}')
            continue
        block = tmp_path / f'block{number}.py'
        block.write_text(source)
        command = [sys.executable, str(block)] if not free_names(tree) else \
            [sys.executable, str(tmp_path / 'runner.py'), str(block)]
        done = subprocess.run(command, cwd=tmp_path if free_names(tree) else ROOT, env=env,
                              capture_output=True, text=True, timeout=600)
        ran += 1
        missing = re.search(r"No module named '(\w+)", done.stderr)
        if done.returncode and missing and missing.group(1) in OPTIONAL:
            print(f'skipped: {line} needs {missing.group(1)}, missing here')
        elif done.returncode:
            problems.append(f'{line}: exited {done.returncode}: {done.stderr.strip()[-800:]}')
    assert ran >= 5, 'the documents have fewer python blocks than expected'
    assert not problems, '\n'.join(problems)


def test_every_repository_file_and_link_the_documents_name_exists():
    folders = '|'.join(REPO_FOLDERS)
    problems = []
    for document in documents():
        here = os.path.dirname(os.path.join(ROOT, document))
        for number, line in enumerate(readme_lines(document), 1):
            where = f'{document}:{number}'
            for match in re.finditer(rf'(?<![\w/.$-])((?:{folders})/[\w./*-]*[\w*])', line):
                path = match.group(1)           # may be a glob: test/test_node*.py
                if path.startswith('doc/_build'):
                    continue
                if not glob.glob(os.path.join(ROOT, path)):
                    problems.append(f'{where}: {path} is not in the repository')
            for match in re.finditer(r'(?<![\w/.-])([\w-]+\.launch\.(?:py|xml))', line):
                if not os.path.isfile(os.path.join(ROOT, 'launch', match.group(1))):
                    problems.append(f'{where}: no launch file launch/{match.group(1)}')
            for match in re.finditer(r'\]\(([^)\s#]+)(?:#[\w-]*)?\)', line):
                target = match.group(1)
                if re.match(r'\w+://', target) or target.startswith('mailto:'):
                    continue
                if not os.path.exists(os.path.normpath(os.path.join(here, target))):
                    problems.append(f'{where}: the link target {target} does not exist')
    assert not problems, '\n'.join(problems)


@pytest.mark.parametrize('text, expected', [
    ('make demo   # = .venv/bin/python -m x\n', [['make', 'demo']]),
    ('cd ~/ws && colcon build --x a && source install/setup.bash\n',
     [['cd', '~/ws'], ['colcon', 'build', '--x', 'a'], ['source', 'install/setup.bash']]),
    ('A=1 ros2 launch p f.launch.py \\\n    x:=1 y:=2\n',
     [['ros2', 'launch', 'p', 'f.launch.py', 'x:=1', 'y:=2']]),
    ('ros2 service call /a t "{x: [1,\n  2]}"\n', [['ros2', 'service', 'call', '/a', 't',
                                                   '{x: [1,\n  2]}']]),
    ('python -m m a.yaml > out.urdf\n', [['python', '-m', 'm', 'a.yaml']]),
])
def test_shell_line_extraction(text, expected, monkeypatch):
    """How lines are read: continuations, chains, comments, quotes over lines, redirections."""
    monkeypatch.setattr(sys.modules[__name__], 'readme_lines',
                        lambda document: ['```bash'] + text.rstrip('\n').split('\n') + ['```'])
    assert [argv for _, argv in shell_commands('README.md')] == expected
