"""./maxim bench moments: the decision bench on the authored train and validation tiers
(bench/authored/evaluate.py says what it measures)."""

from pathlib import Path
import sys

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'authored'))
import evaluate  # noqa: E402

if __name__ == '__main__':
    sys.exit(evaluate.main(['moments', *sys.argv[1:]]))
