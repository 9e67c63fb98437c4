"""The idle introspection controller, and seed 004's five acceptance tests at the core level
(scripted backend where the test needs a fixed model output)."""

import json

import pytest

from maxim_core.idle import budgets as B
from maxim_core.idle.controller import (DEFAULT_TEMPLATE, IdleConfig,
                                        IdleIntrospectionController, RetrievalError)
from maxim_core.idle.drives import DriveState
from maxim_core.idle.eligibility import assess, IdleStatus
from maxim_core.idle.provenance import (CONFIG_FIELDS, INTENT_EMITTED, NO_OP, ProvenanceLog,
                                        read_records, sha256_text, THOUGHT_ONLY)
from maxim_core.idle.tasks import CircuitBreaker, TaskStore
from maxim_core.llm.backend import LLMError, ScriptedBackend, TIMEOUT

NOW = 1_800_000_000.0


class Clock:
    def __init__(self, t=NOW):
        self.t = t

    def __call__(self):
        return self.t


class Memory:
    """Real recent events with the structured query the memory service answers."""

    def __init__(self, clock):
        self.clock = clock
        self.events = []
        self.calls = []

    def add(self, summary, salience=0.5, kind='percept', age_s=60.0):
        self.events.append({'id': f'e{len(self.events)}', 'timestamp': self.clock() - age_s,
                            'kind': kind, 'summary': summary, 'salience': salience})

    def retrieve(self, max_events, window_s):
        self.calls.append((max_events, window_s))
        start = self.clock() - window_s
        return [e for e in self.events if e['timestamp'] >= start][-max_events:]


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def store(tmp_path, clock):
    s = TaskStore(str(tmp_path / 'tasks.db'), clock=clock)
    yield s
    s.close()


def make(store, clock, script, tmp_path, **cfg):
    memory = Memory(clock)
    backend = ScriptedBackend(script, clock=clock)
    log = ProvenanceLog(str(tmp_path / 'prov.jsonl'))
    controller = IdleIntrospectionController(backend, store, memory.retrieve,
                                             IdleConfig(**cfg), provenance_log=log,
                                             clock=clock)
    return controller, backend, memory


# Seed 004 acceptance tests ----------------------------------------------------------------

def test_acceptance_idle1_eligibility_based_idle(store, clock, tmp_path):
    """3 tasks all in backoff -> idle with all_in_backoff, no task created by introspection."""
    for i in range(3):
        store.add(f'track ball {i + 1}', next_eligible_at=NOW + 60 * (i + 1))
    breaker = CircuitBreaker()
    status = assess(store, breaker, clock())
    assert status.reason == 'all_in_backoff' and status.task_count == 3
    controller, backend, _ = make(store, clock, [
        'The ball went under the table, I should look for it and track it again.',
        'Three tracking attempts are cooling down. [GOAL: track ball 1]',   # duplicate
    ], tmp_path)
    first = controller.run_cycle(status)
    second = controller.run_cycle(status)
    assert first.outcome == THOUGHT_ONLY and first.task is None
    assert second.outcome == THOUGHT_ONLY and second.suppression_reason == B.DUPLICATE_TASK
    assert store.count() == 3
    assert 'Idle reason: all_in_backoff' in backend.prompts[0]
    assert first.provenance.idle_reason == 'all_in_backoff'
    # Not idle while a task is eligible: the controller refuses to run (IDLE-1).
    clock.t = NOW + 60
    with pytest.raises(ValueError):
        controller.run_cycle(assess(store, breaker, clock()))


def test_acceptance_idle2_intent_contract(store, clock, tmp_path):
    """Action verbs without a [GOAL:] tag create no task."""
    controller, _, _ = make(store, clock, ['Maybe I should gather some wood.'], tmp_path)
    r = controller.run_cycle(assess(store, None, clock()))
    assert r.outcome == THOUGHT_ONLY and r.intent == '' and r.task is None
    assert r.thought == 'Maybe I should gather some wood.'
    assert store.count() == 0
    # The tag, and only the tag, commits.
    controller2, _, _ = make(store, clock, ['Time to look. [GOAL: look_at door 1]'],
                             tmp_path)
    r2 = controller2.run_cycle(assess(store, None, clock()))
    assert r2.outcome == INTENT_EMITTED and r2.task.goal == 'look_at door 1'
    assert r2.task.origin == 'idle_intent' and store.count() == 1


def test_acceptance_idle3_drives_as_salience(store, clock, tmp_path):
    """Pressures join the situation as facts; no goal is injected; the model may or may not
    emit one. With drives off nothing else changes."""
    state = DriveState(energy_fraction=0.9, unexplored_fraction=0.95,
                       seconds_since_interaction=300)
    on, backend_on, _ = make(store, clock, ['Most of the room is unseen.'], tmp_path)
    r = on.run_cycle(assess(store, None, clock()), state)
    assert 'Unexplored share of the field of regard: 95%.' in r.facts
    assert 'Unexplored share of the field of regard: 95%.' in backend_on.prompts[0]
    assert '[GOAL' not in r.provenance.salience_summary
    assert r.outcome == THOUGHT_ONLY and store.count() == 0
    assert r.summary.crossed == ('novelty',)

    off, backend_off, _ = make(store, clock, ['Most of the room is unseen.'], tmp_path,
                               drives_enabled=False)
    r_off = off.run_cycle(assess(store, None, clock()), state)
    assert r_off.provenance.salience_summary == '' and r_off.summary.facts == ()
    assert 'Unexplored' not in backend_off.prompts[0]
    # Everything but the switch is the same: prompt minus the drive facts, sampling, template.
    assert backend_off.prompts[0] == backend_on.prompts[0].replace(
        '- Unexplored share of the field of regard: 95%.\n', '')
    assert backend_off.calls[0] == backend_on.calls[0]
    diff = {k for k in CONFIG_FIELDS
            if getattr(r.provenance, k) != getattr(r_off.provenance, k)}
    assert diff == {'drives_enabled', 'config_hash'}


def test_acceptance_idle4_budget_suppresses_the_goal(store, clock, tmp_path):
    """all_in_backoff with 2 goals already this hour: the goal is suppressed, the thought is
    kept as an observation only."""
    store.add('track ball 1', next_eligible_at=NOW + 3000)
    controller, _, _ = make(store, clock, [
        'The shelf looks new. [GOAL: look_at shelf 1]',
        'The window is bright. [GOAL: look_at window 1]',
        'A plant I never looked at. [GOAL: look_at plant 1]',
    ], tmp_path)
    outcomes = []
    for _ in range(3):
        status = assess(store, None, clock())
        assert status.reason == 'all_in_backoff'
        outcomes.append(controller.run_cycle(status))
        for t in store.tasks(open_only=True):         # the executor runs the new task
            if t.origin == 'idle_intent':
                store.start(t.task_id)
                store.succeed(t.task_id)
        clock.t += 400
    assert [r.outcome for r in outcomes] == [INTENT_EMITTED, INTENT_EMITTED, THOUGHT_ONLY]
    last = outcomes[2]
    assert last.suppression_reason == B.RATE_LIMIT_BACKOFF and last.task is None
    assert last.provenance.intent_suppressed and last.intent == '[GOAL: look_at plant 1]'
    assert last.thought == 'A plant I never looked at.'
    assert not any(t.goal == 'look_at plant 1' for t in store.tasks())
    if last.episode is not None:                       # stored only as an observation
        assert last.episode['intent'] == 'no action' and last.episode['goal'] == ''


def test_acceptance_idle5_provenance(store, clock, tmp_path):
    """Every cycle leaves a JSON-lines record with the required fields."""
    controller, _, _ = make(store, clock, ['', 'A thought.', 'Go. [GOAL: scan room 1]'],
                            tmp_path)
    for _ in range(3):
        controller.run_cycle(assess(store, None, clock()))
        clock.t += 400
    records = read_records(str(tmp_path / 'prov.jsonl'))
    assert [r['decision_outcome'] for r in records] == [NO_OP, THOUGHT_ONLY, INTENT_EMITTED]
    required = ('contract_version', 'prompt_template_hash', 'retrieval_mode',
                'retrieval_time_window_s', 'retrieval_max_events', 'semantic_top_k', 'model',
                'temperature', 'max_tokens', 'idle_reason', 'salience_summary',
                'decision_outcome', 'intent_emitted', 'intent_suppressed',
                'suppression_reason', 'timestamp')
    for r in records:
        assert all(k in r for k in required)
        assert r['contract_version'] == 'v2.0.0' and r['retrieval_mode'] == 'structured'
        assert r['prompt_template_hash'] == sha256_text(DEFAULT_TEMPLATE)
        assert r['model'] == 'ScriptedBackend'
    assert records[2]['intent_emitted'] == '[GOAL: scan room 1]'
    assert [r['timestamp'] for r in records] == [NOW, NOW + 400, NOW + 800]


# Further controller behaviour -------------------------------------------------------------

def test_structured_retrieval_first_and_events_as_facts(store, clock, tmp_path):
    controller, backend, memory = make(store, clock, ['Ana left.'], tmp_path,
                                       retrieval_max_events=2, retrieval_window_s=600)
    memory.add('saw Ana near the door', age_s=1200)      # outside the window
    memory.add('saw a red ball on the table', age_s=300)
    memory.add('saw an empty chair', age_s=120)
    r = controller.run_cycle(assess(store, None, clock()))
    assert memory.calls == [(2, 600)]
    assert 'Event 5 min ago (percept): saw a red ball on the table' in r.facts
    assert not any('Ana' in f for f in r.facts)
    assert r.provenance.retrieved_events == 2 and r.provenance.retrieval_mode == 'structured'
    assert r.provenance.semantic_top_k == 0


def test_semantic_rerank_is_optional_and_logged_as_hybrid(store, clock, tmp_path):
    seen = []

    def rerank(query, events, top_k):
        seen.append((query, top_k))
        return sorted(events, key=lambda e: -e['salience'])[:top_k]

    memory = Memory(clock)
    memory.add('saw a plant', salience=0.2)
    memory.add('saw Ben wave', salience=0.9)
    controller = IdleIntrospectionController(
        ScriptedBackend(['Ben waved.'], clock=clock), store, memory.retrieve,
        IdleConfig(semantic_top_k=1), rerank=rerank, clock=clock)
    r = controller.run_cycle(assess(store, None, clock()))
    assert r.provenance.retrieval_mode == 'hybrid' and r.provenance.semantic_top_k == 1
    assert seen and seen[0][1] == 1
    assert any('Ben wave' in f for f in r.facts) and not any('plant' in f for f in r.facts)


def test_failures_are_outcomes_not_crashes(store, clock, tmp_path):
    def broken(max_events, window_s):
        raise RetrievalError('memory service timed out')

    controller = IdleIntrospectionController(
        ScriptedBackend([LLMError(TIMEOUT, 'too slow')], clock=clock), store, broken,
        clock=clock)
    r = controller.run_cycle(assess(store, None, clock()))
    assert r.outcome == NO_OP and r.provenance.llm_error == TIMEOUT
    assert r.provenance.retrieval_error.startswith('retrieve:') and r.episode is None

    def bad_shape(max_events, window_s):
        return 'not a list'
    with pytest.raises(TypeError):
        IdleIntrospectionController(ScriptedBackend(['x']), store, bad_shape,
                                    clock=clock).run_cycle(assess(store, None, clock()))


def test_novelty_gate_blocks_a_goal_that_failed_deterministically(store, clock, tmp_path):
    t = store.add('look_at ceiling 1')
    store.fail(t.task_id, 'beyond the tilt range', deterministic=True)
    store.cancel(t.task_id)
    controller, backend, _ = make(store, clock, ['Up there. [GOAL: look_at ceiling 1]'],
                                  tmp_path)
    r = controller.run_cycle(assess(store, None, clock()))
    assert r.suppression_reason == B.NOVELTY_GATE and r.task is None
    assert 'Goal "look_at ceiling 1" failed 0 s ago: beyond the tilt range.' in r.facts


def test_threshold_crossing_lets_a_goal_through_spacing(store, clock, tmp_path):
    controller, _, _ = make(store, clock, ['One. [GOAL: scan room 1]',
                                           'Two. [GOAL: look_at door 1]',
                                           'Three. [GOAL: track ball 1]'], tmp_path)
    calm = DriveState(pain_level=0.0)
    hurt = DriveState(pain_level=0.95)
    assert controller.run_cycle(assess(store, None, clock()), calm).task is not None
    store.cancel(store.tasks(open_only=True)[0].task_id)
    clock.t += 60
    r = controller.run_cycle(assess(store, None, clock()), calm)
    assert r.suppression_reason == B.MIN_SPACING
    clock.t += 60
    r = controller.run_cycle(assess(store, None, clock()), hurt)
    assert r.outcome == INTENT_EMITTED and r.provenance.thresholds_crossed == 'pain'


def test_storage_gate_and_episode_shape(store, clock, tmp_path):
    controller, _, memory = make(store, clock, ['Quiet.'], tmp_path)
    first = controller.run_cycle(assess(store, None, clock()))
    assert first.storage_reason == B.STORE_CHECKPOINT and first.episode['mode'] == 'idle'
    clock.t += 60
    second = controller.run_cycle(assess(store, None, clock()))
    assert second.storage_reason == B.NOT_STORED and second.episode is None
    memory.add('Ben walked in and waved', salience=0.9, age_s=10)
    clock.t += 60
    third = controller.run_cycle(assess(store, None, clock()))
    assert third.storage_reason == B.STORE_SALIENT and third.salient_delta == 0.9
    ctx = json.loads(third.episode['context_json'])
    assert ctx['source'] == 'idle' and ctx['storage_reason'] == B.STORE_SALIENT
    clock.t += 60     # the same event again is no delta
    assert controller.run_cycle(assess(store, None, clock())).storage_reason == B.NOT_STORED


def test_json_output_mode(store, clock, tmp_path):
    answer = json.dumps({'thought': 'The chair is empty.',
                         'goal': {'action': 'look_at', 'target': 'chair', 'amount': 1}})
    controller, backend, _ = make(store, clock, [answer], tmp_path, output_mode='json')
    r = controller.run_cycle(assess(store, None, clock()))
    assert backend.calls[0]['json_schema'] is not None and backend.calls[0]['grammar'] is None
    assert r.task.goal == 'look_at chair 1' and r.thought == 'The chair is empty.'


def test_grammar_mode_is_the_default(store, clock, tmp_path):
    controller, backend, _ = make(store, clock, ['x'], tmp_path)
    controller.run_cycle(assess(store, None, clock()))
    assert 'root ::=' in backend.calls[0]['grammar'] and backend.calls[0]['stop'] == ['\n']


def test_allowed_actions_constrain_and_filter(store, clock, tmp_path):
    controller, backend, _ = make(store, clock, ['Hm. [GOAL: action target 1]'], tmp_path,
                                  allowed_actions=['look_at', 'scan'])
    r = controller.run_cycle(assess(store, None, clock()))
    assert r.outcome == THOUGHT_ONLY and r.task is None
    assert r.provenance.tags_rejected == 'unknown_action'
    assert 'goal-action ::= "look_at" | "scan"' in backend.calls[0]['grammar']


def test_prompt_has_no_canned_behaviour(store, clock, tmp_path):
    controller, backend, _ = make(store, clock, ['x'], tmp_path)
    controller.run_cycle(assess(store, None, clock()))
    prompt = backend.prompts[0].lower()
    for canned in ('you are', 'look around', 'gather', 'should', 'explore'):
        assert canned not in prompt


def test_config_validates():
    with pytest.raises(ValueError):
        IdleConfig(prompt_template='no placeholder')
    with pytest.raises(ValueError):
        IdleConfig(output_mode='yaml')
    with pytest.raises(ValueError):
        IdleIntrospectionController(ScriptedBackend(['x']), None, lambda n, w: [],
                                    clock=lambda: NOW).run_cycle(
            IdleStatus(None, 1, 1, 0.0))


def test_a_tag_that_echoes_the_contract_is_not_an_intent(store, clock, tmp_path):
    controller, _, _ = make(store, clock, ['A task of yours. [GOAL: action targetamount 1801]'],
                            tmp_path)
    r = controller.run_cycle(assess(store, None, clock()))
    assert r.outcome == THOUGHT_ONLY and r.task is None and store.tasks(open_only=True) == []
    assert r.provenance.suppression_reason == 'ungrounded_intent'
