"""A loaded machine for the tests whose bounds must hold under load (a robot's computer is busy
too): one busy process per core, spinning at normal priority, for as long as the test that
asked for them.

    with busy_cores() as load:      # every core busy until the block ends
        ...

Each busy process ends by itself after `limit_s` even if the block is never left (a test
killed by its timeout, an interpreter that died), so a load cannot outlive its test by more
than that; the block's end kills them at once.
"""

import contextlib
import os
import subprocess
import sys

# The loop of one busy process: pure interpreter work, no I/O, until its own deadline.
_SPIN = ('import time\n'
         'end = time.monotonic() + {limit_s}\n'
         'while time.monotonic() < end:\n'
         '    pass\n')

LIMIT_S = 300.0     # longer than any test that uses it, shorter than a forgotten one


class Load:
    """The busy processes of a `busy_cores` block."""

    def __init__(self, procs: list):
        self.procs = procs

    @property
    def busy(self) -> int:
        """How many are still spinning (a test can check its load was there to the end)."""
        return sum(p.poll() is None for p in self.procs)


@contextlib.contextmanager
def busy_cores(n: int | None = None, limit_s: float = LIMIT_S):
    """`n` busy processes (default: one per core) for the duration of the block."""
    n = (os.cpu_count() or 2) if n is None else n
    procs = []
    try:
        for _ in range(n):
            procs.append(subprocess.Popen([sys.executable, '-c', _SPIN.format(limit_s=limit_s)],
                                          stdin=subprocess.DEVNULL))
        yield Load(procs)
    finally:
        for proc in procs:
            proc.kill()
        for proc in procs:
            proc.wait(timeout=10)
