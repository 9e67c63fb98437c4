"""The candidates of a choice: one possible action each, its arguments filled from the
grounding (`CandidateBuilder`).

Pure Python; no ROS.
"""

from dataclasses import dataclass, field
import json
import re
from typing import Any, Sequence

from maxim_core.deliberation.choice import ChoiceConfig, RESULT_FRAME, WAIT
from maxim_core.deliberation.grounding import Grounding
from maxim_core.deliberation.recall import perceived_answer, related_values, tied_to
from maxim_core.deliberation.words import (_CODE_NUMBER, _FILE_NAME, _NAMES_TOOL, _PATH_KEY,
                                           _phrase, _stem, _words, command_spans,
                                           content_words, FREE_TEXT_PARAMS, INTERROGATIVE,
                                           quoted_spans, said_words)
from maxim_core.prompt.tools import as_tool_spec


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


def _speech(name: str, key: str, g: Grounding) -> list[Candidate]:
    """The speech tool `name`'s candidates, its free text `key` still to write or filled:
    what memory ties to a question, what is in view, and the replies built from sources."""
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
            return _speech(name, key, g)
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
