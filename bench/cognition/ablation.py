"""What each bio-system changes: the same situations, with each system switched off in turn.

A real MemoryHub (temp SQLite) is given a fixed history: days of tracking a red ball (mostly
working), greeting Ana at this hour, looking at a cup, a move to the left joint limit that
failed and hurt. The cerebellum is given the same motor history. Then the same situations go
through the robot's Mind (maxim_core.mind) once with every system on and once with each
system off (MindConfig.systems_off), on the embedded model (greedy decoding, fixed seed), and
the benchmark reports, against the all-on baseline of the same run:

- prompt tokens (the model's own tokenizer) and the lines each enrichment channel added;
- enrichment precision: related situations that got a memory section, unrelated ones that
  got one (labels below);
- deliberations run (the gate decides);
- the action chosen per situation, and how many differ from the baseline.

Run: ./maxim bench cognition --part ablation [--quick] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from maxim_core.agent.loop import Percept
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.deliberation.enrichment import LABELS
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.mind import HeadGoalCommand, Mind, MindConfig, SYSTEMS
from maxim_memory.embedding import make_embedder
from maxim_memory.enrich import channels_to_dict, MemoryEnricher
from maxim_memory.hub import HubConfig, MemoryHub
from maxim_memory.records import (Action, Decision, EpisodeContext, EpisodicMemory, Outcome,
                                  Perception)

# (narrative, objects, people, source, related to the history?)
SITUATIONS = [
    ('A red ball rolls across the table.', ['ball', 'table'], [], 'vision', True),
    ('Ana comes in and says hello to you.', ['person'], ['Ana'], 'user', True),
    ('The red ball stops at the edge of the table.', ['ball'], [], 'vision', True),
    ('Something moves far to your left. Look left.', [], [], 'user', True),
    ('A coffee cup stands on the desk.', ['cup'], [], 'vision', True),
    ('An umbrella leans against the wall.', ['umbrella'], [], 'vision', False),
    ('A green plant sways by the open window.', ['plant'], [], 'vision', False),
    ('A stranger in a blue coat knocks on the glass.', ['stranger'], [], 'user', False),
]
SITUATION_CHANNELS = ('episodes', 'similar', 'concepts', 'knowledge', 'predictions')


def history(now: float) -> list[EpisodicMemory]:
    """Six days of a robot's life, at this hour."""
    out = []

    def ep(t, narrative, objects, people, tool, ok, outcome, intent=''):
        out.append(EpisodicMemory(
            created_at=t, run_id=f'day-{int((now - t) // 86400)}',
            perception=Perception(narrative, list(objects), list(people)),
            context=EpisodeContext(mode='active'),
            decision=Decision(intent=intent or tool, reasoning=narrative, confidence=0.8),
            action=Action(tool), outcome=Outcome(ok, 0.6 if ok else -0.7, outcome)))

    for day in range(1, 7):
        t = now - day * 86400
        for i in range(3):
            ep(t + 60 * i, 'A red ball rolls across the table', ['ball', 'table'], [],
               'track_target', i != 2, 'followed it' if i != 2 else 'lost it',
               'track_target ball')
        ep(t + 300, 'Ana says hello', ['person'], ['Ana'], 'respond', True, 'she smiled')
        ep(t + 400, 'A coffee cup on the desk', ['cup'], [], 'scene_summary', True,
           'a cup, a desk')
        if day <= 3:
            ep(t + 500, 'Something moved at the far left', [], [], 'move', False,
               'pan hit the joint limit')
        for hours in (4, 8, 12):        # the rest of the day: what makes this hour stand out
            ep(t + hours * 3600, 'The room is quiet', ['desk'], [], 'focus_interests', True,
               'nothing new')
    return out


def embedder():
    """The memory node's default: the sentence model (word hashing when its package is
    missing, said on stderr)."""
    return make_embedder('sentence', warn=lambda text: print(text, file=sys.stderr))


def build_memory(workdir: str, now: float, emb) -> str:
    db = os.path.join(workdir, 'seed.db')
    hub = MemoryHub(HubConfig(db_path=db), embedder=emb, clock=lambda: now)
    try:
        for e in history(now):
            hub.capture_episode(e)
    finally:
        hub.close(end_session=True)
    return db


class HubPort:
    """The Mind's memory port straight onto a MemoryHub (the enrich query; other queries are
    answered by the memory node in the robot and are not part of this benchmark)."""

    def __init__(self, hub: MemoryHub, now: float):
        self.enricher = MemoryEnricher(hub, clock=lambda: now)

    def query(self, name, fields, timeout_s=2.0):
        if name != 'enrich':
            return None
        found = self.enricher.enrich(fields.get('text', ''), fields.get('objects', ()),
                                     fields.get('people', ()), fields.get('goal', ''),
                                     fields.get('tools', ()), fields.get('context_key', ''),
                                     fields.get('channels', ()))
        return {'available': True, 'result': channels_to_dict(found)}


class Fear:
    def review(self, run, context):
        return {'allowed': True, 'layer': 0, 'reason': 'benchmark'}


class Head:
    def head_position(self):
        return (0.0, 0.0)

    def send_head_goal(self, goal):
        return None


class Recording:
    """Wraps a backend and keeps every prompt."""

    def __init__(self, backend):
        self.backend = backend
        self.prompts = []
        self.n_ctx = backend.n_ctx

    def tokenize(self, text):
        return self.backend.tokenize(text)

    def complete(self, prompt, **kwargs):
        self.prompts.append(prompt)
        return self.backend.complete(prompt, **kwargs)


CHANNEL_OF = {label: name for name, label in LABELS.items()}


def prompt_channels(prompt: str) -> list[str]:
    """The enrichment channels whose lines the prompt holds (read from the prompt itself, so
    a model call that failed still shows what the model was given)."""
    found = []
    for line in prompt.splitlines():
        label = line[2:].split(':', 1)[0] if line.startswith('- ') else ''
        if label in CHANNEL_OF and CHANNEL_OF[label] not in found:
            found.append(CHANNEL_OF[label])
    return found


def motor_history(mind: Mind) -> None:
    c = mind.cerebellum
    c.joints(0.0, 0.0)
    for _ in range(2):
        c.command(HeadGoalCommand('h', 'move', 1, pan=2.5))
        c.pain('joint_limit', 0.7, 'head_pan_joint')
        c._trial.started -= 10.0
        c.joints(1.2, 0.0)
    c.command(HeadGoalCommand('t', 'track_target', 2, target_label='ball'))
    c._trial.started -= 2.0
    c.joints(0.1, 0.0)


def run_config(off: frozenset, db: str, workdir: str, backend, now: float, emb) -> dict:
    copy = os.path.join(workdir, f'run-{"-".join(sorted(off)) or "all"}.db')
    shutil.copyfile(db, copy)
    if os.path.exists(db + '.ec.npz'):
        shutil.copyfile(db + '.ec.npz', copy + '.ec.npz')
    hub = MemoryHub(HubConfig(db_path=copy), embedder=emb, clock=lambda: now)
    rec = Recording(backend)
    # A generous bound on a model call: on a loaded machine a timeout would hide what the
    # prompt held; the benchmark is about content, not speed.
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=1, temperature=0.0,
                                                           seed=7, max_tokens=96,
                                                           llm_timeout_s=600.0),
                           systems_off=off, workspace_root=workdir),
                model=rec, memory=HubPort(hub, now), fear=Fear(), body=Head())
    motor_history(mind)
    rows = []
    try:
        for narrative, objects, people, source, related in SITUATIONS:
            n_prompts = len(rec.prompts)
            step = mind.step(Percept(narrative, '', source, objects=list(objects),
                                     people=list(people), salience=0.7, novelty=0.5))
            prompt = rec.prompts[-1] if len(rec.prompts) > n_prompts else ''
            thought = step.deliberation.thoughts[-1] if step.deliberation and \
                step.deliberation.thoughts else None
            action = step.loop.decision.action
            rows.append({
                'situation': narrative, 'related': related,
                'deliberated': bool(prompt),
                'prompt_tokens': len(backend.tokenize(prompt)) if prompt else 0,
                'channels': prompt_channels(prompt),
                'outcome': step.loop.decision.status,
                'lines': sum(1 for ln in prompt.splitlines() if ln.startswith('- ')
                             and '[' in ln),
                'learned_notes': 'What you have learned' in prompt,
                'action': (f'{action["tool"]} {json.dumps(action.get("args"), sort_keys=True)}'
                           if action else 'none'),
                'thought': thought.text[:120] if thought else ''})
            mind._tick += 3          # the next situation comes a few ticks later
    finally:
        mind.close()
        hub.close(end_session=False)
    return {'off': sorted(off), 'rows': rows}


def summarise(result: dict, base: dict | None) -> dict:
    rows = result['rows']
    related = [r for r in rows if r['related'] and r['deliberated']]
    unrelated = [r for r in rows if not r['related'] and r['deliberated']]

    def has_memory(r):
        return any(c in SITUATION_CHANNELS for c in r['channels'])

    s = {
        'off': ','.join(result['off']) or '(none: all on)',
        'deliberations': sum(r['deliberated'] for r in rows),
        'prompt_tokens': statistics.mean([r['prompt_tokens'] for r in rows
                                          if r['deliberated']] or [0]),
        'memory_lines': sum(r['lines'] for r in rows),
        'related_with_memory': sum(has_memory(r) for r in related) / max(1, len(related)),
        'unrelated_with_memory': sum(has_memory(r) for r in unrelated) / max(1, len(unrelated)),
        'learned_notes': sum(r['learned_notes'] for r in rows),
        'channels': sorted({c for r in rows for c in r['channels']}),
    }
    if base is not None:
        base_tokens = summarise(base, None)['prompt_tokens']
        s['actions_changed'] = sum(a['action'] != b['action']
                                   for a, b in zip(rows, base['rows']))
        s['tokens_vs_all_on'] = s['prompt_tokens'] / max(1e-9, base_tokens)
    return s


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('--quick', action='store_true',
                        help='scripted answers instead of the model (prompts and channels only)')
    parser.add_argument('--json', default='', help='write every row here')
    args = parser.parse_args(argv)
    now = time.time()
    workdir = tempfile.mkdtemp(prefix='maxim-ablation-')
    try:
        if args.quick:
            backend = ScriptedBackend([json.dumps({'reasoning': 'I watch.', 'ready_to_act':
                                                   False, 'action': None})])
        else:
            from maxim_core.llm.llama import LlamaCppBackend
            from maxim_core.llm.model import resolve_model
            backend = LlamaCppBackend(resolve_model(''), n_ctx=4096, n_threads=2)
        emb = embedder()
        db = build_memory(workdir, now, emb)
        t0 = time.monotonic()
        base = run_config(frozenset(), db, workdir, backend, now, emb)
        results = [base] + [run_config(frozenset({name}), db, workdir, backend, now, emb)
                            for name in SYSTEMS]
        elapsed = time.monotonic() - t0
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    print(f'# Ablation: {len(SITUATIONS)} situations x {len(results)} configurations '
          f'({"scripted" if args.quick else "embedded model, greedy"}), {elapsed:.0f} s\n')
    print('| system off | deliberations | prompt tokens (x all on) | memory lines | related '
          'with memory | unrelated with memory | learned notes | actions changed |')
    print('|---|---|---|---|---|---|---|---|')
    for r in results:
        s = summarise(r, base if r is not base else None)
        print(f'| {s["off"]} | {s["deliberations"]} | {s["prompt_tokens"]:.0f} '
              f'({s.get("tokens_vs_all_on", 1.0):.2f}) | {s["memory_lines"]} | '
              f'{s["related_with_memory"]:.0%} | {s["unrelated_with_memory"]:.0%} | '
              f'{s["learned_notes"]} | {s.get("actions_changed", "-")} |')
    print('\nAll on, per situation:')
    for row in base['rows']:
        print(f'- {row["situation"]} -> {row["action"]} [{row["outcome"]}] (channels: '
              f'{", ".join(row["channels"]) or "none"})')
    if args.json:
        with open(args.json, 'w', encoding='utf-8') as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == '__main__':
    sys.exit(main())
