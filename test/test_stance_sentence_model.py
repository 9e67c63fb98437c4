"""The stance the robot ships (deliberation/stance.json, example clauses from the decision
benchmark's dev split) read by the real sentence model (all-MiniLM-L6-v2, as the memory node
runs it) on wordings in neither split of the benchmark: it tells a clause that asks for an
act from one that turns it away, and on whole requests it puts the thing asked for above the
thing turned away."""

import pytest

from maxim_core.deliberation.stance import Stance, stances

# Written for this test; none of these frames is a phrasing of the benchmark (either split).
ASKED = ['Please turn so you can see it', 'Can you keep your eyes on it', 'Stare at it',
         'Watch it closely for a while', 'Find it and look at it', 'Point yourself at it']
DISMISSED = ['Forget about it', 'Stop looking at it', 'Pay no attention to it',
             'Do not bother with it', 'Look away from it', 'Stay off it']
REQUESTS = [  # (said, the thing asked for, the thing turned away)
    ('Forget about the red cup; watch the green bottle closely.', 'green bottle', 'red cup'),
    ('Stop looking at the blue box and find the yellow ball.', 'yellow ball', 'blue box'),
    ('Pay no attention to the orange cone, stare at the red lamp.', 'red lamp', 'orange cone'),
    ('Please turn so you can see the green mug, not the blue jar.', 'green mug', 'blue jar'),
]


@pytest.fixture(scope='module')
def relate():
    from maxim_memory.embedding import EmbedderError, SentenceEmbedder
    try:
        model = SentenceEmbedder()
    except EmbedderError as exc:        # the model ships as a pinned package: a setup error
        pytest.fail(f'the sentence model did not load: {exc}')

    def relate(text, phrases):
        v = model.embed([text] + list(phrases))
        return [float(v[0] @ x) for x in v[1:]]
    return relate


@pytest.fixture(scope='module')
def shipped():
    st = Stance.load()
    assert st.ready, 'deliberation/stance.json holds no example clauses'
    assert st.provenance.get('from') == 'the dev split'
    return st


def test_clauses_in_new_words_take_the_side_they_mean(relate, shipped):
    asked = [shipped.score(relate, c) for c in ASKED]
    dismissed = [shipped.score(relate, c) for c in DISMISSED]
    right = sum(a > 0 for a in asked) + sum(d < 0 for d in dismissed)
    # Measured: 9 of 12. The sentence model reads the verb of looking more than its turn
    # away: 'Stop looking at it', 'Look away from it' and 'Pay no attention to it' come out
    # on the asking side (bench/README.md, "decisions").
    assert right >= 8, (dict(zip(ASKED, asked)), dict(zip(DISMISSED, dismissed)))
    assert sum(asked) / len(asked) > sum(dismissed) / len(dismissed) + 0.05


def test_in_whole_requests_the_thing_asked_for_stands_above_the_thing_turned_away(
        relate, shipped):
    wins = 0
    for said, want, away in REQUESTS:
        s = stances(shipped, relate, said, [want, away],
                    {1: f'track target {want}', 2: f'track target {away}'})
        wins += s[1] > s[2]
    assert wins >= 3, wins
