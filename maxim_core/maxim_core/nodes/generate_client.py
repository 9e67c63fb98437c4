"""The `Backend` the deliberation core wants, over the `llm` node's Generate action and
Tokenize service (see clients.py for the other adapters). Called from worker threads, never
from an executor callback; every wait has a timeout, and ends at once when the node stops.
"""

import threading
import time

from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient

from maxim_common.futures import wait_for_future, wait_until
from maxim_core.conversions import call_to_goal, result_to_completion
from maxim_core.llm.backend import (BAD_REQUEST, BUSY, CANCELLED, Completion, LLMError,
                                    TIMEOUT, UNAVAILABLE)
from maxim_interfaces.action import Generate
from maxim_interfaces.srv import Tokenize


class GenerateBackend:
    """A `Backend` on the `llm` node's Generate action and Tokenize service.

    Must be used from a thread other than the executor's (the executor spins the client).
    Every wait ends at once on abort(): a stopping node's thread is not held for a server
    that is stopping too (the agent's stop joins that thread).
    """

    def __init__(self, node, client_name: str, callback_group=None,
                 action_name: str = 'llm/generate', tokenize_name: str = 'llm/tokenize',
                 timeout_s: float = 120.0, server_wait_s: float = 5.0):
        self.node = node
        self.client_name = client_name
        self.timeout_s = timeout_s
        self.server_wait_s = server_wait_s
        self._action = ActionClient(node, Generate, action_name, callback_group=callback_group)
        self._tokenize = node.create_client(Tokenize, tokenize_name,
                                            callback_group=callback_group)
        self.n_ctx = 0
        self.model = ''
        self._count_cache: dict[str, int] = {}
        self._closing = threading.Event()

    def abort(self) -> None:
        """Calls waiting now and later end at once (CANCELLED): the node is stopping, and
        the llm node may already be gone, so no reply or cancellation would ever come."""
        self._closing.set()

    def destroy(self) -> None:
        self._closing.set()
        self._action.destroy()
        self.node.destroy_client(self._tokenize)

    def ready(self) -> bool:
        """The llm node's Generate action server is on the graph (no wait)."""
        return self._action.server_is_ready()

    # -- tokenizer ---------------------------------------------------------------------------
    def tokenize(self, text: str) -> list[int]:
        response = self._call_tokenize(text, count_only=False)
        return list(response.tokens)

    def count_tokens(self, text: str) -> int:
        """Token count with the model's own tokenizer (cached: prompts repeat sections)."""
        if text in self._count_cache:
            return self._count_cache[text]
        count = int(self._call_tokenize(text, count_only=True).count)
        if len(self._count_cache) > 4096:
            self._count_cache.clear()
        self._count_cache[text] = count
        return count

    def _wait(self, done, timeout_s: float, what: str, future=None) -> bool:
        """Until `done()` (True) or `timeout_s` (False); LLMError(CANCELLED) on abort()."""
        got = wait_until(done, timeout_s, self._closing, future)
        if got is None:
            raise LLMError(CANCELLED, f'stopping: {what} abandoned')
        return got

    def _call_tokenize(self, text: str, count_only: bool):
        if not self._wait(self._tokenize.service_is_ready, self.server_wait_s,
                          'waiting for llm/tokenize'):
            raise LLMError(UNAVAILABLE, 'the llm/tokenize service is not available')
        future = self._tokenize.call_async(Tokenize.Request(text=text, count_only=count_only))
        if not self._wait(future.done, 10.0, 'llm/tokenize', future):
            future.cancel()
            raise LLMError(TIMEOUT, 'llm/tokenize did not answer within 10 s')
        response = future.result()
        if response.error_code != Tokenize.Response.ERROR_NONE:
            code = UNAVAILABLE if response.error_code == \
                Tokenize.Response.ERROR_MODEL_NOT_LOADED else BAD_REQUEST
            raise LLMError(code, response.error_msg or 'tokenize failed')
        self.n_ctx = int(response.n_ctx) or self.n_ctx
        self.model = response.model or self.model
        return response

    def ensure_ready(self) -> None:
        """Learn n_ctx and the model name (raises LLMError when the llm node is absent)."""
        self._call_tokenize('', count_only=True)

    # -- generation --------------------------------------------------------------------------
    def complete(self, prompt: str, *, on_token=None, **kw) -> Completion:
        """Backend.complete (max_tokens, temperature, top_p, top_k, repeat_penalty, seed,
        stop, json_schema, grammar, avoid: conversions.call_to_goal) through the llm node."""
        return self._call(call_to_goal(Generate.Goal(), prompt, **kw), on_token)

    def score(self, prompt: str, continuations) -> Completion:
        """Backend.score through the llm node (a goal with `candidates`)."""
        return self._call(Generate.Goal(prompt=prompt, candidates=list(continuations)), None)

    def _call(self, goal, on_token) -> Completion:
        t0 = time.monotonic()
        if self._closing.is_set():
            raise LLMError(CANCELLED, 'stopping: no new calls')
        if not self._wait(self._action.server_is_ready, self.server_wait_s,
                          'waiting for llm/generate'):
            raise LLMError(UNAVAILABLE, 'the llm/generate action server is not available')
        goal.request_id = f'{self.client_name}-{int(t0 * 1e6)}'
        goal.client = self.client_name
        goal.timeout_s = float(self.timeout_s)
        cancel = threading.Event()

        def feedback(msg):
            if on_token is not None and msg.feedback.text_delta:
                if on_token(msg.feedback.text_delta) is False:
                    cancel.set()

        send = self._action.send_goal_async(goal, feedback_callback=feedback)
        if not self._wait(send.done, self.server_wait_s, 'llm/generate goal', send):
            raise LLMError(TIMEOUT, 'llm/generate did not accept the goal in time')
        handle = send.result()
        if handle is None or not handle.accepted:
            raise LLMError(BUSY, 'llm/generate rejected the goal')
        result_future = handle.get_result_async()
        deadline = t0 + self.timeout_s + self.server_wait_s
        while not result_future.done():
            # The caller is asked between tokens too (an empty piece): a deliberation
            # cancelled while the llm node reads the prompt (no token yet) is let go at once.
            if on_token is not None and not cancel.is_set() and on_token('') is False:
                cancel.set()
            if self._closing.is_set():
                handle.cancel_goal_async()
                raise LLMError(CANCELLED, 'stopping: the call was abandoned')
            if cancel.is_set():
                handle.cancel_goal_async()
                cancel.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                handle.cancel_goal_async()
                raise LLMError(TIMEOUT, f'no answer from llm/generate in {self.timeout_s:.0f} s')
            wait_for_future(result_future, min(0.05, remaining))
        wrapped = result_future.result()
        return result_to_completion(wrapped.result,
                                    wrapped.status == GoalStatus.STATUS_CANCELED)
