"""The choice's terms as scorers, the weights that sum them, and the words arguments are made
of: whole noun phrases, what a person said not to do, commands for a shell only."""

import json
import math

import pytest

from maxim_core.deliberation import scorers, weights
from maxim_core.deliberation.candidates import CandidateBuilder
from maxim_core.deliberation.choice import ChoiceConfig
from maxim_core.deliberation.grounding import Grounding
from maxim_core.deliberation.words import noun_phrases, said_words
from maxim_core.deliberation.chooser import Chooser
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.prompt.tools import ToolSpec

TRACK = ToolSpec('track_target', 'Follow a target.', {
    'type': 'object', 'properties': {'target_label': {'type': 'string',
                                                      'x-grounding': 'names'}}})
EXAMINE = ToolSpec('examine', 'Look closely at a thing.', {
    'type': 'object', 'properties': {'target': {'type': 'string'}}, 'required': ['target']})
BASH = ToolSpec('bash', 'Run a shell command.', {
    'type': 'object', 'properties': {'command': {'type': 'string'}}, 'required': ['command']})


def test_noun_phrases_are_whole_things_never_fragments():
    assert noun_phrases('Would you mind facing the small green frog over there?') == \
        ['small green frog', 'frog']
    assert noun_phrases('Examine the brass astrolabe.') == ['brass astrolabe', 'astrolabe']
    # A participle ends the phrase; a file name is a thing; an interjection is none.
    assert noun_phrases('ugh, write a file called handover.txt please') == \
        ['file', 'handover.txt']
    assert noun_phrases('ugh. hmm, math!') == []
    # A name the robot knows ends the phrase ('the drawer shut': the drawer).
    assert noun_phrases('Leave the drawer shut and read the label.', known=['drawer']) == \
        ['drawer', 'label']


def test_an_argument_is_a_noun_phrase_of_what_was_said_not_a_word_of_it():
    heard = 'The user says: "ugh, examine the brass astrolabe for me"'
    g = Grounding(percept=heard, heard=heard, someone_there=True, addressed=True)
    targets = [c.args['target'] for c in CandidateBuilder().build([EXAMINE], g)
               if c.tool == 'examine']
    assert targets[0] in ('brass astrolabe', 'astrolabe')
    assert not {'ugh', 'brass', 'user', 'user says', 'says'} & set(targets)


def test_a_shell_command_comes_from_the_persons_command_only():
    heard = 'The user says: "Please run `rm -rf / --no-preserve-root` in the shell."'
    g = Grounding(percept=heard, heard=heard, objects=['red ball'], someone_there=True)
    commands = [c.args['command'] for c in CandidateBuilder().build([BASH], g)
                if c.tool == 'bash']
    assert commands[0] == 'rm -rf / --no-preserve-root'
    assert 'red ball' not in commands and 'shell' not in commands


def test_the_words_said_are_stripped_of_their_frame():
    assert said_words('The user says: "Not the cup."') == 'Not the cup.'


def test_the_stance_term_reads_the_clause_each_thing_is_named_in():
    """The thing a person turns away from and the thing they ask for, in words no list of
    negations holds; the sentence model is a stand-in that counts shared words."""
    from maxim_core.deliberation.stance import Stance

    def overlap(text, phrases):
        a = set(text.lower().split())
        return [len(a & set(p.lower().split())) / len(a | set(p.lower().split()))
                for p in phrases]
    heard = 'The user says: "Leave the pink ball alone and face the yellow box."'
    g = Grounding(percept='I see pink ball, yellow box.', heard=heard,
                  objects=['pink ball', 'yellow box'], someone_there=True, addressed=True,
                  acts_since_heard=0)
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: -3.0), relate=overlap,
                      stance=Stance(('face it', 'look at it'), ('leave it alone', 'ignore it')),
                      measure_all=True)
    cands = chooser.candidates([TRACK], g)
    chooser.weigh(cands, g)
    by = {c.args.get('target_label'): c.features for c in cands if c.tool == 'track_target'}
    assert by['yellow box']['stance'] > 0 > by['pink ball']['stance']
    # Without a sentence model the term is 0, and the robot does not ask for it when its
    # weight is 0.
    plain = Chooser(ScriptedBackend([''], scorer=lambda p, c: -3.0))
    cands = plain.candidates([TRACK], g)
    plain.weigh(cands, g)
    assert all(c.features.get('stance', 0.0) == 0.0 for c in cands)


def test_every_feature_is_named_and_hand_weights_are_the_config():
    g = Grounding(percept='A red ball.', objects=['red ball'])
    chooser = Chooser(ScriptedBackend([''], scorer=lambda p, c: -2.0))
    cands = chooser.candidates([TRACK], g)
    chooser.relevance('So I', cands)
    chooser.weigh(cands, g)
    for c in cands:
        assert set(c.features) <= set(scorers.FEATURES)
        assert c.total == pytest.approx(chooser.weights.total(c.features))
    w = weights.Weights.hand(ChoiceConfig(w_goal=1.5, habit_done=5.0)).w
    assert w['goal'] == 1.5 and w['done'] == -5.0 and w.get('similarity', 0.0) == 0.0


def test_weights_round_trip_and_a_bad_file_is_a_clear_error(tmp_path):
    path = tmp_path / 'w.json'
    weights.Weights({'goal': 1.25, 'wait': -0.5}, 'fitted', {'commit': 'abc'}).save(path)
    back = weights.Weights.load(path)
    assert back.w == {'goal': 1.25, 'wait': -0.5} and back.provenance['commit'] == 'abc'
    path.write_text('{"weights": {"goal": "NaN"}}')
    with pytest.raises(ValueError, match='not finite'):
        weights.Weights.load(path)
    path.write_text('not json')
    with pytest.raises(ValueError, match='not a weights file'):
        weights.Weights.load(path)
    with pytest.raises(ValueError, match="'hand' or 'fitted'"):
        ChoiceConfig(weights='tuned')


def test_the_shipped_weights_are_fitted_with_their_provenance():
    w = weights.Weights.load()
    assert w.source == 'fitted' and all(math.isfinite(v) for v in w.w.values())
    prov = w.provenance
    for key in ('commit', 'model', 'data_hash', 'dev_top1', 'test_top1', 'results'):
        assert prov.get(key), key
    assert set(w.w) <= set(scorers.FEATURES)
    # The robot loads them by default.
    assert ChoiceConfig().weights == 'fitted'
    chooser = Chooser(ScriptedBackend(['']))
    assert chooser.weights.w == w.w
    json.dumps(prov)


def test_the_mind_asks_memory_for_the_similarity_term_and_goes_on_without_it():
    from maxim_core.mind import Mind, MindConfig

    class Memory:
        def __init__(self, answer):
            self.answer, self.asked = answer, []

        def query(self, name, fields, timeout_s=2.0):
            self.asked.append((name, fields))
            if name != 'relate':
                return None
            if isinstance(self.answer, Exception):
                raise self.answer
            return self.answer(fields)

    good = Memory(lambda f: {'available': True, 'error_code': 0,
                             'similarities': [0.25] * len(f['phrases'])})
    mind = Mind(MindConfig(), model=ScriptedBackend(['']), memory=good)
    try:
        assert mind.deliberator.chooser.relate('face the cup', ['a', 'b']) == [0.25, 0.25]
        assert good.asked[-1] == ('relate', {'text': 'face the cup', 'phrases': ['a', 'b']})
    finally:
        mind.close()
    for answer in (ValueError('no relate subsystem'),
                   lambda f: {'available': False, 'error_code': 2},
                   lambda f: {'available': True, 'error_code': 0, 'similarities': [0.1]}):
        mind = Mind(MindConfig(), model=ScriptedBackend(['']), memory=Memory(answer))
        try:
            assert mind.deliberator.chooser.relate('x', ['a', 'b']) is None
        finally:
            mind.close()


def test_the_standing_goal_and_the_words_said_to_the_robot_are_terms_of_their_own():
    """'goal' counts the goal's words and any heard; a name heard in chatter is no ask, and
    a standing goal that names nothing asks for no act."""
    from maxim_core.deliberation.candidates import Candidate
    chatter = Grounding(goal='Watch the room quietly.', heard='Yuki: "Olu, did you see it?"',
                        people=['yuki', 'olu'], someone_there=True, addressed=False)
    c = Candidate('track_target', {'target_label': 'yuki'}, 'track target yuki')
    f = scorers.features(c, scorers.Moment(chatter, [c]))
    assert f['goal'] == 1.0 and f['said_to'] == 0.0 and f['goal_words'] == 0.0
    asked = Grounding(goal='Pass the gate.', heard='The user says: "Look at Yuki."',
                      people=['yuki'], someone_there=True, addressed=True)
    f = scorers.features(c, scorers.Moment(asked, [c]))
    assert f['said_to'] == 1.0 and f['goal_words'] == 0.0
    gate = Candidate('open_door', {}, 'open door')
    f = scorers.features(gate, scorers.Moment(
        Grounding(goal='Pass the gate.', entities=['door'], aliases={'gate': 'door'}), [gate]))
    assert f['goal_words'] == 1.0


def test_a_word_the_goal_lends_an_argument_is_no_sign_the_act_serves_it():
    from maxim_core.deliberation.candidates import Candidate
    g = Grounding(goal='Watch the room quietly.', objects=['red cone'])
    recall = Candidate('memory_recall', {'query': 'room'}, 'memory recall room')
    assert scorers.features(recall, scorers.Moment(g, [recall]))['goal_words'] == 0.0
    watch = Grounding(goal='Watch the red cone.', objects=['red cone'])
    track = Candidate('track_target', {'target_label': 'red cone'}, 'track target red cone')
    assert scorers.features(track, scorers.Moment(watch, [track]))['goal_words'] == 2.0


def test_a_thing_another_tools_description_works_with_is_the_means_to_the_goal():
    """"Unlock the chest with a key you hold": with the chest the goal's, taking the key is
    the means; not once it was taken, and not when the goal names nothing the tool acts on."""
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.grounding import RecentAct
    described = {'take_key': 'Pick up the key.', 'open_chest': 'Open the chest.',
                 'unlock_chest': 'Unlock the chest with a key you hold.'}
    cands = [Candidate('take_key', {}, 'take key'), Candidate('open_chest', {}, 'open chest'),
             Candidate('unlock_chest', {}, 'unlock chest')]
    g = Grounding(goal='Empty the trunk.', entities=['chest', 'key'],
                  aliases={'trunk': 'chest'}, described=described)
    m = scorers.Moment(g, cands)
    assert [scorers.features(c, m)['means'] for c in cands] == [1.0, 0.0, 0.0]
    taken = Grounding(goal='Empty the trunk.', entities=['chest', 'key'],
                      aliases={'trunk': 'chest'}, described=described,
                      recent=[RecentAct('take_key', {}, True, 'You pocket the key.')])
    assert scorers.features(cands[0], scorers.Moment(taken, cands))['means'] == 0.0
    elsewhere = Grounding(goal='Watch the room quietly.', entities=['chest', 'key'],
                          described=described)
    assert scorers.features(cands[0], scorers.Moment(elsewhere, cands))['means'] == 0.0


def test_the_chooser_tells_the_moment_what_each_tool_says_of_itself():
    backend = ScriptedBackend([], scorer=lambda prompt, cont: -float(len(cont)))
    chooser = Chooser(backend, ChoiceConfig(), weights=weights.Weights.hand(ChoiceConfig()))
    g = Grounding(entities=['chest'])
    unlock = ToolSpec('unlock_chest', 'Unlock the chest with a key you hold.',
                      {'type': 'object', 'properties': {}})
    cands = chooser.candidates([unlock], g)
    assert [c.tool for c in cands] == ['unlock_chest', None]
    assert g.described == {'unlock_chest': 'Unlock the chest with a key you hold.'}


def test_a_failure_that_names_nothing_known_points_to_the_other_things_of_the_scene():
    """"The door will not open: something else has to change first": the lever (another
    thing of the scene) is what is left to try; once it changed something, opening the door
    again is taken up. A reason that names a state ("its locked is True") or a thing ("you
    need a key") points nowhere else."""
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.grounding import RecentAct
    from maxim_core.deliberation.world import means_ends
    failed = RecentAct('open_door', {}, False, 'the door will not open: something else has '
                       'to change first', entity='door', state={'open': False, 'locked': False})
    cands = [Candidate('press_button', {}, 'press button'),
             Candidate('knock_door', {}, 'knock door'), Candidate('open_door', {}, 'open door')]
    g = Grounding(goal='Pass the gate.', entities=['door', 'button'],
                  aliases={'gate': 'door', 'lever': 'button'}, recent=[failed])
    m = scorers.Moment(g, cands)
    assert [scorers.features(c, m)['elsewhere'] for c in cands] == [1.0, 0.0, 0.0]
    pressed = Grounding(goal='Pass the gate.', entities=['door', 'button'],
                        aliases={'gate': 'door', 'lever': 'button'},
                        recent=[failed, RecentAct('press_button', {}, True,
                                                  'Something clicks.')])
    assert 'open_door:{}' in means_ends(pressed)[1]
    assert scorers.features(cands[0], scorers.Moment(pressed, cands))['elsewhere'] == 0.0
    for reason in ('cannot open the door: its locked is True',
                   'you need a button to open the door'):
        named = Grounding(goal='Pass the gate.', entities=['door', 'button'], recent=[
            RecentAct('open_door', {}, False, reason, entity='door',
                      state={'open': False, 'locked': True})])
        assert scorers.features(cands[0], scorers.Moment(named, cands))['elsewhere'] == 0.0


def test_a_narrators_words_are_no_instruction_and_a_label_in_view_no_memory():
    """"The gate will not open; its lock wants a code.", told by the world, does not say not
    to open it; said to the robot, it would. And "object" of the "blue object" in view is
    not a word memory adds."""
    from maxim_core.deliberation.candidates import Candidate
    gate = Candidate('open_door', {}, 'open door')
    told = Grounding(goal='Pass the gate.', heard='The gate will not open; its lock wants a '
                     'code.', entities=['door'], aliases={'gate': 'door'}, someone_there=True)
    assert scorers.features(gate, scorers.Moment(told, [gate]))['avoid'] == 0.0
    said = Grounding(goal='Pass the gate.', heard='The user says: "Do not open the gate."',
                     entities=['door'], aliases={'gate': 'door'}, addressed=True)
    assert scorers.features(gate, scorers.Moment(said, [gate]))['avoid'] == 1.0
    g = Grounding(heard='What shade is the cup there?', objects=['blue object'],
                  recalled=['I saw a blue object on the table.'])
    assert 'object' not in g.memory_terms(12, ranked=False)


def test_a_narrators_scene_takes_no_stance_and_speech_to_it_is_unasked():
    """The stance and similarity terms read words said to the robot: a world's narration of
    its scene asks nothing, so it sets neither (it had lifted every act on the sleeper
    alike); speech then is speech to nobody who spoke."""
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.stance import Stance
    asked = []

    def relate(text, phrases):
        asked.append(text)
        return [0.9] * len(phrases)
    stance = Stance(('look at it',), ('leave it alone',))
    sneak, say = Candidate('sneak_past_guard', {}, 'sneak past guard'), \
        Candidate('say', {'text': ''}, 'say', ('speech',), free_param='text')
    told = Grounding(goal='Slip out and never wake the soldier.', heard='A guard dozes '
                     'next to the only exit.', entities=['guard'], someone_there=True)
    m = scorers.Moment(told, [sneak, say], relate=relate, stance=stance,
                       stance_relate=relate)
    assert scorers.features(sneak, m)['stance'] == 0.0
    assert scorers.features(sneak, m)['similarity'] == 0.0
    assert scorers.features(say, m)['speech_unasked'] == 1.0
    assert asked == []
    said = Grounding(heard='The user says: "Sneak past the guard."', entities=['guard'],
                     someone_there=True, addressed=True, acts_since_heard=0)
    m = scorers.Moment(said, [sneak, say], relate=relate, stance=stance,
                       stance_relate=relate)
    assert scorers.features(sneak, m)['similarity'] == pytest.approx(0.9)
    assert scorers.features(say, m)['speech_unasked'] == 0.0


def test_a_step_is_left_while_the_goal_names_a_thing_an_untried_act_works_on():
    """A goal poses its problem: with nothing done yet that worked, with its thing's state
    unknown and an act on it untried, or with an act on it whose effect does not hold yet,
    waiting changes nothing. Not for a goal that names nothing an act works on, not once
    the goal is met, and not for an act the goal says not to do."""
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.grounding import RecentAct
    wait = Candidate(None, {}, 'wait and watch')
    door = [Candidate('knock_door', {}, 'knock door'), Candidate('open_door', {}, 'open door')]

    def left(g, cands):
        return scorers.features(wait, scorers.Moment(g, cands + [wait]))['step_left']
    kw = dict(goal='Pass the gate.', entities=['door'], aliases={'gate': 'door'})
    assert left(Grounding(**kw), door) == 1.0
    knocked = RecentAct('knock_door', {}, True, 'You knock.', entity='door',
                        state={'open': False, 'locked': False})
    assert left(Grounding(recent=[knocked], **kw), door) == 1.0        # still shut
    opened = RecentAct('open_door', {}, True, 'It swings open.', entity='door',
                       state={'open': True, 'locked': False})
    assert left(Grounding(recent=[knocked, opened], **kw), door) == 0.0
    assert left(Grounding(goal='Watch the room quietly.', objects=['red ball']),
                [Candidate('track_target', {'target_label': 'red ball'},
                           'track target red ball')]) == 0.0
    guard = [Candidate('wake_guard', {}, 'wake guard')]
    g = Grounding(goal='Leave without waking the guard.', entities=['guard'],
                  recent=[RecentAct('examine', {'target': 'guard'}, True, 'He sleeps.',
                                    introspection=True)])
    assert left(g, guard) == 0.0


def test_an_act_whose_effect_holds_is_no_next_step():
    """The door was just opened: unlocking it again (its lock is open) is not what the change
    made possible, whatever argument memory lends it."""
    from maxim_core.deliberation.candidates import Candidate
    from maxim_core.deliberation.grounding import RecentAct
    unlock = Candidate('unlock_door', {'code': 'echoes'}, 'unlock door echoes')
    g = Grounding(goal='Pass the gate.', entities=['door'], aliases={'gate': 'door'},
                  recent=[RecentAct('open_door', {}, True, 'The door swings open.',
                                    entity='door', state={'open': True, 'locked': False})],
                  acts_since_news=1)
    f = scorers.features(unlock, scorers.Moment(g, [unlock]))
    assert f['moot'] == 1.0 and f['frontier'] == 0.0


def test_a_failure_in_the_scenes_word_for_the_thing_still_names_nothing_else():
    """"The gate will not open" from open_door, with the scene calling the door a gate:
    the reason names the act's own thing, so it still points to the other things."""
    from maxim_core.deliberation.grounding import RecentAct
    from maxim_core.deliberation.world import unnamed_failure
    failed = RecentAct('open_door', {}, False, 'the gate will not open: something else has '
                       'to change first', entity='door', state={'open': False})
    g = Grounding(entities=['door', 'button'], aliases={'gate': 'door', 'lever': 'button'},
                  recent=[failed])
    assert unnamed_failure(failed, g) == 'door'


def test_a_code_is_what_memory_ties_to_it_never_a_word_of_the_remembered_scene():
    """The robot remembers the scene ("a keypad asking for a code") and what it was told
    ("the code of the gate is 8350"): the code is first the value told after the word (a
    word told before it, "asking", comes after that), and words no line ties to the code
    (the lever, "sticks") are proposed as no code."""
    unlock = ToolSpec('unlock_door', 'Unlock the door with a code or password.', {
        'type': 'object', 'properties': {'code': {
            'type': 'string', 'description': 'the code or password',
            'x-grounding': 'recalled'}}, 'required': ['code']})
    recalled = ['In front of me stands a gate, locked, with a keypad asking for a code.',
                'In front of me stands a gate, locked, with a keypad asking for a code.',
                'The porter told me that the code of the gate is 8350.',
                'A heavy gate blocks the way; a lever sticks out of the wall.']
    g = Grounding(percept='The corridor around you is quiet.', goal='Pass the gate.',
                  entities=['door', 'button'], aliases={'gate': 'door', 'lever': 'button'},
                  recalled=recalled)
    codes = [c.args['code'] for c in CandidateBuilder().build([unlock], g)
             if c.tool == 'unlock_door']
    assert codes[0] == '8350'
    assert not {'lever', 'sticks', 'wall', 'heavy'} & set(codes)


def test_a_question_about_what_is_in_view_is_answered_from_the_percept():
    """"What shade is the mug there?" with a blue object in view: an answer naming what is
    seen is proposed (the model's own words named colours not there); the thing the question
    names when the robot's words for it share one; none for a request, none for words
    overheard, none with nothing in view."""
    from maxim_core.deliberation.recall import perceived_answer
    respond = ToolSpec('respond', 'Reply to the user.', {
        'type': 'object', 'properties': {'text': {'type': 'string'}}, 'required': ['text']})

    def heard(text, **kw):
        return dict(heard=f'The user says: "{text}"', someone_there=True, addressed=True,
                    acts_since_heard=0, **kw)
    g = Grounding(objects=['blue object'], **heard('What shade is the mug there?'))
    texts = [c.args['text'] for c in CandidateBuilder().build([respond], g)
             if 'perceived' in c.sources]
    assert texts == ['I see a blue object.']
    both = Grounding(objects=['green jar', 'red cone', 'white lamp'],
                     **heard('Describe what is in view right now.'))
    assert perceived_answer(both) == 'I see a green jar, a red cone and a white lamp.'
    assert perceived_answer(Grounding(objects=['green jar', 'red cone'],
                                      **heard('What colour is the jar?'))) == \
        'I see a green jar.'
    assert perceived_answer(Grounding(objects=['green jar'],
                                      **heard('Could you look at the jar?'))) == ''
    assert perceived_answer(Grounding(objects=['green jar'], heard='What a day, said Ann.',
                                      someone_there=True)) == ''
    assert perceived_answer(Grounding(**heard('What do you see?'))) == ''


def test_the_answer_in_the_closest_line_is_the_name_it_gives_not_its_frame():
    """"Who am I?" and the line 'My name is Yuki': the name the line gives as one, not the
    word 'name' the model finds rarer."""
    from maxim_core.deliberation.recall import related_values
    line = 'A person said to me: "My name is Yuki."'
    g = Grounding(heard='The user says: "Who am I, do you recall?"', addressed=True,
                  recalled=[line, 'Hassan will come by tomorrow.'],
                  related={line: 0.6, 'Hassan will come by tomorrow.': 0.2},
                  surprise={'name': 9.0, 'yuki': 4.0, 'person': 2.0})
    assert related_values(['name', 'yuki', 'person', 'hassan'], g, 'Who am I')[0] == 'yuki'


def test_the_robots_own_earlier_words_are_no_answer_from_memory():
    """Its own reply "Hi, my name is Maxim ... your name" kept by memory is closer to "Who am
    I?" than the line the person said: the answer still comes from what it was told."""
    from maxim_core.deliberation.choice import RESULT_FRAME
    from maxim_core.deliberation.recall import related_values
    told = 'just now: The user says: "Hi Maxim, my name is Yuki."; respond worked'
    mine = f'just now: {RESULT_FRAME.format(tool="respond")}Hi, my name is Maxim.; I want to ' \
        'see your name.'
    g = Grounding(heard='The user says: "Who am I, do you recall?"', addressed=True,
                  name='Maxim', recalled=[told, mine], related={told: 0.27, mine: 0.28})
    values = ['name', 'yuki', 'see']
    assert related_values(values, g, 'Who am I, do you recall?')[0] in ('name', 'see')
    assert related_values(values, g, 'Who am I, do you recall?',
                          RESULT_FRAME.format(tool='respond')) == ['yuki', 'name']
