"""What a person sees on the console while Maxim runs: thoughts as they form and the key
events (percepts, actions, blocked actions, pain), one glanceable line or block each.

Pure formatting: plain dicts in (the console node converts messages), rich markup strings out.
The thought block follows the thought stream of seed 000:

    Cycle 1/3 8.2s enriched: hippocampus, nac
      I notice the red ball moving to the left...
      -- hippocampus, nac s=0.69
"""

import json
import textwrap

from rich.markup import escape

WIDTH = 96
SOURCES = {0: 'vision', 1: 'user', 2: 'sim', 3: 'system', 4: 'body'}
THOUGHT_STATUS = {1: 'timeout', 2: 'model error', 3: 'unparsable', 4: 'cancelled', 5: 'gated'}
LAYERS = {1: 'pattern rules', 2: 'LLM review', 3: 'learned prediction', 5: 'fail-closed'}


def _wrap(text: str, indent: str = '  ') -> str:
    text = ' '.join(str(text).split())
    return '\n'.join(textwrap.wrap(escape(text), WIDTH, initial_indent=indent,
                                   subsequent_indent=indent)) or indent


def _short(value: str, limit: int = 80) -> str:
    value = ' '.join(str(value).split())
    return value if len(value) <= limit else value[:limit - 1] + '…'


def format_thought(t: dict) -> str:
    """A thought as a header line (cycle, duration, enrichment) and its wrapped text."""
    status = int(t.get('status', 0))
    if status:
        label = THOUGHT_STATUS.get(status, f'status {status}')
        return f'[yellow]… thinking {label}[/]: {escape(_short(t.get("status_msg", ""), 120))}'
    if int(t.get('kind', 0)) == 3:       # forming: the decision follows with the cycle
        return f'[dim]… {escape(_short(" ".join(str(t.get("text", "")).split()), 200))}[/]'
    kind = 'Idle' if int(t.get('kind', 0)) == 1 else 'Cycle'
    cycle = f'{kind} {t.get("cycle", 1)}/{t.get("max_cycles", 1)}' if kind == 'Cycle' else kind
    sources = ', '.join(t.get('enriched_by') or []) or 'no memory yet'
    head = f'[bold magenta]{cycle}[/] [dim]{float(t.get("cycle_s", 0.0)):.1f}s[/] ' \
           f'[dim]enriched:[/] [cyan]{escape(sources)}[/]'
    lines = [head, _wrap(t.get('text', ''))]
    tail = f'  [dim]—— {escape(sources)} s={float(t.get("salience", 0.0)):.2f}'
    if t.get('ready_to_act') and t.get('action_json'):
        tail += f' → {escape(_short(t["action_json"], 60))}'
    elif t.get('why'):
        tail += ' → waits'
    elif t.get('converged'):
        tail += ' (converged)'
    lines.append(tail + '[/]')
    if t.get('why'):          # the mind's reason for the choice, read off its weighing
        lines.append(f'  [green]{escape(_short(t["why"], 160))}[/]')
    return '\n'.join(lines)


def format_percept(p: dict) -> str:
    """One line: source, the most salient things seen, novelty."""
    source = SOURCES.get(int(p.get('source', 0)), 'percept')
    things = [d.get('label', '?') for d in (p.get('people') or []) + (p.get('objects') or [])]
    what = ', '.join(things[:4]) + (f' +{len(things) - 4}' if len(things) > 4 else '')
    text = what or _short(p.get('narrative', ''), 70)
    return f'[blue]👁  {source}[/] {escape(text)} ' \
           f'[dim](novelty {float(p.get("novelty", 0.0)):.2f}, ' \
           f'salience {float(p.get("salience", 0.0)):.2f})[/]'


def format_utterance(u: dict) -> str:
    """What the ears heard, with the transcriber's confidence and what became of it."""
    conf = float(u.get('confidence', 0.0))
    if u.get('accepted'):
        return f'[magenta]👂 heard[/] "{escape(_short(u.get("text", ""), 90))}" ' \
               f'[dim](confidence {conf:.2f}, {escape(u.get("reason", ""))}, ' \
               f'{float(u.get("latency_s", 0.0)):.1f} s)[/]'
    return f'[dim]👂 not for me: "{escape(_short(u.get("text", ""), 70))}" ' \
           f'(confidence {conf:.2f}, {escape(u.get("reason", ""))})[/]'


def format_tool_result(r: dict) -> str:
    """An action and its outcome, or the block that stopped it."""
    call = r.get('call') or {}
    name = call.get('tool_name', '?')
    args = _short(call.get('arguments_json', '{}'), 60)
    if r.get('blocked'):
        layer = LAYERS.get(int(r.get('blocked_by', 0)), 'fear gate')
        return f'[bold red]⛔ blocked[/] {escape(name)} {escape(args)} ' \
               f'[red]— {escape(_short(r.get("blocked_reason", ""), 70))} ({layer})[/]'
    if r.get('success'):
        check = ' [dim](verified)[/]' if r.get('verified') else ''
        return f'[green]▶ {escape(name)}[/] {escape(args)} [green]✓[/]{check} ' \
               f'[dim]{escape(_short(_output_text(r.get("output", "")), 60))}[/]'
    return f'[red]▶ {escape(name)}[/] {escape(args)} [red]✗ ' \
           f'{escape(_short(r.get("error_msg") or r.get("output", ""), 70))}[/]'


def _output_text(output: str) -> str:
    """A tool's output for one line: a JSON object as key=value pairs, anything else as
    text (JSON nested past the parser's depth too: a tool's output never ends the console)."""
    try:
        value = json.loads(output)
        if isinstance(value, dict):
            return ', '.join(f'{k}={v}' for k, v in list(value.items())[:4])
        return str(value)
    except (TypeError, ValueError, RecursionError):
        return str(output)


def format_pain(p: dict) -> str:
    """Pain with its intensity as a small bar."""
    intensity = max(0.0, min(1.0, float(p.get('intensity', 0.0))))
    bar = '█' * round(intensity * 10) + '░' * (10 - round(intensity * 10))
    return f'[bold red]⚡ pain[/] {escape(p.get("type_name", "?"))} [red]{bar}[/] ' \
           f'{intensity:.2f} [dim]{escape(_short(p.get("source", ""), 30))} ' \
           f'{escape(_short(p.get("description", ""), 50))}[/]'


def format_idle(e: dict) -> str:
    return f'[dim]💤 idle ({escape(e.get("idle_reason_name", "?"))}, ' \
           f'{e.get("task_count", 0)} tasks)[/]'
