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


def action_client_ready(node, action_type, name: str, attempts: int = 3, each_s: float = 40.0):
    """An ActionClient on `node` whose server is discovered, or None after `attempts` clients
    each waited `each_s` seconds. A client that has not matched the server in that time on a
    loaded 2-core machine is destroyed and made again: its endpoints are new ones that
    discovery announces afresh, where waiting longer on the first would wait on the same
    lost announcement."""
    from rclpy.action import ActionClient

    for attempt in range(1, attempts + 1):
        client = ActionClient(node, action_type, name)
        if client.wait_for_server(timeout_sec=each_s):
            return client
        print(f'{name}: no server matched in {each_s:.0f} s (client {attempt} of {attempts})')
        client.destroy()
    return None
