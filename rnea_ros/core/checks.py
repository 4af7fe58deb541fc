"""Input checking and the checked kernel call shared by every public algorithm.

The per-call algorithms (:mod:`.dynamics`, :mod:`.aba`) are decorated with :func:`fast_path`:
a plain call (float64 vectors, no options) goes straight to the numba kernel's compiled entry
point (:func:`entry_point`), which checks layout, lengths and finiteness itself and returns a
status code; every other call, and every failure, runs the decorated function, which goes
through here: :func:`prepare` writes f_ext and a_0 into
the workspace, :func:`run_kernel` converts and retries, :func:`raise_status` turns a kernel's
status into a ValueError that names the argument, the coordinate and the joint.
"""

import functools

import numpy as np

from rnea_ros.core.layout import (DEFAULT_GRAVITY, IV, STATUS_BAD_QUATERNION, STATUS_LEN_Q,
                                  STATUS_LEN_QDD, STATUS_OVERFLOW, STATUS_SINGULAR,
                                  STATUS_STRIDED)

F8 = np.dtype(np.float64)      # the dtype object of every native float64 array


def vector(x, n, what, model):
    """Return x as a contiguous float64 vector of length n, or raise ValueError."""
    try:
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{what} must be a vector of {n} numbers') from None
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f'{what} has shape {arr.shape}, expected ({n},) for robot '
                         f"'{model.name}' (nq={model.nq}, nv={model.nv})")
    return arr


def finite_vector(x, n, what, model):
    """Return x as a float64 vector of length n; ValueError naming the first non-finite entry."""
    arr = vector(x, n, what, model)
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr))[0])
        raise ValueError(f'{what}[{bad}] ({coordinate_name(model, bad, what != "q")}) is '
                         f'{arr[bad]}: inputs must be finite')
    return arr


def matrix(x, n, what, model, rows=None):
    """Return x as a contiguous float64 (N, n) array, or raise ValueError."""
    try:
        arr = np.ascontiguousarray(x, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(f'{what} must be an (N, {n}) array of numbers') from None
    if arr.ndim != 2 or arr.shape[1] != n or (rows is not None and arr.shape[0] != rows):
        expected = f'({rows if rows is not None else "N"}, {n})'
        raise ValueError(f'{what} has shape {arr.shape}, expected {expected} for robot '
                         f"'{model.name}'")
    return arr


def coordinate_name(model, index, velocity):
    """Return a readable name for entry `index` of q (velocity=False) or of v/tau."""
    offset = (6 if velocity else 7) if model.floating_base else 0
    if index < offset:
        names = ('base_vx', 'base_vy', 'base_vz', 'base_wx', 'base_wy', 'base_wz') if velocity \
            else ('base_x', 'base_y', 'base_z', 'base_qx', 'base_qy', 'base_qz', 'base_qw')
        return names[index]
    return model.joint_names[index - offset]


def raise_status(model, status, arrays, names=('q', 'qd', 'qdd'), row=None):
    """Raise the ValueError of a kernel status for the inputs ``arrays`` named ``names``.

    ``row`` is the sample of a batch the inputs come from (None for a single call).
    """
    where = '' if row is None else f' (sample {row})'
    if status >= STATUS_SINGULAR:
        raise ValueError(singular_message(model, status - STATUS_SINGULAR))
    if STATUS_LEN_Q <= status <= STATUS_LEN_QDD:
        k = status - STATUS_LEN_Q
        n = model.nq if k == 0 else model.nv
        raise ValueError(f'{names[k]} has shape {np.shape(arrays[k])}, expected ({n},) for '
                         f"robot '{model.name}' (nq={model.nq}, nv={model.nv})")
    if status == STATUS_STRIDED:
        raise ValueError('a state vector is not contiguous: pass numpy.ascontiguousarray(x)')
    if status == STATUS_BAD_QUATERNION:
        raise ValueError(f'base orientation quaternion q[3:7] is zero or too large{where}: '
                         'its norm must be in (1e-6, 1e150)')
    if status == STATUS_OVERFLOW:
        raise ValueError(f'the result overflows{where}: inputs too large for robot '
                         f"'{model.name}' (|{names[1]}| up to {_largest(arrays[1])}, "
                         f'|{names[2]}| up to {_largest(arrays[2])}, gravity, f_ext)')
    k = status - 1
    x = arrays[k]
    bad = int(np.flatnonzero(~np.isfinite(x))[0])
    raise ValueError(f'{names[k]}[{bad}] ({coordinate_name(model, bad, k > 0)}) is '
                     f'{x[bad]}{where}: inputs must be finite')


def singular_message(model, body):
    """Return the error for a body whose joint has no inertia along its motion (ABA's d_i)."""
    if model.floating_base and body == 0:
        what = 'the floating base'
    else:
        what = f"joint '{model.joint_names[model.ints[body, IV] - model.nv + model.njoints]}'"
    return (f'the mass matrix is singular at {what}: the subtree it moves has no mass or '
            'inertia along its axis (add inertia or armature)')


def check_quaternion(model, q):
    """Raise ValueError when a floating base's quaternion q[3:7] has a zero or huge norm."""
    if model.floating_base:
        with np.errstate(over='ignore'):
            n2 = float(q[3:7] @ q[3:7])
        if not (n2 >= 1e-12 and n2 < 1e300):
            raise_status(model, STATUS_BAD_QUATERNION, (q,), ('q',))


def _largest(x):
    return f'{float(np.max(np.abs(x))):.3g}' if np.size(x) else '0'


def run_kernel(kernel, model, ws, args, names, out):
    """Run a kernel on inputs converted to float64 vectors; raise ValueError on a bad status.

    ``args`` are the three state inputs (q, qd, qdd or tau) named ``names``; returns them
    converted (the caller may need them, e.g. for joint friction).
    """
    try:
        status = kernel(model.kernel_model, ws.buffer, args[0], args[1], args[2], out)
    except (TypeError, ValueError):     # not float64 C-contiguous vectors: convert, retry
        lengths = (model.nq, model.nv, model.nv)
        args = tuple(vector(x, n, what, model) for x, n, what in zip(args, lengths, names))
        status = kernel(model.kernel_model, ws.buffer, args[0], args[1], args[2], out)
    if status:
        raise_status(model, status, args, names)
    return args


def entry_point(kernel):
    """Return a kernel's compiled entry point: the kernel without numba's type dispatch.

    numba's dispatcher spends ~65 ns plus ~15 ns per argument choosing the compiled version from
    the argument types; with one explicit signature the choice is known.  The entry point
    unboxes its arguments as that signature's arrays *without checking their dtype or number of
    dimensions*: a caller passes it only the model's and workspace's own arrays, a new output,
    and user vectors it has checked to be 1-D float64 numpy arrays (the kernel checks their
    contiguity and lengths before it reads them; a non-array raises TypeError).  Falls back to
    the dispatcher should a numba release not expose it.
    """
    try:
        return kernel.overloads[kernel.signatures[0]].entry_point
    except (AttributeError, IndexError, KeyError, TypeError):
        return kernel


def fast_path(kernel):
    """Decorate the checked form of a per-call algorithm with the kernel's fast path.

    The decorated function takes ``(model, x, y, z, f_ext=None, gravity=None,
    base_acceleration=None, ws=None)``.  When no option is given, x, y, z are 1-D float64 numpy
    arrays, the model has no joint friction or armature and its default workspace holds the
    defaults, the kernel's entry point runs at once into a new output vector; a non-zero
    status or a TypeError falls through to the decorated function, which converts, checks and
    raises.  The wrapper is the one copy of this path for every kernel and costs nothing more
    than writing it inline (measured: a helper *called* from each function costs ~50 ns).
    """
    empty = np.empty
    entry = entry_point(kernel)
    f8 = F8

    def decorate(checked):
        def call(model, x, y, z, f_ext=None, gravity=None, base_acceleration=None, ws=None):
            if ws is None and f_ext is None and gravity is None and base_acceleration is None:
                try:      # dtype and ndim first: the entry point trusts them (see entry_point)
                    if (x.dtype is f8 and y.dtype is f8 and z.dtype is f8 and x.ndim == 1
                            and y.ndim == 1 and z.ndim == 1):
                        default = model.default_workspace
                        if not (default.custom or model.has_joint_terms):
                            out = empty(model.nv)
                            if entry(model.kernel_model, default.buffer, x, y, z, out) == 0:
                                return out
                except (AttributeError, TypeError, ValueError):   # not arrays, not a model
                    pass
            return checked(model, x, y, z, f_ext, gravity, base_acceleration, ws)
        return functools.update_wrapper(call, checked)
    return decorate


def gravity_acceleration(gravity, base_acceleration, out):
    """Write a_0 = a_base - a_g (RBDA §5.3), a [lin; ang] 6-vector in the root frame, into out."""
    try:
        g = np.asarray(DEFAULT_GRAVITY if gravity is None else gravity,
                       dtype=np.float64).reshape(3)
    except (TypeError, ValueError):
        raise ValueError(f'gravity must be 3 numbers, got {gravity!r}') from None
    if not np.all(np.isfinite(g)):
        raise ValueError(f'gravity must be finite, got {g.tolist()}')
    out[:3] = -g
    out[3:] = 0.0
    if base_acceleration is not None:
        try:
            ab = np.asarray(base_acceleration, dtype=np.float64).reshape(6)
        except (TypeError, ValueError):
            ab = np.full(6, np.nan)
        if not np.all(np.isfinite(ab)):
            raise ValueError('base_acceleration must be 6 finite numbers [linear, angular], '
                             f'got {base_acceleration!r}')
        out += ab
    return out


def external_wrenches(model, f_ext, out=None):
    """Return the (nbodies, 6) array of external wrenches in body frames for a {link: wrench}.

    Each wrench is applied by the environment on the link, in the link frame about its origin;
    wrenches on links merged by fixed joints are moved to their body; wrenches on links fixed to
    the world (fixed base) have no effect on the joints.
    """
    out = np.zeros((model.nbodies, 6)) if out is None else out
    out[:] = 0.0
    if not f_ext:
        return out
    if not isinstance(f_ext, dict):
        raise ValueError('f_ext must be a dict {link_name: [fx, fy, fz, tx, ty, tz]}')
    for link, wrench in f_ext.items():
        try:
            body, R, p = model.link_body[link]
        except (KeyError, TypeError):
            raise ValueError(f"f_ext names link '{link}', which robot '{model.name}' does not "
                             'have') from None
        try:
            w = np.asarray(wrench, dtype=np.float64).reshape(6)
        except (TypeError, ValueError):
            raise ValueError(f"f_ext['{link}'] must be 6 numbers [fx, fy, fz, tx, ty, tz]") \
                from None
        if not np.all(np.isfinite(w)):
            raise ValueError(f"f_ext['{link}'] is not finite: {w.tolist()}")
        if body < 0:
            continue
        force = R @ w[:3]
        out[body, :3] += force
        out[body, 3:] += R @ w[3:] + np.cross(p, force)
    return out


def not_a_model(model):
    """Return the TypeError for an argument that is not a RobotModel (e.g. a Khalil table)."""
    hint = ': build one with rnea_ros.khalil.model_from_mdh(table)' if hasattr(model, 'frames') \
        else ''
    return TypeError(f'expected a RobotModel, got {type(model).__name__}{hint}')


def prepare(model, ws, f_ext, gravity, base_acceleration):
    """Return the workspace (default: the model's) with f_ext and a_0 of this call written."""
    if ws is None:
        ws = getattr(model, 'default_workspace', None)
        if ws is None:
            raise not_a_model(model)
    elif ws.nbodies != model.nbodies:
        raise ValueError(f'ws is the workspace of a model with {ws.nbodies} bodies, robot '
                         f"'{model.name}' has {model.nbodies}: make one with Workspace(model)")
    if f_ext is None and gravity is None and base_acceleration is None and not ws.custom:
        return ws
    if base_acceleration is not None and model.floating_base:
        raise ValueError('base_acceleration is for fixed-base models; a floating base takes '
                         'its acceleration in qdd[:6]')
    if f_ext is None and gravity is None and base_acceleration is None:
        if ws.custom:
            ws.reset()
    else:
        ws.custom = True
        external_wrenches(model, f_ext, ws.fext)
        gravity_acceleration(gravity, base_acceleration, ws.a0)
    return ws


def workspace(model, ws):
    """Return the workspace of a call (default: the model's); ValueError if it is another's."""
    if ws is None:
        ws = getattr(model, 'default_workspace', None)
        if ws is None:
            raise not_a_model(model)
    elif getattr(ws, 'nbodies', None) != model.nbodies:
        raise ValueError(f'ws is the workspace of a model with {getattr(ws, "nbodies", "?")} '
                         f"bodies, robot '{model.name}' has {model.nbodies}: make one with "
                         'Workspace(model)')
    return ws


def link_frame(model, link):
    """Return (body, body_R_link, link origin in body) of a link; ValueError naming it."""
    try:
        return model.link_body[link]
    except (KeyError, TypeError):
        raise ValueError(f"robot '{model.name}' has no link {link!r} (links: "
                         f'{", ".join(model.link_names[:8])}'
                         f'{", ..." if len(model.link_names) > 8 else ""})') from None
