"""GenerateBackend (the agent's and the fear node's model client) when the llm node stops
answering: a stopping node abandons the call at once instead of waiting out its timeout."""

import contextlib
import threading
import time

import pytest

pytestmark = pytest.mark.ros


@contextlib.contextmanager
def served(execute, cancel_response):
    """A Generate action server running `execute`, and a GenerateBackend client of it, on
    one executor in a context of their own. `cancel_response`: what a cancel request gets,
    or a callable that answers it."""
    import rclpy
    from rclpy.action import ActionServer
    from rclpy.callback_groups import ReentrantCallbackGroup
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.node import Node

    from maxim_core.nodes.generate_client import GenerateBackend
    from maxim_interfaces.action import Generate

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = MultiThreadedExecutor(num_threads=4, context=ctx)
    group = ReentrantCallbackGroup()
    server_node = Node('test_llm', context=ctx)
    server = ActionServer(server_node, Generate, 'llm/generate', execute,
                          cancel_callback=(cancel_response if callable(cancel_response)
                                           else lambda _goal: cancel_response),
                          callback_group=group)
    client_node = Node('client', context=ctx)
    backend = GenerateBackend(client_node, 'test', callback_group=group, timeout_s=60.0)
    executor.add_node(server_node)
    executor.add_node(client_node)
    threading.Thread(target=executor.spin, daemon=True).start()
    try:
        yield backend
    finally:
        executor.shutdown(timeout_sec=5.0)
        server.destroy()
        backend.destroy()
        client_node.destroy_node()
        server_node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def test_abort_ends_a_call_the_server_never_answers():
    from rclpy.action import CancelResponse

    from maxim_core.llm.backend import CANCELLED, LLMError
    from maxim_interfaces.action import Generate

    release = threading.Event()
    accepted = threading.Event()

    def execute(handle):            # a server that has stopped working: no answer comes
        accepted.set()
        release.wait(30.0)
        handle.abort()
        return Generate.Result()

    outcome = {}
    with served(execute, CancelResponse.REJECT) as backend:
        def call():
            t0 = time.monotonic()
            try:
                backend.complete('Hello', max_tokens=4)
            except LLMError as exc:
                outcome['code'] = exc.code
            outcome['s'] = time.monotonic() - t0

        caller = threading.Thread(target=call, daemon=True)
        try:
            caller.start()
            assert accepted.wait(10.0)        # the goal is accepted and waiting
            assert caller.is_alive()
            backend.abort()
            caller.join(timeout=10.0)
            assert not caller.is_alive()
            assert outcome['code'] == CANCELLED
            with pytest.raises(LLMError) as later:
                backend.complete('Again', max_tokens=4)       # and no new call starts
            assert later.value.code == CANCELLED
        finally:
            release.set()            # the server's handler ends before the teardown


def test_a_caller_cancels_while_the_server_reads_the_prompt_before_any_token():
    from rclpy.action import CancelResponse

    from maxim_core.llm.backend import STOP_CANCELLED
    from maxim_interfaces.action import Generate

    accepted, stop, cancel_asked = threading.Event(), threading.Event(), threading.Event()

    def on_cancel(_goal):
        cancel_asked.set()
        return CancelResponse.ACCEPT

    def execute(handle):           # a long prompt being read: no token, cancel honoured
        accepted.set()
        cancel_asked.wait(30.0)    # llama.cpp reading the prompt until the cancel comes
        # The goal turns to canceling just after the cancel callback returns: either end
        # says the call was cancelled (the client reads the error code as well).
        result = Generate.Result(error_code=Generate.Result.ERROR_CANCELLED)
        if handle.is_cancel_requested:
            handle.canceled()
        else:
            handle.abort()
        return result

    outcome = {}
    with served(execute, on_cancel) as backend:
        def call():
            t0 = time.monotonic()
            done = backend.complete('A long prompt', max_tokens=4,
                                    on_token=lambda _piece: not stop.is_set())
            outcome['stop'], outcome['s'] = done.stop_reason, time.monotonic() - t0

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        assert accepted.wait(10.0)
        stop.set()                               # the deliberation was cancelled
        caller.join(timeout=20.0)
        assert not caller.is_alive()
        assert outcome['stop'] == STOP_CANCELLED
