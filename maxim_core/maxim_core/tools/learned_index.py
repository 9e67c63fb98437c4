"""LearnedToolIndex: which tools matter for a goal, learned from use (seed 001).

With 20+ tools, every schema in every prompt wastes hundreds of tokens. The index is a
keyword-weighted table, tool -> {keyword: weight}:

1. At start, keywords are extracted from each tool's name (strongest), its description-table
   entry and own description, and its parameter names.
2. A goal is tokenised and scored against the table (weights times an IDF factor, so a word
   every tool shares, like "file", counts less). Matched tools get their full description in
   a CRITICAL prompt section; the others are listed by name only, in a NICE_TO_HAVE section
   that a tight budget drops first.
3. A success strengthens the goal's keywords for the tool used and discovers new ones from
   the goal text; a tool surfaced but not used decays on the goal's keywords; a failure does
   NOT weaken anything (the tool was the right one, it just failed).
4. Learned weights persist in a JSON file (seed: ~/.maxim/memory/tool_index.json), written
   atomically, so learning survives sessions.
"""

from dataclasses import dataclass, field
import json
import math
import os
from pathlib import Path
import re
import tempfile
import threading
from typing import Any, Iterable, Mapping

from maxim_core.prompt.sections import Priority, Section
from maxim_core.prompt.tools import as_tool_spec, normalize_schema, tool_manifest

DEFAULT_PATH = Path('~/.maxim/memory/tool_index.json')
FORMAT_VERSION = 1

STOPWORDS = frozenset('''
a an the and or but if of to in on at by for with from into onto over under about as is are
was were be been being it its this that these those there here i you he she we they me my
your our their them us do does did done can could should would will shall may might must
not no yes so than then too very just also any all some each every one two what which who
whom whose when where why how up down out off again more most less least own same such only
now get got make made let lets please want need use using used tool tools true false null
text e g eg etc via per new
'''.split())

NAME_WEIGHT = 1.0
TABLE_WEIGHT = 0.6
DESCRIPTION_WEIGHT = 0.5
PARAM_WEIGHT = 0.4
DISCOVER_WEIGHT = 0.3
MIN_WEIGHT = 0.02
MAX_WEIGHT = 3.0


def stem(word: str) -> str:
    """A light stemmer: files, file -> fil; moved, moving, move -> mov; memories -> memory."""
    for suffix in ('ies', 'ing', 'ed', 's'):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[:-len(suffix)] + ('y' if suffix == 'ies' else '')
            break
    if word.endswith('e') and len(word) > 3:
        word = word[:-1]
    return word


def keywords(text: str) -> list[str]:
    """Stemmed content words of `text` (underscores and camelCase split), in order, unique."""
    text = re.sub(r'([a-z])([A-Z])', r'\1 \2', str(text))
    out: list[str] = []
    for word in re.findall(r'[a-z0-9]+', text.lower()):
        if len(word) < 2 or word in STOPWORDS or word.isdigit():
            continue
        s = stem(word)
        if s not in out:
            out.append(s)
    return out


@dataclass
class ToolSelection:
    """The tools a goal needs in full, and the rest by name."""

    critical: list[str]
    nice: list[str]
    scores: dict[str, float] = field(default_factory=dict)
    goal_keywords: list[str] = field(default_factory=list)


class LearnedToolIndex:
    """Keyword weights per tool, scored against goal text and learned from outcomes."""

    def __init__(self, tools: Iterable[Any], table: Mapping[str, Any] | None = None,
                 path: str | os.PathLike | None = None, threshold: float = 0.3,
                 relative: float = 0.35, max_critical: int = 5, learning_rate: float = 0.25,
                 decay: float = 0.9, max_keywords: int = 64):
        if not 0.0 < decay < 1.0 or not 0.0 < learning_rate <= 1.0:
            raise ValueError('need 0 < decay < 1 and 0 < learning_rate <= 1')
        if max_critical < 1 or threshold < 0 or not 0.0 <= relative <= 1.0:
            raise ValueError('need max_critical >= 1, threshold >= 0, 0 <= relative <= 1')
        self.table = dict(table or {})
        self.tools = {}
        for t in tools:
            spec = as_tool_spec(t)
            self.tools[spec.name] = t
        self.path = Path(path).expanduser() if path is not None else None
        self.threshold = threshold
        self.relative = relative
        self.max_critical = max_critical
        self.learning_rate = learning_rate
        self.decay = decay
        self.max_keywords = max_keywords
        self.weights: dict[str, dict[str, float]] = {
            name: self._extract(t) for name, t in self.tools.items()}
        self.successes: dict[str, int] = {}
        self.failures: dict[str, int] = {}
        self._lock = threading.Lock()
        if self.path is not None and self.path.exists():
            self.load(self.path)

    # -- extraction --------------------------------------------------------------------------
    def _extract(self, t: Any) -> dict[str, float]:
        spec = as_tool_spec(t)
        weights: dict[str, float] = {}

        def add(words: Iterable[str], w: float) -> None:
            for k in words:
                weights[k] = max(weights.get(k, 0.0), w)

        entry = self.table.get(spec.name)
        if isinstance(entry, Mapping):
            add(keywords(entry.get('description', '')), TABLE_WEIGHT)
            params = entry.get('params')
            if isinstance(params, Mapping):
                add(keywords(' '.join(params)), PARAM_WEIGHT)
        add(keywords(spec.description), DESCRIPTION_WEIGHT)
        add(keywords(' '.join(normalize_schema(spec.input_schema).get('properties', {}))),
            PARAM_WEIGHT)
        add(keywords(spec.name), NAME_WEIGHT)
        return weights

    # -- scoring -----------------------------------------------------------------------------
    def _idf(self, word: str) -> float:
        df = sum(1 for w in self.weights.values() if word in w)
        n = max(1, len(self.weights))
        return math.log(1.0 + n / (1.0 + df))

    def score(self, goal: str) -> dict[str, float]:
        """Tool -> relevance to `goal` (0 when nothing matches)."""
        words = keywords(goal)
        with self._lock:
            idf = {w: self._idf(w) for w in words}
            return {name: sum(kw.get(w, 0.0) * idf[w] for w in words)
                    for name, kw in self.weights.items()}

    def select(self, goal: str, always: Iterable[str] = (),
               among: Iterable[str] | None = None) -> ToolSelection:
        """CRITICAL tools (full schema) for `goal`; the rest NICE_TO_HAVE (names only).
        With `among`, only those tools are considered (the ones active now)."""
        scores = self.score(goal)
        if among is not None:
            keep = set(among)
            scores = {n: s for n, s in scores.items() if n in keep}
        ranked = sorted((s, n) for n, s in scores.items() if s > 0.0)
        ranked.reverse()
        top = ranked[0][0] if ranked else 0.0
        cut = max(self.threshold, self.relative * top)
        critical = [n for s, n in ranked if s >= cut][:self.max_critical]
        for name in always:
            if name in scores and name not in critical:
                critical.append(name)
        nice = sorted(n for n in scores if n not in critical)
        return ToolSelection(critical, nice, scores, keywords(goal))

    def sections(self, goal: str, always: Iterable[str] = (),
                 among: Iterable[str] | None = None) -> tuple[list[Section], ToolSelection]:
        """The prompt sections for `goal` and the selection they show."""
        sel = self.select(goal, always, among)
        out = []
        if sel.critical:
            text = tool_manifest([self.tools[n] for n in sel.critical], self.table)
            out.append(Section('tools', text, Priority.CRITICAL))
        if sel.nice:
            out.append(Section('tools_other', 'Your other tools (by name): '
                               + ', '.join(sel.nice), Priority.NICE_TO_HAVE))
        return out, sel

    # -- learning ----------------------------------------------------------------------------
    def record_success(self, tool: str, goal: str) -> None:
        """Strengthen the goal's keywords for `tool`; discover the ones it lacked."""
        if tool not in self.weights:
            return
        with self._lock:
            kw = self.weights[tool]
            for word in keywords(goal):
                if word in kw:
                    kw[word] = min(MAX_WEIGHT, kw[word] + self.learning_rate
                                   * (MAX_WEIGHT - kw[word]) / MAX_WEIGHT)
                else:
                    kw[word] = DISCOVER_WEIGHT
            if len(kw) > self.max_keywords:
                base = self._extract(self.tools[tool])
                learned = sorted((w, k) for k, w in kw.items() if k not in base)
                for _, k in learned[:len(kw) - self.max_keywords]:
                    del kw[k]
            self.successes[tool] = self.successes.get(tool, 0) + 1

    def record_unused(self, surfaced: Iterable[str], used: Iterable[str], goal: str) -> None:
        """Tools shown in full for `goal` but not used decay on the goal's keywords."""
        used = set(used)
        words = keywords(goal)
        with self._lock:
            for tool in surfaced:
                if tool in used or tool not in self.weights:
                    continue
                kw = self.weights[tool]
                for word in words:
                    if word in kw:
                        kw[word] = max(MIN_WEIGHT, kw[word] * self.decay)

    def record_failure(self, tool: str, goal: str) -> None:
        """Counted only: a failure says nothing about whether the tool was the right one."""
        with self._lock:
            self.failures[tool] = self.failures.get(tool, 0) + 1

    # -- persistence -------------------------------------------------------------------------
    def to_dict(self) -> dict:
        with self._lock:
            return {'version': FORMAT_VERSION,
                    'weights': {t: dict(w) for t, w in self.weights.items()},
                    'successes': dict(self.successes), 'failures': dict(self.failures)}

    def save(self, path: str | os.PathLike | None = None) -> Path:
        target = Path(path).expanduser() if path is not None else self.path
        if target is None:
            raise ValueError('no path to save the tool index to')
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix='.tool_index.')
        try:
            with os.fdopen(fd, 'w', encoding='utf-8') as f:
                json.dump(self.to_dict(), f, indent=1, sort_keys=True)
            os.replace(tmp, target)
        except OSError:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise
        return target

    def load(self, path: str | os.PathLike) -> None:
        """Merge learned weights from `path` for the tools that still exist."""
        try:
            data = json.loads(Path(path).expanduser().read_text(encoding='utf-8'))
        except json.JSONDecodeError as exc:
            raise ValueError(f'{path}: not a tool index ({exc.msg})') from exc
        if not isinstance(data, dict) or data.get('version') != FORMAT_VERSION:
            raise ValueError(f'{path}: unsupported tool index format')
        with self._lock:
            for tool, stored in data.get('weights', {}).items():
                if tool in self.weights and isinstance(stored, dict):
                    for k, w in stored.items():
                        if isinstance(w, (int, float)):
                            self.weights[tool][str(k)] = float(w)
            self.successes.update({k: int(v) for k, v in data.get('successes', {}).items()})
            self.failures.update({k: int(v) for k, v in data.get('failures', {}).items()})
