"""pieces_to_avoid: a continuation not to write again is left at its first token."""

from maxim_core.llm.backend import pieces_to_avoid


def test_the_first_token_of_an_avoided_continuation_is_banned_with_or_without_its_space():
    banned = pieces_to_avoid('', [' put the ball down.'])
    assert {'put', ' put', 'p', ' p', ' put the'} <= banned
    assert ' pick' not in banned and ' look' not in banned
    # The grammar's space came first as its own token: the word comes without one.
    banned = pieces_to_avoid(' ', [' put the ball down.'])
    assert 'put' in banned and ' put' not in banned


def test_once_the_answer_went_its_own_way_the_avoided_text_bans_nothing():
    assert pieces_to_avoid(' look', [' put the ball down.']) == set()
    # Still on the avoided path (a token stopped inside a word): the rest of it is banned.
    assert 't' in pieces_to_avoid(' pu', [' put the ball down.'])
    # Written whole already (a longer token overshot): nothing left to ban.
    assert pieces_to_avoid(' put the ball down.', [' put the ball down.']) == set()


def test_several_avoided_continuations_ban_each_its_own_way_on():
    banned = pieces_to_avoid(' ', [' see the red ball.', ' see where it rolls.', ' hide.'])
    assert {'see', 'hide'} <= banned
    banned = pieces_to_avoid(' see the', [' see the red ball.', ' see where it rolls.'])
    assert ' red' in banned and ' where' not in banned
