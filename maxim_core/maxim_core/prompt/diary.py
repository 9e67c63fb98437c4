"""The diary prompt: completion-style text a base model continues (seed 003, seed 000).

A small base model does not follow instructions; it continues patterns. So the deciding
prompt holds no instruction prose and no example answer that could be copied into a thought
or an argument. It is the robot's own diary: what it recently thought and did and what came
of it, what it remembered (recalled episodes as prior lines), what it learned works here, its
goal, what it perceives now, and an open line "I think:" that the model continues with the
next thought. What stays from step to step comes first, so the model reads it from its
cache (see `Diary.shown_history`). After the thought, the open line "So I" is where
candidate actions are scored (maxim_core.deliberation.choice).

Every fixed piece of text the diary adds is a short label listed in `FIXED_TEXT` (none is
eight words long), so the copy measure has one place to look and a copied label is never a
sentence of instructions.
"""

from dataclasses import dataclass, field
import re
from typing import Callable, Sequence

THINK_CUE = 'I think:'
DECIDE_CUE = 'So I'
SAY_CUE = 'I say: "'
LABELS = {
    'title': 'Diary of {name}.',
    'remembered': 'I remember:',
    'learned': 'I learned:',
    'earlier': 'Earlier I thought:',
    'did': 'I did:',
    'result': 'Result:',
    'goal': 'My goal:',
    'heard': 'I hear:',
    'see': 'Now I notice:',
    'think': THINK_CUE,
    'decide': DECIDE_CUE,
    'say': SAY_CUE,
}
# How a thought may begin when the model's own draft only said again what the diary says
# (see `restated`): an intention, a question, a choice to weigh. They are the stances a mind
# takes to what it notices (what it wants of it, what it does not know of it, what it might
# do about it); the model writes the rest.
OPENINGS = ('I want to', 'I wonder what', 'Should I')
# The prompt's fixed text (labels with the name left out, and the openings): what the copy
# measure compares thoughts and arguments against.
FIXED_TEXT = tuple(v.replace('{name}', '').strip() for v in LABELS.values()) + OPENINGS

# The diary's labels that open a line ("I did:", "Result:", "Now I notice:" ...): in a
# thought or a reply they are the model writing the diary's next line, not its own words.
_LINE_LABELS = re.compile('|'.join(re.escape(v.replace('{name}', '').strip().rstrip('"').strip())
                                   for v in LABELS.values() if v.rstrip('" ').endswith(':')),
                          re.IGNORECASE)


# A label of the model's own making after a sentence ("... orange object. I do: memory
# recall", "...; remember: I saw 1 object", ". Next: the green"): the diary's pattern, a new
# line begun inside the thought.
_LABEL = r'(?:[A-Za-z_]+\s+){0,2}[A-Za-z_]+:(?=\s|$)'
_MADE_LABEL = re.compile(r'(?<=[.;!?])\s*' + _LABEL)
# Memory's mark of a line it cut ("an orange ..."), and the tail of an episode line ("...;
# track_target worked"), copied to the end of a thought.
_CUT_MARK = re.compile(r'(?:\s*(?:\.\.\.|…)[\s;,]*|[;,]?\s*\b[a-z]+_[a-z_]+\b'
                       r'(?:\s+(?:worked|failed|succeeded))?[\s.;,]*)+$')

_OPEN_BRACKET = re.compile(r'\s*\([^()]*$')
# A label of the model's own making that a text begins with ("the user said:", "respond:
# I see ..."): the diary's pattern, not a thought.
_FIRST_LABEL = re.compile(_LABEL)


def own_words(text: str) -> str:
    """`text` without the diary lines the model went on to write: cut where a label of the
    diary begins ("I want to look at it. I did: track target ..." -> "I want to look at
    it.") or one of its own making after a sentence (". I do: ..."), a label it began with
    left out ("I remember: the green object" -> "the green object", "the user said:" ->
    ""), and without memory's mark of a cut line at the end."""
    text = ' '.join(str(text).split())
    while True:
        m = _LINE_LABELS.match(text) or _FIRST_LABEL.match(text)
        if not m:
            break
        text = text[m.end():].lstrip()
    for label in (_LINE_LABELS, _MADE_LABEL):
        m = label.search(text)
        text = text[:m.start()] if m else text
    # A bracket left open where the thought stopped ("I wonder what the red object (").
    return _OPEN_BRACKET.sub('', _CUT_MARK.sub('', text)).strip(' -;,')


def has_label(text: str) -> bool:
    """Whether `text` holds a label of the diary ("I think:", "Result:" ...)."""
    return bool(_LINE_LABELS.search(text or ''))


# The trailing reason, also when memory cut it short before its closing bracket.
_WHY = re.compile(r'\s*\[[^\[\]]*\]?\s*$')


def strip_reason(line: str) -> str:
    """An enrichment line without its trailing "[why it matched]"."""
    return _WHY.sub('', line).strip()


# Memory's lines carry its bookkeeping: '"face" (person, confidence=0.99, 360 episodes):
# related_to orange object; stats: mean=0.62'. The model copied it into its thoughts ("I see
# 1 face (person, confidence=0.99). 360-480 episodes: related_to ..."), and none of it is
# about the world. The diary says what the line knows in words.
_CONCEPT = re.compile(r'^"(?P<name>[^"]{1,80})" \((?P<kind>[^,()]{1,40})'
                      r'(?:, confidence=[-+\d.]+)?(?:, (?P<n>\d+) episodes?)?\)(?P<rest>.*)$')
_CUT_CONCEPT = re.compile(r'^"[^"]{1,80}" \([^()]*$')
_STATS = re.compile(r';\s*stats:.*$')
_KEY_VALUE = re.compile(r'\b[a-z_]+=[-+\d.e]+%?')
# A fit's figures ('(R^2=0.00, slope=+0.000/hour, n=6)') and any other 'key=value' token.
_FIGURES = re.compile(r'\([^()]*=[^()]*\)|\S*=\S*')


# A reading of the body ("head moving by pan 0.00, tilt 0.40 rad"): a name with a measured
# value and its unit. The robot tracked "tilt" and searched its memory for "rad".
_READING = re.compile(r'\b[A-Za-z_]+\s+[-+]?\d+\.\d+(?:\s*(?:rad|deg|degrees|m|cm|mm|s|ms|%)\b)?')


def strip_figures(text: str) -> str:
    """`text` without measured figures ('success_rate=1.0', '(R^2=0.00, n=6)', 'tilt 0.40
    rad')."""
    return _READING.sub(' ', _FIGURES.sub(' ', text))


# A learned pattern of acts in a relation ("track_target + red object -> success").
_PATTERN = re.compile(r'\+|->|\bsuccess\b|\bfailure\b')
_EMPTY = re.compile(r'\(\s*[,;]?\s*\)|\s+(?=[,;:)])|[:;,](?=\s*[,;:]|\s*$)')


def _how_often(n: int) -> str:
    return 'once' if n == 1 else 'a few times' if n < 5 else 'many times'


def in_words(line: str) -> str:
    """A recalled line without memory's bookkeeping: a concept or pattern line as words
    ('"face" (person, confidence=0.99, 360 episodes): related_to red object' -> 'the face,
    seen many times, with red object'), measured values ('mean=0.62') left out.
    What the chooser grounds arguments on is memory's own line (Grounding.recalled): this
    is only how the diary shows it.
    Memory's category is not told: "the face, a person" was copied onto other things ("I see
    the yellow object, a person"). A concept line with nothing to tell but its name ('"move"
    (action, confidence=0.50)') is left out (''), and so is a concept of the goal's own words
    (category goal_term: "ask", "body", "safe"): the goal line already says them, and in
    words they read as things in the situation; shown so, a person's second ask to move was
    answered by staying still.
    Other lines keep their words."""
    text = line.strip()
    if _CUT_CONCEPT.match(text):     # cut by memory before it said more than its name
        return ''
    m = _CONCEPT.match(text)
    if m:
        if m['kind'].strip().lower() == 'goal_term':
            return ''
        parts = [f'the {m["name"].replace("_", " ")}']
        if m['n']:
            parts.append(f'seen {_how_often(int(m["n"]))}')
        rest = _STATS.sub('', m['rest']).strip().lstrip(':').strip()
        # A relation to a learned pattern ("RELATED_TO track_target + orange object+red
        # object -> success") is memory's bookkeeping of acts, not a thing the concept is
        # seen with: the model copied it as a thought.
        rest = ', '.join(part for part in rest.split(',') if not _PATTERN.search(part))
        rest = _FIGURES.sub('', re.sub(r'\brelated_to\b', 'with', rest, flags=re.IGNORECASE))
        rest = rest.replace('_', ' ')
        for _ in range(3):
            rest = _EMPTY.sub('', rest)
        rest = ' '.join(rest.split()).strip(' ,;:')
        if rest and rest.strip(' .…,;:'):      # not only memory's cut ('...')
            parts.append(rest)
        if len(parts) == 1:
            return ''
        text = ', '.join(parts)
    text = _KEY_VALUE.sub('', text)
    for _ in range(3):
        text = _EMPTY.sub('', text)
    return ' '.join(text.replace(',,', ',').split()).strip(' ,;:')


# A tracked target's number ("the face (#8)", "(#11, most novel)"): attention gives it so
# a person can match a percept with rviz's markers. The model has no use for it (no
# candidate act takes it), and it copied it into its thoughts ("The red ball (#3), #4)").
_TRACK_REF = re.compile(r'\s*\(#\d+\)|(?<=\()#\d+,\s*|\s#\d+\b')


# How long attention has dwelt on its focus ("I am looking at the face for 0.6 s"): the
# model copied the figure as a thought of its own ("0.6 s", "the face, 2s."). In words, it
# still says whether the look is new or lasting.
_DWELL = re.compile(r'\bfor (\d+(?:\.\d+)?) ?s\b(?=\s*(?:[.,;:)]|$))')


def _dwell_words(m: re.Match) -> str:
    seconds = float(m.group(1))
    return 'for a moment' if seconds < 2 else 'for a while' if seconds < 10 else \
        'for a long time'


# Why attention suggests its next target ("Next: the red object (most novel)"): the model
# copied it onto whatever it thought of ("I want to see a red object (most novel)", "a green
# object (habituated to focus)"), and no candidate act takes it.
_ATTENTION_WHY = re.compile(r'\s*\((?:most novel|most salient|habituated to focus)\)')


def one_line(text: str, limit: int = 300) -> str:
    """`text` on one line of at most `limit` characters (cut at a word), without track
    numbers or attention's reasons, and durations in words."""
    text = _ATTENTION_WHY.sub('', _TRACK_REF.sub('', str(text)))
    text = ' '.join(_DWELL.sub(_dwell_words, text).split())
    return text if len(text) <= limit else text[:limit].rsplit(' ', 1)[0] + ' ...'


@dataclass
class DiaryEntry:
    """One earlier step of the robot: a thought, and the action taken with its result."""

    thought: str = ''
    action: str = ''       # 'say "hello"', 'track target red ball'
    result: str = ''


@dataclass
class Diary:
    """What the diary prompt is made of (all of it from the robot's own experience)."""

    name: str = 'Maxim'
    percept: str = ''
    goal: str = ''
    heard: str = ''                         # what a person said, when one did
    remembered: Sequence[str] = ()          # recalled lines (episodes, concepts, predictions)
    learned: Sequence[str] = ()             # what works here (values)
    history: Sequence[DiaryEntry] = ()      # oldest first
    history_total: int = 0                  # entries ever written (0: len(history))
    thoughts: Sequence[str] = ()            # this deliberation's earlier thoughts
    limits: dict = field(default_factory=lambda: {
        'remembered': 6, 'learned': 3, 'history': 3})
    # ~500 tokens: on two cores a prompt's prefill costs ~3 ms a token, and every cycle
    # reads the diary at least once (a 1,300-token diary made a 9 s cycle in the sim).
    max_chars: int = 2000

    def head(self) -> str:
        """Everything before the open thought line, within `max_chars`: what is dropped
        first is the least relevant memory line, then the oldest step, then what was
        learned; the percept, the goal, what was heard and this deliberation's thoughts
        stay."""
        limits = dict(self.limits)
        text = self._head(limits)
        for key, floor in (('remembered', 1), ('history', 1), ('learned', 0),
                           ('remembered', 0), ('history', 0)):
            while len(text) > self.max_chars and limits[key] > floor:
                limits[key] -= 1
                text = self._head(limits)
        return text

    def shown_history(self, keep: int) -> list[DiaryEntry]:
        """The steps the diary tells: the last `keep` to 2 * keep - 1 of them, the first one
        shown moving `keep` steps at a time. So the diary's beginning stays the same from one
        step to the next, and the model reads it from its cache (a window sliding by one
        step changed the first line every time, and every cycle read the whole diary anew:
        3 to 5 s of a sim cycle on one thread)."""
        history = list(self.history)
        if keep <= 0 or not history:
            return []
        total = max(self.history_total, len(history))
        start = max(0, total - keep) // keep * keep
        return history[max(0, start - (total - len(history))):]

    def _head(self, limits: dict) -> str:
        # What stays from step to step first (the steps told), what changes with every
        # moment after it (memory's answers); the goal, what is heard and seen close to the
        # open line.
        lines = [LABELS['title'].format(name=self.name), '']
        for entry in self.shown_history(limits['history']):
            if entry.thought:
                lines.append(f'{LABELS["earlier"]} {one_line(entry.thought, 200)}')
            if entry.action:
                did = f'{LABELS["did"]} {one_line(entry.action, 160)}.'
                if entry.result:
                    did += f' {LABELS["result"]} {one_line(entry.result, 200)}'
                lines.append(did)
        seen = set()
        for text in list(self.remembered)[:limits['remembered']]:
            text = one_line(in_words(strip_reason(text)), 240)
            if text and text.lower() not in seen:
                seen.add(text.lower())
                lines.append(f'{LABELS["remembered"]} {text}')
        for text in list(self.learned)[:limits['learned']]:
            lines.append(f'{LABELS["learned"]} {one_line(in_words(strip_reason(text)), 160)}')
        if self.goal:
            lines.append(f'{LABELS["goal"]} {one_line(self.goal, 200)}')
        if self.heard:
            lines.append(f'{LABELS["heard"]} "{one_line(self.heard, 300)}"')
        lines.append(f'{LABELS["see"]} {one_line(self.percept, 600)}')
        for text in self.thoughts:
            lines.append(f'{THINK_CUE} {one_line(text, 240)}')
        return '\n'.join(lines)

    def think_prompt(self, opening: str = '') -> str:
        """The head and the open thought line (begun with `opening`, one of OPENINGS, when
        given): the model writes the next thought."""
        return f'{self.head()}\n{THINK_CUE}' + (f' {opening}' if opening else '')

    def decide_prompt(self, thought: str) -> str:
        """The head, the thought, and the open decision line where actions are scored."""
        return f'{self.head()}\n{THINK_CUE} {one_line(thought, 240)}\n{DECIDE_CUE}'

    def say_prompt(self, thought: str) -> str:
        """The head, the thought and an open quote: what the robot would say."""
        return f'{self.head()}\n{THINK_CUE} {one_line(thought, 240)}\n{SAY_CUE}'


_WORDS = re.compile(r"[a-z0-9']+")


def _runs(text: str, n: int) -> set:
    words = _WORDS.findall(text.lower())
    return {tuple(words[i:i + n]) for i in range(len(words) - n + 1)}


# Small words a paraphrase changes freely ("a red object, to my left" -> "red object, near to
# my left"), and the openings' own: what is left is what a sentence is about.
_SMALL = frozenset('''the and but not nor for are was were has had have its it's this that
these those with from into near then than there here what want wonder think know see saw
can can't don't i'm will would just now also very more some any one you your our'''.split())


def _content(text: str) -> list[str]:
    return [w for w in _WORDS.findall(text.lower()) if len(w) >= 3 and w not in _SMALL
            and not w.isdigit()]


def restated_against(source: str, n: int = 3, own: str = '') -> Callable[[str], float]:
    """`restated` with its source read once: a thought's drafts are measured against the
    same diary at every token."""
    have = _runs(source, n) - _runs(own, n)
    src, mine = _content(source), _content(own)
    pairs = {tuple(src[i:i + 2]) for i in range(len(src) - 1)} - \
        {tuple(mine[i:i + 2]) for i in range(len(mine) - 1)}

    def measure(text: str, given: str = '') -> float:
        words = _WORDS.findall(text.lower())
        if len(words) < n:
            return 1.0
        # The runs within `given`, the opening the text was begun with ("I want to"), are
        # not its own to have said again: "I want to see something red" says nothing again
        # for having begun like "I want to see the face".
        skip = max(0, len(_WORDS.findall(given.lower())) - n + 1)
        first = min(skip, len(words) - n)
        runs = [tuple(words[i:i + n]) for i in range(first, len(words) - n + 1)]
        share = sum(r in have for r in runs) / len(runs)
        # A paraphrase of a list the diary holds ("I want to see: red object, near to my
        # left; green object, above to the right") keeps its things in their order: its
        # pairs of content words are the diary's. Judged only on three pairs or more ("the
        # red object" alone is a thing named, not a list said again).
        c = _content(text)
        if len(c) >= 4:
            both = [tuple(c[i:i + 2]) for i in range(len(c) - 1)]
            kept = sum(b in pairs for b in both) / len(both)
            if kept >= PARAPHRASE:
                share = max(share, kept)
        return share
    return measure


PARAPHRASE = 0.75      # the share of content-word pairs that makes a paraphrase restated


def restated(text: str, source: str, n: int = 3, own: str = '') -> float:
    """The share of `text`'s runs of `n` consecutive words that `source` holds too: 1.0 for
    a thought that only says again what its diary says ("I see 2 objects: a green object,
    to my left" under a percept that says so), 0.0 for one whose every run is its own.
    A text of fewer than `n` words ("yes", "red.") counts as restated: it adds nothing.
    Runs of `own` are not counted as said again: a person's words taken up ("they ask me to
    look further left") are listening, and they keep the request before the choice.
    A paraphrase of a list the diary holds, three quarters or more of its pairs of content
    words the diary's in the same order, counts as restated by that share."""
    return restated_against(source, n, own)(text)


def copied_run(text: str, fixed: Sequence[str], n: int = 8) -> str:
    """The first run of `n` consecutive words of `text` found in any of `fixed`, or ''."""
    words = _WORDS.findall(text.lower())
    if len(words) < n:
        return ''
    grams = set().union(*(_runs(source, n) for source in fixed))
    for i in range(len(words) - n + 1):
        if tuple(words[i:i + n]) in grams:
            return ' '.join(words[i:i + n])
    return ''
