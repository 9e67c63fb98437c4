"""Waiting on an rclpy future from a worker thread (no rclpy here: the future is duck-typed).

The clients that let pure cores call other nodes (maxim_core's nodes/clients.py, the fear
node, the soak and scenario runners) are called from worker threads, never from an executor
callback, and wait on their service and action futures with a timeout.
"""

import time


def wait_for_future(future, timeout_s: float) -> bool:
    """Block this (non-executor) thread until `future` is done or the timeout passes.

    It polls, 1 ms at first and backing off to 20 ms, instead of adding a done callback:
    rclpy runs done callbacks as new executor tasks, one more executor cycle per call, and
    a reply that lands while the executor shuts down fails inside it ("'NoneType' object
    has no attribute 'trigger'", printed at exit as an exception never retrieved).
    """
    deadline = time.monotonic() + timeout_s
    pause = 0.001
    while not future.done():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(pause, left))
        pause = min(0.02, pause * 1.5)
    return True


ABORT_POLL_S = 0.05      # how often a wait looks whether it was told to stop


def wait_until(done, timeout_s: float, abort, future=None) -> bool | None:
    """Until `done()` (True) or `timeout_s` (False); None as soon as the event `abort` is set
    (a stopping node's thread is not held for a server that is stopping too). With `future`,
    its own wait (wait_for_future) is used between the looks at `abort`."""
    deadline = time.monotonic() + timeout_s
    while not done():
        if abort.is_set():
            return None
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        if future is not None:
            wait_for_future(future, min(ABORT_POLL_S, left))
        else:
            abort.wait(min(ABORT_POLL_S, left))
    return True
