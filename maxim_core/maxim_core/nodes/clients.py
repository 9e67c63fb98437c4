"""ROS clients that let pure cores talk to other nodes without knowing about ROS.

The deliberation core wants a `Backend`; the tools want a `query(service, fields, timeout)`
callable; the agent wants a fear review. These adapters give them that over the `llm`,
`memory`, `perception` and `fear` nodes. They are called from worker threads (never from an
executor callback), wait on futures with a timeout, and turn every failure into a typed
outcome: `LLMError` for the model, `None` (subsystem absent) or an error dict for services.
The model's Backend is generate_client.py's. `wait_for_future` is
maxim_common.futures' (imported from here by the soak and scenario runners).
"""

import json

from maxim_common.conversions import fill_msg, msg_to_dict
from maxim_common.futures import wait_for_future
from maxim_interfaces.msg import ToolCall
from maxim_interfaces.srv import (CausalLinks, ConceptQuery, Embed, Enrich, MemoryRecall,
                                  PainHistory, PredictOutcome, Relate, ReviewAction,
                                  SceneSummary, SimilaritySearch, SystemStats,
                                  TemporalPatterns)


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
