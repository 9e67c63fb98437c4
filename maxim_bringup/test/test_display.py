"""The console formatting: what a person reads while the robot runs."""

import json

from rich.console import Console

from maxim_bringup import display


def render(markup: str) -> str:
    console = Console(width=120, record=True, color_system=None)
    console.print(markup)
    return console.export_text()


def test_thought_block_reads_like_the_thought_stream():
    text = render(display.format_thought({
        'cycle': 1, 'max_cycles': 3, 'cycle_s': 8.2, 'enriched_by': ['hippocampus', 'nac'],
        'text': 'I notice the red ball moving to the left. [it] is new.', 'salience': 0.69,
    }))
    lines = text.splitlines()
    assert lines[0].startswith('Cycle 1/3 8.2s enriched: hippocampus, nac')
    assert 'I notice the red ball moving to the left. [it] is new.' in text
    assert 'hippocampus, nac s=0.69' in lines[-1]


def test_a_choice_shows_its_action_and_why_it_won():
    act = render(display.format_thought({
        'cycle': 1, 'max_cycles': 3, 'text': 'The red ball.', 'ready_to_act': True,
        'action_json': json.dumps({'tool': 'track_target', 'args': {'target_label': 'ball'}}),
        'why': 'because I was asked to; not move left, which hurt before'})).splitlines()
    assert 'track_target' in act[-2] and act[-1].strip() == \
        'because I was asked to; not move left, which hurt before'
    wait = render(display.format_thought({'cycle': 1, 'max_cycles': 3, 'text': 'A cup.',
                                          'why': 'because nothing calls for an act'}))
    assert '→ waits' in wait and wait.splitlines()[-1].strip() == \
        'because nothing calls for an act'


def test_failed_thought_names_its_status():
    text = render(display.format_thought({'status': 1, 'status_msg': 'no answer in 20 s'}))
    assert 'timeout' in text and 'no answer in 20 s' in text


def test_blocked_action_shows_reason_and_layer():
    text = render(display.format_tool_result({
        'call': {'tool_name': 'bash', 'arguments_json': json.dumps({'command': 'rm -rf /'})},
        'blocked': True, 'blocked_reason': 'destructive command', 'blocked_by': 1,
    }))
    assert 'blocked' in text and 'rm -rf /' in text and 'destructive command' in text
    assert 'pattern rules' in text


def test_successful_and_failed_actions():
    ok = render(display.format_tool_result({
        'call': {'tool_name': 'move', 'arguments_json': '{"pan": 0.3}'}, 'success': True,
        'verified': True, 'output': '{"reached": true}'}))
    assert 'move' in ok and '✓' in ok and 'verified' in ok and 'reached=True' in ok
    bad = render(display.format_tool_result({
        'call': {'tool_name': 'read_file', 'arguments_json': '{}'}, 'success': False,
        'error_msg': 'no such file'}))
    assert '✗' in bad and 'no such file' in bad


def test_pain_and_percept_lines():
    pain = render(display.format_pain({'type_name': 'movement_error', 'intensity': 0.4,
                                       'source': 'head_pan_joint'}))
    assert 'movement_error' in pain and '0.40' in pain and '████' in pain
    percept = render(display.format_percept({
        'source': 0, 'people': [{'label': 'face'}], 'objects': [{'label': 'red object'}],
        'novelty': 0.8, 'salience': 0.7}))
    assert 'vision' in percept and 'face, red object' in percept and 'novelty 0.80' in percept


def test_a_forming_thought_is_one_quiet_line_before_its_cycle():
    text = render(display.format_thought({'kind': 3, 'cycle': 1, 'max_cycles': 3,
                                          'text': 'A person asks me\nabout the red ball.'}))
    assert text.strip() == '… A person asks me about the red ball.'
