"""What the model reads, on the running graph: memory, fear, llm and agent nodes over DDS.

Memory holds episodes about a red ball (concepts extracted, session ended, as a robot that
played with it yesterday). A percept about the ball brings memory's channels into the prompt
the llm node received: episodes, the ball's concept, knowledge reached by spreading
activation, and pattern predictions, each line saying why it matched. A percept about
something the robot knows nothing of brings none of them: "nothing relevant" is an answer.
"""

import re

import pytest

from helpers.mind_graph import decision, Graph

pytestmark = pytest.mark.ros

T0 = 1_800_000_000.0


def seed_ball_memories(db_path) -> None:
    from maxim_memory.hub import HubConfig, MemoryHub
    from maxim_memory.records import (Action, Decision, EpisodeContext, EpisodicMemory,
                                      Outcome, Perception)
    hub = MemoryHub(HubConfig(db_path=str(db_path)))
    try:
        for i in range(6):
            ok = i % 3 != 2
            hub.capture_episode(EpisodicMemory(
                created_at=T0 + 60 * i, run_id='yesterday',
                perception=Perception('A red ball rolls across the table', ['ball', 'table']),
                context=EpisodeContext(mode='active'),
                decision=Decision(intent='track_target {"target_label": "ball"}',
                                  reasoning='I follow the ball', confidence=0.8),
                action=Action('track_target'),
                outcome=Outcome(ok, 0.6 if ok else -0.6, 'done' if ok else 'lost it')))
    finally:
        hub.close(end_session=True)


def test_the_prompt_holds_what_memory_knows_and_nothing_for_the_unknown(tmp_path):
    from maxim_core.llm.backend import ScriptedBackend
    seed_ball_memories(tmp_path / 'memory.db')
    prompts = []

    def mind(prompt):
        prompts.append(prompt)
        return decision('I keep watching.')

    g = Graph(tmp_path, backend=ScriptedBackend(mind),
              tools=['track_target', 'move', 'respond', 'memory_recall'])
    try:
        g.step('A red ball bounces on the table in front of me.', ['ball'])
        known = prompts[-1]
        g.step('An umbrella leans against the wall.', ['umbrella'])
        unknown = prompts[-1]
    finally:
        g.close()
    assert 'red ball bounces' in known and 'umbrella' in unknown
    lines = [ln for ln in known.splitlines() if ln.startswith('- ')]
    assert any(re.match(r'- Memory: .*red ball.* \[shared words: .*ball', ln)
               for ln in lines), lines
    assert any(ln.startswith('- Concept: "ball" (object') and '[in view' in ln
               for ln in lines), lines
    assert any(ln.startswith('- Knowledge: ') and '[reached from recalled episodes' in ln
               for ln in lines), lines
    assert any(ln.startswith('- Prediction: Predicted: track_target succeeds') for ln in lines)
    for label in ('Memory', 'Similar situation', 'Concept', 'Knowledge', 'Prediction'):
        assert f'- {label}: ' not in unknown, unknown
    assert 'Your experience responds' not in unknown


def test_a_question_to_the_person_goes_out_and_the_answer_comes_back(tmp_path):
    """request_interaction publishes the question the thinking panel shows; the answer on
    interaction/response is the tool's result."""
    from maxim_core.llm.backend import ScriptedBackend
    from maxim_interfaces.msg import InteractionRequest, InteractionResponse

    def mind(prompt):
        # Asked once: with the answer in the diary, the robot has nothing more to ask (the
        # act's result is the next percept, and a pass on it may come before the close).
        if 'the red one' in prompt:
            return decision('I keep watching.')
        return decision('Two balls: I ask which one to follow.', 'request_interaction',
                        {'question': 'Which ball should I follow?', 'timeout_s': 60})

    g = Graph(tmp_path, backend=ScriptedBackend(mind),
              tools=['request_interaction', 'respond'])
    asked = []
    answers = g.probe.create_publisher(InteractionResponse, 'interaction/response', 10)

    def on_request(msg):
        asked.append(msg)
        answers.publish(InteractionResponse(request_id=msg.request_id, text='the red one'))

    g.probe.create_subscription(InteractionRequest, 'interaction/request', on_request, 10)
    try:
        result, episode = g.step('A red ball and a blue ball roll by.', ['ball'])
    finally:
        g.close()
    assert [(m.prompt, list(m.options)) for m in asked] == [
        ('Which ball should I follow?', [])]
    assert result.success and result.call.tool_name == 'request_interaction'
    assert 'the red one' in result.output and episode.success


def test_a_graph_closed_while_the_llm_generates_ends_the_goal_first(tmp_path, capsys):
    """Closing the graph while the llm node generates: the goal ends, its result set, before
    the executor shuts down. A result set on a shut-down executor fails inside rclpy's own
    done callbacks, in a task nobody reads ('The following exception was never retrieved'
    when it is collected)."""
    import gc
    import threading
    import time

    from maxim_core.llm.backend import ScriptedBackend
    generating = threading.Event()

    def slow(prompt):
        generating.set()
        time.sleep(3.0)                # an answer that outlasts the close
        return decision('I keep watching.')

    g = Graph(tmp_path, backend=ScriptedBackend(slow), tools=['move', 'respond'])
    try:
        g.say('Hello robot, look here.')
        assert generating.wait(60.0), 'the llm node never started generating'
        time.sleep(1.0)                # the agent asks for the goal's result meanwhile
    finally:
        g.close()
    del g
    gc.collect()
    assert 'never retrieved' not in capsys.readouterr().err
