"""Message <-> core conversions of maxim_core's nodes (duck-typed: this module imports no
message package, so the cores stay free of ROS; the nodes pass the message objects in).

The `llm` node's Generate action and Tokenize service, and their client's side (a call as a
Generate goal, its result as a Completion or an LLMError); the agent node's idle surface (Task,
SubmitTask, IdleEvent, IdleProvenance, and memory answers as idle retrieval events).
"""

import json
import math

from maxim_core.llm.backend import (BAD_REQUEST, BUSY, CANCELLED, Completion,
                                    GrammarCompileError, LLMError, MODEL_ERROR, STOP_CANCELLED,
                                    STOP_EOS, STOP_LENGTH, STOP_TIMEOUT, TIMEOUT, UNAVAILABLE)
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

    def number(value: float, use: bool, default) -> float:
        """The goal's value when set (`use`) and finite, else the node default: NaN and
        inf mean nothing a sampler or a deadline can use."""
        return float(value) if use and math.isfinite(value) else float(default)

    params = {
        'max_tokens': int(goal.max_tokens) or int(defaults['max_tokens']),
        'temperature': number(goal.temperature, goal.temperature >= 0,
                              defaults['temperature']),
        'top_p': number(goal.top_p, goal.top_p > 0, defaults['top_p']),
        'top_k': int(goal.top_k) if goal.top_k >= 0 else int(defaults['top_k']),
        'min_p': number(goal.min_p, goal.min_p >= 0, defaults['min_p']),
        'repeat_penalty': number(goal.repeat_penalty, goal.repeat_penalty > 0,
                                 defaults['repeat_penalty']),
        'seed': int(goal.seed),
        'stop': [s for s in goal.stop if s],
    }
    avoid = [a for a in getattr(goal, 'avoid', ()) if a.strip()]
    if avoid:
        params['avoid'] = avoid
    if goal.grammar:
        params['grammar'] = goal.grammar
    elif goal.json_schema:
        try:
            schema = json.loads(goal.json_schema)
        except ValueError as exc:
            raise GrammarCompileError(f'json_schema is not JSON: {exc}') from exc
        except RecursionError:
            raise GrammarCompileError('json_schema is nested too deep') from None
        if not isinstance(schema, dict):
            raise GrammarCompileError('json_schema must be a JSON object')
        params['json_schema'] = schema
    timeout = number(goal.timeout_s, goal.timeout_s > 0, defaults['timeout_s'])
    return GenerateRequest(prompt, params, on_token, goal.request_id, goal.client, timeout,
                           tuple(getattr(goal, 'candidates', ())))


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
    result.candidate_logprobs = [float(x) for x in getattr(completion, 'logprobs', ())]
    result.candidate_tokens = [int(x) for x in getattr(completion, 'token_counts', ())]
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


def goal_end(result, cancel_requested: bool) -> str:
    """How a Generate goal ends for its filled result: the goal handle's method, 'canceled'
    (cancelled on the client's request), 'abort' (an error) or 'succeed'."""
    if result.error_code == result.ERROR_CANCELLED and cancel_requested:
        return 'canceled'
    return 'abort' if result.error_code != result.ERROR_NONE else 'succeed'


def call_to_goal(goal, prompt: str, *, max_tokens: int = 256, temperature: float = 0.8,
                 top_p: float = 0.95, top_k: int = 40, repeat_penalty: float = 1.1,
                 seed: int = -1, stop=(), json_schema: dict | None = None,
                 grammar: str | None = None, avoid=()):
    """Fill a Generate.Goal from Backend.complete's arguments; returns `goal`."""
    goal.prompt = prompt
    goal.grammar = grammar or ''
    goal.json_schema = json.dumps(json_schema) if json_schema else ''
    goal.max_tokens, goal.temperature = int(max_tokens), float(temperature)
    goal.top_p, goal.top_k = float(top_p), int(top_k)
    goal.repeat_penalty, goal.seed = float(repeat_penalty), int(seed)
    goal.stop = list(stop)
    goal.avoid = [str(a) for a in avoid]
    return goal


def result_to_completion(result, canceled: bool) -> Completion:
    """A Generate.Result as the client's Completion: cancelled (`canceled`: the goal's status)
    with what it has, or its error as an LLMError."""
    if canceled or result.error_code == result.ERROR_CANCELLED:
        return Completion(result.text, result.prompt_tokens, result.completion_tokens,
                          STOP_CANCELLED, result.time_to_first_token_s, result.total_s)
    if result.error_code != result.ERROR_NONE:
        code = {result.ERROR_QUEUE_FULL: BUSY, result.ERROR_TIMEOUT: TIMEOUT,
                result.ERROR_MODEL_NOT_LOADED: UNAVAILABLE,
                result.ERROR_INVALID_REQUEST: BAD_REQUEST,
                result.ERROR_BAD_GRAMMAR: BAD_REQUEST, result.ERROR_INFERENCE: MODEL_ERROR,
                result.ERROR_CANCELLED: CANCELLED}.get(result.error_code, MODEL_ERROR)
        raise LLMError(code, result.error_msg or 'generation failed')
    stop = {result.STOP_EOS: STOP_EOS, result.STOP_SEQUENCE: STOP_EOS,
            result.STOP_LENGTH: STOP_LENGTH,
            result.STOP_CANCELLED: STOP_CANCELLED}.get(result.stop_reason, STOP_EOS)
    return Completion(result.text, result.prompt_tokens, result.completion_tokens, stop,
                      result.time_to_first_token_s, result.total_s,
                      [float(x) for x in result.candidate_logprobs],
                      [int(x) for x in result.candidate_tokens])


def tokenize_to_response(tokens: list[int], count_only: bool, response, n_ctx: int,
                         model: str):
    """Fill a Tokenize.Response; returns it."""
    response.tokens = [] if count_only else [int(t) for t in tokens]
    response.count = len(tokens)
    response.n_ctx = int(n_ctx)
    response.model = model
    response.error_code = response.ERROR_NONE
    return response


# -- idle introspection (agent node) ---------------------------------------------------------

# Task.msg STATUS_* index == tasks.STATUSES; IdleEvent REASON_* == eligibility.REASONS;
# IdleProvenance RETRIEVAL_* / OUTCOME_* == provenance.RETRIEVAL_MODES / OUTCOMES.


def task_to_msg(task, msg):
    """Fill a Task message from a tasks.Task; returns it."""
    from maxim_core.idle.tasks import STATUSES
    msg.task_id = task.task_id
    msg.goal = task.goal
    msg.status = STATUSES.index(task.status)
    msg.attempts = int(task.attempts)
    msg.next_eligible_at = float(task.next_eligible_at)
    msg.prerequisites = list(task.prerequisites)
    msg.manual_pause = bool(task.manual_pause)
    msg.origin = task.origin
    return msg


def msg_to_new_task(msg) -> dict:
    """The TaskStore.add() arguments of a Task message given to SubmitTask OP_ADD.

    The goal must be 'action target amount' (the content of a [GOAL: ...] tag) and the
    origin 'user' (the default) or 'scenario': 'idle_intent' tasks come only from the intent
    contract (IDLE-2). Raises ValueError with the reason.
    """
    from maxim_core.idle.intent import Intent, IntentError
    try:
        goal = Intent.from_goal(' '.join(msg.goal.split())).goal
    except IntentError as exc:
        raise ValueError(str(exc)) from exc
    origin = msg.origin or 'user'
    if origin not in ('user', 'scenario'):
        raise ValueError(f"origin must be 'user' or 'scenario', not {origin!r}")
    return {'goal': goal, 'origin': origin, 'prerequisites': tuple(msg.prerequisites),
            'task_id': msg.task_id or None, 'manual_pause': bool(msg.manual_pause),
            'next_eligible_at': float(msg.next_eligible_at)}


def idle_status_to_msg(status, msg):
    """Fill an IdleEvent from an eligibility.IdleStatus (idle); returns it."""
    msg.idle_reason = status.reason_index
    msg.idle_reason_name = status.reason
    msg.task_count = int(status.task_count)
    msg.eligible_count = int(status.eligible_count)
    msg.next_eligible_in_s = float(status.next_eligible_in_s)
    return msg


def provenance_to_msg(record, msg):
    """Fill an IdleProvenance from a provenance.ProvenanceRecord; returns it."""
    from maxim_core.idle.eligibility import REASONS
    from maxim_core.idle.provenance import OUTCOMES, RETRIEVAL_MODES
    msg.contract_version = record.contract_version
    msg.prompt_template_hash = record.prompt_template_hash
    msg.retrieval_mode = RETRIEVAL_MODES.index(record.retrieval_mode)
    msg.retrieval_time_window_s = float(record.retrieval_time_window_s)
    msg.retrieval_max_events = int(record.retrieval_max_events)
    msg.semantic_top_k = int(record.semantic_top_k)
    msg.model = record.model
    msg.temperature = float(record.temperature)
    msg.max_tokens = int(record.max_tokens)
    msg.idle_reason = REASONS.index(record.idle_reason)
    msg.salience_summary = record.salience_summary
    msg.decision_outcome = OUTCOMES.index(record.decision_outcome)
    msg.intent_emitted = record.intent_emitted
    msg.intent_suppressed = bool(record.intent_suppressed)
    msg.suppression_reason = record.suppression_reason
    msg.timestamp = float(record.timestamp)
    msg.record_json = record.to_json()
    return msg


def recall_to_events(answer: dict, known: dict | None = None) -> list[dict]:
    """A memory_recall answer (as a dict) as idle retrieval events, oldest first.

    Memory answers with bounded summaries; `known` maps episode ids to what the agent heard
    on the episodes topic ({'mode', 'salience', 'reasoning'}), which the summaries lack: the
    mode tells the robot's own idle thoughts apart, the salience feeds the storage gate.
    """
    known = known or {}
    events = []
    for e in answer.get('episodes') or []:
        extra = known.get(e.get('episode_id'), {})
        mode = extra.get('mode', '')
        if mode == 'idle':
            kind, text = 'idle thought', extra.get('reasoning') or e.get('perception', '')
        else:
            kind = 'action' if e.get('tool_name') else 'percept'
            text = e.get('perception', '')
            if e.get('outcome'):
                text = f"{text} -> {e['outcome']}"
        events.append({'id': e.get('episode_id', ''), 'timestamp': float(e.get('stamp', 0.0)),
                       'kind': kind, 'mode': mode, 'summary': text,
                       'salience': float(extra.get('salience', 0.0))})
    events.sort(key=lambda ev: ev['timestamp'])
    return events


# The agent node's surface: Mind records <-> messages (the node passes the message objects).

_SOURCES = {0: 'vision', 1: 'user', 2: 'simulation', 3: 'system', 4: 'body'}


def clean_text(text: str, limit: int = 0) -> str:
    """Text that a message can carry: lone surrogates (a model may emit them) replaced."""
    text = str(text).encode('utf-8', 'replace').decode('utf-8')
    return text[:limit] if limit else text


def unit(value) -> float:
    """A 0..1 score from a message: NaN and infinities are 0 (no evidence), the rest
    clamped."""
    value = float(value)
    return min(1.0, max(0.0, value)) if math.isfinite(value) else 0.0


def msg_to_percept(msg):
    """A Percept message as the agent loop's Percept (text that a message can carry again,
    scores within 0..1)."""
    from maxim_core.agent.loop import Percept
    return Percept(narrative=clean_text(msg.narrative) or 'Nothing in particular.',
                   percept_id=clean_text(msg.percept_id, 200),
                   source=_SOURCES.get(msg.source, 'vision'),
                   objects=[clean_text(d.label, 200) for d in msg.objects],
                   people=[clean_text(d.label, 200) for d in msg.people],
                   novelty=unit(msg.novelty), salience=unit(msg.salience))


def thought_to_msg(t, msg):
    for key, value in (('deliberation_id', t.deliberation_id), ('kind', int(t.kind)),
                       ('status', int(t.status)), ('status_msg', clean_text(t.status_msg)),
                       ('cycle', int(t.cycle)), ('max_cycles', int(t.max_cycles)),
                       ('text', clean_text(t.text)), ('salience', float(t.salience)),
                       ('enriched_by', list(t.enriched_by)),
                       ('experience', clean_text(t.experience)),
                       ('ready_to_act', bool(t.ready_to_act)), ('converged', bool(t.converged)),
                       ('jaccard_previous', float(t.jaccard_previous)),
                       ('action_json', clean_text(json.dumps(t.action)) if t.action else ''),
                       ('choice_json', clean_text(json.dumps(getattr(t, 'choice', None)))
                        if getattr(t, 'choice', None) else ''),
                       ('why', clean_text(getattr(t, 'why', '') or '')),
                       ('enrichment_s', float(t.enrichment_s)), ('llm_s', float(t.llm_s)),
                       ('cycle_s', float(t.cycle_s)), ('prompt_tokens', int(t.prompt_tokens)),
                       ('completion_tokens', int(t.completion_tokens))):
        setattr(msg, key, value)
    return msg


def run_to_call(run, msg, deliberation_id: str = ''):
    msg.call_id, msg.deliberation_id = run.call_id, deliberation_id
    msg.tool_name, msg.requested_name = run.tool, clean_text(run.requested_name, 200)
    msg.arguments_json = clean_text(json.dumps(run.args))
    msg.introspection = bool(run.introspection)
    return msg


def run_to_result(run, msg, deliberation_id: str = ''):
    run_to_call(run, msg.call, deliberation_id)
    msg.success, msg.output = bool(run.success), clean_text(run.output, 4000)
    msg.blocked, msg.blocked_reason = bool(run.blocked), clean_text(run.blocked_reason)
    msg.blocked_by, msg.verified = int(run.blocked_layer), bool(run.verified)
    msg.verification = clean_text(run.verification)
    msg.error_code, msg.error_msg = int(run.error_code), clean_text(run.error_msg, 2000)
    msg.duration_s = float(run.duration_s)
    return msg


def record_to_msg(record, msg):
    """A Mind record (EpisodeRecord, HeadGoalCommand, PainReport: dataclasses whose fields
    are the message's) as its message."""
    from dataclasses import fields
    known = msg.get_fields_and_field_types()
    for f in fields(record):
        if f.name in known:
            value = getattr(record, f.name)
            setattr(msg, f.name, clean_text(value) if isinstance(value, str) else value)
    return msg
