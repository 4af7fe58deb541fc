"""Every ``rnea-ros`` subcommand, every option, hostile values: one line, exit 2 (issue 29 item 4).

The cases are generated from the argparse parsers that :func:`rnea_ros.analysis.cli.build_parser`
builds: each subcommand's options and positionals, and for each the hostile values of its type
(:mod:`rnea_ros.analysis.arguments`): a value of the wrong kind, NaN and infinities, zero and -1,
a missing, empty or unreadable file, a folder where a file is due, an output in a folder that
does not exist, an unknown choice, too few values.  An option added tomorrow is covered
without editing this file, and an option whose values are not checked fails the test.

Each case must exit with status 2, print exactly one line on stderr that names the option, no
traceback, and write nothing.  Zero or -1, where the type accepts them, are meaningful for that
option: its help must say so, and the case is skipped (counted).  The rest of the command line
is valid (a real recording of the panda, its URDF), so a value that slipped through would run
the command and be seen.
"""

import argparse
import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from rnea_ros.analysis import arguments, cli
from rnea_ros.core.model import RobotModel
from robots import urdf_path

pytest.importorskip('rosbags', reason='the recordings are rosbag2 (rosbags package)')

PANDA = urdf_path('panda')
DOCUMENTED_ZERO = re.compile(r'\b0( 0 0)?\s*[:=]|>= 0|any sign|\[0,')


@pytest.fixture(scope='module')
def files(tmp_path_factory):
    """Return {role: path} of the valid and hostile inputs, in a folder of their own."""
    from rnea_ros.analysis.recordings import write_joint_states
    folder = tmp_path_factory.mktemp('inputs')
    model = RobotModel.from_urdf_file(PANDA)
    t = np.arange(200) * 0.01
    Q = 0.3 * np.sin(np.outer(t, np.arange(1, model.nq + 1)))
    bag = str(folder / 'bag')
    write_joint_states(bag, t, model.joint_names, Q, np.gradient(Q, t, axis=0),
                       np.zeros_like(Q))
    paths = {'bag': bag, 'missing': str(folder / 'missing' / 'file'),
             'empty': str(folder / 'empty'), 'junk': str(folder / 'junk'),
             'folder': str(folder / 'empty_folder'), 'joint': model.joint_names[0]}
    open(paths['empty'], 'w').close()
    with open(paths['junk'], 'wb') as f:
        f.write(b'\x00\xff not a robot, not a bag \xfe' * 10)
    os.mkdir(paths['folder'])
    return paths


def valid_value(action, files, out):
    """Return a value the action's type accepts (the rest of a hostile command line)."""
    kind = action.type
    if action.choices:
        return str(list(action.choices)[0])
    if isinstance(kind, arguments.Number):
        return next(v for v in ('1', '3', '0.5', '0') if _accepts(kind, v))
    return {arguments.InputFile: PANDA, arguments.Recording: files['bag'],
            arguments.OutputFile: os.path.join(out, 'written.out'),
            arguments.OutputFolder: os.path.join(out, 'written'),
            arguments.Name: files['joint'], arguments.Topic: '/joint_states',
            arguments.JointValue: f"{files['joint']}=0",
            arguments.StateValues: '0', arguments.Scale: '1'}[type(kind)]


def hostile_values(action, files, out):
    """Return [(label, value)] of the values this action must refuse (or accept if documented)."""
    kind, joint = action.type, files['joint']
    if action.choices:
        return [('unknown choice', 'no-such-choice'), ('empty', '')]
    if isinstance(kind, arguments.Number):
        values = [('wrong kind', 'abc'), ('empty', ''), ('nan', 'nan'), ('inf', 'inf'),
                  ('-inf', '-inf'), ('-nan', '-nan'), ('overflow', '1e999'), ('zero', '0'),
                  ('negative', '-1'), ('negative exponent', '-1e-3')]
        return values + ([('fraction', '1.5')] if kind.kind is int else [])
    by_type = {
        arguments.InputFile: [('missing file', files['missing']), ('empty file', files['empty']),
                              ('a folder', files['folder']), ('not a file', files['junk']),
                              ('empty', '')],
        arguments.Recording: [('missing file', files['missing']), ('empty file', files['empty']),
                              ('empty folder', files['folder']), ('not a bag', files['junk']),
                              ('empty', '')],
        arguments.OutputFile: [('missing folder', os.path.join(out, 'no', 'such.out')),
                               ('a folder', out), ('empty', '')],
        arguments.OutputFolder: [('a file', files['junk']),
                                 ('under a file', os.path.join(files['junk'], 'sub')),
                                 ('empty', '')],
        arguments.Name: [('empty', ''), ('blank', ' '), ('two words', 'a b')],
        arguments.Topic: [('empty', ''), ('relative', 'joint_states'), ('blank', '/a b'),
                          ('double slash', '/a//b')],
        arguments.JointValue: [('wrong kind', 'abc'), ('no joint', '=1'),
                               ('not a number', f'{joint}=abc'), ('nan', f'{joint}=nan'),
                               ('inf', f'{joint}=inf')],
        arguments.StateValues: [('wrong kind', 'abc'), ('no joint', '=1'),
                                ('not a number', f'{joint}=abc'), ('nan', f'{joint}=nan'),
                                ('inf', f'{joint}=-inf'), ('overflow', f'{joint}=1e999'),
                                ('zero', '0'), ('negative', '-1')],
        arguments.Scale: [('wrong kind', 'abc'), ('no joint', '=1'), ('zero', '0'),
                          ('not a number', f'{joint}=abc'), ('nan', 'nan'),
                          ('inf', f'{joint}=inf'), ('zero for a joint', f'{joint}=0')],
    }
    return by_type[type(kind)]


def _accepts(kind, value):
    try:
        kind(value)
    except argparse.ArgumentTypeError:
        return False
    return True


def subcommands():
    """Return {name: parser} of the subcommands of ``rnea-ros``."""
    parser = cli.build_parser()
    sub, = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return sub.choices


def value_actions(parser):
    """Return the actions of a parser that take values (positionals and options)."""
    return [a for a in parser._actions
            if a.nargs != 0 and not isinstance(a, argparse._HelpAction)]


def command_line(name, parser, files, out, replace=None, values=None):
    """Return argv: the required arguments valid, ``replace`` given ``values`` instead."""
    argv = [name]
    for action in value_actions(parser):
        if action is not replace and not (action.required or not action.option_strings):
            continue
        count = action.nargs if isinstance(action.nargs, int) else 1
        given = values if action is replace else [valid_value(action, files, out)] * count
        argv += ([action.option_strings[-1]] if action.option_strings else []) + given
    return argv


def cases(files, out):
    """Yield (description, argv, action, hostile value) of every generated case."""
    for name, parser in subcommands().items():
        for action in value_actions(parser):
            label = action.option_strings[-1] if action.option_strings else action.dest
            count = action.nargs if isinstance(action.nargs, int) else 1
            good = valid_value(action, files, out)
            for what, value in hostile_values(action, files, out):
                # the hostile value in each place of a fixed-size list, once
                for place in range(count):
                    values = [good] * count
                    values[place] = value
                    argv = command_line(name, parser, files, out, action, values)
                    yield f'{name} {label} {what} ({value!r})', argv, action, value
            if count > 1:
                argv = command_line(name, parser, files, out, action, [good] * (count - 1))
                yield f'{name} {label} too few values', argv, action, None


def run_main(argv, capsys):
    """Return (exit code, stdout, stderr) of ``rnea-ros argv`` run in this process."""
    try:
        code = cli.main(argv)
    except SystemExit as exc:
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listing(folder):
    return sorted(os.path.join(root, n) for root, dirs, names in os.walk(folder)
                  for n in dirs + names)


def test_every_option_takes_a_checked_type():
    """A new option without a checked type (or choices) would take any value: refused here."""
    unchecked = [f'{name} {a.option_strings or a.dest}'
                 for name, parser in subcommands().items() for a in value_actions(parser)
                 if not (a.choices or arguments.is_checked(a.type))]
    assert not unchecked, unchecked


def test_hostile_values_of_every_option_exit_2_with_one_line(files, tmp_path, capsys,
                                                             monkeypatch, record_property):
    out = str(tmp_path / 'out')
    os.mkdir(out)
    monkeypatch.chdir(out)
    before = listing(tmp_path) + listing(os.path.dirname(files['bag']))
    failures, ran, documented, start = [], 0, [], time.perf_counter()
    for description, argv, action, value in cases(files, out):
        if value in ('0', '-1', '-1e-3') and _accepts(action.type, value):
            documented.append(description)
            if not (DOCUMENTED_ZERO.search(action.help or '')
                    and (value == '0' or 'any sign' in (action.help or ''))):
                failures.append(f'{description}: accepted, but its help does not say what '
                                f'{value} means: {action.help!r}')
            continue
        ran += 1
        code, stdout, stderr = run_main(argv, capsys)
        lines = stderr.strip().splitlines()
        names = list(action.option_strings) + [action.dest, action.dest.replace('_', '-'),
                                               str(action.metavar)]
        problems = []
        if code != 2:
            problems.append(f'exit {code}')
        if len(lines) != 1:
            problems.append(f'{len(lines)} lines on stderr')
        if 'Traceback' in stderr:
            problems.append('a traceback')
        if lines and not any(n.lower() in lines[0].lower() for n in names if n):
            problems.append('the line does not name the option')
        if lines and value is not None and re.search(r'expected \S+ argument', lines[0]):
            problems.append('the value was taken for an option (it never reached its type)')
        now = listing(tmp_path) + listing(os.path.dirname(files['bag']))
        if now != before:
            problems.append(f'wrote {sorted(set(now) - set(before))}')
        if problems:
            failures.append(f"{description}: {', '.join(problems)}: argv {argv}: "
                            f'{stderr.strip()!r}')
    seconds = time.perf_counter() - start
    print(f'{ran} hostile cases refused in {seconds:.1f} s ({1e3 * seconds / max(ran, 1):.0f} ms '
          f'each), {len(documented)} accepted as documented (zero or negative meaningful)')
    record_property('hostile_cases', ran)
    assert ran > 150 and not failures, '\n'.join(failures)


def test_analyze_window_0_exits_2(files, tmp_path, capsys):
    """Issue 29: ``rnea-ros analyze BAG --window 0`` exited 0 (0 meant the default low-pass)."""
    code, stdout, stderr = run_main(['analyze', files['bag'], '--urdf', PANDA, '--window', '0',
                                     '--out', str(tmp_path / 'plots')], capsys)
    assert code == 2 and stdout == '' and not os.path.exists(tmp_path / 'plots')
    assert stderr == ('rnea-ros analyze: error: --window 0: give at least 3 samples; see '
                      'rnea-ros analyze -h\n')


@pytest.mark.parametrize('error', [ValueError('bad value'), OSError(2, 'No such file', 'f'),
                                   OverflowError('overflow'), RecursionError(),
                                   MemoryError(), KeyError('x'), TypeError('bad type'),
                                   IndexError('index'), RuntimeError('odd')])
def test_every_error_of_a_run_is_one_line_and_exit_2(capsys, monkeypatch, error):
    """What a subcommand raises on bad input reaches the terminal as one line, never a trace."""
    def fails(args):
        raise error

    monkeypatch.setattr(cli.analysis, 'run', fails)
    monkeypatch.delenv('RNEA_ROS_TRACEBACK', raising=False)
    code, _, stderr = run_main(['analyze', PANDA, '--urdf', PANDA], capsys)
    assert code == 2 and stderr.startswith('rnea-ros analyze: error: ')
    assert len(stderr.splitlines()) == 1 and 'Traceback' not in stderr


def test_the_rnea_ros_script_prints_one_line_and_no_traceback(files, tmp_path):
    """The console script itself, in processes: what reaches a terminal.

    Refused while parsing (analyze's --window 0) and while running: a non-finite joint value
    (torques), a file that is no bag (identify).  Three processes: each imports the package.
    """
    script = os.path.join(os.path.dirname(sys.executable), 'rnea-ros')
    if not os.path.isfile(script):
        pytest.skip(f'the rnea-ros script is not installed next to {sys.executable}')
    commands = [
        ['analyze', files['bag'], '--urdf', PANDA, '--window', '0'],
        ['torques', '--urdf', PANDA, '--q', f"{files['joint']}=nan"],
        ['identify', files['junk'], '--urdf', PANDA, '--out', 'identified.urdf'],
    ]
    processes = [subprocess.Popen([script] + argv, cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for argv in commands]
    for argv, process in zip(commands, processes):
        stdout, stderr = process.communicate(timeout=120)
        assert process.returncode == 2, (argv, stderr)
        assert len(stderr.strip().splitlines()) == 1 and 'Traceback' not in stderr, stderr
        assert stderr.startswith(f'rnea-ros {argv[0]}: error: '), stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize('size', [20, (1 << 20) - 1])
def test_an_input_file_that_is_not_utf8_is_refused_naming_the_byte(tmp_path, capsys, size):
    """Read in blocks of 1 MiB: a sequence cut by a block boundary is found at its first byte."""
    path = tmp_path / 'robot.urdf'
    path.write_bytes(b' ' * size + b'\xe2\x82x<robot/>')
    code, _, stderr = run_main(['torques', '--urdf', str(path)], capsys)
    assert code == 2 and f'it is not UTF-8 text (byte {size})' in stderr
