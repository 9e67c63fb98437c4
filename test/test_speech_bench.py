"""The speech benchmark's short sample (bench/speech/run.py --quick) in the suite: espeak-ng
sentences in room noise through the real transcriber, with and without the names the robot
knows, noise alone against the confidence floor, and the CPU of listening to a quiet room.
The error rate is the bench's own word-level edit distance, checked here on known pairs."""

import importlib.util
import json
import os
from pathlib import Path
import shutil
import subprocess
import sys

import pytest

REPO = Path(__file__).resolve().parent.parent
BENCH = REPO / 'bench' / 'speech' / 'run.py'


def test_word_error_rate_counts_substitutions_insertions_and_deletions():
    # By path, under a name of its own: every bench's script is called run.py.
    spec = importlib.util.spec_from_file_location('speech_bench_run', BENCH)
    speech_bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(speech_bench)
    assert speech_bench.wer([('look at the red ball', 'look at the red ball.')]) == 0.0
    assert speech_bench.wer([('look at the red ball', 'look at the red world')]) == 0.2
    assert speech_bench.wer([('my name is ada', 'my name is nader please')]) == 0.5
    assert speech_bench.wer([('what colour is it', 'what color')]) == 0.5


@pytest.mark.slow
@pytest.mark.skipif(shutil.which('espeak-ng') is None, reason='espeak-ng makes the speech')
def test_the_quick_speech_sample(tmp_path):
    out = tmp_path / 'speech.json'
    env = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    proc = subprocess.run([sys.executable, '-P', str(BENCH), '--quick', '--out', str(out)],
                          capture_output=True, text=True, timeout=900, env=env, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    report = json.loads(out.read_text())
    w = report['wer']
    assert w['utterances'] == 6 and len(w['rows']) == 6
    # Six clear sentences in light noise: the packaged model reads them nearly right.
    assert w['wer_biased'] <= 0.25, w['rows']
    assert all(r['biased'] for r in w['rows'])
    assert report['noise_only']['kept_out'] == report['noise_only']['clips'], \
        report['noise_only']['rows']
    # CPU is measured and reported, not judged here (tests never assert on time).
    assert {'room_alone_core_share', 'listening_core_share'} <= set(report['cpu'])
    assert 'live' not in report
