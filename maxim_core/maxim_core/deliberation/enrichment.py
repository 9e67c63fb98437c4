"""Bio-enrichment: ask memory about a percept or a thought, within a time budget (seed 000).

Each provider is a query `EnrichQuery -> str | dict | None`. The query is the text (the
percept, or the previous thought) and carries the situation: objects and people in view, the
goal, the active tools and the NAc context key. A provider answers one channel (a text, one
line per item), or several at once (a dict channel -> text: memory answers its channels in
one round trip), or None for nothing relevant. Channels: episodes (hippocampus), similar
(EC), concepts (ATL concept context), knowledge (cross-layer spreading), predictions
(pattern completion), values (NAc), motor (cerebellum), rhythms (SCN).

All providers are asked at once on a thread pool; whatever has not answered when the budget
runs out is reported as skipped with why, and never blocks the deliberation. A provider still
busy from an earlier call is not asked again, so a hung service holds at most one thread.
A channel with nothing relevant is not a section: salience counts only channels that had
something to say.
"""

from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
import threading
import time
from typing import Callable, Mapping

# Canonical channels, in the order their answers are shown, with the label the model reads.
PROVIDERS = ('episodes', 'similar', 'concepts', 'knowledge', 'predictions', 'values', 'motor',
             'rhythms')
LABELS = {'episodes': 'Memory', 'similar': 'Similar situation', 'concepts': 'Concept',
          'knowledge': 'Knowledge', 'predictions': 'Prediction', 'values': 'What works here',
          'motor': 'Motor program', 'rhythms': 'Time'}
# Channels whose answer lines count as recalled memories (recall depth).
RECALL_PROVIDERS = ('episodes', 'similar')


class EnrichQuery(str):
    """The text to enrich, carrying the situation it belongs to (a str, so a provider that
    only needs the text uses it as one)."""

    def __new__(cls, text: str = '', objects=(), people=(), goal: str = '', tools=(),
                context_key: str = ''):
        obj = super().__new__(cls, text)
        obj.objects = tuple(str(o) for o in objects)
        obj.people = tuple(str(p) for p in people)
        obj.goal = str(goal)
        obj.tools = tuple(str(t) for t in tools)
        obj.context_key = str(context_key)
        return obj


Provider = Callable[[EnrichQuery], 'str | Mapping[str, str] | None']


@dataclass
class Enrichment:
    """What the bio-systems answered for one text."""

    text: str = ''                                       # "Your experience responded"
    sources: list[str] = field(default_factory=list)     # providers that answered
    answers: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # provider -> why
    memories: int = 0                                    # recall depth
    duration_s: float = 0.0

    @property
    def sections(self) -> int:
        return len(self.sources)


class BioEnrichmentPipeline:
    """Parallel, time-budgeted, gracefully degrading memory queries."""

    def __init__(self, providers: Mapping[str, Provider], budget_s: float = 1.5,
                 expected: tuple[str, ...] = PROVIDERS, max_chars: int = 400,
                 clock: Callable[[], float] = time.monotonic):
        if budget_s <= 0:
            raise ValueError('budget_s must be positive')
        for name, fn in providers.items():
            if not callable(fn):
                raise TypeError(f'provider {name!r} is not callable')
        self.providers = dict(providers)
        self.budget_s = float(budget_s)
        self.expected = tuple(expected)
        self.max_chars = max_chars
        self.clock = clock
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.providers)),
                                        thread_name_prefix='enrich')
        self._busy: dict[str, Future] = {}
        self._lock = threading.Lock()

    def _order(self, names):
        rank = {n: i for i, n in enumerate(PROVIDERS)}
        return sorted(names, key=lambda n: (rank.get(n, len(rank)), n))

    def enrich(self, text: str, **situation) -> Enrichment:
        """Ask every provider about `text` in `situation` (EnrichQuery's keywords: objects,
        people, goal, tools, context_key); return within about `budget_s`."""
        t0 = self.clock()
        query = text if isinstance(text, EnrichQuery) else EnrichQuery(text, **situation)
        out = Enrichment()
        for name in self.expected:
            if name not in self.providers:
                out.skipped[name] = 'absent'
        if not text.strip():
            for name in self.providers:
                out.skipped[name] = 'nothing to ask about'
            return out
        futures: dict[Future, str] = {}
        with self._lock:
            for name in self._order(self.providers):
                busy = self._busy.get(name)
                if busy is not None and not busy.done():
                    out.skipped[name] = 'still busy with an earlier query'
                    continue
                fut = self._pool.submit(self.providers[name], query)
                self._busy[name] = fut
                futures[fut] = name
        done, pending = wait(futures, timeout=self.budget_s)
        for fut in pending:
            out.skipped[futures[fut]] = f'no answer within {self.budget_s:.2f} s'
        answered = self._answered(done, futures, out)
        for name in answered:
            out.skipped.pop(name, None)
        lines = []
        for name in self._order(answered):
            answer = answered[name]
            if len(answer) > self.max_chars:
                answer = answer[:self.max_chars].rsplit(' ', 1)[0] + ' ...'
            out.answers[name] = answer
            out.sources.append(name)
            items = [ln.strip(' -*\t') for ln in answer.splitlines() if ln.strip(' -*\t')]
            if name in RECALL_PROVIDERS:
                out.memories += len(items)
            label = LABELS.get(name, name)
            lines += [f'- {label}: {item}' for item in items]
        out.text = '\n'.join(lines)
        out.duration_s = self.clock() - t0
        return out

    @staticmethod
    def _answered(done, futures: dict[Future, str], out: Enrichment) -> dict[str, str]:
        """The text each provider (or each channel of one) answered; why not in
        `out.skipped`."""
        answered: dict[str, str] = {}
        for fut in done:
            name = futures[fut]
            exc = fut.exception()
            if exc is not None:
                out.skipped[name] = f'failed: {type(exc).__name__}: {exc}'
                continue
            answer = fut.result()
            if isinstance(answer, Mapping):
                for channel, part in answer.items():
                    if part is not None and not isinstance(part, str):
                        out.skipped[channel] = f'answered a {type(part).__name__}, not text'
                    elif not (part or '').strip():
                        out.skipped[channel] = 'nothing relevant'
                    else:
                        answered[channel] = part.strip()
                continue
            if answer is not None and not isinstance(answer, str):
                out.skipped[name] = f'answered a {type(answer).__name__}, not text'
                continue
            if not (answer or '').strip():
                out.skipped[name] = 'nothing relevant'
                continue
            answered[name] = answer.strip()
        return answered

    def close(self) -> None:
        """Stop taking queries; threads of hung providers are left to finish on their own."""
        self._pool.shutdown(wait=False, cancel_futures=True)
