"""A soak of idle introspection over hours of robot time on a simulated clock.

The clock is injected and advanced one tick (default 60 s of robot time) per step, so two
hours of robot time run in seconds with a scripted backend (or in minutes with the real
model). The world is synthetic and seeded: mostly nothing happens; now and then a percept
arrives (some with a person), a user task is given, a servo hurts; tasks take a few ticks and
succeed or fail (some goals fail deterministically: a target beyond the tilt range). The
executor runs eligible tasks; whenever none is eligible (IDLE-1) the controller runs an idle
cycle. The event schedule and task outcomes depend only on the seed and the goal, so a run
with drives on and one with drives off meet the same world and differ only by the ablation.

`python -m maxim_eval.soak.idle --hours 2 --out DIR [--model GGUF]` runs both and prints the
report.
"""

import argparse
from collections import Counter, deque
from dataclasses import asdict, dataclass, field, replace
import hashlib
import json
import os
import random
import re
import sys
from typing import Callable

from maxim_core.idle.budgets import BudgetConfig
from maxim_core.idle.controller import IdleConfig, IdleIntrospectionController
from maxim_core.idle.drives import DriveState
from maxim_core.idle.eligibility import assess
from maxim_core.idle.provenance import compare, INTENT_EMITTED, ProvenanceLog, read_records
from maxim_core.idle.tasks import ACTIVE, CircuitBreaker, TaskStore, TaskStoreConfig
from maxim_core.llm.backend import ScriptedBackend

EPOCH = 1_800_000_000.0   # robot time the simulated clock starts at

# The synthetic world: what the camera may see and what a person may ask for.
SCENES = ('the door of the lab', 'a red ball on the table', 'an empty chair',
          'a coffee mug near the keyboard', 'the window, lit by the sun', 'a plant on the shelf')
PEOPLE = ('Ana', 'Ben', 'a visitor')
USER_GOALS = ('track ball 1', 'look_at door 1', 'scan room 1', 'look_at window 1',
              'look_at ceiling 1')
UNREACHABLE = ('ceiling',)      # beyond the tilt range: fails deterministically
# What the simulated head can execute (the agent node passes its tool names).
ACTIONS = ('look_at', 'scan', 'track', 'look_for', 'rest', 'check', 'consolidate')


class SimClock:
    """Robot time that moves only when told to."""

    def __init__(self, start: float = EPOCH):
        self.t = float(start)

    def __call__(self) -> float:
        return self.t

    def advance(self, dt: float) -> None:
        if dt < 0:
            raise ValueError('time does not go back')
        self.t += dt


@dataclass(frozen=True)
class SoakConfig:
    hours: float = 2.0
    tick_s: float = 60.0
    seed: int = 7
    percepts_per_hour: float = 12.0
    person_share: float = 0.3
    user_tasks_per_hour: float = 1.0
    pain_events_per_hour: float = 0.5
    task_ticks: int = 1                  # ticks a task takes (1: done within its tick)
    task_failure_prob: float = 0.3
    memory_capacity: int = 500           # episodes the simulated episodic store holds
    energy_per_cycle: float = 0.01       # energy budget spent per model call (refills hourly)
    energy_per_task: float = 0.03


def fact_driven_script(seed: int) -> Callable[[str], str]:
    """A deterministic stand-in for the model (tests and fast soaks only): it reads the
    facts in the prompt and, seeded, writes a thought about one of them, picked uniformly,
    and sometimes a tag about that same fact. It prefers no fact: with the drives off the
    prompt holds no bodily facts, so whatever differs between the two runs comes from what
    the prompt shows, not from the stand-in's taste."""
    rng = random.Random(seed)
    about = {'Energy budget': 'rest neck 1', 'Recent pain': 'check servo 1',
             'Unexplored share': 'scan room 1', 'Time since the last': 'look_for person 1',
             'Episodic memory fill': 'consolidate memory 1'}

    def answer(prompt: str) -> str:
        facts = re.findall(r'^- (.*)$', prompt, re.M)
        r = rng.random()
        if not facts or r < 0.1:
            return ''
        fact = rng.choice(facts)
        thought = f'Noted: {fact.rstrip(".")}.'
        if r < 0.2:
            return thought + ' Maybe I should look at the door again.'
        if rng.random() < 0.5:
            goal = next((g for key, g in about.items() if fact.startswith(key)), None)
            return f'{thought} [GOAL: {goal or rng.choice(USER_GOALS)}]'
        return thought
    return answer


@dataclass
class SoakReport:
    label: str
    hours: float
    ticks: int
    idle_cycles: int
    outcomes: dict
    suppressions: dict
    storage: dict
    episodes_total: int
    episodes_by_kind: dict
    idle_share: float                    # stored idle episodes (all) / stored episodes
    reflection_share: float              # stored thought-only idle episodes / stored episodes
    goal_emissions: int
    emissions_per_hour: list
    budget_violations: list
    task_rows_max: int
    events_kept_max: int
    provenance_path: str
    tasks_by_origin: dict = field(default_factory=dict)


def _poisson_schedule(rng: random.Random, rate_per_hour: float, hours: float) -> list:
    times, t = [], 0.0
    while rate_per_hour > 0:
        t += rng.expovariate(rate_per_hour / 3600.0)
        if t >= hours * 3600.0:
            return times
        times.append(t)
    return times


def _outcome(seed: int, goal: str, attempt: int, fail_prob: float):
    """(success, deterministic) of one attempt: a function of the goal, not of the run."""
    if any(u in goal.split() for u in UNREACHABLE):
        return False, True
    h = hashlib.sha256(f'{seed}|{goal}|{attempt}'.encode()).digest()
    return (h[0] / 255.0) >= fail_prob, False


def check_budgets(records: list, budgets: BudgetConfig) -> list:
    """Budget violations found in provenance records (empty when IDLE-4 held)."""
    emitted = sorted((r for r in records if r['decision_outcome'] == INTENT_EMITTED),
                     key=lambda r: r['timestamp'])
    problems = []
    for i, r in enumerate(emitted):
        t = r['timestamp']
        window = [e for e in emitted[:i + 1] if t - e['timestamp'] < budgets.rate_window_s]
        if r['idle_reason'] == 'all_in_backoff' and \
                len(window) > budgets.max_goals_per_hour_in_backoff:
            problems.append(f'{t}: {len(window)} emissions in an hour under backoff')
        if len(window) > budgets.max_goals_per_hour:
            problems.append(f'{t}: {len(window)} emissions in an hour')
        if i and t - emitted[i - 1]['timestamp'] < budgets.min_goal_spacing_s \
                and not r.get('thresholds_crossed'):
            problems.append(f'{t}: spacing {t - emitted[i - 1]["timestamp"]:.0f} s')
    return problems


def run_soak(workdir: str, label: str, soak: SoakConfig | None = None,
             idle: IdleConfig | None = None, backend=None) -> SoakReport:
    """One soak run; files (task store, provenance) go under `workdir/label`."""
    soak = soak or SoakConfig()
    idle = idle or IdleConfig(allowed_actions=ACTIONS)
    out = os.path.join(workdir, label)
    os.makedirs(out, exist_ok=True)
    clock = SimClock()
    backend = backend or ScriptedBackend(fact_driven_script(soak.seed), clock=clock)
    store = TaskStore(os.path.join(out, 'tasks.db'), TaskStoreConfig(), clock=clock)
    breaker = CircuitBreaker()
    events: deque = deque(maxlen=soak.memory_capacity)    # what retrieval can see
    episodes: list = []                                    # kinds of stored episodes
    prov_path = os.path.join(out, 'provenance.jsonl')
    if os.path.exists(prov_path):
        os.remove(prov_path)

    def remember(kind: str, summary: str, salience: float) -> None:
        events.append({'id': f'{kind}-{len(episodes)}', 'timestamp': clock(), 'kind': kind,
                       'mode': 'idle' if kind.startswith('idle') else 'live',
                       'summary': summary, 'salience': salience})
        episodes.append(kind)

    def retrieve(max_events: int, window_s: float) -> list:
        start = clock() - window_s
        recent = [e for e in events if e['timestamp'] >= start]
        return [dict(e) for e in recent[-max_events:]] if max_events else []

    controller = IdleIntrospectionController(
        backend, store, retrieve, idle, provenance_log=ProvenanceLog(prov_path), clock=clock)

    rng = random.Random(soak.seed)
    percepts = deque(_poisson_schedule(rng, soak.percepts_per_hour, soak.hours))
    user_tasks = deque(_poisson_schedule(rng, soak.user_tasks_per_hour, soak.hours))
    pains = deque(_poisson_schedule(rng, soak.pain_events_per_hour, soak.hours))
    world = random.Random(soak.seed + 1)

    energy, pain, unexplored, last_interaction = 1.0, 0.0, 0.9, clock()
    running: tuple | None = None        # (task_id, ticks left)
    outcomes, suppressions, storage = Counter(), Counter(), Counter()
    task_rows_max, cycles = 0, 0
    ticks = int(soak.hours * 3600.0 / soak.tick_s)
    for tick in range(ticks):
        elapsed = tick * soak.tick_s
        if tick and elapsed % 3600.0 < soak.tick_s:
            energy = 1.0                 # the hourly budget refills
        while percepts and percepts[0] <= elapsed:
            percepts.popleft()
            scene = world.choice(SCENES)
            person = world.random() < soak.person_share
            if person:
                last_interaction = clock()
                scene = f'{world.choice(PEOPLE)} near {scene}'
            unexplored = max(0.0, unexplored - 0.05)
            remember('percept', f'saw {scene}', round(world.uniform(0.2, 0.9), 2))
        while user_tasks and user_tasks[0] <= elapsed:
            user_tasks.popleft()
            store.add(world.choice(USER_GOALS), origin='user')
        while pains and pains[0] <= elapsed:
            pains.popleft()
            pain = 0.9
            remember('pain', 'the pan servo stalled against its limit', 0.9)
        unexplored = min(1.0, unexplored + 0.004)
        pain = max(0.0, pain - 0.05)

        if running is None:
            status = assess(store, breaker, clock())
            if not status.idle:
                task = next(t for t in store.tasks(open_only=True)
                            if store.is_eligible(t, clock()))
                if task.status != ACTIVE:
                    store.start(task.task_id)
                running = (task.task_id, soak.task_ticks)
        if running is not None:
            task_id, left = running
            if left > 1:
                running = (task_id, left - 1)
            else:
                task = store.get(task_id)
                ok, deterministic = _outcome(soak.seed, task.goal, task.attempts,
                                             soak.task_failure_prob)
                if ok:
                    store.succeed(task_id)
                    breaker.record_success(clock())
                    if 'scan' in task.goal or 'look' in task.goal:
                        unexplored = max(0.0, unexplored - 0.2)
                else:
                    store.fail(task_id, 'target beyond the tilt range' if deterministic
                               else 'lost the target', deterministic)
                    breaker.record_failure(clock())
                remember('task', f'{task.goal}: {"done" if ok else "failed"}',
                         0.4 if ok else 0.6)
                energy = max(0.0, energy - soak.energy_per_task)
                running = None
        else:    # nothing eligible: the robot is idle (IDLE-1)
            state = DriveState(energy_fraction=energy, pain_level=pain,
                               unexplored_fraction=unexplored,
                               seconds_since_interaction=clock() - last_interaction,
                               memory_fill_fraction=len(episodes) / soak.memory_capacity)
            result = controller.run_cycle(status, state)
            cycles += 1
            energy = max(0.0, energy - soak.energy_per_cycle)
            outcomes[result.outcome] += 1
            if result.suppression_reason:
                suppressions[result.suppression_reason] += 1
            storage[result.storage_reason] += 1
            if result.episode is not None:
                kind = 'idle_intent' if result.task is not None else 'idle_reflection'
                remember(kind, result.thought or result.intent, result.salient_delta)
        task_rows_max = max(task_rows_max, store.count())
        clock.advance(soak.tick_s)

    records = read_records(prov_path)
    hours = max(1, int(round(soak.hours)))
    per_hour = [0] * hours
    for r in records:
        if r['decision_outcome'] == INTENT_EMITTED:
            per_hour[min(hours - 1, int((r['timestamp'] - EPOCH) // 3600))] += 1
    kinds = Counter(episodes)
    origins = Counter(t.origin for t in store.tasks())
    store.close()
    return SoakReport(
        label=label, hours=soak.hours, ticks=ticks, idle_cycles=cycles,
        outcomes=dict(outcomes), suppressions=dict(suppressions), storage=dict(storage),
        episodes_total=len(episodes), episodes_by_kind=dict(kinds),
        idle_share=(kinds['idle_intent'] + kinds['idle_reflection']) / max(1, len(episodes)),
        reflection_share=kinds['idle_reflection'] / max(1, len(episodes)),
        goal_emissions=outcomes[INTENT_EMITTED], emissions_per_hour=per_hour,
        budget_violations=check_budgets(records, idle.budgets), task_rows_max=task_rows_max,
        events_kept_max=len(events), provenance_path=prov_path, tasks_by_origin=dict(origins))


def run_ablation(workdir: str, soak: SoakConfig | None = None,
                 idle: IdleConfig | None = None, backend_factory=None) -> dict:
    """The same soak with drives on and off, and the comparison of their provenance."""
    idle = idle or IdleConfig(allowed_actions=ACTIONS)
    reports = {}
    for label, enabled in (('drives_on', True), ('drives_off', False)):
        backend = backend_factory() if backend_factory else None
        reports[label] = run_soak(workdir, label, soak, replace(idle, drives_enabled=enabled),
                                  backend)
    diff = compare(reports['drives_on'].provenance_path, reports['drives_off'].provenance_path)
    return {'drives_on': asdict(reports['drives_on']),
            'drives_off': asdict(reports['drives_off']), 'compare': diff}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog='python -m maxim_eval.soak.idle',
                                     description='Idle soak with the drives ablation.')
    parser.add_argument('--hours', type=float, default=2.0)
    parser.add_argument('--seed', type=int, default=7)
    parser.add_argument('--out', required=True, help='directory for stores and logs')
    parser.add_argument('--model', default='',
                        help='a GGUF file: run on the real model instead of the scripted one')
    args = parser.parse_args(argv)
    factory = None
    if args.model:
        from maxim_core.llm.llama import LlamaCppBackend   # only here: the core needs no llama_cpp
        backend = LlamaCppBackend(args.model, n_ctx=2048)
        factory = lambda: backend            # noqa: E731  (one model for both runs)
    result = run_ablation(args.out, SoakConfig(hours=args.hours, seed=args.seed),
                          IdleConfig(seed=args.seed, allowed_actions=ACTIONS), factory)
    print(json.dumps(result, indent=2, sort_keys=True, default=str))
    return 0


if __name__ == '__main__':
    sys.exit(main())
