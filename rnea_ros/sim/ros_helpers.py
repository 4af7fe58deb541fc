"""ROS helpers shared by the simulator and the reference publisher (parameters, executor)."""
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
import rclpy
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter

EMPTY_ARRAY_TYPES = {
    ParameterType.PARAMETER_STRING_ARRAY: Parameter.Type.STRING_ARRAY,
    ParameterType.PARAMETER_DOUBLE_ARRAY: Parameter.Type.DOUBLE_ARRAY,
    ParameterType.PARAMETER_INTEGER_ARRAY: Parameter.Type.INTEGER_ARRAY,
    ParameterType.PARAMETER_BOOL_ARRAY: Parameter.Type.BOOL_ARRAY,
}


def declare_parameters(node, table):
    """Declare (name, default, type, description) rows with descriptors on ``node``.

    An empty-list default cannot carry its element type in rclpy, so such a parameter is
    declared with its type only; :func:`parameter_value` reads it as an empty list until set.
    """
    for name, default, kind, description in table:
        descriptor = ParameterDescriptor(name=name, type=kind, description=description)
        if isinstance(default, list) and not default:
            node.declare_parameter(name, EMPTY_ARRAY_TYPES[kind], descriptor)
        else:
            node.declare_parameter(name, default, descriptor)


def parameter_value(node, name):
    """Return a parameter's value; a typed parameter that was never set reads as []."""
    try:
        return node.get_parameter(name).value
    except ParameterUninitializedException:
        return []


def make_executor():
    """Return rclpy's EventsExecutor when available (lower CPU), else SingleThreadedExecutor.

    Drive it with ``spin_once(timeout_sec=...)`` (its ``spin()`` busy-loops and ignores
    signals).
    """
    try:
        from rclpy.experimental import EventsExecutor
    except ImportError:
        return SingleThreadedExecutor()
    return EventsExecutor()


def spin_until_shutdown(node, period=0.1):
    """Spin ``node`` with spin_once(timeout) until the context shuts down (Ctrl-C)."""
    executor = make_executor()
    executor.add_node(node)
    while rclpy.ok(context=node.context):
        executor.spin_once(timeout_sec=period)
