"""The llm node's parameters and the backend they choose, the bounded wait on a request and
how a goal ends, without ROS (a ScriptedBackend: no model)."""

import threading

import pytest

from maxim_core.conversions import goal_end
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.llm.params import make_backend, PARAMS, read_params
from maxim_core.llm.queue import GenerateRequest, RequestQueue
from maxim_interfaces.action import Generate


def params(**changes):
    values = {name: spec[0] for name, spec in PARAMS.items()}
    values.update(changes)
    return read_params(values)


def test_the_defaults_and_the_goal_defaults():
    p = params()
    assert p.backend == 'llama' and p.n_ctx == 4096 and p.max_pending == 4
    assert p.defaults == {'max_tokens': 256, 'temperature': 0.8, 'top_p': 0.95, 'top_k': 40,
                          'min_p': 0.05, 'repeat_penalty': 1.1, 'timeout_s': 120.0}


def test_a_scripted_backend_from_its_file(tmp_path):
    script = tmp_path / 'answers.yaml'
    script.write_text('- hello\n- again\n')
    backend, path = make_backend(params(**{'backend': 'scripted',
                                           'scripted.script_file': str(script)}))
    assert isinstance(backend, ScriptedBackend) and path == str(script)


@pytest.mark.parametrize('changes, error', [
    ({'backend': 'scripted'}, "backend 'scripted' needs scripted.script_file"),
    ({'backend': 'oracle'}, "backend must be 'llama' or 'scripted', not 'oracle'")])
def test_a_bad_backend_is_one_line(changes, error):
    with pytest.raises(ValueError, match=error):
        make_backend(params(**changes))


def test_a_bounded_wait_ends_on_time_and_cancels():
    gate = threading.Event()

    def slow(prompt):
        gate.wait(5.0)
        return 'late'
    queue = RequestQueue(ScriptedBackend(slow))
    try:
        handle = queue.submit(GenerateRequest('hold'))
        assert not handle.wait_bounded(0.1, lambda: False)
        assert handle.cancelled
    finally:
        gate.set()
        queue.close()


def test_a_bounded_wait_passes_a_cancel_request_on():
    queue = RequestQueue(ScriptedBackend(['fine']))
    try:
        handle = queue.submit(GenerateRequest('hi'))
        assert handle.wait_bounded(5.0, lambda: False) and not handle.cancelled
        other = queue.submit(GenerateRequest('again'))
        other.wait_bounded(5.0, lambda: True)
        assert other.cancelled or other.done()
    finally:
        queue.close()


def test_how_a_goal_ends():
    r = Generate.Result(error_code=Generate.Result.ERROR_NONE)
    assert goal_end(r, cancel_requested=False) == 'succeed'
    r.error_code = Generate.Result.ERROR_CANCELLED
    assert goal_end(r, cancel_requested=True) == 'canceled'
    assert goal_end(r, cancel_requested=False) == 'abort'
    r.error_code = Generate.Result.ERROR_TIMEOUT
    assert goal_end(r, cancel_requested=True) == 'abort'


def test_a_call_becomes_a_goal_and_its_result_a_completion():
    from maxim_core.conversions import call_to_goal, result_to_completion
    from maxim_core.llm.backend import LLMError, STOP_CANCELLED, STOP_LENGTH

    goal = call_to_goal(Generate.Goal(), 'hi', max_tokens=8, json_schema={'type': 'object'},
                        stop=('\n',), avoid=(1,))
    assert (goal.prompt, goal.max_tokens, goal.json_schema) == ('hi', 8, '{"type": "object"}')
    assert list(goal.stop) == ['\n'] and list(goal.avoid) == ['1'] and goal.grammar == ''
    assert goal.temperature == pytest.approx(0.8) and goal.seed == -1
    r = Generate.Result(text='ok', prompt_tokens=3, completion_tokens=2,
                        stop_reason=Generate.Result.STOP_LENGTH, candidate_logprobs=[-1.5])
    c = result_to_completion(r, canceled=False)
    assert (c.text, c.stop_reason, c.logprobs) == ('ok', STOP_LENGTH, [-1.5])
    assert result_to_completion(r, canceled=True).stop_reason == STOP_CANCELLED
    r.error_code, r.error_msg = Generate.Result.ERROR_QUEUE_FULL, 'busy now'
    with pytest.raises(LLMError) as err:
        result_to_completion(r, canceled=False)
    assert err.value.code == 'busy' and err.value.message == 'busy now'
