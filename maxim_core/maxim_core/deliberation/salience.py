"""Computed salience of thoughts, and the working-memory set they live in (seed 000).

A thought is salient when memory answered it strongly and it says something new:
0.3 x sections (how many bio-systems answered) + 0.3 x recall depth (how many memories came
back) + 0.4 x novelty (1 - word Jaccard with the previous thought).
"""

from dataclasses import dataclass, field
import itertools
import re
import time
from typing import Callable

_WORD = re.compile(r'[a-z0-9]+(?:\'[a-z]+)?')

W_SECTIONS = 0.3
W_RECALL = 0.3
W_NOVELTY = 0.4


def words(text: str) -> frozenset[str]:
    """The lower-case word set of `text` (punctuation ignored)."""
    return frozenset(_WORD.findall(text.lower()))


def jaccard(a: str, b: str) -> float:
    """Word Jaccard similarity in 0..1; two empty texts are identical (1.0)."""
    wa, wb = words(a), words(b)
    if not wa and not wb:
        return 1.0
    return len(wa & wb) / len(wa | wb)


def thought_salience(sections: int, memories: int, jaccard_previous: float | None,
                     max_sections: int = 4, max_memories: int = 5) -> float:
    """0.3 sections + 0.3 recall depth + 0.4 novelty, each part saturating at its max.

    `jaccard_previous` is None for the first thought of a deliberation (maximal novelty).
    """
    if max_sections <= 0 or max_memories <= 0:
        raise ValueError('max_sections and max_memories must be positive')
    if sections < 0 or memories < 0:
        raise ValueError('sections and memories cannot be negative')
    j = 0.0 if jaccard_previous is None else min(1.0, max(0.0, float(jaccard_previous)))
    score = (W_SECTIONS * min(1.0, sections / max_sections)
             + W_RECALL * min(1.0, memories / max_memories)
             + W_NOVELTY * (1.0 - j))
    return round(min(1.0, max(0.0, score)), 4)


# Working-memory item kinds.
PERCEPT = 'percept'
THOUGHT = 'thought'
OUTCOME = 'outcome'
GOAL = 'goal'


@dataclass
class WorkingItem:
    kind: str
    content: str
    salience: float
    t: float
    seq: int
    meta: dict = field(default_factory=dict)


class WorkingMemorySet:
    """A small bounded set of active representations (the PFC workspace).

    When full, the least salient item goes (the oldest among equals): activation, not age,
    decides what stays, as NAc modulation does in seed 000.
    """

    def __init__(self, capacity: int = 32, clock: Callable[[], float] = time.monotonic):
        if capacity <= 0:
            raise ValueError('capacity must be positive')
        self.capacity = capacity
        self.clock = clock
        self._items: list[WorkingItem] = []
        self._seq = itertools.count()

    def __len__(self) -> int:
        return len(self._items)

    def add(self, kind: str, content: str, salience: float, **meta) -> WorkingItem:
        if not 0.0 <= float(salience) <= 1.0:
            raise ValueError(f'salience must be within 0..1, got {salience}')
        item = WorkingItem(kind, content, float(salience), self.clock(), next(self._seq),
                           dict(meta))
        self._items.append(item)
        if len(self._items) > self.capacity:
            victim = min(self._items, key=lambda i: (i.salience, i.seq))
            self._items.remove(victim)
        return item

    def head(self) -> WorkingItem | None:
        """The most recent item (what the ThoughtGate scores)."""
        return max(self._items, key=lambda i: i.seq) if self._items else None

    def top_by_salience(self, n: int = 5, kind: str | None = None) -> list[WorkingItem]:
        """The n most salient items, most salient first (newer first among equals)."""
        items = [i for i in self._items if kind is None or i.kind == kind]
        return sorted(items, key=lambda i: (-i.salience, -i.seq))[:max(0, n)]

    def items(self) -> list[WorkingItem]:
        return sorted(self._items, key=lambda i: i.seq)

    def clear(self) -> None:
        self._items.clear()
