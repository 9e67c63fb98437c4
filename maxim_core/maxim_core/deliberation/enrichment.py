"""Bio-enrichment: ask memory about a percept or a thought, within a time budget (seed 000).

Each provider is a query `text -> str | None` (hippocampus recall, NAc predictions, EC
similarity, active concepts, motor programs, SCN time context); in the robot each is a memory
service call that may be slow or absent. All are asked at once on a thread pool; whatever has
not answered when the budget runs out is reported as skipped with why, and never blocks the
deliberation. A provider still busy from an earlier call is not asked again, so a hung
service holds at most one thread.
"""

from concurrent.futures import Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
import threading
import time
from typing import Callable, Mapping

# Canonical providers, in the order their answers are shown, with the label the model reads.
PROVIDERS = ('hippocampus', 'nac', 'ec', 'concepts', 'motor', 'scn')
LABELS = {'hippocampus': 'Memory', 'nac': 'Prediction', 'ec': 'Similar situation',
          'concepts': 'Active concept', 'motor': 'Motor program', 'scn': 'Time'}
# Providers whose answer lines count as recalled memories (recall depth).
RECALL_PROVIDERS = ('hippocampus', 'ec')

Provider = Callable[[str], 'str | None']


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

    def enrich(self, text: str) -> Enrichment:
        """Ask every provider about `text`; return within about `budget_s`."""
        t0 = self.clock()
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
                fut = self._pool.submit(self.providers[name], text)
                self._busy[name] = fut
                futures[fut] = name
        done, pending = wait(futures, timeout=self.budget_s)
        for fut in pending:
            out.skipped[futures[fut]] = f'no answer within {self.budget_s:.2f} s'
        lines = []
        for name in self._order(futures[f] for f in done):
            fut = next(f for f in done if futures[f] == name)
            exc = fut.exception()
            if exc is not None:
                out.skipped[name] = f'failed: {type(exc).__name__}: {exc}'
                continue
            answer = fut.result()
            if answer is not None and not isinstance(answer, str):
                out.skipped[name] = f'answered a {type(answer).__name__}, not text'
                continue
            answer = (answer or '').strip()
            if not answer:
                out.skipped[name] = 'nothing relevant'
                continue
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

    def close(self) -> None:
        """Stop taking queries; threads of hung providers are left to finish on their own."""
        self._pool.shutdown(wait=False, cancel_futures=True)
