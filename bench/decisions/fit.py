"""Fitting the choice's weights: a conditional logit (a softmax over one situation's
candidates) with an L2 penalty, in numpy.

Each situation contributes log(sum of the probabilities of its right candidates): the chooser
is rewarded for putting any right act first, and the penalty's strength is chosen by k-fold
cross-validation on the dev split alone. Features are scaled by their spread on dev before the
fit and the weights are returned in the features' own units, so `Weights.total` reads them as
they are.
"""

from __future__ import annotations

import numpy as np

# The direction a term may push, from what it means (a fit may weigh it 0, never turn it
# round): an act said not to be done, that hurt, that is dangerous or that was just done is
# never made more likely by it; one that deals with what stands in the way, that memory
# answers with, that is on the thing meant or asked for, never less; speech is never made
# more likely by a request that names an act on a thing ('named_act'). Without these, a fit
# used 'hurt' as a mark of the head's moves in the pain family (weight +6.4).
SIGNS = {'avoid': -1, 'hurt': -1, 'pain': -1,
         'danger': -1, 'failed': -1, 'done': -1, 'moot': -1, 'tool_used': -1, 'dull': -1,
         'goal': 1, 'obstacle': 1, 'memory_link': 1, 'memory_answer': 1, 'referent': 1,
         'novel': 1, 'resume': 1, 'frontier': 1, 'intent': 1, 'similarity': 1,
         'relevance': 1, 'value': 1, 'stance': 1,
         'related_answer': 1, 'named_act': -1, 'means': 1, 'elsewhere': 1,
         'speech_unasked': -1, 'perceived': 1,
         'goal_words': 1, 'said_to': 1, 'answer': 1, 'addressed': 1, 'restore': 1,
         # ('act_unasked' is left free: cross-validation on dev is better without its sign;
         # nobody speaking is where the world poses the problem as often as nothing is asked)
         # the wait candidate's: a met goal and acts that bring nothing are reasons to wait;
         # an open goal, one with a step left, and words just said to the robot are not
         'settled': 1, 'stale': 1, 'goal_open': -1, 'wait_heard': -1, 'step_left': -1,
         # the probe's reading of what a person wants, and how close a built reply is to
         # what was asked, only ever make an act more likely
         'understood': 1, 'answer_near': 1}


def fittable(items: list[dict]) -> list[dict]:
    """The situations a fit can learn from: a right candidate among several."""
    return [it for it in items if any(c['label'] == 'right' for c in it['cands'])
            and len(it['cands']) > 1]


def matrices(items: list[dict], names: list[str]):
    """(X situations x candidates x features, valid mask, right mask), padded."""
    rows = fittable(items)
    n, cmax, d = len(rows), max((len(it['cands']) for it in rows), default=1), len(names)
    X = np.zeros((n, cmax, d))
    valid = np.zeros((n, cmax), dtype=bool)
    right = np.zeros((n, cmax), dtype=bool)
    for i, it in enumerate(rows):
        for j, c in enumerate(it['cands']):
            X[i, j] = [c['features'].get(k, 0.0) for k in names]
            valid[i, j] = True
            right[i, j] = c['label'] == 'right'
    return X, valid, right


def _subset(data, idx):
    X, valid, right = data
    return X[idx], valid[idx], right[idx]


def _loss_grad(w, data, lam):
    X, valid, right = data
    s = np.where(valid, X @ w, -np.inf)
    s = s - s.max(axis=1, keepdims=True)
    p = np.exp(s)
    p /= p.sum(axis=1, keepdims=True)
    pr = np.maximum((p * right).sum(axis=1), 1e-12)
    q = (p * right) / pr[:, None]
    n = max(1, len(X))
    loss = -np.log(pr).sum() / n + lam * (w @ w)
    grad = -np.einsum('ncd,nc->d', X, q - p) / n + 2 * lam * w
    return loss, grad


def fit(data, lam: float, iters: int = 800, lr: float = 0.05,
        signs: np.ndarray | None = None) -> np.ndarray:
    """Adam on the penalised negative log-likelihood, projected onto `signs` (+1: >= 0,
    -1: <= 0, 0: free) after each step; deterministic."""
    d = data[0].shape[2]
    w = np.zeros(d)
    m, v = np.zeros(d), np.zeros(d)
    b1, b2 = 0.9, 0.999
    for t in range(1, iters + 1):
        _, g = _loss_grad(w, data, lam)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        w -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + 1e-8)
        if signs is not None:
            w = np.where(signs * w < 0, 0.0, w)
    return w


def top1(w, data) -> float:
    X, valid, right = data
    if not len(X):
        return 0.0
    s = np.where(valid, X @ w, -np.inf)
    # A tie at the top counts as the share of right candidates in it (see run.tie_aware).
    tied = valid & (s >= s.max(axis=1, keepdims=True) - 1e-9)
    return float(((tied & right).sum(axis=1) / tied.sum(axis=1)).mean())


LAMBDAS = (1e-3, 1e-2, 3e-2, 1e-1, 3e-1, 1.0)


def folds_of(items: list[dict], folds: int, seed: int) -> list[np.ndarray]:
    """Cross-validation folds that hold out whole phrasing templates: each fold's held-out
    situations are worded in ways none of its training situations is, as the test split is
    to dev (a situation with no template is held out on its own)."""
    rows = fittable(items)
    keys = [(it.get('family', ''), (it.get('templates') or [f'#{i}'])[0])
            for i, it in enumerate(rows)]
    # Dealt out family by family: each fold holds out some of every family's templates and
    # trains on the rest (a fold that held out both of a family's templates would measure
    # a family the fit never saw, and the choice of the penalty would follow that luck).
    rng = np.random.default_rng(seed)
    fold_of = {}
    for fam in sorted({f for f, _ in keys}):
        groups = sorted({k for k in keys if k[0] == fam})
        rng.shuffle(groups)
        start = int(rng.integers(folds))
        fold_of.update({g: (start + k) % folds for k, g in enumerate(groups)})
    return [np.array([i for i, key in enumerate(keys) if fold_of[key] == k], dtype=int)
            for k in range(folds)]


def fit_weights(items: list[dict], names: list[str], lams=LAMBDAS,
                folds: int = 4, seed: int = 0) -> tuple[dict, dict]:
    """Weights fitted on `items` (the dev split) with lambda chosen by cross-validation over
    held-out templates (`folds_of`): ({feature: weight} in the features' units, {'lambda',
    'cv_top1'})."""
    X, valid, right = matrices(items, names)
    if not len(X):
        raise ValueError('no situation with a right candidate to fit on')
    scale = X[valid].std(axis=0)
    scale[scale < 1e-9] = 1.0
    sdata = (X / scale, valid, right)
    signs = np.array([SIGNS.get(n, 0) for n in names], dtype=float)
    order = np.arange(len(X))
    cv, nll = {}, {}
    for lam in lams:
        accs, losses = [], []
        for hold in folds_of(items, folds, seed):
            if not len(hold):
                continue
            train = np.setdiff1d(order, hold)
            w = fit(_subset(sdata, train), lam, signs=signs)
            accs.append(top1(w, _subset(sdata, hold)))
            losses.append(_loss_grad(w, _subset(sdata, hold), 0.0)[0])
        cv[lam], nll[lam] = float(np.mean(accs)), float(np.mean(losses))
    # The best held-out top-1; among penalties that reach it, the one whose held-out
    # likelihood of the right acts is best (the margins that carry to moments not seen),
    # then the larger penalty.
    best = max(lams, key=lambda lam: (round(cv[lam], 4), -round(nll[lam], 4), lam))
    w = fit(sdata, best, signs=signs) / scale
    used = {n: float(x) for n, x in zip(names, w) if abs(x) > 1e-9}
    return used, {'lambda': best, 'cv_top1': round(cv[best], 4),
                  'cv': {str(k): round(v, 4) for k, v in cv.items()},
                  'cv_nll': {str(k): round(v, 4) for k, v in nll.items()}}
