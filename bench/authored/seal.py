"""Seals an author's finished folder into the sealed test set, so nobody reads it by accident.

    python3 bench/authored/seal.py DIR --batch NAME

DIR is an author's folder (moments.jsonl, scenarios/*.yaml) that validate.py passes. It is
packed as one file bench/sealed/NAME/<author>.sealed: a header line, then the items as
zlib-compressed JSON in base64. The plain folder is then deleted. Only counts are printed.
The items are read back only by `./maxim bench sealed`, which prints per-capability
aggregates (bench/authored/tiers.py `sealed_batch`).
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path
import shutil
import sys
import zlib

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SEALED = ROOT / 'bench' / 'sealed'
HEADER = ('MAXIM SEALED TEST DATA. Do not decode by hand: whoever changes the deciding code '
          'never reads these items. Run ./maxim bench sealed (aggregates only).')

sys.path.insert(0, str(HERE))
import validate  # noqa: E402


def pack(d: Path) -> dict:
    moments = [json.loads(line) for line in
               (d / 'moments.jsonl').read_text(encoding='utf-8').splitlines() if line.strip()] \
        if (d / 'moments.jsonl').exists() else []
    scenarios = {p.name: p.read_text(encoding='utf-8')
                 for p in sorted((d / 'scenarios').glob('*.yaml'))} \
        if (d / 'scenarios').is_dir() else {}
    return {'author': d.name, 'moments': moments, 'scenarios': scenarios}


def encode(payload: dict) -> str:
    blob = zlib.compress(json.dumps(payload, sort_keys=True).encode('utf-8'), 9)
    body = base64.b64encode(blob).decode('ascii')
    return HEADER + '\n' + '\n'.join(body[i:i + 76] for i in range(0, len(body), 76)) + '\n'


def decode(text: str) -> dict:
    lines = text.splitlines()
    if not lines or lines[0] != HEADER:
        raise ValueError('not a sealed file (the header line is missing)')
    return json.loads(zlib.decompress(base64.b64decode(''.join(lines[1:]))).decode('utf-8'))


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('dir')
    ap.add_argument('--batch', required=True)
    ap.add_argument('--keep', action='store_true', help='do not delete the plain folder')
    args = ap.parse_args(argv)
    d = Path(args.dir).resolve()
    problems = validate.Problems()
    n_m, n_s = validate.check_dir(d, problems)
    if problems.items:
        print(f'{len(problems.items)} problem(s); run validate.py {d} and fix them first')
        return 1
    out = SEALED / args.batch / f'{d.name}.sealed'
    out.parent.mkdir(parents=True, exist_ok=True)
    payload = pack(d)
    text = encode(payload)
    if decode(text) != payload:
        print('sealing did not round-trip; nothing written')
        return 1
    out.write_text(text, encoding='ascii')
    if not args.keep:
        shutil.rmtree(d)
    shown = out.relative_to(ROOT) if out.is_relative_to(ROOT) else out
    print(f'sealed {n_m} moments and {n_s} scenarios of {d.name} into {shown}')
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
