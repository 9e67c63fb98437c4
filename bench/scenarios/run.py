"""Live multi-turn scenarios: the shipped ones, and ones generated from the decision
benchmark's test families (bench/scenarios/generate.py), each on the real model over several
seeds, through `./maxim scenario suite --live` (the runner every scenario uses).

    ./maxim bench scenarios [--set generated|shipped|train|validation] [--seeds 1 2]
                            [--per-family 3]
                            [--model smollm2]
                            [--scenario-seed 11] [--quick]

It prints the pass rate per family and seed and writes bench/results/scenarios-<set>-<commit>-
seeds<...>.json: the commit, the model, the seeds, every run with its outcome (what was met,
unmet or violated, the acts), and the generated scenarios themselves, so a run can be read
without the generator. The judge is each scenario's own criteria, checked by the scenario
runner from what the robot did, not by the chooser being judged.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import subprocess
import sys
import tempfile
import time

import yaml

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RESULTS = ROOT / 'bench' / 'results'
sys.path.insert(0, str(HERE))

import generate  # noqa: E402

sys.path.insert(0, str(ROOT / 'bench' / 'authored'))
import tiers  # noqa: E402


def commit() -> str:
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, text=True,
                              capture_output=True, timeout=10).stdout.strip() or 'unknown'
    except (OSError, subprocess.SubprocessError):
        return 'unknown'


def suite(names: list[str], seeds: list[int], live: bool, out: Path, timeout_s: float,
          model: str = '') -> dict:
    """`./maxim scenario suite` on `names` (files or shipped names), on `model` (a GGUF or a
    packaged model's name; default the embedded one); its suite.json."""
    cmd = [str(ROOT / 'maxim'), 'scenario', 'suite', *names, '--seeds', *map(str, seeds),
           '--out-dir', str(out)] + (['--live'] if live else []) + \
        (['--model', model] if model else [])
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    proc = subprocess.run(cmd, cwd=ROOT, env=env, timeout=timeout_s, text=True,
                          capture_output=True)
    path = out / 'suite.json'
    if not path.is_file():
        raise RuntimeError(f'the suite wrote no suite.json (exit {proc.returncode}): '
                           f'{proc.stderr[-2000:]}')
    return json.loads(path.read_text())


def by_family(runs: list[dict], family_of: dict[str, str]) -> dict:
    out: dict[str, dict] = {}
    for r in runs:
        fam = family_of.get(r['scenario'], 'shipped')
        f = out.setdefault(fam, {'runs': 0, 'passed': 0})
        f['runs'] += 1
        f['passed'] += r['status'] == 'pass'
    for f in out.values():
        f['rate'] = round(f['passed'] / f['runs'], 4) if f['runs'] else 0.0
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--set', choices=('generated', 'shipped', 'train', 'validation'),
                    default='generated', help='train and validation: the authored tiers '
                    "(bench/authored), family = the author's capability")
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--per-family', type=int, default=3)
    ap.add_argument('--scenario-seed', type=int, default=11)
    ap.add_argument('--quick', action='store_true',
                    help='one scenario per family, one seed')
    ap.add_argument('--timeout', type=float, default=5400.0, help='for the whole suite, s')
    ap.add_argument('--model', default='',
                    help='GGUF file or packaged model (smollm2); default: the embedded model')
    a = ap.parse_args(argv)
    per, seeds = (1, a.seeds[:1]) if a.quick else (a.per_family, a.seeds)
    made = generate.generate(per, a.scenario_seed) if a.set == 'generated' else []
    family_of = {s['name']: s['family'] for s in made}
    authored = tiers.scenario_files(a.set) if a.set in ('train', 'validation') else []
    if a.quick and authored:
        firsts = {}
        for p in authored:
            firsts.setdefault(p.parent.parent.name, p)
        authored = list(firsts.values())
    writers = tiers.authors()
    family_of.update({str(yaml.safe_load(p.read_text(encoding='utf-8')).get('name')):
                      writers[p.parent.parent.name]['capability'] for p in authored})
    with tempfile.TemporaryDirectory(prefix='maxim-scenarios-') as tmp:
        tmp = Path(tmp)
        # The suite's default (no names) is every shipped scenario.
        names = [str(p) for p in generate.write(made, tmp / 'generated')] + \
            [str(p) for p in authored]
        t0 = time.monotonic()
        live = suite(names, seeds, True, tmp / 'live', a.timeout, a.model)
        spent = time.monotonic() - t0
    fams = by_family(live['runs'], family_of)
    run = {'benchmark': 'scenarios', 'set': a.set, 'commit': commit(),
           'model': live.get('model') or a.model or 'gemma-3-270m-q4_k_m.gguf', 'seeds': seeds,
           'scenario_seed': a.scenario_seed, 'per_family': per,
           'time': time.strftime('%Y-%m-%dT%H:%M:%S'), 'live_s': round(spent, 1),
           'passed': live['passed'], 'runs_total': len(live['runs']),
           'rate': round(live['passed'] / max(1, len(live['runs'])), 4),
           'families': fams, 'per_seed': {
               str(s): by_family([r for r in live['runs'] if r['seed'] == s], {})['shipped']
               for s in seeds if any(r['seed'] == s for r in live['runs'])},
           'runs': live['runs'], 'scenarios': made}
    for fam, f in sorted(fams.items()):
        print(f'  {fam:14s} {f["passed"]:3d} of {f["runs"]:3d}  {f["rate"]:.2f}')
    print(f'live: {run["passed"]} of {run["runs_total"]} runs passed ({run["rate"]:.2f}); '
          f'per seed: {run["per_seed"]}')
    RESULTS.mkdir(parents=True, exist_ok=True)
    tag = f'-{Path(a.model).stem.lower()}' if a.model else ''
    out = RESULTS / (f'scenarios-{a.set}{tag}-{run["commit"]}-seeds'
                     f'{"-".join(map(str, seeds))}.json')
    out.write_text(json.dumps(run, indent=1) + '\n')
    print(f'results -> {out.relative_to(ROOT)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
