"""The probe of what kind of act a moment calls for (deliberation/probe.py), fitted on the
authored train tier and measured on validation, and the choice's weights refit with it.

    python bench/authored/probes.py RUN.json [--generated DEC.json] [--fit]

The probe reads every train moment (its texts as the sentence model's embeddings, and the
facts of its shape) and learns which class of act its right acts are: a multinomial logistic
regression over the classes the moment offers, its penalty the one that reads validation
best. Each train moment is read by a probe fitted without it (out-of-fold), so the weights
that are then fitted on train do not learn to trust a reading of their own data.

RUN.json is a `./maxim bench moments` run (its candidates, labels, features and the model's
likelihoods): the probe's log-probability of each candidate's class becomes its term
`understood`, and the weights of all the terms are refit on train, with and without it.
`--generated DEC.json` (a `./maxim bench decisions` run) adds the generator's dev situations
to what the weights are fitted on (its plots are the shipped scenarios' kind). Both are
measured on validation beside the weights shipped; `--fit` keeps what wins on validation
(deliberation/probe.npz and deliberation/weights.json).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
import sys
import tempfile
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
from maxim_core.deliberation.chooser import REPLY_TOOLS  # noqa: E402

MIN_SHARE = 0.01         # a tool is a class of its own when this share of train moments uses it


def sentence_embedder():
    from maxim_memory.embedding import SentenceEmbedder
    model = SentenceEmbedder()
    return lambda texts: np.asarray(model.embed(list(texts)), dtype=np.float32)


class Cache:
    """Embeddings by text, computed once, and kept in `path` (when given) for the next run:
    the texts of 3,000 moments take minutes to embed."""

    def __init__(self, embed, path: Path | None = None):
        self.embed, self.vec, self.path = embed, {}, path
        if path is not None and path.is_file():
            with np.load(path, allow_pickle=False) as f:
                self.vec = dict(zip((str(t) for t in f['texts']), f['vecs']))

    def __call__(self, texts):
        missing = sorted({t for t in texts if t not in self.vec})
        for i in range(0, len(missing), 64):
            chunk = missing[i:i + 64]
            for t, v in zip(chunk, self.embed(chunk)):
                self.vec[t] = v
        return np.stack([self.vec[t] for t in texts])

    def save(self) -> None:
        if self.path is not None and self.vec:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            texts = list(self.vec)
            np.savez(self.path, texts=np.array(texts), vecs=np.stack([self.vec[t]
                                                                      for t in texts]))


def readings_input(moments, cache):
    """Per moment: the probe's input vector, the tools it offers and its right tools, read
    through the same grounding the choice gets (bench/decisions/run.py grounding_of)."""
    out = []
    for m in moments:
        g = evaluate.dec().grounding_of(tiers.to_situation(m))
        x = pr.vector(cache(pr.texts_of(g)), pr.flags_of(g))
        out.append((x, list(g.entities), [None] + list(m['tools']),
                    [p['tool'] for p in m['right']]))
    return out


def classes_of(train) -> tuple[str, ...]:
    """The fixed classes, and each tool right in at least MIN_SHARE of train moments."""
    counts: dict[str, int] = {}
    for _, ents, _, right in train:
        for t in set(right):
            if t is not None and t not in REPLY_TOOLS and \
                    pr.class_of(t, {}, ents, (), REPLY_TOOLS) == 'other':
                counts[t] = counts.get(t, 0) + 1
    own = sorted(t for t, n in counts.items() if n >= MIN_SHARE * len(train))
    return pr.FIXED + tuple(own)


def reading_tensors(rows, classes):
    X = np.stack([x for x, _, _, _ in rows])
    offered = np.zeros((len(rows), len(classes)), dtype=np.float32)
    right = np.zeros((len(rows), len(classes)), dtype=bool)
    for i, (_, ents, tools, rt) in enumerate(rows):
        for t in tools:
            offered[i, classes.index(pr.class_of(t, {}, ents, classes,
                                                 REPLY_TOOLS))] = 1
        for t in rt:
            right[i, classes.index(pr.class_of(t, {}, ents, classes,
                                               REPLY_TOOLS))] = True
    return X, offered, right & (offered > 0)


def fit_reading(X, offered, right, lam, iters=300, lr=0.05):
    """Adam on the penalised negative log-likelihood that the class is one of the right
    ones; returns (W, mean, scale). Deterministic."""
    mean, scale = X.mean(0), X.std(0) + 1e-6
    Z0 = (X - mean) / scale
    keep = right.any(1)
    Z0, off, R = Z0[keep], offered[keep], right[keep]
    W = np.zeros((X.shape[1], R.shape[1]))
    m1, m2 = np.zeros_like(W), np.zeros_like(W)
    for t in range(1, iters + 1):
        lp = pr.log_softmax(Z0 @ W, off)
        P = np.exp(lp) * (off > 0)
        mass = (P * R).sum(1, keepdims=True) + 1e-12
        G = Z0.T @ (P - P * R / mass) / len(Z0) + lam * W
        m1 = 0.9 * m1 + 0.1 * G
        m2 = 0.999 * m2 + 0.001 * G * G
        W -= lr * (m1 / (1 - 0.9 ** t)) / (np.sqrt(m2 / (1 - 0.999 ** t)) + 1e-8)
    return W.astype(np.float32), mean.astype(np.float32), scale.astype(np.float32)


def class_accuracy(fitted, X, offered, right) -> float:
    W, mean, scale = fitted
    lp = pr.log_softmax(((X - mean) / scale) @ W, offered)
    return float(right[np.arange(len(X)), lp.argmax(1)].mean())


def fit_probe(train_moments, val_moments, cache, lams, dim, folds=5):
    """The probe fitted on all of train, its penalty the one whose fit reads validation's
    classes best, and each train moment's out-of-fold log-probabilities (id -> {class: lp}).

    The folds are of moments, not authors: each capability has one train author, so a fold
    without an author would be a fold without a capability, which no validation moment is
    (validation's authors wrote the same capabilities)."""
    rows = readings_input(train_moments, cache)
    classes = classes_of(rows)
    X, off, R = reading_tensors(rows, classes)
    Xv, offv, Rv = reading_tensors(readings_input(val_moments, cache), classes)
    by_lam = {}
    for lam in lams:
        fitted = fit_reading(X, off, R, lam)
        by_lam[lam] = (class_accuracy(fitted, Xv, offv, Rv), fitted)
        print(f'  probe lambda {lam}: validation class accuracy {by_lam[lam][0]:.3f}',
              flush=True)
    best = max(by_lam, key=lambda lam: by_lam[lam][0])
    fold = np.random.default_rng(7).permutation(len(rows)) % folds
    oof = {}
    for f in range(folds):
        h = fold == f
        W, mean, scale = fit_reading(X[~h], off[~h], R[~h], best)
        lp = pr.log_softmax(((X[h] - mean) / scale) @ W, off[h])
        for m, row in zip([m for m, x in zip(train_moments, h) if x], lp):
            oof[m['id']] = dict(zip(classes, row.tolist()))
    acc, (W, mean, scale) = by_lam[best]
    probe = pr.Probe(classes, W, mean, scale, 'sentence', dim,
                     {'lambda': best, 'validation_class_accuracy': round(acc, 4),
                      'fitted_on': 'bench/authored train tier', 'moments': len(rows)})
    return probe, oof, {lam: round(a, 4) for lam, (a, _) in by_lam.items()}


def probe_readings(probe, moments, cache) -> dict:
    out = {}
    rows = readings_input(moments, cache)
    for m, (x, ents, tools, _) in zip(moments, rows):
        offered = {pr.class_of(t, {}, ents, probe.classes, REPLY_TOOLS)
                   for t in tools}
        out[m['id']] = probe.log_probs(x, offered)
    return out


def with_understood(items, lps, moments):
    """Each candidate's `understood`: the log-probability of its class in its moment."""
    by_id = {m['id']: m for m in moments}
    for it in items:
        lp = lps.get(it['id'])
        ents = by_id[it['id']]['entities'] if it['id'] in by_id else []
        for c in it['cands']:
            k = pr.class_of(c['tool'], c['args'], ents, tuple(lp) if lp else (),
                            REPLY_TOOLS)
            c['features'] = dict(c['features'], understood=round(
                lp.get(k, pr.FLOOR), 5) if lp else 0.0)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('run')
    ap.add_argument('--generated', default='',
                    help='a decisions run whose dev situations the weights are fitted on too')
    ap.add_argument('--lams', type=float, nargs='+', default=[1e-3, 1e-2, 1e-1])
    ap.add_argument('--fit', action='store_true')
    a = ap.parse_args(argv)
    run = json.loads(Path(a.run).read_text())
    train_m, val_m = tiers.load_moments('train'), tiers.load_moments('validation')
    known = {m['id'] for m in train_m + val_m}
    items = [it for it in run['items'] if it['id'] in known]
    t0 = time.monotonic()
    cache = Cache(sentence_embedder(), Path(tempfile.gettempdir()) / 'maxim-bench' /
                  'sentence-embeddings.npz')
    dim = len(cache(['a'])[0])
    probe, oof, cv = fit_probe(train_m, val_m, cache, a.lams, dim)
    lps = dict(oof)
    lps.update(probe_readings(probe, val_m, cache))
    acc_v = probe.provenance['validation_class_accuracy']
    cache.save()
    print(f'probe: {len(probe.classes)} classes, validation class accuracy {acc_v:.3f} '
          f'({time.monotonic() - t0:.0f} s)', flush=True)
    with_understood(items, lps, train_m + val_m)
    for it in items:
        it['templates'] = [it['author']]
    generated = []
    if a.generated:
        gen = json.loads(Path(a.generated).read_text())
        generated = [dict(it, split='dev', author='generated',
                          cands=[dict(c, features=dict(c['features'], understood=0.0))
                                 for c in it['cands']])
                     for it in gen['items'] if it['split'] == 'dev']
    report = {'probe': {'classes': list(probe.classes), 'lambda': probe.provenance['lambda'],
                        'by_lambda': cv, 'validation_class_accuracy': acc_v},
              'generated': len(generated)}
    names = list(scorers.FEATURES) + [n for n in ('understood',) if n not in scorers.FEATURES]
    train = [it for it in items if it['split'] == 'train']
    ftrain = [dict(it, split='dev') for it in train] + generated
    for label, feats in (('terms', [n for n in names if n != 'understood']),
                         ('terms+probe', names)):
        weights, info = fitting.fit_weights(ftrain, feats)
        how = evaluate.dec().by_weights(weights)
        report[label] = {'cv_top1': info['cv_top1'], 'lambda': info['lambda'],
                         'weights': weights,
                         'tiers': {t: evaluate.figures([it for it in items
                                                        if it['split'] == t], how)
                                   for t in ('train', 'validation')}}
        report[label]['validation_top1'] = report[label]['tiers']['validation']['overall'][
            'top1']
        print(f'{label}: validation top-1 {report[label]["validation_top1"]:.3f} '
              f'(cv on train {info["cv_top1"]:.3f})', flush=True)
    report['fitted_before'] = {}
    if scorers.WEIGHTS_FILE.is_file():
        how = evaluate.dec().by_weights(dict(scorers.Weights.load(scorers.WEIGHTS_FILE).w))
        report['fitted_before'] = {t: evaluate.figures(
            [it for it in items if it['split'] == t], how) for t in ('train', 'validation')}
    print(evaluate.table({t: {w: report[w]['tiers'][t] if w != 'fitted_before'
                              else report[w][t] for w in ('fitted_before', 'terms',
                                                          'terms+probe')}
                          for t in ('train', 'validation')}, ['train', 'validation']))
    stamp = time.strftime('%Y%m%d-%H%M%S')
    out = ROOT / 'bench' / 'results' / f'probes-kind-{stamp}.json'
    report.update({'run': Path(a.run).name, 'generated_run': Path(a.generated).name
                   if a.generated else None, 'commit': run.get('commit'),
                   'model': run.get('model'), 'n_items': len(items)})
    out.write_text(json.dumps(report, indent=1) + '\n')
    print(f'results -> {out.relative_to(ROOT)}')
    if a.fit:
        # What wins on validation is kept; a tie keeps the simpler choice, without the probe.
        keep = 'terms+probe' if report['terms+probe']['validation_top1'] > \
            report['terms']['validation_top1'] else 'terms'
        if keep == 'terms+probe':
            probe.provenance['results'] = out.name
            probe.save(pr.PROBE_FILE)
            print(f'probe -> {pr.PROBE_FILE.relative_to(ROOT)}')
        elif pr.PROBE_FILE.is_file():
            pr.PROBE_FILE.unlink()
        prov = {'fitted_on': 'bench/authored train tier' + (
                    " and the generator's dev situations" if generated else ''),
                'results': out.name, 'run': Path(a.run).name, 'commit': run.get('commit'),
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
