"""A recording turned into a report a person can read, and two recordings compared.

`python -m maxim_core.recording.report session.mcap [--out DIR]` writes DIR/report.html (one
self-contained page: figures, thought transcript, actions, idle provenance, the run's
parameters), the figures as PNG and DIR/report.json (every number the page states), and
prints the page's path. With two recordings it writes one page that puts them side by side
with the provenance comparison of their idle cycles.
"""

import argparse
import json
import os
import sys

from maxim_core.recording import figures as figs
from maxim_core.recording.page import comparison_html, page, session_html
from maxim_core.recording.session import compare_sessions, figures, load, ReportError


def _write(out_dir: str, name: str, data: bytes) -> None:
    with open(os.path.join(out_dir, name), 'wb') as f:
        f.write(data)


def write_report(path: str, out_dir: str) -> dict:
    """Write report.html, the PNG figures and report.json into out_dir; return the numbers
    (with 'html' and 'plots' added)."""
    s = load(path)
    numbers = figures(s)
    pngs = figs.draw_all(s)
    os.makedirs(out_dir, exist_ok=True)
    for name, data in pngs.items():
        _write(out_dir, name, data)
    html_path = os.path.join(out_dir, 'report.html')
    _write(out_dir, 'report.html', page(f'Maxim session report: {s.name}',
                                        session_html(s, numbers, pngs)).encode('utf-8'))
    numbers['plots'] = sorted(pngs)
    numbers['html'] = html_path
    with open(os.path.join(out_dir, 'report.json'), 'w', encoding='utf-8') as f:
        json.dump(numbers, f, indent=2, sort_keys=True)
    return numbers


def write_comparison(path_a: str, path_b: str, out_dir: str) -> dict:
    """Write one page with both sessions side by side and their comparison; return it."""
    a, b = load(path_a), load(path_b)
    comparison = compare_sessions(a, b)
    os.makedirs(out_dir, exist_ok=True)
    columns = []
    for label, s, numbers in (('A', a, comparison['a']), ('B', b, comparison['b'])):
        pngs = figs.draw_all(s)
        for name, data in pngs.items():
            _write(out_dir, f'{label}-{name}', data)
        columns.append(f'<div><h2>Run {label}</h2>{session_html(s, numbers, pngs)}</div>')
    body = comparison_html(comparison) + '<div class="cols">' + ''.join(columns) + '</div>'
    html_path = os.path.join(out_dir, 'report.html')
    _write(out_dir, 'report.html', page(f'Maxim runs compared: A {a.name} / B {b.name}',
                                        body).encode('utf-8'))
    comparison['html'] = html_path
    with open(os.path.join(out_dir, 'report.json'), 'w', encoding='utf-8') as f:
        json.dump(comparison, f, indent=2, sort_keys=True, default=str)
    return comparison


def summary_text(numbers: dict) -> str:
    outcomes = ', '.join(f'{k} {v}' for k, v in numbers['tool_outcomes'].items()) or 'none'
    return (f"{numbers['file']}: {numbers['thoughts']} thoughts in "
            f"{numbers['deliberations']} deliberations (mean salience "
            f"{numbers['mean_salience']:.2f}, mean cycle {numbers['cycle_s_mean']:.1f} s); "
            f"tool outcomes: {outcomes}; pain events: {numbers['pain_events']} "
            f"(max {numbers['max_pain']:.2f}); idle cycles: {numbers['idle_cycles']}")


def default_out(paths: list[str]) -> str:
    if len(paths) == 1:
        return paths[0] + '.report'
    a, b = (os.path.splitext(os.path.basename(p))[0] for p in paths)
    return os.path.join(os.path.dirname(os.path.abspath(paths[0])), f'{a}-vs-{b}.report')


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description='Report on one Maxim session recording, or '
                                     'compare two')
    parser.add_argument('recordings', nargs='+', metavar='FILE.mcap',
                        help='one .mcap file written with --record, or two to compare')
    parser.add_argument('--out', default='', help='output folder (default: <recording>.report,'
                        ' or <a>-vs-<b>.report next to the first of two)')
    args = parser.parse_args(argv)
    if len(args.recordings) > 2:
        print('maxim report: give one recording, or two to compare', file=sys.stderr)
        return 2
    out = args.out or default_out(args.recordings)
    try:
        if len(args.recordings) == 1:
            numbers = write_report(args.recordings[0], out)
            print(summary_text(numbers))
        else:
            numbers = write_comparison(args.recordings[0], args.recordings[1], out)
            differ = ', '.join(numbers['provenance']['attribution']) or 'nothing'
            print(f'A {summary_text(numbers["a"])}\nB {summary_text(numbers["b"])}\n'
                  f'idle cycles differ by: {differ}')
    except ReportError as exc:
        print(f'maxim report: {exc}', file=sys.stderr)
        return 2
    print(numbers['html'])
    return 0


if __name__ == '__main__':
    raise SystemExit(main())
