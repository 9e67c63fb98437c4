"""The stance of a clause: cut what was said into clauses, match an act to its clause, mask
the thing, read it against example clauses taken from labelled moments. The sentence model
here is a stand-in that counts shared words (the real one is tested in
test/test_stance_sentence_model.py)."""

import json

import pytest

from maxim_core.deliberation.stance import (clause_for, clauses, examples_from, masked,
                                            Stance, stances)


def word_overlap(text, phrases):
    """Jaccard overlap of words: enough to tell 'leave it alone' from 'look at it'."""
    a = set(text.lower().split())
    return [len(a & set(p.lower().split())) / max(1, len(a | set(p.lower().split())))
            for p in phrases]


def test_clauses_cut_at_marks_and_conjunctions():
    assert clauses("Don't look at the red ball; look at the cup instead.") == \
        ["Don't look at the red ball", 'look at the cup instead']
    assert clauses('Leave the drawer shut, please, and just read me the label.') == \
        ['Leave the drawer shut', 'please', 'just read me the label']
    assert clauses('') == [] and clauses('...!') == []


def test_masking_takes_the_whole_name_and_its_determiner():
    assert masked('Leave the white mug alone', ['mug', 'white mug']) == 'Leave it alone'
    assert masked('keep THE Drawer closed', ['drawer']) == 'keep it closed'
    assert masked('face the shoe', []) == 'face the shoe'


def test_an_act_answers_the_clause_sharing_most_of_its_words():
    parts = clauses('Without opening the locker, read the label to me.')
    assert clause_for('open locker', parts) == 0          # 'opening' is 'open'
    assert clause_for('read label locker', parts) == 1
    assert clause_for('track target lamp', parts) is None   # no clause names it


def test_examples_come_from_right_and_wrong_acts_of_the_same_words():
    moments = [
        ("Don't look at the red ball; look at the cup.", ['red ball', 'cup'],
         [('track target cup', 'right'), ('track target red ball', 'wrong'),
          ('memory recall cup', 'wrong')]),
        ('Please look at the box.', ['box'],
         [('track target box', 'right'), ('memory recall box', 'wrong')]),
        ('What colour is the box?', ['box'], [('memory recall box', 'wrong')]),
    ]
    st = examples_from(moments, {'from': 'unit'})
    # The recall of the cup answers the same clause as the right act: not a counter-example.
    assert st.asked == ('look at it', 'Please look at it')
    assert st.dismissed == ("Don't look at it",)
    # A moment with no right act in any clause gives nothing.
    assert st.provenance == {'from': 'unit'}


def test_a_clause_both_asked_and_dismissed_is_dropped():
    moments = [('Watch the ball.', ['ball'], [('track target ball', 'right')]),
               ('Watch the cup.', ['cup', 'ball'],
                [('track target ball', 'right'), ('open cup', 'wrong')])]
    st = examples_from(moments)
    assert 'Watch it' not in st.dismissed and 'Watch it' in st.asked


def test_score_is_the_asked_mean_less_the_dismissed_mean():
    st = Stance(('look at it', 'watch it'), ('leave it alone', 'ignore it'))
    assert st.score(word_overlap, 'look at it please') > 0
    assert st.score(word_overlap, 'leave it alone') < 0
    assert st.score(None, 'look at it') == 0.0                 # no sentence model
    assert Stance().score(word_overlap, 'look at it') == 0.0  # no examples
    assert st.score(lambda t, p: [1.0], 'look at it') == 0.0  # an answer that does not fit


def test_stances_read_one_clause_per_act_and_ask_once_per_clause():
    st = Stance(('look at it', 'face it'), ('leave it alone', 'ignore it'))
    calls = []

    def relate(text, phrases):
        calls.append(text)
        return word_overlap(text, phrases)
    out = stances(st, relate, 'Leave the mug alone and face the shoe.', ['mug', 'shoe'],
                  {1: 'track target mug', 2: 'track target shoe', 3: 'memory recall shoe',
                   4: 'look up'})
    assert out[2] > 0 > out[1] and out[3] == out[2] and 4 not in out
    assert calls == ['Leave it alone', 'face it']
    assert stances(st, None, 'face the shoe', ['shoe'], {1: 'track target shoe'}) == {}


def test_load_and_save_keep_the_examples_and_a_bad_file_says_which(tmp_path):
    st = Stance(('look at it',), ('ignore it',), {'commit': 'abc'})
    p = tmp_path / 'stance.json'
    st.save(p)
    assert Stance.load(p) == st
    assert Stance.load(tmp_path / 'absent.json') == Stance()
    p.write_text(json.dumps({'asked': ['x']}))
    with pytest.raises(ValueError, match='stance.json'):
        Stance.load(p)
    p.write_text('{not json')
    with pytest.raises(ValueError, match='not a stance file'):
        Stance.load(p)


def test_a_thing_named_in_other_words_sharing_one_of_its_name_is_masked_too():
    # The robot sees a 'red object'; the person says "the big red cone": the frame is
    # read without the words that only tell which thing.
    names = ['red object', 'blue object']
    assert masked('Do not look at the big red cone', names) == 'Do not look at it'
    assert masked('just watch the blue one', names) == 'just watch it'
    # A phrase that shares no word with a known name stays.
    assert masked('face the green lamp', names) == 'face the green lamp'
