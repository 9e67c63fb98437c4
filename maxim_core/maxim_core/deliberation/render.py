"""The thought stream as text, as the thinking panel shows it (seed 000's example)."""

import json
import textwrap
from typing import Iterable

from maxim_core.deliberation.thoughts import KIND_IDLE, STATUS_GATED, STATUS_NAMES, STATUS_OK


def _wrap(text: str, width: int, indent: str = '  ') -> list[str]:
    out = []
    for para in text.splitlines() or ['']:
        out += textwrap.wrap(para, width=width, initial_indent=indent,
                             subsequent_indent=indent) or [indent.rstrip()]
    return out


def render_thought_stream(thoughts: Iterable, width: int = 96) -> str:
    """Each thought as a cycle header (cycle/cap, duration, enrichment sources, salience)
    followed by the thought; deliberations are separated by a blank line.

    `thoughts` are `Thought`s or anything with the same attributes (a Thought message too:
    `action_json` is read when there is no `action`).
    """
    lines: list[str] = []
    current = None
    for t in thoughts:
        did = getattr(t, 'deliberation_id', '')
        if did != current:
            if lines:
                lines.append('')
            current = did
        status = int(getattr(t, 'status', STATUS_OK))
        if status == STATUS_GATED:
            lines.append(f'-- not thinking: {t.status_msg}')
            continue
        if status != STATUS_OK:
            lines.append(f'-- Cycle {t.cycle}/{t.max_cycles}  {STATUS_NAMES.get(status, status)}'
                         f'  {t.cycle_s:.1f}s')
            lines += _wrap(t.status_msg, width)
            continue
        label = 'Idle' if int(getattr(t, 'kind', 0)) == KIND_IDLE else \
            f'Cycle {t.cycle}/{t.max_cycles}'
        sources = ', '.join(t.enriched_by) if t.enriched_by else 'nothing'
        head = f'-- {label}  {t.cycle_s:.1f}s  enriched: {sources}  s={t.salience:.2f}'
        if t.cycle > 1:
            head += f'  J={t.jaccard_previous:.2f}'
        lines.append(head)
        lines += _wrap(t.text, width)
        skipped = getattr(t, 'skipped', None) or {}
        missing = [f'{k} ({v})' for k, v in skipped.items() if v != 'absent']
        if missing:
            lines += _wrap('skipped: ' + '; '.join(missing), width, '    ')
        action = getattr(t, 'action', None)
        if action is None and getattr(t, 'action_json', ''):
            action = json.loads(t.action_json)
        if t.ready_to_act or getattr(t, 'converged', False):
            why = 'ready to act' if t.ready_to_act else 'converged'
            what = (f'{action["tool"]} {json.dumps(action.get("args", {}), sort_keys=True)}'
                    if action else 'no action')
            lines.append(f'  => {why}: {what}')
        if getattr(t, 'why', ''):
            lines += _wrap(str(t.why), width, '     ')
    return '\n'.join(lines)
