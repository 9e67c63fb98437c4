"""Deciding by choosing: grounded candidate actions, scored by the model and by value.

A 270M base model cannot write a correct tool call: asked for JSON it copies the prompt's
example and slot text into its arguments. It can, however, say how likely a short
continuation is (ENVIRONMENT.md, "Scoring candidate actions"). So the mind proposes and the
model weighs, as in SayCan: every candidate is an action with its arguments already filled
from what the robot perceives or remembers, and the choice is

    total = relevance (the model: how well the action continues the situation)
          + value     (the NAc: how well this tool did in this context)
          + goal      (the words of the goal and of what a person said; minus what they
                       say not to do: "without waking the guard")
          + memory    (a recalled episode or prediction that names the action)
          - habit     (an action just done, or just failed with nothing changed since)
          - pain      (an action that hurt)

with "wait and watch" as one candidate among the others, so doing nothing is a choice the
model weighs too and the bar to act rises with every action taken since the last news from
the world (the basal ganglia's go/no-go; the ThoughtGate decides before this whether to think
at all). Relevance is pointwise mutual information, log p(action | situation) - log p(action |
a neutral line), over the square root of the action's length, so a generic short action
("open door") does not win by being likely everywhere.

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
import math
import re
from typing import Any, Callable, Mapping, Sequence

from maxim_core.prompt.diary import copied_run, Diary, FIXED_TEXT
from maxim_core.prompt.tools import as_tool_spec

# Parameters whose value is free text written by the model.
FREE_TEXT_PARAMS = frozenset({'text', 'thought', 'message', 'question', 'reply', 'answer',
                              'utterance', 'speech', 'content'})
WAIT = 'wait and watch'
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
maybe would could shall may might must yes okay ok hello hi'''.split())
_WORD = re.compile(r"[A-Za-z][A-Za-z'\-]*")
_CODEISH = re.compile(r'[-/.~*$|>=_:]')


def content_words(text: str, limit: int = 0) -> list[str]:
    """Content words of `text`, lower case, in order of appearance, each once."""
    out, seen = [], set()
    for w in _WORD.findall(text or ''):
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


_NEGATED = re.compile(r"\b(?:without|never|not|don't|do not|avoid|no)\s+([A-Za-z][\w'-]*)",
                      re.IGNORECASE)


def avoided(text: str) -> set[str]:
    """Roots of what a goal or a person says not to do: the word after 'without', 'never',
    'not', "don't", 'avoid' ("leave without waking the guard" -> {'wak'})."""
    out = set()
    for m in _NEGATED.finditer(text or ''):
        word = m.group(1).lower()
        if word not in _STOP and len(word) >= 3:
            out.add(_root(word))
    return out


def command_spans(text: str) -> list[str]:
    """Spans of a person's words that look like a command line: a run of tokens holding a
    flag or a path, with the short word before it (its program)."""
    tokens = (text or '').split()

    def codeish(token: str) -> bool:
        return bool(_CODEISH.search(token.rstrip('.,;:!?')))

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
    """Template or instruction text: slot markers, braces, or a run of the prompt's labels."""
    return bool(_TEMPLATE.search(text or '')) or bool(copied_run(text or '', FIXED_TEXT, 4))


@dataclass
class RecentAct:
    """An action the robot took lately and what came of it."""

    tool: str
    args: dict
    success: bool
    result: str = ''
    blocked: bool = False
    introspection: bool = False        # read-only (looking, recalling): changes nothing


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
    someone_there: bool = False             # a person is there to talk to
    salient: Sequence[str] = ()             # memory_terms ranked (Chooser.candidates)
    from_tool: bool = False                 # the percept is a tool's result

    def names(self) -> list[str]:
        out, seen = [], set()
        for name in list(self.objects) + list(self.people) + list(self.entities):
            n = ' '.join(str(name).split()).strip().lower()
            if n and n not in seen:
                seen.add(n)
                out.append(n)
        return out

    def memory_terms(self, limit: int = 3) -> list[str]:
        """Words recalled lines add to the situation (not in the percept or goal): what
        memory knows that the moment does not say. The most informative first once the
        chooser has ranked them (`salient`), else in the order memory gave them."""
        if self.salient:
            return list(self.salient)[:limit]
        here = {_stem(w) for w in content_words(f'{self.percept} {self.goal} {self.heard}')}
        found = []
        for line in self.recalled:
            for w in content_words(line):
                if _stem(w) not in here and w not in found:
                    found.append(w)
        return found[:limit]

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
    memory: float = 0.0
    habit: float = 0.0
    pain: float = 0.0
    total: float = 0.0

    @property
    def key(self) -> str:
        return f'{self.tool}:{json.dumps(self.args, sort_keys=True)}'

    def as_dict(self) -> dict:
        return {'tool': self.tool, 'args': self.args, 'phrase': self.phrase,
                'total': round(self.total, 3), 'relevance': round(self.relevance, 3),
                'pmi': round(self.pmi, 3),
                'value': round(self.value, 3), 'goal': round(self.goal, 3),
                'memory': round(self.memory, 3), 'habit': round(self.habit, 3),
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
    habit_done: float = 6.0            # the same action just succeeded
    habit_failed: float = 4.0          # the same action just failed, nothing changed since
    habit_tool: float = 1.5            # per recent use of the same tool with other arguments
    w_pain: float = 8.0
    effort: float = 1.5                # the bar to act rises per action since news
    wait_bias: float = 0.0
    thought_max_tokens: int = 40
    say_max_tokens: int = 30
    temperature: float = 0.7

    def __post_init__(self):
        if self.max_candidates < 2 or self.values_per_param < 1:
            raise ValueError('choice needs max_candidates >= 2 and values_per_param >= 1')
        if self.thought_max_tokens < 4 or self.say_max_tokens < 2:
            raise ValueError('thought_max_tokens >= 4 and say_max_tokens >= 2')


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
    parts: list[str] = []
    stack = [data]
    while stack and len(parts) < 12:
        item = stack.pop(0)
        if isinstance(item, str) and item.strip():
            parts.append(item.strip())
        elif isinstance(item, dict):
            stack.extend(v for v in item.values() if isinstance(v, (str, list, dict)))
        elif isinstance(item, list):
            stack.extend(item[:6])
    return ' '.join(' '.join(parts).split())[:limit]


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


class CandidateBuilder:
    """Candidate actions for the active tools, their arguments from the grounding."""

    def __init__(self, config: ChoiceConfig = ChoiceConfig()):
        self.config = config

    def build(self, tools: Sequence[Any], g: Grounding) -> list[Candidate]:
        names = g.names()
        memory_terms = g.memory_terms()
        # A tool's own words ('examine', 'result') are no thing to act on.
        tool_words = {w for t in tools for w in as_tool_spec(t).name.split('_')}
        tool_words |= {'result', 'results', 'action', 'tool'}
        memory_terms = [t for t in memory_terms if t not in tool_words]
        pool = names + [t for t in memory_terms if t not in names] + \
            [t for t in g.terms(exclude=tool_words) if t not in names
             and t not in memory_terms]
        commands = []
        for c in command_spans(g.heard) + quoted_spans(g.heard):
            if c not in commands:
                commands.append(c)
        out: list[Candidate] = []
        self._tool_names = [as_tool_spec(t).name for t in tools]
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
            out.extend(self._for_tool(spec.name, props, required, pool, commands, g))
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
            for term in g.memory_terms(2):
                out.append(Candidate(name, {key: term}, _phrase(name, {key: term}),
                                     ('memory', 'speech')))
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
            values = self._values(key, props[key], pool, commands, name)
            if not values:
                return [] if key in required else [Candidate(name, {}, _words(name),
                                                             ('tool',))]
            combos = [dict(c, **{key: v}) for c in combos for v in values]
        for key in enum_keys:
            combos = [dict(c, **{key: v}) for c in combos
                      for v in props[key]['enum'][:cfg.values_per_param]]
        combos = combos[:cfg.values_per_param + 1]
        return [Candidate(name, c, _phrase(name, c), ('grounded',)) for c in combos]

    def _values(self, key: str, prop: dict, pool: list[str], commands: list[str],
                owner: str = '') -> list[str]:
        limit = int(prop.get('maxLength', 200) or 200)
        if re.search(r'(^|_)tool(_|$)', key):       # an argument that names a tool: a tool
            return [n for n in getattr(self, '_tool_names', [])
                    if n != owner][:self.config.values_per_param]
        values = []
        if commands and re.search(r'command|cmd|script|shell', key):
            values += commands
        values += pool
        out = []
        for v in values:
            if v and len(v) <= limit and v not in out:
                out.append(v)
        return out[:self.config.values_per_param]


class Chooser:
    """Scores candidates with the model and weighs them (see the module docstring)."""

    def __init__(self, backend, config: ChoiceConfig = ChoiceConfig(),
                 tool_prior: Callable[[str], float] | None = None):
        self.backend = backend
        self.config = config
        self.builder = CandidateBuilder(config)
        self.tool_prior = tool_prior
        self._neutral: dict[str, float] = {}
        self._surprise: dict[str, float] = {}

    # -- the model ---------------------------------------------------------------------------
    def relevance(self, prompt: str, cands: Sequence[Candidate]) -> int:
        """Fill each candidate's relevance (PMI over sqrt length); the prompt's tokens."""
        conts = [f' {c.phrase}.' for c in cands]
        done = self.backend.score(prompt, conts)
        if len(done.logprobs) != len(conts):
            raise ValueError(f'{len(done.logprobs)} scores for {len(conts)} candidates')
        raw = [(float(lp) - self._neutral.get(cont, 0.0)) / math.sqrt(max(1, int(n)))
               for cont, lp, n in zip(conts, done.logprobs, done.token_counts)]
        # In units of the spread among these candidates: the model says which fit best,
        # on the same scale as what the other systems add.
        mean = sum(raw) / len(raw)
        spread = max(1.0, math.sqrt(sum((r - mean) ** 2 for r in raw) / len(raw)))
        for c, r in zip(cands, raw):
            c.pmi = r
            c.relevance = (r - mean) / spread
        return int(done.prompt_tokens)

    # -- what else weighs --------------------------------------------------------------------
    def weigh(self, cands: Sequence[Candidate], g: Grounding) -> None:
        cfg = self.config
        goal_stems = {_stem(w) for w in content_words(f'{g.goal} {g.heard}')}
        avoid = avoided(f'{g.goal}. {g.heard}')
        recalled = ' '.join(g.recalled).lower()
        # The world changed with the last successful act that was not read-only.
        last_success = max((i for i, r in enumerate(g.recent)
                            if r.success and not r.introspection), default=-1)
        for c in cands:
            if c.tool is None:
                c.total = cfg.w_relevance * c.relevance + cfg.effort * g.acts_since_news \
                    + cfg.wait_bias
                continue
            v = g.values.get(c.tool)
            c.value = cfg.w_value * 2 * (v - 0.5) if v is not None else 0.0
            words = {_stem(w) for w in content_words(c.phrase)}
            c.goal = cfg.w_goal * min(2, len(words & goal_stems))
            if avoid and {_root(w) for w in content_words(c.phrase)} & avoid:
                c.goal -= cfg.w_avoid
            if self.tool_prior is not None:
                c.goal += self.tool_prior(c.tool)
            if _words(c.tool) in recalled or c.tool in recalled:
                c.memory = cfg.w_memory
            habit = 0.0        # each repeat adds: done again, failed again, the same tool
            for i, r in enumerate(g.recent):
                if r.tool != c.tool:
                    continue
                same = json.dumps(r.args, sort_keys=True) == json.dumps(c.args, sort_keys=True)
                if same and (r.blocked or r.success):
                    habit += cfg.habit_done
                elif same and i >= last_success:
                    habit += cfg.habit_failed
                else:
                    habit += cfg.habit_tool
            c.habit = habit
            c.pain = max((cfg.w_pain * float(p) for t, a, p in g.pains
                          if t == c.tool and _same_direction(a or {}, c.args)), default=0.0)
            c.total = (cfg.w_relevance * c.relevance + c.value + c.goal + c.memory
                       - c.habit - c.pain)

    def candidates(self, tools: Sequence[Any], g: Grounding) -> list[Candidate]:
        """The candidates for this situation (at most max_candidates, wait last), and their
        neutral likelihoods computed ahead: that short call would otherwise evict the diary
        from the model's cache between the thought and the decision."""
        self._rank_memory_terms(g)
        cands = self.builder.build(tools, g)
        wait = [c for c in cands if c.tool is None]
        acts = [c for c in cands if c.tool is not None]
        if len(acts) > self.config.max_candidates - 1:
            acts = self._prune(acts, g)
        cands = acts + wait
        missing = [f' {c.phrase}.' for c in cands if f' {c.phrase}.' not in self._neutral]
        if missing:
            base = self.backend.score(NEUTRAL_PREFIX, missing)
            if len(self._neutral) > 4096:
                self._neutral.clear()
            self._neutral.update(zip(missing, base.logprobs))
        return cands

    def _rank_memory_terms(self, g: Grounding, pool: int = 12, keep: int = 3) -> None:
        """The words memory adds, most informative first: by the model's own surprise at
        each word alone (a rare word like a password says more than 'told' or 'old')."""
        g.salient = ()
        words = g.memory_terms(pool)
        if not words:
            return
        missing = [f' {w}' for w in words if f' {w}' not in self._surprise]
        if missing:
            done = self.backend.score(NEUTRAL_PREFIX, missing)
            if len(self._surprise) > 8192:
                self._surprise.clear()
            for m, lp, n in zip(missing, done.logprobs, done.token_counts):
                self._surprise[m] = -float(lp)
        g.salient = tuple(sorted(words, key=lambda w: -self._surprise[f' {w}'])[:keep])

    def decide(self, cands: list[Candidate], g: Grounding, prompt: str
               ) -> tuple[Candidate | None, list[Candidate], int]:
        """Score and weigh `cands` after `prompt` (the diary's decision line): the chosen
        candidate (None: wait), all of them best first, and the prompt's tokens."""
        tokens = self.relevance(prompt, cands)
        self.weigh(cands, g)
        ranked = sorted(cands, key=lambda c: -c.total)
        return (None if ranked[0].tool is None else ranked[0]), ranked, tokens

    def _prune(self, acts: list[Candidate], g: Grounding) -> list[Candidate]:
        """Keep the candidates most tied to the situation when there are too many: those
        whose words the goal, a person or memory share, then in the order proposed."""
        goal = {_stem(w) for w in content_words(f'{g.goal} {g.heard} {g.percept}')}
        order = {id(c): i for i, c in enumerate(acts)}
        acts = sorted(acts, key=lambda c: (-len({_stem(w) for w in content_words(c.phrase)}
                                                & goal), order[id(c)]))
        return acts[:self.config.max_candidates - 1]

    # -- free text ---------------------------------------------------------------------------
    def write(self, diary: Diary, thought: str, seed: int = -1) -> str:
        """What the robot would say now, written by the model after an open quote; '' when
        what it wrote is empty or template text."""
        cfg = self.config
        done = self.backend.complete(diary.say_prompt(thought), max_tokens=cfg.say_max_tokens,
                                     temperature=cfg.temperature, top_p=0.95, top_k=40,
                                     repeat_penalty=1.1, seed=seed, stop=['"'],
                                     grammar=SAY_GRAMMAR)
        text = ' '.join(done.text.split()).strip()
        return '' if not text or is_template(text) else text


# Plain text without quotes, braces, angle brackets or line breaks: no slot or template can
# be written, and a line is one utterance or one thought.
_PLAIN = r'[^"\\<>{}\[\]\x00-\x1F\x7F]'
SAY_GRAMMAR = f'root ::= {_PLAIN}{{1,160}} "\\""\n'
THOUGHT_GRAMMAR = f'root ::= " "? {_PLAIN}{{1,240}} "\\n"\n'
