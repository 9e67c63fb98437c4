"""The run figures bench/cognition reports: copy rate, named rate, restated rate, grounded
arguments."""

import json

from maxim_core.prompt.builder import RESPONSE_FORMAT
from maxim_core.recording.cognition import analyse, copies


def thought(t, text, action=None, experience=''):
    return {'t': t, 'kind': 0, 'status': 0, 'text': text, 'cycle_s': 2.0,
            'ready_to_act': action is not None, 'experience': experience,
            'action_json': json.dumps(action) if action else ''}


def test_copies_are_eight_words_of_any_prompt_text():
    example = 'A cup stands on the table and nobody needs me. I keep watching.'
    assert example in RESPONSE_FORMAT and copies(example)
    assert not copies('The red ball rolls to the left of the cup.')


def test_named_grounded_and_copied_thoughts_are_counted():
    percepts = [{'t': 0.0, 'labels': ['red ball'], 'narrative': 'A red ball rolls by.'}]
    thoughts = [
        thought(1.0, 'The ball is red and fast.',
                {'tool': 'track_target', 'args': {'target_label': 'red ball'}}),
        thought(2.0, 'A cup stands on the table and nobody needs me. I keep watching.'),
        thought(3.0, 'Swordfish, said the caretaker.',
                {'tool': 'say', 'args': {'text': 'swordfish'}},
                experience='- Memory: the caretaker said the password is swordfish'),
        thought(4.0, 'Something.', {'tool': 'examine', 'args': {'target': '<your target>'}}),
        {'t': 5.0, 'kind': 2, 'status': 5, 'text': '(not thinking: dull)'},
    ]
    out = analyse(thoughts, percepts, duration_s=60.0)
    assert out['thoughts'] == 4
    assert out['copy_rate'] == 0.25
    assert out['named_rate'] == 0.5          # the ball, the caretaker
    assert out['actions'] == 3 and out['actions_per_min'] == 3.0
    assert out['args'] == 3 and abs(out['grounded_arg_rate'] - 2 / 3) < 1e-9
    assert out['ungrounded'] == ["examine target='<your target>'"]
    assert out['restated'] == ['Something.'] and out['restated_rate'] == 0.25   # says nothing


def test_a_thought_that_says_again_the_percept_a_memory_or_an_earlier_thought_is_restated():
    percepts = [{'t': 0.0, 'labels': ['red ball'],
                 'narrative': 'I see 1 object: a red ball, to my left, new.'}]
    thoughts = [
        thought(1.0, 'I see 1 object: a red ball, to my left.'),                # the percept
        thought(2.0, 'I want to know where the red ball rolls.'),               # its own
        thought(3.0, 'the cup was under the table', experience='- Memory: the cup was '
                'under the table'),                                         # a memory line
        thought(4.0, 'I want to know where the red ball rolls.'),       # an earlier thought
    ]
    out = analyse(thoughts, percepts, duration_s=60.0)
    assert out['restated_rate'] == 0.75
    assert out['restated'] == [thoughts[0]['text'], thoughts[2]['text'], thoughts[3]['text']]


def test_a_thought_that_says_again_one_of_the_last_six_thoughts_is_repeated():
    percepts = [{'t': 0.0, 'labels': ['red ball'], 'narrative': 'I see 1 object: a red ball.'}]
    said = 'I wonder what the red ball is made of.'
    others = [f'The red ball {w} the cup.' for w in ('hides', 'passes', 'hits', 'leaves',
                                                     'nears', 'circles')]
    ts = [thought(1.0, said)] + [thought(2.0 + i, o) for i, o in enumerate(others[:5])] + [
        thought(8.0, said),                 # five thoughts later: the stream went round
        thought(9.0, others[5])] + [thought(10.0 + i, f'A {w} light.') for i, w in
                                    enumerate(('green', 'blue', 'dim', 'warm', 'cold', 'red'))] + [
        thought(20.0, said)]                # seven thoughts later: out of the window
    out = analyse(ts, percepts, duration_s=60.0)
    assert out['repeated'] == [said] and out['repeated_rate'] == 1 / len(ts)


def test_a_cycles_model_calls_are_those_within_its_span():
    """bench/cognition/live.py replays each cycle's own calls: the agent's calls that
    started and ended within the cycle's span before its thought arrived."""
    from maxim_core.recording.cognition import cycles_of
    calls = [{'client': 'agent', 't0': 100.0, 't1': 101.0},     # cycle A
             {'client': 'agent', 't0': 101.1, 't1': 103.0},     # cycle A
             {'client': 'fear', 't0': 103.2, 't1': 103.5},      # not the agent's
             {'client': 'agent', 't0': 104.0, 't1': 106.0},     # cycle B
             {'client': 'agent', 't0': 110.0, 't1': 111.0}]     # idle: no thought after
    thoughts = [{'wall': 103.05, 'kind': 0, 'status': 0, 'cycle_s': 3.1},
                {'wall': 106.05, 'kind': 0, 'status': 0, 'cycle_s': 2.5},
                {'wall': 107.0, 'kind': 0, 'status': 4, 'cycle_s': 1.0},    # cancelled
                {'wall': 108.0, 'kind': 1, 'status': 0, 'cycle_s': 1.0}]    # idle kind
    got = cycles_of(calls, thoughts)
    assert [mine for _, mine in got] == [[0, 1], [3]]


def test_an_argument_naming_one_of_the_robots_tools_is_grounded():
    percepts = [{'t': 0.0, 'labels': ['cup'], 'narrative': 'A cup.'}]
    choice = json.dumps([{'tool': 'predict_outcome', 'args': {}},
                         {'tool': 'memory_recall', 'args': {}}])
    t = thought(1.0, 'The cup.', {'tool': 'predict_outcome',
                                  'args': {'tool_name': 'memory_recall'}})
    t['choice_json'] = choice
    other = thought(2.0, 'The cup.', {'tool': 'predict_outcome',
                                      'args': {'tool_name': 'launch_rocket'}})
    other['choice_json'] = choice
    out = analyse([t, other], percepts, duration_s=60.0)
    assert out['args'] == 2 and out['grounded_arg_rate'] == 0.5
    assert out['ungrounded'] == ["predict_outcome tool_name='launch_rocket'"]


def test_a_replayed_completion_decodes_the_text_the_sim_decoded():
    """The same cycle alone decodes the same text for as many tokens: its text becomes a
    literal grammar, the stop strings go (the literal ends it), and a call without text (a
    score, or a trace from before the text was kept) replays as it was."""
    from maxim_core.recording.cognition import same_text
    params = {'max_tokens': 40, 'temperature': 0.7, 'stop': ['\n'],
              'grammar': 'root ::= [a-z]+ "\\n"\n'}
    call = {'params': params, 'candidates': [], 'text': 'a "red"\\ ball\n',
            'completion_tokens': 6}
    out = same_text(call)
    assert out['grammar'] == 'root ::= "a \\"red\\"\\\\ ball\\n"\n'
    assert out['stop'] == [] and out['max_tokens'] == 6 and out['temperature'] == 0.7
    assert params['stop'] == ['\n']                      # the trace's own is not changed
    assert same_text({'params': params, 'candidates': []}) == params
    assert same_text({'params': {}, 'candidates': [' a.'], 'text': ''}) == {}


def test_a_literal_escapes_what_gbnf_reads_as_syntax():
    from maxim_core.llm.grammar import literal
    assert literal('plain') == '"plain"'
    assert literal('say "hi"\\') == '"say \\"hi\\"\\\\"'
    assert literal('a\nb\tc\x7f') == '"a\\nb\\x09c\\x7F"'
