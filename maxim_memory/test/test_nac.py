"""NAc: Rescorla-Wagner causal links, RPE and outcome prediction."""

import json

import pytest

from maxim_memory.nac import NucleusAccumbens

# With learning_rate 0.2 the learned share after n observations is 1 - 0.8**n: a run of
# failures predicts value 0.5 * 0.8**n, below 0.1 from n = 8, and confidence passes 0.85 at n = 9.
FAILURES_TO_BLOCK = 9


class Clock:
    def __init__(self, t=1000.0):
        self.t = t

    def __call__(self):
        return self.t


def test_unseen_event_is_neutral():
    p = NucleusAccumbens().predict_outcome('grasp', 'kitchen')
    assert (p.value, p.confidence, p.observation_count, p.basis) == (0.5, 0.0, 0, 'none')
    assert p.outcomes == [] and p.expected_valence == 0.0


def test_repeated_failures_predict_bad_and_other_context_unaffected():
    nac = NucleusAccumbens(learning_rate=0.2, clock=Clock())
    for _ in range(3):
        nac.observe('navigate', 'hallway', 'success', 0.8, delay_s=2.0)
    before = nac.predict_outcome('navigate', 'hallway')
    values = []
    for i in range(FAILURES_TO_BLOCK):
        nac.observe('navigate', 'kitchen', 'failure', -0.8, delay_s=5.0, memory_id=f'ep-{i}')
        p = nac.predict_outcome('navigate', 'kitchen')
        values.append(p.value)
        blocked = p.value < 0.1 and p.confidence > 0.85
        assert blocked == (i + 1 >= FAILURES_TO_BLOCK), (i, p)
    assert values == sorted(values, reverse=True)  # each failure lowers the value
    bad = nac.predict_outcome('navigate', 'kitchen')
    assert bad.observation_count == FAILURES_TO_BLOCK and bad.outcomes == [('failure', 1.0)]
    assert bad.expected_valence < -0.6 and bad.delay_s == pytest.approx(5.0)
    good = nac.predict_outcome('navigate', 'hallway')
    assert good == before and good.value > 0.5  # the other context did not move at all


def test_rpe_shrinks_as_the_outcome_becomes_expected():
    nac = NucleusAccumbens()
    rpes = [nac.observe('grasp', 'mug', 'success', 1.0) for _ in range(10)]
    assert rpes[0] == pytest.approx(1.0)  # nothing was expected: full surprise
    assert all(a > b for a, b in zip(rpes, rpes[1:])) and rpes[-1] < 0.3
    surprise = nac.observe('grasp', 'mug', 'failure', -1.0)
    assert surprise < -1.5  # a confident success expectation broken by a failure


def test_mixed_outcomes_shares_delays_and_links():
    clock = Clock()
    nac = NucleusAccumbens(clock=clock)
    for i in range(20):
        clock.t += 1
        ok = i % 4 != 0
        nac.observe('look', 'desk', 'success' if ok else 'failure:timeout', 0.5 if ok else -0.6,
                    delay_s=1.0 if ok else 10.0, memory_id=f'e{i}')
    p = nac.predict_outcome('look', 'desk')
    shares = dict(p.outcomes)
    assert set(shares) == {'success', 'failure:timeout'}
    assert sum(shares.values()) == pytest.approx(1.0)
    assert 0.5 < shares['success'] < 0.95 and p.outcomes[0][0] == 'success'
    assert p.delay_low_s <= p.delay_s <= p.delay_high_s and p.delay_high_s > 1.0
    links = nac.causal_links(event='look')
    assert [ln.outcome for ln in links] == ['success', 'failure:timeout']
    fail = links[1]
    assert fail.observation_count == 5 and fail.mean_delay_s == pytest.approx(10.0)
    assert fail.memory_ids == ['e0', 'e4', 'e8', 'e12', 'e16'] and fail.valence < 0
    assert links[0].confidence > fail.confidence
    assert nac.causal_links(event='look', context='elsewhere') == []
    assert len(nac.causal_links(limit=1)) == 1 and len(nac) == 2


def test_empty_context_pools_and_unseen_context_generalizes():
    nac = NucleusAccumbens()
    for _ in range(10):
        nac.observe('navigate', 'kitchen', 'failure', -1.0)
        nac.observe('navigate', 'hall', 'failure', -1.0)
    pooled = nac.predict_outcome('navigate', '')
    assert pooled.basis == 'all_contexts' and pooled.observation_count == 20
    assert pooled.value < 0.1
    new = nac.predict_outcome('navigate', 'garden')
    assert new.basis == 'generalized' and new.observation_count == 0
    assert new.confidence == pytest.approx(pooled.confidence / 2) and 0.0 < new.value < 0.5
    assert not (new.value < 0.1 and new.confidence > 0.85)  # no blocking on a guess


def test_five_successes_make_a_promotable_link():
    nac = NucleusAccumbens()
    for i in range(5):
        nac.observe('grasp', 'coffee_mug', 'success', 0.9, memory_id=f'ep-{i}')
    (link,) = nac.causal_links()
    assert link.observation_count == 5 and link.confidence == pytest.approx(1 - 0.8 ** 5)
    assert link.confidence > 0.6 and link.memory_ids == [f'ep-{i}' for i in range(5)]


def test_round_trip_through_json_and_bounded_memory():
    clock = Clock()
    nac = NucleusAccumbens(learning_rate=0.3, clock=clock, max_pairs=2)
    for ev in ('a', 'b', 'c'):
        clock.t += 1
        nac.observe(ev, 'ctx', 'ok', 0.5, delay_s=1.5, memory_id=f'm-{ev}')
    assert {ln.event for ln in nac.causal_links()} == {'b', 'c'}  # 'a' was the oldest
    state = json.loads(json.dumps(nac.to_dict()))
    back = NucleusAccumbens.from_dict(state)
    assert back.causal_links() == nac.causal_links()
    assert back.predict_outcome('c', 'ctx') == nac.predict_outcome('c', 'ctx')
    assert back.learning_rate == 0.3
    with pytest.raises(ValueError):
        NucleusAccumbens.from_dict({'version': 99})
    with pytest.raises(KeyError):
        NucleusAccumbens.from_dict({'version': 1})


@pytest.mark.parametrize('args', [('', 'c', 'ok', 0.0), ('e', 'c', '', 0.0),
                                  ('e', 'c', 'ok', 1.5), ('e', 'c', 'ok', float('nan'))])
def test_bad_observations_are_rejected(args):
    with pytest.raises(ValueError):
        NucleusAccumbens().observe(*args)


def test_bad_arguments_are_rejected():
    with pytest.raises(ValueError):
        NucleusAccumbens(learning_rate=0.0)
    with pytest.raises(ValueError):
        NucleusAccumbens().observe('e', 'c', 'ok', 0.1, delay_s=-1.0)
    with pytest.raises(ValueError):
        NucleusAccumbens().predict_outcome('')
    with pytest.raises(ValueError):
        NucleusAccumbens().causal_links(limit=-1)
