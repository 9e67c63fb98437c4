"""The Mind between passes: tasks, idle introspection, and the body its drives read.

A check on robot time (`tick`) runs an eligible task as one pass of the Mind, or, when none
is eligible and the robot is idle, one introspection cycle on what memory recalls. While a
pass runs (the pass lock is held) or a percept waits, the robot is busy and not idle. The
body (pain and interactions over a window) and the episodes' notes (mode, salience and
reasoning, which memory's summaries lack) are kept here even when idle time is off: the
node feeds them either way.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import replace
import os
import threading
from typing import Callable

from maxim_core.agent.loop import Percept
from maxim_core.conversions import recall_to_events
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.idle.controller import IdleIntrospectionController, RetrievalError
from maxim_core.idle.provenance import ProvenanceLog
from maxim_core.idle.runtime import (Body, IdleRuntime, IdleSettings, outcome_of_step,
                                     task_percept_text, TaskOutcome)
from maxim_core.idle.tasks import TaskNotFound, TaskStore
from maxim_core.llm.backend import LLMError
from maxim_core.mind.ports import answered, EventSink
from maxim_core.mind.recall import Recall

# A task's turn is routine: its episode is not, by itself, news for idle introspection's
# storage gate; it is always thought about (force).
TASK_SALIENCE = 0.5
MAX_NOTES = 2000         # episodes whose notes are kept (the oldest go first)


def run_task(step: Callable, task) -> TaskOutcome:
    """One attempt at a task: a pass on it with the task's goal (`step(percept, goal, force,
    on_thought, max_cycles)`, called with the pass lock held)."""
    percept = Percept(narrative=task_percept_text(task), source='system',
                      percept_id=f'task-{task.task_id}-{task.attempts + 1}',
                      salience=TASK_SALIENCE)
    try:
        return outcome_of_step(step(percept, task.goal, True, None, 0).loop)
    except LLMError as exc:
        return TaskOutcome(False, False, f'the language model failed: {exc}')
    except (ValueError, RuntimeError) as exc:
        return TaskOutcome(False, False, f'the step failed: {exc}')


class IdleTime:
    """See the module docstring. `status` reports a problem; `record` sends an episode."""

    def __init__(self, settings: IdleSettings | None, *, model, recall: Recall,
                 energy: EnergyBudget, events: EventSink, counts: dict, run_id: str,
                 status: Callable[[str], None], robot_clock: Callable[[], float]):
        self.settings, self.model, self.recall, self.energy = settings, model, recall, energy
        self.events, self.counts, self.status = events, counts, status
        self.robot_clock = robot_clock
        self.tasks: TaskStore | None = None
        self.runtime: IdleRuntime | None = None
        self._body: Body | None = None
        self._body_lock = threading.RLock()
        self._notes: OrderedDict = OrderedDict()
        self._notes_lock = threading.Lock()
        if settings is not None and settings.runtime.enabled:
            self._setup(settings, run_id)

    def _setup(self, settings: IdleSettings, run_id: str) -> None:
        s = settings.runtime
        self.tasks = TaskStore(os.path.expanduser(s.task_db_path), settings.tasks,
                               clock=self.robot_clock)
        if self.tasks.corruption:
            self.status(f'the task store was corrupt; moved aside to '
                        f'{self.tasks.corruption}, starting empty')
        provenance = ProvenanceLog(os.path.expanduser(s.provenance_path)) \
            if s.provenance_path else None
        idle_cfg = replace(settings.idle, run_id=settings.idle.run_id or run_id)
        controller = IdleIntrospectionController(
            self.model, self.tasks, self._retrieve, idle_cfg,
            rerank=self._rerank if idle_cfg.semantic_top_k > 0 else None,
            provenance_log=provenance, clock=self.robot_clock)
        self.runtime = IdleRuntime(self.tasks, settings.breaker(), controller)

    # -- the body and the notes --------------------------------------------------------------
    def body_at(self, now: float) -> Body:
        with self._body_lock:
            if self._body is None:
                s = self.settings.runtime if self.settings else None
                self._body = Body(now, s.pain_window_s if s else 600.0,
                                  s.memory_capacity if s else 10000)
            return self._body

    def interaction(self, now: float) -> None:
        with self._body_lock:
            self.body_at(now).record_interaction(now)

    def pain(self, now: float, intensity: float) -> None:
        with self._body_lock:
            self.body_at(now).record_pain(now, intensity)

    def note_episode(self, episode_id: str, mode: str, salience: float, reasoning: str) -> None:
        """What idle retrieval needs of an episode that memory's summaries lack."""
        with self._notes_lock:
            self._notes[episode_id] = {'mode': mode, 'salience': float(salience),
                                       'reasoning': reasoning[:300]}
            while len(self._notes) > MAX_NOTES:
                self._notes.popitem(last=False)

    # -- tasks -------------------------------------------------------------------------------
    def submit_task(self, op: str, task_id: str = '', new_task: Callable[[], dict] | None = None):
        """See Mind.submit_task."""
        if self.tasks is None:
            raise ValueError('idle.enabled is false: this agent keeps no tasks')
        if op == 'add':
            return self.tasks.add(**(new_task() if new_task is not None else {}))
        ops = {'pause': self.tasks.pause, 'resume': self.tasks.resume,
               'cancel': self.tasks.cancel}
        if op not in ops:
            raise ValueError(f'op must be add, pause, resume or cancel, not {op!r}')
        try:
            return ops[op](task_id)
        except TaskNotFound as exc:
            raise TaskNotFound(f'no task {exc.args[0]!r}') from exc

    # -- one check ---------------------------------------------------------------------------
    def tick(self, now: float, pass_lock: threading.Lock, busy: bool,
             run: Callable, record: Callable[[dict], None]) -> None:
        """One eligibility check at `now`: `run(task)` is a pass on a task (the pass lock
        held), `record(episode)` sends an introspection cycle's episode."""
        body = self.body_at(now)
        if not pass_lock.acquire(blocking=False):
            self.runtime.tick(now, run, busy=True)     # deliberating: not idle
            return
        try:
            result = self.runtime.tick(
                now, run, drive_state=lambda: self._drive_state(body, now),
                on_event=self._event, busy=busy)
        finally:
            pass_lock.release()
        if result.outcome is not None and not result.outcome.success:
            self.status(f'task {result.task.goal!r} failed: {result.outcome.error}')
        if result.cycle is not None:
            self.counts['provenance_records'] += 1
            self.events.provenance(result.cycle.provenance)
            if result.cycle.episode is not None:
                record(result.cycle.episode)

    def _event(self, status) -> None:
        self.counts['idle_events'] += 1
        self.events.idle_event(status)
        controller = self.runtime.controller
        if not getattr(self.model, 'model', '') and hasattr(self.model, 'ensure_ready'):
            try:
                self.model.ensure_ready()     # learn the model's name for provenance
            except LLMError as exc:           # the cycle will record the failure itself
                self.status(f'idle: {exc}')
        controller.model_name = getattr(self.model, 'model', '') or controller.model_name

    def _drive_state(self, body: Body, now: float):
        stats = self.recall.query('system_stats', {}, 1.0)
        episodes = None
        if stats and stats.get('available') and not stats.get('error_code'):
            episodes = int(stats['episodes'])
        with self._body_lock:
            return body.state(now, self.energy.remaining_fraction(), episodes)

    def _retrieve(self, max_events: int, window_s: float) -> list:
        if max_events <= 0:
            return []
        start = max(0.0, self.robot_clock() - window_s)
        answer = self.recall.query('memory_recall', {'time_after': start, 'limit': max_events},
                                   2.0)
        if answer is None:
            raise RetrievalError('the memory node is not running')
        if not answered(answer):
            raise RetrievalError(answer.get('error_msg') or 'memory is unavailable')
        with self._notes_lock:
            notes = dict(self._notes)
        return recall_to_events(answer, notes)

    def _rerank(self, query_text: str, events: list, top_k: int) -> list:
        answer = self.recall.query(
            'similarity_search', {'context': query_text[:300], 'limit': max(top_k, len(events))},
            2.0)
        if answer is None:
            raise RetrievalError('the memory node is not running')
        if not answered(answer):
            raise RetrievalError(answer.get('error_msg') or 'similarity search unavailable')
        rank = {e['episode_id']: i for i, e in enumerate(answer.get('episodes') or [])}
        return sorted(events, key=lambda e: rank.get(e['id'], len(rank)))[:top_k]
