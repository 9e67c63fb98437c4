"""The records of one pass of the mind: perceive -> decide -> act -> record.

A `Percept` is what the Mind thinks about, a `Decision` what deliberation concluded, a
`ToolRun` an act and what became of it, a `LoopResult` the whole pass. The pass itself is
`maxim_core.mind.mind.Mind.step`, its act `maxim_core.mind.act.Act`.

Every pass names its situation with one short key (`context_key`): the fear gate asks the
NAc for a prediction under that key, and the episode carries it so memory's NAc learns the
outcome under the same key. What is learned is what is asked.
"""

from dataclasses import dataclass, field
import re


@dataclass
class Percept:
    """What the agent deliberates on (maps onto maxim_interfaces/Percept)."""

    narrative: str
    percept_id: str = ''
    source: str = 'vision'
    objects: list = field(default_factory=list)    # labels
    people: list = field(default_factory=list)     # labels or names
    novelty: float = 0.0
    salience: float = 0.0


def context_key(percept: Percept, goal: str = '') -> str:
    """The situation a tool outcome is learned and predicted under (the NAc's context key).

    What is in view names the situation: up to three object labels, lower case, sorted,
    joined by '+' (memory's own rule for episodes that carry no key). With nothing in view,
    the goal's words; with no goal either, 'none'.
    """
    labels = sorted({str(o).strip().lower() for o in percept.objects if str(o).strip()})
    if labels:
        return '+'.join(labels[:3])
    words = re.findall(r'[a-z0-9]+', goal.lower())
    return '_'.join(words) or 'none'


@dataclass
class Decision:
    """What deliberation concluded (the last thought of a deliberation)."""

    status: str                      # 'ready', 'converged', 'cycle_cap', 'gated', or a failure
    reasoning: str = ''
    action: dict | None = None       # {"tool": name, "args": {...}} or None
    cycles: int = 0
    confidence: float = 0.0
    deliberation_id: str = ''


@dataclass
class ToolRun:
    """A tool call and what became of it (maps onto ToolCall + ToolResult)."""

    call_id: str
    tool: str
    args: dict
    requested_name: str = ''
    introspection: bool = False
    context: str = ''            # the situation's NAc key (context_key)
    success: bool = False
    output: str = ''
    blocked: bool = False
    blocked_reason: str = ''
    blocked_layer: int = 0
    verified: bool = False
    verification: str = ''
    error_code: int = 0          # ToolResult.ERROR_* values
    error_msg: str = ''
    duration_s: float = 0.0
    data: dict = field(default_factory=dict)   # the tool's structured output


@dataclass
class LoopResult:
    """One pass of the loop."""

    percept: Percept
    decision: Decision
    run: ToolRun | None
    episode: dict | None


# Decision statuses that mean the mind did not produce a usable decision.
FAILED_STATUSES = ('timeout', 'model_error', 'unparsable', 'cancelled')
