"""The Mind: one composition of every thinking part, run by the robot and the scenarios alike.

It composes working memory, the ThoughtGate, bio-enrichment (memory's channels and the
cerebellum), the deliberator with its prompt builder and learned tool index, the tool
registry with its scope and executor, the fear review, the agent loop, the energy budget,
idle introspection with its task store, and what it knows of its body. It reaches the world
only through its ports (maxim_core.mind.ports): the model, memory queries, the fear gate,
the body, and an event sink that hears every thought, tool call, result, episode, pain, head
goal and idle event as a typed record.

Calls carry their own arguments: `offer(percept)` puts a percept in the inbox (the newest
wins: a robot thinks about now, not a backlog) and the worker thread steps on it; `step`
runs one pass with its own goal, force and cycle cap; `deliberate` thinks without acting;
`idle_tick(now)` runs one eligibility check. Nothing is patched at run time. One pass at a
time: the pass lock serialises the worker, tasks, idle cycles and Deliberate requests.

What each seed system changes, on this path:
- enrichment channels (episodes, similar, concepts, knowledge, predictions, rhythms from
  memory; motor programs from the cerebellum) join the prompt as "Your experience responds",
  each line saying why it matched; a channel with nothing relevant is left out, so salience
  reflects it;
- the NAc's learned values for the active tools in this context become "What you have
  learned" in the context pool (the loop's causal notes);
- the LearnedToolIndex picks which tools the manifest describes in full for this percept and
  goal, and learns from each outcome (persisted when a path is configured);
- the energy budget (a real token budget with refill) feeds the gate's energy stage and the
  idle energy drive;
- the ThoughtGate's threshold learns from whether thinking led to a successful action.

`MindConfig.systems` switches systems off one by one (the ablation benchmark).
"""

from __future__ import annotations

from collections import deque, OrderedDict
from dataclasses import dataclass, field, replace
import json
import logging
import math
import os
import queue
import re
import sqlite3
import threading
import time
from typing import Any, Callable, Mapping, Sequence
import uuid

from maxim_core.agent.loop import (AgentLoop, context_key, Decision, LoopConfig, LoopResult,
                                   Percept)
from maxim_core.agent.verify import WorldVerifier
from maxim_core.conversions import recall_to_events
from maxim_core.deliberation.chooser import Chooser
from maxim_core.deliberation.choice import (ChoiceConfig, Grounding, phrase_of,
                                            own_changes, RecentAct, result_words,
                                            thing_states)
from maxim_core.deliberation.cycles import DeliberationConfig, DeliberationResult, Deliberator
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.enrichment import BioEnrichmentPipeline, EnrichQuery
from maxim_core.deliberation.gate import ThoughtGate
from maxim_core.fear.agent import ToolPainBridge
from maxim_core.fear.patterns import call_danger as danger_of
from maxim_core.idle.controller import IdleIntrospectionController, RetrievalError
from maxim_core.idle.provenance import ProvenanceLog
from maxim_core.idle.runtime import (Body, IdleRuntime, IdleSettings, outcome_of_step,
                                     task_percept_text, TaskOutcome)
from maxim_core.idle.tasks import TaskNotFound, TaskStore
from maxim_core.llm.backend import LLMError
from maxim_core.llm.grammar import deliberation_grammar
from maxim_core.mind.cerebellum import Cerebellum
from maxim_core.mind.ports import (EpisodeRecord, EventSink, HeadGoalCommand, PainReport)
from maxim_core.prompt.builder import identity_section, PromptBuilder, RESPONSE_FORMAT
from maxim_core.prompt.diary import DiaryEntry
from maxim_core.prompt.tools import tool_manifest_section
from maxim_core.tools.catalog import build_tool_registry
from maxim_core.tools.learned_index import LearnedToolIndex
from maxim_core.tools.scope import ToolExecutor, ToolScope

log = logging.getLogger(__name__)

# The tools active by default: looking, recalling, answering (the scene scope adds more).
DEFAULT_ACTIVE = ('move', 'track_target', 'focus_interests', 'novelty_track', 'respond',
                  'memory_recall', 'predict_outcome', 'scene_summary')

# Memory's enrichment channels (answered by memory/enrich) and the Mind's own.
MEMORY_CHANNELS = ('episodes', 'similar', 'concepts', 'knowledge', 'predictions', 'rhythms')
# Systems that can be switched off (ablation): each names what it removes.
SYSTEMS = {
    'hippocampus': 'the episodes channel',
    'ec': 'the similar-situations channel',
    'concepts': 'the concept and knowledge channels',
    'patterns': 'the pattern-prediction channel',
    'nac': 'learned tool values in the context pool',
    'scn': 'the rhythms channel',
    'cerebellum': 'the motor-program channel',
    'tool_index': 'the learned tool index (every active tool described in full)',
    'gate': 'the ThoughtGate (every percept is deliberated)',
}
_CHANNEL_SYSTEM = {'episodes': 'hippocampus', 'similar': 'ec', 'concepts': 'concepts',
                   'knowledge': 'concepts', 'predictions': 'patterns', 'rhythms': 'scn'}

# Percept sources that are someone's words (the panel, a console): arguments may quote them.
HEARD_SOURCES = ('user', 'cli')
# How long what was last seen counts as still in view, for a percept that names nothing
# (a person's words) (s).
IN_VIEW_S = 30.0
MAX_THINGS = 256        # things whose state the mind keeps (the oldest go first)
# Signs that someone addresses the robot: a question, quoted words, "Name: ..." speech.
_ADDRESSED = re.compile(r'\?|"|^\s*[A-Z][\w ]{0,30}:\s', re.M)

# A task's turn is routine: its episode is not, by itself, news for idle introspection's
# storage gate; it is always thought about (force).
TASK_SALIENCE = 0.5


@dataclass(frozen=True)
class MindConfig:
    """What the Mind is (the agent node fills it from its parameters)."""

    mode: str = 'passive'
    simulation: bool = True
    interactive: bool = False
    goal: str = ''
    workspace_root: str = '.'
    active_tools: tuple = DEFAULT_ACTIVE
    active_cap: int = 12
    percept_min_salience: float = 0.3
    deliberation: DeliberationConfig = DeliberationConfig()
    use_grammar: bool = True
    enrichment_budget_s: float = 1.5
    memory_timeout_s: float = 1.0
    energy_token_budget: int = 24000
    energy_refill_tokens_per_s: float = 150.0
    tool_index_path: str = ''              # '' = learned in memory only
    tool_process: str = 'bwrap'            # how tools start processes: bwrap | python
    tool_network: bool = False             # may those processes reach the network
    tool_hidden: tuple = ()                # paths their sandbox hides (e.g. the memory db)
    name: str = 'Maxim'
    body: str = 'a robot head with a camera that can pan and tilt'
    response_format: str = RESPONSE_FORMAT
    run_id: str = ''
    loop_mode: str = ''                    # the episodes' mode ('' = mode)
    idle: IdleSettings | None = None
    systems_off: frozenset = frozenset()
    # How a cycle decides: 'choose' among grounded candidates scored by the model (SayCan),
    # 'generate' a JSON answer under a grammar, or 'auto': choose when the model can score.
    decision: str = 'auto'
    choice: ChoiceConfig = ChoiceConfig()

    def __post_init__(self):
        if self.decision not in ('auto', 'choose', 'generate'):
            raise ValueError(f'decision must be auto, choose or generate, not '
                             f'{self.decision!r}')
        unknown = set(self.systems_off) - set(SYSTEMS)
        if unknown:
            raise ValueError(f'unknown systems {sorted(unknown)}; known: {sorted(SYSTEMS)}')
        if self.energy_token_budget < 0 or self.energy_refill_tokens_per_s < 0:
            raise ValueError('the energy budget and its refill cannot be negative')
        if not 0.0 <= self.percept_min_salience <= 1.0:
            raise ValueError('percept_min_salience must be within 0..1')

    def on(self, system: str) -> bool:
        return system not in self.systems_off


@dataclass
class StepResult:
    """One pass: the loop's result and the deliberation behind it (None when gated)."""

    loop: LoopResult
    deliberation: DeliberationResult | None = None
    surfaced_tools: list = field(default_factory=list)


class Mind:
    """See the module docstring. Thread-safe: one pass at a time."""

    def __init__(self, config: MindConfig, *, model, memory=None, fear=None, body=None,
                 events: EventSink | None = None, registry=None, scope=None, ask=None,
                 tool_filter: Callable[[Any], bool] | None = None,
                 context_hint: Callable[[], str] | None = None,
                 should_cancel: Callable[[], bool] | None = None,
                 entities: Callable[[], list] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 robot_clock: Callable[[], float] = time.time):
        self.config = config
        # entities() -> names of the things the world around names (a scene's entities):
        # arguments may be made of them.
        self.entities = entities
        self.model, self.memory, self.fear, self.body = model, memory, fear, body
        self.events = events or EventSink()
        self.clock, self.robot_clock = clock, robot_clock
        self.run_id = config.run_id or uuid.uuid4().hex[:8]
        self.energy = EnergyBudget(config.energy_token_budget,
                                   config.energy_refill_tokens_per_s, clock=clock)
        self.cerebellum = Cerebellum(clock=clock)
        # ask(question, options, timeout_s) -> the person's answer or None: the interaction
        # port (the thinking panel answers over interaction/request and /response).
        self.registry = registry or build_tool_registry(
            mode=config.mode, root=config.workspace_root, send_head_goal=self._send_head_goal,
            query=self.query, ask=ask, process=config.tool_process,
            network=config.tool_network, hidden=tuple(config.tool_hidden))
        unknown = [n for n in config.active_tools if n not in self.registry]
        if unknown and tool_filter is None:
            raise ValueError(f'tools.active names unknown tools: {", ".join(unknown)}')
        self.scope = scope or ToolScope(self.registry, cap=config.active_cap)
        self.tool_filter = tool_filter
        self.context_hint = context_hint
        self.should_cancel = should_cancel
        self.tools_exec = ToolExecutor(self.registry, self.scope)
        path = config.tool_index_path
        self.tool_index = LearnedToolIndex(
            [self.registry.get(n) for n in self.registry.names()], self.registry.descriptions,
            path=os.path.expanduser(path) if path else None)
        self._index_updates = 0
        self._surfaced: list[str] = []
        self._index_goal = ''
        builder = PromptBuilder(
            lambda text: len(model.tokenize(text)),
            identity=identity_section(config.name, config.body, simulation=config.simulation,
                                      interactive=config.interactive),
            response_format=config.response_format, tool_table=self.registry.descriptions,
            manifest=self._manifest if config.on('tool_index') else None)
        providers: dict[str, Callable] = {}
        if memory is not None and self._memory_channels():
            providers['memory'] = self._ask_memory
        if config.on('cerebellum'):
            providers['motor'] = self.cerebellum.provider
        self.enrichment = BioEnrichmentPipeline(providers, budget_s=config.enrichment_budget_s,
                                                clock=clock)
        chooser = None
        if config.decision != 'generate' and callable(getattr(model, 'score', None)):
            chooser = Chooser(model, config.choice, tool_prior=self._tool_prior,
                              danger=danger_of, relate=self._relate)
        self._priors: dict[str, float] = {}
        self._values: dict[str, float] = {}
        self._history: deque = deque(maxlen=6)
        self._history_total = 0
        self._pains: deque = deque(maxlen=20)
        self._last_act: tuple | None = None
        self._acts_since_news = 0
        self._scene = ''                    # the latest percept from outside the robot
        self._heard = ('', 0.0, '')         # a person's latest words, when, and from where
        self._acts_since_heard = -1         # since words said to the robot (-1: none yet)
        self._current_source = ''
        self._in_view: tuple = ((), 0.0)      # labels of the last view, and when
        self._seen_at_pass: set = set()       # what was in view at the last pass on a view
        self._new_now: list = []              # what came into view since then (this pass)
        # What acts' results told of things' states, and what the robot's own acts set:
        # kept beyond the loop's few recent outcomes (the door it opened stays open).
        self._states: dict[str, dict] = {}
        self._changed: dict[tuple, bool] = {}
        self.deliberator = Deliberator(
            model, builder=builder, energy=self.energy, enrichment=self.enrichment,
            config=config.deliberation,
            grammar_for=deliberation_grammar if config.use_grammar else None,
            lookup=self.registry.lookup, clock=clock, chooser=chooser, name=config.name)
        self.gate = ThoughtGate()
        self._tick = 0
        self._starts: dict[str, Any] = {}
        self.verifier = WorldVerifier(
            head_position=body.head_position if body is not None else None,
            root=config.workspace_root)
        self.pain_bridge = ToolPainBridge(pain=self._feel_tool_pain)
        self.loop = AgentLoop(
            LoopConfig(mode=config.loop_mode or config.mode, run_id=self.run_id,
                       goal=config.goal),
            think=self._think, review=self._review, resolve=self._resolve,
            execute=self._execute, record_episode=self._record_episode,
            verify=self._verify, on_call=self.events.tool_call,
            on_result=self.events.tool_result,
            on_outcome=lambda run: self.pain_bridge.record(
                run.tool, run.context, run.success, run.error_code, run.error_msg),
            clock=clock)
        self.last_result: DeliberationResult | None = None
        # The inbox and the pass lock.
        self._inbox: queue.Queue = queue.Queue(maxsize=1)
        self._pass = threading.Lock()
        self._stop = threading.Event()
        self._worker: threading.Thread | None = None
        self._idle_worker: threading.Thread | None = None
        self._idle_wake = threading.Event()
        self._tick_done = threading.Condition()
        self.counts = {'percepts_received': 0, 'percepts_dropped': 0, 'percepts_pending': 0,
                       'pains_received': 0, 'pains_sent': 0, 'episodes_sent': 0,
                       'idle_events': 0, 'provenance_records': 0}
        # Idle: tasks, introspection, the body the drives read.
        self.tasks: TaskStore | None = None
        self.idle: IdleRuntime | None = None
        self._body_state: Body | None = None
        self._body_lock = threading.RLock()
        self._notes: OrderedDict = OrderedDict()
        self._notes_lock = threading.Lock()
        self.idle_ticked_at = 0.0
        self.model_name = ''
        self._setup_idle()

    # -- tools -------------------------------------------------------------------------------
    def tools_now(self) -> list:
        """What the model may name now: the configured tools plus the scene's."""
        if self.tool_filter is not None:
            return [t for t in self.scope.active_tools() if self.tool_filter(t)]
        active = set(self.config.active_tools)
        if self.config.interactive:
            active.add('request_interaction')     # a person is there to ask
        return [t for t in self.scope.active_tools()
                if t.name in active or self.scope.is_scene_tool(t.name)]

    def _resolve(self, name: str):
        return self.tools_exec.resolve(name, [t.name for t in self.tools_now()])

    def _manifest(self, tools) -> list:
        """Manifest sections through the learned index: tools matched to this percept and
        goal in full, the rest by name."""
        names = [getattr(t, 'name', '') for t in tools]
        if not names:
            return [tool_manifest_section(tools, self.registry.descriptions)]
        sections, sel = self.tool_index.sections(self._index_goal, among=names)
        self._surfaced = list(sel.critical)
        return sections

    def query(self, name: str, fields: dict, timeout_s: float = 2.0) -> dict | None:
        """The introspection tools' queries: energy from the Mind itself, the rest from
        memory (None when memory is absent)."""
        if name == 'energy_status':
            try:
                report = self.energy_status(float(fields.get('window_seconds', 0.0)))
            except (TypeError, ValueError) as exc:
                return {'available': True, 'error_code': 1, 'error_msg': str(exc)}
            return {'available': True, **vars(report)}
        if self.memory is None:
            return None
        return self.memory.query(name, fields, timeout_s)

    def _send_head_goal(self, goal: dict) -> None:
        command = HeadGoalCommand.from_dict(goal)
        self.cerebellum.command(command)
        if self.body is not None:
            self.body.send_head_goal(command)
        self.events.head_goal(command)

    # -- enrichment --------------------------------------------------------------------------
    def _memory_channels(self) -> list[str]:
        return [c for c in MEMORY_CHANNELS if self.config.on(_CHANNEL_SYSTEM[c])]

    def _relate(self, text: str, phrases: Sequence[str]) -> list[float] | None:
        """The memory node's sentence-model similarity of what a person said to each act
        (`memory/relate`), the choice's similarity term; None when memory cannot say (no
        memory, no sentence model, no answer in time): the term is then 0."""
        if self.memory is None:
            return None
        try:
            answer = self.query('relate', {'text': text[:2000], 'phrases': list(phrases)},
                                self.config.memory_timeout_s)
        except ValueError:               # a memory without that query (the text world's)
            return None
        if not answer or not answer.get('available') or answer.get('error_code'):
            return None
        sims = [float(s) for s in answer.get('similarities') or []]
        return sims if len(sims) == len(phrases) else None

    def _ask_memory(self, query: EnrichQuery) -> dict | None:
        """Memory's relevant channels for this situation, as lines that say why."""
        answer = self.query('enrich', {
            'text': str(query)[:1000], 'objects': list(query.objects),
            'people': list(query.people), 'goal': query.goal, 'tools': list(query.tools),
            'context_key': query.context_key, 'channels': self._memory_channels()},
            self.config.memory_timeout_s)
        if not answer or not answer.get('available') or answer.get('error_code'):
            return None
        channels = json.loads(answer.get('result_json') or '{}').get('channels', {})
        return {name: '\n'.join(f'{i["text"]} [{i["why"]}]' for i in ch.get('items', []))
                for name, ch in channels.items()}

    def _learned_values(self, percept: Percept, goal: str, key: str) -> list[str]:
        """The NAc's values of the active tools in this context (the causal notes; the
        numbers are kept for the choice)."""
        self._values = {}
        if self.memory is None or not self.config.on('nac'):
            return []
        answer = self.query('enrich', {
            'text': percept.narrative[:500], 'objects': list(percept.objects),
            'people': list(percept.people), 'goal': goal,
            'tools': [t.name for t in self.tools_now()], 'context_key': key,
            'channels': ['values']}, self.config.memory_timeout_s)
        if not answer or not answer.get('available') or answer.get('error_code'):
            return []
        channel = json.loads(answer.get('result_json') or '{}').get('channels', {})
        items = channel.get('values', {}).get('items', [])
        self._values = {}
        for item in items:
            data = item.get('data') or {}
            if isinstance(data.get('tool'), str) and isinstance(data.get('value'), (int, float)):
                self._values[data['tool']] = float(data['value'])
        return [i['text'] for i in items]

    # -- thinking ----------------------------------------------------------------------------
    def _think(self, percept: Percept, context: str, *, force: bool = False,
               on_thought=None, max_cycles: int = 0, goal: str = '') -> Decision:
        self._tick += 1
        if not getattr(self.model, 'n_ctx', 0) and hasattr(self.model, 'ensure_ready'):
            self.model.ensure_ready()     # learn the context size (LLMError if absent)
        wm = self.deliberator.wm
        wm.add('percept', percept.narrative, max(0.0, min(1.0, percept.salience)))
        if percept.source == 'user' or not self.config.on('gate'):
            force = True                  # a person speaking always gets a thought
        decision = self.gate.should_think(self._tick, wm, self.energy.remaining_fraction(),
                                          force=force)

        def publish(t):
            self.events.thought(t)
            if on_thought is not None:
                on_thought(t)

        if not decision.think:
            result = self.deliberator.gated(decision.reason, on_thought=None)
        else:
            if self.context_hint is not None:
                hint = self.context_hint()
                context = f'{context}\n{hint}' if context and hint else (context or hint)
            tools = self.tools_now()
            self._index_goal = f'{goal} {percept.narrative}'.strip()
            situation = {'objects': percept.objects, 'people': percept.people, 'goal': goal,
                         'tools': [t.name for t in tools],
                         'context_key': context_key(percept, goal)}
            if self.config.on('tool_index'):
                scores = self.tool_index.score(self._index_goal)
                top = max(scores.values(), default=0.0)
                self._priors = {k: 0.5 * v / top for k, v in scores.items()} if top > 0 else {}
            result = self.deliberator.deliberate(
                percept.narrative, self.tools_now, goal=goal, context=context,
                max_cycles=max_cycles, on_thought=publish, situation=situation,
                cancel=self.should_cancel, on_forming=getattr(self.events, 'forming', None),
                grounding=lambda: self._grounding(percept, goal),
                history=list(self._history), history_total=self._history_total)
        self.last_result = result
        return Decision(result.status, result.reasoning, result.action, result.cycles,
                        result.confidence, result.deliberation_id)

    def _tool_prior(self, tool: str) -> float:
        """The learned tool index's match of a tool to this percept and goal (0..0.5)."""
        return self._priors.get(tool, 0.0)

    def _note_view(self, percept: Percept) -> None:
        """What is in view, kept for a person's words that come without a view."""
        if percept.source == 'vision' and percept.objects:
            self._in_view = (tuple(str(o) for o in percept.objects), self.clock())

    def _grounding(self, percept: Percept, goal: str) -> Grounding:
        """What this pass's arguments may be made of, and what the choice weighs."""
        text = percept.narrative
        entities, aliases = [], {}
        if self.entities is not None:
            # A name, or {'name': ..., 'called': the word the scene used for it}.
            for e in self.entities():
                name = str(e.get('name', '')) if isinstance(e, Mapping) else str(e)
                called = str(e.get('called', '')).strip().lower() \
                    if isinstance(e, Mapping) else ''
                if name:
                    entities.append(name)
                    if called and called != name.lower():
                        aliases[called] = name.lower()
        recent = [RecentAct(r.tool, dict(r.args), bool(r.success),
                            (result_words(r.output) if r.success
                             else r.error_msg or r.blocked_reason)[:200],
                            bool(r.blocked), bool(r.introspection),
                            *RecentAct.state_of(r.output))
                  for r in self.loop.recent]
        kept = Grounding(states=self._states, changed=self._changed, recent=recent)
        self._states, self._changed = thing_states(kept), own_changes(kept)
        while len(self._states) > MAX_THINGS:
            self._states.pop(next(iter(self._states)))
        while len(self._changed) > MAX_THINGS:
            self._changed.pop(next(iter(self._changed)))
        objects = list(percept.objects)
        labels, seen_at = self._in_view
        if not objects and labels and self.clock() - seen_at <= IN_VIEW_S:
            objects = list(labels)           # a person's words: what is in view still is
        heard = text if percept.source in HEARD_SOURCES else ''
        said, said_at, said_by = self._heard
        said_by = percept.source if heard else said_by
        if not heard and percept.source == 'tool_result' and said \
                and self.clock() - said_at <= IN_VIEW_S:
            heard = said          # acting on a person's words: they still stand
        return Grounding(
            percept=text, goal=goal, heard=heard,
            objects=objects, people=list(percept.people), entities=entities, aliases=aliases,
            values=dict(self._values) if self.config.on('nac') else {}, recent=recent,
            pains=list(self._pains), acts_since_news=self._acts_since_news,
            scene=self._scene, acts_since_heard=self._acts_since_heard,
            from_tool=percept.source == 'tool_result',
            states=dict(self._states), changed=dict(self._changed), name=self.config.name,
            new=list(self._new_now) if percept.source == 'vision' else [],
            # Someone is there when a person is in view or spoke: what the robot says of
            # its own view ("I see 2 objects: ...") is no one talking, whatever its marks.
            someone_there=bool(percept.people) or bool(heard),
            addressed=bool(heard) and (said_by == 'user' or bool(_ADDRESSED.search(heard))))

    def step(self, percept: Percept, *, goal: str | None = None, force: bool = False,
             on_thought=None, max_cycles: int = 0, timeout_s: float | None = None
             ) -> StepResult | None:
        """One pass of perceive -> decide -> act -> evaluate on `percept`; None when another
        pass held the lock past `timeout_s` (None: wait)."""
        if not self._pass.acquire(timeout=-1 if timeout_s is None else timeout_s):
            return None
        try:
            return self._step_locked(percept, goal, force, on_thought, max_cycles)
        finally:
            self._pass.release()

    def _step_locked(self, percept, goal, force, on_thought, max_cycles) -> StepResult:
        goal = self.loop.goal if goal is None else goal
        self.loop.causal_notes = self._learned_values(percept, goal, context_key(percept, goal))
        self._surfaced = []
        self.last_result = None
        self._note_view(percept)      # a percept stepped directly (scenarios) counts too
        # What came into view since the robot last thought about a view (not since the last
        # frame: most views are never thought about); nothing is new at the first one.
        self._new_now = []
        if percept.source == 'vision' and percept.objects:
            seen, self._seen_at_pass = self._seen_at_pass, {str(o) for o in percept.objects}
            self._new_now = [str(o) for o in percept.objects if seen and str(o) not in seen]
        if percept.source != 'tool_result':
            self._acts_since_news = 0       # news from the world: acting is fresh again
            self._scene = percept.narrative
            if percept.source in HEARD_SOURCES:
                self._heard = (percept.narrative, self.clock(), percept.source)
                if percept.source == 'user' or _ADDRESSED.search(percept.narrative):
                    self._acts_since_heard = 0      # words said to the robot
        self._current_source = percept.source
        try:
            result = self.loop.step(percept, goal=goal, think_options={
                'force': force, 'on_thought': on_thought, 'max_cycles': max_cycles,
                'goal': goal})
        finally:
            self._current_source = ''
        delib = self.last_result
        self._remember_pass(result, delib)
        if result.decision.status != 'gated':
            self._learn(result, goal, percept)
        return StepResult(result, delib, list(self._surfaced))

    def _remember_pass(self, result: LoopResult, delib: DeliberationResult | None) -> None:
        """The diary's history: what was thought, done and what came of it."""
        run = result.run
        if run is not None:
            self._acts_since_news += 1
            if self._acts_since_heard >= 0:
                self._acts_since_heard += 1
            self._last_act = (run.tool, dict(run.args), self.robot_clock())
        thought = delib.reasoning if delib is not None and not delib.failed else ''
        if not thought and run is None:
            return
        action = outcome = ''
        if run is not None:
            action = phrase_of(run.tool, run.args)
            outcome = ('blocked' if run.blocked else
                       result_words(run.output) or 'done' if run.success else
                       f'failed, {run.error_msg or "no reason given"}')
        self._history.append(DiaryEntry(thought, action, outcome[:200]))
        self._history_total += 1

    def _learn(self, result: LoopResult, goal: str, percept: Percept) -> None:
        """The gate's threshold and the tool index learn from how the pass went."""
        run = result.run
        helped = run is not None and run.success
        self.gate.record_outcome(helped)
        if not self.config.on('tool_index'):
            return
        text = f'{goal} {percept.narrative}'.strip()
        if run is not None and not run.blocked:
            if run.success:
                self.tool_index.record_success(run.tool, text)
            else:
                self.tool_index.record_failure(run.tool, text)
        self.tool_index.record_unused(self._surfaced, [run.tool] if run else [], text)
        self._index_updates += 1
        if self.tool_index.path is not None and self._index_updates % 10 == 0:
            self.save_tool_index()

    def save_tool_index(self) -> None:
        if self.tool_index.path is None:
            return
        try:
            self.tool_index.save()
        except OSError as exc:
            self._status(f'the learned tool index was not saved: {exc}')

    def deliberate(self, percept: Percept, *, goal: str | None = None, force: bool = False,
                   on_thought=None, max_cycles: int = 0,
                   timeout_s: float | None = None) -> DeliberationResult | None:
        """Think about `percept` without acting; None when the lock was not had in time."""
        if not self._pass.acquire(timeout=-1 if timeout_s is None else timeout_s):
            return None
        try:
            goal = self.loop.goal if goal is None else goal
            self._think(percept, self.loop.context_text(goal), force=force,
                        on_thought=on_thought, max_cycles=max_cycles, goal=goal)
            return self.last_result
        finally:
            self._pass.release()

    def cancel(self) -> None:
        self.deliberator.cancel()

    def energy_status(self, window_seconds: float = 0.0):
        """The energy budget's report; ValueError for a window that is negative or not a
        number."""
        if not math.isfinite(window_seconds) or window_seconds < 0:
            raise ValueError(f'window_seconds must be a finite number >= 0, not '
                             f'{window_seconds}')
        return self.energy.status(window_seconds)

    # -- acting ------------------------------------------------------------------------------
    def _review(self, run, context: str) -> dict:
        if self.fear is None:
            return {'allowed': False, 'layer': 255, 'reason': 'no fear gate: blocked to be safe'}
        return self.fear.review(run, context)

    def _execute(self, run):
        if self.body is not None:
            self._starts[run.call_id] = self.body.head_position()
        outcome = self.tools_exec.execute(run.tool, run.args)
        run.success = bool(outcome.success)
        run.output = outcome.text()
        run.error_code = int(outcome.error_code)
        run.error_msg = outcome.error_msg
        run.data = dict(getattr(outcome, 'data', {}) or {})
        return run

    def _verify(self, run):
        return self.verifier(run, start=self._starts.pop(run.call_id, None))

    def _record_episode(self, episode: dict) -> None:
        record = EpisodeRecord.from_dict(episode)
        self.note_episode(record.episode_id, record.mode, record.salience, record.reasoning)
        self.counts['episodes_sent'] += 1
        self.events.episode(record)

    def _feel_tool_pain(self, signal: dict) -> None:
        self.counts['pains_sent'] += 1
        self.events.pain(PainReport.from_dict(signal))

    def _status(self, text: str) -> None:
        """Report a problem through the event sink; a sink that cannot send any more (its
        node is shutting down) must not end the thread that reports."""
        try:
            self.events.status(text)
        except RuntimeError as exc:
            log.warning('%s (not reported: %s)', text, exc)

    # -- the inbox and the worker ------------------------------------------------------------
    def offer(self, percept: Percept, from_self: bool = False) -> bool:
        """A percept arrives; True when it was queued for a pass. Vision below
        `percept_min_salience` is not deliberated; only the newest percept waits, except
        that a person's words are not pushed out by what is seen or by an act's result
        (the next pass is on their words, and the view goes with it: `_in_view`)."""
        if from_self:
            return False
        self.counts['percepts_received'] += 1
        if percept.source == 'user' or percept.people:
            now = self.robot_clock()
            if now > 0:
                with self._body_lock:
                    self._body_at(now).record_interaction(now)
        self._note_view(percept)
        if percept.source == 'vision' and percept.salience < self.config.percept_min_salience:
            return False
        if percept.source in HEARD_SOURCES and self._current_source and self._pass.locked():
            # A person spoke while the mind mulls over something else (what it sees, what an
            # act brought, what was said before): their newest words come first (the running
            # deliberation ends cancelled; the newest percept is theirs).
            self.counts['percepts_preempted'] = self.counts.get('percepts_preempted', 0) + 1
            self.deliberator.cancel()
        with self._tick_done:
            try:
                waiting = self._inbox.get_nowait()
                self.counts['percepts_dropped'] += 1
            except queue.Empty:
                waiting = None
                self.counts['percepts_pending'] += 1
            if waiting is not None and waiting.source in HEARD_SOURCES and \
                    percept.source not in HEARD_SOURCES:
                self._inbox.put_nowait(waiting)      # their words wait; this one goes
                return False
            self._inbox.put_nowait(percept)
        return True

    def run_next(self, timeout_s: float = 0.2) -> StepResult | None:
        """Take the newest waiting percept (waiting up to `timeout_s`) and step on it."""
        try:
            percept = self._inbox.get(timeout=timeout_s)
        except queue.Empty:
            return None
        try:
            return self.step(percept)
        except LLMError as exc:
            self._status(f'the language model failed: {exc}')
        except (ValueError, RuntimeError) as exc:
            self._status(f'this step failed: {exc}')
        finally:
            with self._tick_done:
                self.counts['percepts_pending'] -= 1
                self._tick_done.notify_all()
        return None

    def start(self) -> None:
        """Start the worker thread that steps on offered percepts, and the idle thread that
        runs an eligibility check whenever `wake_idle` is called (a timer of robot time)."""
        if self._worker is None:
            self._worker = threading.Thread(target=self._work, name='mind', daemon=True)
            self._worker.start()
        if self.idle is not None and self._idle_worker is None:
            self._idle_worker = threading.Thread(target=self._idle_work, name='mind-idle',
                                                 daemon=True)
            self._idle_worker.start()

    @property
    def running(self) -> bool:
        """The worker thread is alive: started and not stopped."""
        return self._worker is not None and self._worker.is_alive() and not self._stop.is_set()

    def _work(self) -> None:
        while not self._stop.is_set():
            self.run_next(0.2)

    def wake_idle(self) -> None:
        """Ask the idle thread for one eligibility check at the robot clock's now."""
        self._idle_wake.set()

    def _idle_work(self) -> None:
        while not self._stop.is_set():
            if self._idle_wake.wait(timeout=0.2):
                self._idle_wake.clear()
                self.idle_tick(self.robot_clock())

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop the threads (a running deliberation is cancelled) and save what is learned."""
        self._stop.set()
        self.deliberator.cancel()
        if self._worker is not None:
            self._worker.join(timeout=timeout_s)
        if self._idle_worker is not None:
            self._idle_worker.join(timeout=2 * timeout_s)
        self.save_tool_index()

    def close(self) -> None:
        self.stop()
        if self.tasks is not None:
            self.tasks.close()
            self.tasks = None
        self.enrichment.close()

    # -- the body ----------------------------------------------------------------------------
    def joint_state(self, pan: float, tilt: float) -> None:
        self.cerebellum.joints(pan, tilt)

    def feel_pain(self, type_name: str, intensity: float, source: str = '') -> None:
        intensity = max(0.0, min(1.0, float(intensity)))
        now = self.robot_clock()
        if now > 0:
            with self._body_lock:
                self._body_at(now).record_pain(now, intensity)
        self.cerebellum.pain(type_name, intensity, source)
        self.counts['pains_received'] += 1
        if self._last_act is not None and intensity > 0:
            tool, args, at = self._last_act
            if now <= 0 or at <= 0 or now - at <= 10.0:
                self._pains.append((tool, args, intensity))   # what hurt: the last act

    def _body_at(self, now: float) -> Body:
        with self._body_lock:
            if self._body_state is None:
                s = self.config.idle.runtime if self.config.idle else None
                self._body_state = Body(now, s.pain_window_s if s else 600.0,
                                        s.memory_capacity if s else 10000)
            return self._body_state

    def note_episode(self, episode_id: str, mode: str, salience: float, reasoning: str) -> None:
        """What idle retrieval needs of an episode that memory's summaries lack."""
        with self._notes_lock:
            self._notes[episode_id] = {'mode': mode, 'salience': float(salience),
                                       'reasoning': reasoning[:300]}
            while len(self._notes) > 2000:
                self._notes.popitem(last=False)

    # -- tasks and idle introspection --------------------------------------------------------
    def _setup_idle(self) -> None:
        settings = self.config.idle
        if settings is None or not settings.runtime.enabled:
            return
        s = settings.runtime
        self.tasks = TaskStore(os.path.expanduser(s.task_db_path), settings.tasks,
                               clock=self.robot_clock)
        if self.tasks.corruption:
            self._status(f'the task store was corrupt; moved aside to '
                         f'{self.tasks.corruption}, starting empty')
        provenance = ProvenanceLog(os.path.expanduser(s.provenance_path)) \
            if s.provenance_path else None
        idle_cfg = replace(settings.idle, run_id=settings.idle.run_id or self.run_id)
        controller = IdleIntrospectionController(
            self.model, self.tasks, self._idle_retrieve, idle_cfg,
            rerank=self._idle_rerank if idle_cfg.semantic_top_k > 0 else None,
            provenance_log=provenance, clock=self.robot_clock)
        self.idle = IdleRuntime(self.tasks, settings.breaker(), controller)

    def submit_task(self, op: str, task_id: str = '',
                    new_task: Callable[[], dict] | None = None):
        """Add (`new_task()`: TaskStore.add's keywords, read only when there is a store),
        pause, resume or cancel a task; the task as it is now. TaskNotFound for an unknown id,
        ValueError for a bad request."""
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

    def idle_tick(self, now: float) -> None:
        """One eligibility check at robot time `now`: run an eligible task, or introspect."""
        if self.idle is None or now <= 0:
            return
        try:
            self._idle_tick_locked(now)
        except (ValueError, RuntimeError, sqlite3.Error, OSError) as exc:
            self._status(f'idle check failed: {exc}')
        with self._tick_done:
            self.idle_ticked_at = max(self.idle_ticked_at, now)
            self._tick_done.notify_all()

    def _idle_tick_locked(self, now: float) -> None:
        body = self._body_at(now)
        if not self._pass.acquire(blocking=False):
            self.idle.tick(now, self._run_task, busy=True)     # deliberating: not idle
            return
        try:
            result = self.idle.tick(
                now, self._run_task, drive_state=lambda: self._drive_state(body, now),
                on_event=self._idle_event, busy=not self._inbox.empty())
        finally:
            self._pass.release()
        if result.outcome is not None and not result.outcome.success:
            self._status(f'task {result.task.goal!r} failed: {result.outcome.error}')
        if result.cycle is not None:
            self.counts['provenance_records'] += 1
            self.events.provenance(result.cycle.provenance)
            if result.cycle.episode is not None:
                self._record_episode(result.cycle.episode)

    def _idle_event(self, status) -> None:
        self.counts['idle_events'] += 1
        self.events.idle_event(status)
        controller = self.idle.controller
        if not getattr(self.model, 'model', '') and hasattr(self.model, 'ensure_ready'):
            try:
                self.model.ensure_ready()     # learn the model's name for provenance
            except LLMError as exc:           # the cycle will record the failure itself
                self._status(f'idle: {exc}')
        controller.model_name = getattr(self.model, 'model', '') or controller.model_name

    def _run_task(self, task) -> TaskOutcome:
        """One attempt at a task: a pass on it with the task's goal (the caller holds the
        pass lock)."""
        percept = Percept(narrative=task_percept_text(task), source='system',
                          percept_id=f'task-{task.task_id}-{task.attempts + 1}',
                          salience=TASK_SALIENCE)
        try:
            return outcome_of_step(self._step_locked(percept, task.goal, True, None, 0).loop)
        except LLMError as exc:
            return TaskOutcome(False, False, f'the language model failed: {exc}')
        except (ValueError, RuntimeError) as exc:
            return TaskOutcome(False, False, f'the step failed: {exc}')

    def _drive_state(self, body: Body, now: float):
        stats = self.query('system_stats', {}, 1.0)
        episodes = None
        if stats and stats.get('available') and not stats.get('error_code'):
            episodes = int(stats['episodes'])
        with self._body_lock:
            return body.state(now, self.energy.remaining_fraction(), episodes)

    def _idle_retrieve(self, max_events: int, window_s: float) -> list:
        if max_events <= 0:
            return []
        start = max(0.0, self.robot_clock() - window_s)
        answer = self.query('memory_recall', {'time_after': start, 'limit': max_events}, 2.0)
        if answer is None:
            raise RetrievalError('the memory node is not running')
        if answer.get('error_code') or not answer.get('available'):
            raise RetrievalError(answer.get('error_msg') or 'memory is unavailable')
        with self._notes_lock:
            notes = dict(self._notes)
        return recall_to_events(answer, notes)

    def _idle_rerank(self, query_text: str, events: list, top_k: int) -> list:
        answer = self.query('similarity_search',
                            {'context': query_text[:300], 'limit': max(top_k, len(events))},
                            2.0)
        if answer is None:
            raise RetrievalError('the memory node is not running')
        if answer.get('error_code') or not answer.get('available'):
            raise RetrievalError(answer.get('error_msg') or 'similarity search unavailable')
        rank = {e['episode_id']: i for i, e in enumerate(answer.get('episodes') or [])}
        return sorted(events, key=lambda e: rank.get(e['id'], len(rank)))[:top_k]

    def wait_for_idle_check(self, robot_time: float, timeout_s: float) -> bool:
        """Block until the eligibility check at or after `robot_time` has finished and no
        percept is waiting or being deliberated; False on timeout."""
        deadline = time.monotonic() + timeout_s
        with self._tick_done:
            while self.idle_ticked_at < robot_time or self.counts['percepts_pending']:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._tick_done.wait(min(0.05, remaining))
        return True
