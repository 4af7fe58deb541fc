"""The rnea node as a managed (lifecycle) node, as ros2_control controllers behave.

``configure`` loads the model (from the ``robot_description`` / ``urdf_file`` parameters, or the
``robot_description`` topic received so far; without any description it succeeds and loads the
first one that arrives), ``activate`` starts command output (with the ramp), ``deactivate``
sends one zero command and stops commanding, ``cleanup`` drops the model, ``shutdown`` stops
commanding (one zero command).  Efforts, reaction wrenches and diagnostics are published
whenever a model is loaded; only commands wait for ``activate``.  The plain node
(:mod:`rnea_ros.node.rnea_node`) stays the default.  Run it with
``ros2 run rnea_ros rnea_lifecycle_node`` or ``python -m rnea_ros.node.lifecycle`` and drive it
with ``ros2 lifecycle set /rnea configure`` / ``activate``.
"""

import sys

from rclpy.lifecycle import LifecycleNodeMixin, TransitionCallbackReturn
from rnea_ros.node import param_guard
from rnea_ros.node.rnea_node import main as node_main
from rnea_ros.node.rnea_node import RneaNode


class ManagedRneaNode(LifecycleNodeMixin, RneaNode):
    """The rnea node with the lifecycle state machine (unconfigured at start)."""

    MANAGED = True

    def __init__(self, **kwargs):
        """Declare parameters and interfaces; load nothing until configured."""
        RneaNode.__init__(self, **kwargs)
        LifecycleNodeMixin.__init__(self)
        param_guard.guard_services(self, self._log)     # the lifecycle services too

    def on_configure(self, state):
        """Load the model from the current description (FAILURE with the reason)."""
        self._configured = True
        if self._description_source() is None:
            self._log.info('configured: waiting for a robot description')
            return TransitionCallbackReturn.SUCCESS
        try:
            self._reload_model()
        except ValueError as exc:
            self._log.error(f'configure failed: {exc}')
            self._configured = False
            return TransitionCallbackReturn.FAILURE
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state):
        """Start command output (the ramp starts with the first command)."""
        self._active = True
        self._log.info('activated: commanding')
        return TransitionCallbackReturn.SUCCESS

    def on_deactivate(self, state):
        """Send one zero command and stop commanding."""
        self._stop_commands(send_zero=True)
        self._active = False
        self._log.info('deactivated: zero command sent, commands stopped')
        return TransitionCallbackReturn.SUCCESS

    def on_cleanup(self, state):
        """Drop the model (back to unconfigured)."""
        self._stop_commands(send_zero=True)
        self._active = False
        self._configured = False
        self._rt = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state):
        """Stop commanding with one zero command."""
        self._stop_commands(send_zero=True)
        self._active = False
        return TransitionCallbackReturn.SUCCESS


def main(args=None, stop=None):
    """Run the managed node until Ctrl-C / SIGTERM; return the exit code."""
    return node_main(args, node_class=ManagedRneaNode, stop=stop)


if __name__ == '__main__':
    sys.exit(main())
