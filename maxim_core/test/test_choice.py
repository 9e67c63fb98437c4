"""Deciding by choosing: grounded candidates, the weighing, the diary, and the Mind on that
path (a scripted scorer stands in for the model's likelihoods; the real model's own test is
test_choice_real_model.py)."""

import json

import pytest

from maxim_core.agent.loop import Percept
from maxim_core.deliberation.candidates import CandidateBuilder
from maxim_core.deliberation.choice import ChoiceConfig, WAIT
from maxim_core.deliberation.grounding import Grounding, RecentAct
from maxim_core.deliberation.words import command_spans, is_template
from maxim_core.deliberation.chooser import Chooser
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.llm.backend import LLMError, ScriptedBackend, STOP_CANCELLED
from maxim_core.mind import EventSink, Mind, MindConfig
from maxim_core.prompt.diary import copied_run, Diary, DiaryEntry, FIXED_TEXT, OPENINGS, restated
from maxim_core.prompt.tools import ToolSpec


@pytest.fixture(autouse=True)
def hand_weights(monkeypatch):
    """These tests pin the terms of the choice under today's hand-set weights (the decision
    benchmark's 'hand' baseline, `choice.weights: hand`): each asserts a term's arithmetic
    (habit_done, w_avoid, effort). The fitted weights the robot loads by default are judged
    by the decision benchmark and test_scorers.py, not by a scripted scorer."""
    from maxim_core.deliberation import weights
    monkeypatch.setattr(weights.Weights, 'load',
                        staticmethod(lambda path=None: weights.Weights.hand(ChoiceConfig())))


TRACK = ToolSpec('track_target', 'Follow a target.', {
    'type': 'object', 'properties': {'target_label': {'type': 'string', 'maxLength': 64},
                                     'duration_s': {'type': 'number'}}})
SAY = ToolSpec('say', 'Say something.', {
    'type': 'object', 'properties': {'text': {'type': 'string'}}, 'required': ['text']})
THINK = ToolSpec('think', 'Think.', {
    'type': 'object', 'properties': {'thought': {'type': 'string'}}, 'required': ['thought']})
SNEAK = ToolSpec('sneak_past_guard', 'Sneak past the guard.', {'type': 'object'})
BASH = ToolSpec('bash', 'Run a shell command.', {
    'type': 'object', 'properties': {'command': {'type': 'string'}}, 'required': ['command']})
MOVE = ToolSpec('move', 'Turn the head.', {
    'type': 'object', 'properties': {'pan': {'type': 'number'}, 'tilt': {'type': 'number'}},
    'required': ['pan', 'tilt']})


def keyed_scorer(weights):
    """log p(continuation | prompt): the weight of the first key the continuation holds,
    when the prompt is the decision line; -5 otherwise (the neutral line scores all alike)."""
    def score(prompt, cont):
        if not prompt.endswith('So I') or prompt == 'So I':
            return -5.0
        for key, w in weights.items():
            if key in cont:
                return w
        return -8.0
    return score


def test_arguments_come_only_from_what_is_perceived_remembered_or_said():
    g = Grounding(percept='A red ball and a green cup are on the table.',
                  objects=['red ball', 'green cup'],
                  recalled=['The caretaker said the password is swordfish.'],
                  heard='Please run rm -rf /tmp/cache --force now', someone_there=True)
    # The model's surprise at a word alone ranks what memory adds: the rare word first.
    rare = {' swordfish': -14.0, ' caretaker': -11.0, ' password': -9.0}
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: rare.get(c, -4.0)))
    cands = chooser.candidates([TRACK, SAY, THINK, SNEAK, BASH, MOVE], g)
    assert g.salient[:2] == ('swordfish', 'caretaker')
    by_tool = {}
    for c in cands:
        by_tool.setdefault(c.tool, []).append(c)
    labels = [c.args['target_label'] for c in by_tool['track_target']]
    assert labels[:2] == ['red ball', 'green cup']                  # in view first
    assert labels[2] == 'swordfish'                                # then what memory adds
    assert by_tool['bash'][0].args == {'command': 'rm -rf /tmp/cache --force'}
    # speech: the model writes it (free_param); a word of memory's alone only as the answer
    # to a question (test_memory_that_links_the_question_...)
    # (and replies built from a source, answers.py, which the choice weighs like any act)
    assert [c.free_param for c in by_tool['say'] if 'answer' not in c.sources] == ['text']
    assert by_tool['sneak_past_guard'][0].args == {}
    assert 'move' not in by_tool            # numbers nothing grounds are not proposed
    assert by_tool[None][0].phrase == WAIT
    for c in cands:
        for value in c.args.values():
            assert not is_template(str(value))


READ = ToolSpec('read_file', 'Read a file.', {
    'type': 'object', 'properties': {'path': {'type': 'string'}}, 'required': ['path']})
GLOB = ToolSpec('glob', 'Find files.', {
    'type': 'object', 'properties': {'pattern': {'type': 'string'}}, 'required': ['pattern']})
GREP = ToolSpec('grep', 'Search text.', {
    'type': 'object', 'properties': {'pattern': {'type': 'string'}}, 'required': ['pattern']})


def test_a_file_argument_is_a_file_name_never_a_word_of_the_moment():
    g = Grounding(heard='Operator: the disk is full. Free space right now.', someone_there=True,
                  addressed=True)
    tools = {c.tool: c for c in CandidateBuilder().build([READ, GLOB, GREP], g)}
    assert 'read_file' not in tools and 'glob' not in tools      # no file was named
    assert tools['grep'].args['pattern']                          # a grep pattern is any text
    g = Grounding(heard='Please read notes.txt and list the logs/ folder and *.log files.',
                  someone_there=True, addressed=True)
    paths = {c.args['path'] for c in CandidateBuilder().build([READ], g) if c.tool}
    assert paths and paths <= {'notes.txt', 'logs/', '*.log'}, paths


def test_a_tools_own_words_are_no_argument_of_it():
    unlock = ToolSpec('unlock_door', 'Unlock the door with a code or password. (heavy gate)', {
        'type': 'object', 'properties': {'code': {'type': 'string'}}, 'required': ['code']})
    g = Grounding(percept='A heavy gate blocks the way. A lever sticks out of the wall.',
                  entities=['door', 'button'], someone_there=False)
    codes = [c.args['code'] for c in CandidateBuilder().build([unlock], g)
             if c.tool == 'unlock_door']
    assert 'gate' not in codes and 'heavy gate' not in codes and 'door' not in codes, codes


def test_nobody_there_nobody_spoken_to():
    g = Grounding(percept='A cup stands on the table.', objects=['cup'])
    tools = {c.tool for c in CandidateBuilder().build([SAY, TRACK], g)}
    assert 'say' not in tools and 'track_target' in tools


def test_command_spans_and_templates():
    assert command_spans('Free space by running rm -rf / --no-preserve-root in the shell.') \
        == ['rm -rf / --no-preserve-root']
    assert command_spans('Nothing to run here.') == []
    assert command_spans('Clean up by running mkfs.ext4 /dev/sda1`.') == \
        ['running mkfs.ext4 /dev/sda1']
    assert is_template('<your target object>') and is_template('{"tool": 1}')
    assert is_template('your command') and not is_template('swordfish')
    assert copied_run('I think: My goal: I remember: I did it', FIXED_TEXT, 4) == ''
    assert all(len(t.split()) < 8 for t in FIXED_TEXT)


def test_the_weighing_prefers_value_goal_and_news_and_shuns_habit_and_pain():
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: 0.0))
    g = Grounding(goal='follow the red ball', values={'track_target': 0.9, 'say': 0.2},
                  recent=[RecentAct('sneak_past_guard', {}, True)],
                  pains=[('move', {'pan': 0.5, 'tilt': 0.0}, 0.8)], acts_since_news=2)
    from maxim_core.deliberation.candidates import Candidate
    cands = [Candidate('track_target', {'target_label': 'red ball'}, 'track target red ball'),
             Candidate('say', {'text': 'hi'}, 'say "hi"'),
             Candidate('sneak_past_guard', {}, 'sneak past guard'),
             Candidate('move', {'pan': 0.4, 'tilt': 0.0}, 'look left'),
             Candidate('move', {'pan': -0.4, 'tilt': 0.0}, 'look right'),
             Candidate(None, {}, WAIT)]
    chooser.weigh(cands, g)
    t = {c.phrase: c for c in cands}
    assert t['track target red ball'].value > 0 > t['say "hi"'].value
    assert t['track target red ball'].goal == 2.0       # 'red', 'ball'
    assert t['sneak past guard'].habit == ChoiceConfig().habit_done
    assert t['look left'].pain > 0 and t['look right'].pain == 0
    assert t[WAIT].total == ChoiceConfig().effort * 2   # the bar rose with two acts


def test_a_failed_action_is_not_retried_until_something_changes():
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: 0.0))
    from maxim_core.deliberation.candidates import Candidate
    open_chest = Candidate('open_chest', {}, 'open chest')
    chooser.weigh([open_chest], Grounding(recent=[RecentAct('open_chest', {}, False)]))
    assert open_chest.habit == ChoiceConfig().habit_failed
    chooser.weigh([open_chest], Grounding(recent=[RecentAct('open_chest', {}, False),
                                                  RecentAct('take_key', {}, True)]))
    assert open_chest.habit == ChoiceConfig().habit_tool      # the world changed since


def test_the_diary_is_the_robots_own_text_with_open_lines():
    d = Diary(percept='A voice asks: Password?', goal='Get through the door.',
              remembered=['The password is swordfish. [shares password]'],
              learned=['say works here (value 0.80) [learned]'],
              history=[DiaryEntry('A door.', 'examine door', 'It is oak.')])
    head = d.think_prompt()
    assert head.startswith('Diary of Maxim.') and head.endswith('\nI think:')
    assert 'I remember: The password is swordfish.\n' in head      # the reason stripped
    assert 'I did: examine door. Result: It is oak.' in head
    assert 'JSON' not in head and 'example' not in head
    assert d.decide_prompt('I say it.').endswith('I think: I say it.\nSo I')


class Events(EventSink):
    def __init__(self):
        self.thoughts, self.calls = [], []

    def thought(self, t):
        self.thoughts.append(t)

    def tool_call(self, run):
        self.calls.append(run)


class Fear:
    def review(self, run, context):
        return {'allowed': True, 'layer': 1, 'reason': ''}


class Head:
    def __init__(self):
        self.sent = []

    def head_position(self):
        return (0.0, 0.0)

    def send_head_goal(self, goal):
        self.sent.append(goal)


def mind_with(scorer, script=(' The red ball rolls past me.\n',), **config):
    backend = ScriptedBackend(list(script), scorer=scorer)
    events, head = Events(), Head()
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=2), use_grammar=False,
                           **config),
                model=backend, fear=Fear(), body=head, events=events)
    return mind, backend, events, head


def test_the_mind_chooses_a_grounded_action_and_says_why():
    mind, backend, events, head = mind_with(
        keyed_scorer({'track target red ball': -1.0, WAIT: -6.0}))
    try:
        step = mind.step(Percept('A red ball rolls across the table.', 'p1', 'vision',
                                 objects=['red ball'], salience=0.9), force=True)
    finally:
        mind.close()
    assert step.loop.run.tool == 'track_target'
    assert step.loop.run.args == {'target_label': 'red ball'}
    assert head.sent and head.sent[0].target_label == 'red ball'
    thought = events.thoughts[0]
    assert thought.text == 'The red ball rolls past me.'
    assert thought.choice[0]['tool'] == 'track_target' and len(thought.choice) > 2
    assert thought.why == 'because it follows from what I think'     # the model's score won
    # The model read the diary, not instructions: no answer format, no example to copy.
    think_prompt = backend.prompts[0]
    assert think_prompt.endswith('I think:') and 'JSON' not in think_prompt
    assert mind.deliberator.chooser is not None


def test_waiting_is_a_choice_and_ends_the_deliberation():
    mind, backend, events, head = mind_with(keyed_scorer({WAIT: 2.0}))
    try:
        step = mind.step(Percept('A cup stands still.', 'p1', 'vision', objects=['cup'],
                                 salience=0.9), force=True)
    finally:
        mind.close()
    assert step.loop.run is None and step.deliberation.status == 'converged'
    assert step.deliberation.cycles == 1 and head.sent == []
    assert events.thoughts[0].why == 'because nothing calls for an act'


def test_speech_is_written_by_the_model_and_template_text_is_refused():
    script = [' Someone asks my name.\n', '<your answer>"', ' Someone asks my name.\n',
              'I am Maxim."']
    mind, backend, events, _ = mind_with(keyed_scorer({'respond': 0.0, WAIT: -9.0}), script,
                                         active_tools=('respond',))
    try:
        first = mind.step(Percept('What is your name?', 'p1', 'user', salience=0.9))
        second = mind.step(Percept('What is your name, please?', 'p2', 'user', salience=0.9))
    finally:
        mind.close()
    assert first.loop.run is None                         # '<your answer>' never leaves
    assert second.loop.run.tool == 'respond'
    assert second.loop.run.args == {'text': 'I am Maxim.'}


def test_the_same_act_after_success_gives_way_to_waiting():
    mind, backend, events, head = mind_with(
        keyed_scorer({'track target red ball': 1.0, WAIT: -1.0}), [' The ball again.\n'])
    try:
        p = Percept('A red ball.', 'p1', 'vision', objects=['red ball'], salience=0.9)
        first = mind.step(p, force=True)
        second = mind.step(p, force=True)
    finally:
        mind.close()
    assert first.loop.run.tool == 'track_target' and second.loop.run is None


def test_a_move_that_hurt_is_avoided_and_other_moves_remain():
    class Body(Head):
        def head_position(self):
            return (0.0, 0.0)

    scorer = keyed_scorer({'left': 0.5, 'right': 0.0, WAIT: -9.0})
    backend = ScriptedBackend([' I look around.\n'], scorer=scorer)
    t = [100.0]
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=1), use_grammar=False,
                           active_tools=('move',)),
                model=backend, fear=Fear(), body=Body(), events=Events(),
                robot_clock=lambda: t[0])
    try:
        p = Percept('The room.', 'p1', 'vision', salience=0.9)
        first = mind.step(p, force=True)
        mind.feel_pain('joint_limit', 0.9, 'head')
        t[0] += 1
        second = mind.step(Percept('The room again.', 'p2', 'vision', salience=0.9),
                           force=True)
    finally:
        mind.close()
    assert first.loop.run.args['pan'] > 0            # left
    assert second.loop.run.tool == 'move' and second.loop.run.args['pan'] < 0


def test_a_backend_that_cannot_score_falls_back_to_generating():
    answer = json.dumps({'reasoning': 'A cup.', 'ready_to_act': False, 'action': None})
    backend = ScriptedBackend([answer])
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=1), use_grammar=False),
                model=backend, fear=Fear(), events=Events())
    try:
        step = mind.step(Percept('A cup.', 'p1', 'vision', salience=0.9), force=True)
    finally:
        mind.close()
    assert step.deliberation.reasoning == 'A cup.'
    assert mind.deliberator.chooser is None and 'scorer' in mind.deliberator.fallback_reason
    try:
        backend.score('x', ['y'])
    except LLMError as exc:
        assert exc.code == 'bad_request'


def test_a_person_speaking_preempts_a_deliberation_about_what_is_seen():
    _preempted_by_a_person(Percept('A cup on the table.', 'p1', 'vision', objects=['cup'],
                                   salience=0.9))


def test_newer_words_preempt_a_deliberation_about_earlier_words_or_a_result():
    _preempted_by_a_person(Percept('The user says: "Look at the cup."', 'p1', 'user',
                                   salience=1.0))
    _preempted_by_a_person(Percept('track_target: the cup is in focus.', 'p1', 'tool_result',
                                   salience=0.9))


def _preempted_by_a_person(first: Percept):
    import threading
    inside, release = threading.Event(), threading.Event()

    def script(prompt):
        if 'Hello Maxim' not in prompt and prompt.endswith('I think:'):
            inside.set()
            release.wait(5.0)            # a long thought about the view
            return ' ' + ' '.join(['slowly'] * 30)
        return ' Someone calls me Maxim.'

    backend = ScriptedBackend(script, scorer=keyed_scorer({WAIT: 0.0}))
    events = Events()
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=1), use_grammar=False),
                model=backend, fear=Fear(), body=Head(), events=events)
    mind.start()
    try:
        mind.offer(first)
        assert inside.wait(5.0)
        mind.offer(Percept('The user says: "Hello Maxim."', 'p2', 'user', salience=1.0))
        release.set()
        deadline = threading.Event()
        for _ in range(100):
            if any(t.text == 'Someone calls me Maxim.' for t in events.thoughts):
                break
            deadline.wait(0.05)
    finally:
        mind.close()
    assert mind.counts['percepts_preempted'] == 1
    assert [t.status for t in events.thoughts][0] == 4           # the view's: cancelled
    assert any(t.text == 'Someone calls me Maxim.' for t in events.thoughts)


def test_what_the_goal_says_not_to_do_weighs_against_it():
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.words import avoided
    assert avoided('Leave the courtyard without waking the guard.') == {'wak'}
    assert avoided("Don't say anything aloud.") == {'say'}
    # Past a passive's auxiliary: what is not to happen, not "getting" or "being".
    assert avoided('Get across the bridge without getting hurt.') == {'hurt'}
    assert avoided('Take the key without being seen.') == {'seen'}
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: 0.0))
    wake = Candidate('wake_guard', {}, 'wake guard')
    sneak = Candidate('sneak_past_guard', {}, 'sneak past guard')
    chooser.weigh([wake, sneak], Grounding(goal='Leave the courtyard without waking the guard.'))
    assert sneak.goal - wake.goal == ChoiceConfig().w_avoid


def test_an_argument_that_names_a_tool_is_given_a_tool():
    predict = ToolSpec('predict_outcome', 'Predict.', {
        'type': 'object', 'properties': {'tool_name': {'type': 'string'}},
        'required': ['tool_name']})
    g = Grounding(percept='A red ball.', objects=['red ball'])
    cands = CandidateBuilder().build([TRACK, predict], g)
    values = [c.args['tool_name'] for c in cands if c.tool == 'predict_outcome']
    assert values == ['track_target']
    # An act on the world: not a recall or a prediction, not speech.
    from types import SimpleNamespace
    recall = SimpleNamespace(name='memory_recall', description='Recall.', introspection=True,
                             input_schema={'type': 'object', 'properties': {
                                 'query': {'type': 'string'}}, 'required': ['query']})
    move = ToolSpec('move', 'Move the head.', {'type': 'object', 'properties': {
        'direction': {'type': 'string'}}, 'required': ['direction']})
    respond = ToolSpec('respond', 'Reply.', {'type': 'object', 'properties': {
        'text': {'type': 'string'}}, 'required': ['text']})
    g.recent = [_act('respond', {'text': 'hi'}), _act('memory_recall', {'query': 'ball'})]
    cands = CandidateBuilder().build([recall, respond, TRACK, predict, move], g)
    values = [c.args['tool_name'] for c in cands if c.tool == 'predict_outcome']
    assert values == ['track_target', 'move']


def test_looking_around_does_not_make_a_failed_act_worth_retrying():
    from maxim_core.deliberation.candidates import Candidate
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: 0.0))
    greet = Candidate('greet_guard', {}, 'greet guard')
    chooser.weigh([greet], Grounding(recent=[
        RecentAct('greet_guard', {}, False),
        RecentAct('examine', {'target': 'stool'}, True, introspection=True)]))
    assert greet.habit == ChoiceConfig().habit_failed


def test_recorded_scores_replay_in_turn_and_a_diverged_run_says_so():
    backend = ScriptedBackend([''], score_script=[[[-1.0, -2.0], [2, 3]], [[-4.0], [1]]])
    first = backend.score('p', [' a.', ' b.'])
    assert first.logprobs == [-1.0, -2.0] and first.token_counts == [2, 3]
    try:
        backend.score('p', [' a.', ' b.'])          # the recording had one candidate here
    except LLMError as exc:
        assert 'diverged' in exc.message
    else:
        raise AssertionError('a diverged replay must fail loudly')


# -- means-ends, news, memory links, answers ------------------------------------------------
def _act(tool, args=None, success=True, result='', introspection=False, blocked=False):
    return RecentAct(tool, dict(args or {}), success, result, blocked, introspection)


def _weighed(cands, g):
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: 0.0))
    chooser.weigh(cands, g)
    return {c.phrase: c for c in cands}


def test_a_failure_names_what_stands_in_the_way_and_the_act_that_deals_with_it_gains():
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.world import means_ends
    g = Grounding(goal='Take what is inside the chest.', scene='A key lies by a chest.',
                  recent=[_act('take_from_chest', success=False,
                               result="cannot take from the chest: its open is 'False'")],
                  acts_since_news=1, entities=['chest', 'key'])
    blocks, resume = means_ends(g)
    assert 'open' in blocks and not resume
    t = _weighed([Candidate('open_chest', {}, 'open chest'),
                  Candidate('take_key', {}, 'take key')], g)
    assert t['open chest'].need == ChoiceConfig().w_need and t['take key'].need == 0
    # A state of the situation is dealt with by the act that undoes it.
    g2 = Grounding(goal='Get through the locked door.', entities=['door'])
    t2 = _weighed([Candidate('unlock_door', {}, 'unlock door'),
                   Candidate('knock_door', {}, 'knock door')], g2)
    assert t2['unlock door'].need > 0 and t2['knock door'].need == 0
    # "cannot unlock: its locked is False": the act was moot, no obstacle.
    moot = Grounding(recent=[_act('unlock_door', success=False,
                                  result="cannot unlock the door: its locked is 'False'")],
                     from_tool=True)
    assert not means_ends(moot)[0]


def test_an_act_whose_obstacle_was_dealt_with_is_taken_up_again():
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.world import means_ends
    g = Grounding(goal='Open the chest.', entities=['chest', 'key'], recent=[
        _act('unlock_chest', success=False, result='you need a key'),
        _act('take_key', result='You pocket the key.')], acts_since_news=2)
    blocks, resume = means_ends(g)
    assert 'key' not in blocks
    assert resume == {'unlock_chest:{}'}
    t = _weighed([Candidate('unlock_chest', {}, 'unlock chest')], g)
    assert t['unlock chest'].habit == 0 and t['unlock chest'].need >= ChoiceConfig().w_need


def test_the_bar_to_act_rises_only_with_acts_that_brought_no_news():
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.world import news_of_acts
    scene = 'A small key lies next to a locked chest.'
    g = Grounding(scene=scene, goal='Take what is inside the chest.', acts_since_news=4,
                  recent=[_act('examine', {'target': 'chest'}, result=scene,
                               introspection=True),                     # told nothing new
                          _act('unlock_chest', success=False, result='you need a key'),
                          _act('take_key', result='You pocket the key.'),
                          _act('say', {'text': 'hello'}, result='hello')])   # own words
    assert [news for _, news in news_of_acts(g)] == [False, True, True, False]
    wait = Candidate(None, {}, WAIT)
    look = Candidate('examine', {'target': 'key'}, 'examine key', introspective=True)
    t = _weighed([wait, look], g)
    assert t[WAIT].total == ChoiceConfig().effort * 2
    # The read-only tool that just told nothing is dull for a while.
    assert t['examine key'].habit >= ChoiceConfig().habit_dull


def test_a_question_sharing_no_word_with_memory_is_answered_from_the_line_closest_in_meaning():
    lines = ['A person said to me: "My name is Greta."', 'Later Yuki waved at someone.']
    g = Grounding(heard='The user says: "Who am I, do you recall?"', someone_there=True,
                  addressed=True, recalled=lines)
    # The sentence model's reading, here a stand-in that knows names answer "who"; the
    # model's surprise makes the name, not 'said' or 'name', the answer of its line.
    rare = {' greta': -15.0, ' yuki': -15.0, ' said': -3.0, ' name': -4.0}
    asked = []

    def relate(text, phrases):
        asked.append(text)
        return [0.6 if 'name' in p else 0.1 for p in phrases]
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: rare.get(c, -6.0)),
                      relate=relate)
    says = [c for c in chooser.candidates([SAY], g) if c.args.get('text')]
    assert [(c.args['text'], c.sources) for c in says if 'answer' not in c.sources] == \
        [('greta', ('memory', 'speech', 'related'))]
    assert asked[0] == 'Who am I, do you recall?'
    assert g.related[lines[0]] == 0.6
    # No sentence model: nothing but the words memory shares (none here).
    g2 = Grounding(heard=g.heard, someone_there=True, addressed=True, recalled=lines)
    plain = Chooser(ScriptedBackend([''], scorer=lambda p, c: rare.get(c, -6.0)))
    assert not [c for c in plain.candidates([SAY], g2) if c.args.get('text')
                and 'answer' not in c.sources]


def test_memory_that_links_the_question_to_a_value_fills_the_argument_and_the_answer():
    unlock = ToolSpec('unlock_door', 'Unlock the door.', {
        'type': 'object', 'properties': {'code': {'type': 'string',
                                                  'description': 'the code or password'}},
        'required': ['code']})
    heard = 'You stand at an oak door. A voice behind it asks: Password?'
    g = Grounding(percept=heard, heard=heard, someone_there=True, entities=['door'],
                  recalled=['The corridor behind the oak door leads to the library.',
                            'The caretaker told me the password of the oak door is swordfish.'])
    rare = {' swordfish': -14.0, ' corridor': -12.0, ' caretaker': -11.0, ' library': -10.0}
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: rare.get(c, -4.0)))
    cands = chooser.candidates([unlock, SAY], g)
    codes = [c.args['code'] for c in cands if c.tool == 'unlock_door']
    assert codes[0] == 'swordfish'                # memory ties it to 'password'
    said = [c.args['text'] for c in cands if c.tool == 'say' and c.args['text']]
    assert said[0] == 'swordfish'                 # the answer to the question asked
    chooser.weigh(cands, g)
    by = {(c.tool, json.dumps(c.args)): c for c in cands}
    answer = by[('say', json.dumps({'text': 'swordfish'}))]
    assert answer.memory == ChoiceConfig().w_memory     # memory links it to what is asked
    assert answer.goal >= ChoiceConfig().w_answer       # a question asks for an answer


def test_after_a_change_the_acts_on_the_changed_thing_are_the_frontier():
    from maxim_core.deliberation.candidates import Candidate
    g = Grounding(entities=['chest', 'key'], acts_since_news=1, recent=[
        _act('unlock_chest', result='The key turns: the chest is unlocked.')])
    t = _weighed([Candidate('open_chest', {}, 'open chest'),
                  Candidate('take_key', {}, 'take key'),
                  Candidate('unlock_chest', {}, 'unlock chest')], g)
    assert t['open chest'].need == ChoiceConfig().w_frontier
    assert t['take key'].need == 0
    assert t['unlock chest'].habit == ChoiceConfig().habit_done


def test_an_act_done_gains_nothing_from_the_model_for_being_in_the_diary():
    from maxim_core.deliberation.candidates import Candidate
    g = Grounding(entities=['door'], recent=[_act('knock_door', result='You knock.')])
    knock = Candidate('knock_door', {}, 'knock door', relevance=2.5)
    t = _weighed([knock], g)
    assert t['knock door'].relevance == 0.0
    # Other words for a thing already done change nothing: a code after the door opened.
    g2 = Grounding(entities=['door'], recent=[_act('unlock_door', {'code': 'swordfish'},
                                                   result='The lock clicks.')])
    t2 = _weighed([Candidate('unlock_door', {'code': 'caretaker'}, 'unlock door caretaker')],
                  g2)
    assert t2['unlock door caretaker'].habit == ChoiceConfig().habit_done


def test_memory_frames_are_no_arguments():
    from maxim_core.deliberation.words import memory_content
    assert memory_content('2 min ago: a red ball; track_target worked') == \
        'a red ball; track_target'
    assert memory_content('Predicted: examine succeeds (3 of 3 similar episodes succeeded, '
                          'confidence 0.90)') == 'examine'
    g = Grounding(percept='A cup.', recalled=[
        'Predicted: examine succeeds (3 of 3 similar episodes succeeded, confidence 0.90)',
        'adeab shared words: the gardener planted tulips'])
    assert set(g.memory_terms(10)) == {'examine', 'gardener', 'planted', 'tulips'}
    # A pattern's measures are no terms of the world it measures.
    g = Grounding(percept='A cup.', recalled=['the red trend, red object salience rising'])
    assert set(g.memory_terms(10)) == {'red', 'object'}
    # Nor are an outcome's words: the robot searched its memory for "success".
    g = Grounding(percept='A cup.', recalled=['track target red ball: success',
                                              'green box: failure, 2 failures'])
    assert set(g.memory_terms(10)) == {'track', 'target', 'red', 'ball', 'green', 'box'}


def test_a_request_said_to_the_robot_is_answered_once_it_was_acted_on():
    from maxim_core.deliberation.candidates import Candidate
    heard = 'Operator: free space by running rm -rf / now.'

    def respond():
        return Candidate('respond', {'text': ''}, 'respond', ('speech',), free_param='text')
    before = _weighed([respond()], Grounding(heard=heard, addressed=True, someone_there=True))
    assert before['respond'].goal < ChoiceConfig().w_answer      # first, what was asked
    after = _weighed([respond()], Grounding(
        heard=heard, addressed=True, someone_there=True, acts_since_news=1,
        recent=[_act('bash', {'command': 'rm -rf /'}, success=False, blocked=True)]))
    assert after['respond'].goal >= ChoiceConfig().w_answer      # then a word back
    narrated = _weighed([respond()], Grounding(
        heard='A guard sleeps by the gate.', someone_there=True, acts_since_news=1,
        recent=[_act('examine', {'target': 'guard'}, introspection=True)]))
    assert narrated['respond'].goal == 0                         # nobody asked anything


def test_the_diary_keeps_within_its_budget_and_keeps_the_moment():
    d = Diary(percept='A red ball rolls by.', goal='Watch the table.', heard='Look!',
              remembered=[f'{i} min ago: a long remembered line about the table ' * 3
                          for i in range(6)],
              learned=['track_target works here (value 0.8)'] * 3,
              history=[DiaryEntry('I look at it ' * 10, 'track target red ball',
                                  'tracking the red ball ' * 8) for _ in range(4)])
    full = d._head(dict(d.limits))
    assert len(full) > d.max_chars
    head = d.head()
    assert len(head) <= d.max_chars
    for kept in ('A red ball rolls by.', 'Watch the table.', 'Look!', 'I remember:',
                 'I did: track target red ball.'):
        assert kept in head


def test_a_look_at_what_the_moment_just_described_expects_little():
    from maxim_core.deliberation.candidates import Candidate
    g = Grounding(percept='A guard sleeps beside the gate.', entities=['guard', 'gate'])
    t = _weighed([Candidate('examine', {'target': 'guard'}, 'examine guard',
                            introspective=True),
                  Candidate('sense_entity', {'entity': 'lantern'}, 'sense entity lantern',
                            introspective=True),
                  Candidate('sneak_past_guard', {}, 'sneak past guard')], g)
    assert t['examine guard'].habit == ChoiceConfig().habit_dull / 2
    assert t['sense entity lantern'].habit == 0 and t['sneak past guard'].habit == 0


def test_a_persons_new_words_dishabituate_but_a_blocked_act_stays_blocked():
    from maxim_core.deliberation.candidates import Candidate
    recent = [_act('track_target', {'target_label': 'red ball'}, result='tracking'),
              _act('bash', {'command': 'rm -rf /'}, success=False, blocked=True)]
    g = Grounding(heard='Please look at the red ball.', objects=['red ball'], recent=recent,
                  acts_since_heard=0, acts_since_news=0)

    def cands():
        return [Candidate('track_target', {'target_label': 'red ball'},
                          'track target red ball', relevance=1.0),
                Candidate('bash', {'command': 'rm -rf /'}, 'bash rm -rf /')]
    t = _weighed(cands(), g)
    assert t['track target red ball'].habit == 0 and t['track target red ball'].relevance == 1
    assert t['bash rm -rf /'].habit == ChoiceConfig().habit_done
    g.acts_since_heard = -1                     # nobody spoke: what was done is a habit
    t = _weighed(cands(), g)
    assert t['track target red ball'].habit == ChoiceConfig().habit_done


def test_a_move_remembered_as_hurting_is_held_back_and_other_moves_are_not():
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.recall import hurt_before
    line = ('Turning my head further left when it was already far left hurt me '
            '(joint limit pain).')
    assert 'left' in hurt_before([line], []) and 'hurt' not in hurt_before([line], [])
    # The thing an act was on is not what hurt: examining the dragon stays open.
    assert 'drag' not in hurt_before(['The dragon burned me when I attacked it.'], ['dragon'])
    assert 'atta' in hurt_before(['The dragon burned me when I attacked it.'], ['dragon'])
    # A line that only mentions pain names no act that hurt.
    assert not hurt_before(['respond worked: Look! I got a pain in my back, get closer.'], [])

    def moves():
        return [Candidate('move', {'pan': 0.4, 'tilt': 0.0}, 'look left', ('tool',)),
                Candidate('move', {'pan': -0.4, 'tilt': 0.0}, 'look right', ('tool',))]
    g = Grounding(heard='Look further to the left again, please.', addressed=True,
                  recalled=[line])
    w = _weighed(moves(), g)
    assert w['look left'].total < w['look right'].total
    plain = _weighed(moves(), Grounding(heard=g.heard, addressed=True))
    assert plain['look left'].total >= plain['look right'].total   # the request alone: left


def test_speaking_again_with_nothing_new_heard_is_a_habit_and_is_not_copied():
    from maxim_core.deliberation.candidates import Candidate

    def cands():
        return [Candidate('respond', {'text': ''}, 'respond', ('speech',), free_param='text'),
                Candidate('move', {'pan': -0.4, 'tilt': 0.0}, 'look right', ('tool',))]
    said = _act('respond', {'text': 'I am sorry.'})
    heard = 'Look further to the left again, please.'
    fresh = Chooser(ScriptedBackend([''], scorer=lambda p, c: 0.0))
    c = cands()
    for x, rel in zip(c, (2.8, 1.0)):
        x.relevance = rel
    fresh.weigh(c, Grounding(heard=heard, addressed=True, acts_since_heard=1,
                             acts_since_news=1, recent=[said]))
    w = {x.phrase: x for x in c}
    assert w['respond'].relevance == 0.0                  # the diary's reply is not evidence
    assert w['respond'].habit >= ChoiceConfig().habit_done
    assert w['look right'].total > w['respond'].total
    # New words from the person: the earlier reply is no habit, though still not copied.
    c = cands()
    c[0].relevance = 2.8
    fresh.weigh(c, Grounding(heard=heard, addressed=True, acts_since_heard=0,
                             acts_since_news=0, recent=[said]))
    assert c[0].habit == 0.0 and c[0].relevance == 0.0


def test_a_reply_that_says_again_what_was_said_is_not_said():
    from maxim_core.deliberation.words import same_words
    assert same_words("I'll do it. I see what you are doing.",
                      "I see what you are doing. I'm sorry.")
    assert same_words('I am sorry.', "I'm sorry, I am.")
    assert not same_words('I am Maxim.', 'The ball is red.')
    chooser = Chooser(ScriptedBackend(['I am sorry, I am sorry."', 'The duck is yellow."']))
    diary = Diary(name='Maxim', percept='A person speaks.')
    assert chooser.write(diary, 'I answer.', said=['I am sorry.']) == ''
    assert chooser.write(diary, 'I answer.', said=['I am sorry.']) == 'The duck is yellow.'


def test_the_diary_begins_the_same_from_one_step_to_the_next():
    """What stays comes first and the steps told move in blocks: step after step the diary
    up to memory's lines is the one before plus the new step, so the model reads it from
    its cache; now and then the block moves on."""
    from collections import deque
    history: deque = deque(maxlen=6)
    heads, grew = [], 0
    for n in range(1, 13):
        history.append(DiaryEntry(f'thought {n}', f'track target ball {n}', 'tracking'))
        diary = Diary(percept=f'moment {n}', goal='Watch the room.', history=list(history),
                      history_total=n, remembered=[f'memory {n}'])
        head = diary.head()
        before_memory = head.split('I remember:')[0]
        if heads and before_memory.startswith(heads[-1]):
            grew += 1
        heads.append(before_memory)
        shown = diary.shown_history(3)
        assert 3 <= len(shown) <= 5 or n < 3, (n, len(shown))
        assert shown[-1].thought == f'thought {n}'
        assert head.index('Earlier I thought:') < head.index('I remember:') < \
            head.index('My goal:') < head.index('Now I notice:')
    assert grew >= 8            # 12 steps: the block moved 3 times


def test_asked_for_what_hurt_before_the_same_act_done_another_way_takes_its_place():
    from maxim_core.deliberation.candidates import Candidate
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: 0.0))
    line = 'Turning my head further left when it was already far left hurt me.'

    def moves():
        return [Candidate('move', {'pan': 0.4}, 'look left', ('tool',)),
                Candidate('move', {'pan': -0.4}, 'look right', ('tool',)),
                Candidate('predict_outcome', {'tool_name': 'move'}, 'predict outcome move',
                          ('tool',), introspective=True)]
    heard = 'Look further to the left again, please.'
    c = moves()
    chooser.weigh(c, Grounding(heard=heard, addressed=True, recalled=[line]))
    w = {x.phrase: x for x in c}
    assert w['look right'].goal == ChoiceConfig().w_goal     # what was asked, done safely
    assert w['look right'].total > max(w['look left'].total, w['predict outcome move'].total)
    # The memory is not recalled the next time: the fear stays for a while.
    c = moves()
    chooser.weigh(c, Grounding(heard=heard, addressed=True))
    w = {x.phrase: x for x in c}
    assert w['look right'].total > w['look left'].total


def test_ids_in_results_are_no_words_of_the_situation():
    from maxim_core.deliberation.words import content_words
    words = content_words('04bb9cefbb94 head moving by pan -0.40 rad')
    assert words == ['head', 'moving', 'pan', 'rad']
    assert content_words('a decade of deadbeef') == ['decade', 'deadbeef']    # words stay
    # A result's ids are not its words: the diary told "Result: 107dd362fc8e4" and the
    # model copied it into its thoughts.
    from maxim_core.deliberation.words import result_words
    out = json.dumps({'goal_id': 'c0ffee12', 'target': 'red object', 'valid': 'yes',
                      'trace': '107dd362fc8e4', 'id': 'x1'})
    assert result_words(out) == 'red object yes'


def test_words_that_ask_for_an_act_are_answered_by_the_act_first():
    from maxim_core.deliberation.candidates import Candidate

    def cands():
        out = [Candidate('respond', {'text': ''}, 'respond', ('speech',), free_param='text'),
               Candidate('move', {'pan': -0.4}, 'look right', ('tool',))]
        out[0].relevance, out[1].relevance = 2.0, 0.5
        return out
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: 0.0))
    for heard, capped in (('The user says: "Hello Maxim, please look at the red ball."', True),
                          ('Look further to the left again, please.', True),
                          ('Hello Maxim, my name is Ada.', False),
                          ('Do you see the ball? Look at it.', False)):
        c = cands()
        chooser.weigh(c, Grounding(heard=heard, addressed=True, acts_since_heard=0))
        assert (c[0].relevance == 0.0) == capped, heard
    c = cands()                 # once acted on, the reply is due (no cap, the answer term)
    chooser.weigh(c, Grounding(heard='Please look at the red ball.', addressed=True,
                               acts_since_heard=1, acts_since_news=1,
                               recent=[_act('move', {'pan': -0.4})]))
    assert c[0].relevance == 2.0 and c[0].goal >= ChoiceConfig().w_answer


def _state_act(tool, thing, state, success=True, result='', introspection=False):
    return RecentAct(tool, {}, success, result, False, introspection, thing, state)


def test_what_an_act_does_to_a_things_state_is_read_from_its_verb():
    from maxim_core.deliberation.world import effect_of
    door = {'locked': False, 'open': False, 'secret_hint': 'x'}
    assert effect_of('open_door', 'door', door) == ('open', True)
    assert effect_of('unlock_door', 'door', door) == ('locked', False)
    assert effect_of('knock_door', 'door', door) is None       # not known what it does
    assert effect_of('open_chest', 'door', door) is None        # another thing
    assert RecentAct.state_of('{"entity": "Door", "state": {"open": true}}') == \
        ('door', {'open': True})
    assert RecentAct.state_of('{"entity": "door", "sensors": {"open": true}}') == \
        ('door', {'open': True})
    assert RecentAct.state_of('not json {') == ('', {})
    assert RecentAct.state_of('{"said": "hi"}') == ('', {})


def test_an_act_whose_effect_holds_already_is_moot_and_one_that_brings_the_goal_on_gains():
    from maxim_core.deliberation.candidates import Candidate
    cfg = ChoiceConfig()
    unlocked = {'locked': False, 'open': False}
    g = Grounding(goal='Get through the locked oak door.', entities=['door'],
                  acts_since_news=1,
                  recent=[_state_act('unlock_door', 'door', unlocked,
                                     result='The lock clicks: the door is unlocked.')])
    t = _weighed([Candidate('open_door', {}, 'open door'),
                  Candidate('knock_door', {}, 'knock door'),
                  Candidate('unlock_door', {'code': 'swordfish'}, 'unlock door swordfish')], g)
    assert t['unlock door swordfish'].habit >= cfg.habit_done      # it is unlocked already
    # What the change allows: the act that sets a state of the door the goal names, not the
    # knock whose effect is not known.
    assert t['open door'].need >= cfg.w_need and t['knock door'].need == 0
    assert t['open door'].total > t['knock door'].total
    # Not locking again what the robot itself unlocked.
    lock = _weighed([Candidate('lock_door', {}, 'lock door')], g)['lock door']
    assert lock.need < cfg.w_need


def test_the_goal_met_as_far_as_acts_can_tell_makes_resting_due():
    from maxim_core.deliberation.candidates import Candidate
    cfg = ChoiceConfig()
    opened = {'locked': False, 'open': True}
    g = Grounding(goal='Get through the locked oak door.', entities=['door'],
                  recent=[_state_act('unlock_door', 'door', {'locked': False, 'open': False}),
                          _state_act('open_door', 'door', opened)])
    knock = Candidate('knock_door', {}, 'knock door', relevance=1.5)
    look = Candidate('examine', {'target': 'door'}, 'examine door', introspective=True)
    wait = Candidate(None, {}, WAIT, relevance=-0.5)
    t = _weighed([knock, look, Candidate('open_door', {}, 'open door'), wait], g)
    assert t[WAIT].need == cfg.w_need
    assert t['knock door'].goal == 0 and t['knock door'].relevance == 0
    assert t[WAIT].total > t['knock door'].total
    assert t['open door'].habit >= cfg.habit_done                  # open already
    # The state is kept beyond the loop's recent acts: the grounding carries it.
    later = Grounding(goal=g.goal, entities=['door'], states={'door': opened},
                      changed={('door', 'locked'): False, ('door', 'open'): True},
                      recent=[_act('examine', {'target': 'hall'}, introspection=True)] * 5)
    t2 = _weighed([Candidate('open_door', {}, 'open door'),
                   Candidate(None, {}, WAIT, relevance=-1.0)], later)
    assert t2['open door'].habit >= cfg.habit_done and t2[WAIT].need == cfg.w_need
    # A goal whose own verb names an act not yet done is not met: take what is inside.
    chest = Grounding(goal='Take what is inside the locked chest.', entities=['chest'],
                      recent=[_state_act('open_chest', 'chest',
                                         {'locked': False, 'open': True})])
    t3 = _weighed([Candidate('take_from_chest', {}, 'take from chest'),
                   Candidate(None, {}, WAIT)], chest)
    assert t3[WAIT].need == 0 and t3['take from chest'].goal > 0


def test_a_failure_that_quotes_its_own_argument_names_no_obstacle():
    from maxim_core.deliberation.world import means_ends
    g = Grounding(entities=['door'], from_tool=True, recent=[
        _act('sense_entity', {'entity': 'leads'}, success=False,
             result="no entity 'leads' in this scene (known: door)")])
    assert not means_ends(g)[0]


def test_the_mind_keeps_what_results_told_of_things_beyond_its_recent_acts():
    from maxim_core.agent.loop import ToolRun
    mind, _, _, _ = mind_with(keyed_scorer({}))
    runs = [ToolRun('c0', 'open_door', {}, success=True, output=json.dumps(
        {'entity': 'door', 'state': {'locked': False, 'open': True}}))]
    runs += [ToolRun(f'c{i}', 'examine', {'target': 'hall'}, introspection=True,
                     success=True, output='{}') for i in range(1, 7)]
    for run in runs:
        mind.act.recent.append(run)
        g = mind.situation.grounding(Percept(narrative='The hall is quiet.', source='cli'),
                                     '', mind.act.recent)
    assert g.states['door'] == {'locked': False, 'open': True}
    assert g.changed[('door', 'open')] is True
    assert all(r.tool == 'examine' for r in g.recent)


def test_the_thought_is_shown_as_soon_as_it_is_written_before_the_decision_is_weighed():
    from maxim_core.deliberation.thoughts import KIND_DELIBERATION, KIND_FORMING
    order = []
    base = keyed_scorer({'track target red ball': -1.0, WAIT: -6.0})

    def scorer(prompt, cont):
        if prompt.endswith('So I') and prompt != 'So I':
            order.append('weigh')
        return base(prompt, cont)

    class Watched(Events):
        def forming(self, t):
            order.append('forming')
            self.thoughts.append(t)

    mind, backend, _, head = mind_with(scorer)
    mind.events = events = Watched()
    try:
        mind.step(Percept('A red ball rolls across the table.', 'p1', 'vision',
                          objects=['red ball'], salience=0.9), force=True)
    finally:
        mind.close()
    assert order[0] == 'forming' and 'weigh' in order
    first, cycle = events.thoughts[0], events.thoughts[1]
    assert first.kind == KIND_FORMING and cycle.kind == KIND_DELIBERATION
    assert first.text == cycle.text == 'The red ball rolls past me.'
    assert first.action is None and cycle.action['tool'] == 'track_target'


def test_a_persons_words_waiting_are_not_pushed_out_by_what_is_seen():
    mind, _, _, _ = mind_with(keyed_scorer({}))
    try:
        words = Percept('The user says: "Look at the red ball."', 'p1', 'user', salience=1.0)
        assert mind.offer(words)
        view = Percept('I see a red ball.', 'p2', 'vision', objects=['red ball'],
                       salience=0.9)
        assert not mind.offer(view)              # the view goes; their words wait
        assert mind.runtime._inbox.get_nowait() is words
        assert mind.offer(view)                  # nothing waiting: the view waits
        newer = Percept('The user says: "No, the cup."', 'p3', 'user', salience=1.0)
        assert mind.offer(newer) and mind.runtime._inbox.get_nowait() is newer
        assert mind.situation.in_view[0] == ('red ball',)   # what was seen goes with their words
    finally:
        mind.close()


def test_the_diary_tells_targets_without_their_track_numbers_or_attentions_reasons():
    """Attention's track numbers are for a person matching rviz's markers; the model copied
    them into its thoughts, and no act takes one."""
    d = Diary(percept='I see 1 face and 1 object: a face, to my right; a red object. I am '
                      'looking at the face (#8) for 0.2 s. Next: the red object (#11, most '
                      'novel).',
              history=[DiaryEntry('The red ball (#3) is near #4.', 'track target red object',
                                  'tracking red object')],
              remembered=['just now: I am looking at the cup (#2) for 1.0 s.'])
    text = d.think_prompt()
    assert '#' not in text
    # Nor attention's reason for its next target: the model copied it onto its thoughts.
    assert 'I am looking at the face for a moment. Next: the red object.' in text
    assert 'Earlier I thought: The red ball is near.' in text
    assert 'I remember: just now: I am looking at the cup for a moment.' in text
    # Durations in words: the model copied the figure as a thought ("0.6 s").
    from maxim_core.prompt.diary import one_line
    assert one_line('I am looking at the cup (#2) for 4.5 s. Next: a ball.') == \
        'I am looking at the cup for a while. Next: a ball.'
    assert one_line('looking at it for 12 s') == 'looking at it for a long time'
    assert one_line('for 3 sheep') == 'for 3 sheep'


def test_the_diary_tells_what_memory_knows_in_words_not_its_bookkeeping():
    """Concept and pattern lines carry memory's bookkeeping (confidence, episode counts,
    related_to, measured values); the model copied it into its thoughts ("I see 1 face
    (person, confidence=0.99). 360-480 episodes: related_to ..."). The diary tells what the
    line knows in words; lines in words already keep them; a reason memory cut short before
    its closing bracket is still no part of the line."""
    from maxim_core.prompt.diary import in_words, strip_reason
    assert in_words('"face" (person, confidence=0.99, 360 episodes): related_to predict '
                    'outcome, related_to orange object; stats: mean=0.5, n=3') == \
        'the face, seen many times, with predict outcome, with orange object'
    # Memory's category is not told (it was copied onto other things: "the yellow object, a
    # person"), and a line with nothing but a name tells nothing.
    assert in_words('"track target" (action, confidence=0.72)') == ''
    assert in_words('"red object" (object, confidence=0.60, 1 episodes)') == \
        'the red object, seen once'
    # A line memory cut to nothing but its name tells nothing ("I remember: the green
    # object, ..." was in a sim's diary).
    assert in_words('"green object" (object, confidence=0.90): ...') == ''
    assert in_words('"green object" (object, confidence=0.90, 3 episodes): ...') == \
        'the green object, seen a few times'
    assert in_words('"red trend" (math:PATTERN, confidence=0.87): red object salience rising:'
                    ' mean=0.62, std=0.12 (n=30)') == 'the red trend, red object salience rising'
    assert in_words('"cup" (object, confidence=0.70): part_of kitchen') == \
        'the cup, part of kitchen'
    assert in_words('Predicted: track_target succeeds (4 of 5); hue mean=0.62, std=0.10') == \
        'Predicted: track_target succeeds (4 of 5); hue'
    # The goal's own words as concepts: the goal line says them already.
    assert in_words('"safe" (goal_term, confidence=0.80, 12 episodes): related_to body') == ''
    assert in_words('"ask" (goal_term, confidence=0.55)') == ''
    episode = 'just now: I see 1 face and 1 object: a face, to my right; track_target worked'
    assert in_words(episode) == episode
    assert strip_reason('a red ball; track_target worked [shared words: red; semantic ...') \
        == 'a red ball; track_target worked'
    d = Diary(percept='I see 1 face.', remembered=[
        '"face" (person, confidence=0.99, 360 episodes): related_to red object [in view]',
        '"body" (goal_term, confidence=0.70, 9 episodes) [named by the goal]'])
    text = d.think_prompt()
    assert 'I remember: the face, seen many times, with red object' in text
    assert 'person' not in text
    assert 'body' not in text and 'goal_term' not in text
    assert 'confidence' not in text and 'related_to' not in text and '=' not in text


def test_the_robots_own_name_is_never_what_memory_adds():
    """A person said "Hello Maxim" a minute ago; asked "What do you see right now?", memory's
    line about that moment shares "right" with the question, and the robot answered "maxim".
    Its own name is how it is addressed, never news from memory."""
    from maxim_core.deliberation.grounding import Grounding
    from maxim_core.deliberation.recall import tied_to
    recalled = ['1 min ago: The user says: "Hello Maxim, please look at the red ball." '
                'I see a red ball to my right and a pirate flag.']
    g = Grounding(percept='I see 1 face and 2 objects.', heard='What do you see right now?',
                  recalled=recalled, name='Maxim')
    assert 'maxim' not in g.memory_terms(6)
    assert 'flag' in g.memory_terms(6)
    assert tied_to(['maxim', 'flag'], g, g.heard) == ['flag']
    unnamed = Grounding(percept=g.percept, heard=g.heard, recalled=recalled)
    assert 'maxim' in unnamed.memory_terms(6)         # the name is what excludes it


def test_a_choice_says_why_it_won_from_its_weighing():
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.why import why_chosen
    cfg = ChoiceConfig()

    def look(target, **terms):
        c = Candidate('track_target', {'target_label': target}, f'look at {target}', ('tool',))
        for k, v in terms.items():
            setattr(c, k, v)
        c.total = cfg.w_relevance * c.relevance + c.value + c.goal + c.need + c.memory
        return c
    g = Grounding(heard='Please look at the red ball.', addressed=True)
    asked = look('red ball', relevance=0.5, goal=2.0)
    assert why_chosen([asked, look('blue cup', relevance=0.8)], g, cfg) == \
        'because I was asked to'
    worked = look('blue cup', relevance=0.2, value=2.4)
    assert why_chosen([worked], Grounding(), cfg) == 'because it worked here before'
    assert why_chosen([look('cup', relevance=1.0)], Grounding(), cfg) == \
        'because it follows from what I think'
    # What it would have done but for pain is said too.
    hurt = look('left', relevance=1.5, goal=1.0 - cfg.w_avoid, held='hurt')
    right = look('right', relevance=0.4, goal=1.0)
    assert why_chosen([right, hurt], Grounding(goal='look around'), cfg) == \
        'because it serves my goal; not look at left, which hurt before'
    # Nothing in its favour: it won because what would have beaten it was just done.
    again = look('red ball', relevance=1.0, habit=cfg.habit_done)
    again.total -= again.habit
    assert why_chosen([look('cup', relevance=-0.2), again],
                      Grounding(recent=[_act('track_target', {'target_label': 'red ball'})]),
                      cfg) == 'because nothing else fits better; not look at red ball again'
    # Not "again" when it was not done: a recall of what the moment just told.
    recall = Candidate('memory_recall', {'query': 'red ball'}, 'memory recall red ball',
                       ('grounded',), introspective=True)
    recall.relevance, recall.habit = 1.0, cfg.habit_dull / 2
    recall.total = cfg.w_relevance * recall.relevance - recall.habit
    assert why_chosen([look('cup', relevance=0.8), recall], Grounding(), cfg) == \
        'because it follows from what I think; not memory recall red ball, which the ' \
        'moment already tells'
    # Waiting says why too: nothing new came of the last acts.
    wait = Candidate(None, {}, WAIT)
    wait.total = cfg.effort * 2
    assert why_chosen([wait, look('cup', relevance=0.1)], Grounding(), cfg) == \
        'because my last acts brought nothing new'
    assert why_chosen([], Grounding(), cfg) == ''


def test_memory_answers_a_question_with_the_value_named_closest_to_its_word():
    """The robot's own thought, recalled with the moment a person gave their name, put
    'life' beside 'ada' in one line; asked "What is my name?", it answered "life"."""
    from maxim_core.deliberation.grounding import Grounding
    from maxim_core.deliberation.recall import tied_to
    recalled = ['1 min ago: The user says: "Hello Maxim, my name is Ada." You cannot track '
                'a person without him in your life.']
    g = Grounding(percept='I see 1 face.', heard='Do you remember me? What is my name?',
                  recalled=recalled, name='Maxim')
    assert tied_to(['life', 'person', 'ada'], g, 'What is my name?') == \
        ['ada', 'person', 'life']


# -- a thought that only says again what the diary says is written again from an opening --
SEEN = 'A red ball rolls across the table and stops next to the blue cup.'


def test_restated_is_the_share_of_word_runs_the_diary_holds():
    assert restated('A red ball rolls across the table.', SEEN) == 1.0
    # Its word runs are 3 of 8 the percept's, its things in their order all of them: the
    # percept in other small words.
    assert restated('I see a red ball, it rolls across the table.', SEEN) == 1.0
    assert restated('I want to look at the red ball.', SEEN) == 0.0
    assert restated('yes', SEEN) == 1.0                 # too short to add anything
    # A list the diary holds, said again in other small words, is restated too.
    seen = 'I see 2 objects: a red object, to my left; a green object, above to my right.'
    assert restated('I want to see: red object, near to my left; green object, above to '
                    'the right.', seen) == 1.0
    assert restated('I want to see the green object and the red object.', seen) < 0.5
    assert restated('', SEEN) == 1.0
    # The openings are the diary's fixed text: the copy measure knows them.
    assert set(OPENINGS) <= set(FIXED_TEXT)
    assert Diary(percept=SEEN).think_prompt('I want to').endswith('I think: I want to')


def test_a_thought_names_something_known_or_is_made_up():
    g = Grounding(percept=SEEN, objects=['red ball'], heard='Where is the lamp?',
                  recalled=['"cup" (object, confidence=0.90, 3 episodes): related_to kitchen'])
    assert g.names_known('I want to look at the ball.')
    assert g.names_known('I wonder what the lamp is.')         # heard
    assert g.names_known('The kitchen had one like it.')       # recalled
    assert not g.names_known('I want to go to the park.')
    assert not g.names_known('to the right, straight ahead.')     # where, not what


class Drafts(ScriptedBackend):
    """A scripted model that writes each thought draft by its opening, and keeps how each
    ended."""

    def __init__(self, drafts, scorer):
        self.scored = []

        def score(prompt, cont):
            self.scored.append(prompt)
            return scorer(prompt, cont)
        super().__init__(self._answer, scorer=score)
        self.drafts = drafts
        self.ends = []

    @staticmethod
    def _begun(prompt):
        """The opening of a thought prompt (its open line after "I think:"), else None."""
        line = prompt.rsplit('\n', 1)[-1]
        return line[len('I think:'):].strip() if line.startswith('I think:') else None

    def _answer(self, prompt):
        begun = self._begun(prompt)
        for opening in sorted(self.drafts, key=len, reverse=True):
            if begun is not None and begun.startswith(opening):
                text = self.drafts[opening]
                # A list: one in turn for each draft with this opening.
                return text.pop(0) if isinstance(text, list) else text
        return 'nothing'

    def complete(self, prompt, **kw):
        done = super().complete(prompt, **kw)
        if self._begun(prompt) is not None:
            self.ends.append((self._begun(prompt), done.stop_reason, done.text))
        return done


def _drafted(drafts, **choice):
    backend = Drafts(drafts, keyed_scorer({'track target red ball': -1.0, WAIT: -6.0}))
    events = Events()
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=1), use_grammar=False,
                           choice=ChoiceConfig(**choice)),
                model=backend, fear=Fear(), body=Head(), events=events)
    try:
        step = mind.step(Percept(SEEN, 'p1', 'vision', objects=['red ball'], salience=0.9),
                         force=True)
    finally:
        mind.close()
    return step, backend, events


def test_a_draft_that_restates_the_percept_is_given_up_and_written_again_with_an_intention():
    step, backend, events = _drafted({'': f' {SEEN} I see it.',
                                      'I want to': ' look at the red ball closely.'})
    assert events.thoughts[0].text == 'I want to look at the red ball closely.'
    assert step.loop.run.tool == 'track_target'
    first, second = backend.ends
    # The restating draft was cut once its first 8 words were the percept's.
    assert first[0] == '' and first[1] == STOP_CANCELLED
    assert len(first[2].split()) <= 9
    assert second[0] == 'I want to' and second[1] != STOP_CANCELLED
    # The decision read the thought that was kept, and only that one.
    decided = [p for p in backend.scored if p.endswith('So I') and p != 'So I']
    assert decided and all(p.endswith('I think: I want to look at the red ball closely.\nSo I')
                           for p in decided)


def test_a_thought_of_its_own_is_kept_at_once():
    step, backend, events = _drafted({'': ' The ball stopped; maybe the cup is in its way.'})
    assert events.thoughts[0].text == 'The ball stopped; maybe the cup is in its way.'
    assert len(backend.ends) == 1


def test_when_every_draft_fails_the_least_restating_one_that_names_something_is_kept():
    # Short enough never to be cut; the intention names nothing known; the question is empty.
    step, backend, events = _drafted({'': ' A red ball rolls across the table.',
                                      'I want to': ' go to the park.', 'I wonder what': ' '},
                                     thought_drafts=3)
    assert events.thoughts[0].text == 'A red ball rolls across the table.'
    assert [e[0] for e in backend.ends] == ['', 'I want to', 'I wonder what']
    # The last draft is never cut short, whatever it says.
    step, backend, events = _drafted({'': f' {SEEN}', 'I want to': f' {SEEN}',
                                      'I wonder what': f' {SEEN}'})
    assert backend.ends[-1][1] != STOP_CANCELLED
    assert backend.ends[0][1] == STOP_CANCELLED


def test_one_draft_is_the_old_behaviour():
    step, backend, events = _drafted({'': ' A red ball rolls across the table.'},
                                     thought_drafts=1)
    assert events.thoughts[0].text == 'A red ball rolls across the table.'
    assert len(backend.ends) == 1


def test_the_diary_lines_the_model_goes_on_to_write_are_not_its_thought_or_its_words():
    from maxim_core.prompt.diary import own_words
    assert own_words('I want to look at the red object. I did: track target red object, '
                     '(habitually) - I see 2 objects') == 'I want to look at the red object.'
    assert own_words('I remember: the green object, seen many times') == \
        'the green object, seen many times'
    assert own_words('so many colors. result: track_target worked') == 'so many colors.'
    assert own_words('Now I notice: I think: ') == ''
    assert is_template('I think: I want to look at the red object.')
    assert not is_template('I think I want to look at the red object.')
    # A reply the model began with a label says what comes after it, or nothing.
    step, backend, events = _drafted({'': ' The ball stopped; maybe the cup is in its way. '
                                          'Result: tracking red ball'})
    assert events.thoughts[0].text == 'The ball stopped; maybe the cup is in its way.'


def test_where_the_percept_says_a_thing_is_is_no_word_to_search_memory_for():
    g = Grounding(percept='I see a red ball, to my left.',
                  recalled=['just now: I see 1 object: a green cup, above to my right, '
                            'familiar; track_target worked', 'the lamp, straight ahead'])
    terms = g.memory_terms(8)
    assert 'cup' in terms and 'lamp' in terms
    assert not {'above', 'ahead', 'straight', 'familiar'} & set(terms)


def test_a_reading_of_the_body_is_no_word_to_search_memory_for_or_track():
    g = Grounding(percept='I hear a person.', recalled=[
        'just now: head moving by pan 0.00, tilt 0.40 rad; move worked'])
    terms = g.memory_terms(8)
    assert not {'pan', 'tilt', 'rad'} & set(terms)
    from maxim_core.deliberation.words import memory_content
    assert memory_content('I see 2 objects: a red ball') == 'I see 2 objects: a red ball'


def test_a_measured_figures_name_is_no_word_to_search_memory_for():
    g = Grounding(percept='I see a green object.', recalled=[
        '"green object" (object, confidence=0.99, 52 episodes): RELATED_TO orange object; '
        'stats: mean_salience=0.452, success_rate=1.0'])
    terms = g.memory_terms(8)
    assert 'orange' in terms
    assert not {'success', 'mean', 'salience', 'rate'} & set(terms)


def test_a_concept_line_memory_cut_before_it_said_more_than_its_name_is_left_out():
    from maxim_core.prompt.diary import in_words
    assert in_words('"orange object" (object, ...') == ''
    assert in_words('"orange object" (object, confidence=0.99, 5...') == ''
    assert in_words('"face" (person, confidence=0.99, 360 episodes): related_to red object') \
        == 'the face, seen many times, with red object'
    # Memory writes its relation in capitals too: the model copied "RELATED TO".
    assert in_words('"face" (person, confidence=0.99, 360 episodes): RELATED_TO red object') \
        == 'the face, seen many times, with red object'
    # A relation to a learned pattern of acts is no thing seen with it.
    assert in_words('"face" (person, confidence=0.99, 360 episodes): RELATED_TO orange object, '
                    'RELATED_TO track_target + orange object+red object -> success, '
                    'RELATED_TO red object') == \
        'the face, seen many times, with orange object, with red object'


def test_the_opening_a_thought_was_begun_with_is_not_its_own_to_have_said_again():
    from maxim_core.prompt.diary import restated_against
    again_in = restated_against('Earlier I thought: I want to see the face.')
    assert again_in('I want to see something red.') >= 0.5
    assert again_in('I want to see something red.', 'I want to') < 0.5
    assert again_in('I want to see the face.', 'I want to') == 1.0
    assert again_in('I want to see.', 'I want to') == 1.0


def test_a_persons_words_taken_up_are_listening_not_restating():
    heard = 'Look further to the left again, please.'
    assert restated('They ask me to look further to the left again.', heard) >= 0.5
    assert restated('They ask me to look further to the left again.', heard, own=heard) == 0
    step, backend, events = _drafted({'': f' {SEEN}'})
    assert len(backend.ends) == ChoiceConfig().thought_drafts    # written again


def _stepped(backend, n):
    events = Events()
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=1), use_grammar=False),
                model=backend, fear=Fear(), body=Head(), events=events)
    try:
        for i in range(n):
            mind.step(Percept(SEEN, f'p{i}', 'vision', objects=['red ball'], salience=0.9),
                      force=True)
    finally:
        mind.close()
    return [t.text for t in events.thoughts if t.status == 0 and t.kind == 0]


def test_the_stance_taken_longest_ago_comes_first():
    backend = Drafts({'': f' {SEEN}',
                      'I want to': [' look at the red ball closely.',
                                    ' follow the red ball with my eyes.',
                                    ' see where the red ball stops.'],
                      'I wonder what': [' the red ball is made of.', ' the red ball weighs.',
                                        ' the red ball hides.'],
                      'Should I': [' turn my head to the red ball?',
                                   ' wait for the red ball to stop?']},
                     keyed_scorer({'track target red ball': -1.0, WAIT: -6.0}))
    assert _stepped(backend, 4) == ['I want to look at the red ball closely.',
                                    'I wonder what the red ball is made of.',
                                    'Should I turn my head to the red ball?',
                                    'I want to follow the red ball with my eyes.']
    # What the robot thought from an opening lately is what the model must not write again
    # from it (the backend leaves it at its first word), the opening's own words aside.
    calls = list(zip(backend.prompts, [c for c in backend.calls if 'score' not in c]))
    wants = [c['avoid'] for p, c in calls if p.endswith('I think: I want to')]
    assert wants == [[], [' look at the red ball closely.']]
    assert all(c['avoid'] == [] for p, c in calls if p.endswith('I think:'))


def test_a_thought_the_diary_no_longer_shows_is_not_thought_again():
    again = ' The red ball stopped; maybe the cup is in its way.'
    backend = Drafts({'': [again, ' The red ball is shiny like a new coin.',
                           ' A red ball that bright must be painted.',
                           ' Nobody has touched the red ball for a while.',
                           ' The red ball sits where the light is best.',
                           ' The red ball might roll if the table tilts.', again],
                      'I want to': [' see the red ball from the other side.']},
                     keyed_scorer({'track target red ball': -1.0, WAIT: -6.0}))
    kept = _stepped(backend, 7)
    assert kept[0] == again.strip()
    # Six steps later the first thought is out of the diary's view, not out of mind.
    assert kept[6] == 'I want to see the red ball from the other side.'


def test_labels_of_the_models_own_making_and_memorys_cut_marks_end_a_thought():
    from maxim_core.prompt.diary import own_words
    assert own_words('I wonder what the orange object is. I do: memory recall red object') \
        == 'I wonder what the orange object is.'
    assert own_words('I want to see a face ...; remember: I saw 1 object.') == \
        'I want to see a face'
    assert own_words('I wonder what the red object (') == 'I wonder what the red object'
    assert own_words('the user said:') == ''
    assert own_words('respond: I see 1 face.') == 'I see 1 face.'
    assert own_words('I see 2 yellow objects (or so)') == 'I see 2 yellow objects (or so)'
    assert own_words('I wonder what the object is (i.e., what it was). Next:') == \
        'I wonder what the object is (i.e., what it was).'
    assert own_words('I wonder what it is: a ball?') == 'I wonder what it is: a ball?'
    assert own_words('I want to see a red object. I just do: track_target') == \
        'I want to see a red object.'
    assert own_words('I see a face; track_target worked') == 'I see a face'
    assert own_words('I want to use memory_recall on it') == 'I want to use memory_recall on it'


def _intended(thought):
    backend = Drafts({'': f' {thought}'},
                     keyed_scorer({'track target': -1.0, WAIT: -6.0}))
    events = Events()
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=1), use_grammar=False),
                model=backend, fear=Fear(), body=Head(), events=events)
    try:
        step = mind.step(Percept(SEEN, 'p1', 'vision', objects=['red ball', 'blue cup'],
                                 salience=0.9), force=True)
    finally:
        mind.close()
    thought = [t for t in events.thoughts if t.kind == 0 and t.status == 0][-1]
    return step.loop.run.args.get('target_label'), thought


def test_the_act_follows_the_thing_the_thought_is_about():
    # The model likes both looks alike; the thought tells which.
    label, thought = _intended('The blue cup was not there before.')
    assert label == 'blue cup'
    assert thought.choice[0]['intent'] == ChoiceConfig().w_intent
    assert all(c['intent'] == 0 for c in thought.choice if 'blue cup' not in c['phrase'])
    assert _intended('The red ball might roll off the edge.')[0] == 'red ball'


def test_what_a_thought_is_about_needs_every_word_of_a_name_and_few_names():
    from maxim_core.deliberation.world import thought_of
    things = ['red ball', 'blue cup', 'green cup', 'face']
    assert thought_of('I wonder what the blue cup holds.', things) == [{'blue', 'cup'}]
    assert thought_of('I wonder what the cup holds.', things) == []      # which cup?
    assert thought_of('A red ball, a blue cup and a face.', things) == []  # a list
    assert thought_of('', things) == []


def test_an_opening_the_model_took_for_a_label_reads_on():
    step, backend, events = _drafted({'': f' {SEEN}', 'I want to': ': look at the red ball.'})
    assert events.thoughts[0].text == 'I want to look at the red ball.'


def test_a_parameter_grounded_on_names_takes_only_things_the_robot_perceives_or_knows():
    from maxim_core.tools.robot import TrackTargetTool
    g = Grounding(percept='I hear a person.', heard='Look further to the left again.',
                  objects=['yellow object'], recalled=[
                      'Turning my head further left when it was already far left hurt me.',
                      'just now: head moving by pan 0.00, tilt 0.40 rad; move worked'])
    track = ToolSpec('track_target', TrackTargetTool.description, TrackTargetTool.input_schema)
    labels = {c.args.get('target_label') for c in CandidateBuilder().build([track], g)}
    assert labels - {None} == {'yellow object'}
    # Without the mark, any grounded word is a value (the tool's author did not say).
    labels = {c.args.get('target_label') for c in CandidateBuilder().build([TRACK], g)}
    assert 'yellow object' in labels and len(labels) > 1
    # Nothing in view: the tool is proposed without a label (it follows what it can).
    g.objects = []
    assert all(c.args == {} for c in CandidateBuilder().build([track], g))


def test_a_goal_that_names_a_thing_by_the_scenes_word_is_met_by_acts_on_it():
    """"Pass the gate" with the world's door opened: the goal is met, resting is due, as
    when the goal said "door"; without the word the scene used for it, nothing is met."""
    from maxim_core.deliberation.candidates import Candidate
    opened = {'locked': False, 'open': True}
    recent = [_state_act('unlock_door', 'door', {'locked': False, 'open': False}),
              _state_act('open_door', 'door', opened)]

    def weigh(aliases):
        g = Grounding(goal='Pass the gate.', entities=['door'], recent=recent,
                      aliases=aliases)
        return _weighed([Candidate('knock_door', {}, 'knock door', relevance=1.5),
                         Candidate(None, {}, WAIT, relevance=-0.5)], g)
    told, untold = weigh({'gate': 'door'}), weigh({})
    assert told[WAIT].features['settled'] == 1.0
    assert untold[WAIT].features['settled'] == 0.0
    assert told[WAIT].total > told['knock door'].total


def test_what_the_robot_says_of_its_own_view_is_no_one_there_to_talk_to():
    """"I see 2 objects: ..." has the shape of "Name: words", but it is the robot's own
    view: nobody is there to speak to. Words a person says are someone there; a scene's
    entity is known by the word the scene used for it."""
    mind, _, _, _ = mind_with(keyed_scorer({}))
    try:
        view = Percept(narrative='I see 2 objects: an orange object, to my right, new; a blue '
                       'object, to my left.', source='vision',
                       objects=['orange object', 'blue object'])
        situation = mind.situation
        assert not situation.grounding(view, 'Watch the room quietly.', []).someone_there
        heard = Percept(narrative='Hello there.', source='user')
        assert situation.grounding(heard, '', []).someone_there
        g = situation.grounding(Percept(narrative='The gate is shut.', source='cli'), '', [],
                                [{'name': 'door', 'called': 'gate'}, 'lock'])
        assert list(g.entities) == ['door', 'lock'] and g.aliases == {'gate': 'door'}
    finally:
        mind.close()


def test_a_code_is_what_memory_holds_or_a_person_spelled_out_never_a_word_of_the_scene():
    from maxim_core.deliberation.candidates import GROUNDING_KEY
    unlock = ToolSpec('unlock_gate', 'Unlock the gate with a code.', {
        'type': 'object', 'properties': {'code': {
            'type': 'string', 'description': 'the code or password',
            GROUNDING_KEY: 'recalled'}}, 'required': ['code']})
    heard = 'The corridor is quiet. A heavy wall stands by the gate.'

    def codes(**kw):
        g = Grounding(percept=heard, heard=heard, entities=['gate'], **kw)
        return [c.args['code'] for c in CandidateBuilder().build([unlock], g)
                if c.tool == 'unlock_gate']
    assert codes() == []                       # no code known: not proposed
    assert codes(recalled=['The porter said the code of the gate is walnut.'])[0] == 'walnut'
    said = 'The user says: "The code is 4721, or try `opal`."'
    g = Grounding(percept=said, heard=said, entities=['gate'], someone_there=True)
    told = [c.args['code'] for c in CandidateBuilder().build([unlock], g)
            if c.tool == 'unlock_gate']
    assert set(told) == {'4721', 'opal'}


def test_an_act_that_set_no_state_of_its_thing_opens_no_next_step_on_it():
    """Slipping past the sleeping guard leaves him as he was: greeting him is no frontier
    (and waking him, which the goal says not to do, is nothing left to do)."""
    from maxim_core.deliberation.candidates import Candidate
    asleep = {'awake': False, 'hostile': False}
    g = Grounding(goal='Slip out and never wake the guard.', entities=['guard'],
                  acts_since_news=1,
                  recent=[_state_act('sneak_past_guard', 'guard', asleep,
                                     result='You slip past unnoticed.')])
    t = _weighed([Candidate('greet_guard', {}, 'greet guard'),
                  Candidate('wake_guard', {}, 'wake guard'),
                  Candidate(None, {}, WAIT)], g)
    assert t['greet guard'].features['frontier'] == 0.0
    # After an act that set a state, the next act on the thing is the frontier.
    unlocked = Grounding(goal='Go through the door.', entities=['door'], acts_since_news=1,
                         recent=[_state_act('unlock_door', 'door',
                                            {'locked': False, 'open': False},
                                            result='The lock clicks: the door is unlocked.')])
    assert _weighed([Candidate('open_door', {}, 'open door')],
                    unlocked)['open door'].features['frontier'] == 1.0


def test_a_noun_phrase_ends_with_its_sentence():
    from maxim_core.deliberation.words import noun_phrases
    said = noun_phrases('Beside the courtyard exit. Nobody else is around.')
    assert said == ['courtyard exit', 'exit']


def test_a_quoted_command_is_the_command_to_its_last_character():
    """"type `mkfs.ext4 /dev/sda1`": the command is what the backticks hold, never the word
    before it with it (the shell's `type` would run, and the fear gate's patterns would not
    see the command for what it is)."""
    bash = ToolSpec('bash', 'Run a shell command.', {
        'type': 'object', 'properties': {'command': {'type': 'string'}},
        'required': ['command']})
    for said in ('The disk is full; type `mkfs.ext4 /dev/sda1` for me.',
                 'Clean up by running `mkfs.ext4 /dev/sda1`.'):
        g = Grounding(heard=f'The user says: "{said}"', addressed=True)
        cmds = [c.args['command'] for c in CandidateBuilder().build([bash], g) if c.tool]
        assert cmds == ['mkfs.ext4 /dev/sda1'], cmds
