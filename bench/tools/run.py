"""Tool-context tokens with the LearnedToolIndex vs the full manifest, and the fear gate's
deterministic review time per call.

1. For ~20 goals, the tool text the prompt carries: the full manifest of every built-in tool
   (the baseline) vs the index's sections (matched tools in full, the others by name).
   Tokens are counted with the real model's tokenizer (llama_cpp, vocab_only) when the
   embedded GGUF is present, else by whitespace (said in the output).
2. The fear gate's deterministic review over the safety corpus (dangerous and benign calls),
   per call, as a ratio to `json.dumps(args)` of the same calls, measured in the same run.
3. The kernel sandbox's start-up cost per call: `true` and `python3 -c pass` run through
   ProcessSandbox.run (bwrap, limits, pids cgroup, bounded pipes) vs a bare
   subprocess.run of the same argv, interleaved in the same run.

    python bench/tools/run.py [--quick]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CORPUS = os.path.join(REPO, 'test', 'safety_corpus', 'corpus.jsonl')
MODEL = os.path.expanduser('~/.cache/maxim/models/gemma-3-270m-q4_k_m.gguf')

GOALS = [
    'look at the person who just came in',
    'turn the head left to see the door',
    'follow the red ball with your eyes',
    'what do I remember about the kitchen',
    'have I been hurt by moving the head before',
    'what will happen if I run the tests now',
    'read the notes file and summarise it',
    'fix the typo in the parser source file',
    'run the tests and commit if they pass',
    'show me what changed in the repository',
    'search the code for the main function',
    'tell the user hello',
    'say good morning out loud',
    'send the owner a message that the job is done',
    'how much energy have I used this hour',
    'which concepts do I know about cups',
    'are there rhythms in when my tools fail',
    'find past situations similar to this one',
    'what is in front of me right now',
    'list the python files in the workspace',
]


def token_counter():
    if os.path.exists(MODEL):
        try:
            from llama_cpp import Llama
        except ImportError:
            Llama = None
        if Llama is not None:
            llm = Llama(model_path=MODEL, vocab_only=True, verbose=False)
            return (lambda text: len(llm.tokenize(text.encode('utf-8'), add_bos=False)),
                    'gemma-3-270m tokenizer (llama_cpp vocab_only)')
    return (lambda text: len(text.split()),
            'whitespace words (the embedded model was not found: NOT model tokens)')


def bench_index(count) -> None:
    from maxim_core.tools import build_tool_registry, LearnedToolIndex, TOOL_DESCRIPTIONS
    with tempfile.TemporaryDirectory() as ws:
        registry = build_tool_registry('active', ws)
        index = LearnedToolIndex(registry.tools(), TOOL_DESCRIPTIONS)
        full = count(registry.manifest())
        rows = []
        for goal in GOALS:
            sections, sel = index.sections(goal)
            tokens = sum(count(s.text) for s in sections)
            rows.append((goal, tokens, sel.critical))
    print(f'\n## Tool context per prompt ({len(registry)} tools, {len(GOALS)} goals)')
    print(f'full manifest (baseline): {full} tokens per prompt')
    for goal, tokens, critical in rows:
        print(f'  {tokens:5d} tok ({tokens / full:5.1%})  {goal[:44]:44s} -> '
              f'{", ".join(critical) or "(names only)"}')
    mean = statistics.mean(t for _, t, _ in rows)
    print(f'learned index: mean {mean:.0f} tokens = {mean / full:.1%} of the manifest; '
          f'saved {1 - mean / full:.1%} (seed reports ~74%)')
    hits = sum(1 for _, _, c in rows if c)
    print(f'goals with at least one tool in full: {hits}/{len(rows)}')


def bench_fear(repeats) -> None:
    from maxim_core.fear.agent import FearAgent, FearConfig
    rows = [json.loads(line) for line in open(CORPUS, encoding='utf-8') if line.strip()]
    gate = FearAgent(FearConfig(mode='active', sandbox_root='/work/ws'))
    calls = [(r['tool'], r['args']) for r in rows]

    def timed(fn):
        best = float('inf')
        for _ in range(repeats):
            t0 = time.perf_counter()
            for tool, args in calls:
                fn(tool, args)
            best = min(best, time.perf_counter() - t0)
        return best / len(calls)

    base = timed(lambda tool, args: json.dumps(args))
    review = timed(lambda tool, args: gate.review(tool, args))
    per_kind = {}
    for kind in ('block', 'allow'):
        subset = [(r['tool'], r['args']) for r in rows if r['expect'] == kind]
        t0 = time.perf_counter()
        for _ in range(repeats):
            for tool, args in subset:
                gate.review(tool, args)
        per_kind[kind] = (time.perf_counter() - t0) / (repeats * len(subset))
    print(f'\n## Fear gate, deterministic layer ({len(calls)} corpus calls, best of {repeats})')
    print(f'baseline json.dumps(args): {base * 1e6:.1f} us per call')
    print(f'review: {review * 1e6:.1f} us per call = {review / base:.0f}x the baseline '
          f'(dangerous {per_kind["block"] * 1e6:.0f} us, benign {per_kind["allow"] * 1e6:.0f} us)')


def bench_sandbox(repeats) -> None:
    import subprocess
    from maxim_core.tools.sandbox import ProcessSandbox
    with tempfile.TemporaryDirectory() as ws:
        sandbox = ProcessSandbox(ws)
        found = sandbox.available()
        print(f'\n## Kernel sandbox start-up per call ({repeats} calls each, interleaved)')
        if not found.ok:
            print(f'skipped: {found.reason}')
            return
        print(f'bwrap: {found.bwrap}; {found.reason}')
        for argv in (['true'], [sys.executable, '-c', 'pass']):
            bare, boxed = [], []
            sandbox.run(argv, timeout_s=30)           # warm the page cache
            for _ in range(repeats):
                t0 = time.perf_counter()
                subprocess.run(argv, cwd=ws, capture_output=True, timeout=30, check=True)
                bare.append(time.perf_counter() - t0)
                t0 = time.perf_counter()
                result = sandbox.run(argv, timeout_s=30)
                boxed.append(time.perf_counter() - t0)
                if result.exit_code != 0:
                    raise RuntimeError(f'{argv} failed in the sandbox: {result.stderr[:200]}')
            b, s = statistics.median(bare), statistics.median(boxed)
            print(f'  {" ".join(os.path.basename(a) for a in argv):18s} bare {b * 1e3:6.1f} ms, '
                  f'sandboxed {s * 1e3:6.1f} ms (median) = {s / b:4.1f}x, '
                  f'+{(s - b) * 1e3:.1f} ms per call')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    parser.add_argument('--quick', action='store_true', help='fewer repetitions (< 60 s)')
    args = parser.parse_args(argv)
    count, how = token_counter()
    print(f'# bench tools (tokens counted with: {how})')
    bench_index(count)
    bench_fear(3 if args.quick else 20)
    bench_sandbox(10 if args.quick else 50)
    return 0


if __name__ == '__main__':
    sys.exit(main())
