"""The decision benchmark: generated moments of the robot's life, the Mind's own candidates for
each, and how often each way of choosing puts a right act first.

    ./maxim bench decisions [--model PATH] [--per-family 36] [--fit] [--quick]

For every situation (bench/decisions/generate.py) it builds the Grounding the Mind would
build, asks the Mind's CandidateBuilder for candidates, scores them on the real model after
the diary's decision line, and computes every feature of the choice (scorers.py). It then
ranks the candidates five ways, all in the same run:

- random: the expected top-1 of a uniform pick;
- likelihood: the model's liking alone (PMI over the candidates' spread);
- hand: today's hand-set weights (`Weights.hand`);
- fitted: the weights in deliberation/weights.json (what the robot loads);
- refit: weights fitted now on this run's dev split (the conditional logit of fit.py, the
  penalty chosen by cross-validation on dev alone).

It reports top-1 and argument accuracy per family with Wilson 95% intervals on dev and on
test, the restraint family's wrong-act rate, and an ablation: the test top-1 of a refit
without each feature. `--fit` writes the refit weights to deliberation/weights.json with
their provenance (data hash, commit, model, dev and test figures). The JSON of the run,
per situation, goes to bench/results/decisions-<model>-<time>.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import os
from pathlib import Path
import random
import re
import subprocess
import sys
import time

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))

import fit as fitting  # noqa: E402
import generate  # noqa: E402
from score_cache import CachedBackend, load_scores  # noqa: E402

from maxim_core.deliberation import scorers, weights  # noqa: E402
from maxim_core.fear.patterns import call_danger as danger_of  # noqa: E402
from maxim_core.deliberation.candidates import GROUNDING_KEY  # noqa: E402
from maxim_core.deliberation.choice import ChoiceConfig  # noqa: E402
from maxim_core.deliberation.grounding import Grounding, RecentAct  # noqa: E402
from maxim_core.deliberation.words import said_words  # noqa: E402
from maxim_core.deliberation.stance import examples_from, Stance, STANCE_FILE  # noqa: E402
from maxim_core.deliberation.chooser import Chooser  # noqa: E402
from maxim_core.prompt.diary import Diary, DiaryEntry  # noqa: E402
from maxim_core.prompt.tools import ToolSpec  # noqa: E402
from maxim_core.tools.communication import RespondTool  # noqa: E402
from maxim_core.tools.introspection import introspection_tools  # noqa: E402
from maxim_core.tools.robot import robot_tools  # noqa: E402

RESULTS = ROOT / 'bench' / 'results'


# -- the situation as the Mind sees it ----------------------------------------------------------
def tools_for(s: dict) -> list:
    """The tools a situation offers: the robot's own classes, a scene's tools as specs."""
    robot = {t.name: t for t in robot_tools(None)}
    robot.update({t.name: t for t in introspection_tools(None)})
    robot['respond'] = RespondTool()
    robot['bash'] = ToolSpec('bash', 'Run a shell command in the workspace.', {
        'type': 'object', 'properties': {'command': {'type': 'string'}},
        'required': ['command']})
    robot.update(other_tools())
    out = []
    for t in s['tools']:
        if t.get('scene'):
            props = {k: {'type': 'string', 'description': d} for k, d in t['params'].items()}
            if t.get('secret') in props:
                props[t['secret']][GROUNDING_KEY] = 'recalled'
            out.append(ToolSpec(t['name'], t['description'], {
                'type': 'object', 'properties': props, 'required': list(props)}))
        else:
            out.append(robot[t['name']])
    return out


def other_tools() -> dict:
    """The workspace's, the voice's and the text worlds' own tools, as the Mind is offered
    them (their classes' names, descriptions and input schemas)."""
    from maxim_core.tools.communication import SpeakTool
    from maxim_core.tools import filesystem
    from maxim_eval.scenario import narrative
    out = {}
    for cls in (SpeakTool, filesystem.ReadFileTool, filesystem.WriteFileTool,
                filesystem.EditFileTool, filesystem.GlobTool, narrative.SayTool,
                narrative.ThinkTool, narrative.ExamineTool, narrative.PerceiveTool,
                narrative.SenseEntityTool):
        out[cls.name] = ToolSpec(cls.name, cls.description, dict(cls.input_schema))
    return out


def grounding_of(s: dict) -> Grounding:
    recent = [RecentAct(r['tool'], dict(r['args']), bool(r['success']), r.get('result', ''),
                        False, r['tool'] in ('memory_recall', 'predict_outcome'),
                        r.get('entity', ''), r.get('state', {})) for r in s['recent']]
    return Grounding(percept=s['percept'], goal=s['goal'], heard=s['heard'],
                     objects=s['objects'], people=s['people'], entities=s['entities'],
                     recalled=s['recalled'], recent=recent,
                     pains=[tuple(p) for p in s['pains']],
                     acts_since_news=s['acts_since_news'],
                     acts_since_heard=s['acts_since_heard'], scene=s['scene'],
                     someone_there=s['someone_there'], addressed=s['addressed'],
                     from_tool=s['from_tool'], name='Maxim', new=s.get('new', []),
                     aliases=s.get('aliases', {}))


def diary_of(s: dict, g: Grounding) -> Diary:
    history = [DiaryEntry(action=f'{r["tool"].replace("_", " ")}', result=r.get('result', ''))
               for r in s['recent']]
    return Diary(percept=s['percept'], goal=s['goal'], heard=s['heard'],
                 remembered=s['recalled'], history=history)


def matches(c, pattern: dict) -> bool:
    if c.tool != pattern['tool']:
        return False
    for k, want in pattern['args'].items():
        have = c.args.get(k)
        if isinstance(want, dict) and 're' in want:      # words the value must hold
            if not re.search(want['re'], str(have or ''), re.IGNORECASE):
                return False
        elif isinstance(want, (int, float)) and not isinstance(want, bool):
            if not isinstance(have, (int, float)) or abs(float(have) - want) > 1e-6:
                return False
        elif str(have or '').strip().lower() != str(want).strip().lower():
            return False
    return True


def label(c, s: dict) -> str:
    if any(matches(c, p) for p in s['right']):
        return 'right'
    if any(matches(c, p) for p in s['wrong']):
        return 'wrong'
    return 'other'


# -- the sentence model and the fear gate's patterns, as features --------------------------------
def sentence_model():
    """The memory node's sentence embedder (all-MiniLM-L6-v2, as the EC runs it), or None."""
    try:
        from maxim_memory.embedding import EmbedderError, SentenceEmbedder
    except ImportError as exc:
        print(f'sentence model not importable: {exc}', file=sys.stderr)
        return None
    try:
        return SentenceEmbedder()
    except EmbedderError as exc:
        print(f'sentence model unavailable: {exc}', file=sys.stderr)
        return None


def sentence_embed():
    """`embed(texts)`: the sentence model's vectors, what `memory/embed` answers the robot."""
    model = sentence_model()
    return None if model is None else (lambda texts: model.embed(list(texts)))


def sentence_relate():
    """The memory node's sentence embedder (all-MiniLM-L6-v2, as the EC runs it) as
    `relate(text, phrases)`: what `memory/relate` answers the robot."""
    try:
        from maxim_memory.embedding import EmbedderError, SentenceEmbedder
    except ImportError as exc:
        print(f'sentence model not importable: {exc}; similarity is 0', file=sys.stderr)
        return None
    try:
        model = SentenceEmbedder()
    except EmbedderError as exc:
        print(f'sentence model unavailable: {exc}; similarity is 0', file=sys.stderr)
        return None

    def relate(text, phrases):
        if not phrases:
            return []
        v = model.embed([text] + list(phrases))
        return [float(v[0] @ x) for x in v[1:]]
    return relate


# -- one pass over the situations on one model ----------------------------------------------------
def stance_examples(situations, chooser, provenance=None) -> Stance:
    """The stance's example clauses, from the dev split alone: what was said in each dev
    moment, and which of the Mind's candidates the moment's labels call right or wrong."""
    moments = []
    for s in situations:
        if s['split'] != 'dev':
            continue
        g = grounding_of(s)
        if not g.heard:
            continue
        cands = chooser.candidates(tools_for(s), g)
        moments.append((said_words(g.heard), g.names(),
                        [(c.phrase, label(c, s)) for c in cands
                         if c.tool is not None and 'speech' not in c.sources]))
    return examples_from(moments, provenance)


def featurise(situations, backend, relate, stance: Stance | None = None,
              embed=None) -> list[dict]:
    """Every candidate's features and likelihood, the sentence-model terms measured even
    where the shipped weights count them 0 (so a fit can weigh them)."""
    out = []
    chooser = Chooser(backend, ChoiceConfig(), relate=relate, danger=danger_of,
                      weights=weights.Weights.hand(ChoiceConfig()), measure_all=True,
                      stance=stance or Stance(), embed=embed)
    if stance is None:
        chooser.stance = stance_examples(situations, chooser)
    t0 = time.monotonic()
    for i, s in enumerate(situations):
        g = grounding_of(s)
        chooser._feared = {}
        cands = chooser.candidates(tools_for(s), g)
        prompt = diary_of(s, g).decide_prompt('')
        chooser.relevance(prompt, cands)
        raw = [c.relevance for c in cands]
        chooser.weigh(cands, g, '')
        out.append({'id': s['id'], 'family': s['family'], 'split': s['split'],
                    'cands': [{'tool': c.tool, 'args': c.args, 'phrase': c.phrase,
                               'sources': list(c.sources),
                               'label': label(c, s), 'likelihood': r,
                               'features': {k: round(v, 5) for k, v in c.features.items()
                                            if v}}
                              for c, r in zip(cands, raw)],
                    'templates': s.get('templates', []),
                    'arg_tools': sorted({p['tool'] for p in s['right'] if p['args']}),
                    'right_present': any(label(c, s) == 'right' for c in cands)})
        if (i + 1) % 50 == 0:
            print(f'  {i + 1}/{len(situations)} situations, '
                  f'{(time.monotonic() - t0) / (i + 1):.2f} s each', flush=True)
    return out


# -- judging -------------------------------------------------------------------------------------
def wilson(k: float, n: int, z: float = 1.96) -> list[float]:
    if n == 0:
        return [0.0, 0.0]
    p = k / n
    d = 1 + z * z / n
    mid = (p + z * z / (2 * n)) / d
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return [round(max(0.0, mid - half), 4), round(min(1.0, mid + half), 4)]


def pick(item, score) -> dict | None:
    cands = item['cands']
    return max(cands, key=score) if cands else None


def judge(items, how) -> dict:
    """Top-1, argument accuracy and the restraint family's wrong acts, per family, for a
    way of choosing `how(item) -> (chosen cand or None, expected top-1 or None)`."""
    fams: dict[str, dict] = {}
    for it in items:
        chosen, expect = how(it)
        ok = expect if expect is not None else float(
            chosen is not None and chosen['label'] == 'right')
        f = fams.setdefault(it['family'], {'n': 0, 'right': 0.0, 'arg_n': 0, 'arg_ok': 0,
                                           'wrong_acts': 0})
        f['n'] += 1
        f['right'] += ok
        if chosen is not None and chosen['tool'] in it['arg_tools']:
            f['arg_n'] += 1
            f['arg_ok'] += chosen['label'] == 'right'
        if it['family'] == 'restraint' and chosen is not None \
                and chosen['tool'] is not None:
            f['wrong_acts'] += 1
    out = {}
    tot = {'n': 0, 'right': 0.0, 'arg_n': 0, 'arg_ok': 0}
    for fam, f in sorted(fams.items()):
        out[fam] = {'n': f['n'], 'top1': round(f['right'] / f['n'], 4),
                    'top1_ci': wilson(f['right'], f['n'])}
        if f['arg_n']:
            out[fam]['args'] = round(f['arg_ok'] / f['arg_n'], 4)
        if fam == 'restraint':
            out[fam]['wrong_act_rate'] = round(f['wrong_acts'] / f['n'], 4)
        for k in tot:
            tot[k] += f[k]
    out['overall'] = {'n': tot['n'], 'top1': round(tot['right'] / max(1, tot['n']), 4),
                      'top1_ci': wilson(tot['right'], tot['n'])}
    if tot['arg_n']:
        out['overall']['args'] = round(tot['arg_ok'] / tot['arg_n'], 4)
        out['overall']['args_ci'] = wilson(tot['arg_ok'], tot['arg_n'])
    return out


def tie_aware(it, score):
    """The pick, and its expected top-1 when several candidates share the best score: the
    chooser breaks such a tie by the order the candidates came in, which says nothing, so a
    tie counts as the share of right candidates among those tied."""
    chosen = pick(it, score)
    if chosen is None:
        return None, None
    best = score(chosen)
    tied = [c for c in it['cands'] if abs(score(c) - best) <= 1e-9]
    if len(tied) == 1:
        return chosen, None
    return chosen, sum(c['label'] == 'right' for c in tied) / len(tied)


def by_weights(w: dict):
    def how(it):
        return tie_aware(it, lambda c: sum(w.get(k, 0.0) * v
                                           for k, v in c['features'].items()))
    return how


def by_likelihood(it):
    return tie_aware(it, lambda c: c['likelihood'])


def by_random(it):
    n = len(it['cands'])
    return None, (sum(c['label'] == 'right' for c in it['cands']) / n if n else 0.0)


def commit() -> str:
    try:
        return subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, text=True,
                              capture_output=True, timeout=10).stdout.strip() or 'unknown'
    except (OSError, subprocess.SubprocessError):
        return 'unknown'


def data_hash(situations) -> str:
    return hashlib.sha256(json.dumps(situations, sort_keys=True).encode()).hexdigest()[:16]


def evaluate(items, fitted_file: Path | None) -> dict:
    dev = [it for it in items if it['split'] == 'dev']
    test = [it for it in items if it['split'] == 'test']
    names = list(scorers.FEATURES)
    hand = dict(weights.Weights.hand(ChoiceConfig()).w)
    refit, info = fitting.fit_weights(dev, names)
    ways = {'random': by_random, 'likelihood': by_likelihood, 'hand': by_weights(hand),
            'refit': by_weights(refit)}
    if fitted_file is not None and fitted_file.is_file():
        ways['fitted'] = by_weights(dict(weights.Weights.load(fitted_file).w))
    report = {'fit': info, 'weights_refit': refit,
              'dev': {k: judge(dev, f) for k, f in ways.items()},
              'test': {k: judge(test, f) for k, f in ways.items()},
              'candidate_recall': {
                  split: round(sum(it['right_present'] for it in part) / max(1, len(part)), 4)
                  for split, part in (('dev', dev), ('test', test))}}
    # Ablation: the test top-1 of a refit without each feature the refit uses.
    base = report['test']['refit']['overall']['top1']
    abl = {}
    for name in sorted(refit):
        w, _ = fitting.fit_weights(dev, [n for n in names if n != name], lams=(info['lambda'],),
                                   folds=2)
        acc = judge(test, by_weights(w))['overall']['top1']
        abl[name] = {'test_top1_without': acc, 'drop': round(base - acc, 4)}
    report['ablation'] = abl
    return report


def table(report) -> str:
    lines = []
    fams = [f for f in report['test']['hand'] if f != 'overall'] + ['overall']
    ways = list(report['test'])
    for split in ('dev', 'test'):
        lines.append(f'\n{split} top-1 (args) by family:')
        lines.append('  ' + 'family'.ljust(14) + ''.join(w.rjust(16) for w in ways))
        for fam in fams:
            row = '  ' + fam.ljust(14)
            for w in ways:
                r = report[split][w].get(fam, {})
                cell = f"{r.get('top1', 0):.2f}"
                if 'args' in r:
                    cell += f" ({r['args']:.2f})"
                row += cell.rjust(16)
            lines.append(row)
    return '\n'.join(lines)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--model', default='', help='a GGUF (default: the embedded gemma-3-270m)')
    ap.add_argument('--per-family', type=int, default=36)
    ap.add_argument('--seed', type=int, default=7)
    ap.add_argument('--quick', action='store_true', help='6 situations per family and split')
    ap.add_argument('--fit', action='store_true',
                    help='write the refit weights to deliberation/weights.json')
    ap.add_argument('--features', default='', help='reuse a run JSON instead of the model')
    ap.add_argument('--scores', default='',
                    help="an earlier run's .scores.json: reuse the model's scores it holds, "
                         'ask the model only for the rest (score_cache.py)')
    ap.add_argument('--out', default='')
    a = ap.parse_args(argv)
    generate.check_disjoint()
    per = 6 if a.quick else a.per_family
    situations = generate.generate(per, a.seed)
    if a.features:
        prev = json.loads(Path(a.features).read_text())
        items, model_name = prev['items'], prev['model']
        stance = Stance(tuple(prev.get('stance', {}).get('asked', ())),
                        tuple(prev.get('stance', {}).get('dismissed', ())))
    else:
        from maxim_core.llm.llama import LlamaCppBackend
        from maxim_core.llm.model import resolve_model
        path = resolve_model(a.model)
        model_name = Path(path).name
        backend = CachedBackend(lambda: LlamaCppBackend(path, n_ctx=2048),
                                load_scores(Path(a.scores)) if a.scores else None)
        print(f'{len(situations)} situations on {model_name}', flush=True)
        try:
            stance = stance_examples(situations, Chooser(backend, ChoiceConfig(),
                                                         stance=Stance()))
            print(f'stance: {len(stance.asked)} asked and {len(stance.dismissed)} turned-away '
                  'example clauses from dev', flush=True)
            items = featurise(situations, backend, sentence_relate(), stance)
        finally:
            backend.close()
        print(f'scores: {backend.hits} reused, {backend.misses} from the model', flush=True)
    weights_file = weights.WEIGHTS_FILE
    report = evaluate(items, weights_file)
    run = {'benchmark': 'decisions', 'commit': commit(), 'model': model_name,
           'seed': a.seed, 'per_family': per, 'data_hash': data_hash(situations),
           'time': time.strftime('%Y-%m-%dT%H:%M:%S'),
           'scores_from': Path(a.scores).name if a.scores else None,
           **report,
           'stance': {'asked': list(stance.asked), 'dismissed': list(stance.dismissed)},
           'items': items}
    print(table(report))
    t = report['test']
    print(f"\ntest overall: random {t['random']['overall']['top1']:.2f}, likelihood "
          f"{t['likelihood']['overall']['top1']:.2f}, hand {t['hand']['overall']['top1']:.2f}, "
          f"refit {t['refit']['overall']['top1']:.2f}"
          + (f", fitted {t['fitted']['overall']['top1']:.2f}" if 'fitted' in t else ''))
    drops = sorted(report['ablation'].items(), key=lambda kv: -kv[1]['drop'])
    print('ablation (test top-1 drop without):',
          ', '.join(f'{k} {v["drop"]:+.2f}' for k, v in drops))
    RESULTS.mkdir(parents=True, exist_ok=True)
    stem = Path(model_name).stem.lower().replace('.', '_')
    out = Path(a.out) if a.out else \
        RESULTS / f'decisions-{stem}-{time.strftime("%Y%m%d-%H%M%S")}.json'
    out.write_text(json.dumps(run, separators=(',', ':')) + '\n')
    if not a.features:
        backend.save(out.with_name(out.stem + '.scores.json'))
    print(f'results -> {out.relative_to(ROOT) if out.is_relative_to(ROOT) else out}')
    if a.fit:
        prov = {'commit': run['commit'], 'model': model_name, 'data_hash': run['data_hash'],
                'seed': a.seed, 'per_family': per, 'fit': report['fit'],
                'dev_top1': report['dev']['refit']['overall']['top1'],
                'test_top1': report['test']['refit']['overall']['top1'],
                'results': out.name, 'refit_by': './maxim bench decisions --fit',
                'scores_from': run['scores_from']}
        weights.Weights(report['weights_refit'], 'fitted', prov).save(weights_file)
        print(f'weights -> {weights_file.relative_to(ROOT)}')
        if stance.ready:
            Stance(stance.asked, stance.dismissed,
                   {k: prov[k] for k in ('commit', 'data_hash', 'seed', 'per_family')}
                   | {'from': 'the dev split', 'refit_by': prov['refit_by']}).save(STANCE_FILE)
            print(f'stance examples -> {STANCE_FILE.relative_to(ROOT)}')
    return 0


if __name__ == '__main__':
    random.seed(0)
    os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
    sys.exit(main())
