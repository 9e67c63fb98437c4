"""The terms of the choice, one small scorer each, and the weights that sum them.

A candidate's total is `sum(weights[name] * features[name])`. Each feature is computed by one
scorer below from what the moment holds (`Moment`, read once per weighing) and the candidate;
the weights are a separate table (`Weights`): today's hand-set ones (`Weights.hand`, the
defaults of `ChoiceConfig`) or the ones fitted on the dev split of the decision benchmark
(`Weights.fitted`, loaded from `weights.json` beside this file, with their provenance). A
feature's value is unweighted: a count, a 0/1 flag, a similarity; its sign and size come
from the weight, so a fit can make any term count more, less, or not at all.

Pure Python; no ROS.
"""

from __future__ import annotations

from dataclasses import dataclass, field
import json
import math
from pathlib import Path
import re
from typing import Callable, Mapping, Sequence

from maxim_core.deliberation import choice as ch
from maxim_core.deliberation import stance as st

WEIGHTS_FILE = Path(__file__).with_name('weights.json')


def _key(tool, args) -> tuple:
    return tool, json.dumps(args, sort_keys=True)


@dataclass
class Moment:
    """What the weighing reads of the situation, computed once for all candidates."""

    g: 'ch.Grounding'
    cands: Sequence['ch.Candidate']
    thought: str = ''
    hurt: set = field(default_factory=set)          # roots of acts memory says hurt
    relate: Callable[[str, Sequence[str]], Sequence[float]] | None = None
    danger: Callable[[str, Mapping], float] | None = None
    stance: 'st.Stance | None' = None               # example clauses (stance.py)
    stance_relate: Callable[[str, Sequence[str]], Sequence[float]] | None = None
    understood: Mapping[int, float] = field(default_factory=dict)   # id(c) -> probe.py's score

    def __post_init__(self):
        g = self.g
        self.goal_stems = {ch._stem(w) for w in ch.content_words(f'{g.goal} {g.heard}')}
        # A thing named by the word the scene used for it is named ("pass the gate": the
        # door the world knows it as).
        for word, thing in g.aliases.items():
            if {ch._stem(w) for w in ch.content_words(word)} & self.goal_stems:
                self.goal_stems |= {ch._stem(w) for w in ch.content_words(thing)}
        # The standing goal's words alone, and the words said to the robot: 'goal' counts
        # both, and a standing goal ("watch the room") or a name heard in chatter is no ask.
        self.goal_only = {ch._stem(w) for w in ch.content_words(g.goal)}
        for word, thing in g.aliases.items():
            if {ch._stem(w) for w in ch.content_words(word)} & self.goal_only:
                self.goal_only |= {ch._stem(w) for w in ch.content_words(thing)}
        self.said_to = {ch._stem(w) for w in ch.content_words(ch.said_words(g.heard))} \
            if g.addressed else set()
        self.asked = self.goal_stems | {ch._stem(w) for w in ch.content_words(
            f'{g.scene} {"" if g.from_tool else g.percept}')}
        # What the goal or a person says to the robot not to do; a narrator's "the gate will
        # not open" or words overheard are no instruction.
        self.avoid = ch.avoided(f'{g.goal}. {g.heard if g.addressed else ""}')
        # Recalled lines that name an act as done, not as failed.
        self.recalled = ' '.join(ln for ln in g.recalled if not ch._FAILED.search(ln)).lower()
        # Memory that links what is asked to a value ("the password of the door is ...").
        self.linked = [ch.memory_content(ln).lower() for ln in g.recalled
                       if {ch._stem(w) for w in ch.content_words(ch.memory_content(ln))}
                       & self.asked]
        self.blocks, self.resume = ch.means_ends(g)
        self.own_tools = {r.tool for r in g.recent}
        self.things = set(g.names())
        self.meant = ch.thought_of(self.thought, self.things)
        self.last_success = max((i for i, r in enumerate(g.recent)
                                 if r.success and not r.introspection), default=-1)
        self.acts = ch.news_of_acts(g)
        self.stale = sum(1 for _, news in self.acts if not news) + \
            max(0, g.acts_since_news - len(g.recent))
        self.dull = {r.tool for r, news in self.acts if r.introspection and not news}
        self.fresh = {ch._stem(w) for w in ch.content_words('' if g.from_tool else g.percept)}
        # What just became possible: the last act that changed something named a thing.
        self.frontier, self.changed_by = set(), ''
        names = {ch._root(w) for n in g.names() for w in ch.content_words(n)}
        for r, news in reversed(self.acts):
            if r.success and news and not r.introspection:
                # An act that tells its thing's state and set none of it opened nothing
                # (slipping past the guard leaves him as he was: greeting him is no next step).
                if not (r.entity and r.state and ch.effect_of(r.tool, r.entity, r.state) is None):
                    self.frontier = {ch._root(w) for w in ch.content_words(
                        ch._phrase(r.tool, r.args))} & names
                    self.changed_by = r.tool
                break
        self.done_since = {_key(r.tool, r.args) for r, _ in self.acts if r.success}
        self.states = ch.thing_states(g)
        self.mine = ch.own_changes(g)
        self.effects: dict[int, tuple] = {}
        self.on_thing: dict[int, str] = {}
        for c in self.cands:
            for thing, state in self.states.items():
                if ch.verb_on(c.tool, thing):
                    self.on_thing[id(c)] = thing
                    eff = ch.effect_of(c.tool, thing, state)
                    if eff is not None:
                        self.effects[id(c)] = (thing, *eff)
                    break
        # What is left to do on a thing: an act whose effect does not hold yet, or whose verb
        # the goal says, unless the goal or a person says not to do it ("never wake him").
        shunned = {id(c) for c in self.cands if self.avoid and _roots(c) & self.avoid}
        self.pending = {thing for i, (thing, key, val) in self.effects.items()
                        if self.states[thing].get(key) != val and i not in shunned}
        self.goal_things = {t for t in self.states
                            if {ch._stem(w) for w in ch.content_words(t)} & self.goal_stems}
        succeeded = {r.tool for r in g.recent if r.success}
        verb_left = {self.on_thing[id(c)] for c in self.cands if id(c) in self.on_thing
                     and c.tool not in succeeded and id(c) not in shunned
                     and ch._stem(ch.verb_on(c.tool, self.on_thing[id(c)])) in self.goal_stems}
        self.settled = bool(self.goal_things) and \
            not (self.goal_things & (self.pending | verb_left)) and \
            any(t in self.goal_things for t, _ in self.mine)
        tried = {r.tool for r in g.recent}
        # A step is left towards the standing goal: it names a thing an act here works on
        # ("slip past the soldier": sneak_past_guard), and nothing the robot did has worked
        # yet, or that thing's state is not known and an act on it was not tried, or an act
        # on it would set a state that does not hold yet (the gate is still shut). A goal
        # poses its problem; waiting changes nothing in it.
        goal_named = {t for t in self.things | set(self.states)
                      if {ch._stem(w) for w in ch.content_words(t)} & self.goal_only}
        self.step_left = bool(g.goal) and not self.settled and (
            bool(goal_named & self.pending) or any(
                ch.verb_on(c.tool, t) and (self.last_success < 0 or t not in self.states
                                           and c.tool not in tried)
                for c in self.cands if c.tool is not None and id(c) not in shunned
                for t in goal_named))
        # Habit is to what the robot did since a person last spoke to it.
        self.since = 0 if g.acts_since_heard < 0 else \
            len(g.recent) - min(g.acts_since_heard, len(g.recent))
        self.done_before = {_key(r.tool, r.args) for i, r in enumerate(g.recent)
                            if r.blocked or r.success and i >= self.since}
        spoke = any(k in ch.FREE_TEXT_PARAMS for r, _ in self.acts for k in r.args)
        self.speakers = {r.tool for r in g.recent
                         if any(k in ch.FREE_TEXT_PARAMS and k != 'thought' for k in r.args)}
        self.asked_me = not spoke and ('?' in g.heard or g.addressed and bool(self.acts))
        verbs = {c.phrase.split()[0].lower() for c in self.cands
                 if c.tool is not None and 'speech' not in c.sources and c.phrase.split()}
        self.requested = g.addressed and '?' not in g.heard and g.acts_since_heard == 0 and \
            any(w.lower() in verbs for part in re.split(r'[.!;:"]', g.heard)
                for w in ch._WORD.findall(part)[:4])
        self.heard_now = bool(g.heard) and g.addressed and g.acts_since_heard == 0
        said = {ch._stem(w) for w in ch.content_words(ch.said_words(g.heard))}
        self.act_named = any(
            c.tool is not None and not c.introspective and 'speech' not in c.sources
            and {ch._stem(w) for w in ch.content_words(ch.phrase_of(c.tool, c.args))
                 if w not in ch._words(c.tool).split()} & said
            for c in self.cands)
        # Which known thing the person's words mean: the name in view or known that shares
        # the most words with what was said, if one alone does ("the big black doodad":
        # the black shoe, the only black thing).
        names = set(g.names())
        share = {name: len({ch._stem(w) for w in ch.content_words(name)} & said)
                 for name in names}
        top = max(share.values(), default=0)
        best = [n for n, k in share.items() if k == top]
        self.referent = best[0] if top > 0 and len(best) == 1 else ''
        # What a person said to the robot, taken as asking or turning away: a narrator's
        # scene or talk overheard asks nothing (like `avoid`, like `act_unasked`).
        self.similarity: dict[int, float] = {}
        if self.relate is not None and g.heard and g.addressed:
            acts = [c for c in self.cands if c.tool is not None]
            sims = self.relate(g.heard, [c.phrase for c in acts]) if acts else None
            for c, s in zip(acts, sims or ()):
                self.similarity[id(c)] = float(s)
        # A failure on a thing whose reason names nothing known points elsewhere: to the
        # other things of the scene (the lever, when the gate "will not open: something
        # else has to change first").
        last = g.recent[-1] if g.recent else None
        self.elsewhere = ch.unnamed_failure(last, g) if last is not None else None
        # The means: a thing another tool's description names as what it works with ("Unlock
        # the chest with a key you hold"), when that tool acts on a thing the goal names.
        self.means: set[str] = set()
        for tool, text in g.described.items():
            if not any(ch.verb_on(tool, t) and {ch._stem(w) for w in ch.content_words(t)}
                       & self.goal_stems for t in self.things | set(self.states)):
                continue
            said = {ch._stem(w) for w in ch.content_words(text)}
            self.means |= {t for t in self.things if not ch.verb_on(tool, t)
                           and {ch._stem(w) for w in ch.content_words(t)} <= said}
        # How the words about each act's thing take it: asked for or turned away. Only an
        # act on a thing has one ("turn my head right" shares 'right' with "right now").
        self.stance_of: dict[int, float] = {}
        if self.stance is not None and g.heard and g.addressed:
            self.stance_of = st.stances(
                self.stance, self.stance_relate, ch.said_words(g.heard),
                list(g.names()) + list(g.aliases),
                {id(c): c.phrase for c in self.cands
                 if c.tool is not None and 'speech' not in c.sources
                 and (any(ch.verb_on(c.tool, t) for t in self.things) or any(
                     str(v).strip().lower() in self.things for v in c.args.values()))})


# -- the scorers: one term each ------------------------------------------------------------
# An act's scorers take (candidate, moment); the wait candidate has its own.

def _words(c) -> set:
    return {ch._stem(w) for w in ch.content_words(c.phrase)}


def _roots(c) -> set:
    return {ch._root(w) for w in ch.content_words(c.phrase)}


def moot_goal(c, m: Moment) -> bool:
    """The goal is met: an act of unknown effect on its thing is no step towards it."""
    return m.settled and not c.introspective and id(c) not in m.effects and \
        m.on_thing.get(id(c)) in m.goal_things


def relevance(c, m: Moment) -> float:
    """The model's liking (PMI in units of the candidates' spread); an act the diary tells
    as done gains nothing from being there again, nor does speech already given."""
    r = c.relevance
    if c.tool is None:
        return r
    if moot_goal(c, m):
        r = min(r, 0.0)
    if _key(c.tool, c.args) in m.done_before or \
            'speech' in c.sources and (c.tool in m.speakers or m.requested):
        r = min(r, 0.0)
    return r


def value(c, m: Moment) -> float:
    """The NAc's learned value of the tool in this context, centred: -1..1."""
    v = m.g.values.get(c.tool)
    return 2 * (v - 0.5) if v is not None else 0.0


def goal(c, m: Moment) -> float:
    """Words of the goal and of what a person said that the act's phrase shares (<= 2)."""
    return 0.0 if moot_goal(c, m) else float(min(2, len(_words(c) & m.goal_stems)))


def goal_words(c, m: Moment) -> float:
    """Words of the standing goal alone that the act shares (<= 2): its tool's words and
    the things it acts on. A word the goal lends an argument is no sign the act serves it
    ("memory recall room" for "watch the room")."""
    if moot_goal(c, m):
        return 0.0
    words = {ch._stem(w) for w in ch.content_words(ch._words(c.tool or ''))}
    for v in c.args.values():
        if isinstance(v, str) and v.strip().lower() in m.things:
            words |= {ch._stem(w) for w in ch.content_words(v)}
    return float(min(2, len(words & m.goal_only)))


def said_to(c, m: Moment) -> float:
    """Words said to the robot (not overheard) that the act's phrase shares (<= 2)."""
    return float(min(2, len(_words(c) & m.said_to))) if 'speech' not in c.sources else 0.0


def avoid(c, m: Moment) -> float:
    """The act shares the word a goal or a person says not to do ("without waking")."""
    return 0.0 if moot_goal(c, m) else float(bool(m.avoid and _roots(c) & m.avoid))


def hurt(c, m: Moment) -> float:
    """Memory says the act hurt before."""
    return float(bool(m.hurt and _roots(c) & m.hurt and not c.introspective))


def obstacle(c, m: Moment) -> float:
    """The act deals with what stands in the way (a failure's reason, a state it undoes)."""
    return float(bool(m.blocks and ch.addresses(c.phrase, m.blocks)))


def memory_tool(c, m: Moment) -> float:
    """A recalled line names the tool as done (not the robot's own recent act)."""
    return float(c.tool not in m.own_tools and (ch._words(c.tool) in m.recalled
                                                or c.tool in m.recalled))


def memory_link(c, m: Moment) -> float:
    """A recalled line links what is asked to the act's argument (the code of the door)."""
    vals = [v.lower() for k, v in c.args.items()
            if isinstance(v, str) and len(v) >= 3 and k not in ch.FREE_TEXT_PARAMS
            and not ch._NAMES_TOOL.search(k)
            or k in ch.FREE_TEXT_PARAMS and v and 'memory' in c.sources]
    return float(any(re.search(rf'\b{re.escape(v)}\b', ln) for v in vals for ln in m.linked
                     if ch._stem(v) not in m.asked))


def _habits(c, m: Moment) -> dict:
    """Repeats since a person last spoke: (done, failed, same tool) counts and dullness."""
    g, speech = m.g, c.free_param not in ('', None, 'thought')
    out = {'done': 0.0, 'failed': 0.0, 'tool_used': 0.0, 'dull': 0.0}
    for i, r in enumerate(g.recent):
        if r.tool != c.tool or (i < m.since and not r.blocked):
            continue
        same = _key(r.tool, r.args) == _key(c.tool, c.args)
        if same and (r.blocked or r.success) or speech and r.success and any(
                k in ch.FREE_TEXT_PARAMS for k in r.args):
            out['done'] += 1
        elif r.success and not r.introspection and not any(
                k in ch.FREE_TEXT_PARAMS for k in c.args) and \
                (other := set(ch._string_values(c.args)) - set(ch._string_values(r.args))) \
                and not other & m.things:
            out['done'] += 1            # done already: other words change nothing
        elif same and i >= m.last_success:
            out['failed'] += 1
        else:
            out['tool_used'] += 1
    if c.tool in m.dull:
        out['dull'] = 1.0
    elif c.introspective and _looked_at(c, m):
        out['dull'] = 0.5               # the moment just told about it
    if c.key in m.resume:
        out = dict.fromkeys(out, 0.0)   # what was in its way is dealt with
    return out


def _looked_at(c, m: Moment) -> bool:
    vals = ch._string_values(c.args)
    return bool(vals) and all({ch._stem(w) for w in ch.content_words(v)} <= m.fresh
                              and ch.content_words(v) for v in vals)


def resume(c, m: Moment) -> float:
    """A failed act whose obstacle has since been dealt with: take it up again."""
    return float(c.key in m.resume)


def moot(c, m: Moment) -> float:
    """The act's effect holds already (opening the open door)."""
    if id(c) not in m.effects:
        return 0.0
    thing, key, val = m.effects[id(c)]
    return float(m.states[thing].get(key) == val)


def restore(c, m: Moment) -> float:
    """The act brings a thing the goal names to the state the robot's own acts allow."""
    if id(c) not in m.effects:
        return 0.0
    thing, key, val = m.effects[id(c)]
    return float(m.states[thing].get(key) != val and m.mine.get((thing, key), val) == val
                 and bool({ch._stem(w) for w in ch.content_words(thing)} & m.goal_stems))


def frontier(c, m: Moment) -> float:
    """An act on what the last act changed (the chest is unlocked: open it), not one whose
    effect holds already (unlocking the door just opened)."""
    return float(bool(
        m.frontier and not c.introspective and not moot(c, m) and c.tool != m.changed_by
        and _key(c.tool, c.args) not in m.done_since and _roots(c) & m.frontier
        and not (id(c) not in m.effects and (m.on_thing.get(id(c)) in m.pending
                                             or m.settled and id(c) in m.on_thing))))


def means(c, m: Moment) -> float:
    """An act on a thing another tool needs to reach the goal's thing (take the key the
    chest's lock wants), not yet done."""
    return float(bool(m.means) and not c.introspective and 'speech' not in c.sources
                 and any(ch.verb_on(c.tool, t) for t in m.means)
                 and not any(r.success and r.tool == c.tool for r in m.g.recent))


def elsewhere(c, m: Moment) -> float:
    """An act on another thing of the scene, when the last act failed on its thing for a
    reason that names nothing known (see `choice.unnamed_failure`), not tried yet."""
    return float(bool(m.elsewhere) and not c.introspective and 'speech' not in c.sources
                 and not ch.verb_on(c.tool, m.elsewhere)
                 and any(ch.verb_on(c.tool, t) for t in m.things)
                 and not any(r.tool == c.tool for r in m.g.recent))


def answer(c, m: Moment) -> float:
    """Speech, when a person asked and was not answered."""
    return float(m.asked_me and 'speech' in c.sources)


def addressed(c, m: Moment) -> float:
    """Speech, when a person just spoke to the robot (asked or not)."""
    return float(m.heard_now and 'speech' in c.sources)


def referent(c, m: Moment) -> float:
    """An act on the one known thing the person's words mean most (see `Moment`)."""
    return float(bool(m.referent) and 'speech' not in c.sources
                 and any(str(v).strip().lower() == m.referent for v in c.args.values()))


def asks_what(c, m: Moment) -> float:
    """Speech, when what was said holds an interrogative ("what colour is ...", "tell me
    what you see"): a question for words, where "could you face the cup?" asks for an act."""
    return float('speech' in c.sources and bool(ch.INTERROGATIVE.search(
        ch.said_words(m.g.heard))))


def named_act(c, m: Moment) -> float:
    """Speech, when the person's words name a thing an act on the world is on ("could you
    face the cup?" asks for the act more than for words)."""
    return float('speech' in c.sources and m.act_named)


def intent(c, m: Moment) -> float:
    """An act on the thing the cycle's thought is about."""
    return float(bool(m.meant and 'speech' not in c.sources
                      and any(stems <= _words(c) for stems in m.meant)))


def pain(c, m: Moment) -> float:
    """The strongest pain the same act (same direction) caused."""
    return max((float(p) for t, a, p in m.g.pains
                if t == c.tool and ch._same_direction(a or {}, c.args)), default=0.0)


def similarity(c, m: Moment) -> float:
    """The sentence model's similarity of what a person said to the act (0 unheard)."""
    return m.similarity.get(id(c), 0.0)


def stance(c, m: Moment) -> float:
    """How the clause of what was said that the act answers takes it: above 0 asked for
    ("face the cup"), below 0 turned away ("leave the mug alone"); 0 when no clause names
    it (stance.py)."""
    return m.stance_of.get(id(c), 0.0)


def danger(c, m: Moment) -> float:
    """How dangerous the fear gate's patterns find the call (0..1)."""
    return float(m.danger(c.tool, c.args)) if m.danger is not None else 0.0


def speech_unasked(c, m: Moment) -> float:
    """Speech when nothing was said to the robot: a narrator's scene or talk overheard is
    nobody to answer."""
    return float('speech' in c.sources and not (m.g.heard and m.g.addressed))


def act_unasked(c, m: Moment) -> float:
    """An act on the world when nothing was said to the robot: words overheard or a
    narrator's are no ask (the robot acted on everything before anyone asked; a world that
    tells its scene poses the problem itself)."""
    return float(not c.introspective and 'speech' not in c.sources
                 and not (m.g.heard and m.g.addressed))


def novel(c, m: Moment) -> float:
    """An act on a thing that just came into view."""
    new = [{ch._stem(w) for w in ch.content_words(n)} for n in m.g.new]
    return float(bool(new) and 'speech' not in c.sources and not c.introspective
                 and any(stems and stems <= _words(c) for stems in new))


def memory_answer(c, m: Moment) -> float:
    """The argument is the value memory ties first to what is asked or to the parameter
    (the code told with the thing at hand, the name told after "my name is")."""
    return float('tied_first' in c.sources)


def perceived(c, m: Moment) -> float:
    """The answer names what is in view (`choice.perceived_answer`)."""
    return float('perceived' in c.sources)


def related_answer(c, m: Moment) -> float:
    """The answer is in the recalled line closest in meaning to what was said (the sentence
    model's reading, where `memory_answer` is the line sharing its words)."""
    return float('related' in c.sources)


def answer_near(c, m: Moment) -> float:
    """A reply built from a source (answers.py): how close in meaning the source sentence is
    to what was heard (the sentence model's cosine; 0 without one)."""
    if 'answer' not in c.sources:
        return 0.0
    text = next(iter(c.args.values()), '')
    return next((float(sim) for t, _, sim in m.g.answers if t == text), 0.0)


def _from(source: str) -> Callable:
    def scorer(c, m: Moment) -> float:
        return float('answer' in c.sources and source in c.sources)
    scorer.__doc__ = f'A reply built from {source} (answers.py).'
    return scorer


def understood(c, m: Moment) -> float:
    """The probe's reading of what the person wants (probe.py): its score of this act."""
    return m.understood.get(id(c), 0.0)


def recall(c, m: Moment) -> float:
    """A read-only act (a look in memory, a prediction)."""
    return float(c.introspective)


# The wait candidate's own terms.
def wait(c, m: Moment) -> float:
    return 1.0


def stale(c, m: Moment) -> float:
    """Acts since the last news that brought none: the bar to act rises."""
    return float(m.stale)


def settled(c, m: Moment) -> float:
    """The goal is met as far as the robot's acts can tell."""
    return float(m.settled)


def goal_open(c, m: Moment) -> float:
    """A standing goal that the robot's acts have not met yet."""
    return float(bool(m.g.goal) and not m.settled)


def step_left(c, m: Moment) -> float:
    """A step is left towards the standing goal (see `Moment`)."""
    return float(m.step_left)


def wait_heard(c, m: Moment) -> float:
    """A person just spoke to the robot and nothing was done about it yet."""
    return float(m.heard_now)


ACT_SCORERS: dict[str, Callable] = {
    'relevance': relevance, 'value': value, 'goal': goal, 'goal_words': goal_words,
    'said_to': said_to, 'avoid': avoid,
    'hurt': hurt,
    'obstacle': obstacle, 'memory_tool': memory_tool, 'memory_link': memory_link,
    'resume': resume, 'moot': moot, 'restore': restore, 'frontier': frontier,
    'answer': answer, 'intent': intent, 'pain': pain, 'similarity': similarity,
    'danger': danger, 'speech_unasked': speech_unasked, 'act_unasked': act_unasked,
    'recall': recall, 'novel': novel, 'addressed': addressed,
    'named_act': named_act, 'memory_answer': memory_answer, 'referent': referent,
    'asks_what': asks_what, 'stance': stance, 'related_answer': related_answer,
    'means': means, 'elsewhere': elsewhere, 'perceived': perceived,
    'answer_near': answer_near, 'understood': understood,
    **{f'answer_{s}': _from(s) for s in ('memory', 'view', 'read', 'scene', 'heard',
                                         'decline', 'clarify')},
}
HABITS = ('done', 'failed', 'tool_used', 'dull')
WAIT_SCORERS: dict[str, Callable] = {
    'relevance': relevance, 'wait': wait, 'understood': understood, 'stale': stale,
    'settled': settled, 'wait_heard': wait_heard, 'goal_open': goal_open, 'step_left': step_left,
}
# 'prior' (the learned tool index) and 'redirect' (asked for what hurt: the same kind of
# act done another way) are filled by the chooser, which holds the index and sees all
# candidates at once.
FEATURES: tuple[str, ...] = tuple(dict.fromkeys(
    list(ACT_SCORERS) + list(HABITS) + ['prior', 'redirect'] + list(WAIT_SCORERS)))


def features(c, m: Moment) -> dict[str, float]:
    """Every feature of one candidate (absent ones are 0)."""
    if c.tool is None:
        return {k: f(c, m) for k, f in WAIT_SCORERS.items()}
    out = {k: f(c, m) for k, f in ACT_SCORERS.items()}
    out.update(_habits(c, m))
    return out


@dataclass(frozen=True)
class Weights:
    """One weight per feature, and where the numbers came from."""

    w: Mapping[str, float]
    source: str = 'hand'
    provenance: Mapping = field(default_factory=dict)

    def total(self, f: Mapping[str, float]) -> float:
        return sum(self.w.get(k, 0.0) * v for k, v in f.items())

    def part(self, f: Mapping[str, float], names: Sequence[str]) -> float:
        return sum(self.w.get(k, 0.0) * f.get(k, 0.0) for k in names)

    @staticmethod
    def hand(cfg) -> 'Weights':
        """Today's hand-set sum, term for term (`ChoiceConfig`'s defaults: not fits)."""
        return Weights({
            'relevance': cfg.w_relevance, 'value': cfg.w_value, 'goal': cfg.w_goal,
            'avoid': -cfg.w_avoid, 'hurt': -cfg.w_avoid, 'prior': 1.0,
            'obstacle': cfg.w_need, 'memory_tool': cfg.w_memory,
            'memory_link': cfg.w_memory, 'resume': cfg.w_need, 'moot': -cfg.habit_done,
            'restore': cfg.w_need, 'frontier': cfg.w_frontier, 'answer': cfg.w_answer,
            'intent': cfg.w_intent, 'pain': -cfg.w_pain, 'redirect': 1.0,
            'done': -cfg.habit_done, 'failed': -cfg.habit_failed,
            'tool_used': -cfg.habit_tool, 'dull': -cfg.habit_dull,
            'wait': cfg.wait_bias, 'stale': cfg.effort, 'settled': cfg.w_need}, 'hand')

    @staticmethod
    def load(path: str | Path = WEIGHTS_FILE) -> 'Weights':
        """Weights saved by `save` (the fit's output), with their provenance."""
        try:
            data = json.loads(Path(path).read_text())
            w = {str(k): float(v) for k, v in data['weights'].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ValueError(f'{path}: not a weights file ({exc})') from exc
        if not all(math.isfinite(v) for v in w.values()):
            raise ValueError(f'{path}: a weight is not finite')
        return Weights(w, 'fitted', dict(data.get('provenance') or {}))

    def save(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(
            {'weights': {k: round(v, 6) for k, v in sorted(self.w.items())},
             'provenance': dict(self.provenance)}, indent=1, sort_keys=True) + '\n')
