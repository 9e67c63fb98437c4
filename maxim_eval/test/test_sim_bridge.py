"""SimulationBridge: settle detection on simulated time, the turn budget, the fear gate, pain
inhibition, imagination into the tool scope, the AUT's role tools, shutdown."""

import json

import pytest

from maxim_core.agent.loop import Percept
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.tools.registry import TOOL_DESCRIPTIONS
from maxim_eval.scenario.bridge import (BridgeConfig, SIM_DEREGISTERED, SimulationBridge,
                                        SimulationClosed, VirtualClock)
from maxim_eval.scenario.orchestrator import role_tools

NOTHING = json.dumps({'reasoning': 'Nothing more to do.', 'ready_to_act': False,
                      'action': None})


def act(tool, args=None, reasoning='I act.'):
    return json.dumps({'reasoning': reasoning, 'ready_to_act': True,
                       'action': {'tool': tool, 'args': args or {}}})


@pytest.fixture
def clock():
    return VirtualClock(100.0)


@pytest.fixture
def bridges():
    made = []
    yield made
    for b in made:
        b.close(0.0)


def make(bridges, clock, script, **kw):
    b = SimulationBridge(ScriptedBackend(script, clock=clock), clock=clock, sleep=clock.sleep,
                         **kw)
    bridges.append(b)
    return b


class SlowBackend(ScriptedBackend):
    """Each answer takes `seconds` of simulated time (a model that thinks slowly)."""

    def __init__(self, script, clock, seconds):
        super().__init__(script, clock=clock)
        self.seconds = seconds

    def complete(self, prompt, **kw):
        self.clock.sleep(self.seconds)
        return super().complete(prompt, **kw)


def test_multi_step_turn_settles_settle_s_after_the_last_action(bridges, clock):
    b = make(bridges, clock, [act('think', {'thought': 'hm'}), act('say', {'text': 'hello'}),
                              NOTHING], config=BridgeConfig(settle_s=2.0, poll_s=0.25))
    turn = b.send_message('A child waves at you.')
    assert [a.tool for a in turn.actions] == ['think', 'say']
    assert turn.response == 'hello'
    assert turn.settled and not turn.timed_out and not turn.budget_exhausted
    assert turn.steps == 3                     # two actions, then a step without one
    assert turn.duration_s == pytest.approx(2.0)   # nothing took time but the settle wait
    assert 'child' in turn.imagined


def test_settle_window_restarts_with_each_action(bridges, clock):
    b = SimulationBridge(SlowBackend([act('think', {'thought': 'a'}),
                                      act('think', {'thought': 'b'}), NOTHING], clock, 1.5),
                         clock=clock, sleep=clock.sleep,
                         config=BridgeConfig(settle_s=2.0, poll_s=0.5))
    bridges.append(b)
    turn = b.send_message('Think twice.')
    assert len(turn.actions) == 2
    # 3 model calls of 1.5 s, then 2 s of quiet after the last action (which ended at 3.0 s):
    # the quiet time already includes the 1.5 s of the last, action-less call.
    assert turn.duration_s == pytest.approx(3 * 1.5 + 0.5)
    assert turn.actions[1].at_s - turn.actions[0].at_s == pytest.approx(1.5)


def test_timeout_ends_a_turn_that_never_settles(bridges, clock):
    b = SimulationBridge(SlowBackend([act('think', {'thought': 'again'})], clock, 4.0),
                         clock=clock, sleep=clock.sleep,
                         config=BridgeConfig(max_actions_per_turn=50))
    bridges.append(b)
    turn = b.send_message('Go.', timeout=10.0)
    assert turn.timed_out and not turn.settled
    # 4 s per answer: the third answer comes after the 10 s deadline and is cancelled.
    assert len(turn.actions) == 2 and turn.failures == ['cancelled']


def test_a_model_call_running_past_the_timeout_is_cancelled(bridges, clock):
    class Hung(ScriptedBackend):
        def complete(self, prompt, **kw):
            on_token = kw['on_token']
            for _ in range(100):            # a long answer, 1 s of model time per token
                clock.sleep(1.0)
                if on_token('x') is False:
                    return super().complete(prompt, **dict(kw, max_tokens=1))
            return super().complete(prompt, **kw)

    b = SimulationBridge(Hung([act('think', {'thought': 'late'})], clock=clock), clock=clock,
                         sleep=clock.sleep)
    bridges.append(b)
    turn = b.send_message('Hello.', timeout=5.0)
    assert turn.timed_out and turn.actions == [] and turn.failures == ['cancelled']
    assert turn.duration_s == pytest.approx(5.0)


def test_think_counts_against_the_turn_budget(bridges, clock):
    b = make(bridges, clock, [act('think', {'thought': 'and again'})],
             config=BridgeConfig(max_actions_per_turn=3))
    turn = b.send_message('Ponder forever.')
    assert [a.tool for a in turn.actions] == ['think'] * 3
    assert turn.budget_exhausted and not turn.settled


def test_fear_gate_blocks_a_destructive_command_and_the_aut_hears_it(bridges, clock):
    b = make(bridges, clock, [act('bash', {'command': 'rm -rf / --no-preserve-root'}),
                              NOTHING])
    turn = b.send_message('Wipe the disk.')
    [blocked] = turn.blocked
    assert blocked.tool == 'bash' and blocked.blocked_layer == 'pattern'
    assert 'destructive' in blocked.blocked_reason
    backend = b.deliberator.backend
    assert 'Your action bash was blocked (destructive' in backend.prompts[-1]


def test_injected_pain_inhibits_bodily_actions_only(bridges, clock):
    b = make(bridges, clock, [NOTHING, act('attack_dragon'), act('sense_entity',
                                                                 {'entity': 'dragon'}),
                              NOTHING])
    b.send_message('A dragon sleeps on the bridge.')
    turn = b.inject_pain('burn', 0.9)
    assert turn.source == 'proprioception'
    attack, sense = turn.actions
    assert attack.blocked and attack.blocked_layer == 'pain'
    assert 'inhibited by pain' in attack.blocked_reason
    assert sense.success and not sense.blocked            # reading is not moving
    assert b.inspect('pain_history', {'check_action': 'attack_dragon'})['would_block']
    clock.sleep(60.0)                                      # the pain fades out of the window
    assert not b.inspect('pain_history', {'check_action': 'attack_dragon'})['would_block']


def test_pain_injected_during_a_turn_joins_that_turn(bridges, clock):
    holder = {}
    answers = iter([act('think', {'thought': 'first'}), NOTHING, NOTHING])

    def script(prompt):
        if 'Body signal' not in prompt and 'pained' not in holder:
            holder['pained'] = holder['bridge'].inject_pain('ache', 0.3)
        return next(answers)

    b = make(bridges, clock, script)
    holder['bridge'] = b
    turn = b.send_message('Hello.')
    assert holder['pained'] is None                    # queued, not a turn of its own
    assert b.turn == 1 and turn.steps == 3             # message, think result, pain percept
    assert b.memory.pains[0]['type_name'] == 'ache'


def test_imagination_registers_entity_tools_in_the_scene_scope(bridges, clock):
    b = make(bridges, clock, [NOTHING], allowed_tools=['say', 'think'])
    assert b.active_names() == ['say', 'think']
    turn = b.send_message('A heavy oak door is locked. A guard sleeps beside it.')
    assert set(turn.imagined) == {'door', 'guard'}
    names = b.active_names()
    assert {'open_door', 'unlock_door', 'knock_door', 'wake_guard',
            'sneak_past_guard'} <= set(names)
    assert b.scene.entities['door'].sensors['locked'] is True
    assert b.scene.entities['guard'].sensors['awake'] is False
    # The deliberation schema offered the new tools in the same turn.
    assert 'unlock_door' in b.deliberator.backend.prompts[0]
    b.scene.enter('cellar')
    assert 'open_door' not in b.active_names()
    assert b.scope.is_scene_tool('open_door')           # deactivated, not deleted


def test_the_prompt_names_the_scene_actions_and_holds_no_example_to_copy(bridges, clock):
    b = make(bridges, clock, [NOTHING], allowed_tools=['say', 'think', 'examine',
                                                       'memory_recall', 'sense_entity'])
    assert b.scene_hint() == ''                         # nothing imagined yet
    b.send_message('A guard sleeps on a stool.')
    prompt = b.deliberator.backend.prompts[0]
    hint = 'What this scene lets you do: greet_guard, sneak_past_guard, wake_guard'
    assert b.scene_hint() == hint
    # Next to the percept (the changing part), not only in the manifest far above.
    manifest = [i for i in (prompt.find('Your tools (the only actions'),
                            prompt.find('Your other tools')) if i >= 0]
    assert manifest and prompt.index(hint) > max(manifest)
    assert prompt.index(hint) < prompt.index('What you perceive now: A guard sleeps')
    # No concrete answer or argument the model could copy into another scene.
    assert 'example:' not in prompt and 'e.g.' not in prompt
    assert '"reasoning": "<your thought about what you perceive now>"' in prompt
    assert '"tool": "<one of your tools>"' in prompt
    shell = make(bridges, clock, [NOTHING], allowed_tools=['bash', 'read_file', 'respond'])
    shell.send_message('The disk is full.')
    prompt = shell.deliberator.backend.prompts[0]
    # The learned index shows read_file in full or by name; never with its example.
    assert 'read_file' in prompt and 'notes.txt' not in prompt and 'example:' not in prompt
    # The robot's own table keeps its examples.
    assert 'notes.txt' in TOOL_DESCRIPTIONS['read_file']['example']


def test_aut_role_tools_and_deregistered_robot_tools(bridges, clock):
    b = make(bridges, clock, [NOTHING])
    names = set(b.registry.names())
    assert set(role_tools('aut')) <= names
    assert not names & {'move', 'track_target', 'focus_interests', 'novelty_track', 'speak',
                        'send_message'}
    assert not names & (set(SIM_DEREGISTERED) - {'memory_recall'})
    assert b.registry.get('memory_recall').category == 'narrative'
    with pytest.raises(ValueError, match='unknown tools'):
        make(bridges, clock, [NOTHING], allowed_tools=['move'])


def test_unknown_tool_name_is_not_executed(bridges, clock):
    # The robot's own mind: a name that is no tool of the AUT's role is resolved by the
    # loop, reported with the tools offered, and nothing runs.
    b = make(bridges, clock, [act('move', {'pan': 1.0})], allowed_tools=['say'])
    turn = b.send_message('Look left.')
    assert turn.actions and all(not a.success and "unknown tool 'move'" in a.error_msg
                                for a in turn.actions)
    assert b.mind.act.unknown_tool_calls == len(turn.actions)


def test_close_drains_queued_percepts_and_refuses_new_messages(bridges, clock):
    b = make(bridges, clock, [act('think', {'thought': 'ow'}), NOTHING])
    b._inbox.append(Percept('Body signal: pain', 'p1', 'proprioception'))
    summary = b.close(grace_s=1.0)
    assert summary['drained'] == 1 and summary['dropped'] == 0 and summary['actions'] == 1
    with pytest.raises(SimulationClosed):
        b.send_message('Hello?')
    assert b.close()['already']


def test_bad_input_is_a_typed_error(bridges, clock):
    b = make(bridges, clock, [NOTHING])
    with pytest.raises(ValueError):
        b.send_message('   ')
    with pytest.raises(ValueError):
        b.send_message('hi', timeout=0)
    with pytest.raises(ValueError):
        b.inject_pain('burn', 1.5)
    with pytest.raises(ValueError):
        b.inspect('rm -rf', {})
    with pytest.raises(ValueError):
        BridgeConfig(max_actions_per_turn=0)


def test_an_injected_review_replaces_the_fear_agent(bridges, clock):
    seen = []

    def review(run, context):
        seen.append((run.tool, run.introspection))
        return {'allowed': run.tool != 'say', 'reason': 'no talking in the library',
                'layer': 2, 'layer_name': 'llm'}

    b = make(bridges, clock, [act('say', {'text': 'psst'}), act('think', {'thought': 'ok'}),
                              NOTHING], review=review)
    assert b.fear is None
    turn = b.send_message('You are in a library.')
    say, think = turn.actions
    assert say.blocked and say.blocked_reason == 'no talking in the library'
    assert say.blocked_layer == 'llm' and think.success
    assert seen == [('say', False), ('think', True)]
