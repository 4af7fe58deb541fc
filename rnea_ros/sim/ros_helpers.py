"""ROS helpers shared by the simulator and the reference publisher (parameters, executor, stop)."""
import signal

from rcl_interfaces.msg import ParameterDescriptor, ParameterType
import rclpy
from rclpy.exceptions import ParameterUninitializedException
from rclpy.executors import SingleThreadedExecutor
from rclpy.parameter import Parameter
from rclpy.signals import SignalHandlerOptions

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


class StopRequest:
    """SIGINT / SIGTERM as a flag: the process finishes its loop and exits 0.

    rclpy's own handlers shut the context down at once, so a loop still publishing fails
    (``publisher's context is invalid``) and a second SIGINT (a terminal's Ctrl-C reaches both
    ``ros2 launch`` and its children, then launch forwards one more) interrupts the clean-up.
    Here every signal only sets :attr:`requested`; the loops poll it between short waits.
    """

    def __init__(self):
        """Not requested yet."""
        self.requested = False

    def __call__(self, signum, frame):
        """Signal handler: remember the request (repeated signals change nothing)."""
        self.requested = True

    def install(self):
        """Handle SIGINT and SIGTERM with this object (main thread only)."""
        for number in (signal.SIGINT, signal.SIGTERM):
            signal.signal(number, self)
        return self


STOP = StopRequest()


def init_ros(args=None):
    """rclpy.init without rclpy's signal handlers; SIGINT/SIGTERM set ``STOP.requested``."""
    STOP.install()
    rclpy.init(args=args, signal_handler_options=SignalHandlerOptions.NO)


def ignore_stop_signals():
    """After the clean-up: ignore SIGINT/SIGTERM (Python restores SIG_DFL while exiting)."""
    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, signal.SIG_IGN)


def running(node):
    """Return True while the node's context is valid and no stop was requested."""
    return not STOP.requested and rclpy.ok(context=node.context)


def spin_until_shutdown(node, period=0.1):
    """Spin ``node`` with spin_once(timeout) until a stop request or context shutdown."""
    executor = make_executor()
    executor.add_node(node)
    while running(node):
        executor.spin_once(timeout_sec=period)
