"""Which thing in view a name means: the one rule the agent's track_target tool and the head
controller share, so that what the tool says it tracks is what the head follows.

A person (or the model) says "the blue one", "blue" or "the red object on the left"; attention
labels what it sees "blue object", "red object", "face". Exact labels alone left "blue"
matching nothing: the tool said it was tracking and the head did not move.
"""

import re
from typing import Iterable

# Words that say which, not what: left out when a name is compared with a label.
_FILLER = frozenset({'a', 'an', 'the', 'that', 'this', 'one', 'thing', 'my', 'your'})


def _words(text: str) -> set[str]:
    return set(re.findall(r'[a-z0-9]+', text.lower())) - _FILLER


def resolve_label(asked: str, labels: Iterable[str]) -> str | None:
    """The label among `labels` that `asked` names, or None when none or several do.

    The same label in any case first; else the one label whose words hold every word asked
    ("blue" names "blue object") or whose words all appear in what was asked ("the red
    object on the left" names "red object"). Two different labels that both fit ("object"
    with "red object" and "blue object" in view) are ambiguous: None.
    """
    seen = list(dict.fromkeys(str(label) for label in labels if str(label).strip()))
    wanted = asked.strip().lower()
    for label in seen:
        if label.strip().lower() == wanted:
            return label
    asked_words = _words(asked)
    if not asked_words:
        return None
    fits = [label for label in seen
            if (words := _words(label)) and (asked_words <= words or words <= asked_words)]
    if len({label.strip().lower() for label in fits}) != 1:
        return None
    return fits[0]
