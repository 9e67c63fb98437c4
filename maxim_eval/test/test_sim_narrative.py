"""The AUT's narrative tools, the component index (imagination) and the session memory."""

import pytest

from maxim_core.tools.registry import ToolRegistry
from maxim_core.tools.scope import ToolExecutor, ToolScope
from maxim_eval.scenario.components import ComponentIndex, SEED_COMPONENTS
from maxim_eval.scenario.memory import SimMemory
from maxim_eval.scenario.narrative import NOTHING_NOTABLE, narrative_tools, Scene


class Clock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture
def world():
    registry = ToolRegistry()
    scope = ToolScope(registry, cap=20)
    memory = SimMemory(clock=Clock())
    scene = Scene(scope, overrides={'door': {'secret': 'swordfish'}})
    for t in narrative_tools(scene, memory, scope.active_tools):
        registry.register(t)
    return scene, memory, ToolExecutor(registry, scope)


def run(executor, name, **args):
    return executor.execute(name, args)


def test_component_index_covers_seven_categories_and_finds_phrases():
    index = ComponentIndex()
    assert len(index) == len(SEED_COMPONENTS) >= 20
    categories = {'structure', 'container', 'person', 'creature', 'item', 'terrain', 'hazard'}
    assert {c.category for c in SEED_COMPONENTS} == categories
    found = {c.name: (phrase, ctx) for c, phrase, ctx in
             index.find('Two sentries guard the rickety bridge. A raging stream runs below.')}
    assert set(found) == {'guard', 'bridge', 'river'}
    assert found['bridge'][0] == 'rickety bridge'
    with pytest.raises(ValueError):
        ComponentIndex([SEED_COMPONENTS[0], SEED_COMPONENTS[0]])


def test_imagination_sets_state_from_the_sentence_and_the_next_it(world):
    scene, _, executor = world
    new = scene.observe('You reach a heavy oak door. It is locked. A dog sleeps nearby.')
    assert [e.entity_id for e in new] == ['door', 'dog']
    assert scene.entities['door'].sensors == {'open': False, 'locked': True,
                                              'secret': 'swordfish'}
    assert scene.entities['dog'].sensors['awake'] is False
    assert scene.observe('The door creaks.') == []          # not novel any more
    out = run(executor, 'sense_entity', entity='oak door')
    assert out.success and 'secret' not in out.output['sensors']


def test_entity_tools_check_state_secrets_and_items(world):
    scene, _, executor = world
    scene.observe('A locked door. A locked chest, and a key on the floor.')
    assert not run(executor, 'open_door').success                      # still locked
    wrong = run(executor, 'unlock_door', code='password123')
    assert not wrong.success and 'does not accept' in wrong.error_msg
    assert run(executor, 'unlock_door', code='Swordfish').success      # case-insensitive
    assert run(executor, 'open_door').output['state']['open'] is True
    assert 'need a key' in run(executor, 'unlock_chest').error_msg
    assert run(executor, 'take_key').success and 'key' in scene.inventory
    assert run(executor, 'unlock_chest').success
    assert 'open_chest' in scene.physical_tools and 'unlock_door' not in scene.physical_tools


def test_an_entity_can_wait_on_another_entity_or_on_what_is_held():
    registry = ToolRegistry()
    scope = ToolScope(registry, cap=20)
    scene = Scene(scope, overrides={
        'door': {'requires': {'open': {'entity': 'button', 'state': {'pressed': True}}}},
        'chest': {'requires': {'open': {'holds': 'torch'}}}})
    for t in narrative_tools(scene, SimMemory(clock=Clock()), scope.active_tools):
        registry.register(t)
    executor = ToolExecutor(registry, scope)
    scene.observe('A heavy gate, and a lever in the wall. A chest, and a torch on a hook.')
    assert 'requires' not in scene.entities['door'].sensors        # a need, not a sensor
    shut = run(executor, 'open_door')
    assert not shut.success and 'something else has to change first' in shut.error_msg
    assert run(executor, 'press_button').success
    assert run(executor, 'open_door').success
    assert 'until you hold a torch' in run(executor, 'open_chest').error_msg
    assert run(executor, 'take_torch').success and run(executor, 'open_chest').success


def test_examine_reads_percepts_and_memories_or_finds_nothing(world):
    scene, memory, executor = world
    assert run(executor, 'examine', target='painting').output == {
        'observation': NOTHING_NOTABLE}
    memory.seed('The guard at the mill takes bribes in silver.')
    scene.observe('A guard leans on his spear by the mill. Rain falls.')
    out = run(executor, 'examine', target='guard').output
    assert out['observation'] == 'A guard leans on his spear by the mill.'
    assert out['state']['awake'] is True
    assert out['you_remember'] == ['The guard at the mill takes bribes in silver.']


def test_memory_recall_spreads_activation_over_shared_keywords(world):
    _, memory, executor = world
    memory.seed('The caretaker told me the password of the oak door is swordfish.')
    memory.seed('The caretaker keeps the oak door keys in the library.')
    memory.seed('It rained all day at the harbour.')
    direct = run(executor, 'memory_recall', keyword='password', expand=False).output
    assert direct['memories'] == [
        'The caretaker told me the password of the oak door is swordfish.']
    spread = memory.recall('password', expand=True)
    assert [m['via'] for m in spread] == ['direct', 'spread']
    assert 'library' in spread[1]['text'] and spread[1]['activation'] < 1.0
    none = run(executor, 'memory_recall', keyword='dragon').output
    assert none['memories'] == [] and 'nothing' in none['note']


def test_sense_tools_finds_own_actions_and_hints_at_scene_entities(world):
    scene, _, executor = world
    scene.observe('A dragon circles above the river.')
    out = run(executor, 'sense_tools', query='attack').output
    assert [m['tool'] for m in out['your_actions']] == ['attack_dragon']
    hint = run(executor, 'sense_tools', query='breathes fire').output
    assert any('dragon' in h and 'not yours' in h for h in hint['hints'])
    assert hint['your_actions'] == []


def test_perceive_lists_self_and_scene_and_imagines(world):
    scene, _, executor = world
    scene.percepts.append('A torch burns on the wall.')        # seen, not yet imagined
    out = run(executor, 'perceive').output
    assert out['newly_imagined'] == ['torch', 'wall']
    assert out['perceived'][0].startswith('[YOU]')
    assert any(line.startswith('[SCENE] torch') and 'not callable' in line
               for line in out['perceived'])


def test_set_scene_switches_entity_tools(world):
    scene, _, executor = world
    scene.observe('A ladder leans on the wall.')
    assert run(executor, 'climb_ladder').success
    assert run(executor, 'set_scene', scene_id='roof').success
    inactive = run(executor, 'climb_ladder')
    assert not inactive.success and 'not active' in inactive.error_msg
    assert run(executor, 'request_interaction', question='Left or right?').data[
        'question'] == 'Left or right?'


def test_memory_queries_answer_the_introspection_channel():
    memory = SimMemory(clock=Clock())
    memory.add_episode({'perception': 'door', 'tool_name': 'open_door', 'success': False,
                        'blocked': False, 'outcome': 'failed'})
    memory.add_episode({'perception': 'door', 'tool_name': 'open_door', 'success': True,
                        'outcome': 'ok'})
    pred = memory.query('predict_outcome', {'tool_name': 'open_door'})
    assert pred['value'] == 0.5 and pred['samples'] == 2
    links = memory.query('causal_links', {'valence': -1, 'limit': 5})['links']
    assert links == [{'cause': 'open_door', 'effect': 'failure', 'count': 1, 'valence': -1.0}]
    with pytest.raises(ValueError):
        memory.query('scene_summary', {})
    with pytest.raises(ValueError):
        memory.recall('  ')


def test_a_state_word_counts_in_another_inflection_and_not_when_denied():
    from maxim_eval.scenario.components import initial_sensors
    comps = {c.name: c for c in SEED_COMPONENTS}
    assert initial_sensors(comps['guard'], 'a soldier dozes by the exit')['awake'] is False
    assert initial_sensors(comps['guard'], 'a soldier stands by the exit')['awake'] is True
    # A bare noun is no inflection of a state ("its lock" is not "locked").
    door = initial_sensors(comps['door'], 'the gate will not open; its lock wants a code')
    assert door == {'open': False, 'locked': False}
    assert initial_sensors(comps['door'], "the gate won't open")['open'] is False
    assert initial_sensors(comps['door'], 'an open door')['open'] is True


def test_sense_entity_reads_a_thing_of_the_scene_never_a_word_of_the_moment():
    from maxim_core.deliberation.candidates import CandidateBuilder
    from maxim_core.deliberation.grounding import Grounding
    from maxim_eval.scenario.narrative import SenseEntityTool
    g = Grounding(percept='The guard is perceived by a person.', entities=['guard'],
                  recalled=['A person raises the alarm.'])
    args = [c.args['entity'] for c in CandidateBuilder().build([SenseEntityTool(None)], g)
            if c.tool == 'sense_entity']
    assert args == ['guard']
