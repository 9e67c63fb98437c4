"""What memory and the view give to what is asked: the values a recalled line ties to a
question, the line the sentence model finds closest, what is in view, and what hurt before.

Pure Python; no ROS.
"""

import re
from typing import Sequence

from maxim_core.deliberation.grounding import Grounding
from maxim_core.deliberation.words import (_HURT, _HURT_ME, _root, _stem, content_words,
                                           INTERROGATIVE, memory_content, said_words)


def tied_to(values: Sequence[str], g: 'Grounding', about: str) -> list[str]:
    """Those of `values` that a recalled line names together with a word of `about` and that
    the moment (scene, percept, goal, what was heard) does not hold: what memory links to
    the question ("Password?" -> "the password of the door is swordfish")."""
    words = {_stem(w) for w in content_words(about)}
    if not words or not g.recalled:
        return []
    lines = [memory_content(ln).lower() for ln in g.recalled
             if words & {_stem(w) for w in content_words(memory_content(ln))}]
    here = {_stem(w) for w in content_words(
        f'{g.scene} {g.percept} {g.goal} {g.heard} {g.name} {" ".join(g.names())} '
        f'{" ".join(g.aliases)}')}
    # A value the moment holds every word of is not what memory adds ('oak door' when the
    # percept says "an oak door").
    tied = [v for v in values
            if not ({_stem(w) for w in content_words(v)} or {_stem(v.lower())}) <= here | words
            and any(re.search(rf'\b{re.escape(v.lower())}\b', ln) for ln in lines)]
    order = {v: i for i, v in enumerate(tied)}
    # The line that shares most with the moment first: "the code of the hatch is pepper"
    # answers at the hatch; "the shed had the code marigold" does not.
    near = {ln: len({_stem(w) for w in content_words(ln)} & here) for ln in lines}

    def shared(v: str) -> int:
        return max((near[ln] for ln in lines
                    if re.search(rf'\b{re.escape(v.lower())}\b', ln)), default=0)

    # The value told soonest after the question's word first ("my name is Ada ... in your
    # life": 'ada' answers "what is my name?", not 'life'; "the caretaker told me the
    # password ... is swordfish": 'swordfish'); one told before it only after those.
    def distance(v: str) -> int:
        best = 10 ** 6
        first = (v.lower().split() or [''])[0]
        for ln in lines:
            toks = re.findall(r"[a-z0-9']+", ln)
            at = [i for i, t in enumerate(toks) if _stem(t) in words]
            for i, t in enumerate(toks):
                if t == first:
                    best = min([best] + [i - j if i > j else 1000 + j - i for j in at])
        return best
    # A value told after the question's word answers it ("the code of the gate is 8350");
    # one told before it does not, however much its line shares with the moment (the
    # robot's memory of the scene itself: "a keypad asking for a code").
    return sorted(tied, key=lambda v: (distance(v) >= 1000, -shared(v), distance(v),
                                       order[v]))


def related_values(values: Sequence[str], g: 'Grounding', about: str,
                   own: str = '') -> list[str]:
    """Those of `values` in the recalled line the sentence model finds closest to what a
    person said (`g.related`), that neither the moment nor `about` holds, the most surprising
    to the model first: memory's answer to a question that shares no word with it ("Who am
    I?" -> the line 'my name is Greta' -> 'greta', rarer than 'name' or 'said'). A line that
    holds `own` (the frame of the robot's own speech) is none."""
    if not g.related:
        return []
    here = {_stem(w) for w in content_words(
        f'{g.scene} {g.percept} {g.goal} {g.heard} {g.name} {about} '
        f'{" ".join(g.names())}')}

    def held(text: str) -> list[str]:
        return [v for v in values if re.search(rf'\b{re.escape(v.lower())}\b', text.lower())
                and not ({_stem(w) for w in content_words(v)} or {_stem(v.lower())}) <= here]
    # The closest line that holds a word the moment does not: a line that only restates the
    # moment (the goal's own words, memory's note of them) answers nothing.
    lines = [ln for ln in g.related if held(memory_content(ln)) and not (own and own in ln)]
    if not lines:
        return []
    best = max(lines, key=lambda ln: g.related[ln])
    told = memory_content(best)
    near = held(told)
    # A name the line gives as one (capitalised: "my name is Yuki") before a common word of
    # it ('name'), then the word the model finds rarest.
    proper = {w.lower() for w in re.findall(r'\b[A-Z][a-z]+\b', told)}
    return sorted(near, key=lambda v: (v.lower() not in proper, -g.surprise.get(v, 0.0)))


def perceived_answer(g: 'Grounding', limit: int = 3) -> str:
    """An answer from perception to a question for words a person just asked ("what shade
    is the mug there?", "describe what is in view"): the things in view it names, or all of
    them when it names none by the robot's words for them ("I see a blue object."); '' when
    nothing is in view or nothing was asked. What it says comes from the percept alone:
    the model's own words about what it sees named colours that were not there."""
    said = said_words(g.heard) if g.addressed else ''
    if not g.objects or not said or not INTERROGATIVE.search(said):
        return ''
    words = {_stem(w) for w in content_words(said)}
    names = [' '.join(str(n).split()).lower() for n in g.objects][:8]
    named = [n for n in names if {_stem(w) for w in content_words(n)} & words]
    things = [f'a {n}' for n in dict.fromkeys(named or names)][:limit]
    if not things:
        return ''
    listed = things[0] if len(things) == 1 else f'{", ".join(things[:-1])} and {things[-1]}'
    return f'I see {listed}.'


def tied_first(values: Sequence[str], g: 'Grounding', about: str) -> list[str]:
    """`values` with those `tied_to` `about` first."""
    tied = tied_to(values, g, about)
    return tied + [v for v in values if v not in tied]


def hurt_before(recalled: Sequence[str], things: Sequence[str]) -> set[str]:
    """Roots of the acts a recalled line says hurt ("turning my head further left when it
    was already far left hurt me" -> 'turn', 'furt', 'left', ...): the amygdala's memory of
    pain, which holds back the same act before it is tried again. The names of things are
    left out: what hurt was the act, not every act on the same thing."""
    skip = {_root(w) for t in things for w in content_words(t)}
    out: set[str] = set()
    for line in recalled:
        text = memory_content(line)
        if not _HURT_ME.search(text) or '"' in text:
            continue
        for w in content_words(_HURT.sub(' ', text)):
            root = _root(w)
            if root not in skip and len(w) >= 3:
                out.add(root)
    return out
