"""Message <-> core conversions of maxim_core's nodes (duck-typed: this module imports no
message package, so the cores stay free of ROS; the nodes pass the message objects in).

Only the `llm` node's Generate action and Tokenize service live here so far.
"""

import json

from maxim_core.llm.backend import (BAD_REQUEST, BUSY, CANCELLED, LLMError, STOP_CANCELLED,
                                    STOP_EOS, STOP_LENGTH, TIMEOUT, UNAVAILABLE)
from maxim_core.llm.llama import GrammarCompileError, STOP_TIMEOUT
from maxim_core.llm.queue import GenerateRequest, QueueFullError


def goal_to_request(goal, defaults: dict, format_chat, on_token=None) -> GenerateRequest:
    """A Generate goal as a queue request; `defaults` fills the fields the goal leaves unset
    (max_tokens, temperature, top_p, top_k, min_p, repeat_penalty, timeout_s).

    Raises LLMError(BAD_REQUEST) for an unparsable json_schema or an empty prompt.
    """
    if goal.messages:
        prompt = format_chat([{'role': m.role, 'content': m.content} for m in goal.messages])
    else:
        prompt = goal.prompt
    if not prompt:
        raise LLMError(BAD_REQUEST, 'the goal has neither a prompt nor messages')
    params = {
        'max_tokens': int(goal.max_tokens) or int(defaults['max_tokens']),
        'temperature': float(goal.temperature) if goal.temperature >= 0
        else float(defaults['temperature']),
        'top_p': float(goal.top_p) if goal.top_p > 0 else float(defaults['top_p']),
        'top_k': int(goal.top_k) if goal.top_k >= 0 else int(defaults['top_k']),
        'min_p': float(goal.min_p) if goal.min_p >= 0 else float(defaults['min_p']),
        'repeat_penalty': float(goal.repeat_penalty) if goal.repeat_penalty > 0
        else float(defaults['repeat_penalty']),
        'seed': int(goal.seed),
        'stop': [s for s in goal.stop if s],
    }
    if goal.grammar:
        params['grammar'] = goal.grammar
    elif goal.json_schema:
        try:
            schema = json.loads(goal.json_schema)
        except ValueError as exc:
            raise GrammarCompileError(f'json_schema is not JSON: {exc}') from exc
        if not isinstance(schema, dict):
            raise GrammarCompileError('json_schema must be a JSON object')
        params['json_schema'] = schema
    timeout = float(goal.timeout_s) if goal.timeout_s > 0 else float(defaults['timeout_s'])
    return GenerateRequest(prompt, params, on_token, goal.request_id, goal.client, timeout)


def completion_to_result(completion, result, model: str, queue_wait_s: float):
    """Fill a Generate.Result from a (Llama)Completion; returns `result`."""
    if getattr(completion, 'stop_sequence', ''):
        stop = result.STOP_SEQUENCE
    else:
        stop = {STOP_EOS: result.STOP_EOS, STOP_LENGTH: result.STOP_LENGTH,
                STOP_CANCELLED: result.STOP_CANCELLED,
                STOP_TIMEOUT: result.STOP_TIMEOUT}.get(completion.stop_reason,
                                                       result.STOP_EOS)
    result.text = completion.text
    result.stop_reason = stop
    result.prompt_tokens = int(completion.prompt_tokens)
    result.completion_tokens = int(completion.completion_tokens)
    result.cached_tokens = int(getattr(completion, 'cached_tokens', 0))
    result.queue_wait_s = float(queue_wait_s)
    result.time_to_first_token_s = float(completion.ttft_s)
    result.total_s = float(completion.total_s)
    result.model = model
    result.error_code = result.ERROR_CANCELLED if completion.stop_reason == STOP_CANCELLED \
        else result.ERROR_TIMEOUT if completion.stop_reason == STOP_TIMEOUT \
        else result.ERROR_NONE
    return result


def error_to_result(error: LLMError, result, model: str, queue_wait_s: float = 0.0):
    """Fill a Generate.Result for a failed request (partial text kept on timeouts)."""
    if isinstance(error, QueueFullError):
        code = result.ERROR_QUEUE_FULL
    elif isinstance(error, GrammarCompileError):
        code = result.ERROR_BAD_GRAMMAR
    else:
        code = {TIMEOUT: result.ERROR_TIMEOUT, BUSY: result.ERROR_QUEUE_FULL,
                UNAVAILABLE: result.ERROR_MODEL_NOT_LOADED,
                BAD_REQUEST: result.ERROR_INVALID_REQUEST,
                CANCELLED: result.ERROR_CANCELLED}.get(error.code, result.ERROR_INFERENCE)
    partial = getattr(error, 'partial', None)
    if partial is not None:
        completion_to_result(partial, result, model, queue_wait_s)
    result.stop_reason = {result.ERROR_TIMEOUT: result.STOP_TIMEOUT,
                          result.ERROR_CANCELLED: result.STOP_CANCELLED}.get(
                              code, result.STOP_ERROR)
    result.error_code = code
    result.error_msg = error.message
    result.model = model
    result.queue_wait_s = float(queue_wait_s)
    return result


def tokenize_to_response(tokens: list[int], count_only: bool, response, n_ctx: int,
                         model: str):
    """Fill a Tokenize.Response; returns it."""
    response.tokens = [] if count_only else [int(t) for t in tokens]
    response.count = len(tokens)
    response.n_ctx = int(n_ctx)
    response.model = model
    response.error_code = response.ERROR_NONE
    return response
