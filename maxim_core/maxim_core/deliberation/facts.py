"""What the weighing knows of the moment (`Moment`), computed once for all candidates.

First, in one step, what the models and the fear gate say (`read`: the sentence model's
similarities and stances, the probe's reading, the danger of each call, what memory said
hurt); then plain facts, each a pure function of the grounding and the candidates: what the
robot did lately (`Acts`), what was said and asked (`Said`), and what it knows of things
and their states (`World`). The scorers (scorers.py) read these facts and nothing else.

Pure Python; no ROS.
"""

from dataclasses import dataclass, field, InitVar
import json
import re
from typing import Callable, Collection, Mapping, Sequence

from maxim_core.deliberation import stance as st
from maxim_core.deliberation.candidates import Candidate
from maxim_core.deliberation.grounding import Grounding
from maxim_core.deliberation.words import (_FAILED, _phrase, _root, _stem, _WORD, _words,
                                           avoided, content_words, FREE_TEXT_PARAMS,
                                           memory_content, phrase_of, roots, said_words,
                                           stems)
from maxim_core.deliberation.world import (effect_of, means_ends, news_of_acts,
                                           own_changes, thing_states, thought_of,
                                           unnamed_failure, verb_on)

Relate = Callable[[str, Sequence[str]], Sequence[float]]
Danger = Callable[[str, Mapping], float]


def act_key(tool, args) -> tuple:
    """An act as a key: its tool and its arguments."""
    return tool, json.dumps(args, sort_keys=True)


@dataclass(frozen=True)
class Readings:
    """What the models, the fear gate and memory say of the candidates (id(c) -> value)."""

    hurt: set = field(default_factory=set)       # roots of acts memory says hurt
    similarity: Mapping[int, float] = field(default_factory=dict)  # the sentence model's
    stance_of: Mapping[int, float] = field(default_factory=dict)   # asked for or turned away
    understood: Mapping[int, float] = field(default_factory=dict)  # the probe's (probe.py)
    danger: Mapping[int, float] = field(default_factory=dict)      # the fear gate's patterns


def read(g: Grounding, cands: Sequence[Candidate], hurt: Collection[str] = (),
         relate: Relate | None = None, danger: Danger | None = None,
         stance: 'st.Stance | None' = None, stance_relate: Relate | None = None,
         understood: Mapping[int, float] | None = None) -> Readings:
    """Every call to a model or to the fear gate the weighing makes, in one step."""
    # What a person said to the robot, taken as asking or turning away: a narrator's scene
    # or talk overheard asks nothing (like `avoid`, like `act_unasked`).
    similarity: dict[int, float] = {}
    if relate is not None and g.heard and g.addressed:
        acts = [c for c in cands if c.tool is not None]
        sims = relate(g.heard, [c.phrase for c in acts]) if acts else None
        for c, s in zip(acts, sims or ()):
            similarity[id(c)] = float(s)
    # How the words about each act's thing take it: asked for or turned away. Only an act on
    # a thing has one ("turn my head right" shares 'right' with "right now").
    stance_of: dict[int, float] = {}
    if stance is not None and g.heard and g.addressed:
        things = set(g.names())
        stance_of = st.stances(
            stance, stance_relate, said_words(g.heard), list(g.names()) + list(g.aliases),
            {id(c): c.phrase for c in cands
             if c.tool is not None and 'speech' not in c.sources
             and (any(verb_on(c.tool, t) for t in things) or any(
                 str(v).strip().lower() in things for v in c.args.values()))})
    danger_of = {} if danger is None else {
        id(c): float(danger(c.tool, c.args)) for c in cands if c.tool is not None}
    return Readings(set(hurt), similarity, stance_of, dict(understood or {}), danger_of)


@dataclass(frozen=True)
class Acts:
    """What the robot did lately, and what came of it."""

    news: list            # (act, whether it brought news) since the last news from outside
    own_tools: set        # tools of the recent acts
    last_success: int     # index of the last act on the world that worked, -1 none
    stale: int            # acts since the last news that brought none
    dull: set             # read-only tools whose last use told nothing new
    done_since: set       # act keys done since the last news
    since: int            # index of the first act since a person last spoke
    done_before: set      # act keys blocked, or done since a person last spoke
    speakers: set         # tools the robot spoke with lately


def acts_of(g: Grounding) -> Acts:
    news = news_of_acts(g)
    # Habit is to what the robot did since a person last spoke to it.
    since = 0 if g.acts_since_heard < 0 else \
        len(g.recent) - min(g.acts_since_heard, len(g.recent))
    return Acts(
        news=news, own_tools={r.tool for r in g.recent},
        last_success=max((i for i, r in enumerate(g.recent)
                          if r.success and not r.introspection), default=-1),
        stale=sum(1 for _, n in news if not n) + max(0, g.acts_since_news - len(g.recent)),
        dull={r.tool for r, n in news if r.introspection and not n},
        done_since={act_key(r.tool, r.args) for r, _ in news if r.success},
        since=since,
        done_before={act_key(r.tool, r.args) for i, r in enumerate(g.recent)
                     if r.blocked or r.success and i >= since},
        speakers={r.tool for r in g.recent
                  if any(k in FREE_TEXT_PARAMS and k != 'thought' for k in r.args)})


@dataclass(frozen=True)
class Said:
    """What the goal and a person say, what is asked, and what memory links to it."""

    goal_stems: set       # the goal's words and what was heard (and the things they alias)
    goal_only: set        # the standing goal's words alone
    said_to: set          # words said to the robot (not overheard)
    asked: set            # the goal's, what was heard, the scene's and the percept's words
    avoid: set            # roots of what the goal or a person says not to do
    recalled: str         # recalled lines that name an act as done, not as failed
    linked: list          # recalled lines that link what is asked to a value
    fresh: set            # the percept's words (not a tool's result)
    asked_me: bool        # a person asked and was not answered
    requested: bool       # a person just asked for an act by its verb
    heard_now: bool       # a person just spoke to the robot
    act_named: bool       # the person's words name what an act on the world is on
    referent: str         # the one known thing the person's words mean most, '' none


def _with_aliases(words: set, g: Grounding) -> set:
    """`words` and those of the thing each alias among them names: "pass the gate" names the
    door the world knows it as."""
    for word, thing in g.aliases.items():
        if stems(word) & words:
            words |= stems(thing)
    return words


def said_of(g: Grounding, cands: Sequence[Candidate], acts: Acts) -> Said:
    goal_stems = _with_aliases(stems(f'{g.goal} {g.heard}'), g)
    # The standing goal's words alone, and the words said to the robot: 'goal' counts both,
    # and a standing goal ("watch the room") or a name heard in chatter is no ask.
    goal_only = _with_aliases(stems(g.goal), g)
    asked = goal_stems | stems(f'{g.scene} {"" if g.from_tool else g.percept}')
    spoke = any(k in FREE_TEXT_PARAMS for r, _ in acts.news for k in r.args)
    verbs = {c.phrase.split()[0].lower() for c in cands
             if c.tool is not None and 'speech' not in c.sources and c.phrase.split()}
    said = stems(said_words(g.heard))
    return Said(
        goal_stems=goal_stems, goal_only=goal_only,
        said_to=said if g.addressed else set(), asked=asked,
        # What the goal or a person says to the robot not to do; a narrator's "the gate will
        # not open" or words overheard are no instruction.
        avoid=avoided(f'{g.goal}. {g.heard if g.addressed else ""}'),
        recalled=' '.join(ln for ln in g.recalled if not _FAILED.search(ln)).lower(),
        # Memory that links what is asked to a value ("the password of the door is ...").
        linked=[memory_content(ln).lower() for ln in g.recalled
                if stems(memory_content(ln)) & asked],
        fresh=stems('' if g.from_tool else g.percept),
        asked_me=not spoke and ('?' in g.heard or g.addressed and bool(acts.news)),
        requested=g.addressed and '?' not in g.heard and g.acts_since_heard == 0 and any(
            w.lower() in verbs for part in re.split(r'[.!;:"]', g.heard)
            for w in _WORD.findall(part)[:4]),
        heard_now=bool(g.heard) and g.addressed and g.acts_since_heard == 0,
        act_named=any(
            c.tool is not None and not c.introspective and 'speech' not in c.sources
            and {_stem(w) for w in content_words(phrase_of(c.tool, c.args))
                 if w not in _words(c.tool).split()} & said
            for c in cands),
        referent=_referent(g, said))


def _referent(g: Grounding, said: set) -> str:
    """Which known thing the person's words mean: the name in view or known that shares the
    most words with what was said, if one alone does ("the big black doodad": the black
    shoe, the only black thing)."""
    share = {name: len(stems(name) & said) for name in set(g.names())}
    top = max(share.values(), default=0)
    best = [n for n, k in share.items() if k == top]
    return best[0] if top > 0 and len(best) == 1 else ''


@dataclass(frozen=True)
class World:
    """What the moment knows of things, their states and what stands in the way."""

    things: set           # names the robot perceives or knows
    meant: list           # the things the cycle's thought is about (as stems)
    blocks: set           # what stands in the way (world.means_ends)
    resume: set           # failed acts whose obstacles are dealt with (tool:args)
    states: dict          # thing -> its last reported state
    mine: dict            # (thing, state) -> the value the robot's own acts set
    effects: dict         # id(c) -> (thing, state, value) the act sets
    on_thing: dict        # id(c) -> the thing the act is on
    pending: set          # things an act would set a state of that does not hold yet
    goal_things: set      # things the goal's words name
    settled: bool         # the goal is met as far as the robot's acts can tell
    step_left: bool       # a step is left towards the standing goal
    frontier: set         # roots of what the last act that changed something named
    changed_by: str       # that act's tool
    elsewhere: str | None  # the thing of a failure whose reason names nothing known
    means: set            # things another tool needs to reach the goal's thing


def _frontier(g: Grounding, acts: Acts) -> tuple[set, str]:
    """What just became possible: the last act that changed something named a thing."""
    names = {_root(w) for n in g.names() for w in content_words(n)}
    for r, news in reversed(acts.news):
        if r.success and news and not r.introspection:
            # An act that tells its thing's state and set none of it opened nothing
            # (slipping past the guard leaves him as he was: greeting him is no next step).
            if not (r.entity and r.state and effect_of(r.tool, r.entity, r.state) is None):
                return roots(_phrase(r.tool, r.args)) & names, r.tool
            break
    return set(), ''


def _effects(cands: Sequence[Candidate], states: dict) -> tuple[dict, dict]:
    """What each act sets on the thing it is on, and that thing."""
    effects: dict[int, tuple] = {}
    on_thing: dict[int, str] = {}
    for c in cands:
        for thing, state in states.items():
            if verb_on(c.tool, thing):
                on_thing[id(c)] = thing
                eff = effect_of(c.tool, thing, state)
                if eff is not None:
                    effects[id(c)] = (thing, *eff)
                break
    return effects, on_thing


def _means(g: Grounding, things: set, states: dict, goal_stems: set) -> set:
    """A thing another tool's description names as what it works with ("Unlock the chest
    with a key you hold"), when that tool acts on a thing the goal names."""
    means: set[str] = set()
    for tool, text in g.described.items():
        if not any(verb_on(tool, t) and stems(t) & goal_stems for t in things | set(states)):
            continue
        said = stems(text)
        means |= {t for t in things if not verb_on(tool, t) and stems(t) <= said}
    return means


def world_of(g: Grounding, cands: Sequence[Candidate], thought: str, said: Said,
             acts: Acts) -> World:
    things = set(g.names())
    blocks, resume = means_ends(g)
    frontier, changed_by = _frontier(g, acts)
    states, mine = thing_states(g), own_changes(g)
    effects, on_thing = _effects(cands, states)
    # What is left to do on a thing: an act whose effect does not hold yet, or whose verb
    # the goal says, unless the goal or a person says not to do it ("never wake him").
    shunned = {id(c) for c in cands if said.avoid and roots(c.phrase) & said.avoid}
    pending = {thing for i, (thing, key, val) in effects.items()
               if states[thing].get(key) != val and i not in shunned}
    goal_things = {t for t in states if stems(t) & said.goal_stems}
    succeeded = {r.tool for r in g.recent if r.success}
    verb_left = {on_thing[id(c)] for c in cands if id(c) in on_thing
                 and c.tool not in succeeded and id(c) not in shunned
                 and _stem(verb_on(c.tool, on_thing[id(c)])) in said.goal_stems}
    settled = bool(goal_things) and not (goal_things & (pending | verb_left)) and \
        any(t in goal_things for t, _ in mine)
    tried = {r.tool for r in g.recent}
    # A step is left towards the standing goal: it names a thing an act here works on
    # ("slip past the soldier": sneak_past_guard), and nothing the robot did has worked yet,
    # or that thing's state is not known and an act on it was not tried, or an act on it
    # would set a state that does not hold yet (the gate is still shut). A goal poses its
    # problem; waiting changes nothing in it.
    goal_named = {t for t in things | set(states) if stems(t) & said.goal_only}
    step_left = bool(g.goal) and not settled and (
        bool(goal_named & pending) or any(
            verb_on(c.tool, t) and (acts.last_success < 0 or t not in states
                                    and c.tool not in tried)
            for c in cands if c.tool is not None and id(c) not in shunned
            for t in goal_named))
    # A failure on a thing whose reason names nothing known points elsewhere: to the other
    # things of the scene (the lever, when the gate "will not open: something else has to
    # change first").
    last = g.recent[-1] if g.recent else None
    return World(
        things=things, meant=thought_of(thought, things), blocks=blocks, resume=resume,
        states=states, mine=mine, effects=effects, on_thing=on_thing, pending=pending,
        goal_things=goal_things, settled=settled, step_left=step_left, frontier=frontier,
        changed_by=changed_by,
        elsewhere=unnamed_failure(last, g) if last is not None else None,
        means=_means(g, things, states, said.goal_stems))


@dataclass
class Moment:
    """What the weighing reads of the situation, computed once for all candidates: what the
    models say (`readings`), asked first, then the facts of the robot's acts, of what was
    said and of the world. The hooks (`relate`, `danger`, `stance`, ...) are asked in that
    first step and not kept."""

    g: Grounding
    cands: Sequence[Candidate]
    thought: str = ''
    hurt: InitVar[Collection[str]] = ()           # roots of acts memory says hurt
    relate: InitVar[Relate | None] = None
    danger: InitVar[Danger | None] = None
    stance: InitVar['st.Stance | None'] = None      # example clauses (stance.py)
    stance_relate: InitVar[Relate | None] = None
    understood: InitVar[Mapping[int, float] | None] = None   # id(c) -> probe.py's score
    readings: Readings = field(init=False)
    acts: Acts = field(init=False)
    said: Said = field(init=False)
    world: World = field(init=False)

    def __post_init__(self, hurt, relate, danger, stance, stance_relate, understood):
        self.readings = read(self.g, self.cands, hurt, relate, danger, stance,
                             stance_relate, understood)
        self.acts = acts_of(self.g)
        self.said = said_of(self.g, self.cands, self.acts)
        self.world = world_of(self.g, self.cands, self.thought, self.said, self.acts)
