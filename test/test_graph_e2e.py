"""End to end on the real graph: memory, llm (the embedded model), fear and agent in one
process as `./maxim headless` composes them; a person's words cross DDS as a Percept and come
back as thoughts, and the pass is written down as an episode the memory node answers for."""

import time

from helpers.runner_probe import action_client_ready, probe_beside, spin_until
import pytest


@pytest.mark.ros
@pytest.mark.real_model
@pytest.mark.slow
def test_a_user_percept_becomes_thoughts_and_an_episode(tmp_path):
    from rich.console import Console

    from maxim_bringup.runner import Runner, RunConfig
    from maxim_interfaces.msg import Episode, Percept, Thought
    from maxim_interfaces.srv import MemoryRecall

    params = tmp_path / 'p.yaml'
    params.write_text(
        'memory:\n  ros__parameters:\n    db_path: ' + str(tmp_path / 'memory.db') + '\n'
        'agent:\n  ros__parameters:\n    workspace_root: ' + str(tmp_path) + '\n'
        '    deliberation:\n      max_cycles: 2\n      max_tokens: 96\n'
        '    idle:\n      task_db_path: ' + str(tmp_path / 'tasks.db') + '\n'
        '      provenance_path: ' + str(tmp_path / 'idle.jsonl') + '\n')
    out = Console(record=True, width=120, color_system=None)
    runner = Runner(RunConfig(graph='headless', params_file=str(params), console=False),
                    console=out)
    runner.start()
    with probe_beside(runner) as (probe, executor):
        thoughts, episodes = [], []
        probe.create_subscription(Thought, 'thoughts', thoughts.append, 50)
        probe.create_subscription(Episode, 'episodes', episodes.append, 50)
        pub = probe.create_publisher(Percept, 'percepts', 10)
        recall = probe.create_client(MemoryRecall, 'memory/memory_recall')
        msg = Percept(percept_id='e2e-1', source=Percept.SOURCE_USER, source_name='test',
                      narrative='The user says: "Please look at the red ball on your left."',
                      salience=1.0, novelty=1.0)
        sent, next_send = 0, 0.0
        deadline = time.monotonic() + 150.0     # a loaded 2-core machine, the real model
        # The agent's subscription matched first, so the percept is not sent into nothing.
        spin_until(executor, lambda: pub.get_subscription_count() > 0, 30.0)

        def thought_about_it():
            return any(t.kind == Thought.KIND_DELIBERATION for t in thoughts)

        while not (episodes and thought_about_it()) and time.monotonic() < deadline:
            # Until a thought shows the percept arrived: again every 5 s, three times at most
            # (a person's words said again preempt the pass thinking about them: not sooner
            # than a loaded machine's first thought).
            if sent < 3 and not thoughts and time.monotonic() >= next_send:
                pub.publish(msg)
                sent, next_send = sent + 1, time.monotonic() + 5.0
            executor.spin_once(timeout_sec=0.05)
        assert thoughts, 'no thought came back'
        assert episodes, 'no episode was written'
        ep = episodes[0]
        assert 'red ball' in ep.perception and ep.mode == 'passive'
        deliberation = [t for t in thoughts if t.kind == Thought.KIND_DELIBERATION]
        assert deliberation and all(t.cycle >= 1 for t in deliberation), [
            (t.kind, t.status, t.status_msg, t.text[:80]) for t in thoughts]
        # Actions decoded under the grammar name an active tool with an argument object, and
        # the episode records the one the mind took.
        from maxim_core.mind import DEFAULT_ACTIVE
        import json
        actions = [json.loads(t.action_json) for t in deliberation if t.action_json]
        for action in actions:
            assert action['tool'] in DEFAULT_ACTIVE and isinstance(action['args'], dict)
        if ep.tool_name:
            assert ep.tool_name == actions[-1]['tool'] and ep.intent.startswith(ep.tool_name)
        else:
            assert ep.intent == 'no action'
        assert recall.wait_for_service(timeout_sec=60)
        future = recall.call_async(MemoryRecall.Request(query='red ball', limit=5))
        spin_until(executor, future.done, 30.0)
        assert future.done() and future.result().available
        assert any(e.episode_id == ep.episode_id for e in future.result().episodes)

        # The Deliberate action: thoughts stream as feedback, the result carries them all.
        from maxim_interfaces.action import Deliberate
        # The probe's new action client and the agent's server must discover each other:
        # seconds on a 2-core machine the model keeps busy.
        client = action_client_ready(probe, Deliberate, 'agent/deliberate')
        assert client is not None, 'agent/deliberate: no server matched in 3 clients of 40 s'
        feedback = []
        goal = Deliberate.Goal(percept=Percept(source=Percept.SOURCE_USER, salience=1.0,
                                               narrative='A blue box appears in front of you.'),
                               max_cycles=1, force=True, execute=False)
        send = client.send_goal_async(goal, feedback_callback=feedback.append)
        # The agent answers the goal request between deliberations: the percept above (sent
        # up to three times) may still be thought about on the real model.
        spin_until(executor, send.done, 150.0)
        assert send.done() and send.result().accepted, 'the Deliberate goal was not accepted'
        result_future = send.result().get_result_async()
        spin_until(executor, result_future.done, 150.0)
        assert result_future.done(), (
            f'the Deliberate goal gave no result in 150 s ({len(feedback)} thoughts streamed '
            'as feedback: none means it never started, some that the model was still at it)')
        result = result_future.result().result
        assert result.cycles == 1 and result.thoughts and feedback
        assert result.status in (Deliberate.Result.STATUS_READY,
                                 Deliberate.Result.STATUS_CONVERGED,
                                 Deliberate.Result.STATUS_CYCLE_CAP), result.status_msg
        client.destroy()
