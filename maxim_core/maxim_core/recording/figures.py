"""The report's figures, drawn with matplotlib (Agg: no display needed) from a Session.

One colour per kind of thing across every figure (COLOURS), time in seconds since the
recording began on every time axis, angles in degrees. A figure with nothing to draw says so
inside its axes rather than staying blank.
"""

from collections import Counter, defaultdict
import io
import math

import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # noqa: E402  (after the backend is chosen)
from matplotlib.ticker import MaxNLocator  # noqa: E402

from maxim_core.fear.agent import FearConfig  # noqa: E402
from maxim_core.recording.session import (  # noqa: E402
    ATTENTION_MODES, deliberations, outcome_of, Session)

COLOURS = {
    'percept': '#7f7f7f', 'thought': '#9467bd', 'idle_thought': '#c5b0d5',
    'success': '#2ca02c', 'failed': '#d62728', 'blocked': '#000000', 'pain': '#ff7f0e',
    'idle': '#17becf', 'pan': '#1f77b4', 'tilt': '#e377c2', 'target': '#bcbd22',
    'llm': '#9467bd', 'enrichment': '#8c564b', 'other': '#c7c7c7',
    'episodes': '#1f77b4', 'concepts': '#2ca02c', 'causal_links': '#d62728',
}
MODE_COLOURS = {0: '#eeeeee', 1: '#aec7e8', 2: '#ffbb78', 3: '#98df8a'}
DPI = 100


def _empty(ax, what: str, why: str = '') -> None:
    ax.text(0.5, 0.5, f'no {what} in this recording' + (f'\n({why})' if why else ''),
            ha='center', va='center',
            transform=ax.transAxes, color='#666666', fontsize=11, style='italic')


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format='png', dpi=DPI)
    plt.close(fig)
    return buf.getvalue()


def _time_axis(ax, s: Session) -> None:
    ax.set_xlim(0, max(1.0, s.duration_s))
    ax.grid(True, axis='x', alpha=0.3)


def block_thresholds(s: Session) -> tuple[float, float]:
    """The fear gate's NAc rule of the run (its parameters, else the defaults)."""
    fear = (s.run_info().get('parameters') or {}).get('fear') or {}
    defaults = FearConfig()
    return (float(fear.get('nac.block_value', defaults.nac_block_value)),
            float(fear.get('nac.block_confidence', defaults.nac_block_confidence)))


def timeline(s: Session) -> bytes:
    """Percepts, attention, thoughts, actions, pain and idle events, and the head, on one
    time axis."""
    fig, (ax1, ax2, ax3) = plt.subplots(3, 1, figsize=(12, 9), sharex=True,
                                        gridspec_kw={'height_ratios': [2, 2, 2]})
    fig.suptitle(f'Session timeline: {s.name}', fontsize=13)
    # 1: salience of percepts and thoughts
    ax1.set_title('What drew attention and what was thought', fontsize=10, loc='left')
    if s.percepts:
        ax1.scatter([p['t'] for p in s.percepts], [p['salience'] for p in s.percepts], s=10,
                    color=COLOURS['percept'], alpha=0.5, label='percept salience')
    delib = [th for th in s.thoughts if th['kind'] == 0 and th['status'] == 0]
    idle = [th for th in s.thoughts if th['kind'] == 1]
    if delib:
        ax1.scatter([th['t'] for th in delib], [th['salience'] for th in delib], s=60,
                    marker='D', color=COLOURS['thought'], edgecolor='black',
                    label='thought salience (label: cycle)', zorder=3)
        for th in delib:
            ax1.annotate(str(th['cycle']), (th['t'], th['salience']), fontsize=8,
                         xytext=(4, 4), textcoords='offset points')
    if idle:
        ax1.scatter([th['t'] for th in idle], [th['salience'] for th in idle], s=50,
                    marker='s', color=COLOURS['idle_thought'], edgecolor='black',
                    label='idle thought salience', zorder=3)
    problems = [th for th in s.thoughts if th['status']]
    if problems:
        ax1.scatter([th['t'] for th in problems], [0.0] * len(problems), s=70, marker='x',
                    color=COLOURS['pain'], label='thinking stopped (timeout, cancelled, ...)',
                    zorder=3)
    ax1.set_ylim(-0.05, 1.1)
    ax1.set_ylabel('salience (0..1)')
    if s.percepts or s.thoughts:
        ax1.legend(loc='upper right', fontsize=8)
    else:
        _empty(ax1, 'percepts or thoughts')
    _time_axis(ax1, s)
    # 2: lanes of events
    lanes = ['attention', 'actions', 'blocked', 'pain', 'idle']
    ax2.set_title('Attention mode, actions, blocked calls, pain and idle events', fontsize=10,
                  loc='left')
    for i, a in enumerate(s.attention):
        end = s.attention[i + 1]['t'] if i + 1 < len(s.attention) else s.duration_s
        ax2.barh(0, max(end - a['t'], 0.05), left=a['t'], height=0.6,
                 color=MODE_COLOURS.get(a['mode'], '#dddddd'), edgecolor='none')
    for t, label in _focus_changes(s.attention):
        ax2.annotate(label, (t, 0), fontsize=7, xytext=(0, 9), textcoords='offset points',
                     rotation=30)
    for r in s.results:
        o = outcome_of(r)
        lane = 2 if o == 'blocked' else 1
        ax2.scatter(r['t'], lane, s=70, marker='X' if o == 'blocked' else 'o',
                    color=COLOURS[o], zorder=3)
        ax2.annotate(r['tool_name'], (r['t'], lane), fontsize=7, xytext=(3, 6),
                     textcoords='offset points')
    for p in s.pain:
        ax2.scatter(p['t'], 3, s=40 + 160 * p['intensity'], marker='v', color=COLOURS['pain'],
                    edgecolor='black', zorder=3)
    for e in s.idle:
        ax2.scatter(e['t'], 4, s=50, marker='|', color=COLOURS['idle'], linewidths=2,
                    zorder=3)
    for t, reason in _reason_changes(s.idle):
        ax2.annotate(reason, (t, 4), fontsize=7, xytext=(3, 6), textcoords='offset points')
    handles = [plt.Rectangle((0, 0), 1, 1, color=MODE_COLOURS[m]) for m in ATTENTION_MODES]
    labels = [f'attention: {n}' for n in ATTENTION_MODES.values()]
    handles += [plt.Line2D([], [], marker=m, color=c, linestyle='') for m, c in (
        ('o', COLOURS['success']), ('o', COLOURS['failed']), ('X', COLOURS['blocked']),
        ('v', COLOURS['pain']), ('|', COLOURS['idle']))]
    labels += ['action succeeded', 'action failed', 'call blocked', 'pain (size: intensity)',
               'idle event']
    ax2.legend(handles, labels, loc='upper left', bbox_to_anchor=(1.0, 1.0), fontsize=7)
    ax2.set_yticks(range(len(lanes)), lanes)
    ax2.set_ylim(-0.6, len(lanes) - 0.4)
    if not (s.attention or s.results or s.pain or s.idle):
        _empty(ax2, 'attention states, actions, pain or idle events')
    _time_axis(ax2, s)
    # 3: head pan/tilt against the target
    ax3.set_title('Head: measured joints against the attention target', fontsize=10,
                  loc='left')
    series = [('pan', s.joints, 'pan', COLOURS['pan'], '-', 'measured pan (joint_states)'),
              ('tilt', s.joints, 'tilt', COLOURS['tilt'], '-', 'measured tilt (joint_states)')]
    drawn = False
    for _, rows, key, colour, style, label in series:
        pts = [(r['t'], math.degrees(r[key])) for r in rows if r[key] is not None]
        if pts:
            ax3.plot(*zip(*pts), style, color=colour, label=label, linewidth=1.2)
            drawn = True
    focus = [a for a in s.attention if a['has_focus']]
    if focus:
        ax3.scatter([a['t'] for a in focus], [math.degrees(a['focus_pan']) for a in focus],
                    s=8, color=COLOURS['pan'], marker='+', label='target pan (focus)')
        ax3.scatter([a['t'] for a in focus], [math.degrees(a['focus_tilt']) for a in focus],
                    s=8, color=COLOURS['tilt'], marker='+', label='target tilt (focus)')
        drawn = True
    if drawn:
        ax3.legend(loc='upper left', bbox_to_anchor=(1.0, 1.0), fontsize=7)
    else:
        _empty(ax3, 'joint states or attention targets')
    ax3.set_ylabel('angle (deg)')
    ax3.set_xlabel('time since the recording began (s)')
    _time_axis(ax3, s)
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return _png(fig)


def _focus_changes(states: list, min_gap_s: float = 3.0) -> list:
    """(t, label) where the attention focus moves to another target, at most one label per
    min_gap_s so a busy scene stays readable."""
    out, last, last_t = [], None, -min_gap_s
    for a in states:
        label = (a['focus_label'] or f"track {a['focus_track_id']}") if a['has_focus'] else ''
        if label and label != last and a['t'] - last_t >= min_gap_s:
            out.append((a['t'], label[:20]))
            last_t = a['t']
        last = label or last
    return out


def _reason_changes(events: list) -> list:
    """(t, reason) where the idle reason changes: labels without a label per event."""
    out, last = [], None
    for e in events:
        if e['reason'] != last:
            out.append((e['t'], e['reason']))
            last = e['reason']
    return out


def learning(s: Session) -> bytes:
    """NAc predicted value and confidence per tool and context after each episode."""
    fig, (ax1, ax2) = plt.subplots(2, 1, figsize=(12, 7), sharex=True)
    fig.suptitle('Learning curves: what the NAc predicts for each tool in each context',
                 fontsize=13)
    block_value, block_confidence = block_thresholds(s)
    curves = defaultdict(list)
    for u in s.memory:
        if u['prediction_available']:
            curves[(u['tool_name'], u['context'])].append(u)
    cmap = plt.get_cmap('tab10')
    for i, ((tool, context), rows) in enumerate(sorted(curves.items())):
        colour = cmap(i % 10)
        label = f'{tool} | {context}'[:60]
        ax1.plot([r['t'] for r in rows], [r['value'] for r in rows], '-o', color=colour,
                 label=label, markersize=4)
        ax2.plot([r['t'] for r in rows], [r['confidence'] for r in rows], '-o', color=colour,
                 label=label, markersize=4)
    ax1.axhline(block_value, color=COLOURS['blocked'], linestyle='--', linewidth=1,
                label=f'block when value < {block_value:g}')
    ax2.axhline(block_confidence, color=COLOURS['blocked'], linestyle='--', linewidth=1,
                label=f'... and confidence > {block_confidence:g}')
    ax1.set_ylabel('predicted value (0 bad .. 1 good)')
    ax2.set_ylabel('confidence (0..1)')
    ax2.set_xlabel('time since the recording began (s)')
    for ax in (ax1, ax2):
        ax.set_ylim(-0.05, 1.05)
        _time_axis(ax, s)
        ax.grid(True, alpha=0.3)
        ax.legend(loc='upper left', bbox_to_anchor=(1.0, 1.0), fontsize=7)
    if not curves:
        why = ('no episode with a tool was captured' if s.memory else
               'memory/updates not recorded')
        _empty(ax1, 'NAc predictions', why)
        _empty(ax2, 'NAc predictions', why)
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return _png(fig)


def memory_growth(s: Session) -> bytes:
    """Episodes, concepts and causal links after each captured episode."""
    fig, ax = plt.subplots(figsize=(12, 4))
    ax.set_title('Memory growth', fontsize=13)
    if s.memory:
        for key, style in (('episodes', '-'), ('concepts', '--'), ('causal_links', ':')):
            ax.step([u['t'] for u in s.memory], [u[key] for u in s.memory], where='post',
                    color=COLOURS[key], label=key.replace('_', ' ') + ' (memory/updates)',
                    linewidth=2, linestyle=style, marker='.')
        for u in s.memory:
            if u['session_end']:
                ax.axvline(u['t'], color='#555555', linestyle='--', linewidth=1)
                ax.annotate(f"session end: promotion created {u['concepts_created']}, "
                            f"reinforced {u['concepts_reinforced']} concepts",
                            (u['t'], u['concepts']), fontsize=8, xytext=(-6, 8),
                            textcoords='offset points', ha='right')
        ax.legend(loc='upper left', fontsize=8)
    elif s.episodes:
        ax.step([e['t'] for e in s.episodes], range(1, len(s.episodes) + 1), where='post',
                color=COLOURS['episodes'], label='episodes published this session')
        ax.legend(loc='upper left', fontsize=8)
        ax.text(0.99, 0.05, 'concepts and causal links: memory/updates not recorded',
                transform=ax.transAxes, ha='right', fontsize=9, color='#666666')
    else:
        _empty(ax, 'episodes or memory updates')
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel('records (count)')
    ax.set_xlabel('time since the recording began (s)')
    _time_axis(ax, s)
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    return _png(fig)


def deliberation(s: Session) -> bytes:
    """Cycles per deliberation, time per cycle, convergence and enrichment per cycle."""
    fig, axes = plt.subplots(2, 2, figsize=(12, 8))
    fig.suptitle('Deliberation', fontsize=13)
    groups = deliberations(s)
    ok = [th for g in groups.values() for th in g]
    ax = axes[0][0]
    ax.set_title('Cycles per deliberation', fontsize=10)
    counts = Counter(max(th['cycle'] for th in g) for g in groups.values())
    if counts:
        keys = sorted(counts)
        ax.bar(keys, [counts[k] for k in keys], color=COLOURS['thought'])
        ax.set_xticks(keys)
    else:
        _empty(ax, 'deliberations')
    ax.set_xlabel('cycles (count)')
    ax.set_ylabel('deliberations (count)')
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    ax = axes[0][1]
    ax.set_title('Time of each cycle', fontsize=10)
    if ok:
        xs = range(1, len(ok) + 1)
        llm = [th['llm_s'] for th in ok]
        enr = [th['enrichment_s'] for th in ok]
        other = [max(0.0, th['cycle_s'] - a - b) for th, a, b in zip(ok, llm, enr)]
        ax.bar(xs, llm, color=COLOURS['llm'], label='LLM')
        ax.bar(xs, enr, bottom=llm, color=COLOURS['enrichment'], label='enrichment')
        ax.bar(xs, other, bottom=[a + b for a, b in zip(llm, enr)], color=COLOURS['other'],
               label='rest of the cycle')
        ax.legend(fontsize=8)
    else:
        _empty(ax, 'deliberation cycles')
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel('cycle, in session order')
    ax.set_ylabel('duration (s)')
    ax = axes[1][0]
    ax.set_title('Convergence: word Jaccard with the previous thought', fontsize=10)
    if ok:
        for n, g in enumerate(groups.values()):
            ax.plot([th['cycle'] for th in g], [th['jaccard_previous'] for th in g], '-o',
                    color=COLOURS['thought'], alpha=0.6, markersize=4,
                    label='a deliberation' if n == 0 else None)
            for th in g:
                if th['converged']:
                    ax.scatter(th['cycle'], th['jaccard_previous'], s=90, facecolor='none',
                               edgecolor=COLOURS['success'], zorder=3,
                               label='converged' if n == 0 else None)
        ax.set_ylim(-0.05, 1.05)
        ax.legend(fontsize=8)
    else:
        _empty(ax, 'deliberation cycles')
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel('cycle within the deliberation')
    ax.set_ylabel('Jaccard similarity (0..1)')
    ax = axes[1][1]
    ax.set_title('Bio-systems that answered, by cycle', fontsize=10)
    by_cycle: dict = defaultdict(Counter)
    for th in ok:
        for src in th['enriched_by']:
            by_cycle[th['cycle']][src] += 1
    sources = sorted({src for c in by_cycle.values() for src in c})
    if sources:
        cycles = sorted(by_cycle)
        cmap = plt.get_cmap('tab10')
        bottom = [0] * len(cycles)
        for i, src in enumerate(sources):
            vals = [by_cycle[c][src] for c in cycles]
            ax.bar(cycles, vals, bottom=bottom, color=cmap(i % 10), label=src)
            bottom = [b + v for b, v in zip(bottom, vals)]
        ax.set_xticks(cycles)
        ax.legend(fontsize=8)
    else:
        _empty(ax, 'enrichment', 'no bio-system answered a deliberation cycle')
    ax.set_xlabel('cycle within the deliberation')
    ax.set_ylabel('answers (count)')
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    fig.tight_layout(rect=(0, 0, 1, 0.96))
    return _png(fig)


def tool_outcomes(s: Session) -> bytes:
    """Successes, failures and blocks per tool."""
    per_tool: dict = defaultdict(Counter)
    for r in s.results:
        per_tool[r['tool_name']][outcome_of(r)] += 1
    tools = sorted(per_tool)
    fig, ax = plt.subplots(figsize=(12, max(2.5, 0.5 * len(tools) + 1.5)))
    ax.set_title('Tool outcomes', fontsize=13)
    if tools:
        left = [0] * len(tools)
        for outcome in ('success', 'failed', 'blocked'):
            vals = [per_tool[t][outcome] for t in tools]
            ax.barh(tools, vals, left=left, color=COLOURS[outcome], label=outcome)
            left = [a + b for a, b in zip(left, vals)]
        ax.legend(fontsize=8)
        ax.invert_yaxis()
    else:
        _empty(ax, 'tool results')
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel('calls (count)')
    fig.tight_layout()
    return _png(fig)


# (file name, caption, drawing function), in the order the page shows them.
FIGURES = [
    ('timeline.png', 'Session timeline', timeline),
    ('learning.png', 'Learning curves (NAc)', learning),
    ('memory.png', 'Memory growth', memory_growth),
    ('deliberation.png', 'Deliberation statistics', deliberation),
    ('tools.png', 'Tool outcomes', tool_outcomes),
]


def draw_all(s: Session) -> dict[str, bytes]:
    """{file name: PNG bytes} of every figure."""
    return {name: draw(s) for name, _, draw in FIGURES}
