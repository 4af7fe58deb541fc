"""Compilation options, signatures and table views shared by the numba kernels.

Every kernel module compiles with :data:`OPTS` (helpers with :data:`INLINE`) and cuts the model
and workspace tables out of their two flat arrays with :func:`model_tables` and
:func:`workspace_tables`; :func:`check_state` is the input check every kernel runs first.
"""

import numba
from numba import types
from numba.core import options as numba_options
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array
import numpy as np

from rnea_ros.core.joints import FREE_FLYER
from rnea_ros.core.layout import (B_N, D_N, K_N, KIND, NINT, NREAL, STATUS_BAD_Q, STATUS_BAD_QD,
                                  STATUS_BAD_QDD, STATUS_BAD_QUATERNION, STATUS_LEN_Q,
                                  STATUS_LEN_QD, STATUS_LEN_QDD, STATUS_OK, STATUS_STRIDED, W_N)

# Kernels never allocate, so they are compiled without numba's reference-counted runtime (NRT):
# with it, every array handed to a kernel or a helper costs an atomic increment and decrement,
# about a third of a small arm's RNEA.  The arrays belong to the Python caller, which holds them
# for the duration of the call.  ``_nrt`` is numba's own flag (numba.core.options); should a
# numba release drop it, the kernels compile with the runtime as before, only slower.
NO_NRT = {'_nrt': False} if hasattr(numba_options.DefaultOptions, '_nrt') else {}
if tuple(int(x) for x in numba.__version__.split('.')[:2]) < (0, 57):
    raise ImportError(f'rnea_ros needs numba >= 0.57 (thread ids and chunk sizes of parallel '
                      f"loops), found {numba.__version__}: pip install 'numba>=0.57'")
# fastmath 'contract' only: fused multiply-adds (each rounds once, so no less exact; 10 % faster),
# but no other fast-math liberty, so NaN and Inf still behave (the finiteness checks rely on it).
# The per-call kernels keep the GIL: they take about a microsecond, and releasing and taking it
# back would add 40 ns to each call; the batch kernel releases it.
OPTS = {'cache': True, 'error_model': 'numpy', 'fastmath': {'contract'}, **NO_NRT}
INLINE = dict(OPTS, forceinline=True)   # helpers: LLVM inlines them into their kernel
if not hasattr(numba_options.DefaultOptions, 'forceinline'):
    INLINE = OPTS                        # LLVM's own inlining heuristics

# Explicit signatures: the public wrappers call the kernels with the model's ``kernel_model``,
# a workspace ``buffer`` and float64 C-contiguous state vectors; anything else raises TypeError
# (no silent recompilation), which the wrappers answer by converting and checking the inputs.
VEC = types.Array(types.float64, 1, 'C')
MAT = types.Array(types.float64, 2, 'C')
STATUS_MATRIX = types.Array(types.int64, 2, 'C')


@intrinsic
def _matrix_view(typingctx, vec, start, nrows, ncols, like):
    """Return vec[start:start + nrows * ncols] as a C-contiguous (nrows, ncols) view.

    The items are read as ``like``'s dtype (float64 or int64, same size).  Built in place: a
    reshape costs numba a runtime call (numba_attempt_nocopy_reshape, ~12 ns each, four per
    kernel call); the callers check that the rows fit (:func:`check_fits`).
    """
    ret = types.Array(like, 2, 'C')

    def codegen(context, builder, sig, args):
        src = make_array(sig.args[0])(context, builder, args[0])
        dst = make_array(ret)(context, builder)
        first, rows, cols = (context.cast(builder, a, t, types.intp)
                             for a, t in zip(args[1:4], sig.args[1:4]))
        data = builder.bitcast(builder.gep(src.data, [first]),
                               context.get_data_type(ret.dtype).as_pointer())
        itemsize = context.get_constant(types.intp, 8)
        populate_array(dst, data=data, shape=[rows, cols],
                       strides=[builder.mul(cols, itemsize), itemsize],
                       itemsize=src.itemsize, meminfo=src.meminfo, parent=src.parent)
        return dst._getvalue()
    return ret(vec, start, nrows, ncols, like), codegen


@numba.njit(**INLINE)
def check_fits(vec, n):
    """Raise ValueError unless vec holds at least n items (the tables cut from it fit)."""
    if vec.shape[0] < n:
        raise ValueError('a kernel table does not fit in its array')


@numba.njit(**INLINE)
def model_tables(model):
    """Return the views (ints, reals) of RobotModel.kernel_model: reals, then ints (bit copies)."""
    nb = model.shape[0] // (NREAL + NINT)
    reals = _matrix_view(model, 0, nb, NREAL, 0.0)
    ints = _matrix_view(model, nb * NREAL, nb, NINT, np.int64(0))
    return ints, reals


@numba.njit(**INLINE)
def workspace_tables(buffer, nb):
    """Return the views (ws, wa) of a Workspace.buffer: RNEA rows, then ABA rows."""
    check_fits(buffer, (nb + 1) * W_N + (nb + 2) * B_N)
    ws = _matrix_view(buffer, 0, nb + 1, W_N, 0.0)
    wa = _matrix_view(buffer, (nb + 1) * W_N, nb + 2, B_N, 0.0)
    return ws, wa


@numba.njit(**INLINE)
def kinematics_tables(buffer, nb):
    """Return the views (wk, wd) of a Workspace.buffer's kinematics rows: per body, per dof."""
    start = (nb + 1) * W_N + (nb + 2) * B_N
    check_fits(buffer, start + nb * K_N + (nb + 6) * D_N)
    wk = _matrix_view(buffer, start, nb, K_N, 0.0)
    wd = _matrix_view(buffer, start + nb * K_N, nb + 6, D_N, 0.0)
    return wk, wd


@numba.njit(**INLINE)
def all_finite(x):
    """Return True when every entry of the vector x is finite."""
    for i in range(x.shape[0]):
        if not np.isfinite(x[i]):
            return False
    return True


@numba.njit(**INLINE)
def strided(x):
    """Return True when the vector x is not contiguous.

    The dispatcher only passes C-contiguous vectors; a kernel called through its compiled entry
    point (:func:`rnea_ros.core.checks.entry_point`) may get any 1-D float64 array, and reads
    nothing of it before this check.
    """
    return x.shape[0] > 1 and x.strides[0] != 8


@numba.njit(**INLINE)
def check_q(ints, q):
    """Return a status code for a configuration alone: layout, length, finiteness, quaternion."""
    if strided(q):
        return STATUS_STRIDED
    nb = ints.shape[0]
    floating = nb > 0 and ints[0, KIND] == FREE_FLYER
    if q.shape[0] != nb + (6 if floating else 0):
        return STATUS_LEN_Q
    if not all_finite(q):
        return STATUS_BAD_Q
    if floating:
        n2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
        if not (n2 >= 1e-12 and n2 < 1e300):
            return STATUS_BAD_QUATERNION
    return STATUS_OK


@numba.njit(**INLINE)
def check_state(ints, q, qd, qdd):
    """Return a status code for the state: layout, lengths, non-finite entries, quaternion.

    A floating-base quaternion must have a norm that is neither ~0 nor so large that its square
    overflows (it is normalised in the kernels).
    """
    if strided(q) or strided(qd) or strided(qdd):
        return STATUS_STRIDED
    nb = ints.shape[0]
    floating = nb > 0 and ints[0, KIND] == FREE_FLYER
    if q.shape[0] != nb + (6 if floating else 0):
        return STATUS_LEN_Q
    if qd.shape[0] != nb + (5 if floating else 0):
        return STATUS_LEN_QD
    if qdd.shape[0] != qd.shape[0]:
        return STATUS_LEN_QDD
    if not all_finite(q):
        return STATUS_BAD_Q
    if not all_finite(qd):
        return STATUS_BAD_QD
    if not all_finite(qdd):
        return STATUS_BAD_QDD
    if floating:
        n2 = q[3] * q[3] + q[4] * q[4] + q[5] * q[5] + q[6] * q[6]
        if not (n2 >= 1e-12 and n2 < 1e300):
            return STATUS_BAD_QUATERNION
    return STATUS_OK
