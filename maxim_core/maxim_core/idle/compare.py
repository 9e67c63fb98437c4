"""Compare two runs' idle provenance: `python -m maxim_core.idle.compare a.jsonl b.jsonl`.

Prints what differs and whether it is due to config, model, environment or model
stochasticity (`--json` for the whole report). Exit status: 0 done, 2 unreadable input.
"""

import argparse
import json
import sys

from .provenance import compare, format_report, ProvenanceError


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog='python -m maxim_core.idle.compare',
        description='Attribute the differences between two idle provenance logs.')
    parser.add_argument('run_a', help='provenance JSON-lines file of run A')
    parser.add_argument('run_b', help='provenance JSON-lines file of run B')
    parser.add_argument('--json', action='store_true', help='print the full report as JSON')
    args = parser.parse_args(argv)
    try:
        report = compare(args.run_a, args.run_b)
    except ProvenanceError as exc:
        print(f'error: {exc}', file=sys.stderr)
        return 2
    print(json.dumps(report, indent=2, sort_keys=True) if args.json else format_report(report))
    return 0


if __name__ == '__main__':
    sys.exit(main())
