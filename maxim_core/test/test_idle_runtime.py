"""The idle runtime the agent node drives (executor, idle events, cycles, drive inputs, the
idle.* parameter table) and the idle conversions, without ROS."""

from types import SimpleNamespace

import pytest

from maxim_core.agent.loop import Decision, LoopResult, Percept, ToolRun
from maxim_core.conversions import msg_to_new_task, recall_to_events, task_to_msg
from maxim_core.idle.budgets import BudgetConfig
from maxim_core.idle.controller import IdleConfig, IdleIntrospectionController
from maxim_core.idle.drives import DriveConfig
from maxim_core.idle.runtime import (Body, configs_from, IdleRuntime, outcome_of_step, PARAMS,
                                     task_percept_text, TaskOutcome)
from maxim_core.idle.tasks import CircuitBreaker, TaskStore, TaskStoreConfig
from maxim_core.llm.backend import ScriptedBackend

NOW = 1_800_000_000.0


class Clock:
    def __init__(self):
        self.t = NOW

    def __call__(self):
        return self.t


@pytest.fixture
def rig(tmp_path):
    clock = Clock()
    store = TaskStore(str(tmp_path / 'tasks.db'), clock=clock)
    backend = ScriptedBackend(['A quiet moment.'])
    controller = IdleIntrospectionController(backend, store, lambda n, w: [],
                                             IdleConfig(cycle_interval_s=60.0), clock=clock)
    runtime = IdleRuntime(store, CircuitBreaker(failure_threshold=2, cooldown_s=100.0),
                          controller)
    yield SimpleNamespace(clock=clock, store=store, backend=backend, runtime=runtime)
    store.close()


def step(decision_status='ready', run=None):
    return LoopResult(Percept('x'), Decision(decision_status), run, None)


def test_task_outcomes_from_loop_passes():
    ok = ToolRun('c', 'memory_recall', {}, success=True)
    assert outcome_of_step(step(run=ok)) == TaskOutcome(True)
    blocked = ToolRun('c', 'move', {}, blocked=True, blocked_reason='unsafe', error_code=4)
    out = outcome_of_step(step(run=blocked))
    assert not out.success and out.deterministic and 'unsafe' in out.error
    bad_args = ToolRun('c', 'move', {}, error_code=2, error_msg='tilt out of range')
    assert outcome_of_step(step(run=bad_args)).deterministic
    flaky = ToolRun('c', 'move', {}, error_code=5, error_msg='servo busy')
    assert outcome_of_step(step(run=flaky)) == TaskOutcome(False, False,
                                                           'move failed: servo busy')
    assert not outcome_of_step(step('timeout')).deterministic
    assert 'no action' in outcome_of_step(step('converged')).error


def test_executor_runs_eligible_tasks_and_backs_off(rig):
    task = rig.store.add('look_at door 1')
    seen = []

    def run(t):
        seen.append(task_percept_text(t))
        return TaskOutcome(False, False, 'lost it')
    r = rig.runtime.tick(NOW, run)
    assert r.task.task_id == task.task_id and not r.event and r.cycle is None
    assert seen == ['A task of yours is due: look_at door 1.']
    t = rig.store.get(task.task_id)
    assert t.attempts == 1 and t.next_eligible_at == NOW + 30.0
    rig.clock.t = NOW + 1
    r = rig.runtime.tick(rig.clock.t, run)          # in backoff: idle, the event fires
    assert r.status.reason == 'all_in_backoff' and r.event and r.cycle is None
    rig.clock.t = NOW + 31
    r = rig.runtime.tick(rig.clock.t, run)
    assert r.task is not None and seen[-1] == 'A task of yours is due (attempt 2): ' \
                                              'look_at door 1.'
    rig.clock.t = NOW + 32                          # two failures: the breaker opens
    assert rig.runtime.tick(rig.clock.t, run).status.reason == 'circuit_breaker_open'
    r = rig.runtime.tick(NOW + 200, lambda t: TaskOutcome(True))   # half-open trial
    assert r.outcome.success and rig.store.get(task.task_id).status == 'done'
    assert rig.runtime.breaker.state(NOW + 200) == 'closed'


def test_idle_cycles_come_after_an_idle_interval_and_busy_resets_it(rig):
    events = []
    never = lambda t: pytest.fail('no task should run')   # noqa: E731
    r = rig.runtime.tick(NOW, never, on_event=events.append)
    assert r.event and r.cycle is None and events[0].reason == 'no_tasks'
    r = rig.runtime.tick(NOW + 30, never, on_event=events.append)
    assert not r.event and r.cycle is None and len(events) == 1
    r = rig.runtime.tick(NOW + 60, never, on_event=events.append)
    assert r.event and r.cycle is not None and r.cycle.provenance.timestamp == NOW + 60
    assert rig.backend.prompts and len(events) == 2
    assert rig.runtime.tick(NOW + 90, never, busy=True).status is None
    assert rig.runtime.tick(NOW + 120, never).cycle is None   # the idle period restarted
    assert rig.runtime.tick(NOW + 180, never).cycle is not None
    assert rig.runtime.cycles == 2 and rig.runtime.idle_checks == 5


def test_body_turns_signals_into_drive_inputs():
    body = Body(NOW, pain_window_s=600.0, memory_capacity=1000)
    body.record_pain(NOW, 0.9)
    s = body.state(NOW + 60, energy_fraction=0.5, memory_episodes=250)
    assert s.pain_level == pytest.approx(0.81) and s.memory_fill_fraction == 0.25
    assert s.seconds_since_interaction == 60 and s.unexplored_fraction is None
    body.record_interaction(NOW + 100)
    assert body.state(NOW + 700).pain_level == 0.0
    assert body.state(NOW + 700).seconds_since_interaction == 600
    assert body.state(NOW + 700).memory_fill_fraction is None
    with pytest.raises(ValueError):
        body.record_pain(NOW, 1.5)
    with pytest.raises(ValueError):
        Body(NOW, memory_capacity=0)


def test_parameter_defaults_are_the_core_defaults():
    s = configs_from({})
    assert s.idle == IdleConfig(cycle_interval_s=s.idle.cycle_interval_s)
    assert s.idle.require_explicit_goal_tag is True and s.idle.drives_enabled is True
    assert s.idle.budgets == BudgetConfig() and s.idle.drives == DriveConfig()
    assert s.tasks == TaskStoreConfig()
    assert s.breaker() == CircuitBreaker()
    names = [p.name for p in PARAMS]
    assert len(names) == len(set(names)) and all(n.startswith('idle.') for n in names)
    for p in PARAMS:
        if p.range is not None:
            assert p.range[0] <= p.default <= p.range[1], p.name


def test_parameters_configure_and_bad_values_are_named():
    s = configs_from({'idle.drives_enabled': False, 'idle.budgets.min_goal_spacing_s': 10.0,
                      'idle.allowed_actions': ['look_at', ''], 'idle.tasks.max_attempts': 2,
                      'idle.prompt_template': 'Facts:\n{facts}\nEntry:'})
    assert not s.idle.drives_enabled and s.idle.budgets.min_goal_spacing_s == 10.0
    assert s.idle.allowed_actions == ('look_at',) and s.tasks.max_attempts == 2
    with pytest.raises(ValueError, match='unknown idle parameters: idle.nope'):
        configs_from({'idle.nope': 1})
    with pytest.raises(ValueError, match='facts'):
        configs_from({'idle.prompt_template': 'no placeholder'})
    with pytest.raises(ValueError, match='output_mode'):
        configs_from({'idle.output_mode': 'poetry'})
    with pytest.raises(ValueError, match='task_db_path'):
        configs_from({'idle.task_db_path': ''})


def test_task_conversions():
    msg = SimpleNamespace(goal='  look_at   door 1 ', origin='', prerequisites=['a'],
                          task_id='', manual_pause=False, next_eligible_at=5.0)
    assert msg_to_new_task(msg) == {'goal': 'look_at door 1', 'origin': 'user',
                                    'prerequisites': ('a',), 'task_id': None,
                                    'manual_pause': False, 'next_eligible_at': 5.0}
    with pytest.raises(ValueError, match='action target amount'):
        msg_to_new_task(SimpleNamespace(**{**vars(msg), 'goal': 'look at the door'}))
    with pytest.raises(ValueError, match='origin'):
        msg_to_new_task(SimpleNamespace(**{**vars(msg), 'origin': 'idle_intent'}))
    from maxim_core.idle.tasks import Task
    out = task_to_msg(Task('t1', 'scan room 1', 'paused', 2, 9.0, ('a',), True, 'user'),
                      SimpleNamespace())
    assert (out.status, out.prerequisites, out.manual_pause) == (4, ['a'], True)


def test_recall_answers_become_events_oldest_first():
    answer = {'episodes': [
        {'episode_id': 'b', 'stamp': 20.0, 'perception': 'facts...', 'tool_name': '',
         'outcome': 'thought_only'},
        {'episode_id': 'a', 'stamp': 10.0, 'perception': 'saw a red ball',
         'tool_name': 'memory_recall', 'outcome': 'memory_recall succeeded'}]}
    known = {'b': {'mode': 'idle', 'salience': 0.2, 'reasoning': 'The room is quiet.'}}
    events = recall_to_events(answer, known)
    assert [e['id'] for e in events] == ['a', 'b']
    assert events[0]['kind'] == 'action' and events[0]['salience'] == 0.0
    assert events[0]['summary'] == 'saw a red ball -> memory_recall succeeded'
    assert events[1] == {'id': 'b', 'timestamp': 20.0, 'kind': 'idle thought', 'mode': 'idle',
                         'summary': 'The room is quiet.', 'salience': 0.2}
    assert recall_to_events({'episodes': []}) == []
