"""Which thing in view a name means (maxim_common.labels): the rule track_target and the head
controller share."""

import pytest

from maxim_common.labels import resolve_label

VIEW = ['blue object', 'red object', 'face']


@pytest.mark.parametrize('asked, meant', [
    ('blue object', 'blue object'),
    ('Blue Object', 'blue object'),              # any case
    ('blue', 'blue object'),                      # a word of the label
    ('the blue one', 'blue object'),              # words that say which, not what
    ('the red object on the left', 'red object'),  # the label within what was asked
    ('face', 'face'),
])
def test_a_name_resolves_to_the_one_thing_it_names(asked, meant):
    assert resolve_label(asked, VIEW) == meant


@pytest.mark.parametrize('asked', ['green', 'object', 'the', '', 'person'])
def test_a_name_that_fits_nothing_or_several_things_resolves_to_none(asked):
    assert resolve_label(asked, VIEW) is None


def test_the_same_label_twice_is_one_thing():
    assert resolve_label('ball', ['red ball', 'red ball']) == 'red ball'
    assert resolve_label('ball', []) is None
