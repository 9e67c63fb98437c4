"""The bounded LLM request queue, on the ScriptedBackend (deterministic, no model)."""

import threading

import pytest

from maxim_core.llm.backend import (BUSY, CANCELLED, LLMError, ScriptedBackend, STOP_CANCELLED,
                                    STOP_EOS, TIMEOUT, UNAVAILABLE)
from maxim_core.llm.queue import (DONE, FAILED, GenerateRequest, QueueFullError, QUEUED,
                                  RequestQueue, RUNNING)


class FakeClock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


class GatedScript:
    """Answers `prompt` with its own words; prompts starting with 'hold' block on a gate."""

    def __init__(self):
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.order: list[str] = []

    def __call__(self, prompt):
        self.order.append(prompt)
        if prompt.startswith('hold'):
            self.entered.set()
            assert self.gate.wait(10.0), 'the test never opened the gate'
        return prompt + ' done'


@pytest.fixture
def setup():
    script = GatedScript()
    clock = FakeClock()
    queue = RequestQueue(ScriptedBackend(script), max_pending=2, wait_timeout_s=5.0,
                         clock=clock)
    yield queue, script, clock
    script.gate.set()
    queue.close()


def test_runs_in_fifo_order_one_at_a_time(setup):
    queue, script, _ = setup
    first = queue.submit(GenerateRequest('hold one'))
    assert script.entered.wait(5.0)
    assert first.state == RUNNING
    second = queue.submit(GenerateRequest('two'))
    third = queue.submit(GenerateRequest('three'))
    assert second.state == QUEUED and queue.pending == 2
    script.gate.set()
    assert third.result(5.0).text == 'three done'
    assert first.result(5.0).text == 'hold one done'
    assert second.result(5.0).stop_reason == STOP_EOS
    assert script.order == ['hold one', 'two', 'three']
    assert first.state == DONE


def test_full_queue_is_a_typed_error(setup):
    queue, script, _ = setup
    queue.submit(GenerateRequest('hold'))
    assert script.entered.wait(5.0)
    queue.submit(GenerateRequest('a'))
    queue.submit(GenerateRequest('b'))
    with pytest.raises(QueueFullError) as info:
        queue.submit(GenerateRequest('c'))
    assert info.value.code == BUSY


def test_wait_timeout_gives_busy_and_total_timeout_gives_timeout(setup):
    queue, script, clock = setup
    queue.submit(GenerateRequest('hold'))
    assert script.entered.wait(5.0)
    waiting = queue.submit(GenerateRequest('late'))
    bounded = queue.submit(GenerateRequest('bounded', timeout_s=1.0))
    clock.t += 1.5
    with pytest.raises(LLMError) as info:
        bounded.result(5.0)
    assert info.value.code == TIMEOUT
    clock.t += 4.0
    with pytest.raises(LLMError) as info:
        waiting.result(5.0)
    assert info.value.code == BUSY and waiting.state == FAILED
    assert waiting.queue_wait_s == pytest.approx(5.5)
    assert queue.pending == 0


def test_cancel_queued_and_running(setup):
    queue, script, _ = setup
    running = queue.submit(GenerateRequest('hold running request'))
    assert script.entered.wait(5.0)
    queued = queue.submit(GenerateRequest('never'))
    queued.cancel()
    with pytest.raises(LLMError) as info:
        queued.result(5.0)
    assert info.value.code == CANCELLED
    running.cancel()
    script.gate.set()
    result = running.result(5.0)
    assert result.stop_reason == STOP_CANCELLED
    assert 'never' not in script.order


def test_running_request_past_its_deadline_times_out_with_partial(setup):
    queue, _, clock = setup
    pieces = []

    def on_token(piece):
        pieces.append(piece)
        clock.t += 1.0   # every token costs a second of the fake clock
        return True

    handle = queue.submit(GenerateRequest('a b c d e f', timeout_s=2.5, on_token=on_token))
    with pytest.raises(LLMError) as info:
        handle.result(5.0)
    assert info.value.code == TIMEOUT
    assert info.value.partial.text.split() == ['a', 'b', 'c']
    assert pieces == ['a', ' b', ' c']


def test_backend_errors_and_bad_params_are_typed(setup):
    queue, _, _ = setup
    bad = queue.submit(GenerateRequest('x', params={'no_such_arg': 1}))
    with pytest.raises(LLMError) as info:
        bad.result(5.0)
    assert info.value.code == 'bad_request'
    failing = RequestQueue(ScriptedBackend([LLMError('model_error', 'boom')]))
    try:
        with pytest.raises(LLMError) as info:
            failing.submit(GenerateRequest('x')).result(5.0)
        assert info.value.code == 'model_error'
    finally:
        failing.close()


def test_result_wait_is_bounded_and_close_fails_waiters(setup):
    queue, script, _ = setup
    queue.submit(GenerateRequest('hold'))
    assert script.entered.wait(5.0)
    waiting = queue.submit(GenerateRequest('w'))
    with pytest.raises(LLMError) as info:
        waiting.result(0.1)
    assert info.value.code == TIMEOUT and waiting.state == QUEUED
    script.gate.set()
    queue.close()
    with pytest.raises(LLMError) as info:
        queue.submit(GenerateRequest('after'))
    assert info.value.code == UNAVAILABLE


def test_params_reach_the_backend():
    backend = ScriptedBackend(['fine'])
    queue = RequestQueue(backend)
    try:
        handle = queue.submit(GenerateRequest('p', params={'max_tokens': 7, 'stop': ['x'],
                                                           'temperature': 0.1}))
        assert handle.result(5.0).text == 'fine'
        assert backend.calls[0]['max_tokens'] == 7 and backend.calls[0]['stop'] == ['x']
    finally:
        queue.close()


def test_invalid_construction():
    with pytest.raises(ValueError):
        RequestQueue(ScriptedBackend(['x']), max_pending=0)


def test_every_served_call_is_traced_as_a_json_line_that_replays(tmp_path):
    """The trace (`trace_path` of the llm node) holds what replaying a call needs: the
    prompt, the sampling parameters or the candidates, the client and the wall times."""
    import json
    from maxim_core.llm.trace import JsonlTrace
    path = tmp_path / 'llm.jsonl'
    trace = JsonlTrace(str(path))
    backend = ScriptedBackend(['fine'], scorer=lambda p, c: -1.0 * len(c))
    queue = RequestQueue(backend, trace=trace)
    try:
        queue.submit(GenerateRequest('p', params={'max_tokens': 7, 'stop': ['x']},
                                     client='agent', request_id='r1')).result(5.0)
        queue.submit(GenerateRequest('q', candidates=(' a.', ' bb.'), client='agent')
                     ).result(5.0)
        with pytest.raises(LLMError):           # a failed call is not traced
            queue.submit(GenerateRequest('p', params={'no_such_kw': 1})).result(5.0)
    finally:
        queue.close()
        trace.close()
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    assert [x['prompt'] for x in lines] == ['p', 'q']
    assert lines[0]['params'] == {'max_tokens': 7, 'stop': ['x']} and lines[0]['client'] == \
        'agent' and lines[0]['request_id'] == 'r1'
    assert lines[0]['text'] == 'fine' and lines[0]['completion_tokens'] >= 1
    assert lines[1]['candidates'] == [' a.', ' bb.'] and lines[1]['params'] == {}
    assert lines[1]['text'] == ''
    assert all(x['t0'] <= x['t1'] for x in lines)
    trace({'after': 'close'})                   # a closed trace takes no more lines
    assert len(path.read_text().splitlines()) == 2
