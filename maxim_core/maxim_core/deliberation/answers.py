"""Replies built from what the robot knows, to be chosen among, not written by the model.

A question is answered from a source: a line memory gave back, what is in view (what and how
many), what one of the robot's own acts brought back (a note read, a file, a listing), a
sentence of the scene it is in, or earlier words a person said (a message to pass on). Each
source sentence is a candidate reply. Which one answers what was asked is read by the sentence
model (`relate`: how close each is to the words heard) and weighed by the choice with its other
terms (`scorers.answer_near`, and the probe's reading of the words and the reply); whether any
reply is wanted at all is the choice's too, not a question mark's.

Pure Python; no ROS.
"""

from __future__ import annotations

from collections import Counter
import re
from typing import Callable, Sequence

MAX_CHARS = 240          # a reply is one or two sentences
PER_SOURCE = 6           # sentences of one source considered
KEEP = 3                 # replies proposed from the sources
DECLINE = "Sorry, I can't do that."
_SENTENCE = re.compile(r'[^.!?\n]+[.!?]?')


def view_sentence(labels: Sequence[str]) -> str:
    """What is in view, counted: 'I see 3 things: 2 faces and a red object.'"""
    counts = Counter(' '.join(str(x).split()).lower() for x in labels if str(x).strip())
    if not counts:
        return ''
    parts = [f'{n} {label}s' if n > 1 else f'a {label}' for label, n in counts.items()]
    listed = parts[0] if len(parts) == 1 else f'{", ".join(parts[:-1])} and {parts[-1]}'
    total = sum(counts.values())
    return f'I see {total} thing{"s" if total != 1 else ""}: {listed}.'


def sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE.findall(text or '') if len(s.strip()) > 2]


def standing(g) -> list[tuple[str, str, float]]:
    """Replies that answer any ask, proposed whatever was heard: declining it, and, with
    several things in view, asking which one is meant."""
    out = [(DECLINE, 'decline', 0.0)]
    seen = list(dict.fromkeys(' '.join(str(x).split()).lower()
                              for x in list(g.objects) + list(g.people) if str(x).strip()))
    if len(seen) >= 2:
        things = [f'the {x}' for x in seen[:4]]
        out.append((f'Which one do you mean: {", ".join(things[:-1])} or {things[-1]}?',
                    'clarify', 0.0))
    return out


def sources(g, memory_content: Callable[[str], str], result_words: Callable[[str, int], str],
            own_frames: Sequence[str] = ()) -> list[tuple[str, str]]:
    """(sentence, source) of every source the moment holds, each sentence once; a memory
    line framed as the robot's own speech (`own_frames`) is no fact it was told."""
    out: list[tuple[str, str]] = []
    for line in list(g.recalled)[:PER_SOURCE * 2]:
        if any(f in line for f in own_frames):
            continue
        out.append((memory_content(line), 'memory'))
    view = view_sentence(list(g.objects) + list(g.people))
    if view:
        out.append((view, 'view'))
    for r in list(g.recent)[-PER_SOURCE:]:
        if r.success and r.result:
            out.append((result_words(r.result, MAX_CHARS), 'read'))
    heard = ' '.join((g.heard or '').split())
    for s in sentences(g.scene or ('' if g.from_tool else g.percept))[:PER_SOURCE]:
        if ' '.join(s.split()) not in heard:      # the words heard are no scene to tell
            out.append((s, 'scene'))
    # Words said earlier than the newest line: a message to pass on, an answer given before.
    lines = re.findall(r'"([^"]+)"', g.heard or '')
    for s in lines[:-1][-PER_SOURCE:]:
        out.append((s, 'heard'))
    seen, unique = set(), []
    for text, source in out:
        text = ' '.join(text.split())[:MAX_CHARS]
        key = text.lower()
        if len(text) > 2 and key not in seen:
            seen.add(key)
            unique.append((text, source))
    return unique


def ranked(found: Sequence[tuple[str, str]], question: str,
           relate: Callable[[str, Sequence[str]], Sequence[float]] | None,
           keep: int = KEEP) -> list[tuple[str, str, float]]:
    """The `keep` source sentences closest in meaning to `question` (the sentence model), with
    their similarity; without a sentence model, the first of each source in turn (0.0)."""
    if not found or not question:
        return []
    sims = relate(question, [t for t, _ in found[:64]]) if relate is not None else None
    if sims is None or len(sims) != len(found[:64]):
        by_source: dict[str, list] = {}
        for text, source in found:
            by_source.setdefault(source, []).append(text)
        firsts = [(texts[0], source, 0.0) for source, texts in by_source.items()]
        return firsts[:keep]
    scored = sorted(zip(found, sims), key=lambda x: -float(x[1]))
    return [(text, source, round(float(s), 4)) for (text, source), s in scored[:keep]]
