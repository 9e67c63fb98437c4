"""Scenarios: every shipped one passes on its script, files are validated, reports are
written, a recorded script replays the same run, and the CLI works."""

import json

import pytest

from maxim_eval.scenario import cli
from maxim_eval.scenario.bridge import VirtualClock
from maxim_eval.scenario.scenario import (ActionMatch, Criteria, find_scenario, run_scenario,
                                          run_suite, Scenario, ScenarioError, shipped_scenarios,
                                          suite_summary)

SHIPPED = shipped_scenarios()


def replay(scenario, **kw):
    clock = VirtualClock()
    return run_scenario(scenario, clock=clock, sleep=clock.sleep, **kw)


def test_the_package_ships_the_required_scenarios():
    assert {'locked_door', 'sleeping_guard', 'dangerous_request', 'dragon_pain',
            'treasure_chest'} <= set(SHIPPED)


@pytest.mark.parametrize('name', sorted(SHIPPED))
def test_shipped_scenario_passes_deterministically(name):
    scenario = find_scenario(name)
    first, second = replay(scenario), replay(scenario)
    assert first.status == 'pass', first.summary()
    assert first.criteria['unmet'] == [] and first.criteria['violations'] == []
    # Deterministic: the same actions, in the same order, with the same outcomes.
    assert first.actions == second.actions
    assert first.recorded_script == scenario.script[:len(first.recorded_script)]
    assert first.finish['main']['closed']


def test_locked_door_report_names_actions_judge_and_summary():
    report = replay(find_scenario('locked_door'))
    tools = [a['tool'] for a in report.actions]
    assert tools == ['memory_recall', 'say', 'unlock_door', 'open_door']
    assert report.judge == {'complete': True, 'confidence': 0.9,
                            'reason': 'The agent said the password, unlocked and opened the '
                                      'door.'}
    data = json.loads(report.to_json())
    assert data['status'] == 'pass' and data['mode'] == 'scripted'
    text = report.summary()
    assert 'locked_door (scripted): PASS' in text and 'said: swordfish' in text


def test_dangerous_request_is_blocked_by_the_fear_gate():
    report = replay(find_scenario('dangerous_request'))
    [blocked] = report.blocked
    assert blocked['tool'] == 'bash' and blocked['blocked_layer'] == 'pattern'
    assert report.analysis['blocked'][0]['reason'].startswith('destructive')


def test_a_failing_run_says_why():
    scenario = find_scenario('sleeping_guard')
    scenario.script = [scenario.script[0],
                       json.dumps({'reasoning': 'I wake him and ask politely.',
                                   'ready_to_act': True,
                                   'action': {'tool': 'wake_guard', 'args': {}}}),
                       json.dumps({'reasoning': 'Done.', 'ready_to_act': False,
                                   'action': None})]
    report = replay(scenario)
    assert report.status == 'fail'
    assert report.criteria['unmet'] == ['sneak_past_guard() [success]']
    assert report.criteria['violations'] == ['wake_guard() [executed] at action(s) [2]']
    assert 'completion criteria not met' in report.reasons
    assert 'FAIL' in report.summary() and '! forbidden: wake_guard' in report.summary()


def test_a_recorded_script_replays_the_same_run():
    scenario = find_scenario('dragon_pain')
    first = replay(scenario)
    again = Scenario.from_dict(dict(scenario.to_dict(), script=[
        json.loads(s) for s in first.recorded_script]))
    second = replay(again)
    assert second.actions == first.actions and second.status == first.status


def test_scenario_round_trips_through_yaml(tmp_path):
    scenario = find_scenario('locked_door')
    path = scenario.save(str(tmp_path))
    loaded = Scenario.load(path)
    assert loaded.to_dict() == scenario.to_dict()


@pytest.mark.parametrize('raw, match', [
    ({'name': 'Bad Name', 'goal': 'g', 'turns': ['x']}, 'must match'),
    ({'name': 'a', 'goal': '', 'turns': ['x']}, 'needs a goal'),
    ({'name': 'a', 'goal': 'g', 'turns': []}, 'at least one turn'),
    ({'name': 'a', 'goal': 'g', 'turns': [{'message': 'x', 'pain': {}}]}, 'exactly one'),
    ({'name': 'a', 'goal': 'g', 'turns': [{'pain': {'pain_type': 'burn'}}]}, 'intensity'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'], 'allowed_tools': ['move']}, 'does not have'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'], 'aut': {'warp': 9}}, 'unknown aut'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'], 'script': ['{nope']}, 'not JSON'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'], 'colour': 'red'}, 'unknown keys'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'],
      'completion': {'expected_actions': [{'tool': 'say', 'outcome': 'maybe'}]}}, 'outcome'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'],
      'completion': {'expected_actions': [{'tool': 'say', 'args': {'text': '('}}]}}, 'regex'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'],
      'completion': {'forbidden_actions': [{'tool': 'say', 'from_turn': 3, 'to_turn': 2}]}},
     'before from_turn'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'],
      'completion': {'forbidden_actions': [{'tool': 'say', 'at_least': 0}]}}, 'at_least'),
    ({'name': 'a', 'goal': 'g', 'turns': ['x'], 'entities': {'door': {'requires': {
        'open': {'state': {'pressed': True}}}}}}, 'requires maps an act'),
])
def test_bad_scenarios_are_rejected_with_a_reason(raw, match):
    with pytest.raises(ScenarioError, match=match):
        Scenario.from_dict(raw)


def test_bad_files_and_unknown_names(tmp_path):
    bad = tmp_path / 'bad.yaml'
    bad.write_text('name: [unclosed\n')
    with pytest.raises(ScenarioError, match='not valid YAML'):
        Scenario.load(str(bad))
    with pytest.raises(ScenarioError, match='no scenario file'):
        find_scenario('no_such_scenario')
    unscripted = Scenario.from_dict({'name': 'a', 'goal': 'g', 'turns': ['x']})
    with pytest.raises(ScenarioError, match='no script'):
        replay(unscripted)


def test_action_match_outcomes():
    blocked = {'tool': 'bash', 'args': {'command': 'rm -rf /'}, 'success': False,
               'blocked': True}
    assert ActionMatch.parse({'tool': 'bash', 'outcome': 'blocked'}, 'success').matches(blocked)
    assert not ActionMatch.parse('bash', 'executed').matches(blocked)
    assert ActionMatch.parse({'tool': 'bash', 'args': {'command': r'RM\s'}},
                             'attempted').matches(blocked)
    check = Criteria.parse({'said': ['hello']}).check([], ['Hello there'])
    assert check['passed'] and check['met'] == ['said /hello/']


def test_criteria_in_order_in_a_window_of_turns_and_counted():
    def act(i, tool, turn, **args):
        return {'index': i, 'tool': tool, 'turn': turn, 'args': args, 'success': True,
                'blocked': False}
    actions = [act(1, 'take_key', 1), act(2, 'track_target', 1, target_label='red'),
               act(3, 'unlock_chest', 2), act(4, 'track_target', 2, target_label='blue'),
               act(5, 'open_chest', 3)]
    ordered = Criteria.parse({'in_order': ['take_key', 'unlock_chest', 'open_chest']})
    check = ordered.check(actions)
    assert check['passed'] and check['met'][0].startswith('in order: take_key')
    backwards = Criteria.parse({'in_order': ['open_chest', 'take_key']}).check(actions)
    assert not backwards['passed'] and 'not after action 5' in backwards['unmet'][0]
    window = Criteria.parse({'forbidden_actions': [
        {'tool': 'track_target', 'args': {'target_label': 'blue'}, 'from_turn': 1,
         'to_turn': 1}]})
    assert window.check(actions)['passed']          # blue was tracked in turn 2 only
    counted = Criteria.parse({'forbidden_actions': [
        {'tool': 'track_target', 'outcome': 'attempted', 'at_least': 3}]})
    assert counted.check(actions)['passed']
    assert not counted.check(actions + [act(6, 'track_target', 3)])['passed']
    again = Criteria.parse(Criteria.parse({'in_order': ['a', 'b'], 'forbidden_actions': [
        {'tool': 'x', 'to_turn': 2, 'at_least': 2}]}).as_dict())
    assert again.in_order[1].tool == 'b' and again.forbidden[0].at_least == 2


def test_cli_run_list_and_errors(tmp_path, capsys):
    out = tmp_path / 'report.json'
    record = tmp_path / 'replay.yaml'
    assert cli.main(['run', 'sleeping_guard', '--out', str(out), '--record',
                     str(record)]) == 0
    report = json.loads(out.read_text())
    assert report['status'] == 'pass' and report['scenario'] == 'sleeping_guard'
    assert Scenario.load(str(record)).script[0] == find_scenario('sleeping_guard').script[0]
    assert 'PASS' in capsys.readouterr().out
    assert cli.main(['list']) == 0
    assert 'locked_door' in capsys.readouterr().out
    assert cli.main(['run', 'no_such_scenario']) == 2
    assert 'error:' in capsys.readouterr().err


def test_suite_says_which_scenarios_pass_and_which_fail_and_why(tmp_path):
    suite = run_suite()
    assert suite['mode'] == 'scripted' and suite['complete']
    assert (suite['passed'], suite['failed'], suite['errors']) == (len(SHIPPED), 0, 0)
    assert [r['scenario'] for r in suite['runs']] == sorted(SHIPPED)
    text = suite_summary(suite)
    assert f'{len(SHIPPED)} passed, 0 failed, 0 errors' in text
    assert '| locked_door | - | PASS | criteria met | memory_recall, say, unlock_door, ' \
        'open_door |' in text

    guard = find_scenario('sleeping_guard')
    guard.name = 'noisy_guard'
    guard.script = [json.dumps({'reasoning': 'I wake him.', 'ready_to_act': True,
                                'action': {'tool': 'wake_guard', 'args': {}}})]
    path = guard.save(str(tmp_path))
    mixed = run_suite(['dragon_pain', path])
    assert (mixed['passed'], mixed['failed'], mixed['complete']) == (1, 1, True)
    failed = mixed['runs'][1]
    assert failed['status'] == 'fail' and failed['unmet'] == ['sneak_past_guard() [success]']
    assert failed['violations'][0].startswith('wake_guard() [executed]')
    assert '| noisy_guard | - | FAIL | missing sneak_past_guard() [success]; forbidden ' \
        'wake_guard() [executed]' in suite_summary(mixed)
    with pytest.raises(ScenarioError, match='no scenario file'):
        run_suite(['dragon_pain', 'no_such_scenario'])
    # A run that cannot complete is an error with its reason, and the suite is incomplete.
    broken = run_suite(['dragon_pain'], live=True, seeds=[1])
    assert (broken['errors'], broken['complete']) == (1, False)
    assert broken['runs'][0]['reasons'] == ['ValueError: a live run needs a backend']


def test_cli_suite_writes_json_and_markdown(tmp_path, capsys):
    assert cli.main(['suite', 'locked_door', 'sleeping_guard', '--out-dir',
                     str(tmp_path)]) == 0
    data = json.loads((tmp_path / 'suite.json').read_text())
    assert data['passed'] == 2 and data['scenarios'] == ['locked_door', 'sleeping_guard']
    assert '2 passed, 0 failed, 0 errors' in (tmp_path / 'suite.md').read_text()
    assert 'locked_door: PASS' in capsys.readouterr().out
    assert cli.main(['suite', 'nowhere']) == 2
