"""Cognition benchmarks: ./maxim bench cognition [--parts precision,embedding] [--quick].

- precision: enrichment precision on the labelled (percept, memory) pairs, word hashing vs
  the sentence model side by side (precision.py);
- embedding: sentences per second on one thread, the sentence model vs hashing
  (embedding.py; run in its own process, since it holds BLAS to one thread).
"""

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = ('precision', 'embedding')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--parts', default=','.join(PARTS),
                    type=lambda s: [x for x in s.split(',') if x])
    ap.add_argument('--quick', action='store_true', help='shorter speed measurements')
    args, rest = ap.parse_known_args()
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        ap.error(f'unknown parts {sorted(unknown)} (have: {", ".join(PARTS)})')
    status = 0
    for part in args.parts:
        print(f'== {part} ==', flush=True)
        extra = rest if part == 'precision' else (['--seconds', '1'] if args.quick else [])
        done = subprocess.run([sys.executable, '-P', os.path.join(HERE, f'{part}.py'), *extra],
                              timeout=1800)
        status = status or done.returncode
    return status


if __name__ == '__main__':
    sys.exit(main())
