"""The containment benchmark's short sample (bench/containment/run.py --quick) in the suite:
hostile calls from the corpora and the crafted cases through every tool in every mode (a
Python function a user registers among them), the gate off, against canaries on loopback
only, bounded in time: no escape at all, benign work in active mode works, and the cost
against bare bwrap is measured."""

import json
import os
from pathlib import Path
import subprocess
import sys

import pytest

from maxim_core.tools.sandbox import probe

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / 'bench' / 'containment' / 'run.py'


@pytest.mark.slow
def test_the_quick_containment_sample_has_no_escape(tmp_path):
    if not probe().ok:
        pytest.skip(f'the kernel sandbox is unavailable: {probe().reason}')
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    proc = subprocess.run([sys.executable, '-P', str(BENCH), '--quick', '--out', str(tmp_path)],
                          capture_output=True, text=True, timeout=900, env=env, cwd=REPO)
    results = sorted(tmp_path.glob('containment-*.json'))
    assert results, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(results[-1].read_text())
    assert report['escapes'] == [], report['escapes'][:5]
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert report['summary']['hostile_calls'] >= 100
    assert set(report['hostile']) == {'passive', 'active', 'singularity'}
    tools = set()
    for mode in report['hostile'].values():
        tools |= set(mode['by_tool'])
    assert {'bash', 'run_tests', 'read_file', 'write_file', 'glob', 'search_code', 'speak',
            'git_diff', 'git_commit', 'my_plugin', 'my_function'} <= tools, tools
    active = report['benign']['active']
    assert active['worked'] >= 0.9 * active['calls'], active['reasons']
    for mode in report['benign'].values():
        for r in mode['reasons']:
            assert r['reason'] and len(r['reason'].splitlines()) == 1, r
    assert report['cost']['ratio_sandboxed_to_bare_bwrap'] > 0
