"""The words of the choice: tokenising, stems and roots, content words, what a person said,
the phrases of acts and results, and the small word sets and patterns every part reads.

Pure Python; no ROS.
"""

import json
import re
from typing import Any, Mapping, Sequence

from maxim_core.prompt.diary import copied_run, FIXED_TEXT, has_label, strip_figures

# Parameters whose value is free text written by the model.
# Parameters whose value is free text written by the model.
FREE_TEXT_PARAMS = frozenset({'text', 'thought', 'message', 'question', 'reply', 'answer',
                              'utterance', 'speech', 'content'})
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


def stems(text: str) -> set[str]:
    """The stems of the content words of `text`."""
    return {_stem(w) for w in content_words(text)}


def roots(text: str) -> set[str]:
    """The roots of the content words of `text`."""
    return {_root(w) for w in content_words(text)}


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
