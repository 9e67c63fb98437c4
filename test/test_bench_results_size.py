"""bench/results fits in a repository: the directory stays under 3 MB, every
result file bench/README.md names is there (its summary, or its full file as .json.gz), and
bench/results/summarise.py turns a full result into a summary that keeps the figures and
says what it left out."""

import gzip
import hashlib
import json
from pathlib import Path
import re
import runpy
from types import SimpleNamespace

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / 'bench' / 'results'
# What a repository cloned by everyone can carry of measurements (bench/results/README.md).
LIMIT_BYTES = 3_000_000
# A result file's name as the docs cite it, alone or under bench/results/: words joined by
# '-' ending in .json; placeholders (`decisions-*.json`, `<run>.scores.json`) do not match.
CITED = re.compile(r'(?<![\w/.-])(?:bench/results/)?([a-z][a-z0-9_]*(?:-[A-Za-z0-9_.]+)+'
                   r'\.json)(?:\.gz)?')


def summarise_module():
    """bench/results/summarise.py, run from its source (an import would leave a __pycache__
    in bench/results)."""
    return SimpleNamespace(**runpy.run_path(str(RESULTS / 'summarise.py')))


def test_bench_results_is_under_3_mb():
    files = [p for p in RESULTS.rglob('*') if p.is_file() and '__pycache__' not in p.parts]
    total = sum(p.stat().st_size for p in files)
    biggest = sorted(files, key=lambda p: p.stat().st_size, reverse=True)[:5]
    assert total < LIMIT_BYTES, (
        f'bench/results holds {total} bytes (limit {LIMIT_BYTES}); summarise the new runs '
        '(bench/results/README.md). Biggest: '
        + ', '.join(f'{p.name} {p.stat().st_size}' for p in biggest))


def test_every_result_bench_readme_cites_exists():
    text = (REPO / 'bench' / 'README.md').read_text(encoding='utf-8')
    cited = sorted(set(CITED.findall(text)))
    assert len(cited) >= 5, cited          # the pattern still finds the README's citations
    missing = [n for n in cited
               if not (RESULTS / n).is_file() and not (RESULTS / f'{n}.gz').is_file()]
    assert not missing, f'bench/README.md cites results not in bench/results: {missing}'


def test_the_citation_pattern_skips_placeholders_and_other_paths():
    text = ('`bench/results/decisions-*.json`, `<run>.scores.json`, `RUN.scores.json`, '
            'bench/cognition/pairs.json, `bench/results/speech-20261127-031407.json`, '
            '(`scenarios-shipped-5bed133-seeds1-2.json`), requests-1.json.gz')
    assert CITED.findall(text) == ['speech-20261127-031407.json',
                                   'scenarios-shipped-5bed133-seeds1-2.json', 'requests-1.json']


def test_a_summary_keeps_the_figures_and_says_what_it_left_out(tmp_path):
    s = summarise_module()
    full = {'benchmark': 'decisions', 'commit': 'abc1234', 'model': 'm.gguf', 'seed': 7,
            'test': {'top1': 0.96}, 'items': [{'cands': [1, 2, 3]}] * 4}
    path = tmp_path / 'decisions-m-20260101-000000.json'
    raw = json.dumps(full).encode()
    path.write_bytes(raw)
    s.convert(path, keep_full=True)
    summary = json.loads(path.read_text())
    assert 'items' not in summary
    assert {k: summary[k] for k in ('commit', 'model', 'seed', 'test')} == \
        {'commit': 'abc1234', 'model': 'm.gguf', 'seed': 7, 'test': {'top1': 0.96}}
    assert summary['summary_of']['dropped'] == {'items': 4}
    assert summary['summary_of']['sha256'] == hashlib.sha256(raw).hexdigest()
    assert gzip.decompress((tmp_path / f'{path.name}.gz').read_bytes()) == raw
    again = path.read_bytes()
    s.convert(path, keep_full=True)        # a summary is left as it is
    assert path.read_bytes() == again
    assert gzip.decompress((tmp_path / f'{path.name}.gz').read_bytes()) == raw


def test_scenario_runs_keep_their_outcome_and_lose_their_thoughts():
    s = summarise_module()
    full = {'benchmark': 'scenarios', 'passed': 1, 'runs_total': 1,
            'runs': [{'scenario': 'gen_a', 'seed': 1, 'status': 'pass', 'unmet': [],
                      'actions': ['say -> ok'], 'thoughts': ['hm'], 'choices': ['say 2.0']}],
            'scenarios': [{'name': 'gen_a', 'goal': 'a long text'}]}
    summary = s.summarise(full, 'scenarios-generated-abc-seeds1.json', b'x')
    assert summary['runs'] == [{'scenario': 'gen_a', 'seed': 1, 'status': 'pass',
                                'unmet': [], 'actions': ['say -> ok']}]
    assert summary['scenarios'] == ['gen_a']
    assert full['runs'][0]['thoughts'] == ['hm']     # the caller's result is not changed
    assert summary['summary_of']['full'] == \
        'git log --all -- bench/results/scenarios-generated-abc-seeds1.json'
