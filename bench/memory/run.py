#!/usr/bin/env python3
"""Memory benchmark: capture throughput and EC similarity search at scale.

    python bench/memory/run.py [--quick] [--scales 10000,100000,1000000] [--queries N]

Measures, with baselines taken in the same run:
- capture throughput into the NAc, SCN, pain and EC structures (and the SQLite store, when
  maxim_memory.store is importable): one-by-one vs batched where both exist;
- similarity search at each scale: faiss HNSW (`search`) vs brute force over the same vectors
  (numpy matmul + argpartition, and faiss IndexFlatIP), recall@10 against the exact top 10;
  and the full multi-modal search vs `exact_search` (every episode scored on every modality);
- memory per episode (process RSS growth while indexing, and the index's own estimate) and
  bytes per episode on disk.

Vectors come from the HashingEmbedder (the offline fallback: microseconds per text) so that
100k-1M episodes can be indexed in minutes; the real llama.cpp embedder costs ~90 ms per text,
which is a capture cost, not a search cost (search time depends only on dim and N).
--quick: 10k episodes only, under a minute.
"""

from __future__ import annotations

import argparse
import gc
import os
from pathlib import Path
import random
import sys
import tempfile
import time

import faiss
import numpy as np

from maxim_memory.embedding import HashingEmbedder
from maxim_memory.nac import NucleusAccumbens
from maxim_memory.pain import PainDetector, PainHistory
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
    rec_sem = []
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

    t_mm = t_ex = 0.0
    rec_mm = []
    for q in queries:
        t = time.perf_counter()
        ann = idx.search(q[1], q[2], k, timestamp=q[3])
        t_mm += time.perf_counter() - t
        t = time.perf_counter()
        ex = idx.exact_search(q[1], q[2], k, timestamp=q[3])
        t_ex += time.perf_counter() - t
        rec_mm.append(recall_at([h.episode_id for h in ann], [h.episode_id for h in ex]))
    nq = len(queries)
    ms = lambda x: f'{x / nq * 1e3:.3f}'  # noqa: E731
    row = [f'{n:,}', f'{build:.1f}', ms(t_ann), ms(t_np), ms(t_flat),
           f'{np.mean(rec_sem):.3f}', f'{t_np / t_ann:.1f}x', f'{t_flat / t_ann:.1f}x',
           ms(t_mm), ms(t_ex), f'{np.mean(rec_mm):.3f}', f'{t_ex / t_mm:.1f}x',
           f'{rss_per:,.0f}', f'{est_per:,.0f}']
    del idx, flat, vecs
    gc.collect()
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--quick', action='store_true', help='10k episodes only (< 60 s)')
    ap.add_argument('--scales', default='', help='comma-separated episode counts')
    ap.add_argument('--queries', type=int, default=0, help='queries per scale')
    args = ap.parse_args(argv)
    scales = [int(s) for s in args.scales.split(',') if s] or \
        ([10_000] if args.quick else [10_000, 100_000, 1_000_000])
    n_queries = args.queries or (50 if args.quick else 100)
    print(f'# memory benchmark ({"quick" if args.quick else "full"}); faiss {faiss.__version__},'
          f' {faiss.omp_get_max_threads()} threads; HashingEmbedder(256) vectors')
    bench_capture(2_000 if args.quick else 20_000, 300 if args.quick else 2_000)
    rows = []
    for n in scales:
        need = n * 4_000  # measured ~2.5 kB/episode plus build headroom
        if need > mem_available() * 0.8:
            print(f'\nskipping {n:,} episodes: needs ~{need / 2**30:.1f} GiB, '
                  f'{mem_available() / 2**30:.1f} GiB available')
            continue
        t = time.perf_counter()
        rows.append(bench_similarity(n, n_queries))
        print(f'  ({n:,} episodes done in {time.perf_counter() - t:.0f} s)', flush=True)
    table('Similarity search, k=10 (times in ms per query; ratios = brute-force time / HNSW '
          'time, recall@10 vs the exact top 10)',
          ['episodes', 'build s', 'HNSW sem', 'numpy brute', 'faiss flat', 'recall sem',
           'vs numpy', 'vs flat', 'multi-modal', 'exact mm', 'recall mm', 'vs exact',
           'RSS B/ep', 'est B/ep'], rows)
    print('\nsem = semantic modality only (text query); multi-modal = text + context + time,'
          '\nexact mm = every episode scored on all four modalities (context matched in Python).')
    return 0


if __name__ == '__main__':
    sys.exit(main())
