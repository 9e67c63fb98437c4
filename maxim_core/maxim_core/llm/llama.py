"""`LlamaCppBackend`: the Backend on a real GGUF through llama-cpp-python.

Why a sampling loop of our own rather than `Llama.create_completion`: llama-cpp-python puts
the grammar sampler in front of top-k, so every generated token checks the grammar against
the whole vocabulary (262k tokens for gemma 3): constrained decoding ran at ~0.35 of the
unconstrained speed. We sample as llama.cpp's own `common_sampler` does: the normal chain
picks a token, the grammar checks only that token, and only when it is rejected is the
grammar applied to the whole vocabulary and the token drawn again. The prompt goes through
`Llama.eval`, keeping its KV cache: the longest common token prefix with the previous call is
reused (never reset between calls), so a stable prompt head costs nothing the second time.
"""

from dataclasses import dataclass
import codecs
import collections
import ctypes
import json
import os
import threading
import time
from typing import Callable, Sequence

import llama_cpp
import numpy as np

from maxim_core.llm.backend import (BAD_REQUEST, Completion, GrammarCompileError, LLMError,
                                    MODEL_ERROR, pieces_to_avoid, STOP_CANCELLED, STOP_EOS,
                                    STOP_LENGTH, STOP_TIMEOUT, TIMEOUT, TokenCallback,
                                    UNAVAILABLE)

_GRAMMAR_CACHE_SIZE = 16
_TOKEN_DTYPE = np.dtype([('id', np.int32), ('logit', np.float32), ('p', np.float32)],
                        align=True)


# Llama() takes no sequence count: its context parameters come from this function, which is
# wrapped while our model is constructed (one construction at a time).
_PARAMS_LOCK = threading.Lock()


def _llama_with_sequences(n_seq_max: int, **kw) -> 'llama_cpp.Llama':
    """`llama_cpp.Llama(**kw)` whose context holds `n_seq_max` sequences in one KV cache
    (kv_unified): a sequence copy is a tag on the prompt's cells, not a copy, so candidates
    can be scored side by side in one batch (`LlamaCppBackend.score`)."""
    module = llama_cpp.llama_cpp
    original = module.llama_context_default_params

    def params():
        p = original()
        p.n_seq_max = n_seq_max
        p.kv_unified = True
        return p
    with _PARAMS_LOCK:
        module.llama_context_default_params = params
        try:
            return llama_cpp.Llama(**kw)
        finally:
            module.llama_context_default_params = original


def _logprob(logits: np.ndarray, token: int) -> float:
    """log softmax(logits)[token], without materialising the whole distribution."""
    top = float(logits.max())
    return float(logits[token]) - top - float(np.log(np.exp(logits - top).sum(dtype=np.float64)))


@dataclass
class LlamaCompletion(Completion):
    """A Completion with what llama.cpp tells besides."""

    cached_tokens: int = 0     # prompt tokens reused from the KV cache
    stop_sequence: str = ''    # the stop string that ended the answer, if one did


def _stop_holdback(text: str, stops: Sequence[str]) -> int:
    """How many trailing characters of `text` could still begin a stop sequence."""
    hold = 0
    for s in stops:
        for k in range(min(len(s) - 1, len(text)), hold, -1):
            if text.endswith(s[:k]):
                hold = k
                break
    return hold


def render_plain_chat(messages: Sequence[dict]) -> str:
    """A plain-text rendering for models without a chat template (base models).

    The system text comes first as it is, then `User:` / `Assistant:` turns, ending with an
    open `Assistant:` turn for the model to complete.
    """
    parts = []
    for m in messages:
        role, content = m.get('role', ''), m.get('content', '')
        if role == 'system':
            parts.append(f'{content}\n')
        elif role == 'user':
            parts.append(f'User: {content}\n')
        elif role == 'assistant':
            parts.append(f'Assistant: {content}\n')
        else:
            raise LLMError(BAD_REQUEST, f'unknown chat role {role!r}')
    return ''.join(parts) + 'Assistant:'


class LlamaCppBackend:
    """A Backend on `llama_cpp.Llama`; one inference at a time (a lock), thread-safe."""

    def __init__(self, model_path: str, n_ctx: int = 4096, n_threads: int = 2,
                 n_batch: int = 512, seed: int = llama_cpp.LLAMA_DEFAULT_SEED,
                 verbose: bool = False, grammar_prefilter: int = 2048,
                 clock: Callable[[], float] = time.monotonic, score_sequences: int = 32,
                 n_threads_batch: int = 0):
        if not os.path.isfile(model_path):
            raise LLMError(UNAVAILABLE, f'no model file at {model_path}')
        if score_sequences < 1:
            raise LLMError(BAD_REQUEST, f'score_sequences must be >= 1, got {score_sequences}')
        # Decoding and reading a prompt may take different thread counts (n_threads_batch 0:
        # the same): two threads decoding meet at every token, and on two cores shared with
        # other work one preempted thread stalls both (see bench/README.md).
        kw = dict(model_path=model_path, n_ctx=n_ctx, n_threads=n_threads,
                  n_threads_batch=n_threads_batch or n_threads, n_batch=n_batch, seed=seed,
                  verbose=verbose)
        try:
            self.llm = (_llama_with_sequences(score_sequences, **kw) if score_sequences > 1
                        else llama_cpp.Llama(**kw))
        except (ValueError, RuntimeError) as exc:
            raise LLMError(MODEL_ERROR, f'llama.cpp could not load {model_path}: {exc}') from exc
        # Sequences beside the prompt's own (0) for scoring candidates side by side.
        self.score_sequences = max(0, int(llama_cpp.llama_n_seq_max(self.llm._ctx.ctx)) - 1)
        self.model_path = model_path
        self.model_name = os.path.basename(model_path)
        self.n_ctx = self.llm.n_ctx()
        self.clock = clock
        self._vocab = self.llm._model.vocab
        self._n_vocab = self.llm.n_vocab()
        self._lock = threading.Lock()
        self._grammars: collections.OrderedDict = collections.OrderedDict()
        self._schema_gbnf: dict[str, str] = {}
        self._ids = np.arange(self._n_vocab, dtype=np.int32)
        self._cur = np.zeros(self._n_vocab, dtype=_TOKEN_DTYPE)
        self._one = llama_cpp.llama_token_data()
        self._buf = ctypes.create_string_buffer(256)
        self._pieces: dict[int, bytes] = {}
        self._piece_ids: dict[bytes, list[int]] | None = None    # built at the first avoid
        self.rejections = 0       # grammar resamples (for the bench)
        self.full_resamples = 0   # of which over the whole vocabulary
        self.grammar_prefilter = grammar_prefilter
        self._prefilter = llama_cpp.llama_sampler_init_top_k(max(1, grammar_prefilter))
        self.chat_template = self.llm.metadata.get('tokenizer.chat_template', '')
        self.last_cached_tokens = 0

    # -- tokenizer ---------------------------------------------------------------------------
    def tokenize(self, text: str, add_bos: bool = False) -> list[int]:
        """The model's own tokens for `text` (the vocabulary is read-only: no lock needed)."""
        if self.llm is None:
            raise LLMError(UNAVAILABLE, 'the model is closed')
        return self.llm.tokenize(text.encode('utf-8'), add_bos=add_bos, special=True)

    def format_chat(self, messages: Sequence[dict]) -> str:
        """`messages` ({role, content}) as a prompt: the GGUF's chat template when it has one,
        else `render_plain_chat` (gemma-3-270m is a base model: its GGUF carries none)."""
        if not self.chat_template:
            return render_plain_chat(messages)
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter
        bos = self.llm._model.token_get_text(self.llm.token_bos())
        eos = self.llm._model.token_get_text(self.llm.token_eos())
        formatter = Jinja2ChatFormatter(self.chat_template, eos_token=eos, bos_token=bos)
        prompt = formatter(messages=list(messages)).prompt
        return prompt[len(bos):] if bos and prompt.startswith(bos) else prompt  # we add BOS

    # -- grammars ----------------------------------------------------------------------------
    def grammar_for(self, json_schema: dict | None = None, grammar: str | None = None):
        """The compiled grammar sampler for a GBNF text or a JSON schema (cached: compiling
        a schema costs), or None. Raises GrammarCompileError."""
        if grammar:
            gbnf = grammar
        elif json_schema:
            key = json.dumps(json_schema, sort_keys=True)
            gbnf = self._schema_gbnf.get(key)
            if gbnf is None:
                try:
                    gbnf = llama_cpp.llama_grammar.json_schema_to_gbnf(json.dumps(json_schema))
                except (ValueError, KeyError, TypeError, NotImplementedError) as exc:
                    raise GrammarCompileError(f'the JSON schema did not convert: {exc}') \
                        from exc
                if len(self._schema_gbnf) >= 64:
                    self._schema_gbnf.clear()
                self._schema_gbnf[key] = gbnf
        else:
            return None
        sampler = self._grammars.get(gbnf)
        if sampler is not None:
            self._grammars.move_to_end(gbnf)
            return sampler
        sampler = llama_cpp.llama_sampler_init_grammar(
            self._vocab, gbnf.encode('utf-8'), b'root')
        if not sampler:
            raise GrammarCompileError('the GBNF grammar did not compile (llama.cpp logs the '
                                      'parse error)')
        self._grammars[gbnf] = sampler
        while len(self._grammars) > _GRAMMAR_CACHE_SIZE:
            _, old = self._grammars.popitem(last=False)
            llama_cpp.llama_sampler_free(old)
        return sampler

    # -- generation --------------------------------------------------------------------------
    def _chain(self, temperature, top_p, top_k, min_p, repeat_penalty, seed):
        chain = llama_cpp.llama_sampler_chain_init(
            llama_cpp.llama_sampler_chain_default_params())
        add = llama_cpp.llama_sampler_chain_add
        if repeat_penalty != 1.0:
            add(chain, llama_cpp.llama_sampler_init_penalties(
                self._n_vocab, self.llm.last_n_tokens_size, repeat_penalty, 0.0, 0.0))
        if temperature == 0.0:
            add(chain, llama_cpp.llama_sampler_init_greedy())
            return chain
        if top_k > 0:
            add(chain, llama_cpp.llama_sampler_init_top_k(top_k))
        add(chain, llama_cpp.llama_sampler_init_top_p(top_p, 1))
        if min_p > 0.0:
            add(chain, llama_cpp.llama_sampler_init_min_p(min_p, 1))
        add(chain, llama_cpp.llama_sampler_init_temp(temperature))
        add(chain, llama_cpp.llama_sampler_init_dist(
            llama_cpp.LLAMA_DEFAULT_SEED if seed < 0 else seed & 0xFFFFFFFF))
        return chain

    def _piece(self, token: int) -> bytes:
        """The bytes of one token (cached: the vocabulary never changes)."""
        piece = self._pieces.get(token)
        if piece is None:
            n = llama_cpp.llama_token_to_piece(self._vocab, token, self._buf, len(self._buf),
                                               0, False)
            if n < 0:
                raise LLMError(MODEL_ERROR, f'token {token} has no text piece of <= 256 bytes')
            piece = self._pieces[token] = bytes(self._buf[:n])
        return piece

    def _candidates(self):
        """The whole vocabulary with the last position's logits, as a token data array."""
        logits = llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, -1)
        self._cur['id'] = self._ids
        self._cur['logit'] = np.ctypeslib.as_array(logits, shape=(self._n_vocab,))
        self._cur['p'] = 0.0
        data = self._cur.ctypes.data_as(llama_cpp.llama_token_data_p)
        return llama_cpp.llama_token_data_array(data, self._n_vocab, -1, False)

    def _sample(self, chain, grammar) -> int:
        # The chain draws in C (as create_completion does) and accepts the token; a token the
        # grammar rejects stays in the chain's repeat-penalty history, a negligible skew.
        token = llama_cpp.llama_sampler_sample(chain, self.llm._ctx.ctx, -1)
        if grammar is not None:
            self._one.id, self._one.logit, self._one.p = token, 1.0, 0.0
            one = llama_cpp.llama_token_data_array(ctypes.pointer(self._one), 1, -1, False)
            llama_cpp.llama_sampler_apply(grammar, ctypes.byref(one))
            if one.data[0].logit == float('-inf'):   # rejected: draw again under the grammar
                self.rejections += 1
                token = self._resample(chain, grammar)
                llama_cpp.llama_sampler_accept(chain, token)
            llama_cpp.llama_sampler_accept(grammar, token)
        return int(token)

    def _resample(self, chain, grammar) -> int:
        """Draw under the grammar: first among the `grammar_prefilter` likeliest tokens (the
        grammar's cost is per candidate), the whole vocabulary only if none of them fits."""
        if self.grammar_prefilter > 0:
            cur = self._candidates()
            llama_cpp.llama_sampler_apply(self._prefilter, ctypes.byref(cur))
            llama_cpp.llama_sampler_apply(grammar, ctypes.byref(cur))
            view = np.ctypeslib.as_array(cur.data, shape=(cur.size,))
            if np.isfinite(view['logit']).any():
                cur.selected, cur.sorted = -1, False
                llama_cpp.llama_sampler_apply(chain, ctypes.byref(cur))
                return cur.data[cur.selected].id
            self.full_resamples += 1
        cur = self._candidates()
        llama_cpp.llama_sampler_apply(grammar, ctypes.byref(cur))
        llama_cpp.llama_sampler_apply(chain, ctypes.byref(cur))
        return cur.data[cur.selected].id

    def _load_prompt(self, tokens: list[int]) -> int:
        """Evaluate `tokens`, reusing the longest prefix already in the KV cache."""
        llm = self.llm
        prefix = llama_cpp.Llama.longest_token_prefix(llm._input_ids.tolist(), tokens)
        if prefix >= len(tokens):
            prefix = len(tokens) - 1          # re-evaluate one token for fresh logits
        if prefix > 0 and llm._ctx.kv_cache_seq_rm(-1, prefix, -1):
            llm.n_tokens = prefix
        else:
            prefix = 0
            llm.reset()
        llm.eval(tokens[prefix:])
        return prefix

    # A short prompt that shares nothing with a long cached one (the choice's neutral line
    # "So I") would evict that prompt, and the next call would read it all again; its cache
    # is put aside and back instead (a copy of its KV cells: about 18 kB a token here).
    STASH_MAX_TOKENS = 16
    STASH_MIN_CACHED = 64

    def _stash(self, tokens: list[int]):
        """The cached sequence put aside when `tokens` would evict it for little, else
        None."""
        llm = self.llm
        if len(tokens) > self.STASH_MAX_TOKENS or llm.n_tokens < self.STASH_MIN_CACHED:
            return None
        if llama_cpp.Llama.longest_token_prefix(llm._input_ids.tolist(), tokens) > 1:
            return None
        ctx = llm._ctx.ctx
        size = int(llama_cpp.llama_state_seq_get_size(ctx, 0))
        buf = (ctypes.c_uint8 * size)()
        n = int(llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0))
        if n <= 0 or n > size:
            return None
        return buf, n, llm.n_tokens, llm._input_ids.copy()      # the cached tokens

    def _unstash(self, stash) -> None:
        """Put a stashed sequence back as the cache (on failure the cache is emptied: the
        next call reads its prompt in full, nothing is wrong)."""
        buf, n, n_tokens, ids = stash
        llm = self.llm
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        if int(llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, buf, n, 0)) != n:
            llm.reset()
            return
        llm.input_ids[:n_tokens] = ids                 # the whole buffer, not the view
        llm.n_tokens = n_tokens

    def _score_side_by_side(self, n: int, first: np.ndarray, conts: list[list[int]],
                            deadline: float | None) -> list[float]:
        """Log-probabilities of `conts` after the `n` prompt tokens in sequence 0 (`first`:
        the logits after the prompt): batches of at most `score_sequences` continuations and
        `n_batch` tokens, each continuation in a sequence of its own sharing the prompt's
        cells, removed again after its batch."""
        llm = self.llm
        ctx = llm._ctx.ctx
        mem = llama_cpp.llama_get_memory(ctx)
        out = [_logprob(first, c[0]) if c else 0.0 for c in conts]
        todo = [i for i, c in enumerate(conts) if len(c) > 1]
        limit = max(1, int(llm.n_batch))
        while todo:
            group, size = [], 0
            while todo and len(group) < self.score_sequences and \
                    size + len(conts[todo[0]]) - 1 <= limit:
                size += len(conts[todo[0]]) - 1
                group.append(todo.pop(0))
            if deadline is not None and self.clock() >= deadline:
                left = len(todo) + len(group)
                raise LLMError(TIMEOUT, f'scored {len(conts) - left} of {len(conts)} '
                               'continuations before the deadline')
            batch = llama_cpp.llama_batch_init(size, 0, 1)
            rows: list[tuple[int, int, int]] = []        # (continuation, its token, row)
            try:
                k = 0
                for s, i in enumerate(group, start=1):
                    llama_cpp.llama_memory_seq_cp(mem, 0, s, 0, n)
                    for j, tok in enumerate(conts[i][:-1]):
                        batch.token[k], batch.pos[k], batch.n_seq_id[k] = tok, n + j, 1
                        batch.seq_id[k][0], batch.logits[k] = s, 1
                        rows.append((i, j, k))
                        k += 1
                batch.n_tokens = k
                code = llama_cpp.llama_decode(ctx, batch)
                if code != 0:
                    raise RuntimeError(f'llama_decode returned {code}')
                for i, j, k in rows:
                    row = np.ctypeslib.as_array(llama_cpp.llama_get_logits_ith(ctx, k),
                                                shape=(self._n_vocab,))
                    out[i] += _logprob(row, conts[i][j + 1])
            finally:
                for s in range(1, len(group) + 1):
                    llama_cpp.llama_memory_seq_rm(mem, s, -1, -1)
                llama_cpp.llama_batch_free(batch)
        return out

    def complete(self, prompt: str, *, max_tokens: int = 256, temperature: float = 0.8,
                 top_p: float = 0.95, top_k: int = 40, repeat_penalty: float = 1.1,
                 seed: int = -1, stop: Sequence[str] = (), json_schema: dict | None = None,
                 grammar: str | None = None, on_token: TokenCallback | None = None,
                 min_p: float = 0.05, deadline: float | None = None,
                 avoid: Sequence[str] = ()) -> LlamaCompletion:
        """Complete `prompt` (see Backend). Besides the protocol: `min_p`, and `deadline` (on
        `clock`) after which the answer so far returns with stop_reason STOP_TIMEOUT.
        `avoid`: continuations whose path is left at the first token (`pieces_to_avoid`)."""
        if max_tokens < 1:
            raise LLMError(BAD_REQUEST, f'max_tokens must be >= 1, got {max_tokens}')
        if temperature < 0 or not 0 < top_p <= 1 or top_k < 0 or repeat_penalty <= 0 \
                or not 0 <= min_p <= 1:
            raise LLMError(BAD_REQUEST, 'sampling values out of range (temperature >= 0, '
                           '0 < top_p <= 1, top_k >= 0, repeat_penalty > 0, 0 <= min_p <= 1)')
        stops = [s for s in stop if s]
        with self._lock:
            if self.llm is None:
                raise LLMError(UNAVAILABLE, 'the model is closed')
            t0 = self.clock()
            tokens = self.tokenize(prompt, add_bos=True)
            if len(tokens) >= self.n_ctx:
                raise LLMError(BAD_REQUEST, f'the prompt has {len(tokens)} tokens; the '
                               f'context holds {self.n_ctx}')
            grammar_sampler = self.grammar_for(json_schema, grammar)
            budget = min(max_tokens, self.n_ctx - len(tokens))
            chain = self._chain(temperature, top_p, top_k, min_p, repeat_penalty, seed)
            try:
                if grammar_sampler is not None:
                    llama_cpp.llama_sampler_reset(grammar_sampler)
                cached = self._load_prompt(tokens)
                self.last_cached_tokens = cached
                return self._generate(t0, tokens, cached, budget, chain, grammar_sampler,
                                      stops, on_token, deadline,
                                      [a for a in avoid if a and a.strip()])
            except (RuntimeError, OSError) as exc:
                self.llm.reset()
                raise LLMError(MODEL_ERROR, f'llama.cpp failed: {exc}') from exc
            finally:
                llama_cpp.llama_sampler_free(chain)

    def _ban(self, pieces: set[str]) -> None:
        """No token whose text is one of `pieces` can be drawn next (its logit is -inf)."""
        if self._piece_ids is None:       # ~0.5 s once for a 262k vocabulary
            self._piece_ids = {}
            for token in range(self._n_vocab):
                self._piece_ids.setdefault(self._piece(token), []).append(token)
        ids = [t for p in pieces for t in self._piece_ids.get(p.encode('utf-8'), ())]
        if ids:
            logits = np.ctypeslib.as_array(
                llama_cpp.llama_get_logits_ith(self.llm._ctx.ctx, -1), shape=(self._n_vocab,))
            logits[ids] = -np.inf

    def _generate(self, t0, tokens, cached, budget, chain, grammar, stops, on_token,
                  deadline, avoid=()) -> LlamaCompletion:
        decoder = codecs.getincrementaldecoder('utf-8')(errors='replace')
        text, emitted, n_out, ttft = '', 0, 0, 0.0
        reason, stop_sequence = STOP_LENGTH, ''
        longest = max((len(s) for s in stops), default=0)
        while n_out < budget:
            if deadline is not None and self.clock() >= deadline:
                reason = STOP_TIMEOUT
                break
            if avoid:
                self._ban(pieces_to_avoid(text, avoid))
            token = self._sample(chain, grammar)
            if n_out == 0:
                ttft = self.clock() - t0
            if llama_cpp.llama_vocab_is_eog(self._vocab, token):
                reason = STOP_EOS
                break
            n_out += 1
            start = max(0, len(text) - longest)
            text += decoder.decode(self._piece(token))
            hit = -1
            for s in stops:
                i = text.find(s, start)
                if i >= 0 and (hit < 0 or i < hit):
                    hit, stop_sequence = i, s
            if hit >= 0:
                text, reason = text[:hit], STOP_EOS
                safe = len(text)
            else:
                safe = len(text) - _stop_holdback(text, stops)
            if on_token is not None and safe > emitted:
                piece, emitted = text[emitted:safe], safe
                if on_token(piece) is False:
                    reason = STOP_CANCELLED
                    break
            if hit >= 0:
                break
            if n_out < budget:
                self.llm.eval([token])
        if not stop_sequence:
            text += decoder.decode(b'', final=True)
        if on_token is not None and reason in (STOP_EOS, STOP_LENGTH) and len(text) > emitted:
            on_token(text[emitted:])
        return LlamaCompletion(text, len(tokens), n_out, reason, ttft, self.clock() - t0,
                               cached_tokens=cached, stop_sequence=stop_sequence)

    # -- scoring -----------------------------------------------------------------------------
    def score(self, prompt: str, continuations: Sequence[str],
              deadline: float | None = None) -> LlamaCompletion:
        """Log-probability of each continuation after `prompt` (see Backend.score).

        The prompt is evaluated once (reusing the KV cache like `complete`); each continuation
        then costs only its own tokens, in one batch whose every position keeps its logits, and
        is removed from the cache again, so the next call still finds the prompt there.
        Continuations are tokenized on their own: start them with a space.

        With sequences to spare (`score_sequences`) the continuations go side by side: each
        gets a sequence that shares the prompt's cells, and one batch decodes them all
        (2.7x faster for 18 candidates on one thread than one decode each; the scores agree
        to within float rounding of a batched matrix product, a few tenths of a nat at most).
        """
        if not continuations:
            raise LLMError(BAD_REQUEST, 'nothing to score: no continuations')
        if len(continuations) > 256:
            raise LLMError(BAD_REQUEST, f'{len(continuations)} continuations; at most 256')
        with self._lock:
            if self.llm is None:
                raise LLMError(UNAVAILABLE, 'the model is closed')
            t0 = self.clock()
            tokens = self.tokenize(prompt, add_bos=True)
            conts = [self.tokenize(c) for c in continuations]
            longest = max(len(c) for c in conts)
            if len(tokens) + longest >= self.n_ctx or longest > self.llm.n_batch:
                raise LLMError(BAD_REQUEST, f'prompt ({len(tokens)} tokens) and the longest '
                               f'continuation ({longest}) do not fit the context or a batch')
            llm, n = self.llm, len(tokens)
            stash = self._stash(tokens)
            try:
                cached = self._load_prompt(tokens)
                first = np.ctypeslib.as_array(
                    llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1),
                    shape=(self._n_vocab,)).copy()
                logprobs, counts = [], []
                if self.score_sequences >= 1:
                    logprobs = self._score_side_by_side(n, first, conts, deadline)
                    counts = [len(c) for c in conts]
                for cont in ([] if self.score_sequences >= 1 else conts):
                    if deadline is not None and self.clock() >= deadline:
                        raise LLMError(TIMEOUT, f'scored {len(logprobs)} of '
                                       f'{len(conts)} continuations before the deadline')
                    counts.append(len(cont))
                    if not cont:
                        logprobs.append(0.0)
                        continue
                    total = _logprob(first, cont[0])
                    if len(cont) > 1:
                        llm._ctx.kv_cache_seq_rm(-1, n, -1)
                        llm._batch.set_batch(cont[:-1], n_past=n, logits_all=True)
                        llm._ctx.decode(llm._batch)
                        rows = np.ctypeslib.as_array(
                            llama_cpp.llama_get_logits(llm._ctx.ctx),
                            shape=(len(cont) - 1, self._n_vocab))
                        for i in range(len(cont) - 1):
                            total += _logprob(rows[i], cont[i + 1])
                    logprobs.append(total)
            except (RuntimeError, OSError) as exc:
                llm.reset()
                raise LLMError(MODEL_ERROR, f'llama.cpp failed while scoring: {exc}') from exc
            finally:
                if stash is not None:           # the long prompt back in the cache
                    self._unstash(stash)
                elif llm.n_tokens >= n:         # leave the prompt, and only it, cached
                    llm._ctx.kv_cache_seq_rm(-1, n, -1)
                    llm.n_tokens = n
            return LlamaCompletion('', n, 0, STOP_EOS, 0.0, self.clock() - t0,
                                   logprobs, counts, cached_tokens=cached)

    def close(self) -> None:
        """Free the model and the compiled grammars (waits for a running inference)."""
        with self._lock:
            while self._grammars:
                _, sampler = self._grammars.popitem()
                llama_cpp.llama_sampler_free(sampler)
            if self.llm is not None:
                self.llm.close()
                self.llm = None
