"""Robot-world scenario files: they load and validate here; the world itself is composed by
maxim_eval.robot_world (test_robot_world runs them), so a runner without it says so instead
of guessing."""

import pytest

from maxim_eval.scenario import cli
from maxim_eval.scenario.bridge import VirtualClock
from maxim_eval.scenario.scenario import (ActionMatch, all_scenarios, Criteria, find_scenario,
                                          robot_scenarios, run_scenario, Scenario, ScenarioError,
                                          shipped_scenarios)

ROBOT = robot_scenarios()


def test_the_package_ships_robot_world_scenarios_beside_the_text_worlds():
    assert {'look_at_red_ball', 'new_ball', 'limit_pain', 'remember_name'} <= set(ROBOT)
    assert not set(ROBOT) & set(shipped_scenarios())
    assert set(all_scenarios()) == set(ROBOT) | set(shipped_scenarios())


@pytest.mark.parametrize('name', sorted(ROBOT))
def test_robot_scenarios_load_and_round_trip(name, tmp_path):
    scenario = find_scenario(name)
    assert scenario.world == 'robot' and scenario.script
    assert scenario.criteria.expected or scenario.criteria.body
    again = Scenario.load(scenario.save(str(tmp_path)))
    assert (again.world, again.setup, again.turns) == (scenario.world, scenario.setup,
                                                       scenario.turns)
    assert again.criteria == scenario.criteria


def test_a_robot_scenario_needs_the_robot_world():
    clock = VirtualClock()
    with pytest.raises(ScenarioError, match='robot world, which this runner was not given'):
        run_scenario(find_scenario('new_ball'), clock=clock, sleep=clock.sleep)


def base(**extra):
    return {'name': 'x', 'goal': 'g', 'turns': ['hello'], **extra}


def test_robot_world_keys_are_validated():
    with pytest.raises(ScenarioError, match='world must be one of'):
        Scenario.from_dict(base(world='moon'))
    with pytest.raises(ScenarioError, match='for a robot world only'):
        Scenario.from_dict(base(setup={'head': {'pan': 0}}))
    with pytest.raises(ScenarioError, match='world events are turns of a robot world'):
        Scenario.from_dict(base(turns=[{'world': {'wait_s': 1}}]))
    with pytest.raises(ScenarioError, match='body criteria are for a robot world'):
        Scenario.from_dict(base(completion={'body': [{'moved': 0.2}]}))
    with pytest.raises(ScenarioError, match='a world turn is a mapping'):
        Scenario.from_dict(base(world='robot', turns=[{'world': 'go'}]))
    with pytest.raises(ScenarioError, match='list of body criteria'):
        Scenario.from_dict(base(world='robot', completion={'body': {'moved': 0.2}}))
    ok = Scenario.from_dict(base(world='robot', allowed_tools=['move', 'respond'],
                                 turns=[{'world': {'show': 'ball'}}, 'hi'],
                                 completion={'body': [{'moved': 0.2, 'since_turn': 2}]}))
    assert ok.criteria.body == ({'moved': 0.2, 'since_turn': 2},)


def action(tool, turn=1, output='', **args):
    return {'index': 1, 'turn': turn, 'tool': tool, 'args': args, 'success': True,
            'blocked': False, 'output': output}


def test_action_patterns_take_tool_alternatives_outputs_and_a_first_turn():
    m = ActionMatch.parse({'tool': 'respond|memory_recall', 'output': 'Ada', 'from_turn': 3},
                          'success')
    assert m.matches(action('memory_recall', 3, "{'episodes': ['my name is Ada']}"))
    assert m.matches(action('respond', 4, "{'said': 'You are Ada.'}"))
    assert not m.matches(action('respond', 1, "{'said': 'Hello Ada'}"))     # too early
    assert not m.matches(action('respond', 3, "{'said': 'Hello'}"))         # no name
    assert not m.matches(action('respond_more', 3, 'Ada'))                  # whole name only
    assert 'output~/Ada/ from turn 3' in m.describe()
    assert ActionMatch.parse(m.as_dict(), 'success') == m
    with pytest.raises(ScenarioError, match='unknown action pattern keys'):
        ActionMatch.parse({'tool': 'move', 'when': 2}, 'success')
    with pytest.raises(ScenarioError, match='bad regex'):
        ActionMatch.parse({'tool': 'move', 'output': '('}, 'success')
    check = Criteria.parse({'expected_actions': [m.as_dict()]}).check(
        [action('respond', 1, 'Ada')])
    assert not check['passed'] and check['unmet']


def test_cli_lists_both_kinds_of_world(capsys):
    assert cli.main(['list']) == 0
    out = capsys.readouterr().out
    assert 'locked_door' in out and 'text' in out
    assert any(line.startswith('look_at_red_ball') and ' robot ' in line
               for line in out.splitlines())
