"""Declare ROS parameters from a table of (name, default, type, description) rows."""
from rcl_interfaces.msg import ParameterDescriptor, ParameterType
from rclpy.exceptions import ParameterUninitializedException
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
