"""The statistician: trends and rates over episodes -> angular-gyrus PATTERN records (seed 002).

Runs at the session end, before promotion, over every episode the hippocampus holds (gists
included: they keep the tool, the outcome and the time):

- per tool, the success rate over time: a least-squares line through the rolling success rate
  (a sliding window of outcomes) against time, with its slope and R^2, and a t-test of the raw
  outcomes' correlation with time ("navigate tool showing declining success rate (R^2=0.73,
  slope=-0.02/day)");
- per tool and context, the success rate against the same tool's rate elsewhere (a
  two-proportion z-test);
- per object or person concept, its salience over time (mean, std, slope, R^2).

Each finding is a `MathRecord` of category 'PATTERN' (upserted by name, so a rerun updates it),
linked by QUANTIFIES edges to the concepts it is about, so the cross-layer spreading of
`knowledge_context` and the concept context reach it. `confirmed` is set only when the
evidence passes the thresholds; the confirmed ones are what `StatisticianPromotionSource`
promotes into concepts with AGENT_INFERENCE provenance.

`RelationProposer` is the runtime caller of `RelationshipRegistry.propose`: a relation that
recurs between concepts in a role no built-in type expresses (a tool whose arguments name an
object: ACTS_ON; an object perceived again and again in one scene: LOCATED_AT) is proposed as
a type and the concepts are related with it.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
import math
from typing import Any, Callable, Iterable, Sequence

from maxim_memory.graph import CrossLayerGraph, RelationshipRegistry
from maxim_memory.knowledge import IPS, normalize_tokens
from maxim_memory.layers.angular_gyrus import AngularGyrus
from maxim_memory.layers.atl import ATL
from maxim_memory.layers.hippocampus import episode_time, Hippocampus
from maxim_memory.records import (CompressedMemory, Concept, EpisodicMemory, MathRecord,
                                  MAX_REFS_PER_LAYER, MemoryRecord)

DAY_S = 86_400.0
DOMAIN = 'operational'


@dataclass(frozen=True)
class Fit:
    """A least-squares line y = intercept + slope * x."""

    slope: float
    intercept: float
    r2: float
    n: int


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> Fit:
    """Ordinary least squares; R^2 is 0 when y or x does not vary."""
    n = len(xs)
    if n != len(ys):
        raise ValueError(f'{n} x values for {len(ys)} y values')
    if n == 0:
        return Fit(0.0, 0.0, 0.0, 0)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    syy = sum((y - my) ** 2 for y in ys)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    if sxx <= 0:
        return Fit(0.0, my, 0.0, n)
    slope = sxy / sxx
    r2 = (sxy * sxy) / (sxx * syy) if syy > 0 else 0.0
    return Fit(slope, my - slope * mx, min(1.0, r2), n)


def correlation_t(xs: Sequence[float], ys: Sequence[float]) -> float:
    """t statistic of Pearson's r between xs and ys (n - 2 degrees of freedom)."""
    n = len(xs)
    if n < 3:
        return 0.0
    fit = linear_fit(xs, ys)
    sign = 1.0 if fit.slope >= 0 else -1.0
    if fit.r2 >= 1.0:
        return sign * math.inf
    return sign * math.sqrt(fit.r2 * (n - 2) / (1.0 - fit.r2))


def rolling_mean(values: Sequence[float], window: int) -> list[float]:
    """Means of each run of `window` consecutive values (len(values) - window + 1 of them)."""
    if window < 1:
        raise ValueError('window must be >= 1')
    out, acc = [], 0.0
    for i, v in enumerate(values):
        acc += v
        if i >= window:
            acc -= values[i - window]
        if i >= window - 1:
            out.append(acc / window)
    return out


def significance(z: float) -> float:
    """Two-sided confidence that a normal statistic z is not noise: erf(|z| / sqrt 2)."""
    return math.erf(abs(z) / math.sqrt(2.0)) if math.isfinite(z) else 1.0


def sample_confidence(n: int) -> float:
    """The seed's confidence in n observations: min(0.99, 0.5 + 0.1 sqrt n)."""
    return min(0.99, 0.5 + 0.1 * math.sqrt(max(0, n)))


@dataclass(frozen=True)
class StatisticianConfig:
    min_samples: int = 5           # fewer outcomes: no record at all
    window: int = 60               # the most recent outcomes of a tool that are fitted
    # Confirmed patterns become permanent concepts and every session end tests every tool
    # again, so the tests sit near the 1% level, not 5%: on outcomes drawn at a constant
    # rate (0.3-0.9, 10-60 uses) 0.5-4% of the tool records are confirmed (4-7% at |t| >= 2).
    min_r2: float = 0.5            # a trend is confirmed from this R^2 ...
    min_t: float = 2.6             # ... with a significant raw correlation (|t|) ...
    min_change: float = 0.2        # ... and this much change of the rate over the span
    min_z: float = 2.576           # a context's rate differs from the tool's elsewhere
    max_contexts_per_tool: int = 5
    max_concepts: int = 50         # salience trends for the most referenced concepts


@dataclass
class StatisticianReport:
    stored: list[str] = field(default_factory=list)      # PATTERN record ids written
    confirmed: list[str] = field(default_factory=list)   # the confirmed ones among them
    links: int = 0                                        # QUANTIFIES edges made


@dataclass(frozen=True)
class _Outcome:
    t: float
    tool: str
    success: bool
    context: str


def _default_context(rec: MemoryRecord) -> str:
    """The hub's context signature without what a gist drops (explicit context, scene): the
    objects, else the goal words. (A gist keeps no `blocked` flag either: a blocked call that
    was compressed counts as a failure.)"""
    if isinstance(rec, CompressedMemory):
        objects, goal = rec.objects, rec.goal
    else:
        objects, goal = rec.perception.detected_objects, rec.context.goal
    if objects:
        return '+'.join(sorted({o.lower() for o in objects})[:3])
    return '_'.join(normalize_tokens(goal)) or 'none'


def tool_concept_name(tool: str) -> str:
    """The name the concept extractor gives a tool ('track_target' -> 'track target')."""
    return ' '.join(normalize_tokens(tool)) or tool.lower()


class Statistician:
    """Trend and rate detection over the hippocampus, written to the angular gyrus."""

    def __init__(self, hippocampus: Hippocampus, atl: ATL, ag: AngularGyrus,
                 cross: CrossLayerGraph, ips: IPS | None = None,
                 context_of: Callable[[EpisodicMemory], str] | None = None,
                 config: StatisticianConfig = StatisticianConfig()):
        self.hippocampus, self.atl, self.ag, self.cross = hippocampus, atl, ag, cross
        self.ips = ips or IPS()
        self.context_of = context_of
        self.config = config

    def _context(self, rec: MemoryRecord) -> str:
        if self.context_of is not None and isinstance(rec, EpisodicMemory):
            return self.context_of(rec)
        return _default_context(rec)

    def outcomes(self) -> dict[str, list[_Outcome]]:
        """Each tool's outcomes, oldest first (blocked calls never ran: left out)."""
        by_tool: dict[str, list[_Outcome]] = defaultdict(list)
        for rec in self.hippocampus:
            if isinstance(rec, EpisodicMemory):
                tool, ok = rec.action.tool_name, rec.outcome.success
                if rec.outcome.blocked:
                    continue
            elif isinstance(rec, CompressedMemory):
                tool, ok = rec.tool_name, rec.success
            else:
                continue
            if tool:
                by_tool[tool].append(_Outcome(episode_time(rec), tool, bool(ok),
                                              self._context(rec)))
        for outs in by_tool.values():
            outs.sort(key=lambda o: o.t)
        return by_tool

    def run(self) -> StatisticianReport:
        report = StatisticianReport()
        for tool, outs in sorted(self.outcomes().items()):
            outs = outs[-self.config.window:]
            rec = self.tool_trend(tool, outs)
            if rec is not None:
                self._keep(rec, [tool_concept_name(tool)], report)
            for rec, about in self.context_rates(tool, outs):
                self._keep(rec, about, report)
        for concept, rec in self.salience_trends():
            self._keep(rec, [concept.name], report)
        return report

    # --- detectors -----------------------------------------------------------------------------

    def tool_trend(self, tool: str, outs: Sequence[_Outcome]) -> MathRecord | None:
        """Success rate over time: rolling rate fitted against days since the first use."""
        cfg = self.config
        n = len(outs)
        if n < cfg.min_samples:
            return None
        t0 = outs[0].t
        days = [(o.t - t0) / DAY_S for o in outs]
        span = days[-1]
        ys = [1.0 if o.success else 0.0 for o in outs]
        rate = sum(ys) / n
        w = max(3, n // 5)
        rolled = rolling_mean(ys, w)
        mid = [sum(days[i:i + w]) / w for i in range(len(rolled))]
        fit = linear_fit(mid, rolled) if span > 0 else Fit(0.0, rate, 0.0, n)
        t_raw = correlation_t(days, ys) if span > 0 else 0.0
        change = fit.slope * span
        confirmed = (fit.r2 >= cfg.min_r2 and abs(t_raw) >= cfg.min_t
                     and abs(change) >= cfg.min_change)
        slope_txt = _rate_text(fit.slope, span)
        if confirmed:
            trend = 'declining' if fit.slope < 0 else 'improving'
            verbal = (f'{tool} tool showing {trend} success rate (R^2={fit.r2:.2f}, '
                      f'slope={slope_txt}; {rolled[0]:.2f} -> {rolled[-1]:.2f} over {n} uses)')
        else:
            verbal = (f'{tool} tool success rate {rate:.2f} over {n} uses, no confirmed trend '
                      f'(R^2={fit.r2:.2f}, slope={slope_txt})')
        return MathRecord(
            name=f'stat:tool:{tool}:success', category='PATTERN', domain=DOMAIN, verbal=verbal,
            code=(f'linear_fit(days, rolling_mean(success, {w})); '
                  f'correlation_t(days, success) over the last {n} outcomes'),
            confidence=round(sample_confidence(n) * fit.r2, 4), confirmed=confirmed,
            values={'slope': fit.slope, 'r2': fit.r2, 't': _finite(t_raw), 'rate': rate,
                    'mean': rate, 'std': math.sqrt(rate * (1.0 - rate)), 'n': float(n),
                    'window': float(w), 'span_days': span, 'first_rate': rolled[0],
                    'last_rate': rolled[-1]})

    def context_rates(self, tool: str, outs: Sequence[_Outcome]
                      ) -> list[tuple[MathRecord, list[str]]]:
        """A context where the tool does better or worse than elsewhere (two-proportion z)."""
        cfg = self.config
        by_ctx: dict[str, list[bool]] = defaultdict(list)
        for o in outs:
            by_ctx[o.context].append(o.success)
        if len(by_ctx) < 2:
            return []  # one context: the tool's own record says it all
        total, wins = len(outs), sum(o.success for o in outs)
        ranked = sorted(by_ctx.items(), key=lambda kv: (-len(kv[1]), kv[0]))
        out = []
        for ctx, oks in ranked[:cfg.max_contexts_per_tool]:
            n1, k1 = len(oks), sum(oks)
            n2, k2 = total - n1, wins - k1
            if n1 < cfg.min_samples or n2 < cfg.min_samples:
                continue
            p1, p2 = k1 / n1, k2 / n2
            pooled = (k1 + k2) / (n1 + n2)
            se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
            z = (p1 - p2) / se if se > 0 else 0.0
            confirmed = abs(z) >= cfg.min_z
            verbal = (f'{tool} in context {ctx}: success rate {p1:.2f} ({k1}/{n1}) vs {p2:.2f} '
                      f'elsewhere (z={z:+.2f}{"" if confirmed else ", not significant"})')
            rec = MathRecord(
                name=f'stat:tool:{tool}@{ctx}:success', category='PATTERN', domain=DOMAIN,
                verbal=verbal, code='two-proportion z-test: this context vs the rest',
                confidence=round(sample_confidence(n1) * significance(z), 4),
                confirmed=confirmed,
                values={'rate': p1, 'rate_elsewhere': p2, 'z': z, 'n': float(n1),
                        'successes': float(k1), 'mean': p1,
                        'std': math.sqrt(p1 * (1.0 - p1))})
            parts = [p for p in ctx.replace('_', '+').split('+') if p and p != 'none']
            out.append((rec, [tool_concept_name(tool), ctx, *parts]))
        return out

    def salience_trends(self) -> list[tuple[Concept, MathRecord]]:
        """Salience of objects and people over time: mean, std, slope and R^2."""
        cfg = self.config
        concepts = [c for c in self.atl if isinstance(c, Concept)
                    and c.category in ('object', 'person')
                    and len(c.memory_refs.get('hippocampus', {})) >= cfg.min_samples]
        concepts.sort(key=lambda c: (-len(c.memory_refs['hippocampus']), c.name))
        out = []
        for c in concepts[:cfg.max_concepts]:
            eps = [e for e in (self.hippocampus.find(i) for i in c.refs('hippocampus'))
                   if isinstance(e, EpisodicMemory)]
            if len(eps) < cfg.min_samples:
                continue
            eps.sort(key=episode_time)
            t0 = episode_time(eps[0])
            days = [(episode_time(e) - t0) / DAY_S for e in eps]
            ys = [float(e.perception.salience) for e in eps]
            a = self.ips.assess(ys)
            fit = linear_fit(days, ys)
            t_raw = correlation_t(days, ys)
            span = days[-1]
            confirmed = (fit.r2 >= cfg.min_r2 and abs(t_raw) >= cfg.min_t
                         and abs(fit.slope * span) >= cfg.min_change / 2)
            trend = ('rising' if fit.slope > 0 else 'falling') if confirmed else 'steady'
            verbal = (f'{c.name} salience {trend}: mean={a.mean:.2f}, std={a.std:.2f} '
                      f'(R^2={fit.r2:.2f}, slope={_rate_text(fit.slope, span)}, n={a.n})')
            out.append((c, MathRecord(
                name=f'{c.name}_salience_trend', category='PATTERN', domain=DOMAIN,
                verbal=verbal, code='linear_fit(days, perception.salience); IPS.assess',
                confidence=round(sample_confidence(a.n) * max(fit.r2, 0.5), 4),
                confirmed=confirmed,
                values={'mean': a.mean, 'std': a.std, 'slope': fit.slope, 'r2': fit.r2,
                        't': _finite(t_raw), 'n': float(a.n), 'span_days': span})))
        return out

    # --- storage -------------------------------------------------------------------------------

    def _keep(self, rec: MathRecord, about: Iterable[str], report: StatisticianReport) -> None:
        rec.created_at = rec.last_accessed = self.ag.now()  # upsert keeps a first creation
        rid = self.ag.upsert(rec)
        report.stored.append(rid)
        if rec.confirmed:
            report.confirmed.append(rid)
        self._refresh_promoted(rid, rec)
        seen = set()
        for name in about:
            cid = self.atl.find_by_name(name, fuzzy=False)
            if cid is None or cid in seen:
                continue
            seen.add(cid)
            concept = self.atl.find(cid)
            if not isinstance(concept, Concept):
                continue
            concept.add_ref('angular_gyrus', rid)
            self.atl.update(concept, durable=False)
            self.cross.link('angular_gyrus', rid, 'atl', cid, 'QUANTIFIES',
                            max(0.05, min(1.0, rec.confidence)))
            report.links += 1

    def _refresh_promoted(self, rid: str, rec: MathRecord) -> None:
        """Concepts promoted from this pattern say what it says now: the new figures, or
        that it is no longer confirmed (promotion only ever adds; this keeps them honest)."""
        for edge in self.cross.links('angular_gyrus', rid, 'STATISTICALLY_CONFIRMS', 'out'):
            concept = self.atl.find(edge.dst.partition('/')[2])
            if not isinstance(concept, Concept):
                continue
            head = 'Confirmed operational pattern' if rec.confirmed else \
                'No longer a confirmed pattern'
            concept.definition = f'{head}: {rec.verbal}.'
            concept.embedding_text = f'{concept.name} {concept.definition}'
            concept.properties.update(verbal=rec.verbal, confirmed=rec.confirmed)
            self.atl.update(concept, durable=False)


def _finite(x: float) -> float:
    return x if math.isfinite(x) else math.copysign(1e9, x)


def _rate_text(slope_per_day: float, span_days: float) -> str:
    """A slope in the unit the data spans: per day, or per hour within a day."""
    if span_days >= 1.0:
        return f'{slope_per_day:+.3f}/day'
    return f'{slope_per_day / 24.0:+.3f}/hour'


# --- runtime relationship proposals -------------------------------------------------------------

@dataclass(frozen=True)
class RoleRelation:
    """A relation read off the roles concepts play in an episode."""

    name: str
    symmetric: bool
    description: str


ACTS_ON = RoleRelation('ACTS_ON', False, 'a tool whose calls name this object as their target')
LOCATED_AT = RoleRelation('LOCATED_AT', False, 'an object perceived repeatedly in this place')


@dataclass
class ProposalReport:
    proposed: list[str] = field(default_factory=list)   # types newly added to the registry
    related: list[tuple[str, str, str]] = field(default_factory=list)  # (src, type, dst)


class RelationProposer:
    """Recurring role pairs in episodes -> proposed relationship types and typed ATL edges.

    ACTS_ON: a string argument of a tool call names an object or person concept (track_target
    with target_label 'ball'). LOCATED_AT: an object is perceived in the same scene in at
    least `min_place_share` of its sightings (one seen everywhere is located nowhere); the
    scene becomes a 'place' concept grounded by its episodes. A pair needs `min_support`
    episodes; its weight is the share of the source's episodes that show it. A type a
    built-in already expresses is used as is, never proposed.
    """

    def __init__(self, hippocampus: Hippocampus, atl: ATL, cross: CrossLayerGraph,
                 registry: RelationshipRegistry, min_support: int = 3,
                 min_place_share: float = 0.5, proposed_by: str = 'extractor'):
        self.hippocampus, self.atl, self.cross = hippocampus, atl, cross
        self.registry = registry
        self.min_support = min_support
        self.min_place_share = min_place_share
        self.proposed_by = proposed_by

    def run(self) -> ProposalReport:
        report = ProposalReport()
        acts: dict[tuple[str, str], list[str]] = defaultdict(list)
        located: dict[tuple[str, str], list[str]] = defaultdict(list)
        uses: dict[str, int] = defaultdict(int)
        seen_obj: dict[str, int] = defaultdict(int)
        at_scene: dict[str, list[EpisodicMemory]] = defaultdict(list)
        for ep in self.hippocampus:
            if not isinstance(ep, EpisodicMemory):
                continue  # gists keep neither arguments nor scene
            tool = ep.action.tool_name
            if tool:
                uses[tool] += 1
                for target in self._targets(ep.action.arguments):
                    acts[(tool, target)].append(ep.id)
            objects = {o.strip().lower() for o in ep.perception.detected_objects if o.strip()}
            for o in objects:
                seen_obj[o] += 1
            scene = ep.context.scene.strip().lower()
            if scene:
                at_scene[scene].append(ep)
                for o in objects:
                    located[(o, scene)].append(ep.id)
        for (tool, target), ids in sorted(acts.items()):
            if len(ids) >= self.min_support:
                src = self.atl.find_by_name(tool_concept_name(tool), fuzzy=False)
                if src is not None:
                    self._relate(src, target, ACTS_ON, len(ids) / uses[tool], ids, report)
        places: dict[str, str] = {}
        for (obj, scene), ids in sorted(located.items()):
            share = len(ids) / seen_obj[obj]
            if len(ids) < self.min_support or share < self.min_place_share:
                continue
            src = self.atl.find_by_name(obj, fuzzy=False)
            if src is None:
                continue
            if scene not in places:
                places[scene] = self._place(scene, at_scene[scene])
            self._relate(src, places[scene], LOCATED_AT, share, ids, report)
        return report

    def _place(self, scene: str, episodes: list[EpisodicMemory]) -> str:
        """The scene's 'place' concept, grounded by its most recent episodes."""
        pid, _ = self.atl.find_or_create(scene, 'place', definition=f'the place "{scene}"')
        place = self.atl.find(pid)
        if not isinstance(place, Concept):
            return pid
        have = place.memory_refs.get('hippocampus', {})
        recent = sorted(episodes, key=episode_time)[-MAX_REFS_PER_LAYER:]
        for ep in recent:
            if ep.id not in have:
                place.add_ref('hippocampus', ep.id)
                place.reinforce(ep.id, now=self.atl.now())
                self.cross.link('hippocampus', ep.id, 'atl', pid, 'INSTANCE_OF')
        self.atl.update(place, durable=False)
        return pid

    def _targets(self, arguments: Any) -> set[str]:
        """Argument values that name a known object or person concept."""
        out = set()
        if not isinstance(arguments, dict):
            return out
        for value in arguments.values():
            if not isinstance(value, str) or not value.strip() or len(value) > 64:
                continue
            cid = self.atl.find_by_name(value, fuzzy=False)
            if cid is None:
                continue
            rec = self.atl.find(cid)
            if getattr(rec, 'category', '') in ('object', 'person'):
                out.add(cid)
        return out

    def _relate(self, src: str, dst: str, rel: RoleRelation, weight: float,
                ids: list[str], report: ProposalReport) -> None:
        if src == dst:
            return
        if rel.name not in self.registry:
            self.registry.propose(rel.name, rel.symmetric, rel.description, self.proposed_by)
            report.proposed.append(rel.name)
        elif self.registry.get(rel.name).symmetric != rel.symmetric:
            return  # someone proposed the name with another meaning: leave it be
        self.atl.relate(src, dst, rel.name, round(min(1.0, weight), 4), support=len(ids))
        report.related.append((src, rel.name, dst))
