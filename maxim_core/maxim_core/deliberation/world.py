"""The world model of the choice: what the moment knows of things and their states, what
the robot's acts set, what stands in the way (means-ends), and which acts brought news.

Pure Python; no ROS.
"""

import json
from typing import Any, Mapping

from maxim_core.deliberation.grounding import Grounding, RecentAct
from maxim_core.deliberation.words import (_phrase, _REASON_WORDS, _root, _stem,
                                           _string_values, _undoes, content_words,
                                           FREE_TEXT_PARAMS)


def obstacles(g: 'Grounding') -> set[str]:
    """Roots of what stands in the way, not yet dealt with (see `means_ends`)."""
    return means_ends(g)[0]


def means_ends(g: 'Grounding') -> tuple[set[str], set[str]]:
    """Means-ends analysis over the recent acts: (what stands in the way, the acts to
    resume).

    What stands in the way: the words of a failed act's reason that its own phrase does not
    hold ("cannot take from the chest: its open is False" -> 'open'; "you need a key" ->
    'key'), until a later act that changed the world names them; and the states of the
    situation that an act of the robot's could undo ("a locked chest": '~lock', dealt with by
    'unlock'). The acts to resume: failed acts whose every obstacle has since been dealt
    with (the key is taken: unlock the chest again), keyed tool:args.

    A reason that names nothing the robot knows ("the door will not open: something else has
    to change first") points away from the act's own thing: a later act that changed another
    thing deals with it (`unnamed_failure`)."""
    found: dict[str, int] = {}
    failed: dict[str, set[str]] = {}
    unnamed: dict[str, int] = {}                 # failed act -> where it failed
    recent = list(g.recent)
    for i, r in enumerate(recent):
        if r.success or r.blocked:
            continue
        named = _in_the_way(r)
        for root in named:
            found.setdefault(root, i)
        roots = set(named)
        key = f'{r.tool}:{json.dumps(r.args, sort_keys=True)}'
        if roots:
            failed[key] = roots
            if unnamed_failure(r, g) is not None:
                unnamed[key] = i
        else:
            failed.pop(key, None)
    situation = g.scene or ('' if g.from_tool else g.percept)
    for w in content_words(f'{situation} {g.goal} {g.heard}'):
        if w not in _REASON_WORDS:
            found.setdefault('~' + _root(w), -1)       # a state: only undoing deals with it
    dealt: set[str] = set()
    for i, r in enumerate(recent):
        if not r.success or r.introspection:
            continue
        done = content_words(_phrase(r.tool, r.args))
        failed.pop(f'{r.tool}:{json.dumps(r.args, sort_keys=True)}', None)
        for key, since in list(found.items()):
            root = key.lstrip('~')
            if i > since and any(_undoes(w, root) or (not key.startswith('~')
                                                      and _root(w) == root) for w in done):
                del found[key]
                dealt.add(root)
        for key, at in list(unnamed.items()):
            thing = _thing_of(recent[at].tool, g)
            if i > at and thing and not verb_on(r.tool, thing) and \
                    any(verb_on(r.tool, t) for t in g.names()):
                dealt |= failed.get(key, set())       # something else changed
                for root in failed.get(key, set()):
                    found.pop(root, None)
                del unnamed[key]
    resume = {key for key, roots in failed.items() if roots <= dealt}
    return set(found), resume


def _in_the_way(r: 'RecentAct') -> list[str]:
    """The roots of a failed act's reason that its own phrase does not hold, in order: what
    stands in its way."""
    mine = content_words(_phrase(r.tool, r.args))
    own = {_root(w) for w in mine}
    roots = []
    # A reason that quotes the act's own argument ("no entity 'leads' in this scene
    # (known: door)", "the door does not accept 'door'") says the value was wrong, not
    # what stands in the way in the world.
    wrong_value = any(f"'{v}'" in r.result or f'"{v}"' in r.result
                      for v in _string_values(r.args) if v)
    for w in ([] if wrong_value else content_words(r.result)):
        root = _root(w)
        # "cannot unlock: its locked is False": the act was moot, nothing stands in the way
        if w not in _REASON_WORDS and root not in own and \
                not any(_undoes(m, root) for m in mine):
            roots.append(root)
    return roots


def _thing_of(tool: str | None, g: 'Grounding') -> str:
    """The known thing a tool acts on ('open_door' -> 'door'), '' when none."""
    return next((t for t in g.names() if verb_on(tool, t)), '')


def unnamed_failure(r: 'RecentAct', g: 'Grounding') -> str | None:
    """The thing of a failed act on a known thing whose reason names nothing known: no
    thing, no word the scene calls one, no state ("... will not open: something else has to
    change first"), else None. "its locked is True" names a state; "you need a key" a thing."""
    if r.success or r.blocked:
        return None
    thing = _thing_of(r.tool, g)
    if not thing:
        return None
    # The act's own words, and the scene's word for its thing ("the gate will not open"
    # from `open_door` when the scene calls the door a gate).
    own = {_root(w) for w in content_words(_phrase(r.tool, r.args))} | {
        _root(w) for word, name in g.aliases.items() if name == thing.lower()
        for w in content_words(word)}
    said = {_root(w) for w in content_words(r.result) if w not in _REASON_WORDS} - own
    if not said:
        return None
    known = {_root(w) for n in list(g.names()) + list(g.aliases) for w in content_words(n)}
    for state in list(thing_states(g).values()) + [dict(r.state or {})]:
        known |= {_root(w) for k in state for w in content_words(str(k).replace('_', ' '))}
    return None if said & known else thing


def news_of_acts(g: 'Grounding') -> list[tuple['RecentAct', bool]]:
    """The acts since the last news from outside, each with whether it brought news: an
    act's result is news when it holds a word the situation, the goal and the earlier results
    did not (the key turns, the chest is unlocked), or when it failed for a reason that names
    an obstacle. A blocked act, one's own words (say, respond) and a look that found what was
    already known are not news."""
    n = min(g.acts_since_news, len(g.recent))
    if n <= 0:
        return []
    recent = list(g.recent)
    seen = {_stem(w) for w in content_words(f'{g.scene} {g.goal} {g.heard}')}
    for r in recent[:-n]:
        seen |= {_stem(w) for w in content_words(r.result)}
    out = []
    for r in recent[-n:]:
        own = {_stem(w) for w in content_words(_phrase(r.tool, r.args))}
        words = {_stem(w) for w in content_words(r.result)}
        if r.blocked or any(k in FREE_TEXT_PARAMS for k in r.args):
            news = False
        elif not r.success:
            news = bool(obstacles(Grounding(recent=[r], from_tool=True)))
        else:
            news = bool(words - seen - own)
        seen |= words
        out.append((r, news))
    return out


def thing_states(g: 'Grounding') -> dict[str, dict]:
    """The state each thing was last reported in by an act's result (thing -> state): what
    the grounding kept from earlier acts, then the recent ones."""
    out: dict[str, dict] = {k: dict(v) for k, v in g.states.items()}
    for r in g.recent:
        if r.entity and r.state:
            out[r.entity] = dict(r.state)
    return out


def own_changes(g: 'Grounding') -> dict[tuple[str, str], bool]:
    """The states the robot's own acts set ((thing, state) -> value): 'unlock_door' that
    worked -> ('door', 'locked'): False. What the grounding kept, then the recent acts."""
    out = dict(g.changed)
    for r in g.recent:
        if r.success and not r.introspection and r.entity and r.state:
            eff = effect_of(r.tool, r.entity, r.state)
            if eff is not None:
                out[(r.entity, eff[0])] = eff[1]
    return out


def verb_on(tool: str | None, thing: str) -> str:
    """The verb of a tool that acts on `thing` ('take_from_chest', 'chest' -> 'take'), ''
    when the tool is not an act on it."""
    if not tool or not thing or not tool.lower().endswith('_' + thing.replace(' ', '_')):
        return ''
    return tool[:-len(thing) - 1].split('_')[0].lower()


def effect_of(tool: str, thing: str, state: Mapping[str, Any]) -> tuple[str, bool] | None:
    """What an act on a thing sets, when the act's verb names one of the thing's two-valued
    states: 'open_door' -> ('open', True), 'unlock_door' -> ('locked', False); None when the
    verb names none ('knock_door': what it does is not known)."""
    verb = verb_on(tool, thing)
    if not verb:
        return None
    for key, value in state.items():
        if not isinstance(value, bool):
            continue
        root = _root(key)
        if _root(verb) == root:
            return key, True
        if _undoes(verb, root):
            return key, False
    return None


def addresses(phrase: str, blocks: set[str]) -> bool:
    """Whether an action's words deal with one of `blocks` (see `obstacles`): a word with
    the obstacle's root (not for a state: 'open' does not deal with 'opened'), or a verb
    that undoes it."""
    for w in content_words(phrase):
        root = _root(w)
        if root in blocks or any(_undoes(w, b.lstrip('~')) for b in blocks):
            return True
    return False


def _same_direction(a: Mapping, b: Mapping) -> bool:
    for key, va in a.items():
        vb = b.get(key)
        if isinstance(va, (int, float)) and isinstance(vb, (int, float)) \
                and not isinstance(va, bool):
            if (va > 0) != (vb > 0) or (va == 0) != (vb == 0):
                return False
        elif va != vb:
            return False
    return True


def thought_of(thought: str, things) -> list[set]:
    """The things of `things` (names the robot perceives or knows) that `thought` is about,
    as sets of word stems: a name counts when the thought holds all its words ("I wonder
    what the green object is" is about the green object, not the red one). A thought that
    names three things or more is a list, about none of them in particular.
    The small model's liking for an act after its own thought barely told the thing the
    thought was about from the others (the relevance of "memory recall green object" after
    "I wonder what the green object is." was 1.38, of "... blue object" 1.12), and the
    robot thought of one thing and did another in most cycles of a sim."""
    said = {_stem(w) for w in content_words(thought)}
    meant = [stems for n in things if (stems := {_stem(w) for w in content_words(n)})
             and stems <= said]
    return meant if len(meant) <= 2 else []
