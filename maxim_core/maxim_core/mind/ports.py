"""The Mind's ports and the typed records that leave it.

A port is the small protocol through which the Mind reaches something outside itself: the
model, memory, the fear gate, the body, the world around it, and whoever listens to what it
does. The agent node implements them over ROS; the scenario runner with a text world or a
simulated robot world and the robot's memory; tests with plain objects. Nothing here imports
rclpy or a message type, and no answer reaches the core as JSON text: the node's clients
parse a service's `result_json` into `result` (maxim_core.nodes.clients.ServiceQuery).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
import time
from typing import Any, Mapping, Protocol, runtime_checkable


@runtime_checkable
class ModelPort(Protocol):
    """The language model (maxim_core.llm.backend.Backend is one)."""

    n_ctx: int

    def complete(self, prompt: str, **kwargs: Any) -> Any: ...

    def tokenize(self, text: str) -> list[int]: ...


@runtime_checkable
class MemoryPort(Protocol):
    """Memory's read-only queries: `query(name, fields, timeout_s)` -> the answer as a dict,
    or None when memory is absent. Names: memory_recall, similarity_search, predict_outcome,
    causal_links, pain_history, temporal_patterns, concept_query, system_stats, enrich (and
    scene_summary, answered by perception)."""

    def query(self, name: str, fields: dict, timeout_s: float = 2.0) -> dict | None: ...


@dataclass(frozen=True)
class MemoryItem:
    """One line of an enrichment channel: what memory says, why it matched, and the numbers
    behind it (the values channel: {tool, value})."""

    text: str
    why: str = ''
    data: Mapping = field(default_factory=dict)


def answered(answer: dict | None) -> bool:
    """A memory answer the Mind can use: present, available and without an error."""
    return bool(answer) and bool(answer.get('available')) and not answer.get('error_code')


def channels_of(answer: dict | None) -> dict[str, list[MemoryItem]] | None:
    """The `enrich` query's channels as typed items (its parsed `result`), None when memory
    gave no usable answer."""
    if not answered(answer):
        return None
    channels = (answer.get('result') or {}).get('channels', {})
    return {name: [MemoryItem(str(i.get('text', '')), str(i.get('why', '')),
                              dict(i.get('data') or {})) for i in ch.get('items', [])]
            for name, ch in channels.items()}


@runtime_checkable
class FearPort(Protocol):
    """The fear gate: `review(run, context)` -> {allowed, layer, reason, ...}; run.context
    holds the situation's NAc key."""

    def review(self, run: Any, context: str) -> dict: ...


@runtime_checkable
class BodyPort(Protocol):
    """The head: where it is, and where to send it. A body may also carry `limits`
    ({'pan': (lo, hi), 'tilt': (lo, hi)} in rad), the joint limits a move is checked
    against: the URDF's (maxim_common.urdf), their one source, which the node reads and
    hands in. Without them the head controller's own clamp is the only check."""

    def head_position(self) -> tuple[float, float] | None: ...

    def send_head_goal(self, goal: 'HeadGoalCommand') -> None: ...


class WorldPort:
    """The world around the robot, beyond its body: what a text world or a scenario adds.

    The robot's own world adds nothing, and these defaults are it. A world with tools of
    its own (`registry`, `scope`: an imagined scene's) decides which of them are in scope
    (`allows`); `hint` is a line of context beside the percept, `entities` the things the
    world names (arguments may be made of them): each a name, or {'name': ..., 'called':
    the word the scene used for it}, `cancelled` ends a running
    deliberation (a scenario's deadline), and `sleep` is how time passes while the Mind
    waits on the world (a simulated world's clock advances)."""

    registry: Any = None
    scope: Any = None

    def allows(self, tool: Any) -> bool:
        return True

    def hint(self) -> str:
        return ''

    def entities(self) -> list:
        return []

    def cancelled(self) -> bool:
        return False

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


def _known(cls, values: dict) -> dict:
    """The entries of `values` that are fields of the dataclass `cls` (a message-shaped dict
    may carry more)."""
    names = {f.name for f in fields(cls)}
    return {k: v for k, v in values.items() if k in names}


@dataclass(frozen=True)
class HeadGoalCommand:
    """A head goal (maps onto maxim_interfaces/HeadGoal)."""

    goal_id: str
    requested_by: str
    mode: int
    pan: float = 0.0
    tilt: float = 0.0
    track_id: int = 0
    target_label: str = ''
    speed: float = 0.0
    duration_s: float = 0.0

    @classmethod
    def from_dict(cls, goal: dict) -> 'HeadGoalCommand':
        return cls(**_known(cls, goal))


@dataclass(frozen=True)
class PainReport:
    """Pain the Mind feels from its own failures (maps onto maxim_interfaces/PainSignal)."""

    pain_type: int
    type_name: str
    intensity: float
    source: str = ''
    context: str = ''
    description: str = ''
    repeat_count: int = 0

    @classmethod
    def from_dict(cls, signal: dict) -> 'PainReport':
        return cls(**_known(cls, signal))


@dataclass
class EpisodeRecord:
    """One pass of the mind, for memory (maps onto maxim_interfaces/Episode)."""

    episode_id: str
    run_id: str = ''
    perception: str = ''
    detected_objects: list = field(default_factory=list)
    detected_people: list = field(default_factory=list)
    salience: float = 0.0
    novelty: float = 0.0
    goal: str = ''
    mode: str = ''
    context_json: str = ''
    intent: str = ''
    reasoning: str = ''
    confidence: float = 0.0
    cycles: int = 0
    tool_name: str = ''
    arguments_json: str = ''
    success: bool = False
    valence: float = 0.0
    outcome: str = ''
    blocked: bool = False
    verified: bool = False
    error: str = ''
    duration_s: float = 0.0

    @classmethod
    def from_dict(cls, episode: dict) -> 'EpisodeRecord':
        return cls(**_known(cls, episode))

    def as_dict(self) -> dict:
        return asdict(self)


class EventSink:
    """What the Mind does, as it happens. Every method is a no-op here: a port overrides
    the ones it carries (the agent node publishes each on its topic)."""

    def thought(self, thought: Any) -> None:
        """A Thought (maxim_core.deliberation.thoughts.Thought) as it forms."""

    def forming(self, thought: Any) -> None:
        """A cycle's thought as soon as it is written (kind FORMING), before its decision:
        for whoever watches (the thoughts topic); the cycle's Thought follows."""

    def tool_call(self, run: Any) -> None:
        """A ToolRun about to be reviewed and run."""

    def tool_result(self, run: Any) -> None:
        """A ToolRun with its outcome."""

    def episode(self, episode: EpisodeRecord) -> None:
        """An episode for memory."""

    def pain(self, pain: PainReport) -> None:
        """Pain from a failed tool."""

    def head_goal(self, goal: HeadGoalCommand) -> None:
        """A head goal the Mind sent (also sent through the body port)."""

    def idle_event(self, status: Any) -> None:
        """An idle status (maxim_core.idle.eligibility.IdleStatus)."""

    def provenance(self, record: Any) -> None:
        """An idle cycle's provenance record."""

    def status(self, text: str) -> None:
        """A problem the Mind reports about itself (the model failed, a step failed)."""
