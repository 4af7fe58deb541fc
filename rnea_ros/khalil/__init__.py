"""Khalil's recursive Newton-Euler methods ("Khalil 2010" in the docstrings).

W. Khalil, "Dynamic modeling of robots using recursive Newton-Euler techniques", ICINCO 2010.

One module per method, in the paper's notation, with its equation numbers in the docstrings:

- :mod:`~rnea_ros.khalil.mdh`: modified Denavit-Hartenberg tables (§2), YAML/CSV loaders,
  conversion to :class:`rnea_ros.RobotModel` and URDF, loop-constraint data of cut joints.
- :mod:`~rnea_ros.khalil.newton_euler`: the inverse model of a tree (§3.2, eqs. 12-31) with time
  derivatives of the torques (Taylor jets) and the inertia matrix by columns (§3.3.1).
- :mod:`~rnea_ros.khalil.direct`: the recursive direct model (§3.3.2, eqs. 32-54).
- :mod:`~rnea_ros.khalil.kinematics`: frame poses, screws, accelerations, Jacobians (§2).
- :mod:`~rnea_ros.khalil.closed_loop`: closed-loop robots by the equivalent tree (§4).
- :mod:`~rnea_ros.khalil.parallel`: parallel robots from platform and legs (§5).
- :mod:`~rnea_ros.khalil.elastic`: elastic joints (§6) and flexible-joint robots.
"""

from rnea_ros.khalil.closed_loop import ClosedLoopRobot
from rnea_ros.khalil.direct import direct_dynamics, hybrid_dynamics
from rnea_ros.khalil.elastic import (elastic_direct_dynamics, elastic_inverse_dynamics,
                                     flexible_joint_inverse_dynamics, FlexibleJointRobot,
                                     split_flexible_table)
from rnea_ros.khalil.mdh import (data_path, load_mdh, load_mdh_csv, load_mdh_yaml,
                                 loop_constraints, make_table, mdh_to_urdf, MDHFrame, MDHTable,
                                 model_from_mdh)
from rnea_ros.khalil.newton_euler import (inertia_matrix, KhalilTree, newton_euler,
                                          newton_euler_jets)
from rnea_ros.khalil.parallel import Leg, ParallelRobot

__all__ = ['MDHFrame', 'MDHTable', 'make_table', 'load_mdh', 'load_mdh_yaml', 'load_mdh_csv',
           'data_path', 'model_from_mdh', 'mdh_to_urdf', 'loop_constraints', 'KhalilTree',
           'newton_euler', 'newton_euler_jets', 'inertia_matrix', 'direct_dynamics',
           'hybrid_dynamics', 'ClosedLoopRobot', 'Leg', 'ParallelRobot',
           'elastic_inverse_dynamics', 'elastic_direct_dynamics', 'split_flexible_table',
           'FlexibleJointRobot', 'flexible_joint_inverse_dynamics']
