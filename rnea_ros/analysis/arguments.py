"""Command-line values checked where they are parsed: one line, exit 2, before any work.

Every option of ``rnea-ros`` takes one of the types below as its argparse ``type``, so a value
of the wrong kind, a non-finite number, a number out of its range, a missing, unreadable or
empty input file, or an output path whose folder does not exist is refused while the command
line is parsed: nothing is read, computed or written.  :class:`OneLineParser` prints the refusal
as one line and exits with status 2, without the usage block argparse prints by default::

    rnea-ros identify: error: --prior 0.0: give a positive weight (...); see rnea-ros identify -h

Each type states what it refuses in its message, as ``VALUE: reason``; the parser puts the
option in front.  Zero or a negative number is accepted only where it means something (then the
option's help says what); :func:`is_checked` tells the tests which types these are.
"""

import argparse
import codecs
import math
import os
import re
import sys


class ArgumentRefused(argparse.ArgumentTypeError):
    """A value one of these types refuses; the message is ``VALUE: reason``."""


def _refuse(shown, reason):
    raise ArgumentRefused(f'{shown}: {reason}')


class Number:
    """A finite int or float within bounds.

    ``minimum``/``maximum`` are inclusive, ``above``/``below`` exclusive; ``hint`` replaces the
    default reason for a number out of range.
    """

    def __init__(self, kind=float, minimum=None, maximum=None, above=None, below=None, hint=''):
        """Describe the accepted numbers."""
        self.kind, self.hint = kind, hint
        self.minimum, self.maximum, self.above, self.below = minimum, maximum, above, below
        self.__name__ = 'integer' if kind is int else 'number'

    def range_text(self):
        """Return the accepted range in words (``> 0``, ``in [0, 1)``, ``any finite value``)."""
        low = (f'[{self.minimum:g}' if self.minimum is not None else
               f'({self.above:g}' if self.above is not None else None)
        high = (f'{self.maximum:g}]' if self.maximum is not None else
                f'{self.below:g})' if self.below is not None else None)
        if low and high:
            return f'in {low}, {high}'
        if low:
            return ('>= ' if low[0] == '[' else '> ') + low[1:]
        if high:
            return ('<= ' if high[-1] == ']' else '< ') + high[:-1]
        return 'any finite value'

    def __call__(self, text):
        """Return the number ``text`` names, or raise :class:`ArgumentRefused`."""
        try:
            value = self.kind(str(text).strip())
        except (TypeError, ValueError, OverflowError):
            _refuse(repr(text), 'not a whole number' if self.kind is int else 'not a number')
        if not math.isfinite(value):
            _refuse(value, 'not a finite number')
        if ((self.minimum is not None and value < self.minimum)
                or (self.maximum is not None and value > self.maximum)
                or (self.above is not None and not value > self.above)
                or (self.below is not None and not value < self.below)):
            _refuse(value, self.hint or f'give a {self.__name__} {self.range_text()}')
        return value


FINITE = Number(float)
POSITIVE = Number(float, above=0.0)
NON_NEGATIVE = Number(float, minimum=0.0)
POSITIVE_INT = Number(int, minimum=1)
NON_NEGATIVE_INT = Number(int, minimum=0)
WINDOW = Number(int, minimum=3, hint='give at least 3 samples')
CUTOFF = Number(float, above=0.0, hint='give a positive frequency in Hz')
GAIN = Number(float, above=0.0, maximum=1e6)            # the observer's gains, 1/s
FILTER = Number(float, minimum=0.0, maximum=1e6)        # 0: no filter
BAND = Number(float, minimum=0.0, below=1e6)            # rad/s or m/s
DURATION = Number(float, minimum=0.0, below=3600.0)     # s
FRACTION = Number(float, minimum=0.0, below=1.0)
PRIOR = Number(float, above=0.0, hint='give a positive weight (1 = one weighted equation per '
               'prior scale)')
HARMONICS = Number(int, minimum=2, hint='give at least 2 (the series starts and ends at rest)')


def _shown(path):
    return repr(path) if not path or path != path.strip() or ' ' in path else path


class InputFile:
    """An existing, readable, non-empty file; ``text``: UTF-8 text (a URDF, a parameter YAML)."""

    __name__ = 'file'

    def __init__(self, what='file', text=True):
        """Describe the accepted files: ``what`` they are, in messages."""
        self.what, self.text = what, text

    def __call__(self, text):
        """Return the path, or raise :class:`ArgumentRefused` saying what is wrong with it."""
        cannot = f'cannot read {self.what}'
        if not text:
            _refuse(repr(text), f'give a {self.what}')
        if not os.path.exists(text):
            _refuse(_shown(text), f'{cannot}: no such file')
        if os.path.isdir(text):
            _refuse(_shown(text), f'{cannot}: it is a folder')
        if not os.access(text, os.R_OK):
            _refuse(_shown(text), f'{cannot}: permission denied')
        if os.path.getsize(text) == 0:
            _refuse(_shown(text), f'{cannot}: it is empty')
        if self.text:
            decoder, fed, start = codecs.getincrementaldecoder('utf-8')(), 0, 0
            try:
                with open(text, 'rb') as stream:
                    for block in iter(lambda: stream.read(1 << 20), b''):
                        start = fed - len(decoder.getstate()[0])   # its pending bytes first
                        fed += len(block)
                        decoder.decode(block)
                start = fed - len(decoder.getstate()[0])
                decoder.decode(b'', final=True)
            except UnicodeDecodeError as exc:
                _refuse(_shown(text), f'{cannot}: it is not UTF-8 text (byte '
                        f'{start + exc.start})')
            except OSError as exc:
                _refuse(_shown(text), f'{cannot}: {exc.strerror or exc}')
        return text


class Recording:
    """A rosbag2 recording: a readable folder that is not empty, or a non-empty storage file.

    A storage file is an .mcap or .db3.  The contents are read later, by
    :mod:`rnea_ros.analysis.recordings`, whose errors name the bag.
    """

    __name__ = 'recording'

    def __call__(self, text):
        """Return the path, or raise :class:`ArgumentRefused` saying what is wrong with it."""
        cannot = 'cannot read bag'
        if not text:
            _refuse(repr(text), 'give a rosbag2 folder or storage file')
        if not os.path.exists(text):
            _refuse(_shown(text), f'{cannot}: no such file or folder')
        if not os.access(text, os.R_OK):
            _refuse(_shown(text), f'{cannot}: permission denied')
        if os.path.isdir(text):
            if not os.listdir(text):
                _refuse(_shown(text), f'{cannot}: it is an empty folder')
        elif os.path.getsize(text) == 0:
            _refuse(_shown(text), f'{cannot}: it is an empty file')
        return text


class OutputFile:
    """A file to write: not a folder, in a folder that exists and can be written."""

    __name__ = 'output file'

    def __call__(self, text):
        """Return the path, or raise :class:`ArgumentRefused` saying why it cannot be written."""
        if not text or text.endswith(('/', os.sep)):
            _refuse(_shown(text), 'give a file name to write')
        if os.path.isdir(text):
            _refuse(_shown(text), 'is a folder; give a file name to write')
        folder = os.path.dirname(text) or os.curdir
        if not os.path.isdir(folder):
            _refuse(_shown(text), f'its folder {folder} does not exist')
        if not os.access(folder, os.W_OK | os.X_OK):
            _refuse(_shown(text), f'its folder {folder} cannot be written')
        return text


class OutputFolder:
    """A folder to write into: an existing folder, or one that can be created.

    It can be created when the nearest existing folder on its path can be written and no file
    stands on the path.
    """

    __name__ = 'output folder'

    def __call__(self, text):
        """Return the path, or raise :class:`ArgumentRefused` saying why it cannot be used."""
        if not text:
            _refuse(repr(text), 'give a folder')
        if os.path.exists(text) and not os.path.isdir(text):
            _refuse(_shown(text), 'is a file; give a folder')
        parent = os.path.abspath(text)
        while not os.path.exists(parent):
            parent = os.path.dirname(parent)
        if not os.path.isdir(parent):
            _refuse(_shown(text), f'{parent} on its path is a file, not a folder')
        if not os.access(parent, os.W_OK | os.X_OK):
            _refuse(_shown(text), f'{parent} cannot be written')
        return text


_NAME = re.compile(r'[^\s\x00-\x1f\x7f]+')


class Name:
    """A joint or link name: not empty, no blanks or control characters."""

    __name__ = 'name'

    def __call__(self, text):
        """Return the name, or raise :class:`ArgumentRefused`."""
        if not _NAME.fullmatch(text or ''):
            _refuse(repr(text), 'not a name (empty, or with blanks or control characters)')
        return text


_TOPIC = re.compile(r'/[A-Za-z0-9_~{}/]*[A-Za-z0-9_}]')


class Topic:
    """A topic name as a rosbag2 stores it: absolute (``/joint_states``), ROS name characters."""

    __name__ = 'topic'

    def __call__(self, text):
        """Return the topic, or raise :class:`ArgumentRefused`."""
        if not _TOPIC.fullmatch(text or '') or '//' in text:
            _refuse(repr(text), 'not a topic name of a recording (absolute, e.g. /joint_states)')
        return text


class JointValue:
    """``JOINT=VALUE`` pairs (commas allowed between them): joint names and finite numbers."""

    __name__ = 'JOINT=VALUE'

    def __call__(self, text):
        """Return ``text`` (the caller splits it), or raise :class:`ArgumentRefused`."""
        pieces = (text or '').replace(',', ' ').split()
        if not pieces:
            _refuse(repr(text), 'give joint=value')
        for piece in pieces:
            name, sep, value = piece.partition('=')
            if not sep or not name:
                _refuse(repr(piece), 'give joint=value')
            try:
                number = float(value)
            except ValueError:
                _refuse(repr(piece), f'{value!r} is not a number')
            if not math.isfinite(number):
                _refuse(repr(piece), f'{value} is not a finite number')
        return text


class StateValues:
    """Values of a state: numbers (commas allowed) or ``JOINT=number`` pairs, any sign.

    Only the form is checked here; the count, the joint names and finite values are checked
    against the model (:func:`rnea_ros.analysis.cli.parse_values` and the core's checks), whose
    messages name the joint.
    """

    __name__ = 'values'

    def __call__(self, text):
        """Return ``text``, or raise :class:`ArgumentRefused` naming the piece that is no value."""
        pieces = (text or '').replace(',', ' ').split()
        if not pieces:
            _refuse(repr(text), 'give numbers or JOINT=number pairs')
        for piece in pieces:
            name, sep, value = piece.rpartition('=')
            try:
                float(value)
            except ValueError:
                _refuse(repr(piece), 'not a number or JOINT=number')
            if sep and not name:
                _refuse(repr(piece), 'give JOINT=number')
        return text


class Scale:
    """Factors ``K`` (every joint) or ``JOINT=K`` (commas allowed): finite numbers, not 0."""

    __name__ = '[JOINT=]K'

    def __call__(self, text):
        """Return ``text`` (the caller splits it), or raise :class:`ArgumentRefused`."""
        pieces = (text or '').replace(',', ' ').split()
        if not pieces:
            _refuse(repr(text), 'give K or joint=K')
        for piece in pieces:
            name, sep, value = piece.rpartition('=')
            try:
                number = float(value)
            except ValueError:
                _refuse(repr(piece), f'{value!r} is not a number')
            if sep and not name:
                _refuse(repr(piece), 'give joint=K')
            if not math.isfinite(number) or number == 0.0:
                _refuse(repr(piece), 'the factor must be finite and not 0')
        return text


URDF = InputFile('URDF file')
YAML_FILE = InputFile('parameter file')
RECORDING = Recording()
OUTPUT_FILE = OutputFile()
OUTPUT_FOLDER = OutputFolder()
NAME = Name()
TOPIC = Topic()
JOINT_VALUE = JointValue()
STATE_VALUES = StateValues()
SCALE = Scale()

CHECKED_TYPES = (Number, InputFile, Recording, OutputFile, OutputFolder, Name, Topic, JointValue,
                 StateValues, Scale)


def add_recording(parser):
    """Add what every command reading one recording takes: the bag, ``--urdf``, ``--topic``."""
    parser.add_argument('bag', type=RECORDING,
                        help='rosbag2 folder (mcap or sqlite3) or storage file')
    parser.add_argument('--urdf', required=True, type=URDF, help='URDF file')
    parser.add_argument('--topic', default='/joint_states', type=TOPIC,
                        help='JointState topic')


def add_fixed(parser):
    """Add ``--fixed JOINT=VALUE ...``: where the model joints a recording lacks are held."""
    parser.add_argument('--fixed', nargs='*', metavar='JOINT=VALUE', type=JOINT_VALUE,
                        help='position of model joints the recording lacks (any sign; default '
                        '0)')


def is_checked(value_type):
    """Return whether an argparse ``type`` is one of this module's checked types."""
    return isinstance(value_type, CHECKED_TYPES)


_NEGATIVE_NUMBER = re.compile(r'^-(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^-(inf|infinity|nan)$',
                              re.IGNORECASE)


class _Refused(argparse.ArgumentError):
    """An ArgumentError that reads ``--option VALUE: reason``."""

    def __str__(self):
        """Return the option and the refusal."""
        return f'{self.argument_name} {self.message}'


class OneLineParser(argparse.ArgumentParser):
    """An ArgumentParser whose errors are one line on stderr and exit status 2.

    ``PROG: error: --option VALUE: reason; see PROG -h`` for a value a checked type refused,
    ``PROG: error: --option: reason; ...`` for argparse's own errors (a missing value, an
    unknown option, an invalid choice).  Its subcommand parsers are of the same class.
    """

    def __init__(self, *args, **kwargs):
        """Make an ArgumentParser that also takes ``-1e-3``, ``-inf`` and ``-nan`` as values.

        argparse reads only ``-1`` and ``-0.5`` as negative numbers and anything else that
        starts with '-' as an option: ``--gravity 0 0 -9.81e0`` would be "expected 3 arguments"
        and ``--cutoff -inf`` "expected one argument" instead of what is wrong with the value.
        """
        super().__init__(*args, **kwargs)
        self._negative_number_matcher = _NEGATIVE_NUMBER

    def _get_value(self, action, arg_string):
        try:
            return super()._get_value(action, arg_string)
        except argparse.ArgumentError as err:
            if isinstance(err.__context__, ArgumentRefused):
                raise _Refused(action, str(err.__context__)) from None
            raise

    def error(self, message):
        """Print ``message`` as one line and exit with status 2."""
        match = re.fullmatch(r'argument (\S+): (.*)', message, re.S)
        if match:
            message = f'{match.group(1).split("/")[0]}: {match.group(2)}'
        message = ' '.join(message.split())
        self.exit(2, f'{self.prog}: error: {message}; see {self.prog} -h\n')


def run_command(parser, argv=None):
    """Parse ``argv`` and run ``args.func(args)``; every error is one line and status 2.

    Values are checked while the command line is parsed (the types above: one line, exit 2,
    before anything is read or written).  Bad input found later (a malformed or hostile URDF,
    bag or parameter file, overflowing numbers, an unusable path) is an error message, never a
    traceback: ValueError, RecursionError (deeply nested XML), OverflowError, MemoryError and
    OSError are caught here, at the boundary.  Any other exception is a bug that bad input ran
    into: it is one line too, naming its type (``RNEA_ROS_TRACEBACK=1`` shows the traceback).
    A missing optional package is left to the console script's install hint
    (:mod:`rnea_ros.entry_points`).  Returns the exit status (0 after ``--help``).
    """
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:       # --help (0) or a refused value (2, its line printed)
        return exc.code
    try:
        return args.func(args)
    except RecursionError:
        message = 'the input is nested too deeply to read'
    except (ValueError, OverflowError, MemoryError) as exc:
        message = str(exc) or type(exc).__name__
    except OSError as exc:
        message = f'{exc.filename or ""}: {exc.strerror or exc}'.lstrip(': ')
    except (ImportError, KeyboardInterrupt):
        raise
    except Exception as exc:  # noqa: B902 - the boundary: bad input never gives a traceback
        if os.environ.get('RNEA_ROS_TRACEBACK'):
            raise
        message = (f'unexpected {type(exc).__name__}: {exc} (a bug: please report it with the '
                   'command; RNEA_ROS_TRACEBACK=1 shows where)')
    prog = ' '.join([parser.prog] + ([args.command] if getattr(args, 'command', None) else []))
    print(f'{prog}: error: {" ".join(message.split())}', file=sys.stderr)
    return 2
