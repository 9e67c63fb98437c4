"""bench/llm: the LLM backend against bare llama-cpp-python, on the embedded model.

(a) a whole one-cycle deliberation (Deliberator: prompt assembly, lean grammar, parse,
    validation) / bare `Llama.create_completion` of the prompt it sent for the tokens it
    generated (goal <= 1.10); and the backend path alone against the same bare call.
(b) time to first token of a call sharing a >= 1000-token stable prefix with the previous
    call / of the first (cold) call (goal <= 0.10).
(c) decode tokens/s under the lean deliberation grammar / unconstrained, and under the
    generic `LlamaGrammar.from_json_schema` grammar / unconstrained, through the backend;
    and the raw llama-cpp-python figure (its own grammar path) for reference (goal >= 0.8).
Medians over interleaved repetitions (the machine is shared). `--quick` < 60 s.

Usage: python bench/llm/run.py [--quick]
"""

import argparse
import json
import os
import statistics
import sys
import time

import llama_cpp

from maxim_core.llm.grammar import deliberation_grammar, deliberation_schema
from maxim_core.llm.llama import LlamaCppBackend
from maxim_core.llm.model import resolve_model

TOOLS = {
    'look_at': {'type': 'object', 'properties': {'pan': {'type': 'number'},
                                                 'tilt': {'type': 'number'}},
                'required': ['pan', 'tilt']},
    'say': {'type': 'object', 'properties': {'text': {'type': 'string', 'maxLength': 120}},
            'required': ['text']},
    'remember': {'type': 'object', 'properties': {'kind': {'enum': ['face', 'object']},
                                                  'note': {'type': 'string'}},
                 'required': ['kind']},
}
HEAD = ('You are Maxim, a robot head with a camera. You think privately, then act with one '
        'tool.\nTools: look_at(pan, tilt) turns the head; say(text) speaks; remember(kind, '
        'note) stores a memory.\nAnswer with one JSON object: {"reasoning": "...", '
        '"ready_to_act": true or false, "action": null or {"tool": "...", "args": {...}}}\n'
        'Percept: a red ball rolls to the right.\nAnswer: {"reasoning": "The ball moved '
        'right; I should follow it.", "ready_to_act": true, "action": {"tool": "look_at", '
        '"args": {"pan": 0.4, "tilt": 0.0}}}\n')
RULES = ('Rule: stay curious, move the head smoothly, never stare at the sun, remember the '
         'faces of the people you meet and greet them by name when they come back. ')


def _median(xs):
    return statistics.median(xs) if xs else float('nan')


def bench_a(b, reps, n_tokens):
    """Same prompt, same tokens (greedy, EOS can still end both at the same place)."""
    ours, bare = [], []
    for i in range(reps):
        prompt = f'{i} {HEAD}Percept: a dog barks behind you.\nAnswer:'
        b.complete('warm up ' + str(i), max_tokens=1, temperature=0.0)   # same cold state
        t = time.perf_counter()
        c = b.complete(prompt, max_tokens=n_tokens, temperature=0.0, repeat_penalty=1.0)
        ours.append(time.perf_counter() - t)
        b.complete('warm up ' + str(i), max_tokens=1, temperature=0.0)
        t = time.perf_counter()
        out = b.llm.create_completion(prompt, max_tokens=n_tokens, temperature=0.0,
                                      repeat_penalty=1.0)
        bare.append(time.perf_counter() - t)
        assert out['usage']['completion_tokens'] == c.completion_tokens, 'token counts differ'
    return _median(ours), _median(bare)


class _Recording:
    """The backend as the deliberator sees it, remembering the last prompt it sent."""

    def __init__(self, backend):
        self.b = backend
        self.n_ctx = backend.n_ctx
        self.last = None

    def tokenize(self, text):
        return self.b.tokenize(text)

    def complete(self, prompt, **kw):
        c = self.b.complete(prompt, **kw)
        self.last = (prompt, c)
        return c


def bench_a_cycle(b, reps, n_tokens):
    """A whole one-cycle deliberation (prompt assembly with the model's tokenizer, grammar,
    parse, validation, salience) against bare create_completion of the prompt it sent, for
    the number of tokens it generated."""
    from maxim_core.deliberation.cycles import DeliberationConfig, Deliberator
    from maxim_core.prompt.tools import ToolSpec
    tools = [ToolSpec(n, f'the {n} tool', schema) for n, schema in TOOLS.items()]
    rec = _Recording(b)
    d = Deliberator(rec, config=DeliberationConfig(max_cycles=1, max_tokens=n_tokens,
                                                   temperature=0.0, retries=0),
                    grammar_for=deliberation_grammar)
    ours, bare, tokens = [], [], []
    for i in range(reps):
        b.complete('warm up ' + str(i), max_tokens=1, temperature=0.0)
        t = time.perf_counter()
        d.deliberate(f'{i}: a dog barks behind you and a red ball rolls left.', tools)
        ours.append(time.perf_counter() - t)
        prompt, c = rec.last
        b.complete('warm up ' + str(i), max_tokens=1, temperature=0.0)
        t = time.perf_counter()
        out = b.llm.create_completion(prompt, max_tokens=max(1, c.completion_tokens),
                                      temperature=0.0)
        bare.append(time.perf_counter() - t)
        tokens.append((c.completion_tokens, out['usage']['completion_tokens']))
    return _median(ours), _median(bare), tokens


def bench_b(b, reps):
    stable = HEAD + RULES * 40
    n_stable = len(b.tokenize(stable, add_bos=True))
    firsts, seconds = [], []
    for i in range(reps):
        b.complete(f'unrelated {i}', max_tokens=1, temperature=0.0)
        first = b.complete(stable + f'Percept {i}: a ball.\nAnswer:', max_tokens=1,
                           temperature=0.0)
        second = b.complete(stable + f'Percept {i}: a face.\nAnswer:', max_tokens=1,
                            temperature=0.0)
        firsts.append(first.ttft_s)
        seconds.append(second.ttft_s)
    return n_stable, _median(firsts), _median(seconds), second.cached_tokens


def bench_c(b, seeds, n_tokens):
    prompt = HEAD + 'Percept: a person waves at you from the left.\nAnswer: '
    lean = deliberation_grammar(TOOLS)
    generic = llama_cpp.llama_grammar.json_schema_to_gbnf(
        json.dumps(deliberation_schema(TOOLS)))
    raw_grammar = llama_cpp.LlamaGrammar.from_string(generic)
    rates = {'none': [], 'lean': [], 'generic': [], 'raw_none': [], 'raw_generic': []}
    for seed in seeds:
        for name, grammar in (('none', None), ('lean', lean), ('generic', generic)):
            c = b.complete(prompt, max_tokens=n_tokens, temperature=0.8, seed=seed,
                           grammar=grammar)
            rates[name].append(c.completion_tokens / max(c.total_s - c.ttft_s, 1e-6))
        for name, grammar in (('raw_none', None), ('raw_generic', raw_grammar)):
            first = []
            n = 0
            for _chunk in b.llm.create_completion(prompt, max_tokens=n_tokens,
                                                  temperature=0.8, seed=seed,
                                                  grammar=grammar, stream=True):
                if not first:
                    first.append(time.perf_counter())
                n += 1
            rates[name].append(max(n - 1, 1) / max(time.perf_counter() - first[0], 1e-6))
    return {k: _median(v) for k, v in rates.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true', help='fewer repetitions (< 60 s)')
    args = parser.parse_args()
    reps, n_tokens, seeds = (2, 32, range(2)) if args.quick else (5, 64, range(6))
    t0 = time.perf_counter()
    path = resolve_model()
    b = LlamaCppBackend(path, n_ctx=2048, n_threads=2)
    print(f'model {os.path.basename(path)} · 2 threads · load average '
          f'{os.getloadavg()[0]:.1f} (shared machine: ratios are medians of interleaved runs)')
    ours, bare = bench_a(b, reps, n_tokens)
    print(f'(a) generate via backend {ours:.3f} s / bare create_completion {bare:.3f} s = '
          f'{ours / bare:.2f}  (goal <= 1.10; backend path, not a deliberation cycle)')
    cyc, bare_c, tokens = bench_a_cycle(b, reps, 96 if args.quick else 160)
    print(f'(a) whole deliberation cycle {cyc:.3f} s / bare create_completion of its prompt '
          f'{bare_c:.3f} s = {cyc / bare_c:.2f}  (goal <= 1.10; tokens cycle/bare: {tokens})')
    n_stable, first, second, cached = bench_b(b, reps)
    print(f'(b) ttft with a {n_stable}-token stable prefix: second {second:.3f} s / first '
          f'{first:.3f} s = {second / first:.3f}  (goal <= 0.10; reused {cached} tokens)')
    r = bench_c(b, seeds, n_tokens)
    print(f'(c) tok/s unconstrained {r["none"]:.1f}; lean grammar {r["lean"]:.1f} = '
          f'{r["lean"] / r["none"]:.2f}; generic schema grammar {r["generic"]:.1f} = '
          f'{r["generic"] / r["none"]:.2f}  (goal >= 0.8)')
    print(f'    raw llama-cpp-python: unconstrained {r["raw_none"]:.1f}, generic grammar '
          f'{r["raw_generic"]:.1f} = {r["raw_generic"] / r["raw_none"]:.2f}  (the baseline)')
    print(f'    grammar resamples {b.rejections}, over the whole vocabulary '
          f'{b.full_resamples}')
    b.close()
    print(f'done in {time.perf_counter() - t0:.0f} s')
    return 0


if __name__ == '__main__':
    sys.exit(main())
