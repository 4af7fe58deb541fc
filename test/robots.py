"""Test helpers: where example-robot-data's URDFs are, and Pinocchio as the oracle."""

import os
import sysconfig

import numpy as np

ROBOTS = os.path.join(sysconfig.get_paths()['purelib'], 'cmeel.prefix', 'share',
                      'example-robot-data', 'robots')

URDF = {
    'panda': 'panda_description/urdf/panda.urdf',
    'ur5': 'ur_description/urdf/ur5_robot.urdf',
    'talos_reduced': 'talos_data/robots/talos_reduced.urdf',
    'anymal': 'anymal_b_simple_description/robots/anymal.urdf',
    'allegro_hand': 'allegro_hand_description/urdf/allegro_right_hand.urdf',
    'go2': 'go2_description/urdf/go2.urdf',
    'g1': 'g1_description/urdf/g1_29dof_rev_1_0.urdf',
    'double_pendulum_continuous': 'double_pendulum_description/urdf/'
                                  'double_pendulum_continuous.urdf',
}


def urdf_path(name):
    """Return the absolute path of a robot's URDF by short name or relative path."""
    return os.path.join(ROBOTS, URDF.get(name, name))


def all_urdfs():
    """Return every URDF file of example-robot-data, relative to ROBOTS, sorted."""
    found = []
    for root, _, files in os.walk(ROBOTS):
        found += [os.path.relpath(os.path.join(root, f), ROBOTS)
                  for f in files if f.endswith('.urdf')]
    return sorted(found)


def random_state(model, rng, scale=1.0):
    """Return random (q, qd, qdd) within joint limits, a unit quaternion for a floating base."""
    lo = np.where(np.isfinite(model.lower_limits), model.lower_limits, -np.pi)
    hi = np.where(np.isfinite(model.upper_limits), model.upper_limits, np.pi)
    joints = rng.uniform(lo, hi)
    qd = rng.uniform(-scale, scale, model.nv)
    qdd = rng.uniform(-scale, scale, model.nv)
    if model.floating_base:
        quat = rng.normal(size=4)
        q = np.concatenate([rng.uniform(-1, 1, 3), quat / np.linalg.norm(quat), joints])
    else:
        q = joints
    return q, qd, qdd


class PinocchioOracle:
    """Pinocchio's model of the same URDF, with our coordinates mapped onto its coordinates."""

    def __init__(self, model, path):
        """Build the Pinocchio model (free-flyer root if our model floats)."""
        import pinocchio as pin
        self.pin = pin
        if model.floating_base:
            self.pm = pin.buildModelFromUrdf(path, pin.JointModelFreeFlyer())
        else:
            self.pm = pin.buildModelFromUrdf(path)
        self.pd = self.pm.createData()
        self.model = model
        self.jids = [self.pm.getJointId(n) for n in model.joint_names]
        self.vidx = np.array([self.pm.joints[j].idx_v for j in self.jids], dtype=int)
        if model.floating_base:
            self.vidx = np.concatenate([np.arange(6), self.vidx])

    def to_pin(self, q, qd, qdd):
        """Return Pinocchio's (q, v, a); continuous joints become (cos, sin)."""
        pm, m = self.pm, self.model
        off = 7 if m.floating_base else 0
        qp = self.pin.neutral(pm)
        if m.floating_base:
            qp[:7] = q[:7]
        for k, jid in enumerate(self.jids):
            j = pm.joints[jid]
            if j.nq == 2:
                qp[j.idx_q:j.idx_q + 2] = np.cos(q[off + k]), np.sin(q[off + k])
            else:
                qp[j.idx_q] = q[off + k]
        vp = np.zeros(pm.nv)
        ap = np.zeros(pm.nv)
        vp[self.vidx] = qd
        ap[self.vidx] = qdd
        return qp, vp, ap

    def fext(self, f_ext):
        """Return Pinocchio's per-joint external forces for {link: wrench in link frame}."""
        pin, pm = self.pin, self.pm
        forces = [pin.Force.Zero() for _ in range(pm.njoints)]
        for link, w in f_ext.items():
            frame = pm.frames[pm.getFrameId(link, pin.FrameType.BODY)]
            forces[frame.parentJoint] += frame.placement.act(pin.Force(np.asarray(w, float)))
        return forces

    def rnea(self, q, qd, qdd, f_ext=None):
        """Return (tau, reaction wrenches per model joint) from Pinocchio, in our order."""
        qp, vp, ap = self.to_pin(q, qd, qdd)
        if f_ext:
            tau = self.pin.rnea(self.pm, self.pd, qp, vp, ap, self.fext(f_ext))
        else:
            tau = self.pin.rnea(self.pm, self.pd, qp, vp, ap)
        wrenches = np.array([self.pd.f[j].vector for j in self.jids]).reshape(-1, 6)
        return tau[self.vidx], wrenches
