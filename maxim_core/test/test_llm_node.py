"""The llm node over real DDS on the real embedded model: Generate, Tokenize, cancel."""

import json
import time

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.real_model]


def _spin_until(executor, condition, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    return condition()


@pytest.fixture(scope='module')
def graph():
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from maxim_core.nodes.llm_node import LLMNode
    from maxim_interfaces.action import Generate
    from maxim_interfaces.srv import Tokenize

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = LLMNode(context=ctx, parameter_overrides=[Parameter('n_ctx', value=1024)])
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.last_error
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        client_node = rclpy.create_node('llm_test_client', context=ctx)
        executor = MultiThreadedExecutor(num_threads=4, context=ctx)
        executor.add_node(node)
        executor.add_node(client_node)
        action = ActionClient(client_node, Generate, 'llm/generate')
        tokenize = client_node.create_client(Tokenize, 'llm/tokenize')
        assert _spin_until(executor, lambda: action.server_is_ready()
                           and tokenize.service_is_ready(), 10.0)
        yield executor, action, tokenize, Generate, Tokenize
        executor.shutdown(timeout_sec=5.0)
        node.destroy_node()
        client_node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


def _run_goal(executor, action, goal, cancel_after=0, timeout_s=90.0):
    feedback = []
    sent = action.send_goal_async(goal, feedback_callback=lambda m: feedback.append(
        m.feedback))
    assert _spin_until(executor, sent.done, 10.0)
    handle = sent.result()
    assert handle.accepted
    result = handle.get_result_async()
    cancelled = False
    deadline = time.monotonic() + timeout_s
    while not result.done() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
        if cancel_after and not cancelled and len(feedback) >= cancel_after:
            handle.cancel_goal_async()
            cancelled = True
    assert result.done()
    return result.result(), feedback


def test_generate_with_json_schema_streams_feedback(graph):
    executor, action, _, Generate, _ = graph
    schema = {'type': 'object', 'properties': {'seen': {'type': 'string', 'maxLength': 40},
                                               'count': {'type': 'integer'}},
              'required': ['seen', 'count']}
    goal = Generate.Goal(request_id='t1', client='test', prompt='The camera saw:',
                         json_schema=json.dumps(schema), max_tokens=60, temperature=0.7,
                         seed=3)
    wrapped, feedback = _run_goal(executor, action, goal)
    result = wrapped.result
    assert result.error_code == Generate.Result.ERROR_NONE, result.error_msg
    answer = json.loads(result.text)
    assert set(answer) == {'seen', 'count'}
    assert feedback and ''.join(f.text_delta for f in feedback) == result.text
    assert result.stop_reason == Generate.Result.STOP_EOS
    assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert result.model == 'gemma-3-270m-q4_k_m.gguf'


def test_stop_sequence_and_bad_grammar(graph):
    executor, action, _, Generate, _ = graph
    goal = Generate.Goal(prompt='x', grammar='root ::= "one two END three"', stop=['END'],
                         max_tokens=20)
    result = _run_goal(executor, action, goal)[0].result
    assert result.text == 'one two ' and result.stop_reason == Generate.Result.STOP_SEQUENCE
    bad = Generate.Goal(prompt='x', grammar='root ::= nowhere')
    result = _run_goal(executor, action, bad)[0].result
    assert result.error_code == Generate.Result.ERROR_BAD_GRAMMAR


def test_cancel_a_running_goal(graph):
    from action_msgs.msg import GoalStatus
    executor, action, _, Generate, _ = graph
    goal = Generate.Goal(prompt='Tell a long story about a robot.', max_tokens=400,
                         temperature=0.8, seed=1)
    wrapped, feedback = _run_goal(executor, action, goal, cancel_after=3)
    assert wrapped.status == GoalStatus.STATUS_CANCELED
    assert wrapped.result.stop_reason == Generate.Result.STOP_CANCELLED
    assert wrapped.result.completion_tokens < 400


def test_tokenize(graph):
    executor, _, tokenize, _, Tokenize = graph
    future = tokenize.call_async(Tokenize.Request(text='hello robot head', add_bos=True))
    assert _spin_until(executor, future.done, 10.0)
    response = future.result()
    assert response.error_code == Tokenize.Response.ERROR_NONE
    assert response.count == len(response.tokens) > 1 and response.tokens[0] == 2
    assert response.n_ctx == 1024
    future = tokenize.call_async(Tokenize.Request(text='hello', count_only=True))
    assert _spin_until(executor, future.done, 10.0)
    assert future.result().count >= 1 and len(future.result().tokens) == 0


def test_missing_model_path_fails_configure_with_a_clear_reason(tmp_path):
    import rclpy
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from maxim_core.nodes.llm_node import LLMNode

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        missing = str(tmp_path / 'absent.gguf')
        node = LLMNode(context=ctx,
                       parameter_overrides=[Parameter('model_path', value=missing)])
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert missing in node.last_error and 'model_path' in node.last_error
        assert '\n' not in node.last_error
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)
