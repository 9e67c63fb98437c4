"""The robot-world agent under test: the robot's own Mind, tools and body in a simulated world.

Where the SimulationBridge gives the Mind a narrative world (imagined entities and their
actions), the RobotBridge gives it the robot's own ports: the robot's tool registry (move,
track_target, focus_interests, novelty_track, respond, memory_recall, predict_outcome,
scene_summary, ...), a body that is the world's simulated pan/tilt head, and percepts in the
shape the attention and agent nodes give it on the robot. The world (a `RobotWorldPort`) is
composed outside this package (maxim_eval.robot_world, over maxim_perception's attention
and head controller); this module only drives it: every wait advances the world's time, and
what the world produces on its own (a view that changed, pain from the head) reaches the
Mind as a percept between its passes.

Memory is the robot's memory system when the runner gives a port (a memory node per agent),
else the session memory; the fear port is the bridge's (pain inhibition of bodily actions,
then the FearAgent's review). A turn is a person's line, a pain, or a world event (an object
shown, hidden or moved, time passing); the turn ends as the bridge's do (settled, budget,
timeout).
"""

from collections import deque
import time
from typing import Any, Callable, Iterable, Mapping, Protocol
import uuid

from maxim_core.agent.loop import Percept
from maxim_core.llm.backend import Backend
from maxim_core.mind import DEFAULT_ACTIVE, HeadGoalCommand, MindConfig, WorldPort
from maxim_eval.scenario.bridge import (bridge_deliberation, bridge_systems_off, BridgeConfig,
                                        pain_text, SimulationBridge, SimulationClosed,
                                        TurnResult)

# The tools that move the body: strong recent pain inhibits them (the fear port).
BODY_TOOLS = frozenset({'move', 'track_target', 'focus_interests', 'novelty_track'})
# World events a scenario turn may carry (and wait_s: time passes first).
WORLD_EVENTS = ('show', 'hide', 'place', 'wait_s')


class RobotWorldPort(Protocol):
    """What the RobotBridge needs of a simulated world: the Mind's BodyPort, and the rest."""

    pan_limits: tuple[float, float]     # the head's joint limits (rad)
    tilt_limits: tuple[float, float]

    def head_position(self) -> tuple[float, float] | None: ...

    def send_head_goal(self, goal: HeadGoalCommand) -> None: ...

    def advance(self, now: float) -> None:
        """Run the world (head control, camera frames, attention) up to `now`."""

    def view_percept(self) -> Percept | None:
        """The view as a vision percept when it changed since the last one and the head is
        still, else None."""

    def speech_percept(self, text: str) -> Percept:
        """A line a person says, as the percept the agent hears."""

    def pop_pain(self) -> list[dict]:
        """Pain since the last call: {type_name, intensity, description}."""

    def scene_summary(self, fields: dict) -> dict:
        """The scene_summary query's answer."""

    def event(self, event: Mapping) -> str:
        """Apply a world event (show / hide / place); a line saying what changed."""

    def check(self, spec: Mapping, since: float) -> tuple[bool, str]:
        """A body criterion over what happened since `since` (world clock): (met, why)."""


class _RobotMemory:
    """The Mind's memory port in the robot world: scene_summary is perception's (the
    world's attention), every other query memory's (the robot's memory system or the
    session memory), as the agent node routes them on the robot."""

    def __init__(self, memory: Any, world: RobotWorldPort):
        self.memory, self.world = memory, world

    def query(self, name: str, fields: dict, timeout_s: float = 2.0) -> dict | None:
        if name == 'scene_summary':
            return self.world.scene_summary(dict(fields))
        return self.memory.query(name, fields, timeout_s)


class _Head:
    """The Mind's body port on the world's head, with its joint limits (a move is checked
    against them)."""

    def __init__(self, world: RobotWorldPort):
        self.world = world
        self.limits = {'pan': world.pan_limits, 'tilt': world.tilt_limits}

    def head_position(self) -> tuple[float, float] | None:
        return self.world.head_position()

    def send_head_goal(self, goal: HeadGoalCommand) -> None:
        self.world.send_head_goal(goal)


class _RobotWorld(WorldPort):
    """The robot world's port: no tools of its own (the robot's are), the session's deadline,
    and time that passes on the world's clock (a move is checked as the head settles on it:
    on simulated time a wall-clock wait would see a head that never moves)."""

    def __init__(self, bridge: 'RobotBridge'):
        self.bridge = bridge

    def cancelled(self) -> bool:
        return self.bridge.clock() >= self.bridge._deadline

    def sleep(self, seconds: float) -> None:
        self.bridge.sleep(seconds)


class RobotBridge(SimulationBridge):
    """One robot-world AUT, in-process. The session, the Mind's construction and the turn
    are the SimulationBridge's; the ports are the robot's: its own tools, the world's head
    as the body, perception's scene_summary, and the world's clock for every wait."""

    KIND = 'robot'

    def __init__(self, backend: Backend, world: RobotWorldPort, *, goal: str = '',
                 config: BridgeConfig = BridgeConfig(), memories: Iterable[str] = (),
                 allowed_tools: Iterable[str] | None = None,
                 grammar_for: Callable[[dict], str] | None = None, name: str = 'aut',
                 on_thought: Callable | None = None, memory_port: Any = None,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self.world = world
        super().__init__(backend, goal=goal, config=config, memories=memories,
                         allowed_tools=allowed_tools, grammar_for=grammar_for, name=name,
                         on_thought=on_thought, memory_port=memory_port, clock=clock,
                         sleep=sleep)
        self.world.advance(clock())

    # -- the robot's ports ------------------------------------------------------------------
    def _setup_tools(self, entities, allowed_tools, index) -> None:
        """The robot's own tools (the Mind builds its catalog); strong pain inhibits the
        ones that move the body."""
        self.allowed = None
        self.memory.is_physical = lambda tool: tool in BODY_TOOLS

    def _mind_config(self, allowed_tools, grammar_for) -> MindConfig:
        config = self.config
        return MindConfig(
            mode=config.mode, simulation=True, goal=self.goal, run_id=self.name,
            loop_mode='simulation', workspace_root=self.workspace,
            active_tools=DEFAULT_ACTIVE if allowed_tools is None else tuple(allowed_tools),
            enrichment_budget_s=1.0, deliberation=bridge_deliberation(config),
            use_grammar=grammar_for is not None, energy_token_budget=0,
            systems_off=bridge_systems_off(config))

    def _mind_memory(self) -> Any:
        return _RobotMemory(super()._mind_memory(), self.world)

    def _body(self) -> Any:
        return _Head(self.world)

    def _world_port(self) -> WorldPort:
        return _RobotWorld(self)

    # -- time: every wait is world time ---------------------------------------------------
    def sleep(self, seconds: float) -> None:
        self._sleep(seconds)
        self.world.advance(self.clock())

    # -- the Mind's tools and percepts ------------------------------------------------------
    def active_tools(self) -> list:
        return self.mind.tools.now()

    def scene_hint(self) -> str:
        return ''

    def _imagine(self, text: str) -> list[str]:
        return []

    def _percept(self, text: str, source: str) -> Percept:
        """A message is a person speaking to the robot (as the panel's line is)."""
        return self.world.speech_percept(text)

    def _arrivals(self) -> list[Percept]:
        """Pain from the head, then the view when it changed (the world runs up to now)."""
        self.world.advance(self.clock())
        out = []
        for pain in self.world.pop_pain():
            self.memory.add_pain({'type_name': pain['type_name'],
                                  'intensity': float(pain['intensity']), 'source': 'head',
                                  'description': pain.get('description', '')})
            out.append(Percept(f'{pain_text(pain["type_name"], pain["intensity"])} '
                               f'({pain.get("description", "")})'.strip(),
                               uuid.uuid4().hex[:12], 'body', salience=float(
                                   pain['intensity'])))
        view = self.world.view_percept()
        if view is not None:
            out.append(view)
        return out

    # -- orchestrator-facing ----------------------------------------------------------------
    def world_event(self, event: Mapping, timeout: float | None = None) -> TurnResult:
        """A change in the world (shown, hidden or moved objects; `wait_s`: time passes
        first), then the AUT responds to what it now perceives, as after a message."""
        if self.closed:
            raise SimulationClosed(f'simulation {self.name!r} is finished')
        if not isinstance(event, Mapping) or not event or set(event) - set(WORLD_EVENTS):
            raise ValueError(f'a world event has some of {", ".join(WORLD_EVENTS)}: {event!r}')
        timeout = self.config.timeout_s if timeout is None else float(timeout)
        with self._lock:
            if self._busy:
                raise RuntimeError('the AUT is already handling a message')
            self._busy = True
        try:
            started = self.clock() - self.t0
            wait = float(event.get('wait_s', 0.0))
            if not wait >= 0:
                raise ValueError(f'wait_s must be >= 0, got {wait}')
            if wait:
                self.sleep(wait)
            change = self.world.event({k: v for k, v in event.items() if k != 'wait_s'})
            self.turn += 1      # a turn once the event happened (a bad one is no turn)
            result = TurnResult(self.turn, change or f'{wait:g} s pass', 'world',
                                started_s=started)
            self._run_turn(result, deque(), timeout)
            self.turns.append(result)
            return result
        finally:
            with self._lock:
                self._busy = False

    def check_body(self, spec: Mapping) -> tuple[bool, str]:
        """A body criterion from turn `since_turn` (1-based; default the first) on, to the
        end of turn `until_turn` (default: the end of the run)."""
        since_turn = int(spec.get('since_turn', 1))
        if not 1 <= since_turn <= max(1, len(self.turns)):
            return False, f'since_turn {since_turn} names no turn of this run'
        since = self.t0 + (self.turns[since_turn - 1].started_s if self.turns else 0.0)
        until_turn = int(spec.get('until_turn', 0))
        if until_turn and not since_turn <= until_turn <= max(1, len(self.turns)):
            return False, f'until_turn {until_turn} names no turn from since_turn on'
        until = self.t0 + self.turns[until_turn].started_s \
            if until_turn and until_turn < len(self.turns) else None
        return self.world.check({k: v for k, v in spec.items() if k != 'until_turn'},
                                since, until)

    def stats(self) -> dict:
        return {'name': self.name, 'turns': self.turn, 'actions': len(self.actions),
                'blocked': sum(1 for a in self.actions if a.blocked),
                'head': self.world.head_position(), 'memory': self.memory.stats()}
