"""Build a MuJoCo model from a URDF (pure functions, no ROS).

The simulator must see the very same robot the rnea node sees, so the conversion keeps every
URDF link as its own body (no fused static bodies), takes masses and inertias only from the
URDF ``<inertial>`` elements, and by default removes what the URDF-to-MuJoCo importer adds on
top of rigid-body dynamics: joint damping, friction loss, armature, contacts and the equality
constraints it creates for ``<mimic>`` joints (the rnea node drives a mimic joint like any other
joint). Mesh references that cannot be resolved to a file MuJoCo can load are dropped.

URDF helpers that do not need MuJoCo (joint list, mesh paths) are in
:mod:`rnea_ros.sim.urdf_tools`, so that launch helpers can use them without MuJoCo.
"""
import xml.etree.ElementTree as ElementTree

import mujoco
import numpy as np
from rnea_ros.core.layout import DEFAULT_GRAVITY
from rnea_ros.sim.urdf_tools import parse_urdf_xml, resolve_mesh_path

MUJOCO_MESH_EXTENSIONS = ('.stl', '.obj', '.msh')


def prepare_urdf(urdf_xml, base_dir=None, share_dirs=None):
    """Rewrite a URDF for MuJoCo's importer and return ``(xml, dropped_mesh_uris)``.

    Each ``<visual>``/``<collision>`` whose mesh cannot be resolved to a file of a format MuJoCo
    loads (STL, OBJ, MSH) is removed; resolved meshes get absolute paths. A ``<mujoco>``
    extension element sets ``fusestatic="false"`` (every URDF link stays a body) and
    ``strippath="false"`` (keep the absolute mesh paths), keeping other compiler settings the
    URDF may carry.
    """
    root = parse_urdf_xml(urdf_xml)
    dropped = []
    for link in root.findall('link'):
        for tag in ('visual', 'collision'):
            for element in link.findall(tag):
                mesh = element.find('geometry/mesh')
                if mesh is None:
                    continue
                uri = mesh.get('filename', '')
                path = resolve_mesh_path(uri, base_dir, share_dirs)
                if path is None or not path.lower().endswith(MUJOCO_MESH_EXTENSIONS):
                    link.remove(element)
                    dropped.append(uri)
                else:
                    mesh.set('filename', path)
    extension = root.find('mujoco')
    if extension is None:
        extension = ElementTree.SubElement(root, 'mujoco')
    compiler = extension.find('compiler')
    if compiler is None:
        compiler = ElementTree.SubElement(extension, 'compiler')
    compiler.set('fusestatic', 'false')
    compiler.set('strippath', 'false')
    return ElementTree.tostring(root, encoding='unicode'), dropped


def build_mujoco_model(urdf_xml, base_dir=None, timestep=0.001, gravity=DEFAULT_GRAVITY,
                       urdf_dynamics=False, armature=0.0, collisions=False,
                       mimic_constraints=False, integrator='euler', share_dirs=None,
                       damping=None, frictionloss=None, limits=True):
    """Convert URDF text into a compiled ``mujoco.MjModel`` for rigid-body simulation.

    What the arguments mean:
        urdf_xml: URDF text.
        base_dir: folder for relative mesh paths (the URDF file's folder).
        timestep: physics step in seconds.
        gravity: gravity vector in the world frame (m/s^2).
        urdf_dynamics: keep the URDF joint damping and friction (as MuJoCo's importer reads
            them); default False sets both to zero.
        armature: rotor inertia of every joint (default 0), or {joint name: value} (others 0).
        collisions: enable contacts between the robot's geometries (default off: unfiltered
            contacts between neighbouring links push on a robot that the rnea model does not
            know about).
        mimic_constraints: keep the joint equality constraints MuJoCo creates for ``<mimic>``
            joints (default off: every joint is driven by its own effort).
        integrator: 'euler', 'rk4', 'implicit' or 'implicitfast'.
        share_dirs: folders to resolve ``package://`` URIs in (default share_directories()).
        damping, frictionloss: {joint name: value}: viscous (N m s/rad, N s/m) and Coulomb
            friction (N m, N) of the named joints, set after ``urdf_dynamics`` is applied.
        limits: enforce the URDF position limits (MuJoCo ``range`` + ``limited``, the
            default); False leaves every joint unlimited.

    Raises ValueError with MuJoCo's message when the URDF cannot be converted.
    """
    if not timestep > 0:
        raise ValueError('timestep must be positive, got {}'.format(timestep))
    gravity = np.asarray(gravity, dtype=float)
    if gravity.shape != (3,) or not np.all(np.isfinite(gravity)):
        raise ValueError('gravity must be 3 finite numbers, got {}'.format(gravity))
    integrators = {'euler': mujoco.mjtIntegrator.mjINT_EULER,
                   'rk4': mujoco.mjtIntegrator.mjINT_RK4,
                   'implicit': mujoco.mjtIntegrator.mjINT_IMPLICIT,
                   'implicitfast': mujoco.mjtIntegrator.mjINT_IMPLICITFAST}
    if integrator not in integrators:
        raise ValueError('unknown integrator {!r}; use one of {}'.format(
            integrator, sorted(integrators)))
    xml, _ = prepare_urdf(urdf_xml, base_dir, share_dirs)
    try:
        spec = mujoco.MjSpec.from_string(xml)
    except ValueError as error:
        raise ValueError('MuJoCo cannot read the URDF: {}'.format(error)) from None
    spec.compiler.fusestatic = False
    spec.compiler.discardvisual = False
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.option.timestep = timestep
    spec.option.gravity = gravity
    spec.option.integrator = integrators[integrator]
    per_joint = {'armature': armature if isinstance(armature, dict) else {},
                 'damping': damping or {}, 'frictionloss': frictionloss or {}}
    names = {joint.name for joint in spec.joints}
    for what, values in per_joint.items():
        unknown = sorted(set(values) - names)
        if unknown:
            raise ValueError('{} names joints the model lacks: {}'.format(what, unknown))
    for joint in spec.joints:
        if not urdf_dynamics:
            joint.damping = np.zeros_like(np.atleast_1d(joint.damping))
            joint.frictionloss = 0.0
        joint.armature = (per_joint['armature'].get(joint.name, 0.0)
                          if isinstance(armature, dict) else armature)
        if joint.name in per_joint['damping']:
            # MuJoCo >= 3.4 holds [linear, polynomial...] coefficients: only the linear one
            # is the viscous friction Fv (torque -Fv qd); the others stay 0.
            coefficients = np.zeros_like(np.atleast_1d(joint.damping), dtype=float)
            coefficients[0] = per_joint['damping'][joint.name]
            joint.damping = coefficients
        if joint.name in per_joint['frictionloss']:
            joint.frictionloss = per_joint['frictionloss'][joint.name]
        if not limits:
            joint.limited = mujoco.mjtLimited.mjLIMITED_FALSE
    if not collisions:
        for geom in spec.geoms:
            geom.contype = 0
            geom.conaffinity = 0
    if not mimic_constraints:
        for equality in list(spec.equalities):
            if equality.type == mujoco.mjtEq.mjEQ_JOINT:
                spec.delete(equality)
    try:
        return spec.compile()
    except ValueError as error:
        raise ValueError('MuJoCo cannot compile the URDF: {}'.format(error)) from None


def joint_addresses(model, joint_names):
    """Return the (qpos, dof) addresses of named 1-DOF joints in a MuJoCo model."""
    qpos, dof = [], []
    for name in joint_names:
        joint_id = mujoco.mj_name2id(model, mujoco.mjtObj.mjOBJ_JOINT, name)
        if joint_id < 0:
            raise ValueError('joint {!r} is not in the simulated model'.format(name))
        if int(model.jnt_type[joint_id]) not in (int(mujoco.mjtJoint.mjJNT_HINGE),
                                                 int(mujoco.mjtJoint.mjJNT_SLIDE)):
            raise ValueError('joint {!r} is not a 1-DOF joint'.format(name))
        qpos.append(int(model.jnt_qposadr[joint_id]))
        dof.append(int(model.jnt_dofadr[joint_id]))
    return np.array(qpos, dtype=int), np.array(dof, dtype=int)


def default_initial_positions(joints):
    """Return 0 for each joint whose limits allow it, else the middle of its range."""
    positions = []
    for joint in joints:
        if joint.lower <= 0.0 <= joint.upper:
            positions.append(0.0)
        else:
            positions.append(0.5 * (joint.lower + joint.upper))
    return np.array(positions)


def check_efforts(values, count, what='effort command'):
    """Return values as a float array of length count, or raise ValueError (wrong size, NaN)."""
    values = np.asarray(values, dtype=float)
    if values.shape != (count,):
        raise ValueError('{} has {} values, expected {}'.format(what, values.size, count))
    if not np.all(np.isfinite(values)):
        raise ValueError('{} contains NaN or Inf: {}'.format(what, values.tolist()))
    return values


class Simulation:
    """A fixed-base robot in MuJoCo driven by joint efforts, without any ROS.

    ``joints`` lists every simulated moving joint (the order of positions, velocities and
    efforts); ``command_joints`` the order in which effort commands arrive. A command is
    applied on every step until it is older than ``command_timeout`` seconds of simulated time,
    then the joints get zero effort (as a drive with a command watchdog would do).
    """

    def __init__(self, model, joints, command_joints=None, command_timeout=0.1,
                 effort_limits=None):
        """Create the MuJoCo data for ``model`` and the joint/command index maps."""
        self.model = model
        self.data = mujoco.MjData(model)
        self.joint_names = list(joints)
        self.command_joints = list(self.joint_names if command_joints is None
                                   else command_joints)
        unknown = sorted(set(self.command_joints) - set(self.joint_names))
        if unknown:
            raise ValueError('command joints not in the robot: {}'.format(unknown))
        if len(set(self.command_joints)) != len(self.command_joints):
            raise ValueError('command joints listed twice: {}'.format(self.command_joints))
        self._qpos, self._dof = joint_addresses(model, self.joint_names)
        _, self._command_dof = joint_addresses(model, self.command_joints)
        self.command_timeout = float(command_timeout)
        if effort_limits is None:
            effort_limits = np.full(len(self.command_joints), np.inf)
        self.effort_limits = np.abs(np.asarray(effort_limits, dtype=float))
        if self.effort_limits.shape != (len(self.command_joints),):
            raise ValueError('need one effort limit per command joint')
        self.steps = 0
        self.clamp_count = 0
        self._command = None
        self._command_time = -np.inf

    @property
    def timestep(self):
        """Return the physics step in seconds."""
        return float(self.model.opt.timestep)

    @property
    def time(self):
        """Return simulated time in seconds (step count times timestep, no drift)."""
        return self.steps * self.timestep

    @property
    def positions(self):
        """Return joint positions in ``joint_names`` order."""
        return self.data.qpos[self._qpos].copy()

    @property
    def velocities(self):
        """Return joint velocities in ``joint_names`` order."""
        return self.data.qvel[self._dof].copy()

    @property
    def efforts(self):
        """Return the efforts applied in the last step, in ``joint_names`` order."""
        return self.data.qfrc_applied[self._dof].copy()

    @property
    def command_age(self):
        """Return the age of the last command in simulated seconds (inf when none)."""
        return self.time - self._command_time

    def set_state(self, positions, velocities=None):
        """Set joint positions (and velocities, default zero) in ``joint_names`` order."""
        positions = check_efforts(positions, len(self.joint_names), 'positions')
        velocities = np.zeros_like(positions) if velocities is None else check_efforts(
            velocities, len(self.joint_names), 'velocities')
        self.data.qpos[self._qpos] = positions
        self.data.qvel[self._dof] = velocities
        mujoco.mj_forward(self.model, self.data)

    def set_command(self, efforts):
        """Store an effort command in ``command_joints`` order (ValueError if invalid)."""
        self._command = check_efforts(efforts, len(self.command_joints))
        self._command_time = self.time

    @property
    def command_is_fresh(self):
        """Return True when a command exists and is not older than ``command_timeout``."""
        return self._command is not None and self.command_age <= self.command_timeout

    def step(self):
        """Advance one physics step; return the efforts applied (in ``command_joints`` order).

        The applied efforts are the last command clamped to the effort limits while it is
        fresh, zero otherwise.
        """
        if self.command_is_fresh:
            applied = np.clip(self._command, -self.effort_limits, self.effort_limits)
            if np.any(applied != self._command):
                self.clamp_count += 1
        else:
            applied = np.zeros(len(self.command_joints))
        self.data.qfrc_applied[:] = 0.0
        self.data.qfrc_applied[self._command_dof] = applied
        mujoco.mj_step(self.model, self.data)
        self.steps += 1
        return applied
