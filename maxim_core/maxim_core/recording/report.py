"""A recording turned into a short report: numbers and plots a person can read.

`python -m maxim_core.recording.report session.mcap --out report/` writes salience over time,
cycles per deliberation, tool outcomes and pain as PNG (drawn with OpenCV, which the robot
already has), a report.json with the figures, and prints a summary.
"""

import argparse
from collections import Counter, defaultdict
import json
import os

import cv2
import numpy as np

from maxim_core.recording.writer import read_messages

W, H, MARGIN = 640, 320, 48


def _canvas(title: str) -> np.ndarray:
    img = np.full((H, W, 3), 255, np.uint8)
    cv2.putText(img, title, (MARGIN, 28), cv2.FONT_HERSHEY_SIMPLEX, 0.6, (0, 0, 0), 1,
                cv2.LINE_AA)
    cv2.line(img, (MARGIN, H - MARGIN), (W - 16, H - MARGIN), (0, 0, 0), 1)
    cv2.line(img, (MARGIN, 40), (MARGIN, H - MARGIN), (0, 0, 0), 1)
    return img


def line_plot(title: str, xs: list[float], ys: list[float], y_max: float = 1.0) -> np.ndarray:
    """A line plot of ys over xs (seconds) with the y axis 0..y_max."""
    img = _canvas(title)
    if not xs:
        cv2.putText(img, 'no data', (W // 2 - 40, H // 2), cv2.FONT_HERSHEY_SIMPLEX, 0.6,
                    (120, 120, 120), 1, cv2.LINE_AA)
        return img
    x0, x1 = min(xs), max(xs)
    span = (x1 - x0) or 1.0
    pts = np.array([[MARGIN + (x - x0) / span * (W - 16 - MARGIN),
                     H - MARGIN - min(y, y_max) / y_max * (H - MARGIN - 40)]
                    for x, y in zip(xs, ys)], np.int32)
    cv2.polylines(img, [pts], False, (200, 80, 0), 2, cv2.LINE_AA)
    for p in pts:
        cv2.circle(img, tuple(int(v) for v in p), 3, (200, 80, 0), -1)
    cv2.putText(img, f'{span:.0f} s', (W - 80, H - 16), cv2.FONT_HERSHEY_SIMPLEX, 0.45,
                (0, 0, 0), 1, cv2.LINE_AA)
    cv2.putText(img, f'{y_max:g}', (8, 48), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1)
    return img


def bar_plot(title: str, counts: dict) -> np.ndarray:
    """One bar per key, labelled with its count."""
    img = _canvas(title)
    if not counts:
        cv2.putText(img, 'no data', (W // 2 - 40, H // 2), cv2.FONT_HERSHEY_SIMPLEX, 0.6,
                    (120, 120, 120), 1, cv2.LINE_AA)
        return img
    top = max(counts.values()) or 1
    width = (W - 16 - MARGIN) // max(1, len(counts))
    for i, (key, value) in enumerate(counts.items()):
        x = MARGIN + i * width + 6
        y = int(H - MARGIN - value / top * (H - MARGIN - 60))
        cv2.rectangle(img, (x, y), (x + width - 12, H - MARGIN), (60, 140, 60), -1)
        cv2.putText(img, str(value), (x, y - 6), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1)
        cv2.putText(img, str(key)[:12], (x, H - MARGIN + 18), cv2.FONT_HERSHEY_SIMPLEX, 0.4,
                    (0, 0, 0), 1)
    return img


def analyse(path: str) -> dict:
    """The figures of a recording."""
    messages = read_messages(path, topics=['thoughts', 'tool_results', 'pain', 'percepts'])
    t0 = messages[0][1] if messages else 0
    salience, pain = [], []
    cycles: dict[str, int] = defaultdict(int)
    outcomes: Counter = Counter()
    topics: Counter = Counter()
    for topic, stamp, msg in messages:
        t = (stamp - t0) / 1e9
        topics[topic] += 1
        if topic == 'thoughts':
            salience.append((t, float(msg.salience)))
            cycles[msg.deliberation_id or f'#{len(cycles)}'] = max(
                cycles[msg.deliberation_id or f'#{len(cycles)}'], int(msg.cycle))
        elif topic == 'tool_results':
            outcomes['blocked' if msg.blocked else 'success' if msg.success else 'failed'] += 1
        elif topic == 'pain':
            pain.append((t, float(msg.intensity)))
    per_deliberation = Counter(cycles.values())
    return {
        'file': path,
        'messages': dict(topics),
        'thoughts': len(salience),
        'deliberations': len(cycles),
        'mean_salience': float(np.mean([s for _, s in salience])) if salience else 0.0,
        'cycles_per_deliberation': {str(k): v for k, v in sorted(per_deliberation.items())},
        'tool_outcomes': dict(outcomes),
        'pain_events': len(pain),
        'max_pain': max((p for _, p in pain), default=0.0),
        '_series': {'salience': salience, 'pain': pain},
    }


def write_report(path: str, out_dir: str) -> dict:
    """Write the PNG plots and report.json into out_dir; return the figures."""
    figures = analyse(path)
    series = figures.pop('_series')
    os.makedirs(out_dir, exist_ok=True)
    plots = {
        'salience.png': line_plot('salience of each thought',
                                  [t for t, _ in series['salience']],
                                  [s for _, s in series['salience']]),
        'cycles.png': bar_plot('deliberations by number of cycles',
                               figures['cycles_per_deliberation']),
        'tool_outcomes.png': bar_plot('tool outcomes', figures['tool_outcomes']),
        'pain.png': line_plot('pain intensity', [t for t, _ in series['pain']],
                              [p for _, p in series['pain']]),
    }
    for name, img in plots.items():
        cv2.imwrite(os.path.join(out_dir, name), img)
    figures['plots'] = sorted(plots)
    with open(os.path.join(out_dir, 'report.json'), 'w', encoding='utf-8') as f:
        json.dump(figures, f, indent=2)
    return figures


def summary_text(figures: dict) -> str:
    outcomes = ', '.join(f'{k} {v}' for k, v in figures['tool_outcomes'].items()) or 'none'
    return (f"{figures['file']}: {figures['thoughts']} thoughts in "
            f"{figures['deliberations']} deliberations (mean salience "
            f"{figures['mean_salience']:.2f}); tool outcomes: {outcomes}; "
            f"pain events: {figures['pain_events']} (max {figures['max_pain']:.2f})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description='Report on a Maxim session recording')
    parser.add_argument('recording', help='an .mcap file written by the recorder node')
    parser.add_argument('--out', default='', help='output folder (default: <recording>.report)')
    args = parser.parse_args(argv)
    if not os.path.isfile(args.recording):
        print(f'maxim report: no such recording: {args.recording}')
        return 2
    figures = write_report(args.recording, args.out or args.recording + '.report')
    print(summary_text(figures))
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
