"""Enrichment precision: does the memory the robot is offered relate to what it perceives?

On the labelled (percept, memory) pairs of pairs.jsonl (related pairs that share content words,
related paraphrases that share none, unrelated pairs), every memory is captured into one real
MemoryHub on a temporary SQLite database, then each percept asks
`MemoryHub.relevant_memories(percept, limit=3)`, the call enrichment makes. Reported, for the
word-hashing embedder and the sentence model side by side:

- related pairs with a relevant section: the pair's memory is among the answers (goal >= 90%);
- unrelated pairs with a relevant section: the answer is not empty (goal <= 10%; the
  unrelated percepts are about things no stored memory is about, so any answer is a false
  alarm);
- recall@5 on paraphrases: the pair's memory is in the EC's top 5 for the percept (the
  ranking alone, before any threshold);
- the same rates for the keyword channel (hippocampus) and the semantic channel (EC) alone.

`--sweep` prints the semantic thresholds' trade-off per embedder and the keyword threshold's,
the figures the thresholds in relevance.py / embedding.py were chosen from, and a two-fold
held-out check (a threshold chosen on half the pairs, measured on the other half), since
rates measured on the pairs a threshold was chosen from flatter it.

Run: ./maxim bench cognition --parts precision, or python -P bench/cognition/precision.py.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
import json
import logging
from pathlib import Path
import re
import sys
import tempfile
import time
from typing import Any

from maxim_memory import relevance
from maxim_memory.embedding import (EmbedderError, HashingEmbedder, LlamaEmbedder,
                                    SentenceEmbedder)
from maxim_memory.hub import HubConfig, MemoryHub
from maxim_memory.records import (Action, EpisodeContext, EpisodicMemory, Outcome,
                                  Perception)

PAIRS = Path(__file__).with_name('pairs.jsonl')
KINDS = ('lexical', 'paraphrase', 'unrelated')
T0 = 1_780_000_000.0
GOAL_RELATED, GOAL_UNRELATED = 0.90, 0.10


class PairsError(ValueError):
    """A malformed line in the pairs file."""


def load_pairs(path: Path = PAIRS) -> list[dict[str, Any]]:
    """The labelled pairs, checked: id, kind, related (agreeing with the kind), percept and a
    memory with a narrative."""
    out, seen = [], set()
    for n, line in enumerate(Path(path).read_text(encoding='utf-8').splitlines(), 1):
        if not line.strip():
            continue
        try:
            p = json.loads(line)
            if p['kind'] not in KINDS or p['related'] != (p['kind'] != 'unrelated'):
                raise ValueError(f'kind {p["kind"]!r} and related {p["related"]!r} disagree')
            if not p['percept'].strip() or not p['memory']['narrative'].strip():
                raise ValueError('empty percept or memory narrative')
            if p['id'] in seen:
                raise ValueError(f'duplicate id {p["id"]!r}')
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise PairsError(f'{path}:{n}: {type(exc).__name__}: {exc}') from exc
        seen.add(p['id'])
        out.append(p)
    return out


def to_episode(pair: dict[str, Any], t: float) -> EpisodicMemory:
    m = pair['memory']
    return EpisodicMemory(
        id=f'ep-{pair["id"]}', created_at=t, run_id='precision',
        perception=Perception(m['narrative'], list(m.get('objects', ())),
                              list(m.get('people', ()))),
        context=EpisodeContext(goal=m.get('goal', ''), mode='active'),
        action=Action(m.get('tool', '')),
        outcome=Outcome(bool(m.get('success', True)), 0.5 if m.get('success', True) else -0.5,
                        m.get('outcome', ''), error=m.get('error', '')))


def build_hub(embedder: Any, db_dir: str, pairs: list[dict[str, Any]]) -> MemoryHub:
    """A real hub (SQLite write-through, NAc, SCN, EC) holding every pair's memory."""
    cfg = HubConfig(db_path=str(Path(db_dir) / f'precision-{embedder.name}.db'),
                    background_extraction=False, persist_ec_index=False, state_flush_every=0)
    hub = MemoryHub(cfg, embedder=embedder, clock=lambda: T0 + 3600.0 * len(pairs))
    for i, p in enumerate(pairs):
        hub.capture_episode(to_episode(p, T0 + 3600.0 * i))
    return hub


@dataclass
class Result:
    embedder: str
    keyword_threshold: float
    semantic_threshold: float
    counts: dict[str, int] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)
    misses: list[str] = field(default_factory=list)        # related pairs not found
    false_alarms: list[str] = field(default_factory=list)  # unrelated pairs answered
    query_ms: float = 0.0

    def meets_goals(self) -> bool:
        return (self.rates['related'] >= GOAL_RELATED
                and self.rates['unrelated'] <= GOAL_UNRELATED)


def evaluate(hub: MemoryHub, pairs: list[dict[str, Any]], limit: int = 3,
             keyword_threshold: float | None = None,
             semantic_threshold: float | None = None) -> Result:
    """The rates of the module doc, through `relevant_memories` (thresholds: the defaults
    unless given)."""
    index = hub.similarity.obj
    kw = relevance.KEYWORD_THRESHOLD if keyword_threshold is None else keyword_threshold
    sem = relevance.semantic_threshold(index.embedder) if semantic_threshold is None \
        else semantic_threshold
    res = Result(index.embedder.name, kw, sem)
    tally = {k: 0 for k in ('related', 'related_kw', 'related_sem', 'unrelated',
                            'unrelated_kw', 'unrelated_sem', 'unrelated_own', 'para_recall5')}
    n = {k: sum(1 for p in pairs if p['kind'] == k) for k in KINDS}
    t_query = 0.0
    for p in pairs:
        own = f'ep-{p["id"]}'
        t = time.perf_counter()
        answer = hub.relevant_memories(p['percept'], limit, kw, sem)
        t_query += time.perf_counter() - t
        ids = {r.record.id: r.why for r in answer}
        by_kw = {i for i, why in ids.items() if why.startswith('shared words')}
        by_sem = {i for i, why in ids.items() if 'semantic similarity' in why}
        if p['related']:
            tally['related'] += own in ids
            tally['related_kw'] += own in by_kw
            tally['related_sem'] += own in by_sem
            if own not in ids:
                res.misses.append(p['id'])
        else:
            tally['unrelated'] += bool(ids)
            tally['unrelated_kw'] += bool(by_kw)
            tally['unrelated_sem'] += bool(by_sem)
            tally['unrelated_own'] += own in ids
            if ids:
                res.false_alarms.append(f'{p["id"]} -> {", ".join(sorted(ids))}')
        if p['kind'] == 'paraphrase':
            top5 = [h.episode_id for h in index.search(p['percept'], None, k=5)]
            tally['para_recall5'] += own in top5
    n_rel, n_unr = n['lexical'] + n['paraphrase'], n['unrelated']
    res.counts = dict(n) | {'related': n_rel}
    res.rates = {k: v / (n['paraphrase'] if k == 'para_recall5'
                         else n_rel if k.startswith('related') else n_unr)
                 for k, v in tally.items()}
    paraphrase_found = sum(1 for p in pairs if p['kind'] == 'paraphrase'
                           and p['id'] not in res.misses)
    res.rates['paraphrase'] = paraphrase_found / max(1, n['paraphrase'])
    res.query_ms = t_query / max(1, len(pairs)) * 1e3
    return res


def raw_scores(hub: MemoryHub, pairs: list[dict[str, Any]]
               ) -> tuple[list[dict[str, float]], list[dict[str, float]]]:
    """Per pair: every memory's keyword score and semantic similarity (no threshold)."""
    n = len(hub.hippocampus)
    kw_all, sem_all = [], []
    for p in pairs:
        kw_all.append({r.id: m.score for r, m in
                       hub.hippocampus.keyword_matches(p['percept'], n, 0.0)})
        sem_all.append({h.episode_id: h.breakdown.get('semantic', 0.0) for h in
                        hub.similarity.obj.search(p['percept'], None, k=n)})
    return kw_all, sem_all


def sweep(pairs: list[dict[str, Any]], scores: dict[str, float] | list,
          thresholds: list[float]) -> list[tuple[float, float, float]]:
    """(threshold, related found, unrelated answered) of one channel's scores at each
    threshold (the channel alone, its top 3)."""
    out = []
    for th in thresholds:
        rel = unr = 0
        for p, s in zip(pairs, scores):
            kept = sorted((v, i) for i, v in s.items() if v >= th)[-3:]
            ids = {i for _, i in kept}
            if p['related']:
                rel += f'ep-{p["id"]}' in ids
            else:
                unr += bool(ids)
        n_rel = sum(1 for p in pairs if p['related'])
        out.append((th, rel / n_rel, unr / (len(pairs) - n_rel)))
    return out


def calibrate(hub: MemoryHub, pairs: list[dict[str, Any]],
              grid: tuple[float, ...] = tuple(x / 100 for x in range(20, 81, 5))
              ) -> float:
    """The semantic threshold (keyword threshold at its default) that finds the most related
    pairs while answering at most 10% of the unrelated ones; the highest such on ties."""
    best = (-1.0, 0.0)
    for th in grid:
        r = evaluate(hub, pairs, semantic_threshold=th).rates
        if r['unrelated'] <= GOAL_UNRELATED and r['related'] >= best[0]:
            best = (r['related'], th)
    return best[1] if best[0] >= 0 else max(grid)


def held_out(hub: MemoryHub, pairs: list[dict[str, Any]]) -> tuple[float, float, list[float]]:
    """Two-fold check of the calibration: the threshold chosen on the odd pairs is measured
    on the even ones and the other way round; returns the pooled rates (related found,
    unrelated answered) and the two thresholds chosen."""
    halves = (pairs[0::2], pairs[1::2])
    found = answered = n_rel = n_unr = 0
    chosen = []
    for cal, test in (halves, halves[::-1]):
        th = calibrate(hub, cal)
        chosen.append(th)
        r = evaluate(hub, test, semantic_threshold=th)
        found += round(r.rates['related'] * r.counts['related'])
        answered += round(r.rates['unrelated'] * r.counts['unrelated'])
        n_rel, n_unr = n_rel + r.counts['related'], n_unr + r.counts['unrelated']
    return found / n_rel, answered / n_unr, chosen


def embedders(names: list[str]) -> list[Any]:
    out = []
    for name in names:
        if name == 'hashing':
            out.append(HashingEmbedder())
        elif name == 'sentence':
            try:
                out.append(SentenceEmbedder())
            except EmbedderError as exc:
                print(f'  sentence model unavailable, skipped: {exc}', flush=True)
        elif name == 'llama':  # the embedded GGUF's mean-pooled states (slow: ~90 ms/text)
            try:
                out.append(LlamaEmbedder.embedded(n_threads=1))
            except EmbedderError as exc:
                print(f'  llama embedder unavailable, skipped: {exc}', flush=True)
        else:
            raise SystemExit(f'unknown embedder {name!r} (hashing, sentence, llama)')
    return out


def pct(x: float) -> str:
    return f'{100 * x:.0f}%'


def run(args: argparse.Namespace) -> list[Result]:
    pairs = load_pairs(Path(args.pairs))
    counts = {k: sum(1 for p in pairs if p['kind'] == k) for k in KINDS}
    print(f'enrichment precision on {len(pairs)} labelled pairs ({counts["lexical"]} related '
          f'sharing words, {counts["paraphrase"]} paraphrases sharing none, '
          f'{counts["unrelated"]} unrelated); relevant_memories(percept, limit=3)', flush=True)
    logging.getLogger('maxim_memory.knowledge').setLevel(logging.ERROR)
    results = []
    with tempfile.TemporaryDirectory(prefix='maxim-precision-') as tmp:
        for emb in embedders(args.embedders):
            hub = build_hub(emb, tmp, pairs)
            try:
                results.append(evaluate(hub, pairs))
                if args.sweep:
                    kw, sem = raw_scores(hub, pairs)
                    print(f'\n  {emb.name}: semantic channel alone (threshold, related found, '
                          f'unrelated answered)')
                    for th, r, u in sweep(pairs, sem, [x / 20 for x in range(4, 17)]):
                        print(f'    {th:.2f}  {pct(r):>5}  {pct(u):>5}')
                    if emb is not None and emb.name == args.embedders[0]:
                        print('\n  keyword channel alone (threshold, related found, '
                              'unrelated answered)')
                        for th, r, u in sweep(pairs, kw, [x / 20 for x in range(1, 11)]):
                            print(f'    {th:.2f}  {pct(r):>5}  {pct(u):>5}')
                    if emb.name == 'llama':
                        continue  # no cache: the held-out check would re-embed ~1000 times
                    rel, unr, chosen = held_out(hub, pairs)
                    print(f'\n  {emb.name}: two-fold held-out check: semantic thresholds '
                          f'chosen {chosen[0]:.2f} (odd pairs) and {chosen[1]:.2f} (even); '
                          f'on the other half: related found {pct(rel)}, unrelated answered '
                          f'{pct(unr)}')
            finally:
                hub.close(end_session=False)
    rows = [('related pairs with a relevant section (goal >= 90%)', 'related'),
            ('  of which paraphrases (no shared content word)', 'paraphrase'),
            ('  found by keywords (hippocampus)', 'related_kw'),
            ('  found by similarity (EC)', 'related_sem'),
            ('unrelated pairs with a relevant section (goal <= 10%)', 'unrelated'),
            ('  answered by keywords', 'unrelated_kw'),
            ('  answered by similarity', 'unrelated_sem'),
            ("  the pair's own memory offered", 'unrelated_own'),
            ('recall@5 on paraphrases (EC ranking)', 'para_recall5')]
    print()
    head = f'{"":56}' + ''.join(f'{r.embedder:>12}' for r in results)
    print(head)
    print(f'{"  thresholds: keyword / semantic":56}'
          + ''.join(f'{f"{r.keyword_threshold:.2f}/{r.semantic_threshold:.2f}":>12}'
                    for r in results))
    for label, key in rows:
        print(f'{label:56}' + ''.join(f'{pct(r.rates[key]):>12}' for r in results))
    print(f'{"  relevant_memories per percept, ms":56}'
          + ''.join(f'{r.query_ms:>12.2f}' for r in results))
    print(f'{"meets both goals":56}'
          + ''.join(f'{"yes" if r.meets_goals() else "no":>12}' for r in results))
    if len(results) == 2 and results[0].rates['related'] > 0:
        a, b = results
        print(f'\nratio {b.embedder}/{a.embedder}: related found '
              f'{b.rates["related"] / a.rates["related"]:.2f}x, paraphrases found '
              f'{b.rates["paraphrase"]:.0%} vs {a.rates["paraphrase"]:.0%}, recall@5 '
              f'{b.rates["para_recall5"]:.0%} vs {a.rates["para_recall5"]:.0%}')
    word = re.compile(r'[a-z0-9]+')
    texts = [set(word.findall(to_episode(p, 0.0).text().lower())) for p in pairs]
    unrelated = [p for p in pairs if not p['related']]
    any_word = sum(1 for p in unrelated
                   if any(set(word.findall(p['percept'].lower())) & t for t in texts))
    print(f'\nbaseline without relevance (any shared word, stop words included; the top 3 of '
          f'the EC unthresholded): unrelated pairs answered 100% '
          f'({pct(any_word / len(unrelated))} by a shared word)')
    for r in results:
        if r.misses or r.false_alarms:
            print(f'\n{r.embedder}: missed {", ".join(r.misses) or "none"}; false alarms: '
                  f'{"; ".join(r.false_alarms) or "none"}')
    return results


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--pairs', default=str(PAIRS), help='the labelled pairs (JSON lines)')
    ap.add_argument('--embedders', default='hashing,sentence',
                    type=lambda s: [x for x in s.split(',') if x],
                    help='comma-separated: hashing, sentence, llama (side by side, in this '
                    'order)')
    ap.add_argument('--sweep', action='store_true',
                    help="print each channel's threshold trade-off (the calibration)")
    return ap


def main(argv: list[str] | None = None) -> int:
    run(parser().parse_args(argv))
    return 0


if __name__ == '__main__':
    sys.exit(main())
