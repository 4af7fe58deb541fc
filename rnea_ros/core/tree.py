"""From description records to a kinematic tree of bodies: the steps of building a RobotModel.

1. :func:`index_description`: links by name (each checked), joints by child link, children per
   link; :func:`root_link`: the one link that is no joint's child.
2. :func:`tree_order`: depth-first pre-order from the root, children in document order (RBDA
   §4.1.2's regular numbering: a parent comes before its children).
3. :func:`merge_fixed_joints`: a link hanging on a fixed joint is lumped into the nearest body
   upstream and remembers its pose in that body (so that external wrenches on it can be moved
   there); with a fixed base, links fixed to the root belong to the world.  Each moving joint
   makes one body (placement XT, unit axis).
4. :func:`lumped_inertias`: every link's inertia moved into its body's frame by the
   parallel-axis theorem (RBDA eq. 2.63); the sums are checked for overflow *after* the
   arithmetic, so that huge but finite inputs are refused at build time.
5. :func:`joint_order` (q/v order) and :func:`mimic_pairs`.

Every unusable input raises ValueError naming the link or joint.
"""

from types import SimpleNamespace

import numpy as np

from rnea_ros.core import joints as jt
from rnea_ros.core.layout import GENERAL_AXIS
from rnea_ros.core.spatial import skew


def finite(values, what):
    """Return values as a float array; ValueError naming ``what`` if an entry is not finite."""
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise ValueError(f'{what} is not finite: {arr.tolist()}')
    return arr


def check_link(link):
    """Return (mass, com, inertia about the COM) of a LinkSpec, checked."""
    mass = float(finite(link.mass, f"mass of link '{link.name}'"))
    com = finite(link.com, f"centre of mass of link '{link.name}'").reshape(3)
    inertia = finite(link.inertia, f"inertia of link '{link.name}'").reshape(3, 3)
    if mass < 0.0:
        raise ValueError(f"link '{link.name}' has negative mass {mass}")
    if not np.allclose(inertia, inertia.T, rtol=0.0, atol=1e-12 + 1e-9 * np.abs(inertia).max()):
        raise ValueError(f"inertia of link '{link.name}' is not symmetric")
    # Real URDFs carry rounding noise: tiny negative eigenvalues (< 1e-6 kg m^2) pass.
    if np.linalg.eigvalsh(inertia).min() < -1e-6 * max(1.0, np.abs(inertia).max()):
        raise ValueError(f"inertia of link '{link.name}' is not positive semi-definite: "
                         f'eigenvalues {np.linalg.eigvalsh(inertia).tolist()}')
    return mass, com, inertia


def axis_code(axis):
    """Return 0-5 for a joint axis along +-x, +-y, +-z (fast kernels), else GENERAL_AXIS."""
    for k in range(3):
        for sign, code in ((1.0, k), (-1.0, k + 3)):
            if np.array_equal(axis, sign * np.eye(3)[k]):
                return code
    return GENERAL_AXIS


def index_description(links, joints):
    """Return (checked links by name, joint by child link, child joints per link)."""
    link_by_name = {}
    for link in links:
        if link.name in link_by_name:
            raise ValueError(f"link '{link.name}' is defined twice")
        link_by_name[link.name] = check_link(link)
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
    return link_by_name, joint_by_child, children


def root_link(link_by_name, joint_by_child):
    """Return the one link that is no joint's child (ValueError if none or several)."""
    roots = [name for name in link_by_name if name not in joint_by_child]
    if len(roots) != 1:
        raise ValueError('the robot must have exactly one root link, found '
                         f'{len(roots)}: {roots[:5]}' if roots else
                         'the robot has no root link: its joints form a loop')
    return roots[0]


def tree_order(root, children, link_by_name):
    """Return the links in depth-first pre-order from the root, children in document order."""
    order, stack, visited = [], [root], set()
    while stack:
        link = stack.pop()
        if link in visited:
            raise ValueError(f"link '{link}' is reached twice: the joints form a loop")
        visited.add(link)
        order.append(link)
        stack.extend(j.child for j in reversed(children[link]))
    for lk in link_by_name:
        if lk not in visited:
            raise ValueError(f"link '{lk}' is not connected to the root '{root}'")
    return order


def unit_axis(joint):
    """Return the joint's axis normalised; ValueError if zero or if normalising overflows."""
    axis = finite(joint.axis, f"axis of joint '{joint.name}'").reshape(3)
    with np.errstate(over='ignore'):
        norm = np.linalg.norm(axis)
    if not norm >= 1e-12:
        raise ValueError(f"joint '{joint.name}' has a zero axis")
    unit = axis / norm
    if not (np.all(np.isfinite(unit)) and abs(np.linalg.norm(unit) - 1.0) < 1e-9):
        raise ValueError(f"axis of joint '{joint.name}' cannot be normalised: {axis.tolist()} "
                         '(too large)')
    return unit


def merge_fixed_joints(root, order, joint_by_child, floating_base):
    """Return (bodies, link_body): one body per moving joint, fixed joints merged.

    ``bodies`` lists per body its parent, kind, placement R and p, unit axis, link and joint;
    ``link_body`` maps each link to (body, body_R_link, link origin in body), body -1 = world.
    """
    bodies = SimpleNamespace(parent=[], kind=[], R=[], p=[], axis=[], links=[], joint=[],
                             moving=[])

    def add(parent, kind, R, p, axis, link, joint):
        for what, value in (('origin', R), ('origin', p)):
            finite(value, f"{what} of joint '{joint.name}' (composed with fixed joints)")
        bodies.parent.append(parent)
        bodies.kind.append(kind)
        bodies.R.append(R)
        bodies.p.append(p)
        bodies.axis.append(axis)
        bodies.links.append(link)
        bodies.joint.append(joint)
        return len(bodies.parent) - 1

    link_body = {}
    if floating_base:
        bodies.parent.append(-1)
        bodies.kind.append(jt.FREE_FLYER)
        bodies.R.append(np.eye(3))
        bodies.p.append(np.zeros(3))
        bodies.axis.append(np.zeros(3))
        bodies.links.append(root)
        bodies.joint.append(None)
        link_body[root] = (0, np.eye(3), np.zeros(3))
    else:
        link_body[root] = (-1, np.eye(3), np.zeros(3))
    for link in order[1:]:
        joint = joint_by_child[link]
        body, R_bl, p_bl = link_body[joint.parent]
        R_j = finite(joint.rotation, f"origin of joint '{joint.name}'").reshape(3, 3)
        p_j = finite(joint.translation, f"origin of joint '{joint.name}'").reshape(3)
        if joint.type == 'fixed':
            link_body[link] = (body, R_bl @ R_j, p_bl + R_bl @ p_j)
            continue
        kind = jt.kind_from_urdf(joint.type, joint.name)
        b = add(body, kind, R_bl @ R_j, p_bl + R_bl @ p_j, unit_axis(joint), link, joint)
        bodies.moving.append(joint)
        link_body[link] = (b, np.eye(3), np.zeros(3))
    return bodies, link_body


def lumped_inertias(link_body, link_by_name, nbodies):
    """Return per body [m, h = m c, I about the body origin], every link lumped in.

    ValueError when a sum or product overflows (huge masses, centres of mass or offsets).
    """
    inertia = [[0.0, np.zeros(3), np.zeros((3, 3))] for _ in range(nbodies)]
    owners = [[] for _ in range(nbodies)]
    for lk, (b, R, p) in link_body.items():
        m, c, Ic = link_by_name[lk]
        if b < 0 or (m == 0.0 and not Ic.any()):
            continue
        with np.errstate(over='ignore', invalid='ignore'):      # checked below
            c_b = R @ c + p
            C = skew(c_b)
            acc = inertia[b]
            acc[0] += m
            acc[1] = acc[1] + m * c_b
            acc[2] = acc[2] + R @ Ic @ R.T - m * C @ C
        owners[b].append(lk)
    for b, (m, h, I_o) in enumerate(inertia):
        if not (np.isfinite(m) and np.all(np.isfinite(h)) and np.all(np.isfinite(I_o))):
            raise ValueError(f'the inertia of links {owners[b]} (merged into one body) '
                             'overflows: mass, centre of mass or offsets are too large')
    return inertia


def check_placements(bodies, inertia):
    """Raise ValueError when a body's offset is so large that |p|^2 or m |p|^2 overflows.

    The algorithms form products such as X^T I X (RBDA eq. 2.66), whose entries grow as
    m |p|^2: such a model would give non-finite results for every state.
    """
    for b, p in enumerate(bodies.p):
        with np.errstate(over='ignore', invalid='ignore'):
            p2 = float(p @ p)
            large = not (np.isfinite(p2) and np.isfinite(inertia[b][0] * p2)
                         and np.isfinite(np.abs(inertia[b][2]).max() * max(1.0, p2)))
        if large:
            name = bodies.joint[b].name if bodies.joint[b] is not None else bodies.links[b]
            raise ValueError(f"origin of joint '{name}' is too far ({p.tolist()} m): "
                             'the dynamics would overflow')


def joint_order(joint_names, moving):
    """Return the q/v joint order: tree order, or the user's permutation of the moving joints."""
    tree_names = [j.name for j in moving]
    if joint_names is None:
        return tuple(tree_names)
    joint_names = list(joint_names)
    if sorted(joint_names) != sorted(tree_names):
        missing = sorted(set(tree_names) - set(joint_names))
        extra = sorted(set(joint_names) - set(tree_names))
        raise ValueError(f'joint_names must list every moving joint once; missing: '
                         f'{missing}, unknown or fixed: {extra}')
    return tuple(joint_names)


def mimic_pairs(ordered, joint_index):
    """Return ((joint, driver, multiplier, offset), ...) and warnings for unusable drivers."""
    mimic, warnings = [], []
    for j in ordered:
        if j.mimic is not None:
            driver, mult, offset = j.mimic
            if driver not in joint_index:
                warnings.append(f"joint '{j.name}' mimics '{driver}', which is not a "
                                'moving joint: it is treated as an independent joint')
                continue
            mult, offset = float(mult), float(offset)
            if not (np.isfinite(mult) and np.isfinite(offset)):
                raise ValueError(f"mimic of joint '{j.name}' must have a finite multiplier and "
                                 f'offset, got {mult} and {offset}')
            mimic.append((j.name, driver, mult, offset))
    return tuple(mimic), warnings
