"""Whether what a person said asks for an act or turns it away: the stance of the clause the
act answers.

"Leave the white mug alone and face the black shoe" names two things; the words about each
say which one the person wants looked at. A list of negating words cannot know every way of
turning something away ("ignore", "skip", "leave it shut", "never mind"), and neither the
sentence model's similarity of the whole request to an act ("open the cabinet" is close to
"keep the cabinet closed") nor the small model's liking can tell. What does tell is the frame
of the clause once its thing is masked: "leave it alone", "ignore it", "keep it closed" lie
on one side of the sentence model's space, "face it", "keep it in view", "read the label to
me" on the other.

So a candidate's stance is read in three steps:
1. what was said is cut into clauses (at marks and at 'and', 'but', 'then');
2. the act is matched to the clause that shares most of its words (its verb, its thing);
   an act that shares none has no stance;
3. the clause, with every known thing's name masked as 'it', is compared by the sentence
   model with two sets of example clauses: ones that asked for the act their thing was in,
   and ones that turned it away. The stance is the mean similarity to the first less the
   mean similarity to the second (a nearest-centroid reading).

The example clauses are not written by hand: they are taken from the dev split of the
decision benchmark (`examples_from`), from moments where the same words held an act that
was right and another that was wrong, and saved with their provenance in `stance.json`
beside this file (`./maxim bench decisions --fit` writes it). The sentence model runs in the
memory node (`memory/relate`); without it the stance is 0.

Pure Python; no ROS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
from pathlib import Path
import re
from typing import Callable, Iterable, Mapping, Sequence

from maxim_core.deliberation.words import noun_phrases, _root

STANCE_FILE = Path(__file__).with_name('stance.json')

_CUT = re.compile(r'[.;:!?,()"]+|\s[-\u2013\u2014]\s|\b(?:and|but|then)\b', re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][\w'-]*")
# Words no frame turns on: what an act and a clause share must be more than these.
_FILLER = frozenset('the a an to of on at in it its me my you your please for with and but '
                    'then just'.split())

Relate = Callable[[str, Sequence[str]], Sequence[float]]


def clauses(text: str) -> list[str]:
    """What was said, cut at marks and at 'and', 'but', 'then'; empty pieces dropped."""
    return [c.strip() for c in _CUT.split(text or '') if _WORD.search(c or '')]


def _stems(text: str) -> set[str]:
    return {_root(w) for w in _WORD.findall(text or '')
            if len(w) >= 3 and w.lower() not in _FILLER}


def masked(clause: str, names: Iterable[str]) -> str:
    """The clause with each known thing's name (and the determiners before it) as 'it':
    "Leave the white mug alone" -> "Leave it alone". Longer names first, so "white mug"
    is masked whole before "mug". A thing may be named by other words than the robot's
    own: a noun phrase of the clause that shares a word with a known name is that thing
    too ("ignore the big red cone" with a 'red object' in view -> "ignore it"), so the
    frame is read without the words that only tell which thing."""
    known = {n.strip().lower() for n in names if n and n.strip()}
    stems = {_root(w) for n in known for w in _WORD.findall(n) if len(w) >= 3}
    spoken = {p for p in noun_phrases(clause, known=sorted(known))
              if p not in known and {_root(w) for w in _WORD.findall(p)} & stems}
    out = clause
    for name in sorted(known | spoken, key=len, reverse=True):
        words = [re.escape(w) for w in name.split()]
        pat = re.compile(r'\b(?:(?:the|a|an|this|that|its|your|my)\s+)*'
                         + r'\s+'.join(words) + r'\b(?:\s+ones?\b)?', re.IGNORECASE)
        out = pat.sub('it', out)
    return ' '.join(out.split())


def clause_for(phrase: str, parts: Sequence[str]) -> int | None:
    """The index of the clause that shares the most words with an act's phrase (the first
    of equals), or None when none shares a word."""
    want = _stems(phrase)
    best, at = 0, None
    for i, part in enumerate(parts):
        k = len(want & _stems(part))
        if k > best:
            best, at = k, i
    return at


@dataclass(frozen=True)
class Stance:
    """Example clauses that asked for an act and that turned one away, and where they came
    from; `score` reads a new clause against them."""

    asked: tuple[str, ...] = ()
    dismissed: tuple[str, ...] = ()
    provenance: Mapping = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return bool(self.asked) and bool(self.dismissed)

    def score(self, relate: Relate | None, clause: str) -> float:
        """Mean similarity to the asked examples less to the turned-away ones (0 without a
        sentence model or examples, or when the model's answer does not fit)."""
        if relate is None or not self.ready or not clause:
            return 0.0
        sims = relate(clause, list(self.asked) + list(self.dismissed))
        if sims is None or len(sims) != len(self.asked) + len(self.dismissed):
            return 0.0
        n = len(self.asked)
        return float(sum(sims[:n]) / n - sum(sims[n:]) / len(self.dismissed))

    @staticmethod
    def load(path: str | Path = STANCE_FILE) -> 'Stance':
        """Examples saved by `save`; a missing file is no examples (stance 0), a corrupt
        one an error that says which file."""
        path = Path(path)
        if not path.is_file():
            return Stance()
        try:
            data = json.loads(path.read_text())
            asked = tuple(str(s) for s in data['asked'])
            dismissed = tuple(str(s) for s in data['dismissed'])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise ValueError(f'{path}: not a stance file ({exc})') from exc
        return Stance(asked, dismissed, dict(data.get('provenance') or {}))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(
            {'asked': list(self.asked), 'dismissed': list(self.dismissed),
             'provenance': dict(self.provenance)}, indent=1, sort_keys=True) + '\n')


def stances(stance: Stance, relate: Relate | None, said: str, names: Iterable[str],
            phrases: Mapping[int, str]) -> dict[int, float]:
    """Each act's stance (key -> score) for what was `said`: one sentence-model call per
    clause that some act answers."""
    if relate is None or not stance.ready or not said:
        return {}
    parts = clauses(said)
    names = list(names)
    read: dict[int, float] = {}
    out = {}
    for key, phrase in phrases.items():
        i = clause_for(phrase, parts)
        if i is None:
            continue
        if i not in read:
            read[i] = stance.score(relate, masked(parts[i], names))
        out[key] = read[i]
    return out


def examples_from(moments: Iterable[tuple[str, Sequence[str], Sequence[tuple[str, str]]]],
                  provenance: Mapping | None = None) -> Stance:
    """Example clauses from labelled moments: (what was said, the names known, [(act phrase,
    'right' | 'wrong')]). A clause a right act answers is an asked example; one that only
    wrong acts answer (none of the right ones) is a turned-away example. Each masked clause
    is kept once; one that is both is dropped."""
    asked, dismissed = {}, {}
    for said, names, acts in moments:
        parts = clauses(said)
        if not parts:
            continue
        right = {clause_for(p, parts) for p, lab in acts if lab == 'right'} - {None}
        wrong = {clause_for(p, parts) for p, lab in acts if lab == 'wrong'} - {None} - right
        if not right:
            continue
        for i in right:
            asked.setdefault(masked(parts[i], names), None)
        for i in wrong:
            dismissed.setdefault(masked(parts[i], names), None)
    both = set(asked) & set(dismissed)
    return Stance(tuple(s for s in asked if s not in both),
                  tuple(s for s in dismissed if s not in both), dict(provenance or {}))
