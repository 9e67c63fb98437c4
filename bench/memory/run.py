#!/usr/bin/env python3
"""Memory benchmark: capture, similarity search, recall, spreading activation, session end.

    python bench/memory/run.py [--quick] [--parts capture,similarity,recall,spread,session]
                               [--scales 10000,100000,1000000] [--recall-scales ...]
                               [--queries N] [--graph-nodes N] [--session-episodes N]

Measures, with baselines taken in the same run (printed as ratios):
- capture: throughput into the NAc, SCN, pain, EC structures and the SQLite store, one by one
  vs batched where both exist;
- similarity: EC search at each scale, faiss HNSW (`search`) vs brute force over the same
  vectors (numpy matmul + argpartition, and faiss IndexFlatIP), recall@10 against the exact
  top 10; the full multi-modal search vs `exact_search` (every episode on every modality);
  memory per episode (RSS growth while indexing, and the index's own estimate);
- recall: the memory_recall path (`MemoryHub.recall`: the hippocampus' context index, keyword
  score, time window) at each scale vs a brute-force scan of every episode with the same
  filters and scoring; the answers are checked to be the same;
- spread: cross-layer spreading activation (`CrossLayerGraph.spread_activation`, the hub's
  decay / threshold / depth) from single seeds on a 100k-node three-layer graph vs a plain
  breadth-first search of the same networkx graph to the same depth;
- session: `MemoryHub.on_session_end` (SCN save -> detect -> promote -> consolidate -> persist)
  on a hub of 100k episodes filled through the real capture path vs `persist()` alone on the
  same data;
  also the hub's start-up with the saved EC index vs re-embedding every episode;
- bytes per episode on disk (SQLite, EC index file) and in memory.

Vectors come from the HashingEmbedder (the offline fallback: microseconds per text) so that
100k-1M episodes can be indexed in minutes; the real llama.cpp embedder costs ~90 ms per text,
which is a capture cost, not a search cost (search time depends only on dim and N).
--quick: small sizes of every part, under a minute. The full run needs ~10 GiB at most and
skips a scale whose estimated memory exceeds what is available (it says so).
"""

from __future__ import annotations

import argparse
from collections import Counter
from dataclasses import dataclass
import gc
import logging
import os
from pathlib import Path
import random
import sys
import tempfile
import time

import faiss
import networkx as nx
import numpy as np

from maxim_memory.embedding import HashingEmbedder
from maxim_memory.graph import AssociativeGraph, CrossLayerGraph, node_key
from maxim_memory.hub import HubConfig, MemoryHub
from maxim_memory.nac import NucleusAccumbens
from maxim_memory.pain import PainDetector, PainHistory
from maxim_memory.records import (Action, Decision, EpisodeContext, EpisodicMemory, Outcome,
                                  Perception)
from maxim_memory.relevance import content_words, KeywordScorer
from maxim_memory.scn import SuprachiasmaticNucleus
from maxim_memory.similarity import EpisodeSimilarityIndex

TOOLS = ['navigate', 'grasp', 'look', 'speak', 'track', 'search', 'wave', 'point', 'nod', 'scan']
OBJECTS = ['mug', 'cup', 'chair', 'table', 'door', 'ball', 'book', 'phone', 'laptop', 'plant',
           'bottle', 'bag', 'lamp', 'key', 'box', 'person', 'dog', 'cat', 'window', 'shelf']
PLACES = ['kitchen', 'hallway', 'office', 'garden', 'lab', 'bedroom', 'garage', 'lobby']
VERBS = ['saw', 'noticed', 'found', 'tracked', 'lost', 'followed', 'spotted', 'ignored']
PEOPLE = ['dennis', 'alice', 'bob', 'carol']
T0 = 1_767_225_600.0  # 2026-01-01 00:00 UTC


def episodes(n: int, seed: int = 0, start: int = 0):
    """Synthetic episodes: (id, text, context, timestamp, tool, success, valence, delay)."""
    rng = random.Random(seed)
    for i in range(start, start + n):
        tool, place = rng.choice(TOOLS), rng.choice(PLACES)
        objs = rng.sample(OBJECTS, rng.randint(0, 3))
        people = rng.sample(PEOPLE, rng.randint(0, 1))
        ok = rng.random() < (0.3 if (tool == 'navigate' and place == 'kitchen') else 0.8)
        text = (f'{rng.choice(VERBS)} {" and ".join(objs) or "nothing"} in the {place}'
                f'{" with " + people[0] if people else ""}; goal {tool} {place}; '
                f'{tool} {"succeeded" if ok else "failed"} on attempt {rng.randint(1, 9999)}')
        ctx = {'tool': tool, 'goal': f'{tool}_{place}', 'success': ok, 'objects': objs,
               'people': people, 'mode': rng.choice(['active', 'passive']), 'scene': place}
        ts = T0 + i * 53.0 + rng.random() * 30
        yield (f'ep-{i:07d}', text, ctx, ts, tool, ok, 0.7 if ok else -0.7, rng.random() * 5)


def rss_bytes() -> int:
    with open('/proc/self/statm') as f:
        return int(f.read().split()[1]) * os.sysconf('SC_PAGE_SIZE')


def mem_available() -> int:
    with open('/proc/meminfo') as f:
        for line in f:
            if line.startswith('MemAvailable:'):
                return int(line.split()[1]) * 1024
    return 0


def rate(n: int, dt: float) -> str:
    return f'{n / dt:,.0f}/s' if dt > 0 else 'inf'


def table(title: str, header: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(str(r[i])) for r in [header] + rows) for i in range(len(header))]
    print(f'\n## {title}')
    print('  '.join(h.ljust(w) for h, w in zip(header, widths)))
    print('  '.join('-' * w for w in widths))
    for r in rows:
        print('  '.join(str(c).ljust(w) for c, w in zip(r, widths)))


# --- capture -----------------------------------------------------------------------------------

def bench_capture(n: int, store_n: int) -> None:
    eps = list(episodes(n, seed=7))
    rows = []

    nac = NucleusAccumbens()
    t = time.perf_counter()
    for e in eps:
        nac.observe(e[4], e[2]['scene'], 'success' if e[5] else 'failure', e[6], e[7], e[0])
    dt_nac = time.perf_counter() - t
    rows.append(['NAc observe', n, rate(n, dt_nac), f'{dt_nac / n * 1e6:.1f} us', ''])

    scn = SuprachiasmaticNucleus(utc_offset_s=0)
    t = time.perf_counter()
    for e in eps:
        scn.record('episode', e[3])
        scn.record(f'{e[4]}:{"success" if e[5] else "failure"}', e[3])
    dt = time.perf_counter() - t
    rows.append(['SCN record x2', n, rate(n, dt), f'{dt / n * 1e6:.1f} us', ''])

    clock = [0.0]
    det, hist = PainDetector(clock=lambda: clock[0], wall_clock=lambda: T0 + clock[0]), \
        PainHistory()
    t = time.perf_counter()
    for e in eps:
        clock[0] += 1.0
        ev = det.tool_result(e[4], e[5])
        if ev is not None:
            hist.record(ev)
    dt = time.perf_counter() - t
    rows.append(['pain tool_result+record', n, rate(n, dt), f'{dt / n * 1e6:.1f} us', ''])

    emb = HashingEmbedder(256)
    t = time.perf_counter()
    emb.embed([e[1] for e in eps])
    dt_embed = time.perf_counter() - t
    rows.append(['HashingEmbedder.embed (batch)', n, rate(n, dt_embed),
                 f'{dt_embed / n * 1e6:.1f} us', 'baseline'])

    idx = EpisodeSimilarityIndex(HashingEmbedder(256))
    t = time.perf_counter()
    for e in eps:
        idx.add(e[0], e[1], e[2], e[3])
    dt_one = time.perf_counter() - t
    idx2 = EpisodeSimilarityIndex(HashingEmbedder(256))
    t = time.perf_counter()
    idx2.add_many(e[:4] for e in eps)
    dt_many = time.perf_counter() - t
    rows.append(['EC add (one by one)', n, rate(n, dt_one), f'{dt_one / n * 1e6:.1f} us',
                 f'{dt_one / dt_embed:.1f}x embed'])
    rows.append(['EC add_many (batches of 1024)', n, rate(n, dt_many),
                 f'{dt_many / n * 1e6:.1f} us',
                 f'{dt_many / dt_embed:.1f}x embed; {dt_one / dt_many:.1f}x faster than '
                 f'one-by-one'])

    disk = None
    try:
        from maxim_memory.records import EpisodeContext, EpisodicMemory, Outcome, Perception, \
            Action, record_to_dict
        from maxim_memory.store import MemoryStore
    except ImportError as exc:
        rows.append(['SQLite store', '-', 'not measured', '', f'store unavailable: {exc}'])
    else:
        recs = [record_to_dict(EpisodicMemory(
            id=e[0], created_at=e[3], perception=Perception(e[1], e[2]['objects'],
                                                            e[2]['people'], 0.5, 0.3),
            context=EpisodeContext(e[2]['goal'], e[2]['mode'], e[2]['scene']),
            action=Action(e[4]), outcome=Outcome(e[5], e[6], 'done', duration_s=e[7])))
            for e in eps[:store_n]]
        with tempfile.TemporaryDirectory() as tmp:
            for sync in ('FULL', 'NORMAL'):
                st = MemoryStore(Path(tmp) / f'one-{sync}.db', synchronous=sync)
                t = time.perf_counter()
                for r in recs:
                    st.put_record('hippocampus', r)
                dt = time.perf_counter() - t
                st.close()
                rows.append([f'store put_record ({sync}, durable each)', store_n,
                             rate(store_n, dt), f'{dt / store_n * 1e6:.0f} us', ''])
            st = MemoryStore(Path(tmp) / 'batch.db', synchronous='FULL')
            t = time.perf_counter()
            for i in range(0, len(recs), 500):
                st.put_records('hippocampus', recs[i:i + 500])
            dt = time.perf_counter() - t
            st.checkpoint()
            disk = st.size_bytes() / len(recs)
            st.close()
            rows.append(['store put_records (FULL, 500/txn)', store_n, rate(store_n, dt),
                         f'{dt / store_n * 1e6:.0f} us', ''])
    table('Capture throughput', ['into', 'episodes', 'rate', 'per episode', 'ratio'], rows)
    if disk is not None:
        print(f'\nSQLite bytes per episode on disk (after checkpoint): {disk:,.0f}')


# --- similarity --------------------------------------------------------------------------------

def recall_at(a: list[str], b: list[str]) -> float:
    return len(set(a) & set(b)) / max(1, len(b))


def recall_ties(scores: list[float], kth: float, k: int, eps: float = 1e-6) -> float:
    """recall@k counting ties as ann-benchmarks does: a result is right when its similarity
    reaches the exact k-th best (many synthetic episodes score exactly alike, and which of
    the tied ones the exact top k lists is arbitrary)."""
    return sum(1 for x in scores[:k] if x >= kth - eps) / k


def bench_similarity(n: int, n_queries: int, k: int = 10) -> list[str]:
    gc.collect()
    rss0 = rss_bytes()
    idx = EpisodeSimilarityIndex(HashingEmbedder(256), utc_offset_s=0)
    t = time.perf_counter()
    idx.add_many(e[:4] for e in episodes(n, seed=1))
    build = time.perf_counter() - t
    gc.collect()
    rss_per = (rss_bytes() - rss0) / n
    est_per = idx.memory_bytes() / n
    queries = list(episodes(n_queries, seed=99, start=n + 10))
    vecs = idx._vectors()  # the index's own vectors: the brute-force baseline searches these
    flat = faiss.IndexFlatIP(idx.dim)
    flat.add(vecs)

    t_ann = t_np = t_flat = 0.0
    rec_sem, tie_sem = [], []
    qv = idx.embedder.embed([q[1] for q in queries])
    for q, v in zip(queries, qv):
        t = time.perf_counter()
        ann = idx.search(q[1], None, k)
        t_ann += time.perf_counter() - t
        t = time.perf_counter()
        s = vecs @ v
        top = np.argpartition(-s, k)[:k]
        top = top[np.argsort(-s[top])]
        t_np += time.perf_counter() - t
        t = time.perf_counter()
        flat.search(v.reshape(1, -1), k)
        t_flat += time.perf_counter() - t
        rec_sem.append(recall_at([h.episode_id for h in ann], [idx._ids[i] for i in top]))
        tie_sem.append(recall_ties([h.score for h in ann], float(max(0.0, s[top[-1]])), k))

    t_mm = t_ex = 0.0
    rec_mm, tie_mm = [], []
    for q in queries:
        t = time.perf_counter()
        ann = idx.search(q[1], q[2], k, timestamp=q[3])
        t_mm += time.perf_counter() - t
        t = time.perf_counter()
        ex = idx.exact_search(q[1], q[2], k, timestamp=q[3])
        t_ex += time.perf_counter() - t
        rec_mm.append(recall_at([h.episode_id for h in ann], [h.episode_id for h in ex]))
        tie_mm.append(recall_ties([h.score for h in ann], ex[-1].score, k))
    nq = len(queries)
    ms = lambda x: f'{x / nq * 1e3:.3f}'  # noqa: E731
    row = [f'{n:,}', f'{build:.1f}', ms(t_ann), ms(t_np), ms(t_flat),
           f'{np.mean(rec_sem):.3f}', f'{np.mean(tie_sem):.3f}', f'{t_np / t_ann:.1f}x',
           f'{t_flat / t_ann:.1f}x', ms(t_mm), ms(t_ex), f'{np.mean(rec_mm):.3f}',
           f'{np.mean(tie_mm):.3f}', f'{t_ex / t_mm:.1f}x',
           f'{rss_per:,.0f}', f'{est_per:,.0f}']
    del idx, flat, vecs
    gc.collect()
    return row


# --- recall (memory_recall) ---------------------------------------------------------------------

def to_record(e: tuple, run_len: int = 500) -> EpisodicMemory:
    """A synthetic episode as the hippocampus stores it."""
    eid, text, ctx, ts, tool, ok, valence, delay = e
    i = int(eid.split('-')[1])
    return EpisodicMemory(
        id=eid, created_at=ts, run_id=f'run-{i // run_len}',
        perception=Perception(text, list(ctx['objects']), list(ctx['people']), 0.5, 0.3),
        context=EpisodeContext(ctx['goal'], ctx['mode'], ctx['scene']),
        decision=Decision(intent=ctx['goal'], confidence=0.7), action=Action(tool),
        outcome=Outcome(ok, valence, 'done' if ok else 'it failed', duration_s=delay))


def brute_recall(recs: list, doc_freq: Counter, query: str = '', tool_name: str = '',
                 success: bool | None = None, object: str = '', person: str = '',
                 time_after: float = 0.0, time_before: float = 0.0,
                 limit: int = 10) -> tuple[list[str], int]:
    """The baseline: every episode checked against every filter, keyword-scored (content
    words weighted by rarity, from a document-frequency table kept like the index's),
    sorted."""
    scorer = KeywordScorer(query, doc_freq, len(recs))
    words = scorer.words
    tool_name, object, person = tool_name.lower(), object.lower(), person.lower()
    out = []
    for r in recs:
        if tool_name and r.action.tool_name.lower() != tool_name:
            continue
        if success is not None and r.outcome.success != success:
            continue
        if object and object not in (o.lower() for o in r.perception.detected_objects):
            continue
        if person and person not in (p.lower() for p in r.perception.detected_people):
            continue
        if (time_after and r.created_at < time_after) or \
                (time_before and r.created_at > time_before):
            continue
        score = 1.0
        if words:
            match = scorer.match(set(content_words(r.text())))
            if not match.shared:
                continue
            score = match.score
        out.append((r, score))
    out.sort(key=lambda x: (-x[1], -x[0].created_at, x[0].id))
    return [r.id for r, _ in out[:limit]], len(out)


def recall_queries(n: int, count: int, seed: int = 5) -> list[tuple[str, dict]]:
    rng = random.Random(seed)
    span = n * 53.0
    out = []
    for _ in range(count):
        tool, obj, place = rng.choice(TOOLS), rng.choice(OBJECTS), rng.choice(PLACES)
        t0 = T0 + rng.random() * span
        out += [('tool + outcome', {'tool_name': tool, 'success': False}),
                ('object + person', {'object': obj, 'person': rng.choice(PEOPLE)}),
                ('tool + keywords', {'tool_name': tool, 'query': f'{obj} {place}'}),
                ('time window (1 day)', {'time_after': t0, 'time_before': t0 + 86400.0}),
                ('keywords only', {'query': f'{obj} {place}'})]
    return out


def quiet_extractor() -> None:
    # the recall hub fills its hippocampus directly; the idle concept extractor's queue
    # overflows and would log every dropped job
    logging.getLogger('maxim_memory.knowledge').setLevel(logging.ERROR)


def bench_recall(n: int, n_queries: int, tmp: Path) -> tuple[list[list[str]], float]:
    """Rows per query kind at scale n, and the measured RSS bytes per episode."""
    gc.collect()
    rss0 = rss_bytes()
    cfg = HubConfig(db_path=str(tmp / f'recall-{n}.db'), hippocampus_capacity=0,
                    background_extraction=False, persist_ec_index=False, state_flush_every=0)
    hub = MemoryHub(cfg, clock=lambda: T0 + n * 53.0)
    # the hippocampus (records, context index, associations) is what recall reads; it is
    # filled in memory, without the SQLite write-through, NAc, SCN and EC of a full capture
    hub.hippocampus.attach_store(None)
    t = time.perf_counter()
    for e in episodes(n, seed=3):
        hub.hippocampus.store(to_record(e))
    build = time.perf_counter() - t
    gc.collect()
    rss_per = (rss_bytes() - rss0) / n
    recs = list(hub.hippocampus)
    doc_freq = Counter(w for r in recs for w in content_words(r.text()))
    kinds: dict[str, list[float]] = {}
    for kind, q in recall_queries(n, n_queries):
        t = time.perf_counter()
        res = hub.recall(limit=10, **q)
        t_hub = time.perf_counter() - t
        t = time.perf_counter()
        ids, total = brute_recall(recs, doc_freq, limit=10, **q)
        t_brute = time.perf_counter() - t
        same = [r.id for r, _ in res.hits] == ids and res.total_matches == total
        k = kinds.setdefault(kind, [0.0, 0.0, 0, 0, 0])
        k[0] += t_hub
        k[1] += t_brute
        k[2] += 1
        k[3] += same
        k[4] += total
    rows = []
    for kind, (th, tb, cnt, same, total) in kinds.items():
        rows.append([f'{n:,}', kind, f'{total / cnt:,.0f}', f'{th / cnt * 1e3:.3f}',
                     f'{tb / cnt * 1e3:.2f}', f'{tb / th:.1f}x', f'{same}/{cnt}'])
    print(f'  recall {n:,}: hippocampus filled in {build:.1f} s '
          f'({rate(n, build)}), RSS {rss_per:,.0f} B/episode', flush=True)
    hub.close(end_session=False)
    del hub, recs
    gc.collect()
    return rows, rss_per


# --- spreading activation ----------------------------------------------------------------------

@dataclass
class LayerGraph:
    """What cross-layer spreading reads of a layer: its name and its associative graph."""

    layer_name: str
    graph: AssociativeGraph


def build_graph(n_nodes: int, seed: int = 11) -> tuple[CrossLayerGraph, dict, list[str]]:
    """A three-layer memory graph of n_nodes records: 80% episodes (ASSOCIATES to recent
    ones, some CAUSES), 15% concepts (IS_A / RELATED_TO), 5% AG records (CORRELATES_WITH);
    cross-layer INSTANCE_OF / DERIVED_FROM (at most 200 episodes per concept, as the
    concepts' refs), QUANTIFIES and STATISTICALLY_CONFIRMS."""
    rng = random.Random(seed)
    n_ep, n_c = int(n_nodes * 0.8), int(n_nodes * 0.15)
    n_ag = n_nodes - n_ep - n_c
    hip, atl, ag = (LayerGraph(name, AssociativeGraph()) for name in
                    ('hippocampus', 'atl', 'angular_gyrus'))
    cross = CrossLayerGraph(hip.graph.registry)
    eps = [f'ep-{i}' for i in range(n_ep)]
    cons = [f'c-{i}' for i in range(n_c)]
    ags = [f'ag-{i}' for i in range(n_ag)]
    for i, e in enumerate(eps):
        for j in rng.sample(range(max(0, i - 200), i), min(i, rng.randint(1, 4))):
            hip.graph.add_edge(e, eps[j], 'ASSOCIATES', round(rng.uniform(0.2, 1.0), 3))
        if i and rng.random() < 0.1:
            hip.graph.add_edge(eps[i - 1], e, 'CAUSES', round(rng.uniform(0.3, 1.0), 3))
    for i, c in enumerate(cons):
        for j in rng.sample(range(n_c), 2):
            if j != i:
                atl.graph.add_edge(c, cons[j], rng.choice(['IS_A', 'RELATED_TO']),
                                   round(rng.uniform(0.3, 0.9), 3))
    for i, a in enumerate(ags):
        ag.graph.add_edge(a, ags[rng.randrange(n_ag)], 'CORRELATES_WITH',
                          round(rng.uniform(0.3, 0.9), 3))
    refs = [0] * n_c
    for e in eps:  # Zipf-like concept popularity, capped like the concepts' refs
        for _ in range(2):
            c = min(int(rng.paretovariate(1.2)) - 1, n_c - 1)
            c = rng.randrange(n_c) if refs[c] >= 200 else c
            refs[c] += 1
            cross.link('hippocampus', e, 'atl', cons[c], 'INSTANCE_OF',
                       round(rng.uniform(0.5, 1.0), 3))
            if rng.random() < 0.3:
                cross.link('atl', cons[c], 'hippocampus', e, 'DERIVED_FROM', 1.0)
    for a in ags:
        cross.link('angular_gyrus', a, 'atl', cons[rng.randrange(n_c)], 'QUANTIFIES', 0.8)
        if rng.random() < 0.3:
            cross.link('angular_gyrus', a, 'atl', cons[rng.randrange(n_c)],
                       'STATISTICALLY_CONFIRMS', round(rng.uniform(0.5, 1.0), 3))
    layers = {v.layer_name: v for v in (hip, atl, ag)}
    return cross, layers, eps


def bench_spread(n_nodes: int, n_seeds: int) -> list[list[str]]:
    t = time.perf_counter()
    cross, layers, eps = build_graph(n_nodes)
    build = time.perf_counter() - t
    # the baseline's graph: every edge of the three layers and the cross-layer graph, keyed
    # like the cross-layer nodes, undirected (spreading follows edges both ways)
    plain = nx.Graph()
    for name, view in layers.items():
        plain.add_edges_from((node_key(name, e.src), node_key(name, e.dst))
                             for e in view.graph.to_edges())
    plain.add_edges_from((e.src, e.dst) for e in cross.to_edges())
    cfg = HubConfig()
    rng = random.Random(2)
    seeds = [rng.choice(eps) for _ in range(n_seeds)]
    t_spread = t_bfs = 0.0
    reached_s = reached_b = 0
    for s in seeds:
        t = time.perf_counter()
        acts = cross.spread_activation([('hippocampus', s)], layers, decay=cfg.spread_decay,
                                       threshold=cfg.spread_threshold,
                                       max_depth=cfg.spread_max_depth)
        t_spread += time.perf_counter() - t
        reached_s += sum(len(v) for v in acts.values())
        t = time.perf_counter()
        found = nx.single_source_shortest_path_length(plain, node_key('hippocampus', s),
                                                      cutoff=cfg.spread_max_depth)
        t_bfs += time.perf_counter() - t
        reached_b += len(found) - 1
    n_edges = plain.number_of_edges()
    print(f'  spread {n_nodes:,} nodes / {n_edges:,} edges built in {build:.1f} s', flush=True)
    ms = lambda x: f'{x / n_seeds * 1e3:.2f}'  # noqa: E731
    return [[f'{plain.number_of_nodes():,}', f'{n_edges:,}', str(cfg.spread_max_depth),
             ms(t_spread), f'{reached_s / n_seeds:,.0f}', ms(t_bfs),
             f'{reached_b / n_seeds:,.0f}', f'{t_spread / t_bfs:.2f}x']]


# --- session end -------------------------------------------------------------------------------

def bench_session(n: int, tmp: Path) -> None:
    """Fill a hub through capture_episode, reopen it, then time persist vs the session end."""
    span = 9 * 86400.0  # over nine days: recent, to compress, and compressed past 7 days
    now = T0 + span
    db = tmp / 'session.db'
    cfg = HubConfig(db_path=str(db), synchronous='NORMAL')
    hub = MemoryHub(cfg, clock=lambda: now)
    recs = [to_record(e) for e in episodes(n, seed=13)]
    for i, r in enumerate(recs):  # spread over the nine days, in order
        r.created_at = T0 + span * i / n
    t = time.perf_counter()
    for r in recs:
        hub.capture_episode(r)
    fill = time.perf_counter() - t
    hub.extractor.drain(timeout=600)
    drained = time.perf_counter() - t
    dropped = hub.extractor.dropped
    hub.save_similarity()
    hub.close(end_session=False)
    del hub, recs
    gc.collect()
    rows = [['capture_episode (NORMAL; hippocampus, NAc, SCN, EC, extractor)', f'{n:,}',
             f'{fill:.1f}', f'{rate(n, fill)}; extractor done at {drained:.1f} s, '
             f'{dropped} jobs dropped']]

    full = HubConfig(db_path=str(db))  # synchronous FULL, as the node runs
    t = time.perf_counter()
    hub = MemoryHub(replace_cfg(full, persist_ec_index=False), clock=lambda: now)
    open_embed = time.perf_counter() - t
    hub.close(end_session=False)
    del hub
    gc.collect()
    t = time.perf_counter()
    hub = MemoryHub(full, clock=lambda: now)
    open_load = time.perf_counter() - t
    assert hub.ec_startup['loaded'], hub.ec_startup
    rows.append(['start-up, EC re-embedded (baseline)', f'{n:,}', f'{open_embed:.1f}',
                 f'hashing vectors; the llama embedder would add ~{n * 0.09 / 60:,.0f} min'])
    rows.append(['start-up, EC index loaded from file', f'{n:,}', f'{open_load:.1f}',
                 f'{open_embed / open_load:.1f}x faster; '
                 f'{hub.ec_startup["embedded"]} re-embedded'])
    hub.extractor.drain(timeout=600)
    t = time.perf_counter()
    hub.persist()
    t_persist = time.perf_counter() - t
    rows.append(['persist() alone (baseline)', f'{n:,}', f'{t_persist:.1f}', ''])
    t = time.perf_counter()
    report = hub.on_session_end()
    t_end = time.perf_counter() - t
    h = report.consolidation[0]
    steps = ', '.join(f'{k} {v:.1f}' for k, v in report.durations_s.items())
    rows.append(['on_session_end()', f'{n:,}', f'{t_end:.1f}',
                 f'{t_end / t_persist:.1f}x persist; {steps}'])
    rows.append(['  consolidation work', '', '',
                 f'hippocampus compressed {h.compressed:,}, pruned {h.pruned:,}, edges decayed '
                 f'{h.edges_decayed:,}; concepts promoted {len(report.promotion.created)}; '
                 f'extractor dropped {hub.extractor.dropped}'])
    rows.append(['  detect work', '', '',
                 f'{len(report.patterns.stored)} PATTERN records '
                 f'({len(report.patterns.confirmed)} confirmed), {report.related_to} RELATED_TO '
                 f'pairs, {len(report.relations.related)} edges of proposed types'])
    hub.store.checkpoint()
    left = len(hub.hippocampus)
    db_bytes = hub.store.size_bytes()
    ec_file = Path(full.ec_index_file())
    ec_bytes = ec_file.stat().st_size if ec_file.exists() else 0
    hub.close(end_session=False)
    table(f'Session end at {n:,} episodes (s; ratios against the baseline rows)',
          ['what', 'episodes', 'seconds', 'notes'], rows)
    print(f'\nafter the session end: {left:,} records; SQLite {db_bytes / max(1, left):,.0f} '
          f'B/record, EC index file {ec_bytes / max(1, left):,.0f} B/record')


def replace_cfg(cfg: HubConfig, **kw) -> HubConfig:
    from dataclasses import replace
    return replace(cfg, **kw)


PARTS = ('capture', 'similarity', 'recall', 'spread', 'session')


def part_similarity(scales: list[int], n_queries: int) -> None:
    rows = []
    for n in scales:
        need = n * 4_000  # measured ~2.5 kB/episode plus build headroom
        if need > mem_available() * 0.8:
            print(f'\nskipping similarity at {n:,} episodes: needs ~{need / 2**30:.1f} GiB, '
                  f'{mem_available() / 2**30:.1f} GiB available')
            continue
        t = time.perf_counter()
        rows.append(bench_similarity(n, n_queries))
        print(f'  ({n:,} episodes done in {time.perf_counter() - t:.0f} s)', flush=True)
    table('Similarity search, k=10 (times in ms per query; ratios = brute-force time / HNSW '
          'time, recall@10 vs the exact top 10)',
          ['episodes', 'build s', 'HNSW sem', 'numpy brute', 'faiss flat', 'recall sem',
           'w/ ties', 'vs numpy', 'vs flat', 'multi-modal', 'exact mm', 'recall mm', 'w/ ties',
           'vs exact', 'RSS B/ep', 'est B/ep'], rows)
    print('\nsem = semantic modality only (text query); multi-modal = text + context + time,'
          '\nexact mm = every episode scored on all four modalities (context matched in Python);'
          '\nrecall = share of the exact top-10 ids found; w/ ties = share of results scoring at'
          '\nleast the exact 10th best (ann-benchmarks); HNSW efSearch at N: '
          + ', '.join(f'{n:,}: {EpisodeSimilarityIndex(HashingEmbedder(8)).ef_for(n)}'
                      for n in scales) + '.')


def part_recall(scales: list[int], n_queries: int, tmp: Path) -> None:
    quiet_extractor()
    rows = []
    per_episode = 6_000.0  # first guess of the hub's RSS per episode; measured from then on
    for n in scales:
        need = n * per_episode * 1.15  # headroom for the sets' and dicts' resizing
        if need > mem_available() * 0.8:
            print(f'\nskipping recall at {n:,} episodes: needs ~{need / 2**30:.1f} GiB '
                  f'({per_episode:,.0f} B/episode measured), '
                  f'{mem_available() / 2**30:.1f} GiB available')
            continue
        t = time.perf_counter()
        got, per_episode = bench_recall(n, n_queries, tmp)
        rows += got
        print(f'  ({n:,} episodes done in {time.perf_counter() - t:.0f} s)', flush=True)
    table('Recall (memory_recall: MemoryHub.recall, limit 10) vs a brute-force scan; ms per '
          'query, ratio = scan time / recall time',
          ['episodes', 'query', 'matches', 'recall ms', 'scan ms', 'vs scan', 'same answer'],
          rows)


def part_spread(n_nodes: int, n_seeds: int) -> None:
    rows = bench_spread(n_nodes, n_seeds)
    table('Cross-layer spreading activation from one episode (decay 0.5, threshold 0.05, '
          'depth 3) vs BFS to the same depth; ms per seed, ratio = spread / BFS',
          ['nodes', 'edges', 'depth', 'spread ms', 'activated', 'BFS ms', 'BFS reached',
           'spread / BFS'], rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--quick', action='store_true', help='small sizes of every part (< 60 s)')
    ap.add_argument('--parts', default=','.join(PARTS), help=f'any of {",".join(PARTS)}')
    ap.add_argument('--scales', default='', help='similarity: comma-separated episode counts')
    ap.add_argument('--recall-scales', default='', help='recall: comma-separated episode counts')
    ap.add_argument('--queries', type=int, default=0, help='queries per scale')
    ap.add_argument('--graph-nodes', type=int, default=0, help='spread: graph size')
    ap.add_argument('--session-episodes', type=int, default=0, help='session: hub size')
    args = ap.parse_args(argv)
    parts = [p for p in args.parts.split(',') if p]
    bad = set(parts) - set(PARTS)
    if bad:
        ap.error(f'unknown parts {sorted(bad)}; choose from {PARTS}')
    ints = lambda text: [int(x) for x in text.split(',') if x]  # noqa: E731
    full = [10_000, 100_000, 1_000_000]
    scales = ints(args.scales) or ([10_000] if args.quick else full)
    recall_scales = ints(args.recall_scales) or ([10_000] if args.quick else full)
    n_queries = args.queries or (50 if args.quick else 100)
    graph_nodes = args.graph_nodes or (20_000 if args.quick else 100_000)
    session_n = args.session_episodes or (2_000 if args.quick else 100_000)
    print(f'# memory benchmark ({"quick" if args.quick else "full"}); faiss {faiss.__version__},'
          f' {faiss.omp_get_max_threads()} threads; HashingEmbedder(256) vectors; '
          f'{os.cpu_count()} CPUs, {mem_available() / 2**30:.1f} GiB available')
    walls = []
    t_all = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix='maxim-bench-memory-') as tmp:
        for part in parts:
            t = time.perf_counter()
            if part == 'capture':
                bench_capture(2_000 if args.quick else 20_000, 300 if args.quick else 2_000)
            elif part == 'similarity':
                part_similarity(scales, n_queries)
            elif part == 'recall':
                part_recall(recall_scales, max(4, n_queries // 5), Path(tmp))
            elif part == 'spread':
                part_spread(graph_nodes, n_queries)
            else:
                bench_session(session_n, Path(tmp))
            walls.append([part, f'{time.perf_counter() - t:.1f}'])
            gc.collect()
    walls.append(['total', f'{time.perf_counter() - t_all:.1f}'])
    table('Wall time per part (s)', ['part', 'seconds'], walls)
    return 0


if __name__ == '__main__':
    sys.exit(main())
