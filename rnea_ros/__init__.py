"""rnea_ros: robot dynamics by the Recursive Newton-Euler Algorithm, for ROS 2 and plain Python.

The dynamics core needs no ROS: build a :class:`RobotModel` from a URDF and call the algorithms.

>>> model = RobotModel.from_urdf_file('panda.urdf')                 # doctest: +SKIP
>>> tau = inverse_dynamics(model, q, qd, qdd)                       # doctest: +SKIP
"""

import importlib

# Imported on first use (PEP 562), so that ``rnea_ros.entry_points`` loads without numba.
_EXPORTS = {
    'rnea_ros.core.aba': ('forward_dynamics',),
    'rnea_ros.core.coriolis': ('coriolis_matrix',),
    'rnea_ros.core.crba': ('mass_matrix',),
    'rnea_ros.core.dynamics': ('bias_forces', 'coriolis_torques', 'gravity_torques',
                               'inverse_dynamics', 'inverse_dynamics_batch',
                               'last_reaction_wrenches', 'reaction_wrenches'),
    'rnea_ros.core.floating_base': ('floating_base_inverse_dynamics',),
    'rnea_ros.core.frame_acceleration': ('frame_acceleration', 'frame_motion', 'frame_velocity'),
    'rnea_ros.core.kinematics': ('frame_jacobian', 'frame_placement'),
    'rnea_ros.core.model': ('RobotModel', 'Workspace'),
    'rnea_ros.core.observer': ('MomentumObserver', 'CollisionDetector', 'external_wrench',
                               'WrenchEstimator', 'observe_recording'),
    'rnea_ros.core.payload_estimation': ('PayloadEstimator', 'estimate_payload'),
    'rnea_ros.core.specs': ('JointSpec', 'LinkSpec'),
}
_MODULE_OF = {name: module for module, names in _EXPORTS.items() for name in names}

__all__ = ['RobotModel', 'Workspace', 'LinkSpec', 'JointSpec', 'inverse_dynamics',
           'inverse_dynamics_batch', 'reaction_wrenches', 'last_reaction_wrenches',
           'gravity_torques', 'bias_forces',
           'coriolis_torques', 'coriolis_matrix', 'mass_matrix', 'forward_dynamics',
           'frame_placement', 'frame_jacobian', 'frame_velocity', 'frame_acceleration',
           'frame_motion',
           'floating_base_inverse_dynamics', 'PayloadEstimator', 'estimate_payload',
           'MomentumObserver', 'CollisionDetector', 'external_wrench', 'WrenchEstimator',
           'observe_recording']


def __getattr__(name):
    """Import the public API on first use."""
    if name not in _MODULE_OF:
        raise AttributeError(f'module {__name__!r} has no attribute {name!r}')
    value = getattr(importlib.import_module(_MODULE_OF[name]), name)
    globals()[name] = value
    return value


def __dir__():
    """List the public API with the module's own names."""
    return sorted(set(globals()) | set(__all__))
