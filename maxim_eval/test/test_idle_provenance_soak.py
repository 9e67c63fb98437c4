"""IDLE-5 provenance comparison (and its CLI), and a short soak with the drives ablation."""

from dataclasses import replace
import json
import os
import subprocess
import sys

import pytest

from maxim_core.idle.controller import IdleConfig, IdleIntrospectionController
from maxim_core.idle.compare import main as compare_main
from maxim_core.idle.eligibility import assess
from maxim_core.idle.provenance import (compare, ProvenanceError, ProvenanceLog,
                                        ProvenanceRecord, read_records)
from maxim_core.idle.tasks import TaskStore
from maxim_core.llm.backend import ScriptedBackend
from maxim_eval.soak.idle import check_budgets, run_ablation, run_soak, SimClock, SoakConfig


def run(tmp_path, name, script, config=None, model_name=''):
    """Three idle cycles with the same (empty) world; provenance to tmp_path/name."""
    clock = SimClock()
    store = TaskStore(str(tmp_path / f'{name}.db'), clock=clock)
    config = config or IdleConfig()
    if model_name:
        config = replace(config, model_name=model_name)
    path = str(tmp_path / f'{name}.jsonl')
    controller = IdleIntrospectionController(ScriptedBackend(script, clock=clock), store,
                                             lambda n, w: [], config,
                                             provenance_log=ProvenanceLog(path), clock=clock)
    for _ in range(3):
        controller.run_cycle(assess(store, None, clock()))
        clock.advance(60)
    store.close()
    return path


def test_same_everything_is_no_difference(tmp_path):
    a = run(tmp_path, 'a', ['Quiet.'])
    b = run(tmp_path, 'b', ['Quiet.'])
    report = compare(a, b)
    assert report['attribution'] == [] and not report['outcomes_differ']


def test_same_inputs_different_outputs_is_model_stochasticity(tmp_path):
    a = run(tmp_path, 'a', ['Quiet.'])
    b = run(tmp_path, 'b', ['', 'Quiet.', ''])
    report = compare(a, b)
    assert report['attribution'] == ['model_stochasticity']
    assert report['same_situation_different_outcome'] >= 1


def test_config_and_model_differences_are_attributed(tmp_path):
    a = run(tmp_path, 'a', ['Quiet.'])
    b = run(tmp_path, 'b', ['Quiet.'], IdleConfig(retrieval_max_events=9))
    c = run(tmp_path, 'c', ['Quiet.'], IdleConfig(temperature=0.2), model_name='other.gguf')
    ab, ac = compare(a, b), compare(a, c)
    assert ab['attribution'] == ['config'] and 'retrieval_max_events' in ab['config']
    assert ac['attribution'] == ['model'] and set(ac['model']) == {'model', 'temperature'}


def test_environment_differences_are_attributed(tmp_path):
    a = run(tmp_path, 'a', ['Quiet.'])
    b = run(tmp_path, 'b', ['Quiet.'])
    records = read_records(b)
    with open(b, 'w') as f:
        for r in records:
            r['idle_reason'], r['situation_hash'] = 'all_in_backoff', 'elsewhere'
            f.write(json.dumps(r) + '\n')
    report = compare(a, b)
    assert report['attribution'] == ['environment']
    assert 'idle_reason' in report['environment']


def test_bad_files_are_typed_errors(tmp_path):
    bad = tmp_path / 'bad.jsonl'
    bad.write_text('{"decision_outcome": "no_op"}\nnot json\n')
    with pytest.raises(ProvenanceError, match='bad.jsonl:2'):
        read_records(str(bad))
    with pytest.raises(ProvenanceError):
        read_records(str(tmp_path / 'missing.jsonl'))
    with pytest.raises(ValueError):
        ProvenanceRecord('v', 'h', 'structured', 1, 1, 0, 'm', 0.1, 1, 'no_tasks', '',
                         'maybe', '', False, '', 0.0)
    assert compare_main([str(bad), str(bad)]) == 2


def test_compare_cli(tmp_path, capsys):
    a = run(tmp_path, 'a', ['Quiet.'])
    b = run(tmp_path, 'b', ['Quiet.'], IdleConfig(drives_enabled=False))
    assert compare_main([a, b]) == 0
    assert 'attribution: config' in capsys.readouterr().out
    env = dict(os.environ)
    out = subprocess.run([sys.executable, '-m', 'maxim_core.idle.compare', a, b, '--json'],
                         capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)['config']['drives_enabled'] == {'a': [True], 'b': [False]}


def test_two_hour_soak_and_ablation(tmp_path):
    """2 h of robot time (120 ticks of 60 s on the simulated clock), scripted model."""
    result = run_ablation(str(tmp_path), SoakConfig(hours=2.0, seed=7))
    budgets = IdleConfig().budgets
    for label in ('drives_on', 'drives_off'):
        r = result[label]
        assert r['ticks'] == 120 and r['idle_cycles'] > 60          # mostly idle
        assert r['budget_violations'] == []
        assert max(r['emissions_per_hour']) <= budgets.max_goals_per_hour
        # Episodic memory is not dominated by idle reflections.
        assert r['reflection_share'] < 0.2
        assert r['idle_share'] < 0.5
        assert r['task_rows_max'] <= 500 and r['events_kept_max'] <= 500
        assert sum(r['outcomes'].values()) == r['idle_cycles']
        assert len(read_records(r['provenance_path'])) == r['idle_cycles']
    assert 'config' in result['compare']['attribution']
    assert result['compare']['config']['drives_enabled'] == {'a': [True], 'b': [False]}
    on = result['compare']['outcomes']['decision_outcome']
    assert on['a'] != on['b']         # the ablation changes behaviour, measurably


def test_budget_checker_finds_violations():
    records = [{'decision_outcome': 'intent_emitted', 'timestamp': t,
                'idle_reason': 'all_in_backoff', 'thresholds_crossed': ''}
               for t in (0, 10, 400, 800)]
    problems = check_budgets(records, IdleConfig().budgets)
    assert any('spacing' in p for p in problems)
    assert any('under backoff' in p for p in problems)


def test_soak_is_deterministic(tmp_path):
    cfg = SoakConfig(hours=0.5, seed=3)
    a = run_soak(str(tmp_path), 'x', cfg)
    b = run_soak(str(tmp_path), 'y', cfg)
    assert a.outcomes == b.outcomes and a.episodes_by_kind == b.episodes_by_kind


def test_the_scripted_stand_in_prefers_no_fact():
    """The ablation's difference must come from the prompt, not from a stand-in that favours
    bodily facts: shown one bodily and one plain fact, it tags each about equally often."""
    from maxim_eval.soak.idle import fact_driven_script
    answer = fact_driven_script(3)
    prompt = '- Recent pain: 0.6 in the last 10 min.\n- The door was opened twice today.\n'
    goals = [a.split('[GOAL: ')[1] for a in (answer(prompt) for _ in range(4000))
             if '[GOAL: ' in a]
    bodily = sum(g.startswith('check servo') for g in goals) / len(goals)
    assert len(goals) > 800 and 0.4 < bodily < 0.6
