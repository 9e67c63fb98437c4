"""What a deliberation makes: its thoughts as they form (Thought.msg), the transcript of
them that the next cycle reads, kept within its token budget, and how the deliberation ended
(the codes of its outcomes, and the failures that end it).

Pure Python; no ROS.
"""

from dataclasses import dataclass, field
import json
from typing import Callable, Sequence

# Thought.msg KIND_* and STATUS_*.
KIND_DELIBERATION = 0
KIND_IDLE = 1
KIND_STATUS = 2
KIND_FORMING = 3        # the thought as soon as it is written, before the decision
STATUS_OK = 0
STATUS_TIMEOUT = 1
STATUS_MODEL_ERROR = 2
STATUS_UNPARSABLE = 3
STATUS_CANCELLED = 4
STATUS_GATED = 5

# Deliberation outcomes (the agent loop's Decision.status) and Deliberate.action codes.
READY = 'ready'
CONVERGED = 'converged'
CYCLE_CAP = 'cycle_cap'
GATED = 'gated'
OUT_TIMEOUT = 'timeout'
OUT_MODEL_ERROR = 'model_error'
OUT_UNPARSABLE = 'unparsable'
OUT_CANCELLED = 'cancelled'
RESULT_CODES = {'acted': 0, READY: 1, CONVERGED: 2, CYCLE_CAP: 3, GATED: 4, OUT_TIMEOUT: 5,
                OUT_MODEL_ERROR: 6, OUT_UNPARSABLE: 7, OUT_CANCELLED: 8}
_STATUS_OF = {OUT_TIMEOUT: STATUS_TIMEOUT, OUT_MODEL_ERROR: STATUS_MODEL_ERROR,
              OUT_UNPARSABLE: STATUS_UNPARSABLE, OUT_CANCELLED: STATUS_CANCELLED,
              GATED: STATUS_GATED}
STATUS_NAMES = {STATUS_OK: 'OK', STATUS_TIMEOUT: 'TIMEOUT', STATUS_MODEL_ERROR: 'MODEL_ERROR',
                STATUS_UNPARSABLE: 'UNPARSABLE', STATUS_CANCELLED: 'CANCELLED',
                STATUS_GATED: 'GATED'}


@dataclass
class Thought:
    """One thought as it forms (Thought.msg)."""

    deliberation_id: str
    cycle: int
    max_cycles: int
    text: str = ''
    kind: int = KIND_DELIBERATION
    status: int = STATUS_OK
    status_msg: str = ''
    salience: float = 0.0
    enriched_by: list[str] = field(default_factory=list)
    experience: str = ''
    skipped: dict[str, str] = field(default_factory=dict)   # provider -> why (not in msg)
    ready_to_act: bool = False
    converged: bool = False
    jaccard_previous: float = 0.0
    action: dict | None = None
    enrichment_s: float = 0.0
    llm_s: float = 0.0
    cycle_s: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    attempts: int = 0
    choice: list = field(default_factory=list)    # candidates weighed, best first
    why: str = ''               # why the choice won, in words (why.why_chosen)

    @property
    def action_json(self) -> str:
        return json.dumps(self.action, sort_keys=True) if self.action else ''

    @property
    def choice_json(self) -> str:
        return json.dumps(self.choice, sort_keys=True) if self.choice else ''


@dataclass
class TranscriptEntry:
    """One transcript entry (TranscriptEntry.msg)."""

    cycle: int
    thought: str
    experience: str = ''
    tokens: int = 0

    def render(self) -> str:
        text = f'[Cycle {self.cycle}] You thought: {self.thought}'
        if self.experience:
            text += f'\nYour experience responded:\n{self.experience}'
        return text


@dataclass
class DeliberationResult:
    """How a deliberation ended (Deliberate.action result)."""

    status: str                 # READY, CONVERGED, CYCLE_CAP, GATED or a failure outcome
    deliberation_id: str
    status_msg: str = ''
    cycles: int = 0
    reasoning: str = ''
    action: dict | None = None
    thoughts: list[Thought] = field(default_factory=list)
    transcript: list[TranscriptEntry] = field(default_factory=list)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    inference_s: float = 0.0

    @property
    def failed(self) -> bool:
        return self.status in (OUT_TIMEOUT, OUT_MODEL_ERROR, OUT_UNPARSABLE, OUT_CANCELLED)

    @property
    def code(self) -> int:
        return RESULT_CODES[self.status]

    @property
    def action_json(self) -> str:
        return json.dumps(self.action, sort_keys=True) if self.action else ''

    @property
    def confidence(self) -> float:
        """How the deliberation ended, not a probability: ready 1, converged its Jaccard,
        cycle cap 0.5, failures and gated 0."""
        if self.status == READY:
            return 1.0
        if self.status == CONVERGED and self.thoughts:
            return float(self.thoughts[-1].jaccard_previous)
        return 0.5 if self.status == CYCLE_CAP else 0.0


def fit_transcript(entries: Sequence[TranscriptEntry], budget: int,
                   count_tokens: Callable[[str], int]) -> tuple[list[TranscriptEntry], int]:
    """Keep the newest entries within `budget` tokens, oldest dropped first.

    The newest entry is kept even alone over budget, shortened (experience first, then the
    thought, by words) so the model always sees where its last thought went.
    Returns (kept, dropped count).
    """
    kept: list[TranscriptEntry] = []
    total = 0
    for entry in reversed(entries):
        entry.tokens = int(count_tokens(entry.render()))
        if total + entry.tokens > budget:
            if not kept and budget > 0:
                kept.append(_shorten(entry, budget, count_tokens))
            break
        kept.append(entry)
        total += entry.tokens
    kept.reverse()
    return kept, len(entries) - len(kept)


def _longest(n: int, fits: Callable[[int], bool]) -> int:
    """The largest k in 0..n with fits(k) (fits is monotone: true up to some k)."""
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


def _shorten(entry: TranscriptEntry, budget: int,
             count_tokens: Callable[[str], int]) -> TranscriptEntry:
    t_words, e_words = entry.thought.split(' '), entry.experience.split(' ')

    def make(nt: int, ne: int) -> TranscriptEntry:
        thought = ' '.join(t_words[:nt]) + (' ...' if nt < len(t_words) else '')
        experience = (' '.join(e_words[:ne]) + (' ...' if ne < len(e_words) else '')
                      if ne else '')
        return TranscriptEntry(entry.cycle, thought, experience)

    def fits(nt: int, ne: int) -> bool:
        return count_tokens(make(nt, ne).render()) <= budget

    if fits(len(t_words), 0):
        out = make(len(t_words), _longest(len(e_words), lambda k: fits(len(t_words), k)))
    else:
        out = make(_longest(len(t_words), lambda k: fits(k, 0)), 0)
    out.tokens = int(count_tokens(out.render()))
    return out


class _CannotScore(Exception):
    """The backend refused to score: this deliberator decides by generating instead."""


class _Failure(Exception):
    def __init__(self, outcome: str, message: str):
        super().__init__(message)
        self.outcome = outcome
        self.message = message
