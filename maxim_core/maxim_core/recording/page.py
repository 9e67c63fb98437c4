"""The report as one self-contained HTML page: figures embedded as base64 PNG, no network.

The page holds the figures, the thought transcript as the thinking panel shows it (cycle,
duration, the bio-systems that answered, salience), the actions with their arguments and
outcomes, pain, the idle provenance records and the run's parameters and model. A small inline
script checks on load that every figure decoded and marks the page (`data-figures` on
<body>, e.g. "5/5") and any figure that did not, so a broken page is visible to a person and
to a headless browser alike.
"""

import base64
import html
import json

from maxim_core.recording.figures import FIGURES
from maxim_core.recording.session import (BLOCK_LAYERS, outcome_of, PERCEPT_SOURCES,
                                          Session, THOUGHT_STATUS)

STYLE = '''
body { font-family: system-ui, sans-serif; margin: 1.5em; color: #222; max-width: 1500px; }
h1 { font-size: 1.5em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; font-size: .9em; margin: .5em 0 1em; }
td, th { border: 1px solid #ddd; padding: .25em .5em; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
figure { margin: 1em 0; } figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-weight: bold; margin-bottom: .3em; }
.thought { font-family: ui-monospace, monospace; font-size: .88em; margin: .6em 0;
           padding: .4em .6em; border-left: 3px solid #9467bd; background: #faf8fd; }
.thought.idle { border-color: #c5b0d5; } .thought.problem { border-color: #ff7f0e; }
.head { color: #9467bd; font-weight: bold; } .dim { color: #777; } .src { color: #17becf; }
.ok { color: #2ca02c; } .bad { color: #d62728; } .blocked { font-weight: bold; }
.why { color: #2ca02c; }
.cols { display: grid; grid-template-columns: 1fr 1fr; gap: 1.5em; }
.broken { outline: 3px solid red; }
pre { background: #f6f6f6; padding: .5em; overflow-x: auto; font-size: .85em; }
'''

CHECK_SCRIPT = '''
window.addEventListener('load', function () {
  var imgs = document.querySelectorAll('img.figure');
  var ok = 0;
  imgs.forEach(function (img) {
    if (img.complete && img.naturalWidth > 0) { ok += 1; }
    else { img.classList.add('broken'); img.alt = 'figure failed to load: ' + img.alt; }
  });
  document.body.setAttribute('data-figures', ok + '/' + imgs.length);
});
'''


def esc(value) -> str:
    return html.escape(str(value), quote=True)


def _short(text: str, n: int = 160) -> str:
    text = ' '.join(str(text).split())
    return text if len(text) <= n else text[:n - 1] + '…'


def _clock(t: float) -> str:
    return f'{t:7.1f} s'


def figure_html(name: str, caption: str, png: bytes) -> str:
    data = base64.b64encode(png).decode('ascii')
    return (f'<figure id="fig-{esc(name.rsplit(".", 1)[0])}"><figcaption>{esc(caption)}'
            f'</figcaption><img class="figure" alt="{esc(caption)}" '
            f'src="data:image/png;base64,{data}"></figure>')


def thought_html(th: dict) -> str:
    """A thought as the thinking panel shows it."""
    if th['status']:
        label = THOUGHT_STATUS.get(th['status'], f'status {th["status"]}')
        return (f'<div class="thought problem"><span class="dim">{_clock(th["t"])}</span> '
                f'… thinking {esc(label)}: {esc(_short(th["status_msg"], 200))}</div>')
    idle = th['kind'] == 1
    head = 'Idle' if idle else f'Cycle {th["cycle"]}/{th["max_cycles"]}'
    sources = ', '.join(th['enriched_by']) or 'no memory yet'
    tail = f'—— {esc(sources)} s={th["salience"]:.2f}'
    if th['ready_to_act'] and th['action_json']:
        tail += f' → {esc(_short(th["action_json"], 120))}'
    elif th.get('why'):
        tail += ' → waits'
    elif th['converged']:
        tail += ' (converged)'
    if th.get('why'):
        tail += f' <span class="why">{esc(_short(th["why"], 200))}</span>'
    experience = (f'<div class="dim">experience: {esc(_short(th["experience"], 400))}</div>'
                  if th['experience'] else '')
    return (f'<div class="thought{" idle" if idle else ""}" data-cycle="{th["cycle"]}">'
            f'<span class="dim">{_clock(th["t"])}</span> <span class="head">{esc(head)}</span>'
            f' <span class="dim">{th["cycle_s"]:.1f}s</span> <span class="dim">enriched:</span>'
            f' <span class="src">{esc(sources)}</span>'
            f'<div>{esc(th["text"])}</div>{experience}'
            f'<div class="dim">{tail}</div></div>')


def _table(headers: list, rows: list, empty: str) -> str:
    if not rows:
        return f'<p class="dim">{esc(empty)}</p>'
    head = ''.join(f'<th>{esc(h)}</th>' for h in headers)
    body = ''.join('<tr>' + ''.join(f'<td>{c}</td>' for c in row) + '</tr>' for row in rows)
    return f'<table><tr>{head}</tr>{body}</table>'


def actions_html(s: Session) -> str:
    rows = []
    for r in s.results:
        o = outcome_of(r)
        if o == 'blocked':
            detail = (f'<span class="blocked">blocked: {esc(_short(r["blocked_reason"]))}</span> '
                      f'({esc(BLOCK_LAYERS.get(r["blocked_by"], r["blocked_by"]))})')
        elif o == 'success':
            detail = ('<span class="ok">✓</span>' + (' (verified)' if r['verified'] else '')
                      + f' {esc(_short(r["output"], 120))}')
        else:
            detail = (f'<span class="bad">✗ error {r["error_code"]}</span> '
                      f'{esc(_short(r["error_msg"] or r["output"], 160))}')
        rows.append([_clock(r['t']), esc(r['tool_name']),
                     f'<code>{esc(_short(r["arguments_json"], 160))}</code>', esc(o), detail,
                     f'{r["duration_s"]:.2f}'])
    return _table(['time', 'tool', 'arguments', 'outcome', 'detail', 'duration (s)'], rows,
                  'No tool results in this recording.')


def pain_html(s: Session) -> str:
    rows = [[_clock(p['t']), esc(p['type_name']), f'{p["intensity"]:.2f}', esc(p['source']),
             esc(_short(p['description']))] for p in s.pain]
    return _table(['time', 'type', 'intensity (0..1)', 'source', 'description'], rows,
                  'No pain in this recording.')


def percepts_html(s: Session, limit: int = 40) -> str:
    """The most salient percepts (a session has many; the timeline shows them all)."""
    top = sorted(s.percepts, key=lambda p: -p['salience'])[:limit]
    rows = [[_clock(p['t']), esc(PERCEPT_SOURCES.get(p['source'], p['source'])),
             esc(', '.join(p['labels'][:4])), esc(_short(p['narrative'])),
             f'{p["novelty"]:.2f}', f'{p["salience"]:.2f}']
            for p in sorted(top, key=lambda p: p['t'])]
    return _table(['time', 'source', 'seen', 'narrative', 'novelty', 'salience'], rows,
                  'No percepts in this recording.')


def provenance_html(s: Session) -> str:
    outcomes = {0: 'no-op', 1: 'thought only', 2: 'intent emitted'}
    rows = []
    for p in s.provenance:
        rec = p['record']
        rows.append([_clock(p['t']), esc(rec.get('idle_reason', p['idle_reason'])),
                     esc(p['model']), f'{p["temperature"]:g}', str(p['max_tokens']),
                     esc(outcomes.get(p['decision_outcome'], p['decision_outcome'])),
                     esc(p['intent_emitted']),
                     esc(p['suppression_reason'] if p['intent_suppressed'] else ''),
                     esc(_short(p['salience_summary'], 200)),
                     esc(str(rec.get('prompt_template_hash', ''))[:12])])
    idle = _table(['time', 'reason', 'tasks', 'next eligible in (s)'],
                  [[_clock(e['t']), esc(e['reason']), str(e['task_count']),
                    f'{e["next_eligible_in_s"]:.1f}'] for e in s.idle],
                  'No idle events in this recording.')
    return ('<h3>Idle events</h3>' + idle + '<h3>Idle cycles (provenance)</h3>' + _table(
        ['time', 'reason', 'model', 'temperature', 'max tokens', 'outcome', 'intent',
         'suppressed by', 'interoceptive summary', 'template'], rows,
        'No idle provenance records in this recording.'))


def parameters_html(s: Session, figures: dict) -> str:
    run = s.run_info()
    rows = [['model', esc(figures['model'] or 'not recorded')],
            ['graph', esc(run.get('graph', 'not recorded'))],
            ['started at', esc(run.get('started_at', 'not recorded'))],
            ['params file', esc(run.get('params_file', 'not recorded'))],
            ['requested duration (s)', esc(run.get('duration_s', 'not recorded'))],
            ['nodes', esc(', '.join(run.get('nodes') or []) or 'not recorded')]]
    out = _table(['', ''], rows, '')
    params = run.get('parameters') or {}
    if params:
        out += ''.join(f'<details><summary>{esc(node)} parameters</summary><pre>'
                       f'{esc(json.dumps(values, indent=2, sort_keys=True, default=str))}'
                       f'</pre></details>' for node, values in sorted(params.items()))
    else:
        out += ('<p class="dim">This recording carries no run parameters (recorded without '
                'the maxim_run metadata).</p>')
    return out


def numbers_html(figures: dict, other: dict | None = None) -> str:
    keys = ['duration_s', 'thoughts', 'deliberations', 'deliberation_thoughts',
            'idle_thoughts', 'mean_cycles_per_deliberation', 'cycle_s_mean', 'cycle_s_median',
            'llm_s_mean', 'enrichment_s_mean', 'mean_salience', 'converged_deliberations',
            'acted_deliberations', 'percepts', 'tool_calls', 'tool_outcomes', 'blocked_calls',
            'pain_events', 'max_pain', 'idle_events', 'idle_reasons', 'idle_cycles',
            'episodes', 'memory_at_end', 'promotion_at_end', 'enrichment_sources',
            'thought_problems']

    def cell(v):
        return esc(json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v)
    rows = [[esc(k), cell(figures.get(k))] + ([cell(other.get(k))] if other else [])
            for k in keys]
    return _table(['figure', 'A' if other else 'value'] + (['B'] if other else []), rows, '')


def session_html(s: Session, figures: dict, pngs: dict[str, bytes]) -> str:
    """The body of one session's report."""
    parts = [f'<section class="session"><h2>{esc(s.name)}</h2>',
             f'<p class="dim">{esc(s.path)}: {figures["duration_s"]:.1f} s recorded, '
             f'{sum(figures["messages"].values())} messages read.</p>',
             '<h3>Run</h3>', parameters_html(s, figures),
             '<h3>Figures</h3>', numbers_html(figures)]
    parts += [figure_html(name, caption, pngs[name]) for name, caption, _ in FIGURES]
    parts += ['<h3>Thought transcript</h3><div class="transcript">']
    parts += [thought_html(th) for th in s.thoughts] or [
        '<p class="dim">No thoughts in this recording.</p>']
    parts += ['</div>', '<h3>Actions</h3>', actions_html(s), '<h3>Pain</h3>', pain_html(s),
              '<h3>Most salient percepts</h3>', percepts_html(s), provenance_html(s),
              '</section>']
    return '\n'.join(parts)


def comparison_html(comparison: dict) -> str:
    prov = comparison['provenance']
    attribution = ', '.join(prov['attribution']) or 'no difference'
    if not comparison['a']['idle_cycles'] and not comparison['b']['idle_cycles']:
        attribution = 'nothing to compare: neither run recorded an idle cycle'
    rows = []
    for part in ('config', 'model', 'environment'):
        for name, diff in prov[part].items():
            rows.append([esc(part), esc(name), esc(json.dumps(diff.get('a', diff),
                                                              sort_keys=True)[:300]),
                         esc(json.dumps(diff.get('b', ''), sort_keys=True)[:300])])
    oc = prov['outcomes']
    for name in ('cycles', 'decision_outcome', 'suppression_reason', 'storage_reason'):
        rows.append(['outcome', esc(name), esc(json.dumps(oc[name]['a'], sort_keys=True)),
                     esc(json.dumps(oc[name]['b'], sort_keys=True))])
    params = [[esc(k), esc(json.dumps(v['a'], default=str)),
               esc(json.dumps(v['b'], default=str))]
              for k, v in comparison['parameters'].items()]
    return ('<section id="comparison"><h2>Comparison of the two runs</h2>'
            + numbers_html(comparison['a'], comparison['b'])
            + '<h3>Parameters that differ</h3>'
            + _table(['parameter', 'A', 'B'], params,
                     'The runs were started with the same parameters (or carry none).')
            + '<h3>Idle cycles: what the differences are due to</h3>'
            + f'<p id="attribution">Attribution: <b>{esc(attribution)}</b> '
            f'(same situation, different outcome: '
            f'{prov["same_situation_different_outcome"]}).</p>'
            + _table(['kind', 'field', 'A', 'B'], rows, '') + '</section>')


def page(title: str, body: str) -> str:
    return (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f'<title>{esc(title)}</title><style>{STYLE}</style>'
            f'<script>{CHECK_SCRIPT}</script></head>'
            f'<body data-figures="pending"><h1>{esc(title)}</h1>\n{body}\n</body></html>\n')
