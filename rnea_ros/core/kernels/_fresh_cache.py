"""Keep numba's on-disk cache of the kernels honest across the kernel modules (imported first).

numba keys a cached kernel on the file that *defines* it (its content hash since numba 0.6x,
its modification time before), not on the helpers it inlines from other files (numba issue
#1833; "cache" in numba's jit documentation).  The kernels inline helpers and constants across
``jit.py``, ``body.py``, ``rnea.py``, ``../layout.py``, ``../joints.py`` and
``../friction.py`` (its table columns): a kernel loaded
from the cache after a helper changed would run the old helper (an old input check, an old
workspace layout).  So at import this module hashes every source the kernels are built from
and, when the hash differs from the one recorded in the cache directory, removes the kernels'
cache files there (numba recompiles and rewrites them) and records the new hash.  Best effort:
an unwritable cache is left alone (the sources of an installed package do not change).
"""

import glob
import hashlib
import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_SOURCES = ('jit.py', 'body.py', 'rnea.py', 'aba.py', 'regressor.py', 'coriolis.py',
            'kinematics.py', 'frame_acceleration.py', 'vectors.py', 'observer.py',
            os.path.join('..', 'layout.py'), os.path.join('..', 'joints.py'),
            os.path.join('..', 'friction.py'))
_STAMP = 'rnea_ros_kernel_sources.sha256'


def sources_digest():
    """Return the SHA-256 of every source file the kernels are compiled from."""
    digest = hashlib.sha256()
    for name in _SOURCES:
        with open(os.path.join(_HERE, name), 'rb') as f:
            digest.update(f.read())
    return digest.hexdigest()


def cache_dirs():
    """Return the directories where numba may keep these kernels' cache files."""
    dirs = [os.path.join(_HERE, '__pycache__')]
    from numba.core import config
    if config.CACHE_DIR:                    # NUMBA_CACHE_DIR: numba's per-directory subpath
        try:
            from numba.core.caching import _CacheLocator
            sub = _CacheLocator.get_suitable_cache_subpath(__file__)
        except (ImportError, AttributeError):
            sub = '_'.join([os.path.basename(_HERE),
                            hashlib.sha1(_HERE.encode()).hexdigest()])
        dirs.append(os.path.join(config.CACHE_DIR, sub))
    return dirs


def refresh():
    """Remove the kernels' cache files where they were compiled from other sources."""
    try:
        digest = sources_digest()
    except OSError:
        return
    for directory in cache_dirs():
        stamp = os.path.join(directory, _STAMP)
        try:
            with open(stamp) as f:
                if f.read().strip() == digest:
                    continue
        except OSError:
            pass
        try:        # a new directory gets the stamp too, so that what numba writes stays
            os.makedirs(directory, exist_ok=True)
            for path in glob.glob(os.path.join(directory, '*.nb[ic]')):
                os.remove(path)
            with open(stamp, 'w') as f:
                f.write(digest + '\n')
        except OSError:
            pass


refresh()
