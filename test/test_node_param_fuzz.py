"""Issue 29: no parameter value, of any ROS type, can stop a node or change its outputs.

Generated, not listed: each node (rnea, its lifecycle variant, trajectory feed-forward, MuJoCo
simulator) runs in-process; the test reads its declared parameters and their descriptors through
its own ``list_parameters`` / ``describe_parameters`` / ``get_parameters`` services, so a
parameter added tomorrow is covered without editing this file.  For every parameter it sends,
through ``set_parameters``, ``set_parameters_atomically`` and every other
SetParametersAtomically service the node advertises (the rnea node's ``~/set_payload``):

- a value of every ROS parameter type, and a delete request (type NOT_SET);
- boundary and non-finite values (the descriptor's range and just outside it, NaN, +-Inf,
  +-1e308, the smallest subnormal), empty arrays, arrays one shorter and one longer than the
  current value, a huge array, empty and duplicate names, a 10 kB string;
- values drawn by hypothesis from the whole ParameterValue space.

After each request: the node is alive (no exception left its executor), it answers the same
probe input with the same output as before (rnea: the efforts for one joint state;
feed-forward: the efforts filled into one trajectory; simulator: the efforts it applies for
one command), and a refusal carries a reason naming the parameter (and the expected type when
the ROS type is wrong) and leaves the parameter described with its own type (rclpy writes the
requested type into a dynamically typed parameter's descriptor before the node can refuse).
A value the node accepts is then set back and the output compared.
A value of another ROS type may be accepted only as a YAML-typed value of its own kind (an
integer for a double, integers for a double array, an empty array of any type for an array, a
YAML boolean word for a string that has it as a choice) and must then be stored in the
declared type.  The counts of cases per node are printed (``-s``) and kept in ``COUNTS``.

Start-up: a parameter of a wrong type given as an override makes every node's constructor
raise one exception naming it (what ``main`` turns into one line and exit 2), and the
``python -m`` entry points exit 2 with one line and no traceback for a parameter file with a
wrong-typed value.
"""

import math
import os
import subprocess
import sys
import time

from hypothesis import given, HealthCheck, settings
from hypothesis import strategies as st
from node_fuzz_harness import (_flat, ARRAY_TYPES, PANDA, plain, T, Target, value_msg)
import pytest
from rcl_interfaces.msg import Parameter as ParameterMsg
from rcl_interfaces.srv import SetParameters, SetParametersAtomically
import rclpy
from rclpy.parameter import Parameter
import ros_domains

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOMAIN_ID = ros_domains.pick()
COUNTS = {}         # node -> {'cases': n, 'killed': k, 'failures': f} (printed)
TYPE_WORDS = {T.PARAMETER_BOOL: 'bool', T.PARAMETER_INTEGER: 'integer',
              T.PARAMETER_DOUBLE: 'double', T.PARAMETER_STRING: 'string',
              T.PARAMETER_BYTE_ARRAY: 'byte array', T.PARAMETER_BOOL_ARRAY: 'bool array',
              T.PARAMETER_INTEGER_ARRAY: 'integer array',
              T.PARAMETER_DOUBLE_ARRAY: 'double array',
              T.PARAMETER_STRING_ARRAY: 'string array'}
BIG = 2 ** 63 - 1
# One or two values of every ROS type, the same for every parameter (the wrong types).
TYPE_VALUES = {
    T.PARAMETER_NOT_SET: [None],
    T.PARAMETER_BOOL: [True],
    T.PARAMETER_INTEGER: [BIG],
    T.PARAMETER_DOUBLE: [math.nan],
    T.PARAMETER_STRING: ['heavy'],
    T.PARAMETER_BYTE_ARRAY: [[b'\x00', b'\xff']],
    T.PARAMETER_BOOL_ARRAY: [[], [True, False]],   # []: what `ros2 param set p "[]"` sends
    T.PARAMETER_INTEGER_ARRAY: [[1, -BIG]],
    T.PARAMETER_DOUBLE_ARRAY: [[math.inf, 0.0]],
    T.PARAMETER_STRING_ARRAY: [['', 'a', 'a']],
}
NONFINITE = [math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0]

pytestmark = pytest.mark.skipif(not os.path.isfile(PANDA), reason='example-robot-data missing')


def same(a, b):
    """Compare two plain parameter values, NaN equal to NaN."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return type(a) is type(b) and a == b


def yaml_typed(declared, given, value, choices):
    """Return whether a value of ROS type ``given`` is a YAML-typed value of ``declared``.

    The documented conversions (doc/reference/robustness.md): an integer for a double,
    integers for a double array, an empty array of any type for an array, a boolean word
    for a string parameter whose choices hold it.
    """
    if declared == T.PARAMETER_DOUBLE and given == T.PARAMETER_INTEGER:
        return True
    if declared == T.PARAMETER_DOUBLE_ARRAY and given == T.PARAMETER_INTEGER_ARRAY:
        return True
    if declared in ARRAY_TYPES and given in ARRAY_TYPES and len(value) == 0:
        return True
    return declared == T.PARAMETER_STRING and given == T.PARAMETER_BOOL and \
        ('on' if value else 'off') in choices


def _choices(descriptor):
    """Return the choices a descriptor's additional_constraints list ('one of: a, b; ...')."""
    text = descriptor.additional_constraints
    if 'one of: ' not in text:
        return ()
    return tuple(text.split('one of: ', 1)[1].split(';', 1)[0].split(', '))


def _is_probe_same(target):
    answer = target.probe.ask()
    return answer is not None and _flat(answer) == _flat(target.baseline)


class Fuzzer:
    """Send cases to one node and check each outcome (see the module docstring)."""

    def __init__(self, target):
        """Read the node's parameters and descriptors."""
        self.target = target
        self.declared = target.parameters()
        self.cases = 0
        self.failures = []

    def paths(self):
        """Return the service clients that set parameters (set_parameters and the atomic ones)."""
        return [name for name in self.target.clients
                if name not in ('list', 'describe', 'get')]

    def request(self, path, name, value):
        """Send one parameter through ``path``; return its SetParametersResult or None."""
        msg = ParameterMsg(name=name, value=value)
        if path == 'set_parameters':
            response = self.target.call(path, SetParameters.Request(parameters=[msg]))
            return None if response is None else response.results[0]
        response = self.target.call(path, SetParametersAtomically.Request(parameters=[msg]))
        return None if response is None else response.result

    def fail(self, name, value, path, what):
        """Record a failure (all are reported at the end)."""
        self.failures.append(f'{self.target.kind} {path} {name} = {plain(value)!r:.60}: '
                             f'{what:.200}')

    def check(self, name, value, path):
        """Send one case and check everything the module docstring lists."""
        self.cases += 1
        target = self.target
        descriptor, original = self.declared[name]
        declared = original.type or descriptor.type     # a value, or a type only
        killed = target.killed
        result = self.request(path, name, value)
        if target.killed > killed:
            self.fail(name, value, path, f'killed the node: {target.died}')
            return
        if result is None:
            self.fail(name, value, path, 'no answer')
            return
        given, given_value = plain(value)
        choices = _choices(descriptor)
        if result.successful:
            converted = given == declared or yaml_typed(declared, given, given_value, choices)
            now = target.value(name)
            if path == 'set_parameters' or path == 'set_parameters_atomically':
                if not converted:
                    self.fail(name, value, path, 'a value of a wrong type was accepted')
                elif now is None or now.type != declared:
                    self.fail(name, value, path, f'stored as type {now and now.type}')
            restore = target.restore(name, original)
            if isinstance(restore, str) or not restore.successful:
                self.fail(name, value, path, f'cannot set it back: {restore}')
        else:
            reason = result.reason
            if not reason or name not in reason:
                self.fail(name, value, path, f'refused without naming it: {reason!r}')
            wrong = given != declared and not yaml_typed(declared, given, given_value, choices)
            if wrong and not descriptor.read_only and path != 'set_payload' and \
                    given != T.PARAMETER_NOT_SET and TYPE_WORDS.get(declared, '?') not in reason:
                self.fail(name, value, path, f'reason does not name the type: {reason!r}')
            now = target.value(name)
            if now is None or plain(now)[0] != original.type or \
                    not same(plain(now)[1], plain(original)[1]):
                self.fail(name, value, path, f'refused but changed to {now}')
            described = target.node.describe_parameter(name).type
            if original.type and described != original.type:
                self.fail(name, value, path, f'refused but described as type {described} now')
        if target.killed > killed:
            self.fail(name, value, path, f'killed the node: {target.died}')
        elif not _is_probe_same(target):
            self.fail(name, value, path, 'the output changed')

    def run_grid(self):
        """Every parameter x every type x every path; boundaries via the two standard ones."""
        paths = self.paths()
        for name, (descriptor, original) in sorted(self.declared.items()):
            for kind, values in TYPE_VALUES.items():
                for value in values:
                    for path in paths:
                        self.check(name, value_msg(kind, value), path)
            for value in boundaries(descriptor, original):
                for path in ('set_parameters', 'set_parameters_atomically'):
                    self.check(name, value, path)


def boundaries(descriptor, original):
    """Return boundary values of a parameter's own type (from its descriptor and value)."""
    kind, value = plain(original)
    out = []
    if kind == T.PARAMETER_DOUBLE:
        out += NONFINITE
        for r in descriptor.floating_point_range:
            low, high = r.from_value, r.to_value
            out += [low, high, math.nextafter(low, -math.inf), math.nextafter(high, math.inf)]
    elif kind == T.PARAMETER_INTEGER:
        out += [0, -1, 1, BIG, -BIG - 1]
    elif kind == T.PARAMETER_STRING:
        out += ['', ' ', 'a/b', '~/x', '/' + 'a' * 300, 'x' * 10000, 'ü' * 100]
    elif kind == T.PARAMETER_DOUBLE_ARRAY:
        n = len(value)
        out += [[], [0.0] * (n + 1), [0.0] * max(n - 1, 0), [0.0] * 100000]
        out += [[x] * max(n, 1) for x in NONFINITE]
    elif kind == T.PARAMETER_STRING_ARRAY:
        n = len(value)
        out += [[], [''] * max(n, 1), ['panda_joint1'] * 2, ['x' * 1000] * 1000,
                (value + value[:1]) if value else ['nope']]
    elif kind in (T.PARAMETER_BOOL_ARRAY, T.PARAMETER_INTEGER_ARRAY, T.PARAMETER_BYTE_ARRAY):
        out += [[]]
    return [value_msg(kind, v) for v in out]


# -- hypothesis: the whole ParameterValue space --------------------------------------------------

FLOATS = st.floats(allow_nan=True, allow_infinity=True)
INTS = st.integers(min_value=-BIG - 1, max_value=BIG)
TEXT = st.text(st.characters(exclude_categories=('Cs',)), max_size=40)
VALUES = st.one_of(
    st.just(value_msg(T.PARAMETER_NOT_SET, None)),
    st.builds(lambda v: value_msg(T.PARAMETER_BOOL, v), st.booleans()),
    st.builds(lambda v: value_msg(T.PARAMETER_INTEGER, v), INTS),
    st.builds(lambda v: value_msg(T.PARAMETER_DOUBLE, v), FLOATS),
    st.builds(lambda v: value_msg(T.PARAMETER_STRING, v), TEXT),
    st.builds(lambda v: value_msg(T.PARAMETER_BYTE_ARRAY, v),
              st.lists(st.binary(min_size=1, max_size=1), max_size=8)),
    st.builds(lambda v: value_msg(T.PARAMETER_BOOL_ARRAY, v), st.lists(st.booleans(),
                                                                       max_size=12)),
    st.builds(lambda v: value_msg(T.PARAMETER_INTEGER_ARRAY, v), st.lists(INTS, max_size=12)),
    st.builds(lambda v: value_msg(T.PARAMETER_DOUBLE_ARRAY, v), st.lists(FLOATS, max_size=12)),
    st.builds(lambda v: value_msg(T.PARAMETER_STRING_ARRAY, v), st.lists(TEXT, max_size=12)),
)
EXAMPLES = int(os.environ.get('RNEA_FUZZ_EXAMPLES', '200'))


# -- tests ---------------------------------------------------------------------------------------

@pytest.fixture(scope='module')
def context():
    os.environ['ROS_DOMAIN_ID'] = str(DOMAIN_ID)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=DOMAIN_ID)
    yield ctx
    rclpy.shutdown(context=ctx)


@pytest.fixture(scope='module', params=list(Target.MAKERS))
def fuzzer(request, context):
    target = Target(context, request.param)
    yield Fuzzer(target)
    target.close()


def _report(fuzzer, what, killed):
    killed = fuzzer.target.killed - killed
    counts = COUNTS.setdefault(fuzzer.target.kind, {'cases': 0, 'killed': 0, 'failures': 0})
    counts['cases'] += fuzzer.cases
    counts['killed'] += killed
    counts['failures'] += len(fuzzer.failures)
    print(f'\n{fuzzer.target.kind}: {what}: {fuzzer.cases} cases on '
          f'{len(fuzzer.declared)} parameters via {fuzzer.paths()}, '
          f'{killed} killed the node, {len(fuzzer.failures)} failures')


def test_every_parameter_every_type_and_boundary_on_every_path(fuzzer):
    """The grid: every declared parameter x every ROS type and boundary x every path."""
    start, killed = time.monotonic(), fuzzer.target.killed
    fuzzer.cases, fuzzer.failures = 0, []
    fuzzer.run_grid()
    _report(fuzzer, f'grid in {time.monotonic() - start:.1f} s', killed)
    assert fuzzer.target.killed == 0 and not fuzzer.failures, '\n'.join(fuzzer.failures[:40])


def test_values_drawn_from_the_whole_parameter_value_space(fuzzer):
    """Hypothesis: any parameter, any ParameterValue, any path: the same guarantees."""
    fuzzer.cases, fuzzer.failures = 0, []
    names, paths = sorted(fuzzer.declared), fuzzer.paths()
    start, killed = time.monotonic(), fuzzer.target.killed

    @settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.sampled_from(names), VALUES, st.sampled_from(paths))
    def case(name, value, path):
        fuzzer.check(name, value, path)

    case()
    _report(fuzzer, f'hypothesis in {time.monotonic() - start:.1f} s', killed)
    assert fuzzer.target.killed == 0 and not fuzzer.failures, '\n'.join(fuzzer.failures[:40])


def test_an_atomic_request_with_one_bad_value_sets_nothing(fuzzer):
    """set_parameters_atomically [good change, bad value]: refused, the good one not applied."""
    declared = fuzzer.declared
    for name, (descriptor, original) in sorted(declared.items()):
        if descriptor.read_only or original.type != T.PARAMETER_DOUBLE:
            continue
        others = [n for n, (d, v) in sorted(declared.items())
                  if n != name and not d.read_only and v.type == T.PARAMETER_BOOL and
                  n not in ('use_sim_time',)]
        if not others:
            continue
        other = others[0]
        flipped = value_msg(T.PARAMETER_BOOL, not declared[other][1].bool_value)
        request = SetParametersAtomically.Request(parameters=[
            ParameterMsg(name=other, value=flipped),
            ParameterMsg(name=name, value=value_msg(T.PARAMETER_STRING, 'heavy'))])
        result = fuzzer.target.call('set_parameters_atomically', request).result
        assert not result.successful and (name in result.reason or other in result.reason)
        assert fuzzer.target.value(other).bool_value == declared[other][1].bool_value
        assert _is_probe_same(fuzzer.target)
        return
    pytest.skip('no double and bool parameter to pair')


# -- start-up ---------------------------------------------------------------------------------

def _wrong_value(kind):
    """Return a Python value whose ROS type does not fit ``kind`` (a ParameterType)."""
    return ['x'] if kind == T.PARAMETER_STRING else 'x'


@pytest.mark.parametrize('kind', list(Target.MAKERS))
def test_a_wrong_type_at_start_up_is_one_refusal_naming_the_parameter(context, kind):
    """Each declared parameter given a wrong type as an override: one exception naming it."""
    from rclpy.exceptions import ParameterException
    maker = {'rnea': 'rnea_ros.node.rnea_node:RneaNode',
             'lifecycle': 'rnea_ros.node.lifecycle:ManagedRneaNode',
             'feedforward': 'rnea_ros.feedforward.node:TrajectoryFeedforwardNode',
             'mujoco_sim': 'rnea_ros.sim.mujoco_sim:MujocoSimNode'}[kind]
    module, cls = maker.split(':')
    node_class = getattr(__import__(module, fromlist=[cls]), cls)
    probe = node_class(context=context)     # no model: the declarations only
    declared = {name: probe.get_parameter_or(name)
                for name in probe.list_parameters([], 0).names}
    descriptors = {name: probe.describe_parameter(name) for name in declared}
    probe.destroy_node()
    tried = 0
    for name, param in sorted(declared.items()):
        if descriptors[name].read_only and name.startswith('qos_overrides.'):
            continue    # rclpy's QoS overrides: read-only, declared by rclpy from its own table
        wrong = _wrong_value(param.type_.value)
        tried += 1
        with pytest.raises((ParameterException, ValueError, TypeError, OSError,
                            RuntimeError)) as info:
            node = node_class(context=context,
                              parameter_overrides=[Parameter(name, value=wrong)])
            node.destroy_node()
        assert name in str(info.value), (name, str(info.value))
    print(f'\n{kind}: {tried} parameters refused at start-up')
    assert tried > 0


MODULES = {'rnea': 'rnea_ros.node', 'lifecycle': 'rnea_ros.node.lifecycle',
           'feedforward': 'rnea_ros.feedforward.node', 'mujoco_sim': 'rnea_ros.sim.mujoco_sim'}


def test_python_m_with_a_wrong_typed_parameter_file_exits_2_with_one_line(tmp_path):
    """A parameter file with a string for a double: exit 2, one 'cannot start' line, no trace."""
    path = tmp_path / 'params.yaml'
    path.write_text('/**:\n  ros__parameters:\n    payload_mass: heavy\n')
    env = dict(os.environ, ROS_DOMAIN_ID=str(DOMAIN_ID), PYTHONPATH=ROOT)
    procs = {kind: subprocess.Popen(
        [sys.executable, '-m', module, '--ros-args', '--params-file', str(path)], cwd=ROOT,
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for kind, module in MODULES.items() if kind in Target.MAKERS}
    for kind, proc in procs.items():
        try:
            out, err = proc.communicate(timeout=180)
        finally:
            proc.kill()
        lines = [line for line in err.splitlines() if 'cannot start' in line]
        assert proc.returncode == 2, (kind, err)
        assert 'Traceback' not in err and len(lines) == 1, (kind, err)
        assert 'payload_mass' in lines[0] and 'double' in lines[0], (kind, lines)
