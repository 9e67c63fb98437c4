"""A graph run by the in-process runner, and a probe beside it that talks to it over DDS."""

from contextlib import contextmanager
import threading
import time


def spin_until(executor, condition, timeout_s: float) -> None:
    """Spin until `condition()` or `timeout_s` seconds (by the clock: a spin_once returns at
    once when messages are waiting, so a count of spins is no measure of time)."""
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.05)


@contextmanager
def probe_beside(runner, name: str = 'probe'):
    """`runner` (started) spinning on a thread, and a probe node in a context of its own (a
    DDS participant of its own, as another process would have) with its executor: yields
    (node, executor). On leaving, the probe goes first, then the graph stops."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    spin = threading.Thread(target=runner.spin, daemon=True)
    spin.start()
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node(name, context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    try:
        yield node, executor
    finally:
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)
        runner.request_stop()
        spin.join(timeout=10)
        runner.stop()
