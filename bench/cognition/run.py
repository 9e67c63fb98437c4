"""Cognition benchmarks: ./maxim bench cognition [--parts ablation,precision,embedding]
[--quick].

- ablation: the same situations through the robot's Mind with each bio-system switched off
  in turn; what changes in the prompt, the enrichment and the action (ablation.py; --quick
  uses scripted answers instead of the embedded model);
- precision: enrichment precision on the labelled (percept, memory) pairs, word hashing vs
  the sentence model side by side (precision.py);
- embedding: sentences per second on one thread, the sentence model vs hashing
  (embedding.py; run in its own process, since it holds BLAS to one thread);
- live: the mind in the running simulated robot (copy rate, named rate, grounded
  arguments, actions per minute, cycle time in the sim over the same cycle alone) and the
  shipped scenarios live on the embedded model (live.py; not in the default parts: it
  takes tens of minutes).
"""

import argparse
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = ('ablation', 'precision', 'embedding', 'live')
DEFAULT = ('ablation', 'precision', 'embedding')


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--parts', default=','.join(DEFAULT),
                    type=lambda s: [x for x in s.split(',') if x])
    ap.add_argument('--quick', action='store_true', help='shorter speed measurements')
    args, rest = ap.parse_known_args()
    unknown = set(args.parts) - set(PARTS)
    if unknown:
        ap.error(f'unknown parts {sorted(unknown)} (have: {", ".join(PARTS)})')
    status = 0
    for part in args.parts:
        print(f'== {part} ==', flush=True)
        if part == 'ablation':
            extra = ['--quick'] if args.quick else []
        elif part == 'live':
            extra = rest + (['--sim-seconds', '30', '--no-scenarios'] if args.quick else [])
        else:
            extra = rest if part == 'precision' else (['--seconds', '1'] if args.quick else [])
        done = subprocess.run([sys.executable, '-P', os.path.join(HERE, f'{part}.py'), *extra],
                              timeout=3600)
        status = status or done.returncode
    return status


if __name__ == '__main__':
    sys.exit(main())
