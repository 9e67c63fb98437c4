"""What kind of act a moment calls for, read from the moment by a model fitted on data.

Whether a person asked for a reply, an act of the body, a look into memory or a file, an act
on a thing in the scene, or nothing at all, is not written in any one word. The moment
arrives here as the sentence model's embeddings (through the memory node's `embed` query) of
six texts: the newest words heard, all the words heard, the goal, what is perceived, the last
act with what the world answered, and the lines memory gave back. A few facts of its shape
join them (was anything heard, did an act come since, is there a scene, did the last act
work). A multinomial logistic reading of that vector gives each class of act its
probability, among the classes the moment's candidates offer:
- `wait` (keep still), `reply` (a speech tool with words), `scene` (an act on a thing the
  world names);
- each of the robot's own tools by name, for the tools the training data chose often enough
  to be learned (the class list is part of the fitted model);
- `other`, every other tool.
Its log-probability for a candidate's class is the choice's term `understood` (scorers.py),
weighed with the others. The weights are fitted on the authored train tier
(bench/authored/probes.py), with the penalty chosen over held-out authors, and kept only when
they win on validation. Nothing here names a word: the words are read by the embedding, what
they call for by the fit.

Pure numpy; no ROS.
"""

from __future__ import annotations

from pathlib import Path
import re
from typing import Any, Mapping, Sequence

import numpy as np

PROBE_FILE = Path(__file__).with_name('probe.npz')
FIXED = ('wait', 'reply', 'scene', 'other')
N_TEXTS = 6
N_FLAGS = 8
FLOOR = -8.0             # the lowest log-probability a class is given (a term stays finite)
_QUOTED = re.compile(r'"([^"]+)"')


def class_of(tool: str | None, args: Mapping[str, Any], entities: Sequence[str],
             classes: Sequence[str], speech: Sequence[str]) -> str:
    """The class of an act: see the module docstring. `speech`: the tools that say words."""
    if tool is None:
        return 'wait'
    if tool in speech:
        return 'reply'
    if any(tool.endswith('_' + str(e)) for e in entities if str(e)):
        return 'scene'
    return tool if tool in classes else 'other'


def texts_of(g) -> list[str]:
    """The six texts of a grounding (choice.Grounding) the reading embeds."""
    lines = _QUOTED.findall(g.heard or '')
    newest = lines[-1] if lines else (g.heard or '')
    last = list(g.recent)[-1] if g.recent else None
    did = f'{last.tool}: {last.result}' if last is not None else ''
    seen = g.scene or g.percept or ''
    return [newest, g.heard or '', g.goal or '', seen, did, ' '.join(g.recalled)]


def flags_of(g) -> np.ndarray:
    last = list(g.recent)[-1] if g.recent else None
    return np.array([bool(g.heard), bool(g.recent), bool(g.entities), bool(g.recalled),
                     bool(last is not None and last.success), g.acts_since_heard == 0,
                     len(_QUOTED.findall(g.heard or '')) > 1, 1.0], dtype=np.float32)


def vector(embedded: np.ndarray, flags: np.ndarray) -> np.ndarray:
    """The reading's input: the six embeddings side by side, then the flags."""
    return np.concatenate([np.asarray(embedded, dtype=np.float32).reshape(-1),
                           np.asarray(flags, dtype=np.float32)])


def log_softmax(z: np.ndarray, offered: np.ndarray) -> np.ndarray:
    """Log-probabilities over the classes `offered` (a 0/1 mask per row); FLOOR elsewhere."""
    z = np.where(offered > 0, z, -np.inf)
    top = z.max(axis=-1, keepdims=True)
    out = z - top - np.log(np.exp(z - top).sum(axis=-1, keepdims=True))
    return np.maximum(np.where(offered > 0, out, FLOOR), FLOOR)


class Probe:
    """The fitted reading: classes, weights (input x classes), the input's standardisation,
    the embedder it was fitted on, and its provenance."""

    def __init__(self, classes: Sequence[str], W: np.ndarray, mean: np.ndarray,
                 scale: np.ndarray, embedder: str, dim: int,
                 provenance: Mapping | None = None):
        classes = tuple(str(c) for c in classes)
        if not set(FIXED) <= set(classes) or len(set(classes)) != len(classes):
            raise ValueError('the classes of a probe hold ' + ', '.join(FIXED) + ' once each')
        width = N_TEXTS * dim + N_FLAGS
        W = np.asarray(W, dtype=np.float32)
        if W.shape != (width, len(classes)):
            raise ValueError(f'a probe over {dim}-d embeddings has weights of shape '
                             f'{(width, len(classes))}, not {W.shape}')
        mean, scale = np.asarray(mean, np.float32), np.asarray(scale, np.float32)
        if mean.shape != (width,) or scale.shape != (width,) or not np.all(scale > 0):
            raise ValueError('the standardisation of a probe is one mean and one positive scale '
                             'per input')
        self.classes, self.W, self.mean, self.scale = classes, W, mean, scale
        self.embedder, self.dim = embedder, dim
        self.provenance = dict(provenance or {})

    def log_probs(self, x: np.ndarray, offered: Sequence[str]) -> dict[str, float]:
        """Each offered class's log-probability for input `x` (`vector`)."""
        x = np.asarray(x, dtype=np.float32)
        if x.shape != self.mean.shape:
            raise ValueError(f'the probe reads {self.dim}-d embeddings of {N_TEXTS} texts')
        mask = np.array([float(c in offered) for c in self.classes], dtype=np.float32)
        lp = log_softmax(((x - self.mean) / self.scale) @ self.W, mask)
        return {c: float(v) for c, v in zip(self.classes, lp) if c in offered}

    def save(self, path: Path = PROBE_FILE) -> None:
        import json
        np.savez_compressed(path, classes=np.array(self.classes), W=self.W, mean=self.mean,
                            scale=self.scale, embedder=np.array(self.embedder),
                            dim=np.array(self.dim),
                            provenance=np.array(json.dumps(self.provenance, sort_keys=True)))

    @classmethod
    def load(cls, path: Path = PROBE_FILE) -> 'Probe | None':
        """The probe in `path`, or None when there is none (the term is then 0). A file that
        is not a probe is an error that says so."""
        import json
        if not Path(path).is_file():
            return None
        try:
            with np.load(path, allow_pickle=False) as f:
                return cls([str(c) for c in f['classes']], f['W'], f['mean'], f['scale'],
                           str(f['embedder']), int(f['dim']),
                           json.loads(str(f['provenance'])))
        except (KeyError, ValueError, OSError) as exc:
            raise ValueError(f'{path}: not a probe of what a moment calls for ({exc})') \
                from exc
