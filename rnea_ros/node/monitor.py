"""Model against measurement in the rnea node: effort residuals, contact flag and payload.

**Effort residual.**  When a ``joint_states`` message carries measured efforts for every model
joint, the node publishes ``~/effort_residual`` (sensor_msgs/JointState, the input's stamp,
model joint order): ``effort = measured - ID(q, qd_measured, qdd, f_ext)``, with position and
velocity the measured ones.  ``qdd`` is the node's desired acceleration in ``inverse_dynamics``
mode (``~/desired_accelerations``, zero when stale) and the commanded acceleration
``qdd_ref + kp e + kd de`` in ``computed_torque`` mode; in the other modes (and when nothing
desired is known) it is 0, so the residual then also holds the inertial efforts M(q) qdd of
the actual motion.  Known external wrenches (``~/external_wrenches``) and the model's friction
are part of the model effort.  The residual estimates unmodelled or external joint efforts.

**Contact.**  Parameter ``contact_thresholds`` (N m or N; 1 value or 1 per model joint; not set:
off) makes the node publish ``~/contact`` (std_msgs/Bool) with every residual: true when
|residual_j| > threshold_j for some joint.

**Payload.**  Parameters ``payload_link``, ``payload_mass`` (kg), ``payload_com`` (m, in the link
frame) and ``payload_inertia`` (kg m^2 about the COM, [ixx, iyy, izz, ixy, ixz, iyz]) attach a
rigid body to a link (:mod:`rnea_ros.core.payload`); mass 0 and zero inertia = no payload.
They are read at start and may be changed at run time; any change rebuilds the model between
two cycles (parameter callbacks run in the executor thread that runs the cycle) and a bad
payload is rejected, keeping the previous model.  Service ``~/set_payload`` reuses the type
rcl_interfaces/srv/SetParametersAtomically: its request lists payload_* parameters (others are
refused), the ones not given return to their defaults, and all are set at once; a request with
no parameters commits the last accepted estimate of ``~/estimate_payload``
(:mod:`rnea_ros.node.payload_estimation`).  Service
``~/clear_payload`` (std_srvs/Trigger) removes the payload.  Diagnostics show the payload and
the largest residual of the last period.
"""

import numpy as np
from rcl_interfaces.msg import SetParametersResult
from rclpy.parameter import Parameter
from rnea_ros.core.payload import Payload
from rnea_ros.node.monitor_params import PAYLOAD_DEFAULTS, payload_from_config
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool


class ModelMonitor:
    """The node's residual and contact outputs and payload services (see module doc)."""

    def __init__(self, node):
        """Create the publishers and services on ``node`` (an RneaNode)."""
        from rcl_interfaces.srv import SetParametersAtomically
        from std_srvs.srv import Trigger
        self._node = node
        self._residual_pub = node.create_publisher(JointState, '~/effort_residual', 10)
        self._contact_pub = node.create_publisher(Bool, '~/contact', 10)
        self._msg = JointState()
        self._names = None          # message name tuple -> (src, dst) index arrays, cached
        self._index = None
        self._measured = None
        self._model = None
        self._thresholds = (None, None)     # (parameter value, per-joint array)
        self.max_residual = 0.0
        self.contact = False
        self.last_error = ''
        node.create_service(SetParametersAtomically, '~/set_payload', self._on_set_payload)
        node.create_service(Trigger, '~/clear_payload', self._on_clear_payload)

    # -- inputs -------------------------------------------------------------------------------

    def take_efforts(self, msg, joint_names):
        """Keep the measured efforts of a joint state message (model order) or forget them."""
        self._measured = None
        if not len(msg.effort) or len(msg.effort) != len(msg.name):
            return
        names = tuple(msg.name)
        if names != self._names or self._model is not joint_names:
            index = {n: i for i, n in enumerate(names)}
            self._names, self._model = names, joint_names
            self._index = (np.array([index[j] for j in joint_names], dtype=int)
                           if all(j in index for j in joint_names) else None)
        if self._index is None:
            return
        effort = np.asarray(msg.effort, dtype=float)[self._index]
        if np.all(np.isfinite(effort)):
            self._measured = effort

    # -- the cycle ---------------------------------------------------------------------------

    def cycle(self, rt, stamp, f_ext, gravity, thresholds, base_acceleration=None):
        """Publish the residual (and contact) for the state just computed, if efforts came."""
        measured, self._measured = self._measured, None
        if measured is None:
            return
        from rnea_ros.core.dynamics import inverse_dynamics
        tau = inverse_dynamics(rt.model, rt.q, rt.qd, rt.qdd, f_ext, gravity,
                               base_acceleration=base_acceleration, ws=rt.ws)
        residual = measured - tau[rt.offset_v:]
        if not np.all(np.isfinite(residual)):
            return
        msg = self._msg
        msg.header.stamp = stamp
        msg.name = list(rt.model.joint_names)
        msg.position = rt.q_j.tolist()
        msg.velocity = rt.qd_j.tolist()
        msg.effort = residual.tolist()
        self._residual_pub.publish(msg)
        self.max_residual = max(self.max_residual, float(np.abs(residual).max(initial=0.0)))
        limit = self._per_joint(thresholds, residual.size)
        if limit is not None:
            self.contact = bool(np.any(np.abs(residual) > limit))
            self._contact_pub.publish(Bool(data=self.contact))

    def _per_joint(self, thresholds, n):
        if not thresholds:
            return None
        value, array = self._thresholds
        if value is not thresholds or array.size != n:
            if len(thresholds) not in (1, n):
                self.last_error = (f'contact_thresholds has {len(thresholds)} values for {n} '
                                   'joints: no contact detection')
                return None
            array = np.broadcast_to(np.asarray(thresholds, dtype=float), (n,)).copy()
            self._thresholds = (thresholds, array)
        return array

    def diagnostics(self, cfg):
        """Return diagnostic key/values (payload, largest residual of the period, contact)."""
        try:
            payload = payload_from_config(cfg)
        except ValueError as exc:
            payload = exc
        values = {'payload': payload.describe() if isinstance(payload, Payload)
                  else str(payload or 'none'),
                  'max_effort_residual': f'{self.max_residual:.4f}',
                  'contact': str(self.contact)}
        if self.last_error:
            values['monitor_error'] = self.last_error
        self.max_residual = 0.0
        return values

    # -- services ----------------------------------------------------------------------------

    def _on_set_payload(self, request, response):
        estimation = getattr(self._node, '_payload_estimation', None)
        if not request.parameters and estimation is not None:      # commit the last estimate
            params, reason = estimation.commit_parameters()
            result = (self._node.set_parameters_atomically(params) if params is not None
                      else SetParametersResult(successful=False, reason=reason))
            if result.successful:
                estimation.on_committed()
            response.result = result
            return response
        given = {p.name: Parameter.from_parameter_msg(p) for p in request.parameters}
        unknown = sorted(set(given) - set(PAYLOAD_DEFAULTS))
        if unknown:
            response.result = SetParametersResult(
                successful=False, reason=f'set_payload takes only {list(PAYLOAD_DEFAULTS)}; '
                f'got {unknown}')
            return response
        params = [given.get(name, Parameter(name, value=default))
                  for name, default in PAYLOAD_DEFAULTS.items()]
        response.result = self._node.set_parameters_atomically(params)
        return response

    def _on_clear_payload(self, request, response):
        result = self._node.set_parameters_atomically(
            [Parameter(name, value=default) for name, default in PAYLOAD_DEFAULTS.items()])
        response.success = result.successful
        response.message = 'payload cleared' if result.successful else result.reason
        return response
