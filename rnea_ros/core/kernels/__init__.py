"""Numba kernels: the algorithms of :mod:`rnea_ros.core.reference` on the model's flat arrays.

The kernels compute exactly what the numpy reference computes (tests compare them to 1e-12),
but without forming 6x6 matrices (see :mod:`rnea_ros.core.kernels.body`).  Per-body results
live in a workspace buffer (columns in :mod:`rnea_ros.core.layout`).  Kernels return a status
code instead of raising (``STATUS_*`` of the layout), which the Python wrappers of
:mod:`rnea_ros.core.checks` turn into a ValueError naming the argument and the joint.

Call cost: a kernel takes few arrays (the model's ``kernel_model``, a workspace ``buffer``, the
state vectors), because numba's dispatcher spends about 50 ns on each array argument; the model
and workspace tables are views cut from those two arrays inside the kernel.

- :mod:`._fresh_cache`: keeps numba's disk cache valid when a helper file changes;
- :mod:`.jit`: compilation options, signatures, table views, the input check;
- :mod:`.body`: per-body transforms and inertia products;
- :mod:`.rnea`: inverse dynamics (RBDA Table 5.1), per call and batched;
- :mod:`.aba`: forward dynamics (RBDA Table 7.1);
- :mod:`.coriolis`: the Coriolis matrix (Christoffel symbols);
- :mod:`.kinematics`: link-frame placement and Jacobian;
- :mod:`.vectors`: the small vector kernels of a control cycle (merge, mimic, clamp, limits).
"""

from rnea_ros.core.kernels import _fresh_cache  # noqa: F401 - first: see its docstring
from rnea_ros.core.kernels.aba import aba
from rnea_ros.core.kernels.coriolis import coriolis
from rnea_ros.core.kernels.jit import check_state
from rnea_ros.core.kernels.kinematics import frame_jacobian, frame_placement
from rnea_ros.core.kernels.rnea import rnea, rnea_batch

__all__ = ['rnea', 'rnea_batch', 'aba', 'check_state', 'coriolis', 'frame_jacobian',
           'frame_placement']
