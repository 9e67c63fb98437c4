"""Health of the core nodes (llm, fear, agent, recorder) as plain data (no rclpy, no messages).

Each node calls a builder here with the numbers it keeps; maxim_common.diagnostics publishes
the result on `diagnostics` (maxim_common.health says why the judgement is plain code).
"""

from maxim_common.health import ERROR, Health, OK, WARN


def llm_health(state: str, model: str, queue_depth: int, max_pending: int, running: bool,
               last_error: str) -> Health:
    """The model server. `state` is the lifecycle state ('unconfigured', 'inactive',
    'active'); the model is loaded from configure on. ERROR when configure failed, WARN while
    not serving or with the queue full."""
    values = {'state': state, 'model_loaded': str(bool(model)).lower(), 'model': model or '',
              'queue_depth': str(queue_depth), 'max_pending': str(max_pending),
              'generating': str(running).lower()}
    if last_error:
        return Health(ERROR, f'model not loaded: {last_error}', values, model)
    if not model:
        return Health(WARN, f'{state}: model not loaded yet', values)
    if state != 'active':
        return Health(WARN, f'{state}: model loaded, not serving', values, model)
    if max_pending and queue_depth >= max_pending:
        return Health(WARN, f'queue full ({queue_depth} waiting): requests are refused',
                      values, model)
    return Health(OK, f'serving {model}, {queue_depth} waiting', values, model)


def fear_health(mode: str, reviews: int, blocked: int, memory_ready: bool, llm_review: bool,
                llm_ready: bool) -> Health:
    """The fear gate. It fails closed on its own, so a missing helper is a WARN: without
    memory the learned-outcome layer is skipped, without the model the LLM review blocks."""
    values = {'mode': mode, 'reviews': str(reviews), 'blocked': str(blocked),
              'memory_predict': 'ready' if memory_ready else 'unavailable',
              'llm_review': ('ready' if llm_ready else 'unavailable') if llm_review else 'off'}
    if llm_review and not llm_ready:
        return Health(WARN, 'llm/generate unavailable: ambiguous calls are blocked', values)
    if not memory_ready:
        return Health(WARN, 'memory/predict_outcome unavailable: outcome layer skipped',
                      values)
    return Health(OK, f'reviewing in {mode} mode', values)


def agent_health(mode: str, thinking: bool, tool_process: str, sandbox_ok: bool,
                 sandbox_reason: str, llm_ready: bool, energy_remaining: float,
                 counts: dict, state: str = 'active') -> Health:
    """The mind. WARN while the node is not active (`state`: its lifecycle state; nothing
    is wrong, it waits for the lifecycle manager); ERROR when an active mind's worker thread
    is gone; WARN when process tools are refused (no kernel sandbox) or the model server is
    not there."""
    values = {'state': state, 'mode': mode, 'thinking': str(thinking).lower(),
              'tool_process': tool_process,
              'sandbox_available': str(sandbox_ok).lower(),
              'llm': 'ready' if llm_ready else 'unavailable',
              'energy_remaining': f'{energy_remaining:.2f}'}
    values.update({k: str(v) for k, v in counts.items()})
    if not sandbox_ok:
        values['sandbox_reason'] = sandbox_reason
    if state != 'active':
        return Health(WARN, f'the mind is {state} (lifecycle)', values)
    if not thinking:
        return Health(ERROR, 'the mind is not running', values)
    if tool_process == 'bwrap' and not sandbox_ok:
        return Health(WARN, f'process tools refused: {sandbox_reason}', values)
    if not llm_ready:
        return Health(WARN, 'llm/generate unavailable: no deliberation', values)
    return Health(OK, f'{mode} mode, {counts.get("percepts_received", 0)} percepts so far',
                  values)


def recorder_health(path: str, written: int, live_url: str, live_sent: int,
                    closed: bool) -> Health:
    """The recorder: what it writes and serves."""
    values = {'path': path or 'off', 'messages_written': str(written),
              'live_view': live_url or 'off', 'messages_served': str(live_sent)}
    if closed:
        return Health(WARN, 'recording closed', values, path)
    return Health(OK, f'recording to {path}' if path else 'serving the live view only', values,
                  path)
