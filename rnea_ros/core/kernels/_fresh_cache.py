"""Keep numba's on-disk cache of the kernels honest across the kernel modules (imported first).

numba invalidates a cached kernel when the file that *defines* it changes, not when a helper it
inlines from another file changes (numba issue #1833; "cache" in numba's jit documentation).
The entry kernels live in ``rnea.py`` and ``aba.py`` and inline helpers and constants from
``jit.py``, ``body.py``, ``../layout.py`` and ``../joints.py``: when one of those is newer than
an entry file, the entry file's modification time is bumped so that numba recompiles instead of
loading a stale kernel.  Best effort: a read-only install (where sources do not change) is left
alone.
"""

import os

_HERE = os.path.dirname(os.path.abspath(__file__))
_HELPERS = ('jit.py', 'body.py', os.path.join('..', 'layout.py'), os.path.join('..', 'joints.py'))
_ENTRIES = ('rnea.py', 'aba.py')


def refresh():
    """Bump the entry files' modification time when a helper file is newer."""
    try:
        newest = max(os.stat(os.path.join(_HERE, name)).st_mtime for name in _HELPERS)
        for name in _ENTRIES:
            path = os.path.join(_HERE, name)
            if os.stat(path).st_mtime < newest:
                os.utime(path)
    except OSError:
        pass


refresh()
