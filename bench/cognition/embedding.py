"""Embedding speed on one thread: the sentence model (all-MiniLM-L6-v2 in numpy) vs hashing.

Sentences per second for the texts the EC embeds (the episodes of pairs.jsonl and their
percepts, 8-30 tokens), one at a time (a percept as it arrives) and in batches of 32 (the
start-up re-embedding of a database), with the embedders' caches off. The hashing embedder,
timed in the same run, is the baseline of the printed ratios. BLAS is held to one thread
(OPENBLAS_NUM_THREADS / OMP_NUM_THREADS / MKL_NUM_THREADS = 1 before numpy loads), so the
figure is what one of the robot's two cores gives.

Run: ./maxim bench cognition --parts embedding, or python -P bench/cognition/embedding.py.
"""

from __future__ import annotations

import os

for _var in ('OPENBLAS_NUM_THREADS', 'OMP_NUM_THREADS', 'MKL_NUM_THREADS'):
    os.environ[_var] = '1'  # before numpy is imported: it reads them once

import argparse  # noqa: E402 - after the thread settings
import sys  # noqa: E402
import time  # noqa: E402

from maxim_memory.embedding import (EmbedderError, HashingEmbedder,  # noqa: E402
                                    SentenceEmbedder)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from precision import load_pairs, to_episode  # noqa: E402


def texts() -> list[str]:
    pairs = load_pairs()
    return [to_episode(p, 0.0).text() for p in pairs] + [p['percept'] for p in pairs]


def rate(embed, batch: list[str], batch_size: int, min_s: float) -> float:
    """Sentences per second over at least `min_s` seconds of whole passes."""
    n, t0 = 0, time.perf_counter()
    while True:
        for at in range(0, len(batch), batch_size):
            embed(batch[at:at + batch_size])
        n += len(batch)
        elapsed = time.perf_counter() - t0
        if elapsed >= min_s:
            return n / elapsed


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--seconds', type=float, default=3.0, help='time per measurement')
    args = ap.parse_args(argv)
    corpus = texts()
    hashing = HashingEmbedder()
    hashing._cache.clear()
    try:
        t = time.perf_counter()
        sentence = SentenceEmbedder(cache_size=0)
        load_s = time.perf_counter() - t
    except EmbedderError as exc:
        print(f'sentence model unavailable: {exc}')
        return 1
    tokens = [len(sentence._model.tokenizer.encode(x)) for x in corpus]
    print(f'embedding speed, 1 BLAS thread: {len(corpus)} texts of {min(tokens)}-{max(tokens)} '
          f'tokens (mean {sum(tokens) / len(tokens):.1f}); sentence model loaded in '
          f'{load_s:.2f} s', flush=True)
    print(f'{"":26}{"hashing /s":>12}{"sentence /s":>13}{"ms/sentence":>13}{"ratio":>9}')
    for label, size in (('one at a time', 1), ('batches of 32', 32)):
        h = rate(hashing.embed, corpus, size, args.seconds)
        s = rate(sentence.embed, corpus, size, args.seconds)
        print(f'{label:26}{h:>12,.0f}{s:>13,.0f}{1e3 / s:>13.2f}{h / s:>8.0f}x', flush=True)
    return 0


if __name__ == '__main__':
    sys.exit(main())
