"""The SimulationBridge: an agent-under-test (AUT) run in-process, driven by messages.

The AUT is the robot's own Mind (maxim_core.mind: working memory, ThoughtGate, enrichment,
deliberator, learned tool index, cerebellum, energy, the agent loop) with text-world ports: a
tool registry for the AUT's role (robot tools deregistered, the narrative tools added,
filesystem sandboxed in a private workspace), the FearAgent's review plus pain inhibition of
bodily actions, and a memory of its own for the session. Every message is addressed to the
AUT, so each is thought about (force: the gate never drops a turn).

send_message(text) injects a percept and lets the AUT respond: every action's result comes
back as the next percept, so multi-step responses unfold (recall -> say -> open), until the
AUT stops acting and no new action has come for `settle_s` (settle detection), its turn
budget of actions is spent (think counts too), or `timeout` passes. The clock and the wait
are injected: tests run the settle logic on a fake clock and never sleep.
"""

from collections import deque
from dataclasses import asdict, dataclass, field, replace
import json
import math
import shutil
import tempfile
import threading
import time
from typing import Any, Callable, Iterable, Mapping
import uuid

from maxim_core.agent.loop import FAILED_STATUSES, Percept, ToolRun
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.fear import FearAgent, FearConfig
from maxim_core.llm.backend import Backend
from maxim_core.mind import EpisodeRecord, EventSink, Mind, MindConfig, WorldPort
from maxim_core.prompt.tools import ToolDescription
from maxim_core.tools.catalog import build_tool_registry
from maxim_core.tools.scope import ToolScope
from maxim_eval.scenario.components import ComponentIndex
from maxim_eval.scenario.memory import SimMemory
from maxim_eval.scenario.narrative import NARRATIVE_DESCRIPTIONS, narrative_tools, Scene

# Built-in tools the AUT does not get in simulation (seed 001, seed 003's table): the body
# (robot), the outside world (speech, messages, the camera), code tools, and the robot's
# memory_recall (the narrative one, on the AUT's own memory, replaces it).
SIM_DEREGISTERED = ('move', 'track_target', 'focus_interests', 'novelty_track', 'speak',
                    'send_message', 'call_user', 'scene_summary', 'search_code', 'run_tests',
                    'git_diff', 'git_commit', 'memory_recall')
# Built-in tools the narrative world replaces with its own of the same name.
SIM_REPLACED = ('request_interaction',)

# What inspect_aut may ask (read-only).
INSPECT_QUERIES = ('memory_recall', 'causal_links', 'predict_outcome', 'pain_history',
                   'energy_status', 'system_stats', 'concept_query', 'temporal_patterns')

SIM_BODY = 'a simulated agent in a narrative world (no camera, no motors)'

# A small base model copies any concrete example in its prompt word for word (a "keep
# watching" thought, "I ring the bell twice", say "Hello", read_file "notes.txt"), whatever
# the scene. So the answer format is a template with <...> slots, and the narrative and
# built-in tools carry no example (their parameters say what goes in; the decoder enforces
# the shape). gemma-3-270m still often echoes the reasoning slot verbatim, but an echoed
# slot claims nothing false, and it then picks the scene's own actions far more often.
SIM_RESPONSE_FORMAT = (
    'Answer with one JSON object and nothing else, in this shape (fill in the <...> parts '
    'yourself):\n'
    '{"reasoning": "<your thought about what you perceive now>", "ready_to_act": true, '
    '"action": {"tool": "<one of your tools>", "args": {<its arguments>}}}\n'
    'Think about this situation: the goal, what you perceive, what you remember. When you '
    'know what to do, set "ready_to_act" to true and "action" to one of YOUR tools listed '
    'above with its arguments; when there is nothing to do, set "ready_to_act" to false and '
    '"action" to null.')


def without_example(entry: Any) -> Any:
    """A description-table entry without its example (the built-in tools' examples, such as
    read_file "notes.txt", are copied into unrelated scenes just the same)."""
    if isinstance(entry, ToolDescription):
        return replace(entry, example='')
    if isinstance(entry, Mapping) and 'example' in entry:
        return {k: v for k, v in entry.items() if k != 'example'}
    return entry


def pain_text(pain_type: str, intensity: float) -> str:
    """A body signal as the AUT feels it."""
    return (f'Body signal: you feel {pain_type} pain, intensity {intensity:.2f} of 1. '
            'Strong pain inhibits bodily actions.')


class VirtualClock:
    """Simulated time: `sleep` advances it at once (scripted replays, tests)."""

    def __init__(self, start: float = 0.0):
        self.now = float(start)
        self._lock = threading.Lock()

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        """Advance the clock by `seconds`, and by at least one representable tick when
        `seconds` is positive: a waiter that sleeps the rest of a wait (`Runtime.turn`'s
        settle) may ask for less than the clock's resolution (8.9e-16 s at 9.15 s), and
        `now + seconds == now` would leave it waiting for ever."""
        if seconds < 0:
            raise ValueError('cannot sleep a negative time')
        with self._lock:
            later = self.now + seconds
            if seconds > 0 and later <= self.now:
                later = math.nextafter(self.now, math.inf)
            self.now = later


class SimulationClosed(RuntimeError):
    """The simulation was finished; the AUT takes no more messages."""


@dataclass(frozen=True)
class BridgeConfig:
    """Parameters `sim.aut.*`."""

    settle_s: float = 2.0              # no new action for this long = the AUT has answered
    poll_s: float = 0.25               # wait step while settling
    timeout_s: float = 30.0            # per message
    max_actions_per_turn: int = 6      # every action counts, think included
    mode: str = 'active'               # sandbox mode of the filesystem tools
    scope_cap: int = 12                # active scene tools at once
    max_cycles: int = 1                # deliberation cycles per step
    max_tokens: int = 160
    temperature: float = 0.7
    seed: int = -1
    retries: int = 1
    llm_timeout_s: float = 60.0
    recall_in_prompt: int = 2          # hippocampal memories enriching each percept

    def __post_init__(self):
        if self.settle_s < 0 or self.poll_s <= 0 or self.timeout_s <= 0:
            raise ValueError('need settle_s >= 0, poll_s > 0 and timeout_s > 0')
        if self.max_actions_per_turn < 1:
            raise ValueError('max_actions_per_turn must be >= 1')


@dataclass
class ActionRecord:
    """One AUT action as the orchestrator sees it."""

    index: int
    turn: int
    tool: str
    args: dict
    requested: str = ''
    success: bool = False
    blocked: bool = False
    blocked_reason: str = ''
    blocked_layer: str = ''
    output: str = ''
    error_msg: str = ''
    at_s: float = 0.0                  # since the session started (injected clock)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class TurnResult:
    """What one send_message produced."""

    turn: int
    message: str
    source: str
    response: str = ''                 # what the AUT said (say / respond / questions)
    actions: list[ActionRecord] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    choices: list[str] = field(default_factory=list)   # what each step weighed, best first
    failures: list[str] = field(default_factory=list)
    imagined: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    steps: int = 0
    settled: bool = False
    timed_out: bool = False
    budget_exhausted: bool = False
    started_s: float = 0.0
    duration_s: float = 0.0

    @property
    def blocked(self) -> list[ActionRecord]:
        return [a for a in self.actions if a.blocked]

    def as_dict(self) -> dict:
        out = asdict(self)
        out['blocked'] = [a.as_dict() for a in self.blocked]
        return out


def weighed_line(choice: list, top: int = 8) -> str:
    """A chosen step's candidates in one line, best first: 'unlock door swordfish 6.1
    (relevance 1.2, goal 2.0, need 2.0, memory 1.0, habit 0.0) | ...'."""
    parts = []
    for c in choice[:top]:
        why = ', '.join(f'{k} {c[k]:.1f}' for k in ('relevance', 'value', 'goal', 'need',
                                                    'memory', 'intent', 'habit', 'pain')
                        if isinstance(c.get(k), (int, float)) and c.get(k))
        parts.append(f'{c.get("phrase", "?")} {c.get("total", 0.0):.1f} ({why})')
    return ' | '.join(parts)


class SimulationBridge:
    """One AUT, in-process. Not thread-safe for concurrent send_message; inject_pain may come
    from another thread while a turn runs (it is queued into that turn).

    The Mind is built once, here, with this bridge's ports: `_world_port` (the text world:
    the role's tools and the imagined scene), `_mind_memory`, `_body` and `_mind_config`.
    The robot world (RobotBridge) gives other ports through the same four; the turn is the
    Mind's runtime's, the one the robot runs."""

    def __init__(self, backend: Backend, *, goal: str = '',
                 config: BridgeConfig = BridgeConfig(), memories: Iterable[str] = (),
                 entities: Mapping[str, Mapping[str, Any]] | None = None,
                 allowed_tools: Iterable[str] | None = None,
                 review: Callable[[ToolRun, str], dict] | None = None,
                 workspace: str | None = None,
                 grammar_for: Callable[[dict], str] | None = None,
                 index: ComponentIndex | None = None, name: str = 'aut',
                 on_thought: Callable | None = None, memory_port: Any = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.config = config
        self.goal = goal
        self.name = name
        self.clock, self._sleep = clock, sleep
        self.on_thought = on_thought
        self.t0 = clock()
        self._own_workspace = workspace is None
        self.workspace = workspace or tempfile.mkdtemp(prefix=f'maxim-{self.KIND}-{name}-')
        self.memory = SimMemory(EnergyBudget(clock=clock), clock=clock)
        # The robot's own memory system (a MemoryPort with `capture(episode)`), when the
        # composing package gives one: the Mind's enrichment and the introspection tools ask
        # it, and every episode is captured there too. The session memory keeps what only a
        # narrative has (seeded lines, pain inhibition, the narrative recall tool).
        self.memory_port = memory_port
        for text in memories:
            self.memory.seed(text)
            if memory_port is not None:
                memory_port.capture(EpisodeRecord(uuid.uuid4().hex, run_id=name,
                                                  perception=text, mode='seed',
                                                  outcome='remembered', success=True))
        self.fear = None
        self._review = review
        self._deadline = float('inf')
        try:
            self._setup_tools(entities, allowed_tools, index)
            if self._review is None:
                self.fear = FearAgent(FearConfig(mode=config.mode, sandbox_root=self.workspace))
                self._review = self._fear_review
            # The same Mind the robot runs, with this world's ports.
            self.mind = Mind(self._mind_config(allowed_tools, grammar_for), model=backend,
                             memory=self._mind_memory(), fear=self, body=self._body(),
                             events=_BridgeEvents(self), world=self._world_port(),
                             clock=clock, robot_clock=clock)
        except ValueError:
            if self.fear is not None:
                self.fear.close()
            if self._own_workspace:
                shutil.rmtree(self.workspace, ignore_errors=True)
            raise
        self.registry, self.scope = self.mind.tools.registry, self.mind.tools.scope
        self.executor = self.mind.tools.executor
        self.deliberator = self.mind.deliberator
        self.enrichment = self.mind.enrichment
        self.turn = 0
        self.actions: list[ActionRecord] = []
        self.turns: list[TurnResult] = []
        self.closed = False
        self._inbox: deque = deque()
        self._busy = False
        self._lock = threading.Lock()
        self._verdicts: dict[str, dict] = {}

    KIND = 'sim'       # the workspace's prefix

    def _setup_tools(self, entities, allowed_tools, index) -> None:
        """The role's registry: robot tools out, the narrative tools and the scene in."""
        config = self.config
        self.registry = build_tool_registry(
            mode=config.mode, root=self.workspace,
            query=self.memory_port.query if self.memory_port is not None
            else self.memory.query)
        for tool_name in SIM_DEREGISTERED + SIM_REPLACED:
            if tool_name in self.registry:
                self.registry.unregister(tool_name)
        self.registry.descriptions.update(NARRATIVE_DESCRIPTIONS)
        for tool_name in SIM_DEREGISTERED:
            if tool_name not in NARRATIVE_DESCRIPTIONS:
                self.registry.descriptions.pop(tool_name, None)
        for tool_name, entry in list(self.registry.descriptions.items()):
            self.registry.descriptions[tool_name] = without_example(entry)
        self.scope = ToolScope(self.registry, cap=config.scope_cap)
        self.scene = Scene(self.scope, index, overrides=entities)
        for t in narrative_tools(self.scene, self.memory, self.active_tools):
            self.registry.register(t)
        self.allowed = None if allowed_tools is None else set(allowed_tools)
        if self.allowed is not None:
            unknown = self.allowed - set(self.registry.names())
            if unknown:
                raise ValueError(f'allowed_tools names unknown tools: {sorted(unknown)}; '
                                 f'the AUT has {self.registry.names()}')
        self.memory.is_physical = lambda tool: tool in self.scene.physical_tools
        self.memory.handlers['concept_query'] = self._concepts

    def _mind_config(self, allowed_tools, grammar_for) -> MindConfig:
        config = self.config
        return MindConfig(
            mode=config.mode, simulation=True, goal=self.goal, body=SIM_BODY,
            response_format=SIM_RESPONSE_FORMAT, run_id=self.name, loop_mode='simulation',
            workspace_root=self.workspace, enrichment_budget_s=1.0,
            deliberation=bridge_deliberation(config), use_grammar=grammar_for is not None,
            energy_token_budget=0, systems_off=bridge_systems_off(config))

    def _mind_memory(self) -> Any:
        return self.memory_port if self.memory_port is not None else self.memory

    def _body(self) -> Any:
        return None          # a text world has no body

    def _world_port(self) -> WorldPort:
        return TextWorld(self)

    def sleep(self, seconds: float) -> None:
        """Time passes in the session (the injected wait)."""
        self._sleep(seconds)

    # -- the AUT's tools ---------------------------------------------------------------------
    def _in_scope(self, tool) -> bool:
        return (self.allowed is None or tool.name in self.allowed
                or self.scope.is_scene_tool(tool.name))

    def active_tools(self) -> list:
        """The tools in scope now: the role's whitelist plus the scene's entity tools."""
        return [t for t in self.scope.active_tools() if self._in_scope(t)]

    def active_names(self) -> list[str]:
        return [t.name for t in self.active_tools()]

    # -- the Mind's ports ---------------------------------------------------------------
    def scene_hint(self) -> str:
        """The actions the imagined scene offers, named next to the percept: the manifest
        is far up the prompt, and a small model otherwise reaches for the generic tools."""
        scene = sorted(t.name for t in self.active_tools() if self.scope.is_scene_tool(t.name))
        return f'What this scene lets you do: {", ".join(scene)}' if scene else ''

    def _fear_review(self, run: ToolRun, context: str) -> dict:
        return self.fear.review(run.tool, run.args, context, run.introspection).as_dict()

    def review(self, run: ToolRun, context: str) -> dict:
        """The fear port: pain inhibition of bodily actions, then the fear review."""
        why = self.memory.inhibition(run.tool)
        if why is not None:
            verdict = {'allowed': False, 'reason': why, 'layer': 0, 'layer_name': 'pain'}
        else:
            verdict = dict(self._review(run, context))
        self._verdicts[run.call_id] = verdict
        return verdict

    # -- driving -----------------------------------------------------------------------------
    def send_message(self, text: str, timeout: float | None = None,
                     source: str = 'cli') -> TurnResult:
        """Inject a percept and wait until the AUT has settled (or the timeout)."""
        if self.closed:
            raise SimulationClosed(f'simulation {self.name!r} is finished')
        if not isinstance(text, str) or not text.strip():
            raise ValueError('send_message needs a non-empty text')
        timeout = self.config.timeout_s if timeout is None else float(timeout)
        if timeout <= 0:
            raise ValueError(f'timeout must be > 0, got {timeout}')
        with self._lock:
            if self._busy:
                raise RuntimeError('the AUT is already handling a message')
            self._busy = True
        try:
            self.turn += 1
            result = TurnResult(self.turn, text, source, started_s=self.clock() - self.t0)
            result.imagined = self._imagine(text)
            pending = deque([self._percept(text, source)])
            self._run_turn(result, pending, timeout)
            self.turns.append(result)
            return result
        finally:
            with self._lock:
                self._busy = False

    def _imagine(self, text: str) -> list[str]:
        """The entities a message brings into the imagined scene (their ids)."""
        return [e.entity_id for e in self.scene.observe(text)]

    def _percept(self, text: str, source: str) -> Percept:
        """A message as the percept the AUT hears."""
        return Percept(text, uuid.uuid4().hex[:12], source)

    def _arrivals(self) -> list[Percept]:
        """Percepts the world produced on its own since the last look (none in a text
        world: only messages and results speak to the AUT)."""
        return []

    def _run_turn(self, result: TurnResult, pending: deque, timeout: float) -> None:
        """The Mind's turn (Runtime.turn) on the session's clock: every line is thought
        about, each act's result comes back as the next percept, and what arrives meanwhile
        (pain injected, the world's own percepts) joins the turn."""
        cfg = self.config
        start = self.clock()
        self._deadline = start + timeout      # a model call still running then is cancelled
        said = []

        def arrivals() -> list[Percept]:
            with self._lock:
                out = list(self._inbox)
                self._inbox.clear()
            return out + self._arrivals()

        def on_step(step) -> None:
            self._note_step(result, step.loop, said)

        end = self.mind.runtime.turn(
            pending.popleft() if pending else None, force=True,
            budget=cfg.max_actions_per_turn, timeout_s=timeout, settle_s=cfg.settle_s,
            poll_s=cfg.poll_s, arrivals=arrivals, on_step=on_step, clock=self.clock,
            sleep=self.sleep)
        result.steps = end.steps
        result.settled, result.timed_out = end.settled, end.timed_out
        result.budget_exhausted = end.budget_exhausted
        result.response = ' / '.join(said)
        result.duration_s = self.clock() - start

    def _note_step(self, result: TurnResult, step, said: list) -> None:
        """What one pass of the turn shows the orchestrator."""
        if step.decision.reasoning:
            result.thoughts.append(step.decision.reasoning)
        weighed = self._weighed()
        if weighed:
            result.choices.append(weighed)
        if step.decision.status in FAILED_STATUSES:
            result.failures.append(step.decision.status)
        if step.run is None:
            return
        record = self._action(step.run, result.turn)
        result.actions.append(record)
        data = step.run.data
        if record.success and data.get('text') and record.tool in ('say', 'respond'):
            said.append(data['text'])
        if record.success and data.get('question'):
            result.questions.append(data['question'])
            said.append(data['question'])

    def _weighed(self) -> str:
        """The last deliberation's weighed candidates (deciding by choosing), one line."""
        result = self.mind.last_result
        thoughts = getattr(result, 'thoughts', None) or []
        choice = next((t.choice for t in reversed(thoughts) if getattr(t, 'choice', None)),
                      None)
        return weighed_line(choice) if choice else ''

    def _action(self, run: ToolRun, turn: int) -> ActionRecord:
        verdict = self._verdicts.pop(run.call_id, {})
        record = ActionRecord(len(self.actions) + 1, turn, run.tool, dict(run.args),
                              run.requested_name, run.success, run.blocked, run.blocked_reason,
                              verdict.get('layer_name', '') if run.blocked else '',
                              run.output, run.error_msg, self.clock() - self.t0)
        self.actions.append(record)
        return record

    # -- orchestrator-facing -----------------------------------------------------------------
    def inject_pain(self, pain_type: str, intensity: float,
                    timeout: float | None = None) -> TurnResult | None:
        """A body signal: stored as pain (inhibiting bodily actions while strong) and felt
        as a percept. While a turn is running it joins that turn and None is returned."""
        if not isinstance(pain_type, str) or not pain_type.strip():
            raise ValueError('pain_type must be a non-empty string')
        intensity = float(intensity)
        self.memory.add_pain({'type_name': pain_type, 'intensity': intensity,
                              'source': 'orchestrator',
                              'description': f'injected {pain_type} pain'})
        text = pain_text(pain_type, intensity)
        with self._lock:
            if self._busy:
                self._inbox.append(Percept(text, uuid.uuid4().hex[:12], 'proprioception'))
                return None
        return self.send_message(text, timeout, source='proprioception')

    def extend(self, goal: str) -> None:
        """A new objective; the AUT keeps its history and memory."""
        if not isinstance(goal, str) or not goal.strip():
            raise ValueError('a goal must be a non-empty text')
        self.goal = goal
        self.mind.goal = goal

    def observe_actions(self, since_turn: int = 0) -> list[dict]:
        if since_turn < 0:
            raise ValueError('since_turn must be >= 0')
        return [a.as_dict() for a in self.actions if a.turn >= since_turn]

    def inspect(self, query: str, params: Mapping | None = None) -> dict:
        """Read-only access to the AUT's introspection queries."""
        if query not in INSPECT_QUERIES:
            raise ValueError(f'unknown inspect query {query!r}; one of '
                             f'{", ".join(INSPECT_QUERIES)}')
        fields = dict(params or {})
        fields.setdefault('limit', 5)
        if query == 'memory_recall' and 'expand' not in fields:
            fields['expand'] = True
        return json.loads(json.dumps(self.memory.query(query, fields), default=str))

    def _concepts(self, fields: dict) -> dict:
        name = str(fields.get('name', '')).lower()
        out = []
        for scene_id, ents in self.scene.scenes.items():
            for ent in ents.values():
                if name and name not in (ent.entity_id, ent.phrase) and \
                        name not in ent.component.aliases:
                    continue
                out.append({'concept': ent.entity_id, 'category': ent.component.category,
                            'scene': scene_id, 'phrase': ent.phrase,
                            'relationships': [f'{ent.entity_id} CAN {c}'
                                              for c in ent.component.capabilities]})
        return {'concepts': out[:int(fields.get('limit', 5))], 'total': len(out)}

    def stats(self) -> dict:
        return {'name': self.name, 'turns': self.turn, 'actions': len(self.actions),
                'blocked': sum(1 for a in self.actions if a.blocked),
                'entities': sorted(self.scene.entities), 'memory': self.memory.stats()}

    def close(self, grace_s: float = 2.0) -> dict:
        """Shut the AUT down: queued percepts get `grace_s` to be handled, then it stops."""
        if self.closed:
            return {'closed': True, 'already': True, 'drained': 0, 'dropped': 0}
        drained = dropped = 0
        deadline = self.clock() + max(0.0, grace_s)
        self._deadline = deadline
        while self._inbox:
            percept = self._inbox.popleft()
            if self.clock() >= deadline:
                dropped += 1 + len(self._inbox)
                self._inbox.clear()
                break
            step = self.mind.step(percept, force=True).loop
            if step.run is not None:
                self._action(step.run, self.turn)
            drained += 1
        self.closed = True
        self.mind.close()
        if self.fear is not None:
            self.fear.close()
        if self._own_workspace:
            shutil.rmtree(self.workspace, ignore_errors=True)
        return {'closed': True, 'already': False, 'drained': drained, 'dropped': dropped,
                **self.stats()}


def bridge_deliberation(config: BridgeConfig) -> DeliberationConfig:
    """The deliberation settings `sim.aut.*` give the Mind."""
    return DeliberationConfig(max_cycles=config.max_cycles, max_tokens=config.max_tokens,
                              temperature=config.temperature, seed=config.seed,
                              retries=config.retries, llm_timeout_s=config.llm_timeout_s)


def bridge_systems_off(config: BridgeConfig) -> frozenset:
    return frozenset() if config.recall_in_prompt > 0 else frozenset({'hippocampus'})


class TextWorld(WorldPort):
    """The text world's port: the role's tools and the imagined scene's (the world decides
    which are in scope), the scene's actions named beside the percept, its entities, and the
    session's deadline and clock."""

    def __init__(self, bridge: SimulationBridge):
        self.bridge = bridge
        self.registry, self.scope = bridge.registry, bridge.scope

    def allows(self, tool) -> bool:
        return self.bridge._in_scope(tool)

    def hint(self) -> str:
        return self.bridge.scene_hint()

    def entities(self) -> list[dict]:
        """The scene's entities as the Mind knows them: the world's name, and the word the
        scene used for it ("the gate" was imagined as a door)."""
        return [{'name': e.entity_id, 'called': (e.phrase.split() or [''])[-1]}
                for e in self.bridge.scene.entities.values()]

    def cancelled(self) -> bool:
        return self.bridge.clock() >= self.bridge._deadline

    def sleep(self, seconds: float) -> None:
        self.bridge.sleep(seconds)


class _BridgeEvents(EventSink):
    """The AUT's episodes go to its session memory (with the turn's goal)."""

    def __init__(self, bridge: SimulationBridge):
        self.bridge = bridge

    def episode(self, episode: EpisodeRecord) -> None:
        self.bridge.memory.add_episode(dict(episode.as_dict(), goal=self.bridge.goal))
        if self.bridge.memory_port is not None:
            self.bridge.memory_port.capture(episode)

    def thought(self, thought) -> None:
        if self.bridge.on_thought is not None:
            self.bridge.on_thought(thought)
