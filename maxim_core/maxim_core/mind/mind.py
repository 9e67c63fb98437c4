"""The Mind: one composition of every thinking part, run by the robot and the scenarios alike.

It composes working memory, the ThoughtGate, bio-enrichment (memory's channels and the
cerebellum), the deliberator with its prompt builder and learned tool index, the tools with
their scope and executor, the fear review, the energy budget, idle introspection with its
task store, and what it knows of its body. It reaches the world only through its ports
(maxim_core.mind.ports): the model, memory queries, the fear gate, the body, the world
around it (a scenario's text world adds its tools and scene there), and an event sink that
hears every thought, tool call, result, episode, pain, head goal and idle event.

One pass (`step`) reads straight down: perceive -> decide -> act -> record.
- `situation.py` keeps what the Mind tracks about the moment; the decision reads it there.
- `act.py` resolves, reviews, executes and verifies the decided action, and writes the
  episode; it never calls back into the Mind.
- `runtime.py` holds the inbox, the worker and idle threads, and the turn in which an act's
  result becomes the next percept, for the robot and the scenarios alike.
- `idle.py` is the Mind between passes (tasks, introspection); `recall.py` what it asks
  memory; `toolbox.py` its tools and the learned tool index.

Public calls carry their own arguments: `offer(percept)` (the runtime's inbox), `step`
runs one pass with its own goal, force and cycle cap, `deliberate` thinks without acting,
`idle_tick(now)` runs one eligibility check, `submit_task` changes a task. One pass at a
time: the pass lock serialises the worker, tasks, idle cycles and Deliberate requests.
`MindConfig.systems` switches systems off one by one (the ablation benchmark).
"""

from __future__ import annotations

from dataclasses import dataclass, field
import functools
import logging
import sqlite3
import threading
import time
from typing import Callable
import uuid

from maxim_core.agent.loop import context_key, Decision, FAILED_STATUSES, LoopResult, Percept
from maxim_core.agent.verify import WorldVerifier
from maxim_core.deliberation.chooser import Chooser
from maxim_core.deliberation.cycles import Deliberator
from maxim_core.deliberation.thoughts import DeliberationResult
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.enrichment import BioEnrichmentPipeline
from maxim_core.deliberation.gate import ThoughtGate
from maxim_core.fear.patterns import call_danger
from maxim_core.llm.grammar import deliberation_grammar
from maxim_core.mind.act import Act
from maxim_core.mind.cerebellum import Cerebellum
from maxim_core.mind.config import MindConfig
from maxim_core.mind.idle import IdleTime, run_task
from maxim_core.mind.ports import EpisodeRecord, EventSink, HeadGoalCommand, WorldPort
from maxim_core.mind.recall import Recall
from maxim_core.mind.runtime import RESULT_SOURCE, Runtime
from maxim_core.mind.situation import Situation
from maxim_core.mind.toolbox import Toolbox
from maxim_core.mind.tracking import TrackWatch
from maxim_core.prompt.builder import identity_section, PromptBuilder
from maxim_core.tools.robot import MODE_TRACK_TARGET

log = logging.getLogger(__name__)


@dataclass
class StepResult:
    """One pass: the loop's result and the deliberation behind it (None when gated)."""

    loop: LoopResult
    deliberation: DeliberationResult | None = None
    surfaced_tools: list = field(default_factory=list)


class Mind:
    """See the module docstring. Thread-safe: one pass at a time."""

    def __init__(self, config: MindConfig, *, model, memory=None, fear=None, body=None,
                 events: EventSink | None = None, world: WorldPort | None = None, ask=None,
                 clock: Callable[[], float] = time.monotonic,
                 robot_clock: Callable[[], float] = time.time):
        self.config, self.model, self.body = config, model, body
        self.events, self.world = events or EventSink(), world or WorldPort()
        self.clock, self.robot_clock = clock, robot_clock
        self.run_id = config.run_id or uuid.uuid4().hex[:8]
        self.goal = config.goal                  # the standing goal
        self.counts = {'percepts_received': 0, 'percepts_dropped': 0, 'percepts_pending': 0,
                       'pains_received': 0, 'pains_sent': 0, 'episodes_sent': 0,
                       'idle_events': 0, 'provenance_records': 0}
        self.energy = EnergyBudget(config.energy_token_budget,
                                   config.energy_refill_tokens_per_s, clock=clock)
        limits = getattr(body, 'limits', None)     # the URDF's, handed in by the node
        self.cerebellum = Cerebellum(limits=limits, clock=clock)
        self.recall = Recall(config, memory, self.energy)
        self.situation = Situation(clock, config.name)
        self.track = TrackWatch()                # a track_target under way, against the views
        # ask(question, options, timeout_s) -> the person's answer or None: the interaction
        # port (the thinking panel answers over interaction/request and /response).
        self.tools = Toolbox(config, self.world, send_head_goal=self._send_head_goal,
                             query=self.recall.query, ask=ask, status=self.report,
                             in_view=self.situation.labels_in_view, head_limits=limits)
        self._compose_thinking(config, model, memory)
        self.act = Act(self.tools.executor, fear=fear, body=body, events=self.events,
                       verifier=WorldVerifier(
                           head_position=body.head_position if body is not None else None,
                           root=config.workspace_root, clock=clock, sleep=self.world.sleep,
                           limits=limits),
                       situation=self.situation, counts=self.counts,
                       mode=config.loop_mode or config.mode, run_id=self.run_id,
                       clock=clock, robot_clock=robot_clock)
        self.idle_time = IdleTime(config.idle, model=model, recall=self.recall,
                                  energy=self.energy, events=self.events, counts=self.counts,
                                  run_id=self.run_id, status=self.report,
                                  robot_clock=robot_clock)
        self.last_result: DeliberationResult | None = None
        self._pass = threading.Lock()
        self._tick = 0
        self.runtime = Runtime(self)

    def _compose_thinking(self, config: MindConfig, model, memory) -> None:
        builder = PromptBuilder(
            lambda text: len(model.tokenize(text)),
            identity=identity_section(config.name, config.body, simulation=config.simulation,
                                      interactive=config.interactive),
            response_format=config.response_format, tool_table=self.tools.registry.descriptions,
            manifest=self.tools.manifest if config.on('tool_index') else None)
        providers: dict[str, Callable] = {}
        if memory is not None and config.memory_channels():
            providers['memory'] = self.recall.enrich
        if config.on('cerebellum'):
            providers['motor'] = self.cerebellum.provider
        self.enrichment = BioEnrichmentPipeline(providers, budget_s=config.enrichment_budget_s,
                                                clock=self.clock)
        chooser = None
        if config.decision != 'generate' and callable(getattr(model, 'score', None)):
            chooser = Chooser(model, config.choice, tool_prior=self.tools.prior,
                              danger=call_danger, relate=self.recall.relate,
                              embed=self.recall.embed)
        self.deliberator = Deliberator(
            model, builder=builder, energy=self.energy, enrichment=self.enrichment,
            config=config.deliberation,
            grammar_for=deliberation_grammar if config.use_grammar else None,
            lookup=self.tools.registry.lookup, clock=self.clock, chooser=chooser,
            name=config.name)
        self.gate = ThoughtGate()

    # -- one pass: perceive -> decide -> act -> record ----------------------------------------
    def step(self, percept: Percept, *, goal: str | None = None, force: bool = False,
             on_thought=None, max_cycles: int = 0, timeout_s: float | None = None
             ) -> StepResult | None:
        """One pass on `percept`; None when another pass held the lock past `timeout_s`
        (None: wait)."""
        if not self._pass.acquire(timeout=-1 if timeout_s is None else timeout_s):
            return None
        try:
            return self._step_locked(percept, goal, force, on_thought, max_cycles)
        finally:
            self._pass.release()

    def _step_locked(self, percept, goal, force, on_thought, max_cycles) -> StepResult:
        goal = self.goal if goal is None else goal
        key = context_key(percept, goal)
        self.act.causal_notes, self.situation.values = self.recall.values(
            percept, goal, key, self.tools.names_now())
        self.tools.surfaced, self.last_result = [], None
        self.situation.begin(percept)                                   # perceive
        try:
            t0 = self.clock()
            context = self.act.context_text(goal)
            decision = self._think(percept, context, goal, force, on_thought, max_cycles)
            if decision.status == 'gated':                              # decide
                return StepResult(LoopResult(percept, decision, None, None), self.last_result)
            run = None
            if decision.action and decision.status not in FAILED_STATUSES:
                run = self.act.run(decision, context, key, self.tools.names_now())   # act
            episode = self.act.episode(percept, decision, run, self.clock() - t0, key, goal)
            self._record(episode)                                       # record
        finally:
            self.situation.end()
        delib = self.last_result
        self.situation.remember(
            delib.reasoning if delib is not None and not delib.failed else '', run)
        self.gate.record_outcome(run is not None and run.success)
        self.tools.learn(run, f'{goal} {percept.narrative}'.strip())
        return StepResult(LoopResult(percept, decision, run, episode), delib,
                          list(self.tools.surfaced))

    def _think(self, percept: Percept, context: str, goal: str, force: bool, on_thought,
               max_cycles: int) -> Decision:
        """Decide: the gate, then a deliberation that may choose an action."""
        self._tick += 1
        if not getattr(self.model, 'n_ctx', 0) and hasattr(self.model, 'ensure_ready'):
            self.model.ensure_ready()     # learn the context size (LLMError if absent)
        wm = self.deliberator.wm
        wm.add('percept', percept.narrative, max(0.0, min(1.0, percept.salience)))
        force = force or percept.source == 'user' or not self.config.on('gate')
        verdict = self.gate.should_think(self._tick, wm, self.energy.remaining_fraction(),
                                         force=force)     # a person speaking always thinks

        def publish(t):
            self.events.thought(t)
            if on_thought is not None:
                on_thought(t)

        if not verdict.think:
            result = self.deliberator.gated(verdict.reason, on_thought=None)
        else:
            hint = self.world.hint()
            context = f'{context}\n{hint}' if context and hint else (context or hint)
            self.tools.begin(f'{goal} {percept.narrative}'.strip())
            situation = {'objects': percept.objects, 'people': percept.people, 'goal': goal,
                         'tools': self.tools.names_now(),
                         'context_key': context_key(percept, goal)}
            result = self.deliberator.deliberate(
                percept.narrative, self.tools.now, goal=goal, context=context,
                max_cycles=max_cycles, on_thought=publish, situation=situation,
                cancel=self.world.cancelled, on_forming=self.events.forming,
                grounding=functools.partial(
                    self.situation.grounding, percept, goal, self.act.recent,
                    self.world.entities(), self.config.on('nac')),
                history=list(self.situation.history),
                history_total=self.situation.history_total)
        self.last_result = result
        return Decision(result.status, result.reasoning, result.action, result.cycles,
                        result.confidence, result.deliberation_id)

    def _record(self, episode: dict) -> None:
        record = EpisodeRecord.from_dict(episode)
        self.idle_time.note_episode(record.episode_id, record.mode, record.salience,
                                    record.reasoning)
        self.counts['episodes_sent'] += 1
        self.events.episode(record)

    def deliberate(self, percept: Percept, *, goal: str | None = None, force: bool = False,
                   on_thought=None, max_cycles: int = 0,
                   timeout_s: float | None = None) -> DeliberationResult | None:
        """Think about `percept` without acting; None when the lock was not had in time."""
        if not self._pass.acquire(timeout=-1 if timeout_s is None else timeout_s):
            return None
        try:
            goal = self.goal if goal is None else goal
            self._think(percept, self.act.context_text(goal), goal, force, on_thought,
                        max_cycles)
            return self.last_result
        finally:
            self._pass.release()

    def cancel(self) -> None:
        self.deliberator.cancel()

    def busy(self) -> bool:
        """A pass, a task or a Deliberate request runs now."""
        return self._pass.locked()

    # -- what comes in ------------------------------------------------------------------------
    def perceive(self, percept: Percept) -> Percept | None:
        """What the Mind notes of every percept from outside, thought about or not. A view
        in which a track under way lost its target returns the percept to think about
        instead: the loss, as an act's result (`maxim_core.mind.tracking`)."""
        self.counts['percepts_received'] += 1
        if percept.source == 'user' or percept.people:
            now = self.robot_clock()
            if now > 0:
                self.idle_time.interaction(now)
        self.situation.note_view(percept)
        if percept.source != 'vision':
            return None
        lost = self.track.view(self.situation.labels_in_view() or [], self.clock(),
                               self._head())
        if lost is None:
            return None
        self.counts['tracks_lost'] = self.counts.get('tracks_lost', 0) + 1
        return Percept(f'{lost.text()} Now: {percept.narrative}', uuid.uuid4().hex[:12],
                       RESULT_SOURCE, objects=list(percept.objects),
                       people=list(percept.people), novelty=percept.novelty,
                       salience=1.0)

    def _head(self) -> tuple[float, float] | None:
        return self.body.head_position() if self.body is not None else None

    def offer(self, percept: Percept, from_self: bool = False) -> bool:
        """A percept for the runtime's inbox (Runtime.offer)."""
        return self.runtime.offer(percept, from_self)

    def run_next(self, timeout_s: float = 0.2) -> StepResult | None:
        return self.runtime.run_next(timeout_s)

    def joint_state(self, pan: float, tilt: float) -> None:
        self.cerebellum.joints(pan, tilt)

    def feel_pain(self, type_name: str, intensity: float, source: str = '') -> None:
        """Pain from the body: idle's drives, the cerebellum, and the act it is pinned on."""
        intensity = max(0.0, min(1.0, float(intensity)))
        now = self.robot_clock()
        if now > 0:
            self.idle_time.pain(now, intensity)
        self.cerebellum.pain(type_name, intensity, source)
        self.counts['pains_received'] += 1
        self.situation.feel(intensity, now)

    def note_episode(self, episode_id: str, mode: str, salience: float, reasoning: str) -> None:
        self.idle_time.note_episode(episode_id, mode, salience, reasoning)

    def _send_head_goal(self, goal: dict) -> None:
        command = HeadGoalCommand.from_dict(goal)
        if command.mode == MODE_TRACK_TARGET and command.target_label and not command.track_id:
            self.track.start(command.target_label, command.goal_id, self.clock(),
                             command.duration_s, self._head())
        else:
            self.track.stop()            # another goal has the head (a track by id: unseen)
        self.cerebellum.command(command)
        if self.body is not None:
            self.body.send_head_goal(command)
        self.events.head_goal(command)

    def query(self, name: str, fields: dict, timeout_s: float = 2.0) -> dict | None:
        return self.recall.query(name, fields, timeout_s)

    def energy_status(self, window_seconds: float = 0.0):
        return self.recall.energy_status(window_seconds)

    def report(self, text: str) -> None:
        """Report a problem through the event sink; a sink that cannot send any more (its
        node is shutting down) must not end the thread that reports."""
        try:
            self.events.status(text)
        except RuntimeError as exc:
            log.warning('%s (not reported: %s)', text, exc)

    # -- tasks and idle time ------------------------------------------------------------------
    @property
    def idle(self):
        """The idle runtime (IdleRuntime), None when idle time is off."""
        return self.idle_time.runtime

    @property
    def tasks(self):
        return self.idle_time.tasks

    def submit_task(self, op: str, task_id: str = '', new_task: Callable[[], dict] | None = None):
        """Add (`new_task()`: TaskStore.add's keywords, read only when there is a store),
        pause, resume or cancel a task; the task as it is now. TaskNotFound for an unknown id,
        ValueError for a bad request."""
        return self.idle_time.submit_task(op, task_id, new_task)

    def idle_tick(self, now: float) -> None:
        """One eligibility check at robot time `now`: run an eligible task, or introspect."""
        if self.idle is None or now <= 0:
            return
        try:
            self.idle_time.tick(now, self._pass, self.runtime.waiting(),
                                functools.partial(run_task, self._step_locked), self._record)
        except (ValueError, RuntimeError, sqlite3.Error, OSError) as exc:
            self.report(f'idle check failed: {exc}')
        self.runtime.ticked(now)

    def wait_for_idle_check(self, robot_time: float, timeout_s: float) -> bool:
        return self.runtime.wait_for_idle_check(robot_time, timeout_s)

    # -- lifetime -----------------------------------------------------------------------------
    def start(self) -> None:
        self.runtime.start()

    @property
    def running(self) -> bool:
        return self.runtime.running

    def wake_idle(self) -> None:
        self.runtime.wake_idle()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the threads (a running deliberation is cancelled) and save what is learned."""
        self.runtime.stop(timeout_s)
        self.tools.save()

    def save_tool_index(self) -> None:
        self.tools.save()

    def close(self) -> None:
        self.stop()
        if self.idle_time.tasks is not None:
            self.idle_time.tasks.close()
            self.idle_time.tasks = None
        self.enrichment.close()
