"""The direct kernel entry points of the plain calls get only arrays they can read safely.

Plain calls skip numba's type dispatch (core.checks.entry_point) after checking that the state
vectors are 1-D float64 numpy arrays; the kernels check contiguity.  Every other kind of vector
(other dtypes of the same item size, 2-D and 0-D arrays, strided and reversed views, byte-swapped
or read-only arrays, array-like objects) must give the same result as a clean array, or the same
ValueError, never a wrong number or a crash.
"""

import numpy as np
import pytest

from rnea_ros import (coriolis_matrix, forward_dynamics, frame_jacobian, frame_placement,
                      inverse_dynamics, RobotModel)
from robots import random_state, urdf_path


@pytest.fixture(scope='module', params=[False, True], ids=['fixed', 'floating'])
def panda(request):
    return RobotModel.from_urdf_file(urdf_path('panda'), floating_base=request.param)


def variants(x):
    """Return the same values as other kinds of vectors (name, vector)."""
    wide = np.zeros((x.size, 3))
    wide[:, 1] = x
    ro = x.copy()
    ro.flags.writeable = False
    return [('list', list(x)), ('strided view', wide[:, 1]), ('reversed view', x[::-1][::-1]),
            ('reversed copy view', np.ascontiguousarray(x[::-1])[::-1]),
            ('big-endian', x.astype('>f8')), ('read-only', ro), ('float32', x.astype(np.float32)),
            ('object', x.astype(object)), ('subclass', x.view(np.ma.MaskedArray))]


def calls(model, q, qd, x):
    """Return the five plain calls of a state as functions of one replaced vector."""
    return {
        'inverse_dynamics q': lambda v: inverse_dynamics(model, v, qd, x),
        'inverse_dynamics qdd': lambda v: inverse_dynamics(model, q, qd, v),
        'forward_dynamics tau': lambda v: forward_dynamics(model, q, qd, v),
        'coriolis_matrix qd': lambda v: coriolis_matrix(model, q, v),
        'frame_jacobian q': lambda v: frame_jacobian(model, v, 'panda_hand', 'WORLD'),
        'frame_placement q': lambda v: frame_placement(model, v, 'panda_hand'),
    }


def test_every_kind_of_vector_gives_the_clean_result(panda):
    q, qd, x = random_state(panda, np.random.default_rng(1))
    for name, fn in calls(panda, q, qd, x).items():
        clean = {'q': q, 'qd': qd, 'qdd': x, 'tau': x}[name.split()[1]]
        expected = fn(clean)
        for kind, v in variants(clean):
            tol = 1e-4 if kind == 'float32' else 0.0
            np.testing.assert_allclose(fn(v), expected, rtol=tol, atol=tol,
                                       err_msg=f'{name} from a {kind}')


def test_same_size_other_dtypes_and_shapes_are_refused_or_converted(panda):
    """int64 (same item size as float64) is converted by value; 2-D and 0-D shapes refused."""
    q, qd, x = random_state(panda, np.random.default_rng(2))
    ints = np.arange(panda.nv, dtype=np.int64) % 2
    np.testing.assert_array_equal(inverse_dynamics(panda, q, ints, x),
                                  inverse_dynamics(panda, q, ints.astype(float), x))
    np.testing.assert_array_equal(coriolis_matrix(panda, q, ints),
                                  coriolis_matrix(panda, q, ints.astype(float)))
    for bad in (q.reshape(1, -1), np.stack([q, q]), np.float64(1.0), np.zeros((0, 3))):
        for name, fn in calls(panda, q, qd, x).items():
            if name.split()[1] == 'q':
                with pytest.raises(ValueError, match='shape|vector'):
                    fn(bad)


def test_wrong_lengths_through_views_keep_their_messages(panda):
    q, qd, x = random_state(panda, np.random.default_rng(3))
    long = np.zeros((panda.nv + 3, 2))[:, 0]
    with pytest.raises(ValueError, match=rf'qdd has shape \({panda.nv + 3},\)'):
        inverse_dynamics(panda, q, qd, long)
    with pytest.raises(ValueError, match=rf'qd has shape \({panda.nv + 3},\)'):
        coriolis_matrix(panda, q, long)
    nan = np.zeros((panda.nq, 2))[:, 1]
    nan[:] = q
    nan[-1] = np.nan
    with pytest.raises(ValueError, match=rf'q\[{panda.nq - 1}\] .* is nan'):
        frame_jacobian(panda, nan, 'panda_hand')


def test_numba_cache_is_keyed_on_every_kernel_source():
    """Every kernel module and the helpers they inline are hashed by the cache refresher.

    numba keys its cache on the defining file only: a kernel source missing from the hash could
    leave a stale compiled kernel in use after an edit (e.g. without a newer input check).
    """
    import os
    from rnea_ros.core.kernels import _fresh_cache
    here = os.path.dirname(_fresh_cache.__file__)
    kernel_files = {f for f in os.listdir(here) if f.endswith('.py')}
    kernel_files -= {'__init__.py', '_fresh_cache.py'}
    hashed = {os.path.normpath(s) for s in _fresh_cache._SOURCES}
    assert kernel_files <= hashed
    assert {os.path.join('..', 'layout.py'), os.path.join('..', 'joints.py')} <= hashed
    for directory in _fresh_cache.cache_dirs()[:1]:
        with open(os.path.join(directory, _fresh_cache._STAMP)) as f:
            assert f.read().strip() == _fresh_cache.sources_digest()
