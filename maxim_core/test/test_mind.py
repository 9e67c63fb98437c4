"""The Mind without ROS: one composition, ports in and typed records out, every system on
the path changing what the model reads or what the mind does."""

import json

import pytest

from maxim_common.urdf import read_head_limits
from maxim_core.agent.loop import Percept
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.mind import (EpisodeRecord, EventSink, HeadGoalCommand, Mind, MindConfig,
                             PainReport)


def answer(text, tool=None, args=None):
    action = {'tool': tool, 'args': args or {}} if tool else None
    return json.dumps({'reasoning': text, 'ready_to_act': bool(tool), 'action': action})


class Events(EventSink):
    def __init__(self):
        self.seen = []

    def thought(self, t):
        self.seen.append(('thought', t))

    def tool_call(self, run):
        self.seen.append(('call', run))

    def tool_result(self, run):
        self.seen.append(('result', run))

    def episode(self, e):
        self.seen.append(('episode', e))

    def pain(self, p):
        self.seen.append(('pain', p))

    def head_goal(self, g):
        self.seen.append(('goal', g))

    def status(self, text):
        self.seen.append(('status', text))

    def of(self, kind):
        return [x for k, x in self.seen if k == kind]


class Memory:
    """A memory port that knows about balls and nothing else."""

    def __init__(self):
        self.asked = []

    def query(self, name, fields, timeout_s=2.0):
        self.asked.append((name, dict(fields)))
        if name != 'enrich':
            return {'available': True, 'episodes': []}
        about_ball = 'ball' in fields['text'] or 'ball' in fields.get('objects', [])
        channels = {}
        for ch in fields['channels']:
            items = []
            if about_ball and ch == 'episodes':
                items = [{'text': '5 min ago: a red ball rolled by; track_target worked',
                          'score': 0.6, 'why': 'shares ball, red'}]
            if about_ball and ch == 'concepts':
                items = [{'text': '"ball" (object, confidence=0.80, 6 episodes)',
                          'score': 0.8, 'why': 'in view (full context)'}]
            if about_ball and ch == 'values':
                items = [{'text': 'track_target works with ball (value 0.83, confidence 0.70)',
                          'score': 0.5, 'why': 'learned from outcomes (context)'}]
            channels[ch] = {'items': items, 'reason': '' if items else 'nothing relevant'}
        return {'available': True, 'result': {'channels': channels}}


class Fear:
    def __init__(self, allow=True):
        self.allow = allow

    def review(self, run, context):
        return {'allowed': self.allow, 'layer': 1, 'reason': 'not allowed here'}


class Head:
    # The body's joint limits come from the URDF, as the agent node hands them in.
    limits = read_head_limits()

    def __init__(self):
        self.position = (0.0, 0.0)
        self.sent = []

    def head_position(self):
        return self.position

    def send_head_goal(self, goal):
        self.sent.append(goal)


def make(script, tmp_path=None, **config):
    backend = ScriptedBackend(script)
    events, memory, head = Events(), Memory(), Head()
    cfg = MindConfig(deliberation=DeliberationConfig(max_cycles=1), use_grammar=False,
                     workspace_root=str(tmp_path or '.'), **config)
    mind = Mind(cfg, model=backend, memory=memory, fear=Fear(), body=head, events=events)
    return mind, backend, events, memory, head


def ball(source='vision', salience=0.8):
    return Percept('A red ball rolls across the table.', 'p1', source, objects=['ball'],
                   salience=salience)


def test_a_known_situation_enriches_the_prompt_and_the_action_leaves_as_typed_records():
    mind, backend, events, memory, head = make(
        [answer('The red ball again. I follow it.', 'track_target', {'target_label': 'ball'})])
    try:
        step = mind.step(ball())
    finally:
        mind.close()
    prompt = backend.prompts[0]
    # Memory's channels, each line saying why it matched, and the NAc's learned value.
    assert '- Memory: 5 min ago: a red ball rolled by; track_target worked [shares ball, red]' \
        in prompt
    assert '- Concept: "ball" (object, confidence=0.80, 6 episodes) [in view' in prompt
    assert 'What you have learned:\n- track_target works with ball' in prompt
    # The question carried the situation, not only the words.
    enrich = [f for n, f in memory.asked if n == 'enrich' and 'episodes' in f['channels']]
    assert enrich[0]['objects'] == ['ball'] and 'track_target' in enrich[0]['tools']
    assert enrich[0]['context_key'] == 'ball'
    assert step.loop.run.success and step.deliberation.thoughts[0].enriched_by == [
        'episodes', 'concepts']
    goal = events.of('goal')[0]
    assert isinstance(goal, HeadGoalCommand) and goal.target_label == 'ball'
    assert head.sent == [goal] and mind.cerebellum.programs['track:ball'].attempts == 1
    episode = events.of('episode')[0]
    assert isinstance(episode, EpisodeRecord) and episode.tool_name == 'track_target'
    assert json.loads(episode.context_json)['context'] == 'ball'
    assert mind.counts['episodes_sent'] == 1 and mind.counts['pains_sent'] == 0


def test_an_unrelated_situation_gets_no_experience_and_less_salience():
    mind, backend, events, _, _ = make([answer('Someone waves. I watch.')])
    try:
        mind.step(ball(), force=True)
        ball_thought = events.of('thought')[-1]
        mind.step(Percept('A person in a blue coat waves.', 'p2', 'user', people=['person']))
    finally:
        mind.close()
    assert 'Your experience responds' not in backend.prompts[1]
    assert 'What you have learned' not in backend.prompts[1]
    other = events.of('thought')[-1]
    assert other.enriched_by == [] and other.salience < ball_thought.salience


def test_failures_hurt_as_typed_pain_counted_apart_from_episodes(tmp_path):
    mind, _, events, _, head = make(
        [answer('I look far left.', 'move', {'pan': 9.0, 'tilt': 0.0})], tmp_path)
    try:
        mind.step(ball(), force=True)
    finally:
        mind.close()
    pain = events.of('pain')
    assert len(pain) == 1 and isinstance(pain[0], PainReport) and pain[0].source == 'move'
    assert mind.counts == {**mind.counts, 'pains_sent': 1, 'episodes_sent': 1}
    assert head.sent == []              # the tool refused the goal: nothing was sent


def test_the_gate_learns_from_outcomes_and_energy_stops_thinking():
    mind, backend, events, _, _ = make(
        [answer('I follow it.', 'track_target', {'target_label': 'ball'})],
        energy_token_budget=100, energy_refill_tokens_per_s=0.0)
    try:
        before = mind.gate.threshold
        mind.step(ball(), force=True)           # acted and it worked: thinking helped
        assert mind.gate.threshold < before
        for _ in range(3):                      # past the refractory window
            mind._tick += 5
            result = mind.step(ball())
        assert mind.energy.remaining_fraction() < mind.gate.energy_floor
        assert result.loop.decision.status == 'gated'
        assert 'energy' in result.deliberation.status_msg
    finally:
        mind.close()


def test_the_learned_tool_index_shapes_the_manifest_and_learns(tmp_path):
    path = tmp_path / 'tool_index.json'
    mind, backend, _, _, _ = make(
        [answer('I follow the ball.', 'track_target', {'target_label': 'ball'})],
        tool_index_path=str(path))
    try:
        before = mind.tools.index.score('follow the red ball')['track_target']
        step = mind.step(Percept('Please follow the red ball with your head.', 'p', 'user',
                                 objects=['ball']))
        assert 'track_target' in step.surfaced_tools
        assert mind.tools.index.score('follow the red ball')['track_target'] > before
        prompt = backend.prompts[0]
        assert '- track_target:' in prompt and 'Your other tools (by name): ' in prompt
    finally:
        mind.close()
    assert json.loads(path.read_text())['successes'] == {'track_target': 1}
    full, backend, _, _, _ = make([answer('Hm.')], systems_off=frozenset({'tool_index'}))
    try:
        full.step(ball(), force=True)
    finally:
        full.close()
    assert 'Your other tools' not in backend.prompts[0] and '- scene_summary:' in \
        backend.prompts[0]


def test_switched_off_systems_change_what_the_model_reads():
    mind, backend, _, _, _ = make([answer('Hm.')],
                                  systems_off=frozenset({'hippocampus', 'nac'}))
    try:
        mind.step(ball(), force=True)
    finally:
        mind.close()
    assert '- Memory:' not in backend.prompts[0] and 'What you have learned' not in \
        backend.prompts[0]
    assert '- Concept:' in backend.prompts[0]
    with pytest.raises(ValueError, match='unknown systems'):
        MindConfig(systems_off=frozenset({'telepathy'}))


def test_a_goal_for_one_pass_leaves_the_standing_goal_alone():
    mind, backend, events, _, _ = make([answer('Looking for the cup.')], goal='watch the door')
    try:
        step = mind.step(ball(), goal='find the cup', force=True)
        res = mind.deliberate(ball(), force=True)
    finally:
        mind.close()
    assert step.loop.episode['goal'] == 'find the cup' and mind.goal == 'watch the door'
    assert 'Current goal: find the cup' in backend.prompts[0]
    assert 'Current goal: watch the door' in backend.prompts[1] and res.status == 'cycle_cap'
    assert len(events.of('episode')) == 1      # deliberating alone acts on nothing


def test_the_inbox_keeps_only_the_newest_and_drops_dull_vision():
    mind, _, _, _, _ = make([answer('Hm.')])
    try:
        assert not mind.offer(ball(salience=0.1))
        assert mind.offer(ball()) and mind.offer(ball())
        assert mind.counts['percepts_dropped'] == 1 and mind.counts['percepts_pending'] == 1
        assert mind.run_next(0.1) is not None and mind.counts['percepts_pending'] == 0
        assert mind.run_next(0.01) is None
        assert not mind.offer(ball(), from_self=True)
    finally:
        mind.close()


# -- a track that loses its target says so ---------------------------------------------------
def test_a_track_watch_tells_a_loss_once_and_ends():
    from maxim_core.mind.tracking import TrackWatch
    watch = TrackWatch()
    assert watch.view(['cup'], 0.0) is None                    # no track: nothing to lose
    watch.start('red object', 'g1', 1.0, head=(0.1, 0.0))
    assert watch.view(['red object', 'face'], 1.5, head=(0.4, 0.1)) is None
    lost = watch.view(['face'], 3.0, head=(0.9, 0.1))
    assert lost is not None and lost.label == 'red object' and lost.goal_id == 'g1'
    assert lost.tracked_s == pytest.approx(2.0) and lost.last_head == (0.4, 0.1)
    assert 'lost the red object' in lost.text() and 'you do not see it now' in lost.text()
    assert watch.view([], 3.5) is None and watch.label is None        # told once
    watch.start('cup', 'g2', 4.0, duration_s=1.0)
    assert watch.view([], 5.5) is None                         # the goal had expired
    watch.start('cup', 'g3', 6.0)
    watch.stop()                                               # another goal took the head
    assert watch.view([], 6.5) is None


def test_a_track_that_loses_its_target_becomes_a_percept_and_the_view_forgets_it():
    """The robot tracked the red object (asked as "red"); the next view lacks it: the mind
    thinks about the loss, as an act's result, and no longer counts it in view."""
    mind, _, events, _, head = make(
        [answer('A red thing. I follow it.', 'track_target', {'target_label': 'red'})])
    try:
        view = Percept('I see a red object and a face.', 'p1', 'vision',
                       objects=['red object'], people=['face'], salience=0.9)
        assert mind.offer(view)
        step = mind.step(mind.runtime._inbox.get_nowait())
        assert step.loop.run.success, step.loop.run.error_msg
        assert events.of('goal')[-1].target_label == 'red object'
        head.position = (0.6, 0.1)
        still = Percept('I see a red object.', 'p2', 'vision', objects=['red object'],
                        salience=0.1)
        assert not mind.offer(still)                   # still in view: below the salience bar
        gone = Percept('I see a face.', 'p3', 'vision', people=['face'], salience=0.1)
        assert mind.offer(gone)                        # thought about, whatever its salience
        lost = mind.runtime._inbox.get_nowait()
        assert lost.source == 'tool_result' and 'lost the red object' in lost.narrative
        assert 'pan 0.60' in lost.narrative and lost.narrative.endswith('Now: I see a face.')
        assert mind.situation.labels_in_view() == ['face']
        assert mind.situation.in_view[0] == ()
        assert mind.counts['tracks_lost'] == 1
        assert not mind.offer(gone)                    # told once
    finally:
        mind.close()
