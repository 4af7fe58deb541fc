"""rnea_ros: robot dynamics by the Recursive Newton-Euler Algorithm, for ROS 2 and plain Python.

The dynamics core needs no ROS: build a :class:`RobotModel` from a URDF and call the algorithms.

>>> model = RobotModel.from_urdf_file('panda.urdf')                 # doctest: +SKIP
>>> tau = inverse_dynamics(model, q, qd, qdd)                       # doctest: +SKIP
"""

from rnea_ros.core.aba import forward_dynamics
from rnea_ros.core.crba import mass_matrix
from rnea_ros.core.dynamics import (bias_forces, coriolis_torques, gravity_torques,
                                    inverse_dynamics, inverse_dynamics_batch, reaction_wrenches)
from rnea_ros.core.floating_base import floating_base_inverse_dynamics
from rnea_ros.core.model import RobotModel, Workspace
from rnea_ros.core.specs import JointSpec, LinkSpec

__all__ = ['RobotModel', 'Workspace', 'LinkSpec', 'JointSpec', 'inverse_dynamics',
           'inverse_dynamics_batch', 'reaction_wrenches', 'gravity_torques', 'bias_forces',
           'coriolis_torques', 'mass_matrix', 'forward_dynamics',
           'floating_base_inverse_dynamics']
