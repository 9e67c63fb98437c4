"""Computational energy: tokens and inference seconds spent thinking (EnergyStatus.srv).

The token budget is what the ThoughtGate's energy check reads: below its floor the agent
acts on reflex and habit instead of deliberating. An optional refill rate lets the budget
recover with time, as rest does.
"""

from collections import deque
from dataclasses import dataclass
import threading
import time
from typing import Callable


@dataclass(frozen=True)
class EnergyReport:
    """The answer of energy_status (fields as in EnergyStatus.srv)."""

    available: bool
    prompt_tokens: int
    completion_tokens: int
    inference_s: float
    requests: int
    tokens_per_s: float
    token_budget: int
    budget_remaining: float


class EnergyBudget:
    """Accounts every model call; answers the fraction of the token budget left."""

    def __init__(self, token_budget: int = 0, refill_tokens_per_s: float = 0.0,
                 max_records: int = 10000, clock: Callable[[], float] = time.monotonic):
        if token_budget < 0 or refill_tokens_per_s < 0:
            raise ValueError('token_budget and refill_tokens_per_s cannot be negative')
        self.token_budget = int(token_budget)
        self.refill_tokens_per_s = float(refill_tokens_per_s)
        self.clock = clock
        self.started = clock()
        self._records: deque = deque(maxlen=max_records)
        self._spent = 0.0             # tokens against the budget, after refill
        self._last = self.started
        self._totals = [0, 0, 0.0, 0]   # prompt, completion, inference_s, requests
        self._lock = threading.Lock()

    def _refill(self, now: float) -> None:
        if self.refill_tokens_per_s:
            self._spent = max(0.0, self._spent - self.refill_tokens_per_s * (now - self._last))
        self._last = now

    def record(self, prompt_tokens: int, completion_tokens: int, inference_s: float) -> None:
        if prompt_tokens < 0 or completion_tokens < 0 or inference_s < 0:
            raise ValueError('token counts and seconds cannot be negative')
        with self._lock:
            now = self.clock()
            self._refill(now)
            self._spent += prompt_tokens + completion_tokens
            self._records.append((now, int(prompt_tokens), int(completion_tokens),
                                  float(inference_s)))
            t = self._totals
            t[0] += int(prompt_tokens)
            t[1] += int(completion_tokens)
            t[2] += float(inference_s)
            t[3] += 1

    def remaining_fraction(self) -> float:
        """0..1 of the token budget left; 1.0 when the budget is unbounded (0)."""
        if not self.token_budget:
            return 1.0
        with self._lock:
            self._refill(self.clock())
            return max(0.0, 1.0 - self._spent / self.token_budget)

    def status(self, window_seconds: float = 0.0) -> EnergyReport:
        """Totals over the last `window_seconds` (0 = the whole session)."""
        if window_seconds < 0:
            raise ValueError('window_seconds cannot be negative')
        remaining = self.remaining_fraction()
        with self._lock:
            now = self.clock()
            if window_seconds == 0:
                p, c, s, n = self._totals
                span = now - self.started
            else:
                since = now - window_seconds
                rows = [r for r in self._records if r[0] >= since]
                p = sum(r[1] for r in rows)
                c = sum(r[2] for r in rows)
                s = sum(r[3] for r in rows)
                n = len(rows)
                span = window_seconds
        rate = (p + c) / span if span > 0 else 0.0
        return EnergyReport(True, p, c, s, n, rate, self.token_budget, remaining)
