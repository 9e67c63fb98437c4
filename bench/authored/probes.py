"""Probes of what a person wants, fitted on the authored train tier and measured on
validation: which reading of the words earns its place in the choice.

    python bench/authored/probes.py RUN.json [--embedder sentence|model] [--fit]

RUN.json is a `./maxim bench moments` run (its candidates, labels, features and the model's
likelihoods). For every candidate the probe reads a vector made of
- the words said to the robot (`u`), the goal (`g`) and the candidate's phrase (`v`), each as
  the sentence model's (or the GGUF model's) embedding;
- the candidate's kind (deliberation/probe.py `kind_of`: wait, speech, body, recall, read,
  scene act, ...), crossed with `u` and `g`: which words call for which kind of act;
- `u * v`: which thing the words name.
A conditional logit (a softmax over one moment's candidates, bench/decisions/fit.py) learns
its weights on train. Its score then joins the choice's other features as the term
`understood`; the weights of all the terms are refit on train with the probe's score taken
out-of-fold (a probe never scores a train moment it was fitted on), and both are measured on
validation beside the chooser without the probe. `--fit` writes the probe
(deliberation/probe.npz) and the refit weights (deliberation/weights.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
import sys
import time

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT / 'bench' / 'decisions'))

import evaluate  # noqa: E402
import fit as fitting  # noqa: E402
import tiers  # noqa: E402

from maxim_core.deliberation import probe as pr  # noqa: E402
from maxim_core.deliberation import scorers  # noqa: E402


def sentence_embedder():
    from maxim_memory.embedding import SentenceEmbedder
    model = SentenceEmbedder()
    return lambda texts: np.asarray(model.embed(list(texts)), dtype=np.float32)


def model_embedder(path: str = ''):
    """The GGUF model's own hidden states, mean-pooled by llama.cpp."""
    import llama_cpp
    from maxim_core.llm.model import resolve_model
    llm = llama_cpp.Llama(resolve_model(path), embedding=True, n_ctx=512, n_threads=2,
                          pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN, verbose=False)

    def embed(texts):
        out = []
        for t in texts:
            v = np.asarray(llm.embed(t or ' '), dtype=np.float32)
            out.append(v / max(1e-9, float(np.linalg.norm(v))))
        return np.stack(out) if out else np.zeros((0, llm.n_embd()), dtype=np.float32)
    return embed


class Cache:
    """Embeddings by text, computed once."""

    def __init__(self, embed):
        self.embed, self.vec = embed, {}

    def __call__(self, texts):
        missing = sorted({t for t in texts if t not in self.vec})
        for i in range(0, len(missing), 64):
            chunk = missing[i:i + 64]
            for t, v in zip(chunk, self.embed(chunk)):
                self.vec[t] = v
        return np.stack([self.vec[t] for t in texts])


def inputs(items, moments, cache) -> list[tuple]:
    """Per item: (said-words vector, goal vector, candidate phrase vectors, kinds)."""
    by_id = {m['id']: m for m in moments}
    out = []
    for it in items:
        s = tiers.to_situation(by_id[it['id']])
        u, g = cache([s['heard'], s['goal']])
        v = cache([c['phrase'] for c in it['cands']])
        kinds = [pr.kind_of(c['tool'], c['args']) for c in it['cands']]
        out.append((u, g, v, kinds))
    return out


def tensors(items, ins, dim):
    rows = [(it, x) for it, x in zip(items, ins)
            if any(c['label'] == 'right' for c in it['cands']) and len(it['cands']) > 1]
    n, cmax = len(rows), max(len(it['cands']) for it, _ in rows)
    d = pr.width(dim)
    X = np.zeros((n, cmax, d), dtype=np.float32)
    valid = np.zeros((n, cmax), dtype=bool)
    right = np.zeros((n, cmax), dtype=bool)
    for i, (it, (u, g, v, kinds)) in enumerate(rows):
        X[i, :len(kinds)] = pr.vectors(u, g, v, kinds)
        valid[i, :len(kinds)] = True
        right[i, :len(kinds)] = [c['label'] == 'right' for c in it['cands']]
    return (X, valid, right), [it for it, _ in rows]


def probe_scores(w, items, ins, dim) -> list[list[float]]:
    out = []
    for it, (u, g, v, kinds) in zip(items, ins):
        out.append([float(x) for x in pr.vectors(u, g, v, kinds) @ w])
    return out


def fit_probe(data, lam, iters=300):
    return fitting.fit(data, lam, iters=iters, lr=0.02)


def author_folds(items, k=4):
    authors = sorted({it['author'] for it in items})
    return [[a for i, a in enumerate(authors) if i % k == f] for f in range(k)]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('run')
    ap.add_argument('--embedder', choices=('sentence', 'model'), default='sentence')
    ap.add_argument('--lams', type=float, nargs='+', default=[1e-3, 1e-2, 3e-2])
    ap.add_argument('--fit', action='store_true')
    a = ap.parse_args(argv)
    run = json.loads(Path(a.run).read_text())
    items = run['items']
    moments = tiers.load_moments('train') + tiers.load_moments('validation')
    known = {m['id'] for m in moments}
    items = [it for it in items if it['id'] in known]
    t0 = time.monotonic()
    cache = Cache(sentence_embedder() if a.embedder == 'sentence' else model_embedder())
    ins = inputs(items, moments, cache)
    dim = len(ins[0][0])
    print(f'{len(items)} moments embedded ({a.embedder}, {dim}-d) in '
          f'{time.monotonic() - t0:.0f} s', flush=True)
    train = [i for i, it in enumerate(items) if it['split'] == 'train']
    val = [i for i, it in enumerate(items) if it['split'] == 'validation']
    sub = lambda idx: [items[i] for i in idx]          # noqa: E731
    subi = lambda idx: [ins[i] for i in idx]            # noqa: E731
    # The penalty by cross-validation over held-out train authors; then out-of-fold scores.
    folds = author_folds(sub(train))
    best, cv = None, {}
    for lam in a.lams:
        accs = []
        for hold in folds:
            tr = [i for i in train if items[i]['author'] not in hold]
            te = [i for i in train if items[i]['author'] in hold]
            data, _ = tensors(sub(tr), subi(tr), dim)
            w = fit_probe(data, lam)
            hd, _ = tensors(sub(te), subi(te), dim)
            accs.append(fitting.top1(w, hd))
        cv[lam] = float(np.mean(accs))
        print(f'  probe lambda {lam}: cv top-1 {cv[lam]:.3f} (held-out authors)', flush=True)
    best = max(cv, key=cv.get)
    oof = {}
    for hold in folds:
        tr = [i for i in train if items[i]['author'] not in hold]
        te = [i for i in train if items[i]['author'] in hold]
        data, _ = tensors(sub(tr), subi(tr), dim)
        w = fit_probe(data, best)
        for i, s in zip(te, probe_scores(w, sub(te), subi(te), dim)):
            oof[i] = s
    data, _ = tensors(sub(train), subi(train), dim)
    w_all = fit_probe(data, best)
    for i, s in zip(val, probe_scores(w_all, sub(val), subi(val), dim)):
        oof[i] = s
    for i, it in enumerate(items):
        for c, s in zip(it['cands'], oof.get(i, [0.0] * len(it['cands']))):
            c['features'] = dict(c['features'], understood=round(s, 5))
        it['templates'] = [it['author']]
    vd, _ = tensors(sub(val), subi(val), dim)
    report = {'embedder': a.embedder, 'dim': dim, 'lambda': best, 'cv': cv,
              'probe_alone': {'validation_top1': round(fitting.top1(w_all, vd), 4)}}
    names = list(scorers.FEATURES) + [n for n in ('understood',) if n not in scorers.FEATURES]
    ftrain = [dict(items[i], split='dev') for i in train]
    for label, feats in (('terms', [n for n in names if n != 'understood']),
                         ('terms+probe', names)):
        weights, info = fitting.fit_weights(ftrain, feats)
        X, valid, right = fitting.matrices(sub(val), feats)
        wv = np.array([weights.get(n, 0.0) for n in feats])
        report[label] = {'validation_top1': round(fitting.top1(wv, (X, valid, right)), 4),
                         'cv_top1': info['cv_top1'], 'lambda': info['lambda'],
                         'weights': weights}
        print(f'{label}: validation top-1 {report[label]["validation_top1"]:.3f} '
              f'(cv on train {info["cv_top1"]:.3f})', flush=True)
        how = evaluate.dec().by_weights(weights)
        report[label]['tiers'] = {t: evaluate.figures([it for it in items if it['split'] == t],
                                                      how) for t in ('train', 'validation')}
    report['fitted_before'] = {}
    if scorers.WEIGHTS_FILE.is_file():
        how = evaluate.dec().by_weights(dict(scorers.Weights.load(scorers.WEIGHTS_FILE).w))
        report['fitted_before'] = {t: evaluate.figures(
            [it for it in items if it['split'] == t], how) for t in ('train', 'validation')}
    print(evaluate.table({t: {w: report[w]['tiers'][t] if w != 'fitted_before'
                              else report[w][t] for w in ('fitted_before', 'terms',
                                                          'terms+probe')}
                          for t in ('train', 'validation')}, ['train', 'validation']))
    print(f'probe alone: validation top-1 {report["probe_alone"]["validation_top1"]:.3f}')
    out = ROOT / 'bench' / 'results' / f'probes-{a.embedder}-{time.strftime("%Y%m%d-%H%M%S")}.json'
    report.update({'run': Path(a.run).name, 'commit': run.get('commit'),
                   'model': run.get('model'), 'n_items': len(items)})
    out.write_text(json.dumps(report, indent=1) + '\n')
    print(f'results -> {out.relative_to(ROOT)}')
    if a.fit:
        # What wins on validation is kept; a tie keeps the simpler choice, without the probe.
        keep = 'terms+probe' if report['terms+probe']['validation_top1'] > \
            report['terms']['validation_top1'] else 'terms'
        if keep == 'terms+probe':
            pr.Probe(w_all, a.embedder, dim, {'lambda': best, 'cv_top1': cv[best],
                                              'results': out.name}).save(pr.PROBE_FILE)
            print(f'probe -> {pr.PROBE_FILE.relative_to(ROOT)}')
        elif pr.PROBE_FILE.is_file():
            pr.PROBE_FILE.unlink()
        prov = {'fitted_on': 'bench/authored train tier', 'results': out.name,
                'run': Path(a.run).name, 'commit': run.get('commit'),
                'model': run.get('model'), 'kept': keep,
                'validation_top1': report[keep]['validation_top1'],
                'validation': report[keep]['tiers']['validation']['overall'],
                'fit': {'lambda': report[keep]['lambda'], 'cv_top1': report[keep]['cv_top1']},
                'refit_by': 'python bench/authored/probes.py RUN --fit'}
        scorers.Weights(report[keep]['weights'], 'fitted', prov).save(scorers.WEIGHTS_FILE)
        print(f'kept {keep}; weights -> {scorers.WEIGHTS_FILE.relative_to(ROOT)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
