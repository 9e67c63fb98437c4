"""Turn a full benchmark result into its summary, so that bench/results/ fits in a repository.

A run's figures (rates, medians, the fit, per family and per seed), its commit, model, seed
and configuration are a few kilobytes; what makes a result file megabytes is its per-item
arrays: every decision moment with its candidates and scores, every scenario run's thoughts
and candidate lists, every request's decisions, every utterance, every benign call's reason.
Those arrays are what a reader needs to dig into one run, not to compare runs, so the
summary keeps everything else and says what it left out (`summary_of`: the full file's
name, sha256 and size, and how many entries each dropped path held).

    python3 bench/results/summarise.py RUN.json [RUN.json ...] [--keep-full] [--out DIR]

writes each summary over its file (or into `--out`); `--keep-full` first keeps the full file
byte for byte as RUN.json.gz beside it (for the runs the docs cite; see README.md here).
A file that is already a summary is left as it is. Summaries and .gz files are not
re-summarised; `.scores.json` caches are not results and are refused (delete them).
"""

import argparse
import gzip
import hashlib
import json
from pathlib import Path
import sys
from typing import Any

# Per-item paths by benchmark (the result file's name up to its first '-'). A path is keys
# joined by '.', a '*' before the last key standing for every element of a list or every
# value of a mapping (`runs.*.thoughts`: each run's thoughts); a path a file does not have
# is skipped, so older layouts of a benchmark share one entry.
PER_ITEM = {
    'decisions': ('items',),                        # every moment, its candidates, scores
    'scenarios': ('runs.*.thoughts', 'runs.*.choices'),   # every pass's thought; candidates
    'requests': ('rows.*.decided',),                 # the decisions in each request's window
    'containment': ('benign.*.reasons', 'log'),      # every benign call's outcome; the log
    'speech': ('wer.rows', 'live.rows', 'live.spoken_lines', 'noise_only.rows'),
}
# Lists of named records that keep only the names (the generated scenarios: their text is
# made again by bench/scenarios/generate.py, at the run's commit, from its `scenario_seed`).
NAMES_ONLY = {'scenarios': ('scenarios',)}
# A benchmark not named above (a new one) loses only arrays under these usual names.
DEFAULT_PER_ITEM = ('items', 'rows', 'runs.*.thoughts', 'runs.*.choices')


def benchmark_of(name: str) -> str:
    """The benchmark a result file belongs to, from its name (`decisions-...json`)."""
    return Path(name).name.split('-', 1)[0]


def _drop(node: Any, keys: list[str]) -> int:
    """Remove the path `keys` from `node`; how many entries were removed (a list's
    length, a mapping's size, or 1 for a scalar)."""
    head, rest = keys[0], keys[1:]
    if head == '*' and rest:
        children = node if isinstance(node, list) else \
            list(node.values()) if isinstance(node, dict) else []
        return sum(_drop(child, rest) for child in children)
    if not isinstance(node, dict) or head not in node:
        return 0
    if rest:
        return _drop(node[head], rest)
    value = node.pop(head)
    return len(value) if isinstance(value, (list, dict)) else 1


def _names_only(node: dict, key: str) -> int:
    """Replace the records under `key` by their names; how many records were cut."""
    records = node.get(key)
    if not isinstance(records, list) or not any(isinstance(r, dict) for r in records):
        return 0
    node[key] = [r.get('name', '') if isinstance(r, dict) else r for r in records]
    return sum(isinstance(r, dict) for r in records)


def summarise(result: dict, name: str, raw: bytes, full_kept: bool = False) -> dict:
    """The summary of one full result (`raw` is the file's bytes, `name` its file name):
    the result without its per-item arrays, and `summary_of` saying what was dropped and
    where the full file is (`full_kept`: as `<name>.gz` beside the summary)."""
    if 'summary_of' in result:
        return result
    summary = json.loads(json.dumps(result))        # a deep copy; the caller's stays whole
    benchmark = benchmark_of(name)
    dropped = {}
    for path in PER_ITEM.get(benchmark, DEFAULT_PER_ITEM):
        count = _drop(summary, path.split('.'))
        if count:
            dropped[path] = count
    for key in NAMES_ONLY.get(benchmark, ()):
        count = _names_only(summary, key)
        if count:
            dropped[f'{key} (all but the names)'] = count
    name = Path(name).name
    summary['summary_of'] = {
        'file': name, 'sha256': hashlib.sha256(raw).hexdigest(), 'bytes': len(raw),
        'dropped': dropped,
        'full': f'{name}.gz' if full_kept else f'git log --all -- bench/results/{name}'}
    return summary


def convert(path: Path, out_dir: Path | None = None, keep_full: bool = False) -> Path:
    """Summarise the result at `path` (over it, or into `out_dir`); with `keep_full`, keep
    the full file first as `<name>.json.gz`, byte for byte (gzip's mtime 0, so the same
    file always gives the same .gz). The path written."""
    if path.name.endswith('.scores.json'):
        raise ValueError(f'{path.name} is a score cache, not a result')
    if path.suffix != '.json':
        raise ValueError(f'{path.name} is not a .json result')
    raw = path.read_bytes()
    result = json.loads(raw)
    target = (out_dir or path.parent) / path.name
    if 'summary_of' in result:
        if target != path:
            target.write_bytes(raw)
        return target
    if keep_full:
        full = target.with_name(target.name + '.gz')
        with open(full, 'wb') as f, gzip.GzipFile(filename=path.name, mode='wb', fileobj=f,
                                                  compresslevel=9, mtime=0) as gz:
            gz.write(raw)
    summary = summarise(result, path.name, raw, keep_full)
    # One line, as the benchmarks write their results: indenting costs a fifth more bytes.
    target.write_text(json.dumps(summary, ensure_ascii=False) + '\n', encoding='utf-8')
    return target


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('files', nargs='+', type=Path, help='full result files (.json)')
    ap.add_argument('--keep-full', action='store_true',
                    help='keep each full file as <name>.json.gz beside its summary')
    ap.add_argument('--out', type=Path, default=None,
                    help='write summaries here instead of over the files')
    a = ap.parse_args(argv)
    for path in a.files:
        before = path.stat().st_size
        target = convert(path, a.out, a.keep_full)
        print(f'{path.name}: {before} -> {target.stat().st_size} bytes')
    return 0


if __name__ == '__main__':
    sys.exit(main())
