"""Input bookkeeping and output shaping for the rnea node, free of any ROS graph.

One module per concern: :mod:`.names` (name maps, mimic joints, bounds), :mod:`.joint_states`,
:mod:`.side_inputs` (desired accelerations, reference, wrenches), :mod:`.base` (moving base,
IMU), :mod:`.outputs` (limits, guards, statistics, settings); this face hands their names on.
:mod:`.wire` (output messages kept serialized, the numbers written in place) is imported by
name: it needs rclpy's serialization.

Everything the node does besides talking to ROS lives here so it can be unit-tested with plain
arrays: merging joint states by name (with mimic joints following their drivers), desired
accelerations and the computed-torque reference with their timeouts, external wrenches, the
acceleration of a moving base (parameter, topic or IMU), effort limits with ramp-in, and the
statistics the diagnostics report.  Inputs are validated: a message with NaN/Inf, wrong lengths
or unknown names is rejected as a whole with a reason (a string), and nothing of it is kept.

Times are plain floats in seconds (the node passes the steady clock).  Arrays passed in may be
``array.array('d')`` fields of ROS messages; they are viewed, not copied.
"""

from rnea_ros.node.bookkeeping.base import BaseAccelerationInput, ImuInput
from rnea_ros.node.bookkeeping.joint_states import JointStateInput, StampCheck
from rnea_ros.node.bookkeeping.names import (as_array, duplicates, MAX_ACCELERATION,
                                             MAX_BASE_ACCELERATION, MAX_IMU_ACCELERATION,
                                             MAX_IMU_ANGULAR_VELOCITY, MAX_JOINT_STATE, MAX_NAMES,
                                             MAX_OUTPUT, MAX_UNKNOWN_NAMES, MAX_WRENCH,
                                             MimicTable, NameMap, topic_token, topic_tokens,
                                             truncated)
from rnea_ros.node.bookkeeping.outputs import (CycleStats, diagnostic_level, EffortLimiter, ERROR,
                                               FloatBuffer, LimitGuard, NodeSettings, Notice, OK,
                                               output_error, WARN)
from rnea_ros.node.bookkeeping.side_inputs import AccelerationInput, ReferenceInput, WrenchInput

__all__ = ['BaseAccelerationInput', 'ImuInput', 'JointStateInput', 'StampCheck', 'as_array',
           'duplicates', 'MAX_ACCELERATION', 'MAX_BASE_ACCELERATION', 'MAX_IMU_ACCELERATION',
           'MAX_IMU_ANGULAR_VELOCITY', 'MAX_JOINT_STATE', 'MAX_NAMES', 'MAX_OUTPUT',
           'MAX_UNKNOWN_NAMES', 'MAX_WRENCH', 'MimicTable', 'NameMap', 'topic_token',
           'topic_tokens', 'truncated', 'CycleStats', 'diagnostic_level', 'EffortLimiter', 'ERROR',
           'FloatBuffer', 'LimitGuard', 'NodeSettings', 'Notice', 'OK', 'output_error', 'WARN',
           'AccelerationInput', 'ReferenceInput', 'WrenchInput']
