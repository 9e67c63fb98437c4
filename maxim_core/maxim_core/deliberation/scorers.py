"""The terms of the choice, one small scorer each.

A candidate's total is `sum(weights[name] * features[name])`. Each feature is computed by one
scorer below from the facts of the moment (`facts.Moment`, read once per weighing) and the
candidate; the weights that sum them are a separate table (weights.py). A feature's value is
unweighted: a count, a 0/1 flag, a similarity; its sign and size come from the weight, so a
fit can make any term count more, less, or not at all.

Pure Python; no ROS.
"""

from __future__ import annotations

import re
from typing import Callable

# The chooser reads the stance examples, the weights and the moment through this module.
from maxim_core.deliberation import stance as st  # noqa: F401
from maxim_core.deliberation.facts import act_key, Moment
from maxim_core.deliberation.weights import Weights, WEIGHTS_FILE  # noqa: F401
from maxim_core.deliberation.words import (_NAMES_TOOL, _stem, _string_values,
                                           _words as _tool_words, content_words,
                                           FREE_TEXT_PARAMS, INTERROGATIVE, roots,
                                           said_words, stems)
from maxim_core.deliberation.world import _same_direction, addresses, verb_on


# -- the scorers: one term each ------------------------------------------------------------
# An act's scorers take (candidate, moment); the wait candidate has its own.

def _words(c) -> set:
    return stems(c.phrase)


def _roots(c) -> set:
    return roots(c.phrase)


def moot_goal(c, m: Moment) -> bool:
    """The goal is met: an act of unknown effect on its thing is no step towards it."""
    return m.world.settled and not c.introspective and id(c) not in m.world.effects and \
        m.world.on_thing.get(id(c)) in m.world.goal_things


def relevance(c, m: Moment) -> float:
    """The model's liking (PMI in units of the candidates' spread); an act the diary tells
    as done gains nothing from being there again, nor does speech already given."""
    r = c.relevance
    if c.tool is None:
        return r
    if moot_goal(c, m):
        r = min(r, 0.0)
    if act_key(c.tool, c.args) in m.acts.done_before or \
            'speech' in c.sources and (c.tool in m.acts.speakers or m.said.requested):
        r = min(r, 0.0)
    return r


def value(c, m: Moment) -> float:
    """The NAc's learned value of the tool in this context, centred: -1..1."""
    v = m.g.values.get(c.tool)
    return 2 * (v - 0.5) if v is not None else 0.0


def goal(c, m: Moment) -> float:
    """Words of the goal and of what a person said that the act's phrase shares (<= 2)."""
    return 0.0 if moot_goal(c, m) else float(min(2, len(_words(c) & m.said.goal_stems)))


def goal_words(c, m: Moment) -> float:
    """Words of the standing goal alone that the act shares (<= 2): its tool's words and
    the things it acts on. A word the goal lends an argument is no sign the act serves it
    ("memory recall room" for "watch the room")."""
    if moot_goal(c, m):
        return 0.0
    words = stems(_tool_words(c.tool or ''))
    for v in c.args.values():
        if isinstance(v, str) and v.strip().lower() in m.world.things:
            words |= stems(v)
    return float(min(2, len(words & m.said.goal_only)))


def said_to(c, m: Moment) -> float:
    """Words said to the robot (not overheard) that the act's phrase shares (<= 2)."""
    return float(min(2, len(_words(c) & m.said.said_to))) if 'speech' not in c.sources \
        else 0.0


def avoid(c, m: Moment) -> float:
    """The act shares the word a goal or a person says not to do ("without waking")."""
    return 0.0 if moot_goal(c, m) else float(bool(m.said.avoid and _roots(c) & m.said.avoid))


def hurt(c, m: Moment) -> float:
    """Memory says the act hurt before."""
    return float(bool(m.readings.hurt and _roots(c) & m.readings.hurt
                      and not c.introspective))


def obstacle(c, m: Moment) -> float:
    """The act deals with what stands in the way (a failure's reason, a state it undoes)."""
    return float(bool(m.world.blocks and addresses(c.phrase, m.world.blocks)))


def memory_tool(c, m: Moment) -> float:
    """A recalled line names the tool as done (not the robot's own recent act)."""
    return float(c.tool not in m.acts.own_tools and (_tool_words(c.tool) in m.said.recalled
                                                     or c.tool in m.said.recalled))


def memory_link(c, m: Moment) -> float:
    """A recalled line links what is asked to the act's argument (the code of the door)."""
    vals = [v.lower() for k, v in c.args.items()
            if isinstance(v, str) and len(v) >= 3 and k not in FREE_TEXT_PARAMS
            and not _NAMES_TOOL.search(k)
            or k in FREE_TEXT_PARAMS and v and 'memory' in c.sources]
    return float(any(re.search(rf'\b{re.escape(v)}\b', ln) for v in vals
                     for ln in m.said.linked if _stem(v) not in m.said.asked))


def _habits(c, m: Moment) -> dict:
    """Repeats since a person last spoke: (done, failed, same tool) counts and dullness."""
    g, speech = m.g, c.free_param not in ('', None, 'thought')
    out = {'done': 0.0, 'failed': 0.0, 'tool_used': 0.0, 'dull': 0.0}
    for i, r in enumerate(g.recent):
        if r.tool != c.tool or (i < m.acts.since and not r.blocked):
            continue
        same = act_key(r.tool, r.args) == act_key(c.tool, c.args)
        if same and (r.blocked or r.success) or speech and r.success and any(
                k in FREE_TEXT_PARAMS for k in r.args):
            out['done'] += 1
        elif r.success and not r.introspection and not any(
                k in FREE_TEXT_PARAMS for k in c.args) and \
                (other := set(_string_values(c.args)) - set(_string_values(r.args))) \
                and not other & m.world.things:
            out['done'] += 1            # done already: other words change nothing
        elif same and i >= m.acts.last_success:
            out['failed'] += 1
        else:
            out['tool_used'] += 1
    if c.tool in m.acts.dull:
        out['dull'] = 1.0
    elif c.introspective and _looked_at(c, m):
        out['dull'] = 0.5               # the moment just told about it
    if c.key in m.world.resume:
        out = dict.fromkeys(out, 0.0)   # what was in its way is dealt with
    return out


def _looked_at(c, m: Moment) -> bool:
    vals = _string_values(c.args)
    return bool(vals) and all(stems(v) <= m.said.fresh
                              and content_words(v) for v in vals)


def resume(c, m: Moment) -> float:
    """A failed act whose obstacle has since been dealt with: take it up again."""
    return float(c.key in m.world.resume)


def moot(c, m: Moment) -> float:
    """The act's effect holds already (opening the open door)."""
    if id(c) not in m.world.effects:
        return 0.0
    thing, key, val = m.world.effects[id(c)]
    return float(m.world.states[thing].get(key) == val)


def restore(c, m: Moment) -> float:
    """The act brings a thing the goal names to the state the robot's own acts allow."""
    if id(c) not in m.world.effects:
        return 0.0
    thing, key, val = m.world.effects[id(c)]
    w = m.world
    return float(w.states[thing].get(key) != val and w.mine.get((thing, key), val) == val
                 and bool(stems(thing) & m.said.goal_stems))


def frontier(c, m: Moment) -> float:
    """An act on what the last act changed (the chest is unlocked: open it), not one whose
    effect holds already (unlocking the door just opened)."""
    w = m.world
    return float(bool(
        w.frontier and not c.introspective and not moot(c, m) and c.tool != w.changed_by
        and act_key(c.tool, c.args) not in m.acts.done_since and _roots(c) & w.frontier
        and not (id(c) not in w.effects and (w.on_thing.get(id(c)) in w.pending
                                             or w.settled and id(c) in w.on_thing))))


def means(c, m: Moment) -> float:
    """An act on a thing another tool needs to reach the goal's thing (take the key the
    chest's lock wants), not yet done."""
    return float(bool(m.world.means) and not c.introspective and 'speech' not in c.sources
                 and any(verb_on(c.tool, t) for t in m.world.means)
                 and not any(r.success and r.tool == c.tool for r in m.g.recent))


def elsewhere(c, m: Moment) -> float:
    """An act on another thing of the scene, when the last act failed on its thing for a
    reason that names nothing known (see `world.unnamed_failure`), not tried yet."""
    return float(bool(m.world.elsewhere) and not c.introspective and 'speech' not in c.sources
                 and not verb_on(c.tool, m.world.elsewhere)
                 and any(verb_on(c.tool, t) for t in m.world.things)
                 and not any(r.tool == c.tool for r in m.g.recent))


def answer(c, m: Moment) -> float:
    """Speech, when a person asked and was not answered."""
    return float(m.said.asked_me and 'speech' in c.sources)


def addressed(c, m: Moment) -> float:
    """Speech, when a person just spoke to the robot (asked or not)."""
    return float(m.said.heard_now and 'speech' in c.sources)


def referent(c, m: Moment) -> float:
    """An act on the one known thing the person's words mean most (see `Moment`)."""
    return float(bool(m.said.referent) and 'speech' not in c.sources
                 and any(str(v).strip().lower() == m.said.referent for v in c.args.values()))


def asks_what(c, m: Moment) -> float:
    """Speech, when what was said holds an interrogative ("what colour is ...", "tell me
    what you see"): a question for words, where "could you face the cup?" asks for an act."""
    return float('speech' in c.sources and bool(INTERROGATIVE.search(
        said_words(m.g.heard))))


def named_act(c, m: Moment) -> float:
    """Speech, when the person's words name a thing an act on the world is on ("could you
    face the cup?" asks for the act more than for words)."""
    return float('speech' in c.sources and m.said.act_named)


def intent(c, m: Moment) -> float:
    """An act on the thing the cycle's thought is about."""
    return float(bool(m.world.meant and 'speech' not in c.sources
                      and any(named <= _words(c) for named in m.world.meant)))


def pain(c, m: Moment) -> float:
    """The strongest pain the same act (same direction) caused."""
    return max((float(p) for t, a, p in m.g.pains
                if t == c.tool and _same_direction(a or {}, c.args)), default=0.0)


def similarity(c, m: Moment) -> float:
    """The sentence model's similarity of what a person said to the act (0 unheard)."""
    return m.readings.similarity.get(id(c), 0.0)


def stance(c, m: Moment) -> float:
    """How the clause of what was said that the act answers takes it: above 0 asked for
    ("face the cup"), below 0 turned away ("leave the mug alone"); 0 when no clause names
    it (stance.py)."""
    return m.readings.stance_of.get(id(c), 0.0)


def danger(c, m: Moment) -> float:
    """How dangerous the fear gate's patterns find the call (0..1)."""
    return m.readings.danger.get(id(c), 0.0)


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
    new = [stems(n) for n in m.g.new]
    return float(bool(new) and 'speech' not in c.sources and not c.introspective
                 and any(named and named <= _words(c) for named in new))


def memory_answer(c, m: Moment) -> float:
    """The argument is the value memory ties first to what is asked or to the parameter
    (the code told with the thing at hand, the name told after "my name is")."""
    return float('tied_first' in c.sources)


def perceived(c, m: Moment) -> float:
    """The answer names what is in view (`recall.perceived_answer`)."""
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
    return m.readings.understood.get(id(c), 0.0)


def recall(c, m: Moment) -> float:
    """A read-only act (a look in memory, a prediction)."""
    return float(c.introspective)


# The wait candidate's own terms.
def wait(c, m: Moment) -> float:
    return 1.0


def stale(c, m: Moment) -> float:
    """Acts since the last news that brought none: the bar to act rises."""
    return float(m.acts.stale)


def settled(c, m: Moment) -> float:
    """The goal is met as far as the robot's acts can tell."""
    return float(m.world.settled)


def goal_open(c, m: Moment) -> float:
    """A standing goal that the robot's acts have not met yet."""
    return float(bool(m.g.goal) and not m.world.settled)


def step_left(c, m: Moment) -> float:
    """A step is left towards the standing goal (see `Moment`)."""
    return float(m.world.step_left)


def wait_heard(c, m: Moment) -> float:
    """A person just spoke to the robot and nothing was done about it yet."""
    return float(m.said.heard_now)


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
