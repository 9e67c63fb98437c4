"""The decision bench on moments written by many authors: train, validation and sealed tiers.

    ./maxim bench moments [--model PATH] [--tiers train validation] [--fit] [--quick]
    ./maxim bench sealed  [--model PATH] [--batch issue-42]

For every authored moment (tiers.py) it builds the Grounding the Mind would build, asks the
Mind's CandidateBuilder for candidates, scores them on the real model and computes every
feature of the choice, as bench/decisions/run.py does for the generated moments. It then
ranks the candidates with the weights the robot loads (`fitted`), with the model alone
(`likelihood`), at random, and with weights refit now on the train tier (`refit`), and
reports for each tier and capability:

- top-1: the share of moments whose first-ranked candidate is a right act (a tie counts as
  the share of right candidates in it);
- act accuracy on moments that need an act, abstention on moments that need none, and their
  harmonic mean. A tier whose abstention is over 95% while acts are under 20% is marked
  FAILED: a mind that only waits must not win.

`--fit` writes the refit weights to deliberation/weights.json (fitted on train, chosen by
cross-validation on train, reported on validation). `sealed` reads the sealed batch in
memory and prints per-capability aggregates only; each reading is appended to
bench/results/sealed-readings.json with its commit, and a batch is read at most three times.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
from pathlib import Path
import random
import sys
import tempfile
import time

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / 'bench' / 'decisions'))

import tiers  # noqa: E402

RESULTS = ROOT / 'bench' / 'results'
_DEC = 'maxim_bench_decisions_run'


def dec():
    """bench/decisions/run.py, under a name of its own (every bench has a run.py)."""
    if _DEC not in sys.modules:
        spec = importlib.util.spec_from_file_location(_DEC, ROOT / 'bench' / 'decisions' /
                                                      'run.py')
        mod = importlib.util.module_from_spec(spec)
        sys.modules[_DEC] = mod
        spec.loader.exec_module(mod)
    return sys.modules[_DEC]


READINGS = RESULTS / 'sealed-readings.json'
MAX_READINGS = 3


def figures(items: list[dict], how) -> dict:
    """Top-1 per capability and overall, and the act/abstain figures, for a way of choosing
    `how(item) -> (chosen cand or None, expected top-1 or None)`."""
    caps: dict[str, dict] = {}
    act_n = act_ok = ab_n = ab_ok = 0.0
    for it in items:
        chosen, expect = how(it)
        ok = expect if expect is not None else float(
            chosen is not None and chosen['label'] == 'right')
        c = caps.setdefault(it['family'], {'n': 0, 'right': 0.0})
        c['n'] += 1
        c['right'] += ok
        if it['needs_act']:
            act_n += 1
            act_ok += ok
        else:
            ab_n += 1
            ab_ok += ok
    wilson = dec().wilson
    out = {cap: {'n': c['n'], 'top1': round(c['right'] / c['n'], 4),
                 'top1_ci': wilson(c['right'], c['n'])} for cap, c in sorted(caps.items())}
    n = sum(c['n'] for c in caps.values())
    right = sum(c['right'] for c in caps.values())
    acts = act_ok / act_n if act_n else 0.0
    abst = ab_ok / ab_n if ab_n else 0.0
    hm = 2 * acts * abst / (acts + abst) if acts + abst else 0.0
    out['overall'] = {'n': n, 'top1': round(right / max(1, n), 4), 'top1_ci': wilson(right, n),
                      'act_accuracy': round(acts, 4), 'act_n': int(act_n),
                      'abstention': round(abst, 4), 'abstain_n': int(ab_n),
                      'harmonic_mean': round(hm, 4),
                      'only_waits': abst > 0.95 and acts < 0.20}
    return out


def featurise_moments(moments: list[dict], model: str, scores: str = ''):
    """Each moment's candidates with their labels, features and likelihood, on the model."""
    from score_cache import CachedBackend, load_scores
    from maxim_core.deliberation.stance import Stance, STANCE_FILE
    from maxim_core.llm.llama import LlamaCppBackend
    from maxim_core.llm.model import resolve_model
    path = resolve_model(model)
    backend = CachedBackend(lambda: LlamaCppBackend(path, n_ctx=2048),
                            load_scores(Path(scores)) if scores else None)
    situations = [tiers.to_situation(m) for m in moments]
    stance = Stance.load(STANCE_FILE) if STANCE_FILE.is_file() else Stance()
    try:
        items = dec().featurise(situations, backend, dec().sentence_relate(), stance,
                                embed=dec().sentence_embed())
    finally:
        backend.close()
    for it, s in zip(items, situations):
        it['needs_act'] = s['needs_act']
        it['author'] = s['author']
        it['templates'] = [s['author']]      # cross-validation holds out whole authors
    return items, Path(path).name, backend


def ways_of_choosing(train_items: list[dict]) -> tuple[dict, dict, dict]:
    import fit as fitting
    from maxim_core.deliberation import scorers, weights
    d = dec()
    ways = {'random': d.by_random, 'likelihood': d.by_likelihood}
    if weights.WEIGHTS_FILE.is_file():
        ways['fitted'] = d.by_weights(dict(weights.Weights.load(weights.WEIGHTS_FILE).w))
    refit, info = {}, {}
    if train_items:
        fit_items = [dict(it, split='dev') for it in train_items]
        refit, info = fitting.fit_weights(fit_items, list(scorers.FEATURES))
        ways['refit'] = d.by_weights(refit)
    return ways, refit, info


def table(report: dict, tiers: list[str]) -> str:
    lines = []
    for tier in tiers:
        rows = report[tier]
        ways = list(rows)
        caps = [c for c in rows[ways[0]] if c != 'overall'] + ['overall']
        lines.append(f'\n{tier}: top-1 by capability')
        lines.append('  ' + 'capability'.ljust(16) + 'n'.rjust(5)
                     + ''.join(w.rjust(12) for w in ways))
        for cap in caps:
            lines.append('  ' + cap.ljust(16) + str(rows[ways[0]][cap]['n']).rjust(5)
                         + ''.join(f"{rows[w][cap]['top1']:.2f}".rjust(12) for w in ways))
        for w in ways:
            o = rows[w]['overall']
            lines.append(f'  {w}: acts {o["act_accuracy"]:.2f} (n {o["act_n"]}), abstention '
                         f'{o["abstention"]:.2f} (n {o["abstain_n"]}), harmonic mean '
                         f'{o["harmonic_mean"]:.2f}' + ('  FAILED: only waits'
                                                        if o['only_waits'] else ''))
    return '\n'.join(lines)


def moments_main(a) -> int:
    started_at = dec().commit()          # the code measured is the code when the run began
    moments = [m for t in sorted(set(a.tiers) | {'train'}) for m in tiers.load_moments(t)]
    if a.per_author:
        rng = random.Random(7)
        by_author: dict[str, list] = {}
        for m in moments:
            by_author.setdefault(m['author'], []).append(m)
        moments = [m for group in by_author.values()
                   for m in rng.sample(group, min(a.per_author, len(group)))]
    if a.quick:
        rng = random.Random(7)
        by_cap: dict[tuple, list] = {}
        for m in moments:
            by_cap.setdefault((m['tier'], m['capability']), []).append(m)
        moments = [m for group in by_cap.values() for m in rng.sample(group, min(4, len(group)))]
    if not moments:
        print('no authored moments yet (bench/authored/<author>/moments.jsonl)')
        return 1
    print(f'{len(moments)} authored moments from '
          f'{len({m["author"] for m in moments})} authors', flush=True)
    items, model_name, backend = featurise_moments(moments, a.model, a.scores)
    ways, refit, info = ways_of_choosing([it for it in items if it['split'] == 'train'])
    shown = [t for t in ('train', 'validation') if any(it['split'] == t for it in items)]
    report = {t: {w: figures([it for it in items if it['split'] == t], f)
                  for w, f in ways.items()} for t in shown}
    print(table(report, shown))
    run = {'benchmark': 'moments', 'commit': started_at, 'model': model_name,
           'time': time.strftime('%Y-%m-%dT%H:%M:%S'), 'quick': a.quick,
           'per_author': a.per_author,
           'authors': sorted({m['author'] for m in moments}),
           'data_hash': dec().data_hash(moments), 'fit': info, 'weights_refit': refit,
           **report, 'items': items}
    # The summary (figures, commit, model, data) is kept in bench/results; the full run, with
    # every candidate's features and the model's scores, is the input of probes.py and of a
    # later run's --scores, and goes beside it only when asked (--out): it is megabytes.
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = Path(model_name).stem.lower().replace('.', '_')
    name = f'moments-{stem}-{started_at}-{time.strftime("%Y%m%d-%H%M%S")}.json'
    out = Path(a.out) if a.out else Path(tempfile.gettempdir()) / 'maxim-bench' / name
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(run, separators=(',', ':')) + '\n')
    backend.save(out.with_name(out.stem + '.scores.json'))
    (RESULTS / name).write_text(json.dumps({k: v for k, v in run.items() if k != 'items'},
                                           indent=1) + '\n')
    print(f'full run -> {out}; summary -> {(RESULTS / name).relative_to(ROOT)}')
    if a.fit and refit:
        from maxim_core.deliberation import weights
        prov = {'commit': run['commit'], 'model': model_name, 'data_hash': run['data_hash'],
                'fit': info, 'fitted_on': 'bench/authored train tier',
                'validation_top1': report.get('validation', {}).get('refit', {}).get(
                    'overall', {}).get('top1'),
                'results': out.name, 'refit_by': './maxim bench moments --fit'}
        weights.Weights(refit, 'fitted', prov).save(weights.WEIGHTS_FILE)
        print(f'weights -> {weights.WEIGHTS_FILE.relative_to(ROOT)}')
    return 0


def readings() -> list[dict]:
    if READINGS.is_file():
        return json.loads(READINGS.read_text(encoding='utf-8'))
    return []


def sealed_scenarios(scenarios: dict[str, str], seeds: list[int], model: str) -> dict:
    """The sealed scenarios live through the scenario suite, in a folder deleted after; the
    pass rate per capability (the author's), per seed and overall: aggregates only."""
    import tempfile
    import yaml
    spec = importlib.util.spec_from_file_location('maxim_bench_scenarios_run',
                                                  ROOT / 'bench' / 'scenarios' / 'run.py')
    runner = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(runner)
    writers = tiers.authors()
    cap_of = {}
    with tempfile.TemporaryDirectory(prefix='maxim-sealed-') as tmp:
        tmp = Path(tmp)
        names = []
        for fname, text in sorted(scenarios.items()):
            name = str(yaml.safe_load(text).get('name'))
            cap_of[name] = writers[name.split('-', 1)[0]]['capability']
            (tmp / fname).write_text(text, encoding='utf-8')
            names.append(str(tmp / fname))
        t0 = time.monotonic()
        live = runner.suite(names, seeds, True, tmp / 'live', 4 * 3600.0, model)
        spent = time.monotonic() - t0
    runs = [{'cap': cap_of.get(r['scenario'], '?'), 'seed': r['seed'],
             'passed': r['status'] == 'pass'} for r in live['runs']]
    out = {'live_s': round(spent, 1), 'seeds': seeds, 'runs': len(runs),
           'passed': sum(r['passed'] for r in runs),
           'rate': round(sum(r['passed'] for r in runs) / max(1, len(runs)), 4),
           'per_seed': {}, 'capabilities': {}}
    for seed in seeds:
        mine = [r for r in runs if r['seed'] == seed]
        out['per_seed'][str(seed)] = round(sum(r['passed'] for r in mine) / max(1, len(mine)),
                                           4)
    for cap in sorted({r['cap'] for r in runs}):
        mine = [r for r in runs if r['cap'] == cap]
        out['capabilities'][cap] = {'runs': len(mine), 'rate': round(
            sum(r['passed'] for r in mine) / len(mine), 4)}
    print(f"\nsealed scenarios, live on seeds {seeds}: {out['passed']} of {out['runs']} runs "
          f"passed ({out['rate']:.2f}); per seed {out['per_seed']}")
    for cap, c in out['capabilities'].items():
        print(f'  {cap.ljust(16)} {c["rate"]:.2f} of {c["runs"]}')
    return out


def sealed_main(a) -> int:
    started_at = dec().commit()
    done = [r for r in readings() if r['batch'] == a.batch]
    if len(done) >= MAX_READINGS and not a.force:
        print(f'the sealed batch {a.batch} was read {len(done)} times already (at most '
              f'{MAX_READINGS} per issue); see {READINGS.relative_to(ROOT)}')
        return 1
    moments, scenarios = tiers.sealed_batch(a.batch)
    print(f'sealed batch {a.batch}: {len(moments)} moments, {len(scenarios)} scenarios, '
          f'{len({m["author"] for m in moments})} authors', flush=True)
    items, model_name, _ = featurise_moments(moments, a.model)
    ways, _, _ = ways_of_choosing([])
    shown = ('fitted', 'likelihood', 'random')
    rows = {w: figures(items, f) for w, f in ways.items() if w in shown}
    for it in items:       # aggregates only leave this function
        it.clear()
    print(table({'sealed': rows}, ['sealed']))
    live = None if a.no_scenarios else sealed_scenarios(scenarios, a.seeds, a.model)
    reading = {'batch': a.batch, 'commit': started_at, 'model': model_name,
               'time': time.strftime('%Y-%m-%dT%H:%M:%S'), 'n_moments': len(moments),
               'n_scenarios': len(scenarios), 'moments': rows, 'scenarios': live,
               'reading': len(done) + 1}
    RESULTS.mkdir(parents=True, exist_ok=True)
    READINGS.write_text(json.dumps(readings() + [reading], indent=1) + '\n', encoding='utf-8')
    print(f'reading {reading["reading"]} of {MAX_READINGS} recorded in '
          f'{READINGS.relative_to(ROOT)}')
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    sub = ap.add_subparsers(dest='cmd', required=True)
    m = sub.add_parser('moments')
    m.add_argument('--model', default='')
    m.add_argument('--tiers', nargs='+', default=['train', 'validation'],
                   choices=['train', 'validation'])
    m.add_argument('--quick', action='store_true', help='4 moments per capability and tier')
    m.add_argument('--per-author', type=int, default=0,
                   help='a sample of this many moments of each author (0: all)')
    m.add_argument('--fit', action='store_true')
    m.add_argument('--scores', default='')
    m.add_argument('--out', default='')
    s = sub.add_parser('sealed')
    s.add_argument('--model', default='')
    s.add_argument('--batch', default='issue-42')
    s.add_argument('--seeds', type=int, nargs='+', default=[1, 2])
    s.add_argument('--no-scenarios', action='store_true', help='the moments only')
    s.add_argument('--force', action='store_true',
                   help='read past the limit (the reading is still recorded)')
    a = ap.parse_args(argv)
    return moments_main(a) if a.cmd == 'moments' else sealed_main(a)


if __name__ == '__main__':
    random.seed(0)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    sys.exit(main())
