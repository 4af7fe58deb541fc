"""A word while a node's first start compiles the dynamics kernels (imported first by the nodes).

numba compiles the kernels the first time after an install (or a source change) and loads them
from its disk cache afterwards; the compile takes 8 to 60 s, during the node's imports, before
it can log anything.  Importing this module starts :data:`NOTICE`: when the imports that follow
take longer than ``delay`` seconds it logs one line saying why the node is silent, then one
every ``period`` seconds; the node calls :meth:`ColdStartNotice.done` after its imports (which
logs the total time if a line was printed).
"""

import threading
import time


def _log(text):
    from rclpy.logging import get_logger        # logs before rclpy.init, like the node's lines
    get_logger('rnea').info(text)


class ColdStartNotice:
    """Log that the kernels are compiling when the imports take long: once, then at a low rate."""

    def __init__(self, delay=3.0, period=15.0, log=_log):
        """Prepare; :meth:`start` starts the timer thread."""
        self.delay, self.period, self.log = delay, period, log
        self.said = 0
        self._done = threading.Event()
        self._start = time.monotonic()

    def start(self):
        """Start timing (a daemon thread that only waits and logs)."""
        self._start = time.monotonic()
        threading.Thread(target=self._watch, name='rnea_cold_start', daemon=True).start()
        return self

    def _watch(self):
        wait = self.delay
        while not self._done.wait(wait):
            elapsed = time.monotonic() - self._start
            if not self.said:
                self.log(f'loading the dynamics kernels ({elapsed:.0f} s): the first start after '
                         'an install compiles them (up to a minute), later starts load them '
                         'from the cache')
            else:
                self.log(f'still compiling the dynamics kernels ({elapsed:.0f} s)')
            self.said += 1
            wait = self.period

    def done(self):
        """Stop: the kernels are loaded (one closing line if the wait was announced)."""
        if not self._done.is_set():
            self._done.set()
            if self.said:
                self.log(f'dynamics kernels ready after {time.monotonic() - self._start:.1f} s')


NOTICE = ColdStartNotice().start()
