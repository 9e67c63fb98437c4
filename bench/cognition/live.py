"""The mind in the running robot and in live scenarios, on the embedded model.

- sim: `maxim sim --duration N --record F` (the simulated head, every node, the embedded
  model), then from the recording: thoughts, the copy rate (8+ consecutive words of any of
  the prompts' fixed text), the named rate (a thought names something in view or recalled),
  the grounded-argument rate, actions per minute and the cycle time. The baseline is the
  same mind alone: the percepts the running robot deliberated on, replayed through the same
  Mind on the same model in this process with nothing else running; the ratio sim/alone of
  the median cycle is what sharing the two cores costs.
- scenarios: `maxim scenario suite --live` over the shipped scenarios with the given seeds:
  pass rate per scenario, and every action argument that is template or instruction text.

Run: ./maxim bench cognition --parts live [--sim-seconds 120] [--seeds 1 2] [--no-scenarios]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time

from maxim_core.agent.loop import Percept
from maxim_core.deliberation.choice import FREE_TEXT_PARAMS, is_template
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.mind import EventSink, Mind, MindConfig
from maxim_core.recording.cognition import analyse, copies
from maxim_core.recording.session import load


def env() -> dict:
    out = dict(os.environ, ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST',
               ROS_DOMAIN_ID=str(random.randint(100, 200)))
    out.setdefault('MUJOCO_GL', 'egl')
    return out


LINES = ('Hello Maxim, please look at the red ball.', 'What do you see right now?',
         'Do you remember what you saw a minute ago?')


def ask_while_running(environ: dict, proc, seconds: float) -> list[float]:
    """A person types lines into the running robot, as the panel sends them (one every
    third of the run after a warm-up): seconds from each line to the robot's first thought
    about it (or an action or a reply), nan when none came within 20 s."""
    os.environ.update({k: environ[k] for k in ('ROS_DOMAIN_ID',
                                               'ROS_AUTOMATIC_DISCOVERY_RANGE')})
    import rclpy
    from maxim_bringup.conversions import speech_to_percept
    from maxim_interfaces.msg import Percept, Thought
    rclpy.init()
    node = rclpy.create_node('bench_person')
    thoughts: list[tuple[float, str]] = []
    node.create_subscription(Thought, 'thoughts', lambda m: thoughts.append(
        (time.monotonic(), m.text)), 50)
    pub = node.create_publisher(Percept, 'percepts', 10)
    out = []
    start = time.monotonic()
    try:
        for i, line in enumerate(LINES):
            at = start + 20.0 + i * max(20.0, (seconds - 30.0) / len(LINES))
            while time.monotonic() < at and proc.poll() is None:
                rclpy.spin_once(node, timeout_sec=0.1)
            if proc.poll() is not None:
                break
            sent = time.monotonic()
            pub.publish(speech_to_percept(line, f'bench-{i}'))
            answer = float('nan')
            while time.monotonic() < sent + 20.0 and proc.poll() is None:
                rclpy.spin_once(node, timeout_sec=0.05)
                later = [t for t, text in thoughts if t > sent and not text.startswith('(')]
                if later:
                    answer = later[0] - sent
                    break
            out.append(answer)
            print(f'  a person said {line!r}: first thought after {answer:.1f} s', flush=True)
    finally:
        node.destroy_node()
        rclpy.shutdown()
    return out


def run_sim(seconds: float, folder: str, sets=()) -> tuple[str, list[float]]:
    path = os.path.join(folder, 'sim.mcap')
    home = os.path.join(folder, 'home')          # a fresh memory: the run starts from nothing
    os.makedirs(home, exist_ok=True)
    cmd = [sys.executable, '-P', '-m', 'maxim_bringup.cli', 'sim', '--duration', str(seconds),
           '--record', path, '--no-console'] + [a for kv in sets for a in ('--set', kv)]
    print(f'running: {" ".join(cmd[3:])}', flush=True)
    environ = dict(env(), HOME=home)
    proc = subprocess.Popen(cmd, env=environ, stdout=subprocess.DEVNULL)
    try:
        answers = ask_while_running(environ, proc, seconds)
        proc.wait(timeout=seconds + 600)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    if not os.path.isfile(path):
        raise SystemExit(f'the sim run wrote no recording at {path}')
    return path, answers


class _Thoughts(EventSink):
    def __init__(self):
        self.seen = []

    def thought(self, t):
        self.seen.append(t)


class _Fear:
    def review(self, run, context):
        return {'allowed': True, 'layer': 1, 'reason': ''}


class _Head:
    def head_position(self):
        return (0.0, 0.0)

    def send_head_goal(self, goal):
        pass


def alone(percepts: list[dict], limit: int = 8) -> list[float]:
    """Cycle seconds of the same mind on the same model with nothing else running."""
    from maxim_core.llm.llama import LlamaCppBackend
    from maxim_core.llm.model import resolve_model
    backend = LlamaCppBackend(resolve_model(), n_ctx=4096, n_threads=2)
    events = _Thoughts()
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=3, seed=1)),
                model=backend, fear=_Fear(), body=_Head(), events=events)
    try:
        for p in percepts[:limit]:
            labels = [str(x) for x in p.get('labels', [])]
            mind.step(Percept(p['narrative'], 'bench', 'vision', objects=labels,
                              salience=max(0.5, float(p.get('salience', 0.5)))), force=True)
    finally:
        mind.close()
        backend.close()
    return [float(t.cycle_s) for t in events.seen if t.status == 0 and t.cycle_s > 0]


def sim_part(seconds: float, sets=()) -> dict:
    folder = tempfile.mkdtemp(prefix='maxim-bench-live-')
    t0 = time.monotonic()
    path, answers = run_sim(seconds, folder, sets)
    session = load(path)
    fig = analyse(session.thoughts, session.percepts, session.duration_s or seconds)
    print(f'sim: {session.duration_s:.0f} s recorded in {time.monotonic() - t0:.0f} s, '
          f'{fig["thoughts"]} thoughts', flush=True)
    deliberated = [p for p in session.percepts if p.get('narrative')
                   and int(p.get('source', 0)) == 0]
    cycles = alone(deliberated)
    fig['alone_cycle_p50_s'] = statistics.median(cycles) if cycles else 0.0
    fig['sim_over_alone'] = (fig['cycle_p50_s'] / fig['alone_cycle_p50_s']
                             if fig['alone_cycle_p50_s'] else 0.0)
    fig['recording'] = path
    fig['first_answer_s'] = answers
    got = sorted(a for a in answers if a == a)
    fig['first_answer_max_s'] = got[-1] if len(got) == len(answers) and got else float('nan')
    fig['examples'] = [t['text'] for t in session.thoughts
                       if int(t.get('kind', 0)) == 0 and int(t.get('status', 0)) == 0][:8]
    return fig


def scenarios_part(seeds: list[int], names: list[str]) -> dict:
    folder = tempfile.mkdtemp(prefix='maxim-bench-scenarios-')
    cmd = [sys.executable, '-P', '-m', 'maxim_bringup.cli', 'scenario', 'suite', *names,
           '--live', '--seeds', *map(str, seeds), '--out-dir', folder]
    print(f'running: {" ".join(cmd[3:])}', flush=True)
    subprocess.run(cmd, env=env(), timeout=7200, check=False)
    with open(os.path.join(folder, 'suite.json'), encoding='utf-8') as f:
        suite = json.load(f)
    per: dict[str, list[str]] = {}
    template_args, args_total = [], 0
    for run in suite.get('runs', []):
        per.setdefault(run['scenario'], []).append(run['status'])
        for line in run.get('actions', []):       # 'tool {"arg": ...} -> outcome'
            tool, _, rest = str(line).partition(' ')
            try:
                args = json.loads(rest.rsplit(' -> ', 1)[0])
            except ValueError:
                continue
            for key, value in (args.items() if isinstance(args, dict) else ()):
                if isinstance(value, str):
                    args_total += 1
                    if is_template(value) or (key in FREE_TEXT_PARAMS and copies(value, 8)):
                        template_args.append(f'{tool} {key}={value!r}')
    passed = sum(s == 'pass' for v in per.values() for s in v)
    total = sum(len(v) for v in per.values())
    return {'per_scenario': per, 'passed': passed, 'runs': total,
            'template_args': template_args, 'args': args_total, 'folder': folder}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    ap.add_argument('--sim-seconds', type=float, default=120.0)
    ap.add_argument('--seeds', type=int, nargs='+', default=[1, 2])
    ap.add_argument('--scenarios', nargs='*', default=[], help='names (default: all shipped)')
    ap.add_argument('--no-sim', action='store_true')
    ap.add_argument('--set', action='append', default=[], metavar='NODE.PARAM=VALUE',
                    help='a parameter of the sim run (as `maxim sim --set`)')
    ap.add_argument('--no-scenarios', action='store_true')
    ap.add_argument('--json', default='', help='write the figures here')
    args = ap.parse_args()
    out = {}
    if not args.no_sim:
        fig = out['sim'] = sim_part(args.sim_seconds, args.set)
        print('\n| figure | value |\n|---|---|')
        for key in ('thoughts', 'copy_rate', 'named_rate', 'actions', 'actions_per_min',
                    'args', 'grounded_arg_rate', 'cycle_p50_s', 'cycle_p90_s',
                    'alone_cycle_p50_s', 'sim_over_alone', 'first_answer_max_s'):
            v = fig[key]
            print(f'| {key} | {v:.2f} |' if isinstance(v, float) else f'| {key} | {v} |')
        for text in fig['examples']:
            print(f'  thought: {text}')
        for text in fig['ungrounded'] + fig['copied']:
            print(f'  flagged: {text}')
    if not args.no_scenarios:
        sc = out['scenarios'] = scenarios_part(args.seeds, args.scenarios)
        print(f'\nlive scenarios: {sc["passed"]}/{sc["runs"]} runs pass')
        for name, statuses in sc['per_scenario'].items():
            print(f'| {name} | {" ".join(statuses)} |')
        print(f'template or instruction arguments: {len(sc["template_args"])} of {sc["args"]}')
        for a in sc['template_args'][:10]:
            print(f'  {a}')
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump(out, f, indent=2, default=str)
    return 0


if __name__ == '__main__':
    sys.exit(main())
