"""The act's pure core (maxim_core.mind.act): every path from a decision to an episode,
without ROS and without a Mind."""

import json
from types import SimpleNamespace

from maxim_common.errors import ERROR_BLOCKED, ERROR_UNKNOWN_TOOL, ERROR_VERIFICATION_FAILED
from maxim_core.agent.loop import (context_key, Decision, FAILED_STATUSES, LoopResult,
                                   Percept)
from maxim_core.agent.verify import WorldVerifier
from maxim_core.mind.act import Act
from maxim_core.mind.ports import EventSink
from maxim_core.mind.situation import Situation


class World(EventSink):
    """The act's ports as plain objects: the executor, the fear gate and the event sink."""

    def __init__(self, decision, allowed=True, succeed=True, verify=None):
        self.decision = decision
        self.allowed = allowed
        self.succeed = succeed
        self.episodes, self.calls, self.results, self.contexts = [], [], [], []
        self.reviewed = []
        self.situation = Situation(clock=lambda: 0.0)
        self.act = Act(self, fear=self, verifier=verify or (lambda run, start=None: None),
                       body=None, events=self, situation=self.situation,
                       counts={'pains_sent': 0}, mode='passive', run_id='r1')

    def step(self, percept):
        """The Mind's pass around the act: context, decision, act, episode."""
        context = self.act.context_text('')
        self.contexts.append(context)
        decision, key = self.decision, context_key(percept)
        if decision.status == 'gated':
            return LoopResult(percept, decision, None, None)
        run = None
        if decision.action and decision.status not in FAILED_STATUSES:
            run = self.act.run(decision, context, key, [])
        episode = self.act.episode(percept, decision, run, 0.0, key, '')
        self.episodes.append(episode)
        return LoopResult(percept, decision, run, episode)

    # The executor.
    def resolve(self, name, active):
        if name == 'remember':
            return 'memory_recall', True
        if name not in ('move', 'write_file', 'memory_recall'):
            raise KeyError(f'unknown tool {name!r}')
        return name, name == 'memory_recall'

    def execute(self, tool, args):
        return SimpleNamespace(success=self.succeed, text=lambda: 'done' if self.succeed
                               else '', error_code=0 if self.succeed else 5,
                               error_msg='' if self.succeed else 'servo stalled', data={})

    # The fear port.
    def review(self, run, context):
        self.reviewed.append(run.context)
        return {'allowed': self.allowed, 'layer': 1, 'reason': 'destructive command'}

    # The event sink.
    def tool_call(self, run):
        self.calls.append(run)

    def tool_result(self, run):
        self.results.append(run)


def percept():
    return Percept('a red ball rolls by', percept_id='p1', objects=['red ball'], salience=0.7)


def test_action_runs_and_is_recorded_as_an_episode():
    w = World(Decision('ready', 'I will look at it', {'tool': 'move', 'args': {'pan': 0.3}},
                       cycles=2, confidence=0.8, deliberation_id='d1'))
    result = w.step(percept())
    assert result.run.success and w.calls[0].tool == 'move'
    ep = w.episodes[0]
    assert ep['tool_name'] == 'move' and ep['success'] and ep['valence'] == 1.0
    assert ep['perception'] == 'a red ball rolls by' and ep['detected_objects'] == ['red ball']
    assert ep['cycles'] == 2 and ep['run_id'] == 'r1'


def test_alias_is_resolved_and_unknown_tool_is_a_typed_error():
    w = World(Decision('ready', 'recall', {'tool': 'remember', 'args': {}}))
    assert w.step(percept()).run.tool == 'memory_recall'
    w = World(Decision('ready', 'x', {'tool': 'teleport', 'args': {}}))
    run = w.step(percept()).run
    assert run.error_code == ERROR_UNKNOWN_TOOL and 'teleport' in run.error_msg
    assert not w.calls and w.results == [run]
    assert w.episodes[0]['success'] is False and w.episodes[0]['valence'] == -1.0


def test_one_context_key_goes_to_the_fear_gate_and_into_the_episode():
    assert context_key(Percept('x', objects=['Table', 'cup', 'cup', ' '])) == 'cup+table'
    assert context_key(Percept('x', objects=list('dcba'))) == 'a+b+c'
    assert context_key(Percept('x'), 'Find the red ball!') == 'find_the_red_ball'
    assert context_key(Percept('x')) == 'none'
    w = World(Decision('ready', 'x', {'tool': 'move', 'args': {'pan': 0.1}}))
    run = w.step(percept()).run
    assert run.context == 'red ball' and w.reviewed == ['red ball']
    assert json.loads(w.episodes[0]['context_json'])['context'] == 'red ball'


def test_unknown_names_and_aliases_are_counted():
    w = World(Decision('ready', 'x', {'tool': 'teleport', 'args': {}}))
    w.step(percept())
    w.decision = Decision('ready', 'x', {'tool': 'remember', 'args': {}})
    w.step(percept())
    assert (w.act.unknown_tool_calls, w.act.resolved_aliases) == (1, 1)


def test_blocked_action_never_executes_and_says_why():
    action = {'tool': 'write_file', 'args': {'path': '/etc/passwd', 'content': ''}}
    w = World(Decision('ready', 'x', action), allowed=False)
    run = w.step(percept()).run
    assert run.blocked and run.error_code == ERROR_BLOCKED and not run.success
    assert run.blocked_reason == 'destructive command'
    assert w.episodes[0]['blocked'] and 'blocked' in w.episodes[0]['outcome']


def test_failures_feed_the_next_deliberation():
    w = World(Decision('ready', 'x', {'tool': 'move', 'args': {'pan': 1.0}}), succeed=False)
    w.step(percept())
    w.step(percept())
    assert 'move {"pan": 1.0} -> failed: servo stalled' in w.contexts[1]


def test_gated_percepts_leave_no_episode_and_thought_only_ones_do():
    w = World(Decision('gated'))
    assert w.step(percept()).episode is None and not w.episodes
    w = World(Decision('converged', 'nothing to do'))
    result = w.step(percept())
    assert result.run is None and w.episodes[0]['outcome'] == 'thought only (converged)'


def test_failed_deliberation_does_not_act():
    w = World(Decision('unparsable', '', {'tool': 'move', 'args': {}}))
    result = w.step(percept())
    assert result.run is None and w.episodes[0]['success'] is False


def test_pain_is_pinned_on_the_act_running_when_it_came():
    """A pain that comes while an act runs is that act's, not the one before it."""
    w = World(Decision('ready', 'x', {'tool': 'move', 'args': {'pan': 0.3}}))

    def execute_hurting(tool, args):
        w.situation.feel(0.8, now=0.0)        # the head controller reports as it moves
        return SimpleNamespace(success=True, text=lambda: 'moved', error_code=0,
                               error_msg='', data={})

    w.situation.acted(SimpleNamespace(tool='memory_recall', args={}), 100.0)
    w.execute = execute_hurting
    w.step(percept())
    assert list(w.situation.pains) == [('move', {'pan': 0.3}, 0.8)]


def test_write_file_claim_is_checked_against_the_file(tmp_path):
    target = tmp_path / 'note.txt'

    def execute_lying(tool, args):
        target.write_text('something else')
        return SimpleNamespace(success=True, text=lambda: 'written', error_code=0,
                               error_msg='', data={})

    w = World(Decision('ready', 'x', {'tool': 'write_file',
                                      'args': {'path': str(target), 'content': 'hello'}}),
              verify=WorldVerifier())
    w.execute = execute_lying
    run = w.step(percept()).run
    assert not run.success and run.error_code == ERROR_VERIFICATION_FAILED
    target.write_text('hello')
    run.success = True
    assert WorldVerifier()(run) == (True, f'{target} holds the 5 characters written')


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t

    def sleep(self, dt):
        self.t += dt


def test_move_is_verified_from_joint_states_with_a_bounded_wait():
    clock = FakeClock()
    positions = iter([(0.0, 0.0), (0.1, 0.0), (0.2, 0.0), (0.29, 0.01)])
    last = [(0.0, 0.0)]

    def head():
        last[0] = next(positions, last[0])
        return last[0]

    verifier = WorldVerifier(head_position=head, clock=clock, sleep=clock.sleep)
    run = type('Run', (), {'tool': 'move', 'args': {'pan': 0.3, 'tilt': 0.0}})()
    ok, note = verifier(run)
    assert ok and 'pan=0.29' in note
    stuck = WorldVerifier(head_position=lambda: (0.0, 0.0), clock=clock, sleep=clock.sleep,
                          settle_timeout_s=1.0)
    ok, note = stuck(run)
    assert not ok and 'from the goal after 1.0 s' in note
    assert WorldVerifier(head_position=lambda: None)(run) == (False, 'no joint states from '
                                                              'the head')
    assert WorldVerifier()(type('Run', (), {'tool': 'glob', 'args': {}})()) is None


def test_a_relative_move_is_checked_from_where_the_head_was_when_it_was_sent():
    # The head starts at 0.0 and is already moving when the check begins: relative to the
    # start (0.0 + 0.3) it arrives; read at check time (0.1 + 0.3) it would never.
    clock = FakeClock()

    def head():
        return pose.pop(0) if len(pose) > 1 else pose[0]

    run = type('Run', (), {'tool': 'move', 'args': {'pan': 0.3, 'tilt': 0.0,
                                                    'relative': True}})()
    pose = [(0.1, 0.0), (0.2, 0.0), (0.3, 0.0)]
    verifier = WorldVerifier(head_position=head, clock=clock, sleep=clock.sleep,
                             settle_timeout_s=1.0)
    ok, note = verifier(run, start=(0.0, 0.0))
    assert ok and 'pan=0.30' in note
    pose = [(0.1, 0.0), (0.2, 0.0), (0.3, 0.0)]
    assert not verifier(run)[0]         # without the start it checks the wrong goal


def test_a_relative_path_is_checked_in_the_workspace_not_the_working_directory(tmp_path,
                                                                               monkeypatch):
    workspace, elsewhere = tmp_path / 'ws', tmp_path / 'cwd'
    workspace.mkdir()
    elsewhere.mkdir()
    (workspace / 'notes.txt').write_text('hello')
    (elsewhere / 'notes.txt').write_text('something else')
    monkeypatch.chdir(elsewhere)
    run = type('Run', (), {'tool': 'write_file', 'args': {'path': 'notes.txt',
                                                          'content': 'hello'}})()
    ok, note = WorldVerifier(root=str(workspace))(run)
    assert ok and 'holds the 5 characters' in note


def test_conversions_need_no_llama_cpp():
    """The agent's process runs no model: its conversions must import without llama.cpp."""
    import subprocess
    import sys
    code = ('import sys; sys.modules["llama_cpp"] = None; import maxim_core.conversions; '
            'import maxim_core.mind; print("ok")')
    out = subprocess.run([sys.executable, '-c', code], capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == 'ok', out.stderr[-2000:]
