"""Robot, filesystem (by mode), code/git, communication and introspection tools."""

import json
import shutil
import subprocess

import pytest

from maxim_common.errors import ERROR_INVALID_ARGUMENTS, ERROR_UNAVAILABLE
from maxim_common.urdf import read_head_limits
from maxim_core.tools.code import code_tools, parse_junit
from maxim_core.tools.communication import communication_tools, SpeakTool
from maxim_core.tools.filesystem import filesystem_tools, Sandbox
from maxim_core.tools.introspection import introspection_tools
from maxim_core.tools.catalog import build_tool_registry
from maxim_core.tools.robot import MODE_MOVE, MODE_TRACK_TARGET, robot_tools


def by_name(tools):
    return {t.name: t for t in tools}


# -- robot ------------------------------------------------------------------------------------
def test_robot_tools_send_head_goals_and_say_headless():
    sent = []
    t = by_name(robot_tools(sent.append))
    out = t['move'].run({'pan': 0.5, 'tilt': -0.2})
    assert out.success and sent[-1]['mode'] == MODE_MOVE and sent[-1]['pan'] == 0.5
    assert set(sent[-1]) == {'goal_id', 'requested_by', 'mode', 'pan', 'tilt', 'track_id',
                             'target_label', 'speed', 'duration_s'}
    assert t['track_target'].run({'target_label': 'person'}).success
    assert sent[-1]['mode'] == MODE_TRACK_TARGET and sent[-1]['target_label'] == 'person'
    assert not t['track_target'].run({}).success
    # No limits handed in: the head controller's clamp is the check, the goal goes.
    assert t['move'].run({'pan': 3.0, 'tilt': 0}).success
    limited = by_name(robot_tools(sent.append, limits=read_head_limits()))
    sent.clear()
    assert not limited['move'].run({'pan': 3.0, 'tilt': 0}).success   # beyond the URDF's
    assert sent == []
    assert t['novelty_track'].run({}).success and t['focus_interests'].run({}).success
    headless = by_name(robot_tools(None))['move'].run({'pan': 0.1, 'tilt': 0})
    assert not headless.success and headless.error_code == ERROR_UNAVAILABLE
    assert headless.output['headless'] is True


def test_the_move_tool_checks_and_describes_the_limits_it_is_handed(tmp_path):
    """The URDF is the limits' one source: a URDF with other limits changes what move
    refuses and what the model reads, and nothing else had to change."""
    from maxim_common.urdf import shipped_urdf
    text = open(shipped_urdf(), encoding='utf-8').read()
    narrow = tmp_path / 'narrow.urdf'
    narrow.write_text(text.replace('lower="-2.6" upper="2.6"', 'lower="-1.1" upper="0.9"'))
    limits = read_head_limits(str(narrow))
    assert limits == {'pan': (-1.1, 0.9), 'tilt': (-0.8, 0.8)}
    sent = []
    move = by_name(robot_tools(sent.append, limits=limits))['move']
    assert not move.run({'pan': 1.0, 'tilt': 0}).success and sent == []
    assert move.run({'pan': 0.85, 'tilt': 0}).success
    described = build_tool_registry(head_limits=limits).descriptions['move']['params']
    assert described['pan'] == 'radians, left positive, -1.1..0.9'
    assert described['tilt'] == 'radians, down positive (REP 103), -0.8..0.8'
    plain = build_tool_registry().descriptions['move']['params']
    assert plain['pan'] == 'radians, left positive'       # unknown: no range is claimed


def test_the_body_offers_a_glance_each_way_in_the_words_a_request_uses():
    """A person asks to turn the head; the robot's thought says it will move further left.
    A glance to the side phrased only "look left" shared neither word, and the model's
    liking went to "predict outcome move" and to replies instead (limit_pain failed 3 of 5
    seeds live; with these words it passed 6 of 6)."""
    glances = dict((phrase, args) for args, phrase in by_name(robot_tools(None))['move']
                   .proposals())
    assert glances['turn my head left']['pan'] > 0 > glances['turn my head right']['pan']
    assert glances['look up']['tilt'] < 0 < glances['look down']['tilt']
    assert all(a['relative'] for a in glances.values())


@pytest.mark.parametrize('args', [
    {'pan': 0.1, 'tilt': 0.0, 'relative': True, 'speed': float('nan')},
    {'pan': float('nan'), 'tilt': 0.0, 'relative': True},
    {'pan': 0.1, 'tilt': float('-inf'), 'relative': True},
    {'pan': 0.1, 'tilt': 0.0, 'duration_s': float('nan')},
    {'pan': 0.1, 'tilt': 0.0, 'duration_s': float('inf')},
    {'pan': 0.1, 'tilt': 0.0, 'speed': -0.5},
    {'pan': 0.1, 'tilt': 0.0, 'speed': 1.5},
    {'pan': 0.1, 'tilt': 0.0, 'duration_s': -1},
    {'pan': 10 ** 400, 'tilt': 0.0},
    {'pan': float('nan'), 'tilt': 0.0},
])
def test_move_refuses_every_number_that_is_not_finite_and_in_range(args):
    sent = []
    out = by_name(robot_tools(sent.append))['move'].run(args)
    assert not out.success and out.error_code == ERROR_INVALID_ARGUMENTS, out
    assert sent == [], 'a refused move must send no goal'


def test_move_refusal_is_typed_even_without_schema_validation():
    sent = []
    move = by_name(robot_tools(sent.append))['move']
    from maxim_core.tools.base import ToolInputError
    for kw in ({'speed': float('nan')}, {'speed': -0.1}, {'duration_s': float('nan')}):
        with pytest.raises(ToolInputError):
            move.execute(pan=0.1, tilt=0.0, relative=True, **kw)
    for tool, kw in (('focus_interests', {'duration_s': float('nan')}),
                     ('novelty_track', {'duration_s': -3.0}),
                     ('track_target', {'track_id': -1}),
                     ('track_target', {'target_label': 'a', 'duration_s': float('inf')})):
        with pytest.raises(ToolInputError):
            by_name(robot_tools(sent.append))[tool].execute(**kw)
    assert sent == []


# -- filesystem ------------------------------------------------------------------------------
@pytest.fixture
def ws(tmp_path):
    root = tmp_path / 'ws'
    root.mkdir()
    (root / 'notes.txt').write_text('a\nTODO: x\nTODO: y\n')
    (tmp_path / 'outside.txt').write_text('secret-ish')
    return root


def test_passive_reads_inside_only_and_never_writes(ws):
    t = by_name(filesystem_tools(Sandbox('passive', ws)))
    assert t['read_file'].run({'path': 'notes.txt'}).output['total_lines'] == 3
    assert not t['read_file'].run({'path': '../outside.txt'}).success
    assert not t['read_file'].run({'path': str(ws.parent / 'outside.txt')}).success
    out = t['write_file'].run({'path': 'new.txt', 'content': 'x'})
    assert not out.success and 'passive' in out.error_msg and not (ws / 'new.txt').exists()
    assert not t['edit_file'].run({'path': 'notes.txt', 'old_text': 'a',
                                   'new_text': 'b'}).success
    assert t['glob'].run({'pattern': '*.txt'}).output['paths'] == ['notes.txt']
    assert not t['glob'].run({'pattern': '../*'}).success
    assert 'notes.txt' in t['bash'].run({'command': 'ls'}).output['stdout']
    for cmd in ('ls | wc -l', 'touch x', 'cat ../outside.txt', 'find . -delete',
                'echo $HOME', 'rm notes.txt'):
        assert not t['bash'].run({'command': cmd}).success, cmd
    assert (ws / 'notes.txt').exists()


def test_active_writes_inside_and_runs_dev_commands(ws):
    t = by_name(filesystem_tools(Sandbox('active', ws)))
    assert t['write_file'].run({'path': 'sub/new.txt', 'content': 'hello'}).success
    assert (ws / 'sub' / 'new.txt').read_text() == 'hello'
    assert not t['write_file'].run({'path': '../escape.txt', 'content': 'x'}).success
    assert not (ws.parent / 'escape.txt').exists()
    out = t['bash'].run({'command': 'mkdir -p d && echo hi > d/f.txt && cat d/f.txt | wc -c'})
    assert out.success and out.output['stdout'].strip() == '3'
    for cmd in ('echo x > ../escape.txt', 'cat $(echo notes.txt)', 'curl http://x',
                'cat ../outside.txt', 'echo `id`'):
        assert not t['bash'].run({'command': cmd}).success, cmd
    assert not t['bash'].run({'command': 'false'}).success     # exit code counts


def test_singularity_reads_outside_but_not_secrets(ws):
    t = by_name(filesystem_tools(Sandbox('singularity', ws)))
    assert t['read_file'].run({'path': str(ws.parent / 'outside.txt')}).success
    assert not t['read_file'].run({'path': '~/.ssh/id_rsa'}).success
    assert not t['write_file'].run({'path': '/usr/local/maxim_x.txt', 'content': 'x'}).success
    out = t['bash'].run({'command': 'echo $((1 + 2)) | cat'})
    assert out.success and out.output['stdout'].strip() == '3'
    assert not t['bash'].run({'command': 'cat ~/.ssh/id_rsa'}).success
    timed = t['bash'].run({'command': 'sleep 5', 'timeout_s': 0.2})
    assert not timed.success and timed.error_code == 6


def test_edit_file_context_disambiguation(ws):
    t = by_name(filesystem_tools(Sandbox('active', ws)))['edit_file']
    amb = t.run({'path': 'notes.txt', 'old_text': 'TODO', 'new_text': 'DONE'})
    assert not amb.success and '2 times' in amb.error_msg
    ok = t.run({'path': 'notes.txt', 'old_text': 'TODO', 'new_text': 'DONE',
                'context_after': ': y'})
    assert ok.success and ok.output['line'] == 3
    assert (ws / 'notes.txt').read_text() == 'a\nTODO: x\nDONE: y\n'
    assert not t.run({'path': 'notes.txt', 'old_text': 'TODO', 'new_text': 'z',
                      'context_before': 'nope'}).success
    assert not t.run({'path': 'notes.txt', 'old_text': 'absent', 'new_text': 'z'}).success


# -- code and git ----------------------------------------------------------------------------
def test_search_code_and_run_tests(ws):
    (ws / 'tests').mkdir()
    (ws / 'tests' / 'test_a.py').write_text(
        'def test_ok():\n    assert 1 + 1 == 2\n\n\ndef test_bad():\n    assert 1 == 2, "nope"\n')
    t = by_name(code_tools(Sandbox('active', ws)))
    found = t['search_code'].run({'pattern': r'def test_\w+', 'file_glob': '*.py'})
    assert found.output['total'] == 2 and found.output['matches'][0]['line'] == 1
    assert not t['search_code'].run({'pattern': '('}).success
    res = t['run_tests'].run({'path': 'tests', 'timeout_s': 60})
    assert not res.success
    assert res.output['passed'] == 1 and res.output['failed'] == 1
    assert res.output['failures'][0]['test'].endswith('test_bad')
    ok = t['run_tests'].run({'path': 'tests', 'keyword': 'ok', 'timeout_s': 60})
    assert ok.success and ok.output['passed'] == 1
    passive = by_name(code_tools(Sandbox('passive', ws)))
    assert not passive['run_tests'].run({}).success


def test_parse_junit_counts():
    xml = ('<testsuites><testsuite><testcase classname="a" name="t1"/>'
           '<testcase classname="a" name="t2"><skipped/></testcase>'
           '<testcase classname="a" name="t3"><error message="boom">tb</error></testcase>'
           '</testsuite></testsuites>')
    r = parse_junit(xml)
    assert (r['passed'], r['skipped'], r['errors']) == (1, 1, 1)


@pytest.mark.skipif(shutil.which('git') is None, reason='git is not installed')
def test_git_diff_and_commit(ws):
    subprocess.run(['git', 'init', '-q', str(ws)], check=True, timeout=30)
    t = by_name(code_tools(Sandbox('active', ws)))
    assert t['git_commit'].run({'message': 'first'}).success
    (ws / 'notes.txt').write_text('changed\n')
    diff = t['git_diff'].run({})
    assert diff.success and 'changed' in diff.output['diff']
    done = t['git_commit'].run({'message': 'second', 'paths': 'notes.txt'})
    assert done.success and len(done.output['commit']) == 40
    assert t['git_diff'].run({}).output['diff'] == '(no changes)'
    assert not by_name(code_tools(Sandbox('passive', ws)))['git_commit'].run(
        {'message': 'x'}).success


# -- communication ---------------------------------------------------------------------------
def test_communication_without_gateway_or_tts_says_so():
    said = []
    t = by_name(communication_tools(said.append, None, speak_executable='no-such-tts'))
    assert t['respond'].run({'text': 'hi'}).success and said == ['hi']
    speak = t['speak'].run({'text': 'hi'})
    assert not speak.success and speak.error_code == ERROR_UNAVAILABLE
    assert 'not available' in speak.error_msg
    for name, args in (('send_message', {'to': 'owner', 'text': 'x'}),
                       ('call_user', {'text': 'x'})):
        out = t[name].run(args)
        assert not out.success and 'not configured' in out.error_msg


def test_gateway_delivers_messages():
    log = []

    def gateway(kind, payload):
        log.append((kind, payload))
        return {'ok': payload.get('to') != 'nobody', 'error': 'unknown recipient'}

    t = by_name(communication_tools(None, gateway))
    assert t['send_message'].run({'to': 'owner', 'text': 'done'}).success
    assert log[-1] == ('sms', {'to': 'owner', 'text': 'done'})
    assert not t['send_message'].run({'to': 'nobody', 'text': 'x'}).success
    assert t['call_user'].run({'text': 'help'}).success and log[-1][0] == 'voice'


@pytest.mark.skipif(shutil.which('espeak-ng') is None, reason='espeak-ng is not installed')
def test_speak_writes_audio(tmp_path):
    wav = tmp_path / 'out.wav'
    assert SpeakTool(wav_path=str(wav)).run({'text': 'hello'}).success
    assert wav.stat().st_size > 1000


# -- introspection ---------------------------------------------------------------------------
def memory_service(name, fields, timeout_s):
    """Answers like the memory node's services would (for the formatting logic)."""
    if name == 'scene_summary':
        return None                                     # headless: no perception
    if name == 'system_stats':
        return {'available': False, 'error_code': 2, 'error_msg': 'memory is starting'}
    if name == 'memory_recall':
        episodes = [{'episode_id': f'e{i}', 'summary': f'saw ball {i}', 'score': 0.123456,
                     'header': {'stamp': 1}} for i in range(12)]
        return {'available': True, 'episodes': episodes[:fields['limit'] + 4],
                'total_matches': 12, 'result_json': '', 'error_code': 0, 'error_msg': '',
                'fields': fields}
    if name == 'predict_outcome':
        return {'available': True, 'error_code': 0, 'result_json': json.dumps(
            {'tool': fields['tool_name'], 'value': 0.05, 'confidence': 0.9})}
    if name == 'causal_links':
        return {'available': True, 'error_code': 3, 'error_msg': 'database locked'}
    raise ValueError(f'unknown query {name!r}')


def test_introspection_tools_are_read_only_bounded_and_degrade():
    t = by_name(introspection_tools(memory_service))
    assert len(t) == 10 and all(x.introspection for x in t.values())
    assert all('limit' in x.schema['properties'] for x in t.values())
    out = t['memory_recall'].run({'keyword': 'ball', 'limit': 3, 'success': 'failure'})
    assert out.success
    assert len(out.output['episodes']) == 4 and out.output['episodes'][-1] == '... 4 more'
    assert out.output['episodes'][0] == {'episode_id': 'e0', 'summary': 'saw ball 0',
                                         'score': 0.123}
    assert out.output['fields']['query'] == 'ball' and out.output['fields']['success'] == 2
    pred = t['predict_outcome'].run({'tool_name': 'move'})
    assert pred.output == {'tool': 'move', 'value': 0.05, 'confidence': 0.9,
                           'available': True}
    missing = t['predict_outcome'].run({})           # an argument error, said as such
    assert missing.error_code == ERROR_INVALID_ARGUMENTS and 'tool_name' in missing.error_msg
    for name in ('scene_summary', 'system_stats', 'energy_status'):
        r = t[name].run({})
        assert not r.success and r.output['available'] is False, name
    assert not t['causal_links'].run({}).success
    assert not t['memory_recall'].run({'limit': 500}).success       # limit is bounded
    absent = by_name(introspection_tools(None))['concept_query'].run({'name': 'cup'})
    assert absent.output['available'] is False


# -- robot: a tool that would do nothing says so ---------------------------------------------
def _robot(view):
    sent = []
    return by_name(robot_tools(sent.append, in_view=lambda: view)), sent


def test_track_target_resolves_a_name_to_the_thing_in_view_it_names():
    """"blue" for "blue object": the goal names the label the head controller sees."""
    t, sent = _robot(['blue object', 'face'])
    out = t['track_target'].run({'target_label': 'blue'})
    assert out.success, out.error_msg
    assert sent[-1]['mode'] == MODE_TRACK_TARGET and sent[-1]['target_label'] == 'blue object'
    assert 'blue object (for "blue")' in out.output['summary']


@pytest.mark.parametrize('asked, why', [('green', 'is not among them'),
                                        ('object', 'names more than one of them')])
def test_track_target_of_nothing_in_view_fails_with_the_labels_in_view(asked, why):
    t, sent = _robot(['blue object', 'red object', 'face'])
    out = t['track_target'].run({'target_label': asked})
    assert not out.success and sent == []
    assert why in out.error_msg and 'nothing was sent' in out.error_msg.lower()
    assert '"blue object", "red object", "face"' in out.error_msg
    assert out.output['in_view'] == ['blue object', 'red object', 'face']


def test_track_target_with_an_empty_view_fails_and_sends_nothing():
    t, sent = _robot([])
    out = t['track_target'].run({'target_label': 'red ball'})
    assert not out.success and sent == [] and 'in view: nothing' in out.error_msg


@pytest.mark.parametrize('tool', ['focus_interests', 'novelty_track'])
def test_looking_at_what_is_in_view_with_nothing_in_view_fails(tool):
    t, sent = _robot([])
    out = t[tool].run({})
    assert not out.success and sent == [] and 'nothing in view' in out.error_msg
    t, sent = _robot(['cup'])
    assert t[tool].run({}).success and len(sent) == 1


def test_a_view_not_known_yet_leaves_the_goal_to_the_head_controller():
    """Before the first view the tools cannot tell: the goal goes as asked (the controller
    resolves the name by the same rule when targets arrive)."""
    t, sent = _robot(None)
    assert t['track_target'].run({'target_label': 'blue'}).success
    assert sent[-1]['target_label'] == 'blue'
    assert t['novelty_track'].run({}).success
    t, sent = _robot(['cup'])
    assert t['track_target'].run({'track_id': 4}).success     # by id: the controller's
