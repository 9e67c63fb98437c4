"""./maxim bench sealed: the sealed test, read as per-capability aggregates only, at most three
times per issue, every reading kept (bench/authored/evaluate.py says what it measures)."""

from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'authored'))
import evaluate  # noqa: E402

if __name__ == '__main__':
    sys.exit(evaluate.main(['sealed', *sys.argv[1:]]))
