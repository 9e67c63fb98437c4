"""A Deliberate goal cannot hang the agent: every goal ends within a bound.

The agent and a real llm node (on a scripted model that never decides, so nothing but the
cycle cap ends a deliberation) spin on one MultiThreadedExecutor of two threads, as the
agent's own process does on a 2-core machine. A goal asking for 2**32 - 1 cycles is refused
with a reason instead of thinking for ever, and goals sent together do not starve the
executor the deliberation needs for its model calls: each ends, with a typed status.
"""

import itertools
import json
import threading
import time

import pytest

pytestmark = [pytest.mark.ros, pytest.mark.timeout(300)]


def _undecided():
    """Answers that never act and never converge (each reasoning shares no word)."""
    counter = itertools.count()

    def answer(_prompt):
        n = next(counter)
        words = ' '.join(f'w{n}x{i}' for i in range(6))
        return json.dumps({'reasoning': words, 'ready_to_act': False, 'action': None})
    return answer


def _wait(executor, cond, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline and not cond():
        executor.spin_once(timeout_sec=0.02)
    return cond()


def test_deliberate_goals_end_within_a_bound(tmp_path):
    import rclpy
    from rclpy.action import ActionClient
    from rclpy.executors import MultiThreadedExecutor, SingleThreadedExecutor
    from rclpy.lifecycle import TransitionCallbackReturn
    from rclpy.parameter import Parameter

    from maxim_core.llm.backend import ScriptedBackend
    from maxim_core.nodes.agent_node import AgentNode
    from maxim_core.nodes.llm_node import LLMNode
    from maxim_interfaces.action import Deliberate
    from maxim_interfaces.msg import Percept

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    nodes, spin = [], None
    executor = MultiThreadedExecutor(num_threads=2, context=ctx)
    try:
        llm = LLMNode(context=ctx, backend=ScriptedBackend(_undecided()))
        assert llm.trigger_configure() == TransitionCallbackReturn.SUCCESS, llm.last_error
        assert llm.trigger_activate() == TransitionCallbackReturn.SUCCESS
        ws = tmp_path / 'ws'
        ws.mkdir()
        agent = AgentNode(context=ctx, autostart=True, parameter_overrides=[
            Parameter('workspace_root', value=str(ws)),
            Parameter('deliberation.llm_timeout_s', value=5.0),
            Parameter('deliberation.retries', value=0),
            Parameter('enrichment.budget_s', value=0.2),
            Parameter('idle.enabled', value=False),
            Parameter('idle.task_db_path', value=str(tmp_path / 'tasks.db'))])
        nodes = [agent, llm]
        for node in nodes:
            executor.add_node(node)
        spin = threading.Thread(target=executor.spin, daemon=True)
        spin.start()

        probe = rclpy.create_node('deliberate_probe', context=ctx)
        probe_exec = SingleThreadedExecutor(context=ctx)
        probe_exec.add_node(probe)
        client = ActionClient(probe, Deliberate, 'agent/deliberate')
        assert _wait(probe_exec, client.server_is_ready, 10.0)

        def goal(cycles, n=0):
            percept = Percept(source=Percept.SOURCE_USER, salience=1.0,
                              narrative=f'A red ball rolls by ({n}).')
            return Deliberate.Goal(percept=percept, max_cycles=cycles, force=True)

        # A cycle cap no deliberation could reach: refused with a reason, at once.
        sent = client.send_goal_async(goal(2 ** 32 - 1))
        assert _wait(probe_exec, sent.done, 10.0) and sent.result().accepted
        result = sent.result().get_result_async()
        assert _wait(probe_exec, result.done, 30.0), 'a goal of 2**32-1 cycles did not end'
        answer = result.result().result
        assert answer.status == Deliberate.Result.STATUS_INVALID_REQUEST, answer.status_msg
        assert 'max_cycles' in answer.status_msg

        # Four goals at once on a two-thread executor: each ends, none starves the others.
        sends = [client.send_goal_async(goal(2, n)) for n in range(4)]
        assert _wait(probe_exec, lambda: all(s.done() for s in sends), 10.0)
        results = [s.result().get_result_async() for s in sends if s.result().accepted]
        assert _wait(probe_exec, lambda: all(r.done() for r in results), 30.0), \
            'Deliberate goals sent together did not all end within 30 s'
        statuses = [r.result().result.status for r in results]
        assert statuses.count(Deliberate.Result.STATUS_CYCLE_CAP) >= 1, statuses
        busy = [r.result().result for r in results
                if r.result().result.status != Deliberate.Result.STATUS_CYCLE_CAP]
        assert all(b.status == Deliberate.Result.STATUS_TIMEOUT and 'busy' in b.status_msg
                   for b in busy), [(b.status, b.status_msg) for b in busy]
        # The executor is free again: a goal sent now is thought through.
        sent = client.send_goal_async(goal(2, 9))
        assert _wait(probe_exec, sent.done, 10.0) and sent.result().accepted
        result = sent.result().get_result_async()
        assert _wait(probe_exec, result.done, 30.0)
        assert result.result().result.status == Deliberate.Result.STATUS_CYCLE_CAP
        client.destroy()
        probe.destroy_node()
    finally:
        for node in nodes:
            quiesce = getattr(node, 'quiesce', None)
            if callable(quiesce):
                quiesce()
        executor.shutdown(timeout_sec=5.0)
        if spin is not None:
            spin.join(timeout=10.0)
        for node in nodes:
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)
