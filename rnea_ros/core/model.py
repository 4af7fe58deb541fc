"""The frozen rigid-body model (Featherstone's ``model``, RBDA §4.1; Pinocchio's ``Model``).

Building a model from :class:`~rnea_ros.core.specs.LinkSpec` / ``JointSpec`` records (from a
URDF, a Khalil table, a payload...) follows the steps of :mod:`rnea_ros.core.tree`: index and
order the tree, merge fixed joints, lump inertias, choose the joint order.  Each moving joint
makes one body.  Per body the model stores, as flat numpy arrays (columns in
:mod:`rnea_ros.core.layout`): the parent index ``parent`` (-1 = world), the joint ``kind``, its
first index in q and in v, the placement ``XT`` (rotation parent_R_joint and translation), the
joint axis, and the spatial inertia about the body origin (mass m, first moment h = m c,
rotational inertia about origin).

The model is read-only after construction; per-call results live in a :class:`Workspace`
(Pinocchio's ``Data``).
"""

import numpy as np

from rnea_ros.core import friction as fr
from rnea_ros.core import joints as jt
from rnea_ros.core import tree
from rnea_ros.core.layout import (ARMATURE, AXIS, AXIS_CODE, B_N, COULOMB_BAND, DEFAULT_GRAVITY,
                                  H, I_O, IQ, IV, KIND, MASS, NINT, NREAL, P_T, PARENT, R_T, W_F,
                                  W_N, W_X, workspace_size)
from rnea_ros.core.sensor import SENSOR_OPTIONS
from rnea_ros.core.urdf import parse_urdf, read_urdf_file


# Joint-term options of RobotModel (maps joint -> value, then the law's settings).
_JOINT_OPTIONS = ('friction_viscous', 'friction_coulomb', 'armature', 'friction_viscous_negative',
                  'friction_coulomb_negative', 'friction_stribeck', 'effort_offset',
                  'friction_law', 'stribeck_velocity', 'friction_coulomb_band',
                  'friction_stribeck_velocity') + SENSOR_OPTIONS


class Workspace:
    """Per-call results of the algorithms (Pinocchio's ``Data``): one per thread of use.

    ``data`` is one (nbodies + 1, 36) array: per body the transform to its parent R(9) p(3),
    velocity v(6), acceleration a(6), body force f(6) and external wrench f_ext(6); the last row
    holds a_0 = a_base - a_g.  ``aba`` holds the articulated-body algorithm's per-body results.
    Both are views into ``buffer``, the one array the kernels take (few arguments, fast calls).
    """

    def __init__(self, model):
        """Allocate the arrays for a model; nothing is allocated per call afterwards."""
        self.nbodies = nb = model.nbodies
        # One buffer (one kernel argument): the RNEA rows, the articulated-body rows, then the
        # kinematics rows (Coriolis matrix, frame Jacobians; layout.K_*, D_*).
        self.buffer = np.zeros(workspace_size(nb))
        self.data = self.buffer[:(nb + 1) * W_N].reshape(nb + 1, W_N)
        start = (nb + 1) * W_N
        self.aba = self.buffer[start:start + (nb + 2) * B_N].reshape(nb + 2, B_N)  # + scratch
        self.fext = self.data[:nb, W_X:W_X + 6]
        self.a0 = self.data[nb, :6]
        self.custom = False           # True while f_ext or a_0 differ from the defaults
        self.reset()

    def reset(self):
        """Clear external wrenches and set a_0 = -a_g for the default gravity (layout)."""
        self.fext[:] = 0.0
        self.a0[:3] = np.negative(DEFAULT_GRAVITY)
        self.a0[3:] = 0.0
        self.custom = False

    @property
    def body_forces(self):
        """Return the (nbodies, 6) body forces f_i of the last call, [force, torque]."""
        return self.data[:self.nbodies, W_F:W_F + 6]


class RobotModel:
    """A frozen kinematic tree with spatial inertias flattened into arrays (see module doc)."""

    def __init__(self, links, joints, floating_base=False, joint_names=None, name='robot',
                 friction_viscous=None, friction_coulomb=None, armature=None,
                 friction_from_urdf=False, coulomb_band=COULOMB_BAND, **friction):
        """Build from LinkSpec and JointSpec lists; prefer the ``from_*`` constructors.

        Joint friction and rotor inertia (Khalil 2010 §3, eq. 31), added to every algorithm:
        ``tau_i += Fs_i sign(qd_i) + Fv_i qd_i + Ia_i qdd_i``.  ``friction_viscous`` (Fv),
        ``friction_coulomb`` (Fs) and ``armature`` (Ia) map joint names to values (others 0);
        ``friction_from_urdf`` takes Fv and Fs from each joint's ``<dynamics damping friction>``
        (explicit values win).  sign(qd) is linear inside |qd| < ``coulomb_band`` (rad/s or m/s)
        so that commands do not chatter around zero velocity.

        ``friction`` holds the rest of the law of :mod:`rnea_ros.core.friction`:
        ``friction_viscous_negative`` and ``friction_coulomb_negative`` (Fv-, Fs- for qd < 0;
        a joint not named there uses its Fv, Fs both ways), ``friction_stribeck`` (Fx >= 0),
        ``effort_offset`` (a constant effort per joint, any sign), ``friction_law`` ('linear'
        or 'tanh') and ``stribeck_velocity``.  ``coulomb_band`` and ``stribeck_velocity`` are the
        velocity scales v_s and v_st of every joint; ``friction_coulomb_band`` and
        ``friction_stribeck_velocity`` (joint -> value, > 0) set them joint by joint (the others
        keep the common value).  ``coulomb_bands`` and ``stribeck_velocities`` hold them per
        joint (model order).  ``sensor_crosstalk_u`` and ``sensor_crosstalk_w`` (joint ->
        coefficient, any sign) are a joint torque sensor's crosstalk from the bending moments
        (:mod:`rnea_ros.core.sensor`), added by inverse dynamics; ``sensor_crosstalk`` holds
        them (njoints, 2).
        """
        self.name = name
        self.floating_base = bool(floating_base)
        # Steps 1-2 of the module doc: index and order the description.
        link_by_name, joint_by_child, children = tree.index_description(links, joints)
        self.root_link = tree.root_link(link_by_name, joint_by_child)
        order = tree.tree_order(self.root_link, children, link_by_name)
        # Step 3: one body per moving joint (plus the free-flyer base); fixed joints merged.
        bodies, link_body = tree.merge_fixed_joints(self.root_link, order, joint_by_child,
                                                    self.floating_base)
        inertia = tree.lumped_inertias(link_body, link_by_name, len(bodies.parent))
        tree.check_placements(bodies, inertia)
        # Step 4: joint order and the flat tables.
        self.joint_names = tree.joint_order(joint_names, bodies.moving)
        self.njoints = len(self.joint_names)
        joint_index = {n: i for i, n in enumerate(self.joint_names)}
        off_q, off_v = (7, 6) if self.floating_base else (0, 0)
        self.nq = off_q + self.njoints
        self.nv = off_v + self.njoints
        self.nbodies = len(bodies.parent)
        self._build_tables(bodies, inertia, joint_index, off_q, off_v)
        self.body_links = tuple(bodies.links)
        self.link_body = link_body
        self.link_names = tuple(link_by_name)
        self.total_mass = float(sum(v[0] for v in link_by_name.values()))
        by_name = {j.name: j for j in bodies.moving}
        ordered = [by_name[n] for n in self.joint_names]
        self._joint_records(ordered, link_body)
        self._joint_terms(joint_index, dict(friction_viscous=friction_viscous,
                                            friction_coulomb=friction_coulomb,
                                            armature=armature, **friction),
                          friction_from_urdf, coulomb_band, off_v)
        self.mimic, self.warnings = tree.mimic_pairs(ordered, joint_index)
        for arr in (self.ints, self.reals, self.joint_body, self.effort_limits,
                    self.velocity_limits, self.lower_limits, self.upper_limits,
                    self.urdf_damping, self.urdf_friction, self.friction_viscous,
                    self.friction_coulomb, self.armature, self.friction_table,
                    self.coulomb_bands, self.stribeck_velocities, self.sensor_crosstalk):
            arr.flags.writeable = False
        self.default_workspace = Workspace(self)

    def _build_tables(self, bodies, inertia, joint_index, off_q, off_v):
        """Fill ``ints`` and ``reals`` (one row per body, columns of :mod:`.layout`)."""
        ints = np.zeros((self.nbodies, NINT), dtype=np.int64)
        reals = np.zeros((self.nbodies, NREAL))
        for b in range(self.nbodies):
            ints[b, PARENT] = bodies.parent[b]
            ints[b, KIND] = bodies.kind[b]
            if bodies.kind[b] == jt.FREE_FLYER:
                ints[b, IQ], ints[b, IV] = 0, 0
            else:
                joint = bodies.joint[b]
                ints[b, IQ] = off_q + joint_index[joint.name]
                ints[b, IV] = off_v + joint_index[joint.name]
            ints[b, AXIS_CODE] = tree.axis_code(bodies.axis[b])
            reals[b, R_T:R_T + 9] = bodies.R[b].ravel()
            reals[b, P_T:P_T + 3] = bodies.p[b]
            reals[b, AXIS:AXIS + 3] = bodies.axis[b]
            reals[b, MASS] = inertia[b][0]
            reals[b, H:H + 3] = inertia[b][1]
            reals[b, I_O:I_O + 9] = inertia[b][2].ravel()
        # The kernels take both tables as one writable float64 array, ``kernel_model``: reals,
        # then ints stored bit for bit (every array argument costs a numba call about 50 ns, a
        # read-only one 100 ns).  Users see the two tables as read-only views into it.
        self.kernel_model = np.concatenate([reals.ravel(), ints.ravel().view(np.float64)])
        self.reals = self.kernel_model[:reals.size].reshape(reals.shape)
        self.ints = self.kernel_model[reals.size:].view(np.int64).reshape(ints.shape)

    def _joint_records(self, ordered, link_body):
        """Store per joint (model order) its type, links, body and URDF limits and dynamics."""
        self.joint_types = tuple(j.type for j in ordered)
        self.child_links = tuple(j.child for j in ordered)
        self.parent_links = tuple(j.parent for j in ordered)
        self.joint_body = np.array([link_body[j.child][0] for j in ordered], dtype=np.int64)
        self.effort_limits = np.array([j.effort for j in ordered], dtype=float)
        self.velocity_limits = np.array([j.velocity for j in ordered], dtype=float)
        self.lower_limits = np.array([j.lower for j in ordered], dtype=float)
        self.upper_limits = np.array([j.upper for j in ordered], dtype=float)
        self.urdf_damping = np.array([j.damping for j in ordered], dtype=float)
        self.urdf_friction = np.array([j.friction for j in ordered], dtype=float)

    def _joint_terms(self, joint_index, options, friction_from_urdf, coulomb_band, off_v):
        """Store the friction table (:mod:`.friction`), band, law and armature (into the table)."""
        unknown = set(options) - set(_JOINT_OPTIONS)
        if unknown:
            raise TypeError(f'unknown model options {sorted(unknown)}; friction options: '
                            f'{list(_JOINT_OPTIONS)}')
        self.coulomb_band = float(coulomb_band)
        if not self.coulomb_band > 0.0:
            raise ValueError(f'coulomb_band must be positive, got {coulomb_band}')
        self.friction_law = fr.check_law(options.get('friction_law') or 'linear')
        self.stribeck_velocity = float(options.get('stribeck_velocity')
                                       or fr.STRIBECK_VELOCITY)
        if not (np.isfinite(self.stribeck_velocity) and self.stribeck_velocity > 0.0):
            raise ValueError(f'stribeck_velocity must be positive, got {self.stribeck_velocity}')
        nj = self.njoints
        self.coulomb_bands = self._joint_scales(joint_index, 'friction_coulomb_band',
                                                options.get('friction_coulomb_band'),
                                                self.coulomb_band)
        self.stribeck_velocities = self._joint_scales(
            joint_index, 'friction_stribeck_velocity', options.get('friction_stribeck_velocity'),
            self.stribeck_velocity)
        urdf = friction_from_urdf
        arrays = {'friction_viscous': self.urdf_damping.copy() if urdf else np.zeros(nj),
                  'friction_coulomb': self.urdf_friction.copy() if urdf else np.zeros(nj)}
        for what in _JOINT_OPTIONS[:7]:
            if what.endswith('_negative'):     # default: the positive side, joint by joint
                arrays[what] = arrays[what[:-len('_negative')]].copy()
            arrays.setdefault(what, np.zeros(nj))
            arr, values = arrays[what], options.get(what)
            for joint, value in (values or {}).items():
                if joint not in joint_index:
                    raise ValueError(f"{what} names joint '{joint}', which is not a moving "
                                     f"joint of robot '{self.name}'")
                value = float(value)
                if not (np.isfinite(value) and (value >= 0.0 or what == 'effort_offset')):
                    raise ValueError(f"{what}['{joint}'] must be finite"
                                     f"{'' if what == 'effort_offset' else ' and >= 0'}, "
                                     f'got {value}')
                arr[joint_index[joint]] = value
        self.friction_table = fr.friction_table(
            nj, arrays['friction_viscous'], arrays['friction_coulomb'],
            arrays['friction_viscous_negative'], arrays['friction_coulomb_negative'],
            arrays['friction_stribeck'], arrays['effort_offset'])
        fv, fs, ia = arrays['friction_viscous'], arrays['friction_coulomb'], arrays['armature']
        self.friction_viscous, self.friction_coulomb, self.armature = fv, fs, ia
        for b in range(self.nbodies):
            if self.ints[b, KIND] != jt.FREE_FLYER:
                self.reals[b, ARMATURE] = ia[self.ints[b, IV] - off_v]
        self.sensor_crosstalk = np.zeros((nj, len(SENSOR_OPTIONS)))
        for k, what in enumerate(SENSOR_OPTIONS):      # any sign (rnea_ros.core.sensor)
            for joint, value in (options.get(what) or {}).items():
                if joint not in joint_index:
                    raise ValueError(f"{what} names joint '{joint}', which is not a moving "
                                     f"joint of robot '{self.name}'")
                value = float(value)
                if not np.isfinite(value):
                    raise ValueError(f"{what}['{joint}'] must be finite, got {value}")
                self.sensor_crosstalk[joint_index[joint], k] = value
        self.has_crosstalk = bool(self.sensor_crosstalk.any())
        self.has_joint_terms = bool(self.friction_table.any() or ia.any() or self.has_crosstalk)

    def _joint_scales(self, joint_index, what, values, common):
        """Return the per-joint velocity scales: ``common``, or the value a joint is given."""
        out = np.full(self.njoints, common)
        for joint, value in (values or {}).items():
            if joint not in joint_index:
                raise ValueError(f"{what} names joint '{joint}', which is not a moving joint "
                                 f"of robot '{self.name}'")
            value = float(value)
            if not (np.isfinite(value) and value > 0.0):
                raise ValueError(f"{what}['{joint}'] must be finite and > 0, got {value}")
            out[joint_index[joint]] = value
        return out

    def joint_term_options(self):
        """Return the options that rebuild this model's friction, armature and offsets.

        ``RobotModel.from_specs(links, joints, **model.joint_term_options())`` gives the same
        joint terms (for a model rebuilt with a payload, say).
        """
        names = self.joint_names
        t = self.friction_table
        columns = {'friction_viscous': t[:, fr.FV_POS], 'friction_coulomb': t[:, fr.FS_POS],
                   'friction_viscous_negative': t[:, fr.FV_NEG],
                   'friction_coulomb_negative': t[:, fr.FS_NEG],
                   'friction_stribeck': t[:, fr.FX], 'effort_offset': t[:, fr.OFF],
                   'armature': self.armature}
        out = {k: dict(zip(names, map(float, v))) for k, v in columns.items()}
        out.update(coulomb_band=self.coulomb_band, friction_law=self.friction_law,
                   stribeck_velocity=self.stribeck_velocity)
        for what, values, common in (('friction_coulomb_band', self.coulomb_bands,
                                      self.coulomb_band),
                                     ('friction_stribeck_velocity', self.stribeck_velocities,
                                      self.stribeck_velocity)):
            if np.any(values != common):
                out[what] = dict(zip(names, map(float, values)))
        if self.has_crosstalk:
            out.update({what: dict(zip(names, map(float, self.sensor_crosstalk[:, k])))
                        for k, what in enumerate(SENSOR_OPTIONS)})
        return out

    # -- constructors -------------------------------------------------------------------------

    @classmethod
    def from_specs(cls, links, joints, floating_base=False, joint_names=None, name='robot',
                   **options):
        """Build a model from LinkSpec and JointSpec lists (any description format)."""
        return cls(links, joints, floating_base=floating_base, joint_names=joint_names,
                   name=name, **options)

    @classmethod
    def from_urdf_string(cls, xml, floating_base=False, joint_names=None, **options):
        """Build a model from URDF XML text; raise ValueError if it is not a usable URDF.

        ``options``: friction_viscous, friction_coulomb, armature, friction_from_urdf,
        coulomb_band and the friction options of the class.
        """
        name, links, joints = parse_urdf(xml)
        return cls(links, joints, floating_base=floating_base, joint_names=joint_names,
                   name=name, **options)

    @classmethod
    def from_urdf_file(cls, path, floating_base=False, joint_names=None, **options):
        """Build a model from a URDF file (options as for from_urdf_string)."""
        return cls.from_urdf_string(read_urdf_file(path), floating_base=floating_base,
                                    joint_names=joint_names, **options)

    def create_workspace(self):
        """Return a new workspace for this model (one per thread that calls the algorithms)."""
        return Workspace(self)

    def __repr__(self):
        """Summarise the model."""
        base = 'floating' if self.floating_base else 'fixed'
        return (f'RobotModel({self.name!r}, {base} base, nq={self.nq}, nv={self.nv}, '
                f'bodies={self.nbodies}, mass={self.total_mass:.3f} kg)')
