"""Prompt sections: named pieces of text with a priority, so a tight budget drops the least
important first (seed 003).

A section is `stable` when its text changes rarely (identity, rules, tool manifest): the
builder puts stable sections first so llama.cpp reuses their KV cache across cycles.
"""

from dataclasses import dataclass
from enum import IntEnum


class Priority(IntEnum):
    """How much a section matters; a higher value survives a tight budget longer."""

    OPTIONAL = 0
    NICE_TO_HAVE = 1
    NORMAL = 2
    IMPORTANT = 3
    CRITICAL = 4          # never dropped: the prompt fails rather than lose it


@dataclass(frozen=True)
class Section:
    """One named piece of a prompt."""

    name: str
    text: str
    priority: Priority = Priority.NORMAL
    stable: bool = False

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise ValueError('a section needs a non-empty name')
        if not isinstance(self.text, str):
            raise TypeError(f'section {self.name!r}: text must be a str, '
                            f'not {type(self.text).__name__}')
        if not isinstance(self.priority, Priority):
            object.__setattr__(self, 'priority', Priority(self.priority))

    @property
    def empty(self) -> bool:
        return not self.text.strip()
