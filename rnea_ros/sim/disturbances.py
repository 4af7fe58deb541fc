"""Known disturbances for the simulated robot: a push on a link and a payload that appears.

Both act on a :class:`rnea_ros.sim.mujoco_model.Simulation` (MuJoCo, no ROS) and keep their own
ground truth, which the simulator records:

- :class:`Push`: a force of known magnitude and direction (world frame, N) at a point fixed in
  a link (link frame, m) from ``start`` for ``duration`` simulated seconds. MuJoCo applies it
  through ``data.xfrc_applied`` (a force at the body's centre of mass plus the moment
  (p - c) x f, so that it acts at p). Its effect on the joints, the ground truth of an
  external-torque estimator, is tau_ext = J_p(q)^T f, with J_p the linear (world) Jacobian of
  the point (Siciliano et al., Robotics, 2009, eq. 3.108 with the wrench's moment zero about p).
  The kinematics are brought to the step's state before the force is set, so that MuJoCo
  applies exactly the force, at exactly the point, that the record says.
- :class:`PayloadSwitch`: a rigid body (mass, centre of mass and inertia in the link frame, as
  :class:`rnea_ros.core.payload.Payload`) that is massless until ``time`` and then carried by
  the link. The body is welded to the link when the model is built (:func:`add_payload_body`);
  switching it on writes its mass and inertia into ``model.body_*`` between two steps.

Units and frames follow REP 103: N, N m, kg, m, the world frame of the simulator.
"""
from dataclasses import dataclass
import xml.etree.ElementTree as ElementTree

import mujoco
import numpy as np
from rnea_ros.core.payload import Payload
from rnea_ros.sim.urdf_tools import parse_urdf_xml

PAYLOAD_BODY = 'sim_payload'


def _vector(values, what, size=3):
    values = np.asarray(values, dtype=float).ravel()
    if values.shape != (size,) or not np.all(np.isfinite(values)):
        raise ValueError('{} must be {} finite numbers, got {}'.format(what, size,
                                                                       values.tolist()))
    return values


@dataclass
class Push:
    """A force ``force`` (world, N) at ``point`` (``link`` frame, m) during ``duration`` s."""

    link: str
    force: np.ndarray
    point: np.ndarray = (0.0, 0.0, 0.0)
    start: float = 0.0
    duration: float = 0.1

    def __post_init__(self):
        """Check the values (ValueError naming the bad one)."""
        if not isinstance(self.link, str) or not self.link:
            raise ValueError('push link must be a link name')
        self.force = _vector(self.force, 'push force (N)')
        self.point = _vector(self.point, 'push point (m)')
        self.start, self.duration = float(self.start), float(self.duration)
        if not np.isfinite(self.start) or self.start < 0.0:
            raise ValueError('push start must be >= 0 s, got {}'.format(self.start))
        if not np.isfinite(self.duration) or self.duration <= 0.0:
            raise ValueError('push duration must be > 0 s, got {}'.format(self.duration))

    def active(self, time):
        """Return True when the push acts during the step that starts at ``time`` (s)."""
        return self.start - 1e-9 <= time < self.start + self.duration - 1e-9


@dataclass
class PayloadSwitch:
    """A payload (:class:`Payload`) that appears on its link at simulated ``time`` (s)."""

    payload: Payload
    time: float = 0.0

    def __post_init__(self):
        """Check the switch time."""
        self.time = float(self.time)
        if not np.isfinite(self.time) or self.time < 0.0:
            raise ValueError('payload time must be >= 0 s, got {}'.format(self.time))


def add_payload_body(urdf_xml, link, name=PAYLOAD_BODY):
    """Return URDF text with a massless link ``name`` welded to ``link`` (at its origin).

    MuJoCo keeps it as its own body (the simulator does not fuse static bodies), ready to
    receive the payload's mass and inertia when it is switched on.
    """
    root = parse_urdf_xml(urdf_xml)
    links = {element.get('name') for element in root.findall('link')}
    if link not in links:
        raise ValueError('payload link {!r} is not a link of the robot; links: {}'.format(
            link, sorted(links)))
    if name in links:
        raise ValueError('the robot already has a link named {!r}'.format(name))
    ElementTree.SubElement(root, 'link', name=name)
    joint = ElementTree.SubElement(root, 'joint', name=name + '_joint', type='fixed')
    ElementTree.SubElement(joint, 'parent', link=link)
    ElementTree.SubElement(joint, 'child', link=name)
    ElementTree.SubElement(joint, 'origin', xyz='0 0 0', rpy='0 0 0')
    return ElementTree.tostring(root, encoding='unicode')


def _body_id(model, name, what):
    body = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_BODY, name)
    if body < 0:
        raise ValueError('{} link {!r} is not a body of the simulated model'.format(what, name))
    return body


def _quaternion(rotation):
    quat = np.zeros(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rotation, dtype=float).ravel())
    return quat


class Disturbances:
    """Apply a push and switch a payload on in a :class:`Simulation`; keep the ground truth.

    Call :meth:`before_step` with the simulation before each physics step (the
    :class:`Simulation` does so when it holds this object). After it, :attr:`external_torque`
    (joint order of the simulation), :attr:`force` and :attr:`point` (world) describe what
    acts during that step, :attr:`rotation` is the pushed link's orientation (world from link,
    to express the wrench in the link frame), and :attr:`payload_on` whether the payload is
    carried.
    """

    def __init__(self, model, dofs, push=None, payload=None, payload_body=PAYLOAD_BODY):
        """Resolve the bodies; ``dofs``: MuJoCo dof address of each simulated joint, in order."""
        self.model = model
        self.dofs = np.asarray(dofs, dtype=int)
        self.push = push
        self.payload = payload
        self._push_body = _body_id(model, push.link, 'push') if push is not None else -1
        self._payload_body = (_body_id(model, payload_body, 'payload')
                              if payload is not None else -1)
        self.payload_on = False
        self.external_torque = np.zeros(len(self.dofs))
        self.force = np.zeros(3)
        self.point = np.full(3, np.nan)
        self.rotation = np.full((3, 3), np.nan)
        self._jacobian = np.zeros((3, model.nv))

    def before_step(self, data, time):
        """Switch the payload on when due, set (or clear) the push for the step at ``time``."""
        if self.payload is not None and not self.payload_on and time >= self.payload.time - 1e-9:
            self.switch_payload_on()
        data.xfrc_applied[:] = 0.0
        self.external_torque = np.zeros(len(self.dofs))
        self.force = np.zeros(3)
        self.point = np.full(3, np.nan)
        self.rotation = np.full((3, 3), np.nan)
        if self.push is None or not self.push.active(time):
            return
        mujoco.mj_kinematics(self.model, data)
        mujoco.mj_comPos(self.model, data)
        body = self._push_body
        rotation = data.xmat[body].reshape(3, 3)
        point = data.xpos[body] + rotation @ self.push.point
        force = self.push.force
        data.xfrc_applied[body, :3] = force
        data.xfrc_applied[body, 3:] = np.cross(point - data.xipos[body], force)
        mujoco.mj_jac(self.model, data, self._jacobian, None, point, body)
        self.external_torque = self._jacobian[:, self.dofs].T @ force
        self.force = force.copy()
        self.point = point
        self.rotation = rotation.copy()

    def switch_payload_on(self):
        """Give the payload body its mass, centre of mass and inertia (principal axes)."""
        payload, body, model = self.payload.payload, self._payload_body, self.model
        moments, axes = np.linalg.eigh(payload.inertia)
        if np.linalg.det(axes) < 0:
            axes[:, 0] = -axes[:, 0]
        model.body_mass[body] = payload.mass
        model.body_ipos[body] = payload.com
        model.body_iquat[body] = _quaternion(axes)
        model.body_inertia[body] = np.maximum(moments, 0.0)
        model.body_sameframe[body] = 0    # the compiler marked the massless body "inertia at
        #                                   the body frame": kinematics would ignore ipos
        model.body_subtreemass[:] = 0.0
        for index in range(model.nbody - 1, -1, -1):
            model.body_subtreemass[index] += model.body_mass[index]
            if index:
                model.body_subtreemass[model.body_parentid[index]] += (
                    model.body_subtreemass[index])
        self.payload_on = True
