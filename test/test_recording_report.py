"""The session report: a recording built from real messages (serialized as DDS carries them,
written by the project's MCAP recorder), its numbers recomputed from the file's messages, its
page and figures, the comparison of two runs, and the page rendered in headless Chromium."""

from collections import Counter
from dataclasses import replace
import json
import os
import shutil
import subprocess

import pytest

from maxim_core.conversions import provenance_to_msg
from maxim_core.idle.controller import IdleConfig, IdleIntrospectionController
from maxim_core.idle.eligibility import assess
from maxim_core.idle.provenance import ProvenanceLog, ProvenanceRecord
from maxim_core.idle.tasks import TaskStore
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.recording.report import main as report_main, write_report
from maxim_core.recording.writer import McapRecorder, read_messages, read_metadata
from maxim_eval.soak.idle import SimClock

S = 1_000_000_000
T0 = 1_800_000_000 * S
THOUGHTS = [  # (deliberation, cycle, text, salience, enriched_by, converged, action)
    ('d1', 1, 'A red ball rolls in from the left.', 0.62, ['hippocampus'], False, ''),
    ('d1', 2, 'The red ball is new; I want to look at it.', 0.55, ['hippocampus', 'nac'],
     False, ''),
    ('d1', 3, 'I will look at the red ball.', 0.5, ['nac'], True,
     '{"tool": "look_at", "args": {"target": "red ball"}}'),
    ('d2', 1, 'A person waves at me.', 0.8, ['ec'], False,
     '{"tool": "speak", "args": {"text": "hello"}}'),
]
TOOLS = [  # (tool, args, success, blocked, error_code)
    ('look_at', '{"target": "red ball"}', True, False, 0),
    ('speak', '{"text": "hello"}', False, False, 5),
    ('speak', '{"text": "hello again"}', False, True, 4),
]


def serialize(msg):
    from rclpy.serialization import serialize_message
    return serialize_message(msg)


def provenance_records(tmp_path, name, temperature):
    """Idle cycles run by the real idle controller (scripted model), as provenance records."""
    clock = SimClock()
    store = TaskStore(str(tmp_path / f'{name}.db'), clock=clock)
    path = str(tmp_path / f'{name}.jsonl')
    controller = IdleIntrospectionController(
        ScriptedBackend(['All quiet; nothing to do.'], clock=clock), store, lambda n, w: [],
        replace(IdleConfig(), temperature=temperature), provenance_log=ProvenanceLog(path),
        clock=clock)
    for _ in range(2):
        controller.run_cycle(assess(store, None, clock()))
        clock.advance(60)
    store.close()
    with open(path, encoding='utf-8') as f:
        return [json.loads(line) for line in f if line.strip()]


def build_session(tmp_path, name='a', temperature=0.7, thoughts=THOUGHTS):
    """A short session's messages through McapRecorder, as the recorder node writes them."""
    from maxim_core.recording.config import DEFAULT_TOPICS
    from maxim_interfaces.msg import (AttentionState, Detection, Episode, IdleEvent,
                                      IdleProvenance, MemoryUpdate, PainSignal, Percept,
                                      Thought, ToolCall, ToolResult)
    from sensor_msgs.msg import JointState

    path = str(tmp_path / f'{name}.mcap')
    rec = McapRecorder(path)
    rec.add_metadata('maxim_run', {
        'graph': json.dumps('sim'), 'started_at': json.dumps('2027-01-15T08:00:00+0000'),
        'parameters': json.dumps({'llm': {'model_path': f'/models/{name}.gguf'},
                                  'fear': {'nac.block_value': 0.1}})})
    for entry in DEFAULT_TOPICS:
        topic, _, type_name = entry.partition(':')
        rec.add_topic(topic, type_name)

    def put(topic, msg, t):
        assert rec.write(topic, serialize(msg), T0 + int(t * S))

    for i in range(10):
        t = 0.5 * i
        put('joint_states', JointState(name=['head_pan_joint', 'head_tilt_joint'],
                                       position=[0.05 * i, -0.02 * i]), t)
        ball = Detection(track_id=3, label='red ball', pan=0.3, tilt=-0.1, salience=0.7)
        put('attention/state', AttentionState(mode=AttentionState.MODE_TRACK, has_focus=True,
                                              focus_track_id=3, focus_pan=0.3,
                                              focus_tilt=-0.1, targets=[ball]), t + 0.1)
        put('percepts', Percept(percept_id=f'p{i}', narrative='A red ball.', objects=[ball],
                                novelty=0.5, salience=0.1 * i), t + 0.2)
    if thoughts:              # the first thought as soon as it was written, then its cycle
        put('thoughts', Thought(kind=Thought.KIND_FORMING, deliberation_id=thoughts[0][0],
                                cycle=1, max_cycles=3, text=thoughts[0][2]), 4.5)
    for i, (did, cycle, text, sal, enriched, conv, action) in enumerate(thoughts):
        put('thoughts', Thought(deliberation_id=did, cycle=cycle, max_cycles=3, text=text,
                                salience=sal, enriched_by=enriched, converged=conv,
                                jaccard_previous=0.2 * cycle, ready_to_act=bool(action),
                                action_json=action, llm_s=2.0 + i, enrichment_s=0.1,
                                cycle_s=2.5 + i,
                                why='because I was asked to' if action else ''), 5 + i)
    put('thoughts', Thought(kind=Thought.KIND_STATUS, status=Thought.STATUS_TIMEOUT,
                            status_msg='the model did not answer in 30 s'), 9.5)
    for i, (tool, args, ok, blocked, code) in enumerate(TOOLS):
        call = ToolCall(call_id=f'c{i}', tool_name=tool, arguments_json=args)
        put('tool_calls', call, 10 + i)
        put('tool_results', ToolResult(call=call, success=ok, blocked=blocked,
                                       blocked_reason='NAc predicts a bad outcome' if blocked
                                       else '', blocked_by=3 if blocked else 0,
                                       error_code=code, error_msg='' if ok else 'no voice',
                                       duration_s=0.2), 10.5 + i)
        put('episodes', Episode(episode_id=f'e{i}', tool_name=tool, success=ok,
                                blocked=blocked, valence=1.0 if ok else -1.0), 10.6 + i)
        put('memory/updates', MemoryUpdate(
            episode_id=f'e{i}', tool_name=tool, context='red_ball', learned=not blocked,
            prediction_available=True, value=0.9 if ok else 0.3 - 0.1 * i,
            confidence=0.2 * (i + 1), observations=i + 1, episodes=i + 1, concepts=i // 2,
            causal_links=i + 1), 10.7 + i)
    put('memory/updates', MemoryUpdate(session_end=True, concepts_created=2,
                                       concepts_reinforced=1, episodes=3, concepts=3,
                                       causal_links=3), 30)
    put('pain', PainSignal(type_name='tool_failure', intensity=0.45, source='speak',
                           description='speak failed: no voice'), 11.6)
    for i, record in enumerate(provenance_records(tmp_path, name, temperature)):
        put('idle', IdleEvent(idle_reason=IdleEvent.REASON_NO_TASKS,
                              idle_reason_name='no_tasks', next_eligible_in_s=-1.0), 20 + i)
        put('idle/provenance', provenance_to_msg(ProvenanceRecord(**record), IdleProvenance()),
            20.5 + i)
    rec.close()
    return path


@pytest.fixture
def session(tmp_path):
    return build_session(tmp_path)


def test_every_number_is_recomputed_from_the_messages(session, tmp_path):
    """report.json against an independent count over the raw messages of the file."""
    numbers = write_report(session, str(tmp_path / 'out'))
    with open(tmp_path / 'out' / 'report.json', encoding='utf-8') as f:
        assert json.load(f) == json.loads(json.dumps(numbers))
    msgs = read_messages(session)
    by_topic: dict = {}
    for topic, stamp, m in msgs:
        by_topic.setdefault(topic, []).append((stamp, m))
    assert numbers['messages'] == {k: len(v) for k, v in by_topic.items()
                                   if k != 'camera/image_raw'}
    assert numbers['duration_s'] == pytest.approx((msgs[-1][1] - msgs[0][1]) / 1e9)
    from maxim_interfaces.msg import Thought
    forming = [m for _, m in by_topic['thoughts'] if m.kind == Thought.KIND_FORMING]
    thoughts = [m for _, m in by_topic['thoughts'] if m.kind != Thought.KIND_FORMING]
    ok = [m for m in thoughts if m.kind == 0 and m.status == 0]
    assert numbers['thoughts'] == len(thoughts) == 5      # a forming thought is no thought
    assert numbers['forming_thoughts'] == len(forming) == 1
    assert numbers['deliberation_thoughts'] == len(ok) == 4
    assert numbers['thought_problems'] == {'timeout': 1}
    cycles: dict = {}
    for m in ok:
        cycles[m.deliberation_id] = max(cycles.get(m.deliberation_id, 0), m.cycle)
    assert numbers['deliberations'] == len(cycles) == 2
    assert numbers['cycles_per_deliberation'] == {
        str(k): v for k, v in Counter(cycles.values()).items()} == {'3': 1, '1': 1}
    assert numbers['cycle_s_mean'] == pytest.approx(
        sum(m.cycle_s for m in ok) / len(ok), abs=1e-4)
    assert numbers['mean_salience'] == pytest.approx(
        sum(m.salience for m in ok) / len(ok), abs=1e-4)
    assert numbers['converged_deliberations'] == 1 and numbers['acted_deliberations'] == 2
    assert numbers['enrichment_sources'] == dict(Counter(
        s for m in ok for s in m.enriched_by))
    results = [m for _, m in by_topic['tool_results']]
    assert numbers['tool_outcomes'] == dict(Counter(
        'blocked' if r.blocked else 'success' if r.success else 'failed' for r in results))
    assert numbers['tool_outcomes'] == {'success': 1, 'failed': 1, 'blocked': 1}
    assert numbers['tool_outcomes_by_tool']['speak'] == {'failed': 1, 'blocked': 1}
    assert numbers['max_pain'] == pytest.approx(max(m.intensity for _, m in by_topic['pain']))
    assert numbers['idle_reasons'] == {'no_tasks': len(by_topic['idle'])}
    assert numbers['idle_cycles'] == len(by_topic['idle/provenance']) == 2
    last = by_topic['memory/updates'][-1][1]
    assert last.session_end and numbers['promotion_at_end'] == {
        'concepts_created': last.concepts_created,
        'concepts_reinforced': last.concepts_reinforced}
    assert numbers['memory_updates'] == sum(1 for _, m in by_topic['memory/updates']
                                            if not m.session_end) == 3
    assert numbers['memory_at_end'] == {'episodes': last.episodes, 'concepts': last.concepts,
                                        'causal_links': last.causal_links}
    last_speak = [m for _, m in by_topic['memory/updates'] if m.tool_name == 'speak'][-1]
    nac = numbers['nac_at_end']['speak | red_ball']
    assert nac['value'] == pytest.approx(last_speak.value)
    assert nac['confidence'] == pytest.approx(last_speak.confidence)
    assert numbers['model'] == '/models/a.gguf'
    assert read_metadata(session)['maxim_run']['graph'] == '"sim"'


def test_page_holds_the_figures_transcript_actions_and_provenance(session, tmp_path):
    out = tmp_path / 'out'
    numbers = write_report(session, str(out))
    for name in numbers['plots']:
        with open(out / name, 'rb') as f:
            assert f.read(8) == b'\x89PNG\r\n\x1a\n'
    html = (out / 'report.html').read_text(encoding='utf-8')
    assert html.count('<img class="figure"') == 5 == len(numbers['plots'])
    assert 'http://' not in html and 'https://' not in html  # self-contained
    for _, cycle, text, sal, enriched, _, _ in THOUGHTS:
        assert text in html
        assert f'{", ".join(enriched)}</span>' in html
        assert f's={sal:.2f}' in html
    assert 'Cycle 3/3' in html and '… thinking timeout' in html
    assert '<span class="why">because I was asked to</span>' in html    # why it acted
    for tool, args, *_ in TOOLS:
        assert tool in html and json.dumps(json.loads(args)).replace('"', '&quot;') in html
    assert 'NAc predicts a bad outcome' in html and 'learned prediction (NAc)' in html
    assert html.count('All quiet') == 0 or 'no_tasks' in html
    assert html.count('no_tasks') >= 2 and '/models/a.gguf' in html


def test_figures_without_data_say_so(tmp_path):
    """A recording with thoughts only: the empty figures carry a 'no ... in this recording'
    note (checked through the figure's text, which matplotlib keeps in the SVG)."""
    import matplotlib.pyplot as plt
    from maxim_core.recording import figures as figs
    from maxim_core.recording.session import load
    path = build_session(tmp_path, 'empty', thoughts=[])
    s = load(path)
    s.results, s.memory, s.episodes = [], [], []
    captured = []
    real_png = figs._png

    def keep_text(fig):
        captured.append(' '.join(t.get_text() for ax in fig.axes for t in ax.texts))
        return real_png(fig)
    figs._png = keep_text
    try:
        figs.memory_growth(s)
        figs.tool_outcomes(s)
        figs.deliberation(s)
        figs.learning(s)
    finally:
        figs._png = real_png
        plt.close('all')
    assert 'no episodes or memory updates in this recording' in captured[0]
    assert 'no tool results in this recording' in captured[1]
    assert 'no deliberations in this recording' in captured[2]
    assert 'no NAc predictions in this recording' in captured[3]
    assert 'memory/updates not recorded' in captured[3]


def test_two_runs_side_by_side_with_the_idle_comparison(tmp_path):
    a = build_session(tmp_path, 'a', temperature=0.7)
    b = build_session(tmp_path, 'b', temperature=0.2, thoughts=THOUGHTS[:2])
    out = tmp_path / 'cmp'
    assert report_main([a, b, '--out', str(out)]) == 0
    report = json.loads((out / 'report.json').read_text(encoding='utf-8'))
    assert report['provenance']['attribution'] == ['model']
    assert set(report['provenance']['model']) == {'temperature'}
    assert report['parameters'] == {'llm.model_path': {'a': '/models/a.gguf',
                                                       'b': '/models/b.gguf'}}
    assert report['a']['deliberations'] == 2 and report['b']['deliberations'] == 1
    html = (out / 'report.html').read_text(encoding='utf-8')
    assert 'Run A' in html and 'Run B' in html and 'Attribution: <b>model</b>' in html
    assert html.count('<img class="figure"') == 10


def test_cli_errors_are_one_line(tmp_path, capsys):
    assert report_main([str(tmp_path / 'missing.mcap')]) == 2
    assert 'no such recording' in capsys.readouterr().err
    bad = tmp_path / 'bad.mcap'
    bad.write_bytes(b'not an mcap file')
    assert report_main([str(bad)]) == 2
    assert 'not a readable MCAP recording' in capsys.readouterr().err
    assert report_main([str(bad)] * 3) == 2


CHROMIUM = shutil.which('chromium') or shutil.which('chromium-browser')


@pytest.mark.skipif(CHROMIUM is None, reason='chromium is not installed (scripts/bootstrap.sh '
                    'installs the Debian package when it runs as root)')
def test_page_in_headless_chromium(session, tmp_path):
    """The page as a person sees it: every figure decoded (the page's own load check), the
    transcript in the rendered DOM, and a screenshot with the figures' pixels in it."""
    import cv2
    numbers = write_report(session, str(tmp_path / 'out'))
    url = 'file://' + numbers['html']
    base = [CHROMIUM, '--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars',
            '--disable-dev-shm-usage', '--no-first-run', '--virtual-time-budget=10000',
            f'--user-data-dir={tmp_path / "profile"}']
    dom = subprocess.run(base + ['--dump-dom', url], capture_output=True, text=True,
                         timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-figures="5/5"' in dom.stdout, dom.stdout[:500]
    assert 'class="broken"' not in dom.stdout
    for _, _, text, *_ in THOUGHTS:
        assert text in dom.stdout
    shot = tmp_path / 'shot.png'
    run = subprocess.run(base + [f'--screenshot={shot}', '--window-size=1400,4000', url],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0 and shot.exists(), run.stderr[-2000:]
    img = cv2.imread(str(shot))
    assert img is not None and img.shape[1] == 1400
    # The timeline's colours are on screen: thought markers (purple) and an action (green).
    purple = cv2.inRange(img, (180, 95, 140), (200, 110, 155))   # #9467bd in BGR
    green = cv2.inRange(img, (35, 150, 35), (50, 165, 50))       # #2ca02c
    assert cv2.countNonZero(purple) > 50 and cv2.countNonZero(green) > 20
    keep = os.environ.get('MAXIM_REPORT_SCREENSHOT')
    if keep:
        shutil.copy(shot, keep)
    # The comparison page of two runs: both runs' figures and the attribution.
    b = build_session(tmp_path, 'b', temperature=0.2, thoughts=THOUGHTS[:2])
    out = tmp_path / 'cmp'
    assert report_main([session, b, '--out', str(out)]) == 0
    dom = subprocess.run(base + ['--dump-dom', 'file://' + str(out / 'report.html')],
                         capture_output=True, text=True, timeout=120)
    assert dom.returncode == 0, dom.stderr[-2000:]
    assert 'data-figures="10/10"' in dom.stdout
    assert 'Attribution: <b>model</b>' in dom.stdout and THOUGHTS[3][2] in dom.stdout
