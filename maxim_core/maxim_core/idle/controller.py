"""One idle introspection cycle: retrieve, situate, let the model reason, gate, record.

On idle (IDLE-1: only when no task is eligible; a call while one is eligible is an error),
the controller first runs a structured retrieval (the last N events within a time window,
through the injected `retrieve`), optionally reranks it semantically (logged as the
'hybrid' mode), and builds the situation as facts: why the robot is idle, its open tasks,
recent deterministic failures, recent events and the interoceptive summary (IDLE-3). The
prompt is a template over those facts, with no idle behaviour or thought written in: what
the robot thinks, and whether it commits to anything, is the model's. Only a contract tag
can create a task (IDLE-2), and only within the budgets (IDLE-4); an idle thought is kept as
an episode only when the storage gate allows it. Every cycle yields a provenance record
(IDLE-5), appended to the log when one is given.
"""

from dataclasses import asdict, dataclass, field
import json
import os
import re
import time
from typing import Callable
import uuid

from ..llm.backend import LLMError
from . import budgets as B
from .budgets import BudgetConfig, GoalBudget, StorageGate
from .drives import DriveConfig, Drives, DriveState, InteroceptiveSummary
from .eligibility import IdleStatus
from .intent import output_gbnf, output_json_schema, parse_output, text_from_json_output
from .provenance import (CONTRACT_VERSION, host_fingerprint, INTENT_EMITTED, NO_OP,
                         ProvenanceLog, ProvenanceRecord, sha256_text, THOUGHT_ONLY)
from .tasks import Task, TaskStore

DEFAULT_TEMPLATE = (
    'Idle log of Maxim, a pan/tilt robot head with a camera.\n'
    'Facts at this moment:\n'
    '{facts}\n'
    'Convention of this log: an entry is one line. An entry may end with one tag '
    '[GOAL: action target amount] to commit to a task; an entry without the tag is a '
    'thought and creates nothing.\n'
    'Entry:'
)

OUTPUT_MODES = ('grammar', 'json', 'free')


def _stems(text: str) -> set[str]:
    return {w[:5] for w in re.findall(r'[a-z0-9]+', text.lower()) if len(w) >= 3}


def grounded_intent(intent, template: str) -> bool:
    """Whether a [GOAL: ...] is an intent and not an echo of the contract: a target or an
    action made only of the contract's own words ('action', 'target', 'amount', 'goal', the
    log's labels) is a copied template, not a goal."""
    contract = _stems(template.replace('{facts}', ''))
    target = _stems(intent.target.replace('_', ' '))
    action = _stems(intent.action.replace('_', ' '))
    return bool(target) and not target <= contract and not action <= contract


class RetrievalError(RuntimeError):
    """The structured retrieval (or the reranker) could not answer; the cycle goes on
    without events and says so in its provenance."""


@dataclass(frozen=True)
class IdleConfig:
    """Every knob of idle introspection (the agent node's `idle.*` parameters)."""

    contract_version: str = CONTRACT_VERSION
    require_explicit_goal_tag: bool = True
    drives_enabled: bool = True
    retrieval_max_events: int = 5
    retrieval_window_s: float = 3600.0
    semantic_top_k: int = 0            # > 0 and a reranker given: hybrid retrieval
    output_mode: str = 'grammar'       # grammar (GBNF), json (schema) or free
    allowed_actions: tuple = ()        # actions a goal may name (the robot's); () = any
    model_name: str = ''               # recorded in provenance; from the backend if empty
    temperature: float = 0.7
    max_tokens: int = 64
    top_p: float = 0.95
    top_k: int = 40
    repeat_penalty: float = 1.1
    seed: int = -1
    max_tasks_in_situation: int = 5
    max_failures_in_situation: int = 3
    cycle_interval_s: float = 60.0     # how often the caller runs a cycle while idle
    prompt_template: str = DEFAULT_TEMPLATE
    run_id: str = ''
    budgets: BudgetConfig = field(default_factory=BudgetConfig)
    drives: DriveConfig = field(default_factory=DriveConfig)

    def __post_init__(self):
        if '{facts}' not in self.prompt_template:
            raise ValueError('prompt_template must contain {facts}')
        if self.output_mode not in OUTPUT_MODES:
            raise ValueError(f'output_mode must be one of {OUTPUT_MODES}')
        if self.retrieval_max_events < 0 or self.retrieval_window_s <= 0:
            raise ValueError('retrieval_max_events >= 0 and retrieval_window_s > 0')
        if self.semantic_top_k < 0 or self.max_tokens < 1 or self.cycle_interval_s <= 0:
            raise ValueError('semantic_top_k >= 0, max_tokens >= 1, cycle_interval_s > 0')
        object.__setattr__(self, 'allowed_actions', tuple(self.allowed_actions))

    def config_hash(self) -> str:
        """Hash of everything but the model's sampling and the run id."""
        d = asdict(self)
        for k in ('model_name', 'temperature', 'max_tokens', 'top_p', 'top_k',
                  'repeat_penalty', 'seed', 'run_id'):
            d.pop(k)
        return sha256_text(json.dumps(d, sort_keys=True))[:16]


@dataclass
class IdleCycleResult:
    """What one idle cycle did."""

    outcome: str                       # no_op / thought_only / intent_emitted
    thought: str
    intent: str                        # the [GOAL: ...] tag the model produced, if any
    task: Task | None                  # the task created (intent_emitted only)
    suppression_reason: str
    storage_reason: str
    episode: dict | None               # the episode to store, when the storage gate allows
    provenance: ProvenanceRecord
    facts: list
    prompt: str
    completion: str
    salient_delta: float
    summary: InteroceptiveSummary

    @property
    def stored(self) -> bool:
        return self.episode is not None


Retrieve = Callable[[int, float], list]
Rerank = Callable[[str, list, int], list]


class IdleIntrospectionController:
    """Runs idle cycles for one agent (thread-compatible, not thread-safe: one caller)."""

    def __init__(self, backend, store: TaskStore, retrieve: Retrieve,
                 config: IdleConfig | None = None, *, rerank: Rerank | None = None,
                 provenance_log: ProvenanceLog | None = None,
                 clock: Callable[[], float] = time.time):
        self.backend = backend
        self.store = store
        self.retrieve = retrieve
        self.rerank = rerank
        self.config = config or IdleConfig()
        self.log = provenance_log
        self.clock = clock
        self.drives = Drives(self.config.drives, enabled=self.config.drives_enabled)
        self.budget = GoalBudget(self.config.budgets)
        self.storage = StorageGate(self.config.budgets)
        self.template_hash = sha256_text(self.config.prompt_template)
        self._grammar = output_gbnf(self.config.allowed_actions)
        self._schema = output_json_schema(self.config.allowed_actions)
        self.config_hash = self.config.config_hash()
        self.host = host_fingerprint(backend)
        self.model_name = self.config.model_name or self._model_name(backend)
        self._seen_events: frozenset = frozenset()

    @staticmethod
    def _model_name(backend) -> str:
        path = getattr(backend, 'model_path', '') or ''
        return os.path.basename(str(path)) or type(backend).__name__

    # Situation -----------------------------------------------------------------------

    def _retrieve(self, summary: InteroceptiveSummary, reason: str):
        cfg = self.config
        mode, error = 'structured', ''
        try:
            events = self.retrieve(cfg.retrieval_max_events, cfg.retrieval_window_s)
        except RetrievalError as exc:
            return [], mode, f'retrieve: {exc}'
        if not isinstance(events, list) or not all(isinstance(e, dict) for e in events):
            raise TypeError('retrieve must return a list of dicts')
        events = events[:cfg.retrieval_max_events]
        if self.rerank is not None and cfg.semantic_top_k > 0 and events:
            query = ' '.join([f'idle: {reason}.', summary.text]).strip()
            try:
                events = list(self.rerank(query, events, cfg.semantic_top_k))
                mode = 'hybrid'
            except RetrievalError as exc:
                error = f'rerank: {exc}'
        return events, mode, error

    @staticmethod
    def _event_key(e: dict) -> str:
        return str(e.get('id') or e.get('episode_id')
                   or f"{e.get('timestamp')}|{e.get('summary') or e.get('perception')}")

    def _facts(self, status: IdleStatus, events: list, summary: InteroceptiveSummary,
               now: float) -> list:
        cfg = self.config
        facts = [f'Idle reason: {status.reason}; open tasks: {status.task_count}; '
                 f'eligible: {status.eligible_count}.']
        if status.next_eligible_in_s >= 0:
            facts.append(f'Next task eligible in {status.next_eligible_in_s:.0f} s.')
        for t in self.store.tasks(open_only=True)[:cfg.max_tasks_in_situation]:
            wait = max(0.0, t.next_eligible_at - now)
            extra = ', paused' if t.manual_pause else ''
            if t.prerequisites and self.store.blocked_by_prereq(t):
                extra += ', waits on prerequisites'
            facts.append(f'Task "{t.goal}": {t.status}, {t.attempts} attempts, '
                         f'eligible in {wait:.0f} s{extra}.')
        failures = self.store.recent_failures(cfg.budgets.novelty_window_s, now,
                                              deterministic_only=True)
        for f in failures[-cfg.max_failures_in_situation:]:
            facts.append(f'Goal "{f.goal}" failed {now - f.at:.0f} s ago: {f.error[:120]}.')
        if not events:
            facts.append(f'No events in the last {cfg.retrieval_window_s / 60:.0f} min.')
        for e in events:
            text = str(e.get('summary') or e.get('perception') or '')[:160]
            ts = e.get('timestamp')
            age = f'{(now - float(ts)) / 60:.0f} min ago' if ts is not None else 'recently'
            facts.append(f'Event {age} ({e.get("kind", "event")}): {text}')
        facts.extend(summary.facts)
        return facts

    # The cycle -----------------------------------------------------------------------

    def run_cycle(self, status: IdleStatus, drive_state: DriveState | None = None,
                  now: float | None = None) -> IdleCycleResult:
        """One idle cycle. `status` must be idle (IDLE-1)."""
        if not isinstance(status, IdleStatus) or not status.idle:
            raise ValueError('an idle cycle runs only when no task is eligible (IDLE-1)')
        cfg = self.config
        now = self.clock() if now is None else float(now)
        summary = self.drives.summarize(drive_state)
        events, mode, retrieval_error = self._retrieve(summary, status.reason)
        facts = self._facts(status, events, summary, now)
        prompt = cfg.prompt_template.replace('{facts}', '\n'.join(f'- {f}' for f in facts))

        # Salient delta: the most salient event that is new since the last cycle. The
        # robot's own idle reflections are not news (one stored reflection would justify the
        # next), and drives stay out of it: they only state facts and relax spacing (IDLE-3).
        keys = frozenset(self._event_key(e) for e in events)
        delta = max([float(e.get('salience', 0.0) or 0.0) for e in events
                     if self._event_key(e) not in self._seen_events
                     and e.get('mode') != 'idle'] or [0.0])
        self._seen_events = keys

        text, llm_error, stop_reason, tokens = '', '', '', 0
        try:
            completion = self.backend.complete(prompt, **self._sampling())
            text, stop_reason, tokens = (completion.text, completion.stop_reason,
                                         completion.completion_tokens)
        except LLMError as exc:
            llm_error = exc.code
        if cfg.output_mode == 'json' and text:
            text = text_from_json_output(text) or text
        parsed = parse_output(text, cfg.require_explicit_goal_tag, cfg.allowed_actions)

        task, suppression, intent_tag = None, '', ''
        if parsed.intent is not None:
            intent_tag = parsed.intent.tag
            goal = parsed.intent.goal
            if not grounded_intent(parsed.intent, cfg.prompt_template):
                suppression = B.UNGROUNDED
            elif any(t.goal == goal for t in self.store.tasks(open_only=True)):
                suppression = B.DUPLICATE_TASK
            else:
                failed = [f.goal for f in self.store.recent_failures(
                    cfg.budgets.novelty_window_s, now, deterministic_only=True)]
                suppression = self.budget.check(goal, status.reason, now,
                                                summary.threshold_crossed, failed) or ''
            if not suppression:
                task = self.store.add(goal, origin='idle_intent')
                self.budget.record(goal, now)
        if task is not None:
            outcome = INTENT_EMITTED
        elif parsed.thought or parsed.intent is not None or parsed.rejected:
            outcome = THOUGHT_ONLY
        else:
            outcome = NO_OP

        if outcome == NO_OP:
            storage = B.NOT_STORED
        else:
            storage = self.storage.decide(True, task is not None, delta, now)
        cycle_id = uuid.uuid4().hex[:12]
        record = ProvenanceRecord(
            contract_version=cfg.contract_version, prompt_template_hash=self.template_hash,
            retrieval_mode=mode, retrieval_time_window_s=cfg.retrieval_window_s,
            retrieval_max_events=cfg.retrieval_max_events,
            semantic_top_k=cfg.semantic_top_k if mode == 'hybrid' else 0,
            model=self.model_name, temperature=cfg.temperature, max_tokens=cfg.max_tokens,
            idle_reason=status.reason, salience_summary=summary.text,
            decision_outcome=outcome, intent_emitted=intent_tag,
            intent_suppressed=bool(suppression), suppression_reason=suppression,
            timestamp=now, cycle_id=cycle_id, config_hash=self.config_hash,
            drives_enabled=cfg.drives_enabled,
            require_explicit_goal_tag=cfg.require_explicit_goal_tag,
            output_mode=cfg.output_mode, top_p=cfg.top_p, top_k=cfg.top_k,
            repeat_penalty=cfg.repeat_penalty, seed=cfg.seed,
            situation_hash=sha256_text(prompt)[:16], retrieved_events=len(events),
            retrieval_error=retrieval_error, llm_error=llm_error, stop_reason=stop_reason,
            completion_tokens=tokens, tags_rejected=parsed.reason,
            thresholds_crossed=','.join(summary.crossed),
            stored=storage in B.STORED_REASONS, storage_reason=storage, host=dict(self.host))
        if self.log is not None:
            self.log.append(record)
        episode = None
        if storage in B.STORED_REASONS:
            episode = self._episode(record, facts, parsed.thought, task, delta)
        return IdleCycleResult(outcome, parsed.thought, intent_tag, task, suppression,
                               storage, episode, record, facts, prompt, text, delta, summary)

    def _sampling(self) -> dict:
        cfg = self.config
        kwargs = {'max_tokens': cfg.max_tokens, 'temperature': cfg.temperature,
                  'top_p': cfg.top_p, 'top_k': cfg.top_k,
                  'repeat_penalty': cfg.repeat_penalty, 'seed': cfg.seed}
        if cfg.output_mode == 'grammar':
            kwargs.update(grammar=self._grammar, stop=('\n',))
        elif cfg.output_mode == 'json':
            kwargs.update(json_schema=self._schema)
        else:
            kwargs.update(stop=('\n',))
        return kwargs

    def _episode(self, record: ProvenanceRecord, facts: list, thought: str,
                 task: Task | None, delta: float) -> dict:
        """The idle thought as an episode (maps onto maxim_interfaces/Episode)."""
        return {
            'episode_id': uuid.uuid4().hex,
            'run_id': self.config.run_id,
            'perception': ' '.join(facts)[:1000],
            'detected_objects': [],
            'detected_people': [],
            'salience': float(min(1.0, delta)),
            'novelty': 0.0,
            'goal': task.goal if task else '',
            'mode': 'idle',
            'context_json': json.dumps({'source': 'idle', 'cycle_id': record.cycle_id,
                                        'idle_reason': record.idle_reason,
                                        'storage_reason': record.storage_reason,
                                        'suppression_reason': record.suppression_reason}),
            'intent': record.intent_emitted if task else 'no action',
            'reasoning': thought,
            'confidence': 0.0,
            'cycles': 1,
            'tool_name': '',
            'arguments_json': '{}',
            'success': True,
            'valence': 0.0,
            'outcome': record.decision_outcome,
            'blocked': False,
            'verified': False,
            'error': '',
            'duration_s': 0.0,
        }
