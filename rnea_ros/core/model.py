"""The frozen rigid-body model: a kinematic tree built once from a URDF (or any link/joint list).

Building a model (Featherstone's ``model`` structure of seed 000, Pinocchio's ``Model``):

1. The URDF is read into :class:`LinkSpec` / :class:`JointSpec` records (any other source, such
   as a modified Denavit-Hartenberg table, can produce the same records).
2. The tree is ordered depth first from the root link, children in document order.
3. Fixed joints are merged: a link hanging on a fixed joint is lumped into the nearest body
   upstream (its inertia moved by the parallel-axis theorem), and remembers its pose in that
   body, so that external wrenches on it can be moved there too.  With a fixed base, links fixed
   to the root belong to the world and carry no dynamics.
4. Each moving joint makes one body.  Per body the model stores, as flat numpy arrays: the parent
   index ``parent`` (-1 = world), the joint ``kind``, its first index in q and in v, the
   placement ``XT`` (rotation parent_R_joint and translation), the joint axis, and the spatial
   inertia about the body origin (mass m, first moment h = m c, rotational inertia about origin).

The model is read-only after construction; per-call results live in a :class:`Workspace`.
"""

from dataclasses import dataclass, field
import math

import numpy as np

from rnea_ros.core import joints as jt
from rnea_ros.core.spatial import rpy_to_matrix, skew

# Layout of one row of RobotModel.reals (per body); ARMATURE is the rotor inertia of its joint.
R_T, P_T, AXIS, MASS, H, I_O, ARMATURE, NREAL = 0, 9, 12, 15, 16, 19, 28, 29
# Layout of one row of RobotModel.ints (per body).
PARENT, KIND, IQ, IV, AXIS_CODE, NINT = 0, 1, 2, 3, 4, 5
GENERAL_AXIS = 6   # AXIS_CODE: 0-2 = +x, +y, +z; 3-5 = -x, -y, -z; 6 = any other axis

_DEFAULT_GRAVITY = (0.0, 0.0, -9.81)
COULOMB_BAND = 0.01   # default |qd| (rad/s or m/s) below which Coulomb friction is linear


@dataclass
class LinkSpec:
    """A link: mass, centre of mass and rotational inertia about the COM, in link axes."""

    name: str
    mass: float = 0.0
    com: tuple = (0.0, 0.0, 0.0)
    inertia: np.ndarray = field(default_factory=lambda: np.zeros((3, 3)))


@dataclass
class JointSpec:
    """A joint: the pose of its frame (= child link frame at q = 0) in the parent link frame."""

    name: str
    type: str  # noqa: A003 - the URDF attribute's name
    parent: str
    child: str
    rotation: np.ndarray = field(default_factory=lambda: np.eye(3))
    translation: tuple = (0.0, 0.0, 0.0)
    axis: tuple = (1.0, 0.0, 0.0)
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf
    mimic: tuple = None        # (driver joint, multiplier, offset)
    damping: float = 0.0
    friction: float = 0.0


def _finite(values, what):
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f'{what} is not finite: {arr.tolist()}')
    return arr


def _check_link(link):
    mass = float(_finite(link.mass, f"mass of link '{link.name}'"))
    com = _finite(link.com, f"centre of mass of link '{link.name}'").reshape(3)
    inertia = _finite(link.inertia, f"inertia of link '{link.name}'").reshape(3, 3)
    if mass < 0.0:
        raise ValueError(f"link '{link.name}' has negative mass {mass}")
    if not np.allclose(inertia, inertia.T, rtol=0.0, atol=1e-12 + 1e-9 * np.abs(inertia).max()):
        raise ValueError(f"inertia of link '{link.name}' is not symmetric")
    # Real URDFs carry rounding noise: tiny negative eigenvalues (< 1e-6 kg m^2) pass.
    if np.linalg.eigvalsh(inertia).min() < -1e-6 * max(1.0, np.abs(inertia).max()):
        raise ValueError(f"inertia of link '{link.name}' is not positive semi-definite: "
                         f'eigenvalues {np.linalg.eigvalsh(inertia).tolist()}')
    return mass, com, inertia


def _axis_code(axis):
    """Return 0-5 for a joint axis along +-x, +-y, +-z (fast kernels), else GENERAL_AXIS."""
    for k in range(3):
        for sign, code in ((1.0, k), (-1.0, k + 3)):
            if np.array_equal(axis, sign * np.eye(3)[k]):
                return code
    return GENERAL_AXIS


def workspace_size(nb):
    """Return the length of a workspace buffer: RNEA rows (nb+1) x 36, ABA rows (nb+2) x 132."""
    return (nb + 1) * 36 + (nb + 2) * 132


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
        # One buffer (one kernel argument): the RNEA rows, then the articulated-body rows.
        self.buffer = np.zeros(workspace_size(nb))
        self.data = self.buffer[:(nb + 1) * 36].reshape(nb + 1, 36)
        self.aba = self.buffer[(nb + 1) * 36:].reshape(nb + 2, 132)   # ABA and its scratch rows
        self.fext = self.data[:nb, 30:36]
        self.a0 = self.data[nb, :6]
        self.custom = False           # True while f_ext or a_0 differ from the defaults
        self.reset()

    def reset(self):
        """Clear external wrenches and set a_0 to the default gravity (0, 0, -9.81)."""
        self.fext[:] = 0.0
        self.a0[:] = (0.0, 0.0, -_DEFAULT_GRAVITY[2], 0.0, 0.0, 0.0)
        self.custom = False

    @property
    def body_forces(self):
        """Return the (nbodies, 6) body forces f_i of the last call, [force, torque]."""
        return self.data[:self.nbodies, 24:30]


class RobotModel:
    """A frozen kinematic tree with spatial inertias flattened into arrays (see module doc)."""

    def __init__(self, links, joints, floating_base=False, joint_names=None, name='robot',
                 friction_viscous=None, friction_coulomb=None, armature=None,
                 friction_from_urdf=False, coulomb_band=COULOMB_BAND):
        """Build from LinkSpec and JointSpec lists; prefer the ``from_*`` constructors.

        Joint friction and rotor inertia (seed 004 eq. 31), added to every algorithm:
        ``tau_i += Fs_i sign(qd_i) + Fv_i qd_i + Ia_i qdd_i``.  ``friction_viscous`` (Fv),
        ``friction_coulomb`` (Fs) and ``armature`` (Ia) map joint names to values (others 0);
        ``friction_from_urdf`` takes Fv and Fs from each joint's ``<dynamics damping friction>``
        (explicit values win).  sign(qd) is linear inside |qd| < ``coulomb_band`` (rad/s or m/s)
        so that commands do not chatter around zero velocity.
        """
        self.name = name
        self.floating_base = bool(floating_base)
        links = list(links)
        joints = list(joints)
        link_by_name = {}
        for link in links:
            if link.name in link_by_name:
                raise ValueError(f"link '{link.name}' is defined twice")
            link_by_name[link.name] = _check_link(link)
        joint_by_child, children = {}, {name: [] for name in link_by_name}
        seen = set()
        for joint in joints:
            if joint.name in seen:
                raise ValueError(f"joint '{joint.name}' is defined twice")
            seen.add(joint.name)
            for role, link in (('parent', joint.parent), ('child', joint.child)):
                if link not in link_by_name:
                    raise ValueError(f"joint '{joint.name}' names {role} link '{link}', "
                                     'which is not defined')
            if joint.child in joint_by_child:
                raise ValueError(f"link '{joint.child}' is the child of two joints "
                                 f"('{joint_by_child[joint.child].name}' and '{joint.name}'): "
                                 'closed loops are not a tree')
            joint_by_child[joint.child] = joint
            children[joint.parent].append(joint)
        roots = [name for name in link_by_name if name not in joint_by_child]
        if len(roots) != 1:
            raise ValueError('the robot must have exactly one root link, found '
                             f'{len(roots)}: {roots[:5]}' if roots else
                             'the robot has no root link: its joints form a loop')
        self.root_link = roots[0]

        # Depth-first pre-order of the links, children in document order.
        order, stack, visited = [], [self.root_link], set()
        while stack:
            link = stack.pop()
            if link in visited:
                raise ValueError(f"link '{link}' is reached twice: the joints form a loop")
            visited.add(link)
            order.append(link)
            stack.extend(j.child for j in reversed(children[link]))
        for lk in link_by_name:
            if lk not in visited:
                raise ValueError(f"link '{lk}' is not connected to the root '{self.root_link}'")

        # One body per moving joint (plus the free-flyer base); fixed joints are merged.
        parent, kind, placement_R, placement_p, axes, body_links, moving = ([] for _ in range(7))
        link_body = {}                    # link -> (body, body_R_link, link origin in body)
        if self.floating_base:
            parent.append(-1)
            kind.append(jt.FREE_FLYER)
            placement_R.append(np.eye(3))
            placement_p.append(np.zeros(3))
            axes.append(np.zeros(3))
            body_links.append(self.root_link)
            link_body[self.root_link] = (0, np.eye(3), np.zeros(3))
        else:
            link_body[self.root_link] = (-1, np.eye(3), np.zeros(3))
        for link in order[1:]:
            joint = joint_by_child[link]
            body, R_bl, p_bl = link_body[joint.parent]
            R_j = _finite(joint.rotation, f"origin of joint '{joint.name}'").reshape(3, 3)
            p_j = _finite(joint.translation, f"origin of joint '{joint.name}'").reshape(3)
            if joint.type == 'fixed':
                link_body[link] = (body, R_bl @ R_j, p_bl + R_bl @ p_j)
                continue
            k = jt.kind_from_urdf(joint.type, joint.name)
            axis = _finite(joint.axis, f"axis of joint '{joint.name}'").reshape(3)
            norm = np.linalg.norm(axis)
            if norm < 1e-12:
                raise ValueError(f"joint '{joint.name}' has a zero axis")
            parent.append(body)
            kind.append(k)
            placement_R.append(R_bl @ R_j)
            placement_p.append(p_bl + R_bl @ p_j)
            axes.append(axis / norm)
            body_links.append(link)
            moving.append(joint)
            link_body[link] = (len(parent) - 1, np.eye(3), np.zeros(3))
        moving_by_child = {j.child: j for j in moving}
        inertia = [[0.0, np.zeros(3), np.zeros((3, 3))] for _ in parent]

        # Lump every link's inertia into its body (parallel-axis theorem).
        for lk, (b, R, p) in link_body.items():
            m, c, Ic = link_by_name[lk]
            if b < 0 or (m == 0.0 and not Ic.any()):
                continue
            c_b = R @ c + p
            C = skew(c_b)
            acc = inertia[b]
            acc[0] += m
            acc[1] = acc[1] + m * c_b
            acc[2] = acc[2] + R @ Ic @ R.T - m * C @ C

        # Joint order (q/v order): tree order unless the user gives another one.
        tree_names = [j.name for j in moving]
        if joint_names is None:
            joint_names = tree_names
        else:
            joint_names = list(joint_names)
            if sorted(joint_names) != sorted(tree_names):
                missing = sorted(set(tree_names) - set(joint_names))
                extra = sorted(set(joint_names) - set(tree_names))
                raise ValueError(f'joint_names must list every moving joint once; missing: '
                                 f'{missing}, unknown or fixed: {extra}')
        self.joint_names = tuple(joint_names)
        self.njoints = len(joint_names)
        joint_index = {n: i for i, n in enumerate(joint_names)}
        off_q, off_v = (7, 6) if self.floating_base else (0, 0)
        self.nq = off_q + self.njoints
        self.nv = off_v + self.njoints
        self.nbodies = len(parent)

        ints = np.zeros((self.nbodies, NINT), dtype=np.int64)
        reals = np.zeros((self.nbodies, NREAL))
        for b in range(self.nbodies):
            ints[b, PARENT] = parent[b]
            ints[b, KIND] = kind[b]
            if kind[b] == jt.FREE_FLYER:
                ints[b, IQ], ints[b, IV] = 0, 0
            else:
                joint = moving_by_child[body_links[b]]
                ints[b, IQ] = off_q + joint_index[joint.name]
                ints[b, IV] = off_v + joint_index[joint.name]
            ints[b, AXIS_CODE] = _axis_code(axes[b])
            reals[b, R_T:R_T + 9] = placement_R[b].ravel()
            reals[b, P_T:P_T + 3] = placement_p[b]
            reals[b, AXIS:AXIS + 3] = axes[b]
            reals[b, MASS] = inertia[b][0]
            reals[b, H:H + 3] = inertia[b][1]
            reals[b, I_O:I_O + 9] = inertia[b][2].ravel()
        # The kernels take both tables as one writable float64 array, ``kernel_model``: reals,
        # then ints stored bit for bit (every array argument costs a numba call about 50 ns, a
        # read-only one 100 ns).  Users see the two tables as read-only views into it.
        self.kernel_model = np.concatenate([reals.ravel(), ints.ravel().view(np.float64)])
        self.reals = self.kernel_model[:reals.size].reshape(reals.shape)
        self.ints = self.kernel_model[reals.size:].view(np.int64).reshape(ints.shape)
        self.body_links = tuple(body_links)
        self.link_body = link_body
        self.link_names = tuple(link_by_name)
        self.total_mass = float(sum(v[0] for v in link_by_name.values()))

        by_name = {j.name: j for j in moving}
        ordered = [by_name[n] for n in joint_names]
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
        self.coulomb_band = float(coulomb_band)
        if not self.coulomb_band > 0.0:
            raise ValueError(f'coulomb_band must be positive, got {coulomb_band}')
        fv = self.urdf_damping.copy() if friction_from_urdf else np.zeros(self.njoints)
        fs = self.urdf_friction.copy() if friction_from_urdf else np.zeros(self.njoints)
        ia = np.zeros(self.njoints)
        for arr, values, what in ((fv, friction_viscous, 'friction_viscous'),
                                  (fs, friction_coulomb, 'friction_coulomb'),
                                  (ia, armature, 'armature')):
            for joint, value in (values or {}).items():
                if joint not in joint_index:
                    raise ValueError(f"{what} names joint '{joint}', which is not a moving "
                                     f"joint of robot '{name}'")
                value = float(value)
                if not (np.isfinite(value) and value >= 0.0):
                    raise ValueError(f"{what}['{joint}'] must be finite and >= 0, got {value}")
                arr[joint_index[joint]] = value
        self.friction_viscous, self.friction_coulomb, self.armature = fv, fs, ia
        for b in range(self.nbodies):
            if self.ints[b, KIND] != jt.FREE_FLYER:
                self.reals[b, ARMATURE] = ia[self.ints[b, IV] - off_v]
        self.has_joint_terms = bool(fv.any() or fs.any() or ia.any())
        mimic = []
        self.warnings = []
        for j in ordered:
            if j.mimic is not None:
                driver, mult, offset = j.mimic
                if driver not in joint_index:
                    self.warnings.append(f"joint '{j.name}' mimics '{driver}', which is not a "
                                         'moving joint: it is treated as an independent joint')
                    continue
                mimic.append((j.name, driver, float(mult), float(offset)))
        self.mimic = tuple(mimic)
        for arr in (self.ints, self.reals, self.joint_body, self.effort_limits,
                    self.velocity_limits, self.lower_limits, self.upper_limits,
                    self.urdf_damping, self.urdf_friction, self.friction_viscous,
                    self.friction_coulomb, self.armature):
            arr.flags.writeable = False
        self.default_workspace = Workspace(self)

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
        coulomb_band (see the class).
        """
        from rnea_ros.core.urdf import parse_urdf
        name, links, joints = parse_urdf(xml)
        return cls(links, joints, floating_base=floating_base, joint_names=joint_names,
                   name=name, **options)

    @classmethod
    def from_urdf_file(cls, path, floating_base=False, joint_names=None, **options):
        """Build a model from a URDF file (options as for from_urdf_string)."""
        try:
            with open(path, encoding='utf-8') as f:
                xml = f.read()
        except OSError as e:
            raise ValueError(f'cannot read URDF file {path!r}: {e.strerror}') from None
        return cls.from_urdf_string(xml, floating_base=floating_base, joint_names=joint_names,
                                    **options)

    @classmethod
    def from_mdh(cls, table, floating_base=False, **options):
        """Build a model from Khalil's modified Denavit-Hartenberg table (object or file path).

        See :mod:`rnea_ros.khalil.mdh`; Ia, Fs, Fv of the table become armature and friction.
        """
        from rnea_ros.khalil.mdh import model_from_mdh
        return model_from_mdh(table, floating_base=floating_base, **options)

    def create_workspace(self):
        """Return a new workspace for this model (one per thread that calls the algorithms)."""
        return Workspace(self)

    def __repr__(self):
        """Summarise the model."""
        base = 'floating' if self.floating_base else 'fixed'
        return (f'RobotModel({self.name!r}, {base} base, nq={self.nq}, nv={self.nv}, '
                f'bodies={self.nbodies}, mass={self.total_mass:.3f} kg)')


def spec_from_urdf_origin(origin):
    """Return (rotation, translation) of a urdf_parser_py Pose (None = identity)."""
    if origin is None:
        return np.eye(3), (0.0, 0.0, 0.0)
    xyz = origin.xyz if origin.xyz is not None else (0.0, 0.0, 0.0)
    rpy = origin.rpy if origin.rpy is not None else (0.0, 0.0, 0.0)
    return rpy_to_matrix(rpy), tuple(float(v) for v in xyz)
