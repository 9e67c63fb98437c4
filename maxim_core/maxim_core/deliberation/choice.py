"""Deciding by choosing: grounded candidate actions, scored by the model and by value.

The chooser that scores and weighs them is in chooser.py, each term of its sum in scorers.py.

A 270M base model cannot write a correct tool call: asked for JSON it copies the prompt's
example and slot text into its arguments. It can, however, say how likely a short
continuation is (ENVIRONMENT.md, "Scoring candidate actions"). So the mind proposes and the
model weighs, as in SayCan: every candidate is an action with its arguments already filled
from what the robot perceives or remembers, and the choice is

    total = relevance (the model: how well the action continues the situation)
          + value     (the NAc: how well this tool did in this context)
          + goal      (the words of the goal and of what a person said; minus what they
                       say not to do: "without waking the guard")
          + need      (the act deals with what stands in the way: a failure's reason,
                       "its locked is True", or a state it undoes: 'unlock' a locked chest;
                       or it acts on what the last act changed: open the unlocked chest)
          + memory    (a recalled episode or prediction that names the action, or a recalled
                       line that links what is asked to the action's argument)
          - habit     (an action just done, or just failed with nothing changed since)
          - pain      (an action that hurt)

with "wait and watch" as one candidate among the others, so doing nothing is a choice the
model weighs too and the bar to act rises with every action that brought no news from the
world: a look at what was already known, one's own words, a blocked act (the basal ganglia's
go/no-go; the ThoughtGate decides before this whether to think at all). A failure whose reason
names an obstacle is news: it sets a subgoal ("you need a key"), and acts that deal with it
gain (`obstacles`). Relevance is pointwise mutual information, log p(action | situation)
- log p(action | a neutral line), over the square root of the action's length, so a generic
short action ("open door") does not win by being likely everywhere.

Arguments come from the situation only (`Grounding`): names of things in view and of people,
entities the world names, the tracked labels, content words of what a person said and of
recalled lines (words memory adds to the situation first), spans of a person's words that
look like a command. Free text (say, respond, think) is where free text is the point: it is
written by the model after an open quote in the diary, and text that copies the prompt's fixed
labels or holds a template (`<...>`, braces) is refused.

Pure Python: the backend is anything with `score(prompt, continuations)` and `complete`.
"""

from dataclasses import dataclass, field
import json
import re
from typing import Any, Mapping, Sequence

from maxim_core.prompt.diary import copied_run, FIXED_TEXT, has_label, strip_figures
from maxim_core.prompt.tools import as_tool_spec

# Parameters whose value is free text written by the model.
FREE_TEXT_PARAMS = frozenset({'text', 'thought', 'message', 'question', 'reply', 'answer',
                              'utterance', 'speech', 'content'})
WAIT = 'wait and watch'
# How a result of the robot's own act is told to it (and kept by memory): a line with this
# frame and a speech tool holds the robot's own words, no thing it was told.
RESULT_FRAME = 'Result of your {tool}: '
NEUTRAL_PREFIX = 'So I'
_TEMPLATE = re.compile(r'<[^>]*>|[{}\[\]]|\b(?:your|the) (?:target|command|reason|'
                       r'arguments?|tool)\b', re.IGNORECASE)
_STOP = frozenset('''a an the and or but if then so to of in on at by for with from into onto
over under up down out off about as is are was were be been being am do does did done has
have had having it its this that these those there here what which who whom whose when where
why how all any both each few more most other some such no nor not only own same than too
very can will just should now i me my myself we our you your he him his she her they them
their one ones thing things something nothing anything around still also again very really
let lets get got go goes going see sees saw look looks looking want wants need needs please
maybe would could shall may might must yes okay ok hello hi behind beside next near inside
outside between through across along toward towards against without within upon asks ask
asked told'''.split())
_FAILED = re.compile(r'\b(?:fail(?:s|ed)?|blocked|not accept\w*|cannot)\b', re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
# Ids in results and memory lines ('04bb9cefbb94 head moving ...'): no words of a situation.
_IDS = re.compile(r'\b(?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{8,}\b')
_CODEISH = re.compile(r'[-/.~*$|>=_:]')


# How memory frames what it recalls (when, how sure, how often), not what it recalls.
_FRAME = re.compile(r'^\s*(?:just now|[\d.]+ (?:s|min|h|days?) ago)\s*:\s*|\([^)]*\)|'
                    r'\b\w+=\S+|\b(?:predicted|stats)\s*:', re.IGNORECASE)
_FRAME_WORDS = frozenset('worked failed fails succeeds succeeded confidence episodes episode '
                         'similar value values times context contexts outcome outcomes '
                         'predicted activation layer category words word shared shares share '
                         'semantic result results term terms says matched match matches '
                         'reached recalled false true none similarity '
                         # what memory's statistics measure, not what they are about ('red
                         # object salience rising'): the robot searched its memory for
                         # "salience"
                         'salience novelty trend trends rising falling mean std variance '
                         'correlation correlated '
                         # the words of an outcome, not what it was about: the robot searched
                         # its memory for "success"
                         'success successes successful failure failures '
                         'steady stable '
                         # where and how the percept tells a thing is, not what it is: the
                         # robot searched its memory for "above" and for "ahead"
                         'above below ahead straight familiar novel habituated'.split())
_HEX = re.compile(r'^[a-f]{5,}$')
# Where a thing is, not a thing: a thought of nothing but "to the right" names nothing.
_WHERE = frozenset('left right above below ahead straight front back top bottom side'.split())
_NAMES_TOOL = re.compile(r'(^|_)tool(_|$)')          # a parameter that names a tool


def memory_content(line: str) -> str:
    """A recalled line without memory's frame: '2 min ago: a red ball; track_target worked
    (value 0.8, confidence 0.6)' -> 'a red ball; track_target'."""
    # A measured figure ('success_rate=1.0') names what memory measured, not a thing; split
    # at the underscore, the robot searched its memory for "success".
    text = strip_figures(_FRAME.sub(' ', line or ''))
    return ' '.join(w for w in text.split() if w.lower().strip('.,;:') not in _FRAME_WORDS
                    and not _HEX.match(w.lower().strip('.,;:')))


def content_words(text: str, limit: int = 0) -> list[str]:
    """Content words of `text`, lower case, in order of appearance, each once."""
    out, seen = [], set()
    for w in _WORD.findall(_IDS.sub(' ', text or '')):
        lw = w.lower().strip("'-")
        if len(lw) < 3 or lw in _STOP or lw in seen:
            continue
        seen.add(lw)
        out.append(lw)
        if limit and len(out) >= limit:
            break
    return out


def _stem(word: str) -> str:
    return word[:5]


def _root(word: str) -> str:
    """A crude lemma: 'waking', 'wakes', 'wake' -> 'wak'."""
    w = word.lower()
    for suffix in ('ing', 'ed', 'es', 's', 'e'):
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            w = w[:-len(suffix)]
            break
    return w[:4]


# The word after the negation, past a passive's auxiliary ("without getting hurt" -> hurt,
# "without being seen" -> seen).
_NEGATED = re.compile(r"\b(?:without|never|not|don't|do not|avoid|no)\s+"
                      r"(?:(?:getting|being|becoming|get|be|ever)\s+)?([A-Za-z][\w'-]*)",
                      re.IGNORECASE)


def _undoes(word: str, root: str) -> bool:
    """'unlock' undoes 'locked', 'untie' undoes 'tied': an act whose verb reverses a state."""
    w = word.lower()
    return w.startswith('un') and len(w) > 4 and _root(w[2:]) == root


# Words of a failure's reason that name no obstacle: how the failure is phrased.
_REASON_WORDS = frozenset('cannot unable false true none need needs needed accept accepts '
                          'fail fails failed failure error reason given state status try '
                          'tried allowed'.split())


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
        mine = content_words(_phrase(r.tool, r.args))
        own = {_root(w) for w in mine}
        roots = set()
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
                found.setdefault(root, i)
                roots.add(root)
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


def addresses(phrase: str, blocks: set[str]) -> bool:
    """Whether an action's words deal with one of `blocks` (see `obstacles`): a word with
    the obstacle's root (not for a state: 'open' does not deal with 'opened'), or a verb
    that undoes it."""
    for w in content_words(phrase):
        root = _root(w)
        if root in blocks or any(_undoes(w, b.lstrip('~')) for b in blocks):
            return True
    return False


def avoided(text: str) -> set[str]:
    """Roots of what a goal or a person says not to do: the word after 'without', 'never',
    'not', "don't", 'avoid' ("leave without waking the guard" -> {'wak'})."""
    out = set()
    for m in _NEGATED.finditer(text or ''):
        word = m.group(1).lower()
        if word not in _STOP and len(word) >= 3:
            out.add(_root(word))
    return out


_HURT = re.compile(r'\b(?:hurt\w*|pain\w*|burn\w*|ouch|injur\w*|harm\w*|sting\w*)\b',
                   re.IGNORECASE)
# An act that hurt the one who did it ("... hurt me", "burned me", "caused me pain"), not a
# line that only mentions pain (a reply "I got a pain in my back" names no act that hurt).
_HURT_ME = re.compile(r'\b(?:hurt|burn(?:ed|t)|injured|harmed|stung)\s+(?:me|my|itself)\b|'
                      r'\b(?:caused|gave)\s+(?:me\s+)?pain\b|\bwas\s+painful\b',
                      re.IGNORECASE)


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


def same_words(text: str, before: str) -> bool:
    """`text` says again what `before` said: at least 60% of its words were in it ("I'll do
    it. I see what you are doing." after "I see what you are doing. I am sorry.")."""
    wa = {w.lower() for w in _WORD.findall(text)}
    wb = {w.lower() for w in _WORD.findall(before)}
    if not wa:
        return not wb
    return len(wa & wb) / len(wa) >= 0.6


# English interrogatives: a closed class of grammar words, not any scenario's wording.
INTERROGATIVE = re.compile(r'\b(?:what|which|who|whom|whose|where|when|why|how)\b',
                           re.IGNORECASE)
# Words that open a noun phrase: what follows them, up to the next function word or mark, is
# a thing ("the small green frog", "a brass astrolabe", "my name").
_DETERMINERS = frozenset('a an the this that these those my your his her its our their some '
                         'another every'.split())
_CODE_NUMBER = re.compile(r'(?<![\d.])\d{3,12}(?!\d|\.\d)')
_FILE_NAME = re.compile(r'\b[\w-]+\.[a-z0-9]{1,5}\b', re.IGNORECASE)
# A parameter that takes a file, a folder or a file pattern (by its schema name; a glob
# tool's 'pattern' too, where a grep tool's 'pattern' is any text).
_PATH_KEY = re.compile(r'(?:^|_)(?:path|paths|file|filename|dir|directory|folder|glob)'
                       r'(?:$|_)', re.IGNORECASE)
_TOKEN = re.compile(r"[A-Za-z0-9][\w'.-]*|[^\sA-Za-z0-9]")


def said_words(heard: str) -> str:
    """What a person said, without the frame that tells who said it ('The user says: "..."'
    -> the quoted words); the text itself when nothing is quoted."""
    quoted = re.findall(r'"([^"]+)"', heard or '')
    return ' '.join(quoted) if quoted else (heard or '')


def noun_phrases(text: str, max_words: int = 4, known: Sequence[str] = ()) -> list[str]:
    """Whole things `text` names, lower case, each once: every run of content words a
    determiner opens ("Would you mind facing the small green frog?" -> 'small green frog'),
    with its last word alone after it ('frog': the thing, never an adjective such as 'brass'
    alone), and file names ('handover.txt'). An interjection or a function word is never one.
    A run ends before a participle ('a file called ...') and after the last word of a name in
    `known` ('the drawer shut': 'drawer')."""
    ends = {n.split()[-1].lower() for n in known if n.split()}
    out: list[str] = []
    tokens = _TOKEN.findall(text or '')
    i = 0
    while i < len(tokens):
        if tokens[i].lower() in _DETERMINERS:
            run = []
            j = i + 1
            while j < len(tokens) and len(run) < max_words:
                w = tokens[j].lower().strip(".'-")
                if not re.fullmatch(r"[a-z][a-z'-]+", w) or w in _STOP or \
                        w in _DETERMINERS or run and re.fullmatch(r'\w{3,}(?:ed|ing)', w):
                    break
                run.append(w)
                j += 1
                if w in ends or tokens[j - 1].endswith('.'):
                    break              # a known name ends it, and so does a sentence's end
            for phrase in (' '.join(run), run[-1] if run else ''):
                if len(phrase) >= 3 and phrase not in out:
                    out.append(phrase)
            i = max(j, i + 1)
        else:
            i += 1
    for m in _FILE_NAME.finditer(text or ''):
        name = m.group(0).lower()
        if not re.fullmatch(r'[\d.]+', name) and name not in out:
            out.append(name)
    return out


def command_spans(text: str) -> list[str]:
    """Spans of a person's words that look like a command line: a run of tokens holding a
    flag or a path, with the short word before it (its program)."""
    tokens = (text or '').split()

    def codeish(token: str) -> bool:
        return bool(_CODEISH.search(token.rstrip('.,;:!?')))

    tokens = [t.strip('`').rstrip('.,;:!?').strip('`') for t in tokens]
    tokens = [t for t in tokens if t]
    spans, i = [], 0
    while i < len(tokens):
        if codeish(tokens[i]):
            j = i
            while j + 1 < len(tokens) and codeish(tokens[j + 1]):
                j += 1
            start = i - 1 if i > 0 and re.fullmatch(r'[a-z][a-z0-9]{0,7}', tokens[i - 1]) \
                else i
            span = ' '.join(tokens[start:j + 1]).rstrip('.,;!?')
            if len(span) > 1:
                spans.append(span)
            i = j + 1
        else:
            i += 1
    return spans


def quoted_spans(text: str) -> list[str]:
    return [m.strip() for m in re.findall(r'"([^"]{1,120})"|`([^`]{1,120})`', text or '')
            for m in m if m.strip()]


def is_template(text: str) -> bool:
    """Template or instruction text: slot markers, braces, a label of the diary ("I think:",
    "Result:"), or a run of the prompt's labels."""
    return bool(_TEMPLATE.search(text or '')) or has_label(text or '') \
        or bool(copied_run(text or '', FIXED_TEXT, 4))


@dataclass
class RecentAct:
    """An action the robot took lately and what came of it."""

    tool: str
    args: dict
    success: bool
    result: str = ''
    blocked: bool = False
    introspection: bool = False        # read-only (looking, recalling): changes nothing
    entity: str = ''                   # the thing the result is about, when it says
    state: Mapping[str, Any] = field(default_factory=dict)   # that thing's state after it

    @staticmethod
    def state_of(output: str) -> tuple[str, dict]:
        """(thing, state) of a tool's JSON output that reports one ({"entity": "door",
        "state": {"locked": false, "open": false}}), else ('', {})."""
        text = (output or '').strip()
        if not text.startswith('{'):
            return '', {}
        try:
            data = json.loads(text)
        except ValueError:
            return '', {}
        thing, state = data.get('entity'), data.get('state', data.get('sensors'))
        if not isinstance(thing, str) or not isinstance(state, dict):
            return '', {}
        return thing.strip().lower(), {str(k): v for k, v in state.items()}


@dataclass
class Grounding:
    """What arguments may be made of, and what the choice weighs besides the model."""

    percept: str = ''
    goal: str = ''
    heard: str = ''                         # a person's words, when a person spoke
    objects: Sequence[str] = ()             # in view, tracked
    people: Sequence[str] = ()
    entities: Sequence[str] = ()            # things the world names (scene entities)
    recalled: Sequence[str] = ()            # memory lines (their reasons stripped)
    values: Mapping[str, float] = field(default_factory=dict)   # tool -> value 0..1
    recent: Sequence[RecentAct] = ()        # oldest first
    pains: Sequence[tuple] = ()             # (tool, args, intensity)
    acts_since_news: int = 0                # actions since the last percept from outside
    scene: str = ''                         # that percept (the situation the acts are in)
    acts_since_heard: int = -1              # actions since a person spoke (-1: not known)
    someone_there: bool = False             # a person is there to talk to
    addressed: bool = False                 # what was heard is said to the robot
    salient: Sequence[str] = ()             # memory_terms ranked (Chooser.candidates)
    surprise: Mapping[str, float] = field(default_factory=dict)  # memory word -> the model's
    related: Mapping[str, float] = field(default_factory=dict)   # recalled line -> sentence-
    #                                         model similarity to what a person said
    from_tool: bool = False                 # the percept is a tool's result
    states: Mapping[str, Mapping] = field(default_factory=dict)   # thing -> its last state
    changed: Mapping[tuple, bool] = field(default_factory=dict)   # (thing, state) -> set to,
    #                                       by the robot's own acts (see `own_changes`)
    name: str = ''                          # the robot's own: how it is addressed, not news
    new: Sequence[str] = ()                 # names that came into view with this percept
    # The word the scene used for a thing the world names otherwise ("gate" for the door it
    # is, "soldier" for the guard): a goal or a person's words that use it mean the thing.
    aliases: Mapping[str, str] = field(default_factory=dict)   # word -> a name of names()
    # What each active tool says of itself (name -> description): "Unlock the chest with a
    # key you hold" tells that the key is a means to the chest (`scorers.means`).
    described: Mapping[str, str] = field(default_factory=dict)
    # Replies built from what is known (answers.py): (sentence, source, closeness to what was
    # heard), filled by the chooser before the candidates are built.
    answers: Sequence[tuple] = ()
    reply_tool: str = ''                    # the speech tool the built replies go to

    def names(self) -> list[str]:
        out, seen = [], set()
        for name in list(self.objects) + list(self.people) + list(self.entities):
            n = ' '.join(str(name).split()).strip().lower()
            if n and n not in seen:
                seen.add(n)
                out.append(n)
        return out

    def memory_terms(self, limit: int = 3, ranked: bool = True) -> list[str]:
        """Words recalled lines add to the situation (not in the percept or goal): what
        memory knows that the moment does not say. The most informative first once the
        chooser has ranked them (`salient`, unless not `ranked`), else in the order memory
        gave them."""
        if self.salient and ranked:
            return list(self.salient)[:limit]
        # Nor what is in view: "object" of "blue object" is no word memory adds.
        here = {_stem(w) for w in content_words(
            f'{self.percept} {self.goal} {self.heard} {self.name} {" ".join(self.names())} '
            f'{" ".join(self.aliases)}')}
        found = []
        for line in self.recalled:
            text = memory_content(line)
            # A number of three digits or more is a code memory holds ("the code is 4172").
            for w in content_words(text) + _CODE_NUMBER.findall(text):
                if _stem(w) not in here and w not in found:
                    found.append(w)
        return found[:limit]

    def names_known(self, text: str) -> bool:
        """Whether `text` names something the robot perceives, was told or recalls (a
        content word of the percept, what was heard, the goal, a name in view, or a recalled
        line): a thought of nothing it knows ("I want to go to the park") is made up."""
        known = {_stem(w) for w in content_words(
            ' '.join([self.percept, self.heard, self.goal, *self.names()]
                     + [memory_content(line) for line in self.recalled]))
                 if w not in _WHERE and w not in _FRAME_WORDS}
        return any(_stem(w) in known for w in content_words(text))

    def phrases(self, limit: int = 6, exclude: Sequence[str] = ()) -> list[str]:
        """Things named by what a person said, the percept (not a tool's own result) and
        the goal (`noun_phrases`): whole noun phrases and their head words."""
        out = []
        for text in (said_words(self.heard), '' if self.from_tool else said_words(self.percept),
                     self.goal):
            for p in noun_phrases(text, known=self.names() + list(self.aliases)):
                if p not in out and p not in exclude:
                    out.append(p)
        return out[:limit]

    def terms(self, limit: int = 4, exclude: Sequence[str] = ()) -> list[str]:
        """Content words of what a person said, the percept (not a tool's own result: what
        the robot did is no news about the world) and the goal."""
        out = []
        texts = (self.heard, '' if self.from_tool else self.percept, self.goal)
        for text in texts:
            for w in content_words(text):
                if w not in out and w not in exclude:
                    out.append(w)
        return out[:limit]


@dataclass
class Candidate:
    """One possible action, its arguments filled, and how it scored."""

    tool: str | None                   # None: wait and watch
    args: dict
    phrase: str                        # the action in words, scored by the model
    sources: tuple = ()
    free_param: str = ''               # a free-text argument still to be written
    relevance: float = 0.0             # pmi in units of the candidates' spread
    pmi: float = 0.0
    value: float = 0.0
    goal: float = 0.0
    need: float = 0.0                  # deals with what stands in the way
    introspective: bool = False        # a read-only act (looking, recalling)
    memory: float = 0.0
    intent: float = 0.0                # on what the cycle's thought is about
    habit: float = 0.0
    pain: float = 0.0
    total: float = 0.0
    held: str = ''                     # why its goal was held back: 'hurt' or 'avoid'
    features: dict = field(default_factory=dict)   # scorers.FEATURES -> value (unweighted)

    @property
    def key(self) -> str:
        return f'{self.tool}:{json.dumps(self.args, sort_keys=True)}'

    def as_dict(self) -> dict:
        return {'tool': self.tool, 'args': self.args, 'phrase': self.phrase,
                'total': round(self.total, 3), 'relevance': round(self.relevance, 3),
                'pmi': round(self.pmi, 3),
                'value': round(self.value, 3), 'goal': round(self.goal, 3),
                'need': round(self.need, 3),
                'memory': round(self.memory, 3), 'intent': round(self.intent, 3),
                'habit': round(self.habit, 3),
                'pain': round(self.pain, 3), 'sources': list(self.sources)}


@dataclass(frozen=True)
class ChoiceConfig:
    """Parameters `deliberation.choice.*` (weights are defaults from the design, not fits)."""

    max_candidates: int = 24
    values_per_param: int = 3
    w_relevance: float = 2.0
    w_value: float = 3.0
    w_goal: float = 1.0
    w_avoid: float = 4.0               # what the goal or a person says not to do
    w_memory: float = 1.0
    w_intent: float = 2.0              # an act on the thing the cycle's thought is about
    w_need: float = 2.0                # an act that deals with an obstacle (means-ends)
    w_frontier: float = 1.5            # an act on what the last act changed
    w_answer: float = 3.0              # speech, when a person asked and was not answered
    habit_done: float = 6.0            # the same action just succeeded
    habit_failed: float = 4.0          # the same action just failed, nothing changed since
    habit_tool: float = 1.5            # per recent use of the same tool with other arguments
    habit_dull: float = 3.0            # a read-only tool whose last use told nothing new
    w_pain: float = 8.0
    effort: float = 1.5                # the bar to act rises per action since news
    wait_bias: float = 0.0
    # Which weights sum the terms: 'fitted' (weights.json beside scorers.py, or
    # `weights_path`; fitted on the decision benchmark's dev split) or 'hand' (the w_* above).
    weights: str = 'fitted'
    weights_path: str = ''
    thought_max_tokens: int = 40
    say_max_tokens: int = 30
    temperature: float = 0.7
    # A thought is written again, begun with the next of the diary's OPENINGS, when the
    # draft only says again what the diary says: `restate_limit` or more of its word runs
    # are in the diary (prompt.diary.restated). At most `thought_drafts` drafts a cycle; a
    # draft is given up as soon as its first `restate_words` words are `restate_abort`
    # restated (the rest of it would cost time for nothing). The last draft is never cut.
    thought_drafts: int = 4
    restate_limit: float = 0.5
    restate_words: int = 8
    restate_abort: float = 0.8

    def __post_init__(self):
        if self.max_candidates < 2 or self.values_per_param < 1:
            raise ValueError('choice needs max_candidates >= 2 and values_per_param >= 1')
        if self.thought_max_tokens < 4 or self.say_max_tokens < 2:
            raise ValueError('thought_max_tokens >= 4 and say_max_tokens >= 2')
        if self.weights not in ('hand', 'fitted'):
            raise ValueError(f"choice.weights is 'hand' or 'fitted', not {self.weights!r}")
        if self.thought_drafts < 1 or not 0 < self.restate_limit <= 1 \
                or not 0 < self.restate_abort <= 1 or self.restate_words < 3:
            raise ValueError('thought_drafts >= 1, restate_limit and restate_abort within '
                             '(0, 1], restate_words >= 3')


def _words(name: str) -> str:
    return name.replace('_', ' ').strip()


def _phrase(tool: str, args: Mapping[str, Any]) -> str:
    parts = [_words(tool)]
    for key, value in args.items():
        if isinstance(value, bool) or value in ('', None):
            continue
        if isinstance(value, str):
            parts.append(f'"{value}"' if key in FREE_TEXT_PARAMS else value)
    return ' '.join(parts)


def prediction_words(data: Mapping[str, Any]) -> str:
    """The NAc's prediction (predict_outcome's answer) as what it means: 'move: likely to
    work here, from 5 tries'. Its strings alone said nothing ('all_contexts move'), its figures
    are what tells; '' when `data` is no prediction."""
    event, value = data.get('event') or data.get('tool_name'), data.get('value')
    tries = data.get('observation_count', data.get('observations'))
    if not isinstance(event, str) or not event.strip() or 'confidence' not in data \
            or isinstance(value, bool) or not isinstance(value, (int, float)) \
            or isinstance(tries, bool) or not isinstance(tries, (int, float)):
        return ''
    name, basis, n = _words(event), str(data.get('basis') or ''), int(tries)
    guess = 'likely to work' if value >= 0.6 else 'likely to fail' if value <= 0.4 else \
        'as likely to work as to fail'
    if basis == 'generalized':        # an unseen context borrows what other contexts taught
        return f'{name}: not tried here; from elsewhere, {guess}'
    if n <= 0:
        return f'{name}: never tried, no telling how it goes'
    return f'{name}: {guess}{" here" if basis == "context" else ""}, from {n} ' + \
        ('try' if n == 1 else 'tries')


def result_words(output: str, limit: int = 300) -> str:
    """A tool's output as words: the text values of a JSON result (its narrative, what was
    observed or said), not its braces and keys; other output as it is."""
    text = (output or '').strip()
    try:
        data = json.loads(text) if text[:1] in '{[' else None
    except ValueError:
        data = None
    if data is None:
        return ' '.join(text.split())[:limit]
    if isinstance(data, dict):
        told = prediction_words(data)
        if told:
            return told[:limit]
    parts: list[str] = []
    stack = [data]
    while stack and len(parts) < 12:
        item = stack.pop(0)
        if isinstance(item, str) and item.strip():
            if not _IDS.fullmatch(item.strip()):     # a goal's or a call's id says nothing
                parts.append(item.strip())
        elif isinstance(item, dict):
            stack.extend(v for k, v in item.items() if isinstance(v, (str, list, dict))
                         and not re.fullmatch(r'(?:.*_)?id', str(k).lower()))
        elif isinstance(item, list):
            stack.extend(item[:6])
    return ' '.join(' '.join(parts).split())[:limit]


def _string_values(args: Mapping[str, Any]) -> list[str]:
    return [' '.join(str(v).split()).lower() for v in args.values() if isinstance(v, str)]


def phrase_of(tool: str, args: Mapping[str, Any]) -> str:
    """An action in the diary's words ('track target red ball', 'say "hello"')."""
    return _phrase(tool, args)


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


_WHY_ACT = {
    'answer': 'because I was asked something',
    'asked': 'because I was asked to',
    'goal': 'because it serves my goal',
    'value': 'because it worked here before',
    'need': 'because it is the next step',
    'memory': 'because memory points to it',
    'relevance': 'because it follows from what I think',
    'intent': 'because it is what I was thinking of',
}
_HELD = {'hurt': 'which hurt before', 'avoid': 'which I was told not to do'}


def why_chosen(ranked: Sequence[Candidate], g: Grounding,
               config: ChoiceConfig = ChoiceConfig(), w_relevance: float | None = None,
               w_avoid: float | None = None) -> str:
    """Why the first of `ranked` (weighed, best first) won, in the robot's words: the term
    that gave it most ('because I was asked to', 'because it worked here before'), and an
    act it would have taken but for pain or a person's 'do not' ('not look left, which hurt
    before'). The mind's own reasons, read off the weighing, not written by the model; shown
    with the decision, so a person sees why the head turned where it did."""
    if not ranked:
        return ''
    # The weights the choice was summed with (the chooser's), else the config's hand ones.
    w_rel = config.w_relevance if w_relevance is None else w_relevance
    w_av = config.w_avoid if w_avoid is None else abs(w_avoid)
    best = ranked[0]
    if best.tool is None:
        stale = best.features.get('stale', 0.0) if best.features else \
            (best.total - config.w_relevance * best.relevance - config.wait_bias
             - best.need) / max(config.effort, 1e-9)
        why = 'because the goal is met' if best.need > 0 else \
            'because my last acts brought nothing new' if stale >= 1 else \
            'because nothing calls for an act'
    else:
        terms = {'relevance': w_rel * best.relevance, 'value': best.value,
                 'goal': best.goal, 'need': best.need, 'memory': best.memory,
                 'intent': best.intent}
        top = max(terms, key=lambda k: terms[k])
        if top == 'goal':
            heard = {_stem(w) for w in content_words(g.heard)}
            if 'speech' in best.sources and g.heard and \
                    best.goal >= config.w_answer:
                top = 'answer'
            elif heard & {_stem(w) for w in content_words(best.phrase)}:
                top = 'asked'
        why = _WHY_ACT[top] if terms.get(top, 1.0) > 0 else ''
    # An act it would have taken but for pain or a 'do not'; else one it did just now (or
    # that just failed, or told nothing new).
    held = next((f'not {c.phrase}, {_HELD[c.held]}' for c in ranked[1:]
                 if c.held and c.tool is not None and c.total + w_av > best.total),
                '')
    if not held:
        done = {r.tool for r in g.recent}
        held = next((f'not {c.phrase} again' if c.tool in done else
                     f'not {c.phrase}, which the moment already tells' if c.introspective else
                     f'not {c.phrase}, which is so already' for c in ranked[1:]
                     if c.habit > 0 and c.tool is not None
                     and c.total + c.habit > best.total), '')
    if not why:
        why = 'because nothing else fits better'
    return f'{why}; {held}' if held else why


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


def _opening(text: str, words: int = 10) -> str:
    """The first `words` words of a reply."""
    parts = text.split()
    return ' '.join(parts[:words]) + (' ...' if len(parts) > words else '')


def _speaks(spec) -> bool:
    """A tool whose required argument is free text to say (respond, say)."""
    schema = spec.input_schema or {}
    return any(k in FREE_TEXT_PARAMS and k != 'thought' for k in schema.get('required') or ())


# A tool's parameter schema may say where its value comes from: "names" (a thing the robot
# perceives or knows, Grounding.names), "recalled" (a secret: what memory holds or a person
# spelled out), else any grounded word.
GROUNDING_KEY = 'x-grounding'


def _all_own(value: str, own: set[str]) -> bool:
    words = content_words(value)
    return bool(words) and all(_stem(w) in own for w in words)


class CandidateBuilder:
    """Candidate actions for the active tools, their arguments from the grounding."""

    def __init__(self, config: ChoiceConfig = ChoiceConfig()):
        self.config = config
        self._tied_first: dict[tuple, str | None] = {}     # (tool, param) -> memory's answer

    def build(self, tools: Sequence[Any], g: Grounding) -> list[Candidate]:
        names = g.names()
        memory_terms = g.memory_terms()
        # A tool's own words ('examine', 'result') are no thing to act on.
        tool_words = {w for t in tools for w in as_tool_spec(t).name.split('_')}
        tool_words |= {'result', 'results', 'action', 'tool'}
        memory_terms = [t for t in memory_terms if t not in tool_words]
        pool = names + [t for t in memory_terms if t not in names] + \
            [t for t in g.phrases(exclude=tool_words) if t not in names
             and t not in memory_terms]
        commands = []
        said = said_words(g.heard)
        # A command the person quoted is that command, to its last character ("type
        # `mkfs.ext4 /dev/sda1`" is not the command "type mkfs.ext4 ..."); a command line
        # is looked for only in the words left unquoted.
        quoted = quoted_spans(g.heard.replace(f'"{said}"', said))
        bare = re.sub(r'"[^"]{1,120}"|`[^`]{1,120}`', ' ', said)
        for c in quoted + command_spans(bare):
            if c not in commands:
                commands.append(c)
        out: list[Candidate] = []
        # What an argument that names a tool is given (predict_outcome's tool_name): the
        # robot's acts on the world, in the order it has them. Asking what a recall or a
        # prediction will bring is no question about the world (the sim predicted the
        # outcome of memory_recall, again and again); nor is speech, whose name the model
        # finds likely wherever the diary tells a reply ('predict outcome respond' won over
        # the answer a person asked for). The acts done last are not put first, for the
        # same reason: the diary tells them.
        acts = [as_tool_spec(t).name for t in tools if not getattr(t, 'introspection', False)
                and not _speaks(as_tool_spec(t))]
        self._tool_names = acts or [as_tool_spec(t).name for t in tools]
        for tool in tools:
            spec = as_tool_spec(tool)
            schema = spec.input_schema or {}
            props = schema.get('properties') or {}
            required = list(schema.get('required') or [])
            proposals = getattr(tool, 'proposals', None)
            if callable(proposals):
                for args, phrase in proposals(g):
                    out.append(Candidate(spec.name, dict(args), phrase, ('body',)))
                continue
            # A tool's own words are no argument of it: 'unlock_door' (its description naming
            # "the heavy gate") is not unlocked with the code "gate".
            own = {_stem(w) for w in content_words(f'{_words(spec.name)} {spec.description}')}
            made = self._for_tool(spec.name, props, required,
                                  [v for v in pool if not _all_own(v, own)], commands, g)
            for c in made:
                c.introspective = bool(getattr(tool, 'introspection', False))
            out.extend(made)
        out.append(Candidate(None, {}, WAIT, ('rest',)))
        seen, unique = set(), []
        for c in out:
            if c.key not in seen:
                seen.add(c.key)
                unique.append(c)
        return unique

    def _for_tool(self, name, props, required, pool, commands, g) -> list[Candidate]:
        cfg = self.config
        free = [k for k in required if k in FREE_TEXT_PARAMS
                and props.get(k, {}).get('type', 'string') == 'string']
        if free:
            key = free[0]
            if len([k for k in required if k != key]) > 0:
                return []              # free text and other required fields: not proposed
            if key == 'thought':         # the thought of this cycle, filled in when known
                return [Candidate(name, {key: ''}, f'{_words(name)} it over', ('thought',),
                                  free_param=key)]
            if not g.someone_there:
                return []              # nobody to speak to
            out = [Candidate(name, {key: ''}, _words(name), ('speech',), free_param=key)]
            # A word of memory's alone is an utterance only as the answer to a question:
            # what memory links to what was asked ("Password?" -> swordfish).
            # (The person's words, not the frame that tells who spoke: "the user says" would
            # tie every line memory keeps of what the user said.)
            question = ' '.join(re.findall(r'[^.!?"]*\?', said_words(g.heard)))
            # A question with no interrogative about a thing the robot knows asks for an act
            # on it ("Will you follow the red object?"), not for a word of memory's: a live
            # memory links some line to any question ("follow" -> "... with your eyes").
            things = {_stem(w) for n in g.names() for w in content_words(n)}
            if question and not INTERROGATIVE.search(question) and \
                    {_stem(w) for w in content_words(said_words(question))} & things:
                question = ''
            terms = g.memory_terms(12, ranked=False)
            linked = tied_to(terms, g, question)[:2] if question else []
            # And what the line closest in meaning holds (the sentence model's reading):
            # both are proposed, the fit on the decision benchmark weighs each source.
            # Not from a line of the robot's own earlier words ("Result of your respond:
            # Hi, my name is Maxim" holds no name it was told).
            near = related_values(terms, g, question,
                                  RESULT_FRAME.format(tool=name))[:1] if question else []
            for i, term in enumerate(linked + [t for t in near if t not in linked]):
                out.append(Candidate(name, {key: term}, _phrase(name, {key: term}),
                                     ('memory', 'speech')
                                     + (('tied_first',) if i == 0 and linked else ())
                                     + (('related',) if term in near else ())))
            seen = perceived_answer(g)
            if seen:
                out.append(Candidate(name, {key: seen}, _phrase(name, {key: seen}),
                                     ('perceived', 'speech')))
            # The built replies go to one speech tool, the one that answers the person (the
            # first of the moment's speech tools, `Grounding.reply_tool`): the same words
            # aloud another way are no other reply.
            # Its phrase, what the model scores, is the reply's first words: the model's
            # liking of a long sentence costs a second and says little more.
            if name == g.reply_tool:
                for text, source, _ in g.answers:
                    out.append(Candidate(name, {key: text},
                                         _phrase(name, {key: _opening(text)}),
                                         ('answer', source, 'speech')))
            return out
        string_keys = [k for k, p in props.items()
                       if p.get('type') == 'string' and 'enum' not in p]
        missing = [k for k in required if k not in string_keys and 'enum' not in props[k]]
        if missing:
            return []                  # e.g. numbers with no grounded value: not proposed
        keys = [k for k in required if k in string_keys] or string_keys[:1]
        enum_keys = [k for k in required if 'enum' in props.get(k, {})]
        if not keys and not enum_keys:
            return [Candidate(name, {}, _words(name), ('tool',))]
        combos: list[dict] = [{}]
        for key in keys:
            values = self._values(key, props[key], pool, commands, name, g)
            if not values:
                return [] if key in required else [Candidate(name, {}, _words(name),
                                                             ('tool',))]
            combos = [dict(c, **{key: v}) for c in combos for v in values]
        for key in enum_keys:
            combos = [dict(c, **{key: v}) for c in combos
                      for v in props[key]['enum'][:cfg.values_per_param]]
        combos = combos[:cfg.values_per_param + 1]
        first = {k for k in keys if self._tied_first.get((name, k)) is not None}
        return [Candidate(name, c, _phrase(name, c), ('grounded',) + (
            ('tied_first',) if any(c.get(k) == self._tied_first[(name, k)] for k in first)
            else ())) for c in combos]

    def _values(self, key: str, prop: dict, pool: list[str], commands: list[str],
                owner: str = '', g: Grounding | None = None) -> list[str]:
        limit = int(prop.get('maxLength', 200) or 200)
        if _NAMES_TOOL.search(key):       # an argument that names a tool: a tool
            return [n for n in getattr(self, '_tool_names', [])
                    if n != owner][:self.config.values_per_param]
        values = []
        if re.search(r'command|cmd|script|shell', key):
            values += commands          # a command line is never a noun of the moment
        elif _PATH_KEY.search(key) or key == 'pattern' and 'glob' in owner:
            # A file, folder or file pattern is given by its name ("notes.txt", "logs/",
            # "*.log"): a word of the moment that names none is no path ('read_file
            # "full disk"' for "the disk is full").
            values += [v for v in pool if _FILE_NAME.fullmatch(v) or re.search(r'[/*]', v)]
        else:
            values += pool
        tied: list[str] = []
        if g is not None and values is not commands:
            # What memory ties to this parameter first: a value that a recalled line names
            # together with the parameter's own words, and that the moment does not say
            # ('code': "the code or password" -> "the password of the oak door is ...").
            about = f'{key.replace("_", " ")} {prop.get("description", "")}'
            tied = tied_to(g.memory_terms(12, ranked=False), g, about)
            values = tied + [v for v in values if v not in tied]
            self._tied_first[(owner, key)] = tied[0] if tied else None
        if prop.get(GROUNDING_KEY) == 'recalled' and g is not None:
            # A code or password: what memory holds, or what a person spelled out (a quoted
            # word, a number), never a word of the scene ('unlock door corridor' in a quiet
            # corridor, 'unlock door wall' by a wall).
            said = said_words(g.heard)
            told = quoted_spans(g.heard.replace(f'"{said}"', said)) + \
                re.findall(r'\b\d{3,}\b', said)
            # Memory's word for it is one a recalled line ties to the parameter ("the code
            # of the gate is 8350") or a number it holds; any other word memory holds (the
            # scene it remembers: "a lever sticks out") is no code.
            held = [t for t in g.memory_terms(12, ranked=False) if _CODE_NUMBER.fullmatch(t)]
            known = set(tied) | set(held) | set(told)
            values = [v for v in values if v in known] + [v for v in told if v not in values]
        if prop.get(GROUNDING_KEY) == 'names' and g is not None:
            # A thing to act on in the world (what to follow with the head): a name the
            # robot perceives or knows, not any word of the moment ("track target moving",
            # "track target hurt" from a memory of the head moving and of pain).
            names = set(g.names())
            values = [v for v in values if v in names]
        out = []
        for v in values:
            if v and len(v) <= limit and v not in out:
                out.append(v)
        if g is not None and g.heard:
            # What the person's words name first (four things in view, three proposals).
            asked = {_stem(w) for w in content_words(said_words(g.heard))}
            out.sort(key=lambda v: -len({_stem(w) for w in content_words(v)} & asked))
        if tied:
            out = [v for v in out if v in tied] + [v for v in out if v not in tied]
        return out[:self.config.values_per_param]


# Plain text without quotes, braces, angle brackets or line breaks: no slot or template can
# be written, and a line is one utterance or one thought.
_PLAIN = r'[^"\\<>{}\[\]\x00-\x1F\x7F]'
SAY_GRAMMAR = f'root ::= {_PLAIN}{{1,160}} "\\""\n'
# A thought is one sentence: what the small model wrote after its first one was mostly the
# percept told again ("I wonder what this face is? I am looking at the orange object for a
# moment."), which hid a thought said before behind a new tail; one sentence is also a
# third fewer tokens.
_IN_SENTENCE = _PLAIN[:-1] + '.?!]'
THOUGHT_GRAMMAR = f'root ::= " "? {_IN_SENTENCE}{{1,240}} [.?!]? "\\n"\n'
