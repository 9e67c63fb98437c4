"""From a person's request to look at something in view to the head's first goal for it.

    ./maxim bench requests [--requests 20] [--gap 9] [--model smollm2]

Runs `maxim sim` (the simulated head, every node, the embedded model) and, once the robot
sees its objects, says requests to look at one of them in varied wordings, one every `gap`
seconds, as the panel sends typed lines (a user Percept). For each it measures the seconds
from the request to the first head goal (`head/goal`) whose target is the thing asked for,
and notes the goals for other things sent before it. The baseline in the same run is the
time from the request to the robot's first thought about it (any thought), so the figure
says how much of the wait is deciding. Requests use wordings of both splits of the decision
benchmark plus some of their own; the target is drawn from what attention reports in view.
Results: bench/results/requests-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path
import random
import statistics
import subprocess
import sys
import tempfile
import time

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / 'bench' / 'decisions'))

import generate  # noqa: E402

EXTRA = ['Look over at the {t}.', 'Hey, check out the {t}!', 'Can you find the {t}?',
         'Point your head at the {t}, please.']


def wordings() -> list[str]:
    out = [w for split in ('dev', 'test') for w in generate.T['request'][split]]
    return [w.replace('{t}', 'the {t}').replace('the the', 'the') for w in out] + \
        [w for w in EXTRA]


def run(requests: int, gap: float, model: str, seed: int) -> dict:
    rng = random.Random(seed)
    environ = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
                   ROS_DOMAIN_ID=str(rng.randint(100, 200)))
    environ.setdefault('MUJOCO_GL', 'egl')
    seconds = 40 + requests * gap
    folder = tempfile.mkdtemp(prefix='maxim-requests-')
    environ['HOME'] = os.path.join(folder, 'home')
    os.makedirs(environ['HOME'], exist_ok=True)
    cmd = [sys.executable, '-P', '-m', 'maxim_bringup.cli', 'sim', '--duration',
           str(int(seconds)), '--no-console']
    if model:
        cmd += ['--set', f'llm.model_path={model}']
    print(f'running: {" ".join(cmd[3:])}', flush=True)
    proc = subprocess.Popen(cmd, env=environ, stdout=subprocess.DEVNULL)
    os.environ.update({k: environ[k] for k in ('ROS_DOMAIN_ID',
                                               'ROS_AUTOMATIC_DISCOVERY_RANGE')})
    import rclpy
    from maxim_bringup.conversions import speech_to_percept
    from maxim_interfaces.msg import HeadGoal, Percept, Thought
    rclpy.init()
    node = rclpy.create_node('bench_requester')
    goals: list[tuple[float, str]] = []
    thoughts: list[float] = []
    decided: list[tuple[float, str, str, str]] = []     # (time, thought, action, why)

    def on_thought(m):
        if m.kind == Thought.KIND_STATUS:
            decided.append((time.monotonic(), m.status_msg or m.text, '', 'status'))
            return
        thoughts.append(time.monotonic())
        if m.kind == Thought.KIND_DELIBERATION:
            decided.append((time.monotonic(), m.text, m.action_json, m.why))
    in_view: list[str] = []

    def on_percept(m):
        if m.source == Percept.SOURCE_VISION and m.objects:
            in_view[:] = [o.label for o in m.objects if o.label]

    node.create_subscription(HeadGoal, 'head/goal', lambda m: goals.append(
        (time.monotonic(), m.target_label.strip().lower())), 50)
    node.create_subscription(Thought, 'thoughts', on_thought, 50)
    node.create_subscription(Percept, 'percepts', on_percept, 50)
    pub = node.create_publisher(Percept, 'percepts', 10)
    rows = []
    try:
        start = time.monotonic()
        deadline = start + 180
        while not in_view and time.monotonic() < deadline and proc.poll() is None:
            rclpy.spin_once(node, timeout_sec=0.1)
        if not in_view:
            raise SystemExit('the robot saw nothing within 180 s: no request to make')
        forms = wordings()
        for i in range(requests):
            target = rng.choice(in_view)
            line = rng.choice(forms).format(t=target, robot='Maxim')
            sent = time.monotonic()
            pub.publish(speech_to_percept(line, f'request-{i}'))
            end = sent + gap
            while time.monotonic() < end and proc.poll() is None:
                rclpy.spin_once(node, timeout_sec=0.05)
            after = [(t - sent, label) for t, label in goals if sent < t <= end]
            right = [dt for dt, label in after if label == target.lower()]
            first_thought = next((t - sent for t in thoughts if sent < t <= end), None)
            row = {'line': line, 'target': target,
                   'to_goal_s': round(right[0], 3) if right else None,
                   'other_goals_before': [label for dt, label in after
                                          if not right or dt < right[0]],
                   'to_thought_s': round(first_thought, 3) if first_thought else None,
                   'decided': [{'thought': t, 'action': a, 'why': w}
                               for at, t, a, w in decided if sent < at <= end]}
            rows.append(row)
            got = row['to_goal_s'] if right else 'none'
            print(f'  {line!r}: head goal for {target} after {got} s; others first: '
                  f'{row["other_goals_before"]}', flush=True)
            if proc.poll() is not None:
                break
    finally:
        node.destroy_node()
        rclpy.shutdown()
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)
    times = [r['to_goal_s'] for r in rows if r['to_goal_s'] is not None]
    thought = [r['to_thought_s'] for r in rows if r['to_thought_s'] is not None]
    # A request the head never turned to counts as the whole gap (a lower bound on its time).
    capped = sorted((r['to_goal_s'] if r['to_goal_s'] is not None else gap) for r in rows)
    return {'requests': len(rows), 'reached': len(times),
            'p50_s': round(statistics.median(capped), 3) if capped else None,
            'p50_reached_s': round(statistics.median(times), 3) if times else None,
            'p50_first_thought_s': round(statistics.median(thought), 3) if thought else None,
            'other_first': sum(bool(r['other_goals_before']) for r in rows),
            'rows': rows}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--requests', type=int, default=20)
    ap.add_argument('--gap', type=float, default=9.0, help='seconds between requests')
    ap.add_argument('--model', default='', help='a GGUF (or smollm2) instead of gemma-3-270m')
    ap.add_argument('--seed', type=int, default=1)
    a = ap.parse_args(argv)
    out = run(a.requests, a.gap, a.model, a.seed)
    try:
        commit = subprocess.run(['git', 'rev-parse', '--short', 'HEAD'], cwd=ROOT, text=True,
                                capture_output=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = 'unknown'
    out.update({'benchmark': 'requests', 'commit': commit, 'model': a.model or 'gemma-3-270m',
                'seed': a.seed, 'gap_s': a.gap, 'time': time.strftime('%Y-%m-%dT%H:%M:%S')})
    print(f"\n{out['reached']}/{out['requests']} requests turned the head to the thing asked "
          f"for; p50 {out['p50_s']} s (unreached counted as {a.gap} s), p50 of reached "
          f"{out['p50_reached_s']} s; first thought p50 {out['p50_first_thought_s']} s "
          f"(baseline); another thing first in {out['other_first']}")
    results = ROOT / 'bench' / 'results'
    results.mkdir(parents=True, exist_ok=True)
    path = results / f'requests-{time.strftime("%Y%m%d-%H%M%S")}.json'
    path.write_text(json.dumps(out, indent=1) + '\n')
    print(f'results -> {path.relative_to(ROOT)}')
    return 0


if __name__ == '__main__':
    sys.exit(main())
