"""Relevance of a memory to what the robot perceives now: content words, scores, thresholds.

Enrichment must be able to say "nothing relevant": a memory is offered to the model only when
its score for the percept reaches its channel's threshold, and each offered memory says why
it matched (the content words both share, or the semantic similarity).

- Content words: lower-case words of two or more letters, not numbers, not in `STOP_WORDS`
  (the standard English list of NLTK's corpus, 179 words) nor in `PERCEPT_WORDS` (the fixed
  words of the attention narrative, "I see 1 face: a person, to my left, new. I am looking
  at ..."; they say where and how, not what, and are in every percept), with plural endings
  folded ('cups' -> 'cup', 'boxes' -> 'box', 'batteries' -> 'battery'), so "the", "is" and
  "see" never make two texts look alike. Indefinite pronouns ("someone", "something") are
  function words too.
- Semantic text: the sentence embedder reads a text without the attention narrative's
  scaffolding (`strip_percept_template`), which would otherwise make every percept alike.
- Keyword score (the hippocampus channel): the share of the percept's content words the
  memory contains, each word weighted by its rarity among the stored memories (inverse
  document frequency), so one shared everyday word ("person", "table") weighs less than a
  rare one ("charger", "Sarah").
- Semantic score (the EC channel): the cosine of the two texts' embeddings; the threshold
  depends on the embedder (`semantic_threshold`), since a word-hashing vector and a sentence
  model's vector put unrelated texts at different distances.

The thresholds were calibrated on the 70 labelled (percept, memory) pairs of
bench/cognition/pairs.jsonl (`precision.py --sweep` prints the trade-offs; bench/README.md has
the figures): each is the value that keeps the unrelated pairs' false alarms at or under 10%
with the most related pairs found. Keywords 0.25; the sentence model's cosine 0.35 (92% of
the related pairs found, 9% of the unrelated answered; chosen on one half and measured on
the other, 89% and 6%); hashing's 0.50 (its vectors add nothing the keywords do not find,
so only near-duplicates pass). The llama embedder's 0.90 is not calibrated.
"""

from __future__ import annotations

from dataclasses import dataclass
import math
import re
from typing import Any, Callable, Container, Iterable, Mapping

# NLTK's English stop word list (nltk.corpus.stopwords.words('english')), the usual standard.
STOP_WORDS = frozenset('''
i me my myself we our ours ourselves you you're you've you'll you'd your yours yourself
yourselves he him his himself she she's her hers herself it it's its itself they them their
theirs themselves what which who whom this that that'll these those am is are was were be
been being have has had having do does did doing a an the and but if or because as until
while of at by for with about against between into through during before after above below
to from up down in out on off over under again further then once here there when where why
how all any both each few more most other some such no nor not only own same so than too
very s t can will just don don't should should've now d ll m o re ve y ain aren aren't
couldn couldn't didn didn't doesn doesn't hadn hadn't hasn hasn't haven haven't isn isn't ma
mightn mightn't mustn mustn't needn needn't shan shan't shouldn shouldn't wasn wasn't weren
weren't won won't wouldn wouldn't
'''.split())

# Pronouns that stand for anyone or anything: function words NLTK's list leaves out.
INDEFINITE = frozenset('someone somebody anyone anybody everyone everybody something anything '
                       'everything nobody'.split())
# The fixed words of maxim_perception's attention narrative (attention._percept).
PERCEPT_WORDS = frozenset('see face object nothing stands straight ahead left right above '
                          'below moving new familiar looking next novelty'.split())
IGNORED = STOP_WORDS | INDEFINITE | PERCEPT_WORDS

KEYWORD_THRESHOLD = 0.25      # hippocampus: share of the percept's (idf-weighted) words
CHANNEL_THRESHOLDS = {'hippocampus': KEYWORD_THRESHOLD}   # the EC's: semantic_threshold()
DEFAULT_SEMANTIC_THRESHOLD = 0.5   # an embedder that carries no calibrated threshold
IDF_PRIOR = 20                     # virtual memories in the idf (see `idf`)

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_SAFE_S = ('ss', 'us', 'is', 'os', 'as')


def fold(word: str) -> str:
    """A word with its English plural ending removed (a light stemmer: plurals only, so
    that 'cups' meets 'cup' while 'pass', 'bus' and 'this' stay as they are)."""
    if len(word) > 4 and word.endswith('ies'):
        return word[:-3] + 'y'
    if len(word) > 4 and word.endswith(('ches', 'shes', 'sses', 'xes', 'zes')):
        return word[:-2]
    if len(word) > 3 and word.endswith('s') and not word.endswith(_SAFE_S):
        return word[:-1]
    return word


def content_words(text: str) -> list[str]:
    """The text's content words, folded, each once, in order of first appearance."""
    out: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        if w in IGNORED:
            continue
        w = w.split("'")[0]  # "robot's" -> "robot"
        if len(w) < 2 or w.isdigit() or w in IGNORED:
            continue
        w = fold(w)
        if w not in IGNORED:
            out.setdefault(w, None)
    return list(out)


_TEMPLATE = [  # the attention narrative's scaffolding, most specific first
    (re.compile(r'\bI see nothing that stands out\.?', re.I), ''),
    (re.compile(r'\bI see \d+ (?:faces?|objects?)(?: and \d+ (?:faces?|objects?))?:\s*',
                re.I), ''),
    (re.compile(r'\bI am looking at (?:the |an? )?(.+?) \(#\d+\)(?: for [\d.]+ s)?', re.I),
     r'\1'),
    (re.compile(r'\bNext: (?:the |an? )?(.+?) \(#\d+(?:, [^)]*)?\)', re.I), r'\1'),
    (re.compile(r',\s*(?:to my (?:left|right)|straight ahead|(?:above|below)'
                r'(?: to my (?:left|right)| me)?)', re.I), ''),
    (re.compile(r',\s*(?:moving|new|familiar)\b', re.I), ''),
]


def strip_percept_template(text: str) -> str:
    """The text without the attention narrative's scaffolding ("I see 1 face and 2
    objects: a cup, to my left, new. I am looking at the cup (#3) for 1.2 s." -> "a cup.
    cup."): every percept has it, so to a sentence model all percepts would look alike.
    Other text passes unchanged."""
    for pattern, repl in _TEMPLATE:
        text = pattern.sub(repl, text)
    return re.sub(r'\s+', ' ', text).strip()


def idf(doc_freq: int, n_docs: int) -> float:
    """Rarity weight of a word found in `doc_freq` of `n_docs` memories: log((N + 20) /
    (df + 1)). The 20 virtual memories holding none of the words keep a handful of memories
    from making every word they hold look common (with one memory, a shared word still weighs
    3/4 of a word no memory has); always > 0."""
    return math.log((max(0, n_docs) + IDF_PRIOR) / (max(0, doc_freq) + 1))


@dataclass(frozen=True)
class KeywordMatch:
    score: float                 # 0..1: weighted share of the query's content words found
    shared: tuple[str, ...]      # the content words both texts have, rarest first

    def why(self) -> str:
        return 'shared words: ' + ', '.join(self.shared)


class KeywordScorer:
    """A query's content words and their weights, to score many memories against: the
    score of a memory is the summed weight of the query words it holds over the summed
    weight of all of them, rounded to 4 places. `doc_freq(word)` (or a mapping) gives how
    many of `n_docs` memories hold the word; without it every word weighs 1."""

    def __init__(self, query: str | Iterable[str],
                 doc_freq: Mapping[str, int] | Callable[[str], int] | None = None,
                 n_docs: int = 0):
        self.words = content_words(query) if isinstance(query, str) \
            else list(dict.fromkeys(query))
        if doc_freq is None:
            self.weights = {w: 1.0 for w in self.words}
        else:
            df = doc_freq if callable(doc_freq) else (lambda w: doc_freq.get(w, 0))
            self.weights = {w: idf(df(w), n_docs) for w in self.words}
        self.total = sum(self.weights[w] for w in self.words)

    def match(self, memory_words: Container[str]) -> KeywordMatch:
        """`memory_words`: the memory's content words (a set, or any container)."""
        if not self.words or self.total <= 0:
            return KeywordMatch(0.0, ())
        have = [w for w in self.words if w in memory_words]
        score = sum(self.weights[w] for w in have) / self.total
        shared = sorted(have, key=lambda w: (-self.weights[w], w))
        return KeywordMatch(round(score, 4), tuple(shared))


def keyword_score(query: str | Iterable[str], memory: str | Iterable[str],
                  doc_freq: Mapping[str, int] | None = None, n_docs: int = 0
                  ) -> KeywordMatch:
    """How much of the query's content the memory contains (see `KeywordScorer`). `query`
    and `memory` are texts or already-extracted content words."""
    m = set(content_words(memory) if isinstance(memory, str) else memory)
    return KeywordScorer(query, doc_freq, n_docs).match(m)


def semantic_threshold(embedder: Any) -> float:
    """The cosine from which an EC hit is relevant, for this embedder: its calibrated
    `relevance_threshold` attribute, else `DEFAULT_SEMANTIC_THRESHOLD`."""
    t = getattr(embedder, 'relevance_threshold', None)
    return float(t) if isinstance(t, (int, float)) else DEFAULT_SEMANTIC_THRESHOLD


def threshold(channel: str, embedder: Any = None) -> float:
    """A channel's threshold: 'hippocampus' (keywords) or 'ec' (semantic, per embedder)."""
    if channel == 'ec':
        return semantic_threshold(embedder)
    try:
        return CHANNEL_THRESHOLDS[channel]
    except KeyError:
        raise ValueError(f'no relevance threshold for channel {channel!r} (have: ec, '
                         f'{", ".join(sorted(CHANNEL_THRESHOLDS))})') from None
