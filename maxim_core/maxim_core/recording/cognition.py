"""What a run's thoughts were worth: copy rate, grounding, actions per minute, cycle times.

Computed from the thoughts and percepts of a recording (maxim_core.recording.session) or of
any run that keeps the same dicts, so the benchmark (bench/cognition) and the report read
the same numbers:

- copy rate: thoughts holding 8 or more consecutive words of the prompts' fixed text (the
  diary's labels and every instruction or example text the project has ever put in a
  prompt);
- named rate: thoughts that name something in view (a label of the percepts just before) or
  recalled (a content word of the memory lines the thought was enriched with);
- restated rate: thoughts that only say again what the robot's diary said (half or more of
  their three-word runs are in the percepts just before, the memory lines or the last
  thoughts: prompt.diary.restated), the small model's habit of copying what it reads;
- followed rate: of the thoughts about one or two things in view
  (deliberation.world.thought_of), those whose action names one of them: the act carries
  out what the robot was thinking of;
- repeated rate: thoughts that say again one of the robot's own thoughts of the last
  `REPEAT_WINDOW` (half or more of their three-word runs), a stream that goes round;
- grounded-argument rate: action arguments made of what was perceived, heard or recalled
  (free text counts when it is not template text);
- actions per minute and the cycle time percentiles.
"""

from __future__ import annotations

import json
import statistics
from typing import Iterable, Sequence

from maxim_core.deliberation.words import content_words, FREE_TEXT_PARAMS, is_template, phrase_of
from maxim_core.deliberation.world import thought_of
from maxim_core.llm.grammar import literal
from maxim_core.prompt.builder import (FOUNDATIONAL_RULES, INTERACTIVE_BLOCK, PFC_PREAMBLE,
                                       RESPONSE_FORMAT, SIMULATION_BLOCK)
from maxim_core.prompt.diary import copied_run, FIXED_TEXT, restated

RESTATED = 0.5           # ChoiceConfig.restate_limit's default
REPEAT_WINDOW = 6        # the thoughts before a thought its repeat is looked for in

# Every fixed text a prompt of the project carries or carried.
PROMPT_FIXED_TEXT = tuple(FIXED_TEXT) + (FOUNDATIONAL_RULES, INTERACTIVE_BLOCK, PFC_PREAMBLE,
                                         RESPONSE_FORMAT, SIMULATION_BLOCK)


def _stems(words: Iterable[str]) -> set[str]:
    return {w[:5] for w in words}


def deliberation_thoughts(thoughts: Sequence[dict]) -> list[dict]:
    """Thoughts of deliberation cycles that produced text (not status or idle lines)."""
    return [t for t in thoughts if int(t.get('kind', 0)) == 0 and int(t.get('status', 0)) == 0
            and str(t.get('text', '')).strip()]


def copies(text: str, n: int = 8) -> bool:
    return bool(copied_run(text, PROMPT_FIXED_TEXT, n))


def _labels(t: dict, percepts: Sequence[dict], window_s: float) -> set[str]:
    at = float(t.get('t', 0.0))
    return {str(label) for p in percepts if at - window_s <= float(p.get('t', 0.0)) <= at
            for label in p.get('labels', [])}


def _context(t: dict, percepts: Sequence[dict], window_s: float) -> tuple[set, str]:
    """Stems of what was in view or recalled around thought `t`, and the percepts' words."""
    at = float(t.get('t', 0.0))
    names: set[str] = set()
    for label in _labels(t, percepts, window_s):
        names |= _stems(content_words(label))
    words = [str(p.get('narrative', '')) for p in percepts
             if at - window_s <= float(p.get('t', 0.0)) <= at]
    names |= _stems(content_words(str(t.get('experience', ''))))
    return names, ' '.join(words)


def analyse(thoughts: Sequence[dict], percepts: Sequence[dict], duration_s: float,
            window_s: float = 15.0) -> dict:
    """The figures above for one run."""
    ts = deliberation_thoughts(thoughts)
    copied = [t['text'] for t in ts if copies(t['text'])]
    named = 0
    said_again, repeated = [], []
    contexts = [_context(t, percepts, window_s) for t in ts]
    for i, t in enumerate(ts):
        _, seen = contexts[i]
        before = ' '.join(str(x['text']) for x in ts[max(0, i - 3):i])
        if restated(t['text'], f'{seen}\n{t.get("experience", "")}\n{before}') >= RESTATED:
            said_again.append(t['text'])
        own = '\n'.join(str(x['text']) for x in ts[max(0, i - REPEAT_WINDOW):i])
        if own and restated(t['text'], own) >= RESTATED:
            repeated.append(t['text'])
    args_total = args_grounded = 0
    actions = about = followed = 0
    ungrounded: list[str] = []
    # The robot's own tools, as its choices listed them: an argument that names one
    # (predict_outcome {"tool_name": "memory_recall"}) is grounded in what it can do.
    tools: set[str] = set()
    for t in ts:
        try:
            tools |= {str(c.get('tool')) for c in json.loads(t.get('choice_json') or '[]')
                      if isinstance(c, dict) and c.get('tool')}
        except ValueError:
            continue
    for t, (names, seen) in zip(ts, contexts):
        if _stems(content_words(t['text'])) & names:
            named += 1
        if not t.get('action_json'):
            continue
        try:
            action = json.loads(t['action_json'])
        except ValueError:
            continue
        if not t.get('ready_to_act', True):
            continue
        actions += 1
        meant = thought_of(t['text'], _labels(t, percepts, window_s))
        if meant:
            about += 1
            did = _stems(content_words(phrase_of(str(action.get('tool')),
                                                 action.get('args') or {})))
            followed += any(stems <= did for stems in meant)
        context = f'{seen} {t.get("experience", "")}'.lower()
        for key, value in (action.get('args') or {}).items():
            if not isinstance(value, str):
                continue
            args_total += 1
            if key in FREE_TEXT_PARAMS:
                ok = bool(value.strip()) and not is_template(value)
            else:
                ok = (value.strip().lower() in context or value.strip() in tools) \
                    and not is_template(value)
            args_grounded += ok
            if not ok:
                ungrounded.append(f'{action.get("tool")} {key}={value!r}')
    cycles = [float(t.get('cycle_s', 0.0)) for t in ts if float(t.get('cycle_s', 0.0)) > 0]
    minutes = max(duration_s, 1e-9) / 60.0
    return {
        'thoughts': len(ts),
        'copy_rate': len(copied) / len(ts) if ts else 0.0,
        'copied': copied[:5],
        'named_rate': named / len(ts) if ts else 0.0,
        'restated_rate': len(said_again) / len(ts) if ts else 0.0,
        'restated': said_again[:5],
        'repeated_rate': len(repeated) / len(ts) if ts else 0.0,
        'repeated': repeated[:5],
        'followed_rate': followed / about if about else 0.0,
        'actions': actions,
        'actions_per_min': actions / minutes,
        'args': args_total,
        'grounded_arg_rate': args_grounded / args_total if args_total else 1.0,
        'ungrounded': ungrounded[:5],
        'cycle_p50_s': statistics.median(cycles) if cycles else 0.0,
        'cycle_p90_s': (statistics.quantiles(cycles, n=10)[-1] if len(cycles) >= 2
                        else (cycles[0] if cycles else 0.0)),
    }


def cycles_of(calls: list[dict], thoughts: list[dict], slack_s: float = 0.1) -> list[tuple]:
    """Each successful deliberation thought with the agent's calls of its cycle: the calls
    that started and ended within [arrival - cycle_s, arrival] (wall times, `slack_s` for
    the thought's way over DDS). Pure: (thought, [call indices])."""
    out = []
    for t in thoughts:
        if t['kind'] != 0 or t['status'] != 0 or t['cycle_s'] <= 0:
            continue
        lo, hi = t['wall'] - t['cycle_s'] - slack_s, t['wall'] + slack_s
        mine = [i for i, c in enumerate(calls)
                if c.get('client') == 'agent' and c['t0'] >= lo and c['t1'] <= hi]
        if mine:
            out.append((t, mine))
    return out


def same_text(call: dict) -> dict:
    """The sampling parameters that decode, alone, what the call decoded in the sim: the
    sim sampled with a fresh seed, and a new sample of the same call was up to 23 tokens
    longer or shorter (8 in the sim, 31 alone; bench/README.md). Its text becomes the grammar
    (sampling under a grammar as in the sim, for as many tokens); a trace without the text
    (older) replays the parameters as they were."""
    params = dict(call.get('params') or {})
    text = call.get('text') or ''
    if call.get('candidates') or not text:
        return params
    params['grammar'] = 'root ::= ' + literal(text) + '\n'
    params.pop('json_schema', None)
    params['stop'] = []
    # The same number of tokens too: under a literal the sampler may split a word the sim
    # decoded whole, and more tokens alone would flatter the ratio.
    if int(call.get('completion_tokens', 0) or 0) > 0:
        params['max_tokens'] = int(call['completion_tokens'])
    return params
