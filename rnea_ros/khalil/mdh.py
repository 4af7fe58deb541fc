"""Khalil's modified Denavit-Hartenberg (MDH) tables of trees and closed loops (Khalil 2010 §2).

A table has one row per frame ``j`` (Khalil 2010 §2.1, Khalil and Kleinfinger 1986):

- ``a`` = a(j), the antecedent frame (0 = base), ``mu`` = 1 for a motorised joint, 0 passive,
  ``sigma`` = 0 revolute, 1 prismatic, 2 frame fixed on link a(j);
- ``gamma, b, alpha, d, theta, r``: the six geometric parameters of

      iTj = Rot(z, gamma) Tran(z, b) Rot(x, alpha) Tran(x, d) Rot(z, theta) Tran(z, r)   (1)

  The joint variable is q_j = sigma_bar_j theta_j + sigma_j r_j; in a numeric table the column
  of the joint variable holds a constant *offset*: theta_j = q_j + theta (revolute), r_j = q_j + r
  (prismatic);
- Khalil's standard inertial parameters of link j, in frame j about its origin O_j:
  ``XX XY XZ YY YZ ZZ`` (the inertia tensor jJj, XX = int (y^2 + z^2) dm, XY = -int x y dm),
  ``MX MY MZ`` (first moments MS_j = M_j times the centre of mass) and ``M`` (mass); ``Ia`` the
  rotor inertia, ``Fs``, ``Fv`` the Coulomb and viscous friction of joint j (eq. 31); optional
  ``K``, the stiffness of an elastic joint (eq. 69), and names ``name`` (joint), ``link``.

Closed loops (Khalil 2010 §2.2): frames 1..NL describe the equivalent tree (n = NL links, some may
be fixed frames with sigma = 2); frames NL+1..NJ are the B = NJ - NL cut joints k, defined on link
i = a(k); frames NJ+1..NJ+B are the frames k+B, fixed (sigma = 2) on link j = a(k+B) and aligned
with frame k when the loop is closed (eq. 3).  Cut frames carry no inertia.

:func:`model_from_mdh` turns the tree part into a :class:`rnea_ros.core.model.RobotModel`;
:func:`loop_constraints` returns the cut joints as loop-constraint data.
"""

import ast
import csv
from dataclasses import dataclass, fields, replace
import io
import math
import os

import numpy as np

from rnea_ros.core.model import RobotModel
from rnea_ros.core.spatial import rotx, rotz
from rnea_ros.core.specs import JointSpec, LinkSpec

GEOMETRY = ('gamma', 'b', 'alpha', 'd', 'theta', 'r')
INERTIA = ('XX', 'XY', 'XZ', 'YY', 'YZ', 'ZZ', 'MX', 'MY', 'MZ', 'M')
JOINT = ('Ia', 'Fs', 'Fv', 'K')
LIMITS = ('lower', 'upper', 'effort', 'velocity')
COLUMNS = ('j', 'a', 'mu', 'sigma') + GEOMETRY + INERTIA + JOINT
_INTS = ('j', 'a', 'mu', 'sigma')
_TEXT = ('name', 'link')
_URDF_UNLIMITED = 1e30


@dataclass(frozen=True)
class MDHFrame:
    """One row of Khalil's table: frame j, its geometry (eq. 1) and link j's parameters."""

    j: int
    a: int
    mu: int = 0
    sigma: int = 0
    gamma: float = 0.0
    b: float = 0.0
    alpha: float = 0.0
    d: float = 0.0
    theta: float = 0.0
    r: float = 0.0
    XX: float = 0.0
    XY: float = 0.0
    XZ: float = 0.0
    YY: float = 0.0
    YZ: float = 0.0
    ZZ: float = 0.0
    MX: float = 0.0
    MY: float = 0.0
    MZ: float = 0.0
    M: float = 0.0
    Ia: float = 0.0
    Fs: float = 0.0
    Fv: float = 0.0
    K: float = 0.0
    lower: float = -math.inf
    upper: float = math.inf
    effort: float = math.inf
    velocity: float = math.inf
    name: str = ''
    link: str = ''

    @property
    def joint_name(self):
        """Return the joint's name (``joint<j>`` unless given)."""
        return self.name or f'joint{self.j}'

    @property
    def link_name(self):
        """Return the name of link j (``link<j>`` unless given)."""
        return self.link or f'link{self.j}'

    def fixed_transform(self):
        """Return the constant 4x4 part X of iTj = X Rot(z, q) (revolute) or X Tran(z, q)."""
        return mdh_transform(self.gamma, self.b, self.alpha, self.d, self.theta, self.r)

    def transform(self, q=0.0):
        """Return iTj (eq. 1) for joint variable q (ignored when sigma = 2)."""
        theta, r = self.theta, self.r
        if self.sigma == 0:
            theta += q
        elif self.sigma == 1:
            r += q
        return mdh_transform(self.gamma, self.b, self.alpha, self.d, theta, r)

    def inertia_about_origin(self):
        """Return Khalil's (M, MS, J): mass, first moments and inertia about O_j (eq. 11)."""
        J = np.array([[self.XX, self.XY, self.XZ],
                      [self.XY, self.YY, self.YZ],
                      [self.XZ, self.YZ, self.ZZ]])
        return self.M, np.array([self.MX, self.MY, self.MZ]), J

    def has_dynamics(self):
        """Return True if the row carries any inertial, rotor or friction parameter."""
        return any(getattr(self, k) != 0.0 for k in INERTIA + ('Ia', 'Fs', 'Fv'))


@dataclass(frozen=True)
class LoopConstraint:
    """A cut joint k of the equivalent tree (Khalil 2010 §2.2, Figure 2).

    Frame k (``cut``, variable q_k, antecedent link i) and frame k+B (``aligned``, fixed on link
    j) coincide when the loop is closed: k+B T j ... i T k = I4 (eq. 3).
    """

    cut: MDHFrame
    aligned: MDHFrame

    @property
    def i(self):
        """Return the link number i that carries the cut joint's frame k."""
        return self.cut.a

    @property
    def j(self):
        """Return the link number j on which frame k+B is fixed."""
        return self.aligned.a


def mdh_transform(gamma, b, alpha, d, theta, r):
    """Return the 4x4 iTj of eq. (1).

    iTj = Rot(z, gamma) Tran(z, b) Rot(x, alpha) Tran(x, d) Rot(z, theta) Tran(z, r).
    """
    T = np.eye(4)
    T[:3, :3] = rotz(gamma) @ rotx(alpha) @ rotz(theta)
    cg, sg = math.cos(gamma), math.sin(gamma)
    ca, sa = math.cos(alpha), math.sin(alpha)
    # origin: Rot(z,g) [ (d, 0, b) + Rot(x,a) (0, 0, r) ] with Rot(z, theta) leaving z fixed
    p = np.array([d, -sa * r, b + ca * r])
    T[:3, 3] = np.array([cg * p[0] - sg * p[1], sg * p[0] + cg * p[1], p[2]])
    return T


def khalil_to_com(M, MS, J):
    """Return (mass, com, inertia about the COM) of Khalil's (M, MS, J about the origin)."""
    MS = np.asarray(MS, dtype=float)
    J = np.asarray(J, dtype=float)
    if M == 0.0:
        if np.any(MS != 0.0):
            raise ValueError('a link with M = 0 must have MX = MY = MZ = 0')
        return 0.0, np.zeros(3), J.copy()
    c = MS / M
    return float(M), c, J - M * (np.dot(c, c) * np.eye(3) - np.outer(c, c))


def com_to_khalil(mass, com, inertia):
    """Return Khalil's (M, MS, J about the origin) of (mass, com, inertia about the COM)."""
    c = np.asarray(com, dtype=float)
    J = np.asarray(inertia, dtype=float) + mass * (np.dot(c, c) * np.eye(3) - np.outer(c, c))
    return float(mass), mass * c, J


@dataclass(frozen=True)
class MDHTable:
    """Khalil's table of a tree or closed-loop robot: NF = 2 NJ - NL frames (Khalil 2010 §2)."""

    frames: tuple
    NL: int
    NJ: int
    name: str = 'robot'
    base: str = 'base_link'

    def __post_init__(self):
        """Check the numbering, antecedents, joint types and loop frames."""
        object.__setattr__(self, 'frames', tuple(self.frames))
        _check_table(self)

    @property
    def B(self):
        """Return the number of independent closed loops B = L - n (Khalil 2010 §2.2)."""
        return self.NJ - self.NL

    @property
    def tree_frames(self):
        """Return the frames 1..NL of the equivalent tree structure."""
        return self.frames[:self.NL]

    @property
    def joints(self):
        """Return the moving tree frames (sigma 0 or 1) in table order: the q_tr order."""
        return tuple(f for f in self.tree_frames if f.sigma != 2)

    @property
    def joint_names(self):
        """Return the names of the tree joint variables q_tr, in table order."""
        return tuple(f.joint_name for f in self.joints)

    @property
    def active(self):
        """Return a boolean mask over q_tr: True for motorised joints (mu = 1)."""
        return np.array([f.mu == 1 for f in self.joints], dtype=bool)

    def frame(self, j):
        """Return frame j (1-based)."""
        return self.frames[j - 1]

    def link_name(self, j):
        """Return the name of link j (0 = base)."""
        return self.base if j == 0 else self.frames[j - 1].link_name

    def with_frames(self, frames, **kwargs):
        """Return a copy with other frames (and optionally other NL, NJ, name, base)."""
        return replace(self, frames=tuple(frames), **kwargs)


def _check_table(table):
    nf = len(table.frames)
    if table.NL < 1 or table.NJ < table.NL or nf != 2 * table.NJ - table.NL:
        raise ValueError(f"MDH table '{table.name}': NL={table.NL}, NJ={table.NJ} need "
                         f'2 NJ - NL = {2 * table.NJ - table.NL} frames, got {nf}')
    names, links = set(), {table.base}
    for idx, f in enumerate(table.frames, start=1):
        where = f"MDH table '{table.name}', frame {idx}"
        if f.j != idx:
            raise ValueError(f'{where}: frames must be numbered 1..{nf} in order, found j={f.j}')
        if f.sigma not in (0, 1, 2) or f.mu not in (0, 1):
            raise ValueError(f'{where}: sigma must be 0, 1 or 2 and mu 0 or 1, '
                             f'got sigma={f.sigma}, mu={f.mu}')
        if f.sigma == 2 and f.mu == 1:
            raise ValueError(f'{where}: a fixed frame (sigma=2) cannot be motorised (mu=1)')
        for key in GEOMETRY + INERTIA + JOINT:
            if not math.isfinite(getattr(f, key)):
                raise ValueError(f'{where}: {key} is not finite')
        if f.M < 0.0 or f.Ia < 0.0 or f.K < 0.0:
            raise ValueError(f'{where}: M, Ia and K must not be negative')
        for key in ('gamma', 'alpha', 'theta'):
            if abs(getattr(f, key)) > 2.0 * math.pi + 1e-9:
                raise ValueError(f'{where}: {key} = {getattr(f, key):g} is not an angle in '
                                 'radians (|angle| <= 2 pi); write degrees as e.g. pi/2')
        if idx <= table.NL:
            if not 0 <= f.a < idx:
                raise ValueError(f'{where}: antecedent a(j)={f.a} must be in 0..{idx - 1}')
            if f.link_name in links:
                raise ValueError(f"{where}: link name '{f.link_name}' is used twice")
            links.add(f.link_name)
            if f.sigma != 2:
                if f.joint_name in names:
                    raise ValueError(f"{where}: joint name '{f.joint_name}' is used twice")
                names.add(f.joint_name)
            continue
        if not 0 <= f.a <= table.NL:
            raise ValueError(f'{where}: loop frame antecedent a={f.a} must be a tree link '
                             f'0..{table.NL}')
        if f.has_dynamics() or f.K != 0.0:
            raise ValueError(f'{where}: cut-joint frames carry no inertia, friction or '
                             'stiffness; put them on the link frames')
        if idx <= table.NJ:
            if f.sigma == 2 or f.mu == 1:
                raise ValueError(f'{where}: a cut joint must be a passive (mu=0) revolute or '
                                 'prismatic joint (sigma 0 or 1)')
        elif f.sigma != 2:
            raise ValueError(f'{where}: frame k+B of a cut joint must be fixed (sigma=2)')
    for k in range(table.NL + 1, table.NJ + 1):
        i, j = table.frames[k - 1].a, table.frames[k + table.B - 1].a
        if i == j:
            raise ValueError(f"MDH table '{table.name}': cut joint {k} joins link {i} to itself")


def make_table(rows, NL=None, NJ=None, name='robot', base='base_link'):
    """Return an :class:`MDHTable` from dicts (or MDHFrame); missing columns default to 0."""
    frames = []
    known = {f.name for f in fields(MDHFrame)}
    for idx, row in enumerate(rows, start=1):
        if isinstance(row, MDHFrame):
            frames.append(row)
            continue
        unknown = sorted(set(row) - known)
        if unknown:
            raise ValueError(f'MDH frame {idx}: unknown column(s) {unknown}; known: '
                             f'{list(COLUMNS) + list(LIMITS) + list(_TEXT)}')
        values = {}
        for key, value in row.items():
            if value is None or (isinstance(value, str) and not value.strip()):
                continue
            if key in _TEXT:
                values[key] = str(value).strip()
            elif key in _INTS:
                values[key] = _integer(value, f'MDH frame {idx} column {key}')
            else:
                values[key] = _number(value, f'MDH frame {idx} column {key}')
        for key in ('j', 'a'):
            if key not in values:
                raise ValueError(f'MDH frame {idx}: column {key!r} is required')
        frames.append(MDHFrame(**values))
    n = len(frames)
    NL = n if NL is None else int(NL)
    NJ = NL if NJ is None else int(NJ)
    return MDHTable(tuple(frames), NL, NJ, name=name, base=base)


# -- numbers such as "pi/2" in tables -----------------------------------------------------------

_OPS = {ast.Add: lambda x, y: x + y, ast.Sub: lambda x, y: x - y,
        ast.Mult: lambda x, y: x * y, ast.Div: lambda x, y: x / y,
        ast.Pow: lambda x, y: x ** y}


def _eval(node):
    if isinstance(node, ast.Expression):
        return _eval(node.body)
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) \
            and not isinstance(node.value, bool):
        return float(node.value)
    if isinstance(node, ast.Name) and node.id == 'pi':
        return math.pi
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        v = _eval(node.operand)
        return -v if isinstance(node.op, ast.USub) else v
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        return _OPS[type(node.op)](_eval(node.left), _eval(node.right))
    raise ValueError('unsupported expression')


def _number(value, what):
    """Return a float from a number or a string such as '-pi/2', '0.45', '2*pi/3'."""
    if isinstance(value, bool):
        raise ValueError(f'{what}: expected a number, got {value!r}')
    if isinstance(value, (int, float)):
        return float(value)
    text = str(value).strip()
    if text.lower() in ('inf', '+inf', '-inf'):
        return -math.inf if text.startswith('-') else math.inf
    try:
        return float(_eval(ast.parse(text, mode='eval')))
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError):
        raise ValueError(f"{what}: expected a number or an expression of numbers and 'pi', "
                         f'got {value!r}') from None


def _integer(value, what):
    x = _number(value, what)
    if x != int(x):
        raise ValueError(f'{what}: expected an integer, got {value!r}')
    return int(x)


# -- file formats ---------------------------------------------------------------------------

def load_mdh_yaml(text_or_path):
    """Return the :class:`MDHTable` of a YAML document (text or path).

    Format::

        name: rx90          # optional
        base: base_link     # optional name of link 0
        NL: 6               # optional (default: number of frames, a tree)
        NJ: 6               # optional (default: NL)
        frames:
          - {j: 1, a: 0, mu: 1, sigma: 0, alpha: 0, d: 0, theta: 0, r: 0, ZZ: 1.2, Ia: 0.5}
          - {j: 2, a: 1, mu: 1, sigma: 0, alpha: -pi/2, ...}
    """
    import yaml
    text = _read(text_or_path, ('.yaml', '.yml'))
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ValueError(f'invalid MDH YAML: {e}') from None
    if not isinstance(doc, dict) or not isinstance(doc.get('frames'), list):
        raise ValueError("invalid MDH YAML: expected a mapping with a list 'frames'")
    for idx, row in enumerate(doc['frames'], start=1):
        if not isinstance(row, dict):
            raise ValueError(f'invalid MDH YAML: frame {idx} is not a mapping')
    unknown = sorted(set(doc) - {'frames', 'name', 'base', 'NL', 'NJ'})
    if unknown:
        raise ValueError(f'invalid MDH YAML: unknown key(s) {unknown}')
    return make_table(doc['frames'], NL=doc.get('NL'), NJ=doc.get('NJ'),
                      name=str(doc.get('name', 'robot')), base=str(doc.get('base', 'base_link')))


def load_mdh_csv(text_or_path):
    """Return the :class:`MDHTable` of a CSV table (text or path).

    The first non-comment line names the columns (any of :data:`COLUMNS`, ``lower``, ``upper``,
    ``effort``, ``velocity``, ``name``, ``link``); one row per frame.  Lines starting with '#'
    are comments, except directives ``# NL = 7``, ``# NJ = 9``, ``# name = x``, ``# base = y``.
    """
    text = _read(text_or_path, ('.csv',))
    meta, lines = {}, []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith('#'):
            key, sep, value = stripped.lstrip('#').partition('=')
            if sep and key.strip() in ('NL', 'NJ', 'name', 'base'):
                meta[key.strip()] = value.strip()
            continue
        lines.append(line)
    if not lines:
        raise ValueError('invalid MDH CSV: no header line')
    reader = csv.DictReader(io.StringIO('\n'.join(lines)), skipinitialspace=True)
    reader.fieldnames = [h.strip() for h in reader.fieldnames]
    rows = []
    for idx, row in enumerate(reader, start=1):
        if None in row or any(v is None for v in row.values()):
            raise ValueError(f'invalid MDH CSV: row {idx} has a different number of columns '
                             'than the header')
        rows.append(row)
    return make_table(rows, NL=meta.get('NL'), NJ=meta.get('NJ'),
                      name=meta.get('name', 'robot'), base=meta.get('base', 'base_link'))


def load_mdh(path):
    """Return the table of a ``.yaml``/``.yml`` or ``.csv`` file."""
    if str(path).lower().endswith('.csv'):
        return load_mdh_csv(path)
    return load_mdh_yaml(path)


def _read(text_or_path, suffixes):
    s = str(text_or_path)
    if '\n' not in s and s.lower().endswith(suffixes):
        try:
            with open(s, encoding='utf-8') as f:
                return f.read()
        except OSError as e:
            raise ValueError(f'cannot read MDH table {s!r}: {e.strerror}') from None
    return s


def data_path(filename):
    """Return the path of an example table shipped in ``rnea_ros/khalil/data``."""
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), 'data', filename)


# -- conversion to the dynamics core ------------------------------------------------------------

def mdh_to_specs(table):
    """Return ([LinkSpec], [JointSpec]) of the table's equivalent tree (frames 1..NL).

    Frame j is link j's frame; the joint frame at q = 0 is iTj with theta = theta offset
    (revolute) or r = r offset (prismatic), the axis is z_j.  Khalil's inertia about O_j is moved
    to the centre of mass (parallel-axis theorem); Fv and Fs also become the URDF-style
    ``damping`` and ``friction`` of the joint (Ia has no URDF equivalent).
    """
    links = [LinkSpec(table.base)]
    joints = []
    for f in table.tree_frames:
        mass, com, Ic = _com_inertia(f)
        links.append(LinkSpec(f.link_name, mass=mass, com=tuple(com), inertia=Ic))
        X = f.fixed_transform()
        kind = ('revolute', 'prismatic', 'fixed')[f.sigma]
        if kind == 'revolute' and math.isinf(f.lower) and math.isinf(f.upper):
            kind = 'continuous'
        joints.append(JointSpec(
            f.joint_name, kind, table.link_name(f.a), f.link_name, rotation=X[:3, :3],
            translation=tuple(X[:3, 3]), axis=(0.0, 0.0, 1.0), lower=f.lower, upper=f.upper,
            effort=f.effort, velocity=f.velocity, damping=f.Fv, friction=f.Fs))
    return links, joints


def _com_inertia(f):
    """Return (mass, com, inertia about the COM) of frame f, or a clear ValueError.

    Physically consistent: the inertia about the centre of mass, J - M (c.c I - c c^T) with
    c = MS / M, has principal moments >= 0 that satisfy the triangle inequality
    I1 <= I2 + I3 (a body's mass distribution cannot give anything else).
    """
    where = f'MDH frame {f.j}'
    try:
        mass, com, Ic = khalil_to_com(*f.inertia_about_origin())
    except ValueError as e:
        raise ValueError(f'{where}: {e}') from None
    eig = np.linalg.eigvalsh(Ic)
    tol = 1e-9 * max(1.0, np.abs(Ic).max())
    if eig.min() < -tol or eig[2] > eig[0] + eig[1] + tol:
        raise ValueError(f'{where}: the inertial parameters are not physically consistent: the '
                         'inertia about the centre of mass, J - M (c.c I - c c^T) with c = MS / M,'
                         f' has principal moments {eig.tolist()}; they must be >= 0 and the '
                         'largest at most the sum of the other two (triangle inequality)')
    return mass, com, Ic


def model_from_mdh(table, floating_base=False, **options):
    """Return the :class:`RobotModel` of the equivalent tree of an MDH table (Khalil 2010 §2).

    The joint order of the model (``model.joint_names``) is the table order of the moving tree
    frames, i.e. q_tr of eq. (2).  The table's Ia, Fs and Fv become the model's armature and
    joint friction, so the core algorithms include eq. (31) (with the core's smoothed sign(qd),
    see ``coulomb_band``).  ``options`` are passed to :meth:`RobotModel.from_specs` (explicit
    ``armature``, ``friction_viscous``, ``friction_coulomb`` override the table).  Cut joints
    are not part of the tree: see :func:`loop_constraints`.  ``table`` may also be the path of
    a ``.yaml``/``.csv`` table.
    """
    if isinstance(table, (str, os.PathLike)):
        table = load_mdh(table)
    if not isinstance(table, MDHTable):
        raise ValueError(f'expected an MDHTable, got {type(table).__name__}')
    links, joints = mdh_to_specs(table)
    js = table.joints
    terms = {'armature': {f.joint_name: f.Ia for f in js},
             'friction_viscous': {f.joint_name: f.Fv for f in js},
             'friction_coulomb': {f.joint_name: f.Fs for f in js}}
    terms.update(options)
    return RobotModel.from_specs(links, joints, floating_base=floating_base,
                                 joint_names=list(table.joint_names), name=table.name, **terms)


def loop_constraints(table):
    """Return the cut joints of a closed-loop table as :class:`LoopConstraint` records."""
    B = table.B
    return tuple(LoopConstraint(table.frames[k - 1], table.frames[k + B - 1])
                 for k in range(table.NL + 1, table.NJ + 1))


def mdh_to_urdf(table):
    """Return URDF text of the equivalent tree (for robot_state_publisher or the node).

    Revolute joints without limits become ``continuous``; infinite limits of prismatic joints
    and missing effort / velocity limits, which URDF cannot express, are written as +-1e30.
    Rotor inertias Ia are not part of URDF and are dropped.
    """
    links, joints = mdh_to_specs(table)
    out = [f'<robot name="{table.name}">']
    for link in links:
        out.append(f'  <link name="{link.name}">')
        if link.mass > 0.0:
            I_ = [repr(float(link.inertia[a, b])) for a, b in
                  ((0, 0), (0, 1), (0, 2), (1, 1), (1, 2), (2, 2))]
            out.append(f'    <inertial><origin xyz="{_fmt(link.com)}" rpy="0 0 0"/>'
                       f'<mass value="{float(link.mass)!r}"/><inertia ixx="{I_[0]}" '
                       f'ixy="{I_[1]}" ixz="{I_[2]}" iyy="{I_[3]}" iyz="{I_[4]}" izz="{I_[5]}"/>'
                       '</inertial>')
        out.append('  </link>')
    for j in joints:
        out.append(f'  <joint name="{j.name}" type="{j.type}">')
        out.append(f'    <parent link="{j.parent}"/><child link="{j.child}"/>')
        out.append(f'    <origin xyz="{_fmt(j.translation)}" rpy="{_fmt(_rpy(j.rotation))}"/>')
        if j.type != 'fixed':
            out.append('    <axis xyz="0 0 1"/>')
        if j.type in ('revolute', 'prismatic'):
            lim = ' '.join(f'{k}="{_urdf_limit(getattr(j, k))!r}"' for k in LIMITS)
            out.append(f'    <limit {lim}/>')
        if j.damping or j.friction:
            out.append(f'    <dynamics damping="{float(j.damping)!r}" '
                       f'friction="{float(j.friction)!r}"/>')
        out.append('  </joint>')
    out.append('</robot>')
    return '\n'.join(out) + '\n'


def _urdf_limit(x):
    """Return x, or +-1e30 for an infinite limit (URDF has no way to write 'unlimited')."""
    return float(x) if math.isfinite(x) else math.copysign(_URDF_UNLIMITED, x)


def _fmt(v):
    return ' '.join(repr(float(x)) for x in v)


def _rpy(R):
    """Return URDF roll, pitch, yaw of R = Rz(yaw) Ry(pitch) Rx(roll)."""
    pitch = math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0]))
    if abs(math.cos(pitch)) < 1e-12:
        return (math.atan2(-R[1, 2], R[1, 1]), pitch, 0.0)
    return (math.atan2(R[2, 1], R[2, 2]), pitch, math.atan2(R[1, 0], R[0, 0]))


def main(argv=None):
    """Print the URDF of an MDH table: ``python -m rnea_ros.khalil table.yaml|table.csv``.

    A name that is not a file but a table shipped in ``rnea_ros/khalil/data`` (rx90.yaml,
    rx90.csv, fourbar.yaml, rpr3.yaml) is read from there.
    """
    import sys
    args = sys.argv[1:] if argv is None else list(argv)
    if len(args) != 1:
        print('usage: python -m rnea_ros.khalil TABLE.yaml|TABLE.csv  (prints URDF)',
              file=sys.stderr)
        return 2
    path = args[0]
    if not os.path.exists(path) and os.path.isfile(data_path(os.path.basename(path))):
        path = data_path(os.path.basename(path))           # a shipped table: rx90.yaml, ...
    try:
        sys.stdout.write(mdh_to_urdf(load_mdh(path)))
    except ValueError as e:
        print(f'error: {e}', file=sys.stderr)
        return 1
    return 0
