"""Writing results: whole files or nothing (a temporary file renamed over the target)."""

import os
import tempfile


def write_atomic(path, text):
    """Write ``text`` to ``path`` through a temporary file in the same folder and os.replace.

    A reader never sees a half-written file, and a failure leaves no output behind.
    """
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix='.' + os.path.basename(path) + '.', dir=folder)
    try:
        with os.fdopen(fd, 'w', encoding='utf-8') as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
