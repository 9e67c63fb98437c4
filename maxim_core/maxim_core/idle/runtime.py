"""The idle machinery of a running agent, one eligibility check at a time, as plain Python.

The agent node calls `IdleRuntime.tick(now)` on a timer of robot time. Each tick asks the
task store what is eligible (IDLE-1). When a task is, the executor runs it (through the
injected `run_task`, which in the robot is one pass of the agent loop) and records the
outcome in the store (backoff on failure) and in the circuit breaker. When none is, the robot
is idle: an idle event fires when the robot becomes idle or the reason changes, and once the
robot has been idle for `cycle_interval_s` (since the idle period began or since the last
cycle) the introspection controller runs one cycle. A robot busy with something else (a
percept being deliberated) is not idle: the idle period starts again afterwards.

`Body` turns what the node hears (pain, people, energy, memory size) into the DriveState the
drives read (IDLE-3). `PARAMS` is the table of the node's `idle.*` parameters, with defaults
taken from the core's config dataclasses so the two cannot drift apart, and `configs_from`
builds those dataclasses from the parameter values.
"""

from dataclasses import dataclass, fields, replace
from typing import Callable

from .budgets import BudgetConfig
from .controller import IdleConfig, IdleCycleResult, IdleIntrospectionController
from .drives import DriveConfig, DriveState
from .eligibility import assess, IdleStatus
from .tasks import ACTIVE, CircuitBreaker, Task, TaskStore, TaskStoreConfig

# ToolResult.ERROR_* values (as in agent/loop.py) whose failure would repeat identically.
_DETERMINISTIC_ERRORS = {1: 'unknown tool', 2: 'invalid arguments', 3: 'inactive tool',
                         4: 'blocked'}
# Deliberation outcomes that are the model's failure, not the task's.
_MODEL_FAILURES = ('timeout', 'model_error', 'unparsable', 'cancelled')


@dataclass(frozen=True)
class TaskOutcome:
    """What one attempt at a task came to."""

    success: bool
    deterministic: bool = False     # the same attempt would fail the same way
    error: str = ''


def outcome_of_step(step) -> TaskOutcome:
    """A task attempt's outcome from one agent loop pass (an agent.loop.LoopResult)."""
    decision, run = step.decision, step.run
    if run is None:
        if decision.status in _MODEL_FAILURES:
            return TaskOutcome(False, False, f'deliberation failed: {decision.status}')
        return TaskOutcome(False, False, f'no action decided ({decision.status})')
    if run.success:
        return TaskOutcome(True)
    code = int(run.error_code)
    if run.blocked or code in _DETERMINISTIC_ERRORS:
        why = run.blocked_reason if run.blocked else run.error_msg
        return TaskOutcome(False, True, f'{run.tool}: {_DETERMINISTIC_ERRORS.get(code, "")}'
                                        f'{": " if why else ""}{why}'[:300])
    return TaskOutcome(False, False, f'{run.tool} failed: {run.error_msg}'[:300])


def task_percept_text(task: Task) -> str:
    """What the agent loop is told when the executor hands it a task."""
    attempt = f' (attempt {task.attempts + 1})' if task.attempts else ''
    return f'A task of yours is due{attempt}: {task.goal}.'


# Drive inputs ------------------------------------------------------------------------------

class Body:
    """What the agent node hears about its body, kept as drive inputs (robot time)."""

    def __init__(self, started_at: float, pain_window_s: float = 600.0,
                 memory_capacity: int = 100_000):
        if pain_window_s <= 0 or memory_capacity < 1:
            raise ValueError('pain_window_s must be > 0 and memory_capacity >= 1')
        self.pain_window_s = pain_window_s
        self.memory_capacity = memory_capacity
        self.last_interaction = float(started_at)
        self._pain: list = []          # (time, intensity) within the window

    def record_pain(self, now: float, intensity: float) -> None:
        if not 0.0 <= intensity <= 1.0:
            raise ValueError(f'pain intensity {intensity} is outside 0..1')
        self._pain = [p for p in self._pain if now - p[0] < self.pain_window_s]
        self._pain.append((float(now), float(intensity)))

    def record_interaction(self, now: float) -> None:
        self.last_interaction = max(self.last_interaction, float(now))

    def pain_level(self, now: float) -> float:
        """The recent peak, fading linearly over the window."""
        level = 0.0
        for at, intensity in self._pain:
            age = now - at
            if 0 <= age < self.pain_window_s:
                level = max(level, intensity * (1.0 - age / self.pain_window_s))
        return level

    def state(self, now: float, energy_fraction: float | None = None,
              memory_episodes: int | None = None) -> DriveState:
        fill = None if memory_episodes is None else memory_episodes / self.memory_capacity
        return DriveState(energy_fraction=energy_fraction, pain_level=self.pain_level(now),
                          unexplored_fraction=None,
                          seconds_since_interaction=max(0.0, now - self.last_interaction),
                          memory_fill_fraction=fill)


# The runtime --------------------------------------------------------------------------------

@dataclass
class TickResult:
    """What one eligibility check did."""

    now: float
    status: IdleStatus | None = None        # None when the tick was skipped (busy)
    event: bool = False                     # an idle event fired
    task: Task | None = None                # the task the executor ran
    outcome: TaskOutcome | None = None
    cycle: IdleCycleResult | None = None


class IdleRuntime:
    """Executor, idle detection and idle cycles over one store (one caller at a time)."""

    def __init__(self, store: TaskStore, breaker: CircuitBreaker,
                 controller: IdleIntrospectionController):
        self.store = store
        self.breaker = breaker
        self.controller = controller
        self.cycle_interval_s = controller.config.cycle_interval_s
        self.idle_since: float | None = None
        self.last_cycle_at: float | None = None
        self.last_reason: str | None = None
        self.cycles = 0
        self.tasks_run = 0
        self.idle_checks = 0          # checks that found no eligible task

    def tick(self, now: float, run_task: Callable[[Task], TaskOutcome],
             drive_state: Callable[[], DriveState | None] | None = None,
             on_event: Callable[[IdleStatus], None] | None = None,
             busy: bool = False) -> TickResult:
        """One eligibility check at robot time `now`. `run_task` must not raise (a failure
        is a TaskOutcome); `on_event` is called before an idle cycle runs."""
        if busy:
            self.idle_since, self.last_reason = None, None
            return TickResult(now)
        status = assess(self.store, self.breaker, now)
        if not status.idle:
            self.idle_since, self.last_reason = None, None
            task = next(t for t in self.store.tasks(open_only=True)
                        if self.store.is_eligible(t, now))
            if task.status != ACTIVE:
                task = self.store.start(task.task_id)
            outcome = run_task(task)
            if outcome.success:
                self.store.succeed(task.task_id)
                self.breaker.record_success(now)
            else:
                self.store.fail(task.task_id, outcome.error, outcome.deterministic)
                self.breaker.record_failure(now)
            self.tasks_run += 1
            return TickResult(now, status, task=task, outcome=outcome)
        self.idle_checks += 1
        if self.idle_since is None:
            self.idle_since = now
        since = max(self.idle_since, self.last_cycle_at or self.idle_since)
        due = now - since >= self.cycle_interval_s
        event = due or status.reason != self.last_reason
        self.last_reason = status.reason
        if event and on_event is not None:
            on_event(status)
        cycle = None
        if due:
            state = drive_state() if drive_state is not None else None
            cycle = self.controller.run_cycle(status, state, now=now)
            self.last_cycle_at = now
            self.cycles += 1
        return TickResult(now, status, event=event, cycle=cycle)


# Parameters ---------------------------------------------------------------------------------

@dataclass(frozen=True)
class RuntimeConfig:
    """The node-side knobs of idle introspection (the rest is IdleConfig's)."""

    enabled: bool = True
    task_db_path: str = '~/.maxim/tasks.db'
    provenance_path: str = '~/.maxim/idle_provenance.jsonl'
    check_period_s: float = 5.0
    pain_window_s: float = 600.0
    memory_capacity: int = 100_000
    breaker_failure_threshold: int = 3
    breaker_cooldown_s: float = 120.0

    def __post_init__(self):
        if self.check_period_s <= 0 or self.pain_window_s <= 0:
            raise ValueError('idle.check_period_s and idle.pain_window_s must be > 0')
        if self.memory_capacity < 1:
            raise ValueError('idle.memory_capacity must be >= 1')
        if self.enabled and not self.task_db_path:
            raise ValueError('idle.task_db_path must name a file')


@dataclass(frozen=True)
class Param:
    """One `idle.*` parameter: name, default, description, (low, high) range or None."""

    name: str
    default: object
    description: str
    range: tuple | None = None


def _defaults(cls) -> dict:
    obj = cls()
    return {f.name: getattr(obj, f.name) for f in fields(cls)}


_I, _B, _D, _T, _R = (_defaults(IdleConfig), _defaults(BudgetConfig), _defaults(DriveConfig),
                      _defaults(TaskStoreConfig), _defaults(RuntimeConfig))

PARAMS = (
    Param('idle.enabled', _R['enabled'], 'Run the task executor and idle introspection'),
    Param('idle.task_db_path', _R['task_db_path'], 'SQLite file of the task store'),
    Param('idle.provenance_path', _R['provenance_path'],
          "JSON-lines file the idle provenance records are appended to ('' = topic only)"),
    Param('idle.check_period_s', _R['check_period_s'],
          'Seconds of robot time between eligibility checks', (0.01, 3600.0)),
    Param('idle.cycle_interval_s', _I['cycle_interval_s'],
          'Seconds of robot time idle before (and between) introspection cycles',
          (0.01, 86400.0)),
    Param('idle.require_explicit_goal_tag', _I['require_explicit_goal_tag'],
          'IDLE-2: only a strict [GOAL: action target amount] tag creates a task'),
    Param('idle.drives_enabled', _I['drives_enabled'],
          'IDLE-3: drives state interoceptive facts (false: the ablation)'),
    Param('idle.output_mode', _I['output_mode'], 'grammar (GBNF) | json (schema) | free'),
    Param('idle.allowed_actions', list(_I['allowed_actions']),
          'Actions a goal may name (empty: any well-formed action)'),
    Param('idle.prompt_template', '', "Idle prompt template with {facts} ('' = the default)"),
    Param('idle.retrieval.max_events', _I['retrieval_max_events'],
          'Structured retrieval: the last N episodes', (0, 100)),
    Param('idle.retrieval.window_s', _I['retrieval_window_s'],
          'Structured retrieval: within this many seconds of robot time', (1.0, 1e7)),
    Param('idle.retrieval.semantic_top_k', _I['semantic_top_k'],
          '> 0: rerank through memory/similarity_search (logged as hybrid)', (0, 100)),
    Param('idle.model.temperature', _I['temperature'], 'Sampling temperature', (0.0, 2.0)),
    Param('idle.model.max_tokens', _I['max_tokens'], 'Tokens per idle thought', (1, 2048)),
    Param('idle.model.top_p', _I['top_p'], 'Nucleus sampling', (0.0, 1.0)),
    Param('idle.model.top_k', _I['top_k'], 'Top-k sampling', (0, 1000)),
    Param('idle.model.repeat_penalty', _I['repeat_penalty'], 'Repeat penalty', (0.0, 10.0)),
    Param('idle.model.seed', _I['seed'], 'Sampling seed (-1: random)', (-1, 2**31 - 1)),
    Param('idle.budgets.max_goals_per_hour_in_backoff', _B['max_goals_per_hour_in_backoff'],
          'IDLE-4: goal emissions per sliding hour while all tasks are in backoff', (0, 1000)),
    Param('idle.budgets.max_goals_per_hour', _B['max_goals_per_hour'],
          'IDLE-4: goal emissions per sliding hour in any case', (0, 1000)),
    Param('idle.budgets.rate_window_s', _B['rate_window_s'],
          'IDLE-4: the sliding window of the rate limits, seconds', (1.0, 1e7)),
    Param('idle.budgets.min_goal_spacing_s', _B['min_goal_spacing_s'],
          'IDLE-4: seconds between goal-tagged outputs', (0.0, 86400.0)),
    Param('idle.budgets.threshold_bypasses_spacing', _B['threshold_bypasses_spacing'],
          'IDLE-4: a crossed interoceptive threshold lets a goal through the spacing'),
    Param('idle.budgets.novelty_window_s', _B['novelty_window_s'],
          'IDLE-4: a goal that failed deterministically this recently is refused',
          (0.0, 1e7)),
    Param('idle.budgets.salient_delta_threshold', _B['salient_delta_threshold'],
          'IDLE-4 storage gate: a new event this salient lets a thought be stored', (0.0, 1.0)),
    Param('idle.budgets.identity_checkpoint_interval_s', _B['identity_checkpoint_interval_s'],
          'IDLE-4 storage gate: one checkpoint thought may be stored this often', (1.0, 1e7)),
    Param('idle.budgets.max_stored_reflections_per_hour', _B['max_stored_reflections_per_hour'],
          'IDLE-4 storage gate: thought-only idle episodes per sliding hour', (0, 1000)),
    Param('idle.drives.notice', _D['notice'], 'A drive states its fact from this pressure',
          (0.0, 1.0)),
    Param('idle.drives.urgent', _D['urgent'], 'A drive crosses its threshold at this pressure',
          (0.0, 1.0)),
    Param('idle.drives.energy_low_fraction', _D['energy_low_fraction'],
          'Energy pressure is full at this fraction of the budget left', (0.01, 0.99)),
    Param('idle.drives.interaction_lonely_s', _D['interaction_lonely_s'],
          'Social pressure is full after this long without an interaction', (1.0, 1e7)),
    Param('idle.drives.pain_window_s', _R['pain_window_s'],
          'Seconds a pain signal takes to fade', (1.0, 1e6)),
    Param('idle.drives.memory_capacity', _R['memory_capacity'],
          'Episodes that count as a full memory (the memory node capacity)', (1, 10**9)),
    Param('idle.tasks.backoff_base_s', _T['backoff_base_s'],
          'A failed task waits base * 2**(attempts-1) seconds', (0.0, 1e6)),
    Param('idle.tasks.backoff_max_s', _T['backoff_max_s'], 'Longest backoff', (0.0, 1e7)),
    Param('idle.tasks.max_attempts', _T['max_attempts'], 'Attempts before a task is given up',
          (1, 1000)),
    Param('idle.breaker.failure_threshold', _R['breaker_failure_threshold'],
          'Consecutive task failures that open the circuit breaker', (1, 1000)),
    Param('idle.breaker.cooldown_s', _R['breaker_cooldown_s'],
          'Seconds the breaker stays open before one trial', (0.0, 1e6)),
)


@dataclass(frozen=True)
class IdleSettings:
    """Everything the `idle.*` parameters configure."""

    runtime: RuntimeConfig
    idle: IdleConfig
    tasks: TaskStoreConfig

    def breaker(self) -> CircuitBreaker:
        return CircuitBreaker(self.runtime.breaker_failure_threshold,
                              self.runtime.breaker_cooldown_s)


def configs_from(values: dict, run_id: str = '') -> IdleSettings:
    """IdleSettings from `{parameter name: value}` (missing names take their defaults).
    Raises ValueError naming the problem for an unknown name or a value the configs refuse."""
    known = {p.name: p.default for p in PARAMS}
    unknown = sorted(set(values) - set(known))
    if unknown:
        raise ValueError(f'unknown idle parameters: {", ".join(unknown)}')
    v = {**known, **values}
    budgets = BudgetConfig(**{k: v[f'idle.budgets.{k}'] for k in _B})
    drives = DriveConfig(**{k: v[f'idle.drives.{k}'] for k in _D})
    template = v['idle.prompt_template'] or _I['prompt_template']
    actions = tuple(a for a in (v['idle.allowed_actions'] or ()) if a)
    idle = IdleConfig(
        require_explicit_goal_tag=bool(v['idle.require_explicit_goal_tag']),
        drives_enabled=bool(v['idle.drives_enabled']),
        retrieval_max_events=int(v['idle.retrieval.max_events']),
        retrieval_window_s=float(v['idle.retrieval.window_s']),
        semantic_top_k=int(v['idle.retrieval.semantic_top_k']),
        output_mode=str(v['idle.output_mode']), allowed_actions=actions,
        temperature=float(v['idle.model.temperature']),
        max_tokens=int(v['idle.model.max_tokens']), top_p=float(v['idle.model.top_p']),
        top_k=int(v['idle.model.top_k']),
        repeat_penalty=float(v['idle.model.repeat_penalty']),
        seed=int(v['idle.model.seed']),
        cycle_interval_s=float(v['idle.cycle_interval_s']), prompt_template=template,
        run_id=run_id, budgets=budgets, drives=drives)
    tasks = replace(TaskStoreConfig(), backoff_base_s=float(v['idle.tasks.backoff_base_s']),
                    backoff_max_s=float(v['idle.tasks.backoff_max_s']),
                    max_attempts=int(v['idle.tasks.max_attempts']))
    runtime = RuntimeConfig(
        enabled=bool(v['idle.enabled']), task_db_path=str(v['idle.task_db_path']),
        provenance_path=str(v['idle.provenance_path']),
        check_period_s=float(v['idle.check_period_s']),
        pain_window_s=float(v['idle.drives.pain_window_s']),
        memory_capacity=int(v['idle.drives.memory_capacity']),
        breaker_failure_threshold=int(v['idle.breaker.failure_threshold']),
        breaker_cooldown_s=float(v['idle.breaker.cooldown_s']))
    return IdleSettings(runtime, idle, tasks)
