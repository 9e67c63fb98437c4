"""ROS clients that let pure cores talk to other nodes without knowing about ROS.

The deliberation core wants a `Backend`; the tools want a `query(service, fields, timeout)`
callable; the agent wants a fear review. These adapters give them that over the `llm`,
`memory`, `perception` and `fear` nodes. They are called from worker threads (never from an
executor callback), wait on futures with a timeout, and turn every failure into a typed
outcome: `LLMError` for the model, `None` (subsystem absent) or an error dict for services.
The goals and results are converted in maxim_core.conversions; `wait_for_future` is
maxim_common.futures' (imported from here by the soak and scenario runners).
"""

import json
import threading
import time

from action_msgs.msg import GoalStatus
from rclpy.action import ActionClient

from maxim_common.conversions import fill_msg, msg_to_dict
from maxim_common.futures import wait_for_future
from maxim_core.conversions import call_to_goal, result_to_completion
from maxim_core.llm.backend import (BAD_REQUEST, BUSY, CANCELLED, Completion, LLMError,
                                    TIMEOUT, UNAVAILABLE)
from maxim_interfaces.action import Generate
from maxim_interfaces.msg import ToolCall
from maxim_interfaces.srv import (CausalLinks, ConceptQuery, Embed, Enrich, MemoryRecall,
                                  PainHistory, PredictOutcome, Relate, ReviewAction,
                                  SceneSummary, SimilaritySearch, SystemStats,
                                  TemporalPatterns, Tokenize)


class GenerateBackend:
    """A `Backend` on the `llm` node's Generate action and Tokenize service.

    Must be used from a thread other than the executor's (the executor spins the client).
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

    def _call_tokenize(self, text: str, count_only: bool):
        if not self._tokenize.wait_for_service(timeout_sec=self.server_wait_s):
            raise LLMError(UNAVAILABLE, 'the llm/tokenize service is not available')
        future = self._tokenize.call_async(Tokenize.Request(text=text, count_only=count_only))
        if not wait_for_future(future, 10.0):
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
        if not self._action.wait_for_server(timeout_sec=self.server_wait_s):
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
        if not wait_for_future(send, self.server_wait_s):
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


# Introspection queries: tool name -> (service name, type). energy_status is the agent's own.
QUERY_SERVICES = {
    'memory_recall': ('memory/memory_recall', MemoryRecall),
    'similarity_search': ('memory/similarity_search', SimilaritySearch),
    'predict_outcome': ('memory/predict_outcome', PredictOutcome),
    'causal_links': ('memory/causal_links', CausalLinks),
    'pain_history': ('memory/pain_history', PainHistory),
    'temporal_patterns': ('memory/temporal_patterns', TemporalPatterns),
    'concept_query': ('memory/concept_query', ConceptQuery),
    'system_stats': ('memory/system_stats', SystemStats),
    'enrich': ('memory/enrich', Enrich),
    'relate': ('memory/relate', Relate), 'embed': ('memory/embed', Embed),
    'scene_summary': ('perception/scene_summary', SceneSummary),
}


class ServiceQuery:
    """`query(name, fields, timeout_s) -> dict | None` over the introspection services.

    None means the subsystem is absent (no server within the wait); a dict is the response
    (with its own `available`, `error_code` and `error_msg`), and a response's `result_json`
    is parsed here into `result`: the pure core reads values, never JSON text.
    """

    def __init__(self, node, callback_group=None, server_wait_s: float = 0.5):
        self.node = node
        self.server_wait_s = server_wait_s
        self._clients = {name: node.create_client(srv, service, callback_group=callback_group)
                         for name, (service, srv) in QUERY_SERVICES.items()}

    def __call__(self, name: str, fields: dict, timeout_s: float = 2.0) -> dict | None:
        if name not in self._clients:
            raise ValueError(f'unknown query {name!r}; known: {", ".join(self._clients)}')
        client = self._clients[name]
        if not client.wait_for_service(timeout_sec=self.server_wait_s):
            return None
        request = fill_msg(QUERY_SERVICES[name][1].Request(), fields)
        future = client.call_async(request)
        if not wait_for_future(future, timeout_s):
            future.cancel()
            return {'available': True, 'error_code': 255,
                    'error_msg': f'{QUERY_SERVICES[name][0]} did not answer in {timeout_s} s'}
        return with_result(msg_to_dict(future.result()))

    query = __call__    # the Mind's MemoryPort


def with_result(answer: dict) -> dict:
    """`answer` with its `result_json` parsed into `result`; no JSON is an error answer."""
    try:
        answer['result'] = json.loads(answer['result_json']) if answer.get('result_json') \
            else None
    except ValueError as exc:
        answer.update(result=None, error_code=answer.get('error_code') or 255,
                      error_msg=answer.get('error_msg') or f'result_json is no JSON: {exc}')
    return answer


class FearClient:
    """`review(call, context, context_key) -> dict` over fear/review_action.

    `context` is the situation text (for the gate's LLM layer), `context_key` the key the
    NAc learned outcomes under (see maxim_core.agent.loop.context_key).

    Fails closed: when the fear node is absent or slow, the call is blocked with
    layer LAYER_FAIL_CLOSED and a reason saying so.
    """

    def __init__(self, node, mode: str, callback_group=None, timeout_s: float = 10.0,
                 server_wait_s: float = 2.0):
        self.node = node
        self.mode = mode
        self.timeout_s = timeout_s
        self.server_wait_s = server_wait_s
        self._client = node.create_client(ReviewAction, 'fear/review_action',
                                          callback_group=callback_group)

    def __call__(self, call: ToolCall, context: str = '', context_key: str = '') -> dict:
        if call.introspection:
            return {'allowed': True, 'layer': ReviewAction.Response.LAYER_BYPASS,
                    'category': '', 'reason': 'read-only introspection', 'risk': 0.0}
        if not self._client.wait_for_service(timeout_sec=self.server_wait_s):
            return {'allowed': False, 'layer': ReviewAction.Response.LAYER_FAIL_CLOSED,
                    'category': '', 'reason': 'the fear gate is not running: blocked to be safe',
                    'risk': 1.0}
        future = self._client.call_async(
            ReviewAction.Request(call=call, context=context[:4000], context_key=context_key,
                                 mode=self.mode))
        if not wait_for_future(future, self.timeout_s):
            future.cancel()
            return {'allowed': False, 'layer': ReviewAction.Response.LAYER_FAIL_CLOSED,
                    'category': '', 'risk': 1.0,
                    'reason': f'the fear gate did not answer in {self.timeout_s} s'}
        return msg_to_dict(future.result())
