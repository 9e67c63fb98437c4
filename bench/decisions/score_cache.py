"""The model's scores of one benchmark run, kept so a later run can reuse them.

Every `score(prompt, continuations)` the chooser asks during a run is answered and written to
a JSON file beside the run's results (`<run>.scores.json`). A later run given `--scores <that
file>` answers from the file what it holds and asks the model only for what it lacks (a
moment of a family that changed, a candidate the builder did not propose then); the model is
loaded on the first such call. So a changed scorer or a new term is measured on the very
likelihoods the model gave, in a minute instead of a quarter of an hour, and a changed family
costs only its own moments. The file holds the model's numbers only, keyed by the exact
prompt and continuation: a reused score is the score the model gives.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Callable, Sequence

from maxim_core.llm.backend import Completion


def _key(prompt: str, cont: str) -> str:
    return hashlib.sha256(f'{prompt}\x00{cont}'.encode()).hexdigest()[:24]


def load_scores(path: Path) -> dict[str, list]:
    try:
        scores = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ValueError(f'{path}: not a score file ({exc})') from exc
    if not isinstance(scores, dict):
        raise ValueError(f'{path}: not a score file (a {type(scores).__name__})')
    return scores


class CachedBackend:
    """Scores from `known` where it has them, from the model (`open_model()`, called once,
    on the first miss) where not; every score given is kept in `scores` for `save`."""

    def __init__(self, open_model: Callable[[], object], known: dict | None = None,
                 model_name: str = ''):
        self.open_model, self.model = open_model, None
        self.known = dict(known or {})
        self.scores: dict[str, list] = {}
        self.hits = self.misses = 0
        self.n_ctx = 2048

    def score(self, prompt: str, continuations: Sequence[str]) -> Completion:
        keys = [_key(prompt, c) for c in continuations]
        if all(k in self.known for k in keys):
            self.hits += len(keys)
            got = [self.known[k] for k in keys]
            for k, v in zip(keys, got):
                self.scores[k] = v
            return Completion('', logprobs=[float(v[0]) for v in got],
                              token_counts=[int(v[1]) for v in got])
        missing = [i for i, k in enumerate(keys) if k not in self.known]
        if self.model is None:
            self.model = self.open_model()
        self.misses += len(missing)
        self.hits += len(keys) - len(missing)
        # Each continuation is scored on its own after the prompt, so only the ones the file
        # lacks are asked of the model: a run that adds one candidate pays for that one.
        done = self.model.score(prompt, [continuations[i] for i in missing])
        for i, lp, n in zip(missing, done.logprobs, done.token_counts):
            self.known[keys[i]] = [float(lp), int(n)]
        got = [self.known[k] for k in keys]
        for k, v in zip(keys, got):
            self.scores[k] = v
        return Completion('', logprobs=[float(v[0]) for v in got],
                          token_counts=[int(v[1]) for v in got])

    def close(self) -> None:
        if self.model is not None:
            self.model.close()
            self.model = None

    def save(self, path: Path) -> None:
        path.write_text(json.dumps(self.scores, separators=(',', ':')) + '\n')
