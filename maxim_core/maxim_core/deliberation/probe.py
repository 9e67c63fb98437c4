"""A probe of what a person wants: a linear reading of sentence embeddings, learned from data.

What was heard, the goal and each candidate's phrase arrive as embeddings (the sentence
model's, through the memory node's `embed` query). The probe's score of a candidate is
`w . x`, where `x` holds
- `u * v` and `g * v`: which act and which thing the words (`u`) and the goal (`g`) name,
  dimension by dimension of the candidate's phrase (`v`);
- the candidate's kind crossed with `u` and `g`: which kind of act the words call for (a
  reply, an act, keeping still);
- the kind alone, and the cosine of `u` and of `g` with `v`.
`w` is fitted on the authored train tier (bench/authored/probes.py), with the penalty chosen
over held-out authors; its score is the choice's term `understood` (scorers.py), weighed with
the others. Nothing here names a word: the words are read by the embedding, the meaning by
the fit.

Pure numpy; no ROS.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np

PROBE_FILE = Path(__file__).with_name('probe.npz')
# What kind of act a candidate is, by how it is made: nothing (wait), words the model is
# still to write, words built from a source (a reply that carries something), anything else.
KINDS = ('wait', 'speech', 'reply', 'act')
_FREE = ('text', 'thought', 'message', 'question', 'reply', 'answer', 'utterance', 'speech',
         'content')


def kind_of(tool: str | None, args: Mapping[str, Any]) -> str:
    if tool is None:
        return 'wait'
    free = [k for k in args if k in _FREE]
    if not free:
        return 'act'
    return 'reply' if any(str(args[k]).strip() for k in free) else 'speech'


def width(dim: int) -> int:
    k = len(KINDS)
    return 2 * dim + 2 * k * dim + k + 2


def vectors(u: np.ndarray, g: np.ndarray, v: np.ndarray, kinds: Sequence[str]) -> np.ndarray:
    """The probe's input for each candidate (rows of `v`, kinds): candidates x width(dim)."""
    n, dim = v.shape
    k = len(KINDS)
    onehot = np.zeros((n, k), dtype=np.float32)
    for i, kind in enumerate(kinds):
        onehot[i, KINDS.index(kind)] = 1.0
    cross_u = (onehot[:, :, None] * u[None, None, :]).reshape(n, k * dim)
    cross_g = (onehot[:, :, None] * g[None, None, :]).reshape(n, k * dim)
    cos_u = (v @ u)[:, None]
    cos_g = (v @ g)[:, None]
    return np.concatenate([v * u[None, :], v * g[None, :], cross_u, cross_g, onehot, cos_u,
                           cos_g], axis=1).astype(np.float32)


class Probe:
    """The fitted weights, the embedder they were fitted on, and their provenance."""

    def __init__(self, w: np.ndarray, embedder: str, dim: int, provenance: Mapping | None = None):
        w = np.asarray(w, dtype=np.float32)
        if w.shape != (width(dim),):
            raise ValueError(f'a probe over {dim}-d embeddings has {width(dim)} weights, '
                             f'not {w.shape}')
        self.w, self.embedder, self.dim = w, embedder, dim
        self.provenance = dict(provenance or {})

    def scores(self, u: np.ndarray, g: np.ndarray, v: np.ndarray,
               kinds: Sequence[str]) -> np.ndarray:
        if u.shape != (self.dim,) or g.shape != (self.dim,) or v.shape[1:] != (self.dim,):
            raise ValueError(f'the probe reads {self.dim}-d embeddings')
        return vectors(u, g, v, kinds) @ self.w

    def save(self, path: Path = PROBE_FILE) -> None:
        import json
        np.savez_compressed(path, w=self.w, embedder=np.array(self.embedder),
                            dim=np.array(self.dim),
                            provenance=np.array(json.dumps(self.provenance, sort_keys=True)))

    @classmethod
    def load(cls, path: Path = PROBE_FILE) -> 'Probe | None':
        """The probe in `path`, or None when there is none (the term is then 0)."""
        import json
        if not Path(path).is_file():
            return None
        with np.load(path, allow_pickle=False) as f:
            return cls(f['w'], str(f['embedder']), int(f['dim']),
                       json.loads(str(f['provenance'])))
