"""OpenBLAS and numba on one thread for a block of code (shared, busy machines).

Identification and excitation design do their linear algebra on small matrices (tens of
columns) and evaluate regressors of a few dozen samples at a time, where the threads of
OpenBLAS and of numba's parallel kernels only wait for each other, and much longer when the
cores are busy with other work: on two busy cores a 66 x 66 eigenvalue call took 23 ms with
OpenBLAS's threads and 1.2 ms without; a 30 s excitation design for the panda took 53 s wall
for 3.3 s of CPU with numba's two threads.
"""

import contextlib
import ctypes
import glob
import os


@contextlib.contextmanager
def single_threaded():
    """Run the block with numba and numpy's and scipy's OpenBLAS on one thread; then restore.

    The OpenBLAS libraries bundled with numpy and scipy (``numpy.libs``, ``scipy.libs``) are
    found by name; where they are not found, they are left as they are.
    """
    import numba
    import numpy
    import scipy
    threads = numba.get_num_threads()
    numba.set_num_threads(1)
    controls = []
    for package in (numpy, scipy):
        folder = os.path.join(os.path.dirname(os.path.dirname(package.__file__)),
                              f'{package.__name__}.libs')
        for path in glob.glob(os.path.join(folder, '*openblas*.so*')):
            try:
                lib = ctypes.CDLL(path)
            except OSError:
                continue
            for suffix in ('64_', ''):
                try:
                    get = getattr(lib, f'scipy_openblas_get_num_threads{suffix}')
                    set_ = getattr(lib, f'scipy_openblas_set_num_threads{suffix}')
                except AttributeError:
                    continue
                controls.append((set_, get()))
                set_(1)
                break
    try:
        yield
    finally:
        numba.set_num_threads(threads)
        for set_, count in controls:
            set_(count)
