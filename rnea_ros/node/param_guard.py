"""One guard for every path that sets a node's parameters (issue 29).

``ros2 param set``, the ``set_parameters`` / ``set_parameters_atomically`` services, the rnea
node's ``~/set_payload``, ``-p name:=value`` and parameter files all end in rclpy's
set-parameters machinery: the pre-set callbacks (which may rewrite the values), the
descriptors' checks, then the on-set callbacks (which accept or refuse with a reason).  An
exception raised by a callback there is not caught by rclpy: it leaves the executor and ends
the node.  This module is the one place where the nodes (:mod:`rnea_ros.node.rnea_node`, its
lifecycle variant, :mod:`rnea_ros.feedforward.node`, :mod:`rnea_ros.sim.mujoco_sim`) check a
value's ROS type against the parameter's kind before anything reads the value:

- :func:`type_reason`: why a value of some ROS type (or a delete request, type NOT_SET) is
  refused, naming the parameter and the expected type; None when the type fits (an integer
  for a double, integers for a double array and an empty array of any type for an array are
  the values YAML gives for them, and fit);
- :func:`converted`: the value in the parameter's own type (never raises: a value that does not
  fit is returned as it is, and :func:`type_reason` refuses it);
- :func:`guarded_pre_set` / :func:`guarded_on_set`: the callbacks as given, but an exception
  inside them becomes a refusal with its reason instead of the end of the node;
- :func:`check_declared`: the start-up check of every declared value (a parameter file with a
  wrong type): ValueError with one line naming the parameter;
- :func:`topic_reason`: a topic-name parameter checked with rclpy's validators, expanded;
- :func:`guard_services`: every service callback of a node answers a request it cannot
  handle with a refusal (rclpy's parameter services raise on an unknown type code).

doc/reference/robustness.md says what this guarantees and how the tests check it.
"""

import math

from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter

T = Parameter.Type
# The ROS types a parameter of each kind takes (before the node's own value checks).
ACCEPTED = {
    'bool': (T.BOOL,),
    'integer': (T.INTEGER,),
    'double': (T.DOUBLE, T.INTEGER),
    'string': (T.STRING,),
    'byte_array': (T.BYTE_ARRAY,),
    'bool_array': (T.BOOL_ARRAY,),
    'integer_array': (T.INTEGER_ARRAY,),
    'double_array': (T.DOUBLE_ARRAY, T.INTEGER_ARRAY),
    'string_array': (T.STRING_ARRAY,),
}
OWN_TYPE = {'bool': T.BOOL, 'integer': T.INTEGER, 'double': T.DOUBLE, 'string': T.STRING,
            'byte_array': T.BYTE_ARRAY, 'bool_array': T.BOOL_ARRAY,
            'integer_array': T.INTEGER_ARRAY, 'double_array': T.DOUBLE_ARRAY,
            'string_array': T.STRING_ARRAY}
KIND_OF_TYPE = {value: key for key, value in OWN_TYPE.items()}
ARRAYS = (T.BYTE_ARRAY, T.BOOL_ARRAY, T.INTEGER_ARRAY, T.DOUBLE_ARRAY, T.STRING_ARRAY)
WORDS = {'bool': 'a bool', 'integer': 'an integer', 'double': 'a double',
         'string': 'a string', 'byte_array': 'a byte array', 'bool_array': 'a bool array',
         'integer_array': 'an integer array', 'double_array': 'a double array',
         'string_array': 'a string array'}
TYPE_WORDS = {T.NOT_SET: 'nothing (a delete request)', T.BOOL: 'a bool',
              T.INTEGER: 'an integer', T.DOUBLE: 'a double', T.STRING: 'a string',
              T.BYTE_ARRAY: 'a byte array', T.BOOL_ARRAY: 'a bool array',
              T.INTEGER_ARRAY: 'an integer array', T.DOUBLE_ARRAY: 'a double array',
              T.STRING_ARRAY: 'a string array'}
SHOWN = 60      # characters of a refused value quoted in a reason


def expected(kind):
    """Return the words for the type a parameter of ``kind`` takes ('a double (a number)')."""
    return WORDS.get(kind, kind)


def shown(value):
    """Return a value for a reason: plain, at most :data:`SHOWN` characters."""
    if hasattr(value, 'typecode') or isinstance(value, tuple):
        value = list(value)
    text = repr(value)
    return text if len(text) <= SHOWN else text[:SHOWN - 5] + ' ...' + text[-1]


def type_reason(name, kind, param):
    """Return why ``param`` (a Parameter) cannot be a value of ``kind``, or None if it can.

    A delete request (type NOT_SET, what ``ros2 param delete`` sends) is always refused: every
    declared parameter is read by its node.  An empty array of any type fits an array kind (YAML
    has no typed ``[]``); the values are checked by the node afterwards.
    """
    kind_type = param.type_
    if kind_type == T.NOT_SET:
        return (f'{name} cannot be deleted: the node reads it; set it to {expected(kind)} '
                'instead')
    if kind_type in ACCEPTED.get(kind, ()):
        return None
    if kind.endswith('_array') and kind_type in ARRAYS and len(param.value) == 0:
        return None
    return (f'{name} expects {expected(kind)}, got {TYPE_WORDS.get(kind_type, kind_type)} '
            f'{shown(param.value)}')


def converted(param, kind, value=None):
    """Return ``param`` with ``value`` (default: its own) in the type of ``kind``; never raises.

    Integers become doubles, an empty array of any type the kind's own empty array.  A value
    that cannot be converted returns ``param`` unchanged (the on-set check refuses it).
    """
    own = OWN_TYPE.get(kind)
    if own is None or param.type_ == T.NOT_SET:
        return param
    value = param.value if value is None else value
    try:
        if own == T.DOUBLE and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        elif own == T.DOUBLE_ARRAY and all(isinstance(v, int) and not isinstance(v, bool)
                                           for v in value):
            value = [float(v) for v in value]
        elif own in ARRAYS and len(value) == 0:
            value = []
        if param.type_ == own and _same(value, param.value):
            return param
        return Parameter(param.name, own, value)
    except (TypeError, ValueError, OverflowError):
        return param


def _same(a, b):
    if hasattr(b, 'typecode') or isinstance(b, tuple):
        b = list(b)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(type(x) is type(y) and (x == y or x != x and y != y)
                                        for x, y in zip(a, b))
    return type(a) is type(b) and (a == b or (isinstance(a, float) and math.isnan(a) and
                                              math.isnan(b)))


def _first_line(exc):
    text = str(exc).strip().splitlines()
    return f'{type(exc).__name__}: {text[0] if text else ""}'[:300]


def guarded_pre_set(callback):
    """Return a pre-set-parameters callback that never raises (on error: the list unchanged).

    rclpy calls pre-set callbacks outside any handler: an exception there ends the node.  The
    unchanged values then meet the on-set check, which refuses them with the reason.
    """
    def pre_set(params):
        try:
            return list(callback(params))
        except Exception:  # noqa: B902 - the values go on to the check that refuses them
            return list(params)
    return pre_set


def guarded_on_set(callback, log=None):
    """Return an on-set-parameters callback that turns an exception into a refusal.

    The callback's own checks give the reasons; this is the last line: whatever it raised is
    refused as one line naming the parameters (and logged), the node keeps running.
    """
    def on_set(params):
        names = ', '.join(p.name for p in params)
        try:
            result = callback(params)
        except Exception as exc:  # noqa: B902 - any failure refuses the change, never the node
            reason = f'{names} refused: {_first_line(exc)}'
            if log is not None:
                log.error(reason)
            return SetParametersResult(successful=False, reason=reason)
        if not result.successful and not any(p.name in result.reason for p in params):
            result.reason = f'{names}: {result.reason}'     # say which parameter it was
        return result
    return on_set


def guarded_post_set(callback, log=None):
    """Return a post-set-parameters callback that logs an exception instead of raising it."""
    def post_set(params):
        try:
            callback(params)
        except Exception as exc:  # noqa: B902 - the values are set: report, keep running
            if log is not None:
                log.error(f'{", ".join(p.name for p in params)}: set, but applying them '
                          f'failed: {_first_line(exc)}')
    return post_set


def check_declared(node, kinds):
    """Raise ValueError (one line naming the parameter) if a declared value has a wrong type.

    For the start-up values (``-p``, parameter files) of parameters declared with dynamic
    typing, whose type rclpy does not check.
    """
    for name, kind in kinds.items():
        param = node.get_parameter_or(name)
        if param.type_ == T.NOT_SET:
            continue
        reason = type_reason(name, kind, param)
        if reason:
            raise ValueError(reason)


def topic_reason(node, name, value):
    """Return why ``value`` is not a topic name ``node`` can use, or None (empty: None).

    rclpy's own validators on the name as given and on its expansion with the node's name and
    namespace (the full name has a length limit that the relative one does not show: a 10 kB
    name passed the first check and then ended the node in create_publisher).
    """
    if not value:
        return None
    from rclpy.expand_topic_name import expand_topic_name
    from rclpy.validate_full_topic_name import validate_full_topic_name
    from rclpy.validate_topic_name import validate_topic_name
    try:
        validate_topic_name(value)
        validate_full_topic_name(expand_topic_name(value, node.get_name(),
                                                   node.get_namespace()))
    except Exception as exc:  # noqa: B902 - rclpy's name errors vary: any is a refusal
        return f'{name} {shown(value)} is not a valid topic name: {_first_line(exc)}'
    return None


def one_line(exc, limit=2000):
    """Return an exception as one line for a start-up refusal (values may hold newlines)."""
    text = ' '.join(str(exc).split())
    return text if len(text) <= limit else text[:limit - 4] + ' ...'


def refused_response(response, request, reason):
    """Fill a service response with a refusal and ``reason`` (the fields it has)."""
    if hasattr(response, 'result') and isinstance(response.result, SetParametersResult):
        response.result = SetParametersResult(successful=False, reason=reason)
    if hasattr(response, 'results') and hasattr(request, 'parameters'):
        response.results = [SetParametersResult(successful=False, reason=reason)
                            for _ in request.parameters]
    for field, value in (('success', False), ('successful', False), ('message', reason),
                         ('reason', reason)):
        if hasattr(response, field) and isinstance(getattr(response, field), type(value)):
            setattr(response, field, value)
    return response


def _named(node, request, response):
    """Name the parameter in rclpy's own refusals (its descriptor checks name none).

    rclpy refuses a value of the wrong type for a statically typed parameter (use_sim_time)
    with "Wrong parameter type, expected '1' got '4'" and a delete with "Static parameter
    cannot be undeclared": these become :func:`type_reason`'s line.
    """
    results = list(getattr(response, 'results', ()))
    params = list(getattr(request, 'parameters', ()))
    if hasattr(response, 'result') and isinstance(response.result, SetParametersResult):
        results = [response.result] if len(params) == 1 else []   # which one failed: unknown
    for param, result in zip(params, results):
        if result.successful or not result.reason.startswith(('Wrong parameter type',
                                                              'Static parameter')):
            continue
        try:
            kind = KIND_OF_TYPE[Parameter.Type(node.describe_parameter(param.name).type)]
            value = Parameter.from_parameter_msg(param)
        except Exception:  # noqa: B902 - keep rclpy's reason
            continue
        result.reason = type_reason(param.name, kind, value) or result.reason
    return response


MAX_VALUES = 1024      # the longest array any parameter of these nodes takes (one per joint)

MAX_STRING = 65536     # bytes: the longest string (a robot description is given as a file)

_ARRAY_FIELDS = ('bool_array_value', 'integer_array_value', 'double_array_value',
                 'string_array_value', 'byte_array_value')


def oversize_reason(node, request):
    """Return why a parameter request is refused unread (an array or string too long), or ''.

    Checked before rclpy converts the values (10 000 of them take 5 to 15 ms of the executor
    thread: a 1 kHz joint-state stream would lose states meanwhile).
    """
    for param in getattr(request, 'parameters', ()):
        value = getattr(param, 'value', None)
        if value is None:
            continue
        n = max(len(getattr(value, field, ())) for field in _ARRAY_FIELDS)
        if n > MAX_VALUES:
            what = f'{n} values; no parameter of this node takes more than {MAX_VALUES}'
        elif (len(getattr(value, 'string_value', '')) > MAX_STRING
              and param.name != 'robot_description'):
            what = (f'a string of {len(value.string_value)} characters; no parameter of this '
                    f'node but robot_description takes more than {MAX_STRING}')
        else:
            continue
        try:
            kind = KIND_OF_TYPE[Parameter.Type(node.describe_parameter(param.name).type)]
            return f'{param.name} expects {expected(kind)}, got {what}'
        except Exception:  # noqa: B902 - not declared: rclpy's own answer names it
            return f'{param.name}: {what}'
    return ''


def restore_types(node, request):
    """Give each requested parameter's descriptor the type of its value again.

    rclpy writes the requested type into the stored descriptor of a dynamically typed parameter
    before the node's callbacks can refuse the value, and leaves it there: after a refused
    ``ros2 param set /rnea mode 1.0`` the value is still a string but ``ros2 param describe``
    would say double.
    """
    for param in getattr(request, 'parameters', ()):
        try:
            if not node.has_parameter(param.name):
                continue
            descriptor = node.describe_parameter(param.name)   # rclpy's stored descriptor
            actual = node.get_parameter(param.name).type_.value
        except Exception:  # noqa: B902 - a name rclpy cannot look up: nothing to restore
            continue
        if descriptor.dynamic_typing and descriptor.type != actual:
            descriptor.type = actual


def guard_services(node, log=None):
    """Make every service of ``node`` answer a request it cannot handle with a refusal.

    rclpy's parameter services build a Parameter from each request entry and raise on a type
    code outside ParameterType (e.g. 10): uncaught, that ends any rclpy node.  Each service's
    callback (rclpy's and the node's own, created before this call) is wrapped: an exception
    becomes a response with ``successful``/``success`` false and the reason, logged once a
    second.  Call it at the end of the node's constructor.
    """
    for service in list(node.services):
        callback = service.callback
        if getattr(callback, 'guarded', False):
            continue

        def guarded(request, response, callback=callback, name=service.srv_name):
            try:
                reason = oversize_reason(node, request)
                if reason:
                    return refused_response(response, request, reason)
                return _named(node, request, callback(request, response))
            except Exception as exc:  # noqa: B902 - a bad request is refused, the node stays
                reason = f'{name}: request refused: {_first_line(exc)}'
                if log is not None:
                    log.error(reason, throttle_duration_sec=1.0)
                return refused_response(response, request, reason)
            finally:
                restore_types(node, request)
        guarded.guarded = True
        service.callback = guarded
