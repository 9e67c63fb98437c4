"""Nucleus accumbens: cause -> effect links learned by Rescorla-Wagner, and outcome prediction.

Every (event signature, context) pair holds one associative strength V per outcome it has been
followed by. Each observation moves every V of the pair toward 1 (the outcome that happened) or
0 (the others): V += alpha * (lambda - V). The strengths of a pair then sum to
1 - (1 - alpha)^n after n observations, so the part of a prediction still owed to the neutral
prior shrinks geometrically with experience; that learned share is the prediction's confidence.

The reward prediction error (RPE) is the observed valence minus the valence the pair predicted
before the update (the unlearned share counts as neutral). The hub adds a CAUSES edge when it
is large: surprising outcomes are the ones worth linking.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
import math
import time
from typing import Any, Callable

MEMORY_IDS_PER_LINK = 50       # contributing episodes kept per link (most recent last)
GENERALIZATION_DISCOUNT = 0.5  # confidence kept when predicting for an unseen context
Z_90 = 1.645                   # the delay interval is a 90 % normal interval


def goodness(valence: float) -> float:
    """How good an outcome is, 0..1. Valences beyond +-0.5 count as fully good or bad, so a
    reliably failing action predicts a value near 0 whatever exact valence its caller chose;
    the magnitude stays available as the expected valence."""
    return min(1.0, max(0.0, 0.5 + valence))


@dataclass
class _Outcome:
    """One outcome of one (event, context) pair: RW strength, valence, delay statistics."""

    strength: float = 0.0
    valence: float = 0.0
    count: int = 0
    delay_mean: float = 0.0
    delay_m2: float = 0.0      # Welford's running sum of squared deviations
    last_seen: float = 0.0
    memory_ids: deque = field(default_factory=lambda: deque(maxlen=MEMORY_IDS_PER_LINK))

    @property
    def delay_std(self) -> float:
        return math.sqrt(self.delay_m2 / (self.count - 1)) if self.count > 1 else 0.0


@dataclass
class _Pair:
    outcomes: dict[str, _Outcome] = field(default_factory=dict)
    count: int = 0
    last_seen: float = 0.0


@dataclass
class CausalLink:
    """A learned link: `event` in `context` is followed by `outcome`."""

    event: str
    context: str
    outcome: str
    valence: float             # -1..+1, running estimate for this outcome
    strength: float            # associative strength V, 0..1
    confidence: float          # evidence of the pair x the outcome's share of it, 0..1
    observation_count: int     # times this outcome followed the event in the context
    mean_delay_s: float
    delay_std_s: float
    memory_ids: list[str]      # contributing episodes, most recent last (bounded)
    last_seen: float = 0.0


@dataclass
class OutcomePrediction:
    """What the NAc expects if `event` happens in `context`."""

    event: str
    context: str
    value: float = 0.5                 # 0 = bad .. 1 = good
    expected_valence: float = 0.0      # -1..+1
    confidence: float = 0.0            # share of the prediction learned from experience
    delay_s: float = 0.0
    delay_low_s: float = 0.0           # 90 % interval of the delay
    delay_high_s: float = 0.0
    observation_count: int = 0         # observations of this event in this context
    outcomes: list[tuple[str, float]] = field(default_factory=list)  # (outcome, share)
    outcome_details: list[dict[str, Any]] = field(default_factory=list)
    basis: str = 'none'        # 'context', 'all_contexts', 'generalized' or 'none'


class NucleusAccumbens:
    """Rescorla-Wagner cause -> effect learner keyed by (event, context) -> outcome."""

    def __init__(self, learning_rate: float = 0.2, clock: Callable[[], float] = time.time,
                 max_pairs: int = 20_000):
        if not 0.0 < learning_rate <= 1.0:
            raise ValueError(f'learning_rate must be in (0, 1], got {learning_rate}')
        if max_pairs < 1:
            raise ValueError(f'max_pairs must be >= 1, got {max_pairs}')
        self.learning_rate = float(learning_rate)
        self.max_pairs = int(max_pairs)
        self._clock = clock
        self._pairs: dict[tuple[str, str], _Pair] = {}

    def __len__(self) -> int:
        """Number of causal links (pair x outcome)."""
        return sum(len(p.outcomes) for p in self._pairs.values())

    # --- learning ------------------------------------------------------------------------------

    def observe(self, event: str, context: str, outcome: str, valence: float,
                delay_s: float = 0.0, memory_id: str | None = None) -> float:
        """Learn that `event` in `context` was followed by `outcome`; returns the RPE
        (observed valence minus the valence predicted before this observation)."""
        if not isinstance(event, str) or not event:
            raise ValueError('event must be a non-empty string')
        if not isinstance(context, str) or not isinstance(outcome, str) or not outcome:
            raise ValueError('context must be a string and outcome a non-empty string')
        valence = float(valence)
        if not -1.0 <= valence <= 1.0 or math.isnan(valence):
            raise ValueError(f'valence must be in -1..1, got {valence}')
        delay_s = float(delay_s)
        if delay_s < 0.0 or math.isnan(delay_s):
            raise ValueError(f'delay_s must be >= 0, got {delay_s}')
        now = float(self._clock())
        key = (event, context)
        pair = self._pairs.get(key)
        if pair is None:
            if len(self._pairs) >= self.max_pairs:
                self._evict()
            pair = self._pairs[key] = _Pair()
        rpe = valence - self._expected_valence(pair)
        a = self.learning_rate
        hit = pair.outcomes.get(outcome)
        if hit is None:
            hit = pair.outcomes[outcome] = _Outcome(valence=valence)
        for name, o in pair.outcomes.items():
            o.strength += a * ((1.0 if name == outcome else 0.0) - o.strength)
        hit.count += 1
        if hit.count > 1:
            hit.valence += a * (valence - hit.valence)
        d = delay_s - hit.delay_mean
        hit.delay_mean += d / hit.count
        hit.delay_m2 += d * (delay_s - hit.delay_mean)
        hit.last_seen = now
        if memory_id:
            hit.memory_ids.append(str(memory_id))
        pair.count += 1
        pair.last_seen = now
        return rpe

    def _evict(self) -> None:
        """Forget the pair unused longest (bounded memory on a long-running robot)."""
        oldest = min(self._pairs, key=lambda k: self._pairs[k].last_seen)
        del self._pairs[oldest]

    @staticmethod
    def _expected_valence(pair: _Pair) -> float:
        return sum(o.strength * o.valence for o in pair.outcomes.values())

    def _evidence(self, n: int) -> float:
        return 1.0 - (1.0 - self.learning_rate) ** n

    # --- prediction ----------------------------------------------------------------------------

    def predict_outcome(self, event: str, context: str = '') -> OutcomePrediction:
        """The expected outcome of `event` in `context`. An empty context pools every context
        the event was seen in; an unseen context borrows the pooled prediction at half the
        confidence (observation_count stays 0: this context is new); an unseen event is
        neutral (value 0.5, confidence 0)."""
        if not isinstance(event, str) or not event:
            raise ValueError('event must be a non-empty string')
        if not isinstance(context, str):
            raise ValueError('context must be a string')
        pair = self._pairs.get((event, context))
        if pair is not None:
            pred = self._predict_pair(event, context, pair)
            pred.basis = 'context'
            return pred
        pairs = [(ctx, p) for (ev, ctx), p in self._pairs.items() if ev == event]
        if not pairs:
            return OutcomePrediction(event=event, context=context)
        pred = self._pool(event, context, [self._predict_pair(event, c, p) for c, p in pairs])
        if context:
            pred.confidence *= GENERALIZATION_DISCOUNT
            pred.value = 0.5 + (pred.value - 0.5) * GENERALIZATION_DISCOUNT
            pred.expected_valence *= GENERALIZATION_DISCOUNT
            pred.observation_count = 0
            pred.basis = 'generalized'
        else:
            pred.basis = 'all_contexts'
        return pred

    def _predict_pair(self, event: str, context: str, pair: _Pair) -> OutcomePrediction:
        total = sum(o.strength for o in pair.outcomes.values())
        learned = min(1.0, total)
        value = sum(o.strength * goodness(o.valence) for o in pair.outcomes.values())
        value += (1.0 - learned) * 0.5
        shares = {name: (o.strength / total if total > 0 else 0.0)
                  for name, o in pair.outcomes.items()}
        mean = sum(shares[n] * o.delay_mean for n, o in pair.outcomes.items())
        var = sum(shares[n] * (o.delay_std ** 2 + o.delay_mean ** 2)
                  for n, o in pair.outcomes.items()) - mean ** 2
        std = math.sqrt(max(0.0, var))
        ranked = sorted(pair.outcomes.items(), key=lambda kv: -kv[1].strength)
        return OutcomePrediction(
            event=event, context=context, value=min(1.0, max(0.0, value)),
            expected_valence=self._expected_valence(pair), confidence=learned,
            delay_s=mean, delay_low_s=max(0.0, mean - Z_90 * std), delay_high_s=mean + Z_90 * std,
            observation_count=pair.count,
            outcomes=[(name, shares[name]) for name, _ in ranked],
            outcome_details=[{'outcome': name, 'probability': shares[name],
                              'valence': o.valence, 'strength': o.strength,
                              'observations': o.count, 'delay_mean_s': o.delay_mean,
                              'delay_std_s': o.delay_std} for name, o in ranked])

    @staticmethod
    def _pool(event: str, context: str, preds: list[OutcomePrediction]) -> OutcomePrediction:
        """Observation-weighted mixture of per-context predictions."""
        n = sum(p.observation_count for p in preds)
        w = [p.observation_count / n for p in preds]
        mean = sum(wi * p.delay_s for wi, p in zip(w, preds))
        shares: dict[str, float] = {}
        for wi, p in zip(w, preds):
            for name, share in p.outcomes:
                shares[name] = shares.get(name, 0.0) + wi * share
        var = sum(wi * (((p.delay_high_s - p.delay_s) / Z_90) ** 2 + p.delay_s ** 2)
                  for wi, p in zip(w, preds)) - mean ** 2
        std = math.sqrt(max(0.0, var))
        return OutcomePrediction(
            event=event, context=context,
            value=sum(wi * p.value for wi, p in zip(w, preds)),
            expected_valence=sum(wi * p.expected_valence for wi, p in zip(w, preds)),
            confidence=sum(wi * p.confidence for wi, p in zip(w, preds)),
            delay_s=mean, delay_low_s=max(0.0, mean - Z_90 * std), delay_high_s=mean + Z_90 * std,
            observation_count=n,
            outcomes=sorted(shares.items(), key=lambda kv: -kv[1]))

    # --- inspection ----------------------------------------------------------------------------

    def causal_links(self, event: str | None = None, context: str | None = None,
                     limit: int = 10) -> list[CausalLink]:
        """Links matching `event`/`context` exactly (None = any), strongest first
        (confidence x strength, then observations)."""
        if limit < 0:
            raise ValueError('limit must be >= 0')
        out = []
        for (ev, ctx), pair in self._pairs.items():
            if (event is not None and ev != event) or (context is not None and ctx != context):
                continue
            total = sum(o.strength for o in pair.outcomes.values())
            evidence = self._evidence(pair.count)
            for name, o in pair.outcomes.items():
                share = o.strength / total if total > 0 else 0.0
                out.append(CausalLink(
                    event=ev, context=ctx, outcome=name, valence=o.valence, strength=o.strength,
                    confidence=evidence * share, observation_count=o.count,
                    mean_delay_s=o.delay_mean, delay_std_s=o.delay_std,
                    memory_ids=list(o.memory_ids), last_seen=o.last_seen))
        out.sort(key=lambda ln: (-ln.confidence * ln.strength, -ln.observation_count,
                                 ln.event, ln.context, ln.outcome))
        return out[:limit]

    def stats(self) -> dict[str, int]:
        return {'pairs': len(self._pairs), 'links': len(self),
                'observations': sum(p.count for p in self._pairs.values())}

    # --- persistence ---------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {'version': 1, 'learning_rate': self.learning_rate, 'max_pairs': self.max_pairs,
                'pairs': [{'event': ev, 'context': ctx, 'count': p.count,
                           'last_seen': p.last_seen,
                           'outcomes': {name: {'strength': o.strength, 'valence': o.valence,
                                               'count': o.count, 'delay_mean': o.delay_mean,
                                               'delay_m2': o.delay_m2,
                                               'last_seen': o.last_seen,
                                               'memory_ids': list(o.memory_ids)}
                                        for name, o in p.outcomes.items()}}
                          for (ev, ctx), p in self._pairs.items()]}

    @classmethod
    def from_dict(cls, d: dict[str, Any],
                  clock: Callable[[], float] = time.time) -> NucleusAccumbens:
        """Rebuild from `to_dict()`; malformed state raises KeyError, TypeError or ValueError."""
        if not isinstance(d, dict):
            raise TypeError(f'NAc state must be a dict, not {type(d).__name__}')
        if d.get('version') != 1:
            raise ValueError(f'unknown NAc state version {d.get("version")!r}')
        nac = cls(learning_rate=float(d['learning_rate']), clock=clock,
                  max_pairs=int(d['max_pairs']))
        for row in d['pairs']:
            pair = _Pair(count=int(row['count']), last_seen=float(row['last_seen']))
            for name, o in row['outcomes'].items():
                ids = deque((str(i) for i in o['memory_ids']), maxlen=MEMORY_IDS_PER_LINK)
                pair.outcomes[str(name)] = _Outcome(
                    strength=float(o['strength']), valence=float(o['valence']),
                    count=int(o['count']), delay_mean=float(o['delay_mean']),
                    delay_m2=float(o['delay_m2']), last_seen=float(o['last_seen']),
                    memory_ids=ids)
            nac._pairs[(str(row['event']), str(row['context']))] = pair
        return nac
