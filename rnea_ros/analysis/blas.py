"""numpy's and scipy's OpenBLAS on one thread for a block of code (shared, busy machines).

Identification and excitation design do their linear algebra on small matrices (tens of
columns), where OpenBLAS's threads only wait for each other, and much longer when the cores
are busy with other work: on two busy cores a 66 x 66 eigenvalue call took 23 ms with its
threads and 1.2 ms without.
"""

import contextlib
import ctypes
import glob
import os


@contextlib.contextmanager
def single_threaded_blas():
    """Run the block with numpy's and scipy's OpenBLAS on one thread, then restore them.

    The OpenBLAS libraries bundled with numpy and scipy (``numpy.libs``, ``scipy.libs``) are
    found by name; where they are not found, nothing changes.
    """
    import numpy
    import scipy
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
        for set_, threads in controls:
            set_(threads)
