"""The llm node with `backend: scripted`: fixed answers over the real Generate action, and a
clear configure failure for a missing or malformed script file."""

import time

import pytest

pytestmark = pytest.mark.ros


def _spin_until(executor, condition, timeout_s):
    deadline = time.monotonic() + timeout_s
    while not condition() and time.monotonic() < deadline:
        executor.spin_once(timeout_sec=0.1)
    return condition()


def _node(ctx, **params):
    from rclpy.parameter import Parameter

    from maxim_core.nodes.llm_node import LLMNode
    return LLMNode(context=ctx, parameter_overrides=[Parameter(k.replace('__', '.'), value=v)
                                                     for k, v in params.items()])


def test_script_file_answers_in_turn_over_the_generate_action(tmp_path):
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.lifecycle import TransitionCallbackReturn

    from maxim_interfaces.action import Generate

    script = tmp_path / 'answers.yaml'
    script.write_text('- first answer\n- second answer\n')
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = MultiThreadedExecutor(num_threads=3, context=ctx)
    try:
        node = _node(ctx, backend='scripted', scripted__script_file=str(script))
        assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.last_error
        assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
        probe = rclpy.create_node('probe', context=ctx)
        executor.add_node(node)
        executor.add_node(probe)
        action = ActionClient(probe, Generate, 'llm/generate')
        assert _spin_until(executor, action.server_is_ready, 10.0)
        texts = []
        for prompt in ('one', 'two', 'three'):
            sent = action.send_goal_async(Generate.Goal(prompt=prompt, max_tokens=16))
            assert _spin_until(executor, sent.done, 10.0)
            result = sent.result().get_result_async()
            assert _spin_until(executor, result.done, 10.0)
            r = result.result().result
            assert r.error_code == r.ERROR_NONE, r.error_msg
            assert r.model == 'scripted'
            texts.append(r.text)
        assert texts == ['first answer', 'second answer', 'second answer']
        node.destroy_node()
        probe.destroy_node()
    finally:
        executor.shutdown(timeout_sec=5.0)
        rclpy.try_shutdown(context=ctx)


@pytest.mark.parametrize('content, expected', [
    (None, 'cannot read the script file'),
    ('answers: {a: 1}\n', 'non-empty list of strings'),
    ('[unclosed\n', 'not YAML or JSON'),
])
def test_a_bad_script_file_fails_configure_with_the_reason(tmp_path, content, expected):
    import rclpy
    from rclpy.lifecycle import TransitionCallbackReturn

    path = tmp_path / 'script.yaml'
    if content is not None:
        path.write_text(content)
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = _node(ctx, backend='scripted', scripted__script_file=str(path))
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert expected in node.last_error
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


def test_an_unknown_backend_is_refused(tmp_path):
    import rclpy
    from rclpy.lifecycle import TransitionCallbackReturn

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        node = _node(ctx, backend='gpt')
        assert node.trigger_configure() == TransitionCallbackReturn.FAILURE
        assert "'llama' or 'scripted'" in node.last_error
        node.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


def test_run_as_its_own_process_a_bad_model_leaves_it_unconfigured_and_answering(tmp_path):
    """The `ros2 launch` path: main() waits unconfigured for a lifecycle manager; a
    configure that fails leaves it unconfigured, answering with the reason."""
    import os
    import signal
    import subprocess
    import sys

    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    from maxim_interfaces.srv import Tokenize

    bad = tmp_path / 'bad.gguf'
    bad.write_bytes(b'<html>not a model</html>' * 100)
    ns = f'/llm_test_{os.getpid()}'    # no other llm node on this machine answers here
    proc = subprocess.Popen(
        [sys.executable, '-m', 'maxim_core.nodes.llm_node', '--ros-args', '-r', f'__ns:={ns}',
         '-p', f'model_path:={bad}'], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True, env=dict(os.environ, PYTHONUNBUFFERED='1'))
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    try:
        probe = rclpy.create_node('probe', context=ctx)
        executor.add_node(probe)
        client = probe.create_client(Tokenize, f'{ns}/llm/tokenize')
        assert _spin_until(executor, client.service_is_ready, 30.0), 'no llm/tokenize'

        def tokenize():
            future = client.call_async(Tokenize.Request(text='hello'))
            assert _spin_until(executor, future.done, 10.0)
            return future.result()

        answer = tokenize()
        assert answer.error_code == answer.ERROR_MODEL_NOT_LOADED
        assert answer.error_msg == 'the llm node is not active'
        # What the lifecycle manager does: configure through the lifecycle service.
        from lifecycle_msgs.msg import Transition
        from lifecycle_msgs.srv import ChangeState
        change = probe.create_client(ChangeState, f'{ns}/llm/change_state')
        assert _spin_until(executor, change.service_is_ready, 30.0)
        future = change.call_async(ChangeState.Request(
            transition=Transition(id=Transition.TRANSITION_CONFIGURE)))
        assert _spin_until(executor, future.done, 30.0)
        assert future.result().success is False
        answer = tokenize()
        assert answer.error_code == answer.ERROR_MODEL_NOT_LOADED
        assert 'configure failed' in answer.error_msg and 'not a GGUF' in answer.error_msg
        assert proc.poll() is None, 'the llm process ended after a failed configure'
    finally:
        executor.shutdown(timeout_sec=2.0)
        rclpy.try_shutdown(context=ctx)
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate(timeout=5)
    assert 'Transition is not registered' not in err, err
    assert 'Traceback' not in err, err
    assert err.count('not a GGUF') <= 2, err   # the configure error, and the summary line
