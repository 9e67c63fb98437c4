"""The session end's detect step on a real hub: PATTERN records, RELATED_TO, proposed types."""

import math
import random

import pytest

from maxim_memory.hub import HubConfig, MemoryHub
from maxim_memory.records import (Action, Decision, EpisodeContext, EpisodicMemory, MathRecord,
                                  Outcome, Perception, Provenance)
from maxim_memory.statistician import (_Outcome, correlation_t, DAY_S, linear_fit,
                                       rolling_mean, significance, Statistician)

T0 = 1_800_000_000.0
STEP = 0.7 * DAY_S   # ten uses over 6.3 days: inside the hippocampus' 7-day gist age
NOW = T0 + 9 * STEP + 3600


class Clock:
    def __init__(self, t):
        self.t = t

    def __call__(self):
        return self.t


def episode(tool, success, t, objects=('mug',), goal='', scene='', salience=0.5,
            arguments=None):
    return EpisodicMemory(
        created_at=t, run_id='run-1',
        perception=Perception(f'I see {" ".join(objects)}', list(objects), salience=salience,
                              novelty=0.2),
        context=EpisodeContext(goal=goal or tool, mode='active', scene=scene),
        decision=Decision(intent=goal or tool, confidence=0.7),
        action=Action(tool, dict(arguments or {})),
        outcome=Outcome(success, 0.6 if success else -0.6, 'done' if success else 'failed'))


def make_hub(tmp_path, now, **kw):
    cfg = HubConfig(db_path=str(tmp_path / 'memory.db'), **kw)
    return MemoryHub(cfg, clock=Clock(now))


# navigate fails more and more; grasp works with the mug and fails with the glass; track_target
# follows the ball in the lab, and the ball's salience rises as it does.
NAVIGATE = [1, 1, 1, 1, 1, 0, 1, 0, 0, 0]
GRASP = [(('mug', 'table'), True)] * 5 + [(('glass',), False)] * 4 + [(('glass',), True)]


def scenario():
    eps = []
    for i, ok in enumerate(NAVIGATE):
        eps.append(episode('navigate', bool(ok), T0 + i * STEP, objects=('door',),
                           goal='navigate to kitchen'))
    for i, (objs, ok) in enumerate(GRASP):
        eps.append(episode('grasp', ok, T0 + i * STEP + 600, objects=objs, goal='grasp it'))
    for i in range(10):
        eps.append(episode('track_target', True, T0 + i * STEP + 1200, objects=('ball',),
                           goal='follow it', scene='lab', salience=0.3 + 0.05 * i,
                           arguments={'target_label': 'ball', 'duration_s': 5.0}))
    return eps


def test_fit_helpers():
    fit = linear_fit([0, 1, 2, 3], [1.0, 3.0, 5.0, 7.0])
    assert (fit.slope, fit.intercept, fit.r2, fit.n) == (2.0, 1.0, 1.0, 4)
    assert linear_fit([1, 1, 1], [0.0, 1.0, 2.0]).r2 == 0.0     # x does not vary
    assert linear_fit([0, 1, 2], [0.5, 0.5, 0.5]).r2 == 0.0     # y does not vary
    with pytest.raises(ValueError):
        linear_fit([0, 1], [1.0])
    assert rolling_mean([1, 0, 1, 1], 2) == [0.5, 0.5, 1.0]
    assert correlation_t([0, 1, 2, 3, 4], [0, 1, 0, 1, 1]) > 0
    assert correlation_t([0, 1, 2, 3, 4], [4, 3, 2, 1, 0]) == -math.inf
    assert significance(1.96) == pytest.approx(0.95, abs=1e-3)


def test_session_end_writes_confirmed_trends_that_promote_with_agent_inference(tmp_path):
    hub = make_hub(tmp_path, NOW)
    try:
        ids = [hub.capture_episode(e) for e in scenario()]
        report = hub.on_session_end()
        assert report.steps == ['scn_save', 'detect', 'promote', 'consolidate', 'persist']
        pats = {r.name: r for r in hub.angular_gyrus.recall(limit=100, category='PATTERN')}
        nav = pats['stat:tool:navigate:success']
        assert isinstance(nav, MathRecord) and nav.confirmed
        assert nav.values['slope'] < 0 and nav.values['r2'] >= 0.5 and nav.values['n'] == 10
        assert 'declining success rate (R^2=' in nav.verbal and '/day' in nav.verbal
        assert 0.4 <= nav.confidence <= 0.99
        steady = pats['stat:tool:track_target:success']  # always works: no trend
        assert not steady.confirmed and 'no confirmed trend' in steady.verbal
        # the glass is where grasp fails: a confirmed context rate
        glass = pats['stat:tool:grasp@glass:success']
        assert glass.confirmed and glass.values['z'] < 0 and glass.values['n'] == 5
        ball = pats['ball_salience_trend']
        assert ball.confirmed and ball.values['slope'] > 0
        assert ball.values['mean'] == pytest.approx(0.525) and 'rising' in ball.verbal
        mug = pats['stat:tool:grasp@mug+table:success']  # the other side of the glass
        assert mug.confirmed and mug.values['z'] > 0
        assert set(report.patterns.confirmed) == {nav.id, glass.id, mug.id, ball.id}
        # QUANTIFIES edges to the concepts they are about
        navigate = hub.atl.find_by_name('navigate', fuzzy=False)
        assert hub.cross.has_link('angular_gyrus', nav.id, 'atl', navigate, 'QUANTIFIES')
        assert nav.id in hub.atl.concept(navigate).refs('angular_gyrus')
        for name in ('grasp', 'glass'):
            cid = hub.atl.find_by_name(name, fuzzy=False)
            assert hub.cross.has_link('angular_gyrus', glass.id, 'atl', cid, 'QUANTIFIES')
        # the statistician source promoted the confirmed ones, with AGENT_INFERENCE
        promoted = {hub.atl.concept(c).name: hub.atl.concept(c)
                    for c in report.promotion.created}
        concept = promoted['stat:tool:navigate:success']
        assert concept.provenance == Provenance.AGENT_INFERENCE
        assert 'declining' in concept.definition
        assert hub.cross.has_link('angular_gyrus', nav.id, 'atl', concept.id,
                                  'STATISTICALLY_CONFIRMS')
        assert not any('track target' in n for n in promoted)  # unconfirmed: not promoted
        # knowledge_context from a navigate episode reaches the pattern and its concept
        seed = ids[0] if ids[0] in hub.hippocampus else f'cm-{ids[0]}'  # maybe compressed
        know = hub.knowledge_context([seed], limit=8)
        names = [k['name'] for k in know]
        assert 'stat:tool:navigate:success' in names, names
    finally:
        hub.close(end_session=False)
    again = make_hub(tmp_path, NOW)
    try:  # everything persisted: records, edges, provenance
        nav = again.angular_gyrus.recall(name='stat:tool:navigate:success')[0]
        assert nav.confirmed
        cid = again.atl.find_by_name('stat:tool:navigate:success', fuzzy=False)
        assert again.atl.concept(cid).provenance == Provenance.AGENT_INFERENCE
        assert again.cross.has_link('angular_gyrus', nav.id, 'atl', cid,
                                    'STATISTICALLY_CONFIRMS')
    finally:
        again.close(end_session=False)


def test_a_rerun_updates_the_pattern_in_place(tmp_path):
    clock = Clock(NOW)
    hub = MemoryHub(HubConfig(db_path=str(tmp_path / 'memory.db')), clock=clock)
    try:
        for e in scenario():
            hub.capture_episode(e)
        hub.on_session_end()
        first = hub.angular_gyrus.recall(name='stat:tool:navigate:success')[0]
        assert first.confirmed
        for i in range(6):  # navigate recovers
            hub.capture_episode(episode('navigate', True, NOW + i * 600, objects=('door',)))
        clock.t = NOW + 3600
        hub.on_session_end()
        (now,) = hub.angular_gyrus.recall(name='stat:tool:navigate:success')
        assert now.id == first.id and now.values['n'] == 16
        assert now.values['last_rate'] == 1.0 and not now.confirmed
        # the concept promoted from it no longer claims the decline
        concept = hub.atl.concept(hub.atl.find_by_name('stat:tool:navigate:success'))
        assert concept.definition.startswith('No longer a confirmed pattern: navigate tool')
        assert concept.properties['confirmed'] is False
    finally:
        hub.close(end_session=False)


def test_cooccurring_concepts_get_related_to_and_others_do_not(tmp_path):
    hub = make_hub(tmp_path, NOW)
    try:
        for e in scenario():
            hub.capture_episode(e)
        hub.extractor.drain(timeout=10)
        mug, table, ball = (hub.atl.find_by_name(n, fuzzy=False)
                            for n in ('mug', 'table', 'ball'))
        assert not hub.atl.relationships(mug, 'RELATED_TO')  # nothing before the session end
        report = hub.on_session_end()
        assert report.related_to > 0
        edges = {e.dst: e for e in hub.atl.relationships(mug, 'RELATED_TO')}
        assert table in edges and edges[table].weight == pytest.approx(0.98)  # J=1, decayed once
        assert edges[table].data['shared'] == 5
        assert ball not in edges  # never in the same episode
        assert not any(e.dst == mug for e in hub.atl.relationships(ball, 'RELATED_TO'))
    finally:
        hub.close(end_session=False)


def test_recurring_roles_propose_relationship_types_that_persist(tmp_path):
    hub = make_hub(tmp_path, NOW)
    try:
        for e in scenario():
            hub.capture_episode(e)
        for i, scene in enumerate(['pantry', 'garage'] * 3 + ['attic']):
            hub.capture_episode(episode('grasp', True, T0 + 5 + i, objects=('mug',),
                                        scene=scene))
        assert 'ACTS_ON' not in hub.registry and 'LOCATED_AT' not in hub.registry
        report = hub.on_session_end()
        assert set(report.relations.proposed) == {'ACTS_ON', 'LOCATED_AT'}
        acts = hub.registry.get('ACTS_ON')
        assert not acts.builtin and acts.proposed_by == 'extractor' and not acts.symmetric
        track = hub.atl.find_by_name('track target', fuzzy=False)
        ball = hub.atl.find_by_name('ball', fuzzy=False)
        (edge,) = hub.atl.relationships(track, 'ACTS_ON')
        assert edge.dst == ball and edge.data['support'] == 10
        assert edge.weight == pytest.approx(0.98)  # every call named the ball; decayed once
        lab = hub.atl.find_by_name('lab', fuzzy=False)
        assert hub.atl.concept(lab).category == 'place'
        assert len(hub.atl.concept(lab).refs('hippocampus')) == 10
        assert [e.dst for e in hub.atl.relationships(ball, 'LOCATED_AT')] == [lab]
        # the mug is seen in three places, none most of the time (nor once in the attic):
        # it is located nowhere; and grasp's arguments name nothing
        mug = hub.atl.find_by_name('mug', fuzzy=False)
        assert not hub.atl.relationships(mug, 'LOCATED_AT')
        assert all(hub.atl.find_by_name(p, fuzzy=False) is None
                   for p in ('pantry', 'garage', 'attic'))
        grasp = hub.atl.find_by_name('grasp', fuzzy=False)
        assert not hub.atl.relationships(grasp, 'ACTS_ON')
        rels = dict((r[0].name, r[1]) for r in hub.concept_query(name='track target'))
        assert any(r['type'] == 'ACTS_ON' and r['target_name'] == 'ball' and not r['builtin']
                   for r in rels['track target'])  # the query service shows it
        hub.on_session_end()  # proposing again is a no-op
        assert len(hub.registry.types(builtin=False)) == 2
    finally:
        hub.close(end_session=False)
    again = make_hub(tmp_path, NOW)
    try:
        assert again.registry.get('ACTS_ON').proposed_by == 'extractor'
        track = again.atl.find_by_name('track target', fuzzy=False)
        assert [e.type for e in again.atl.relationships(track, 'ACTS_ON')] == ['ACTS_ON']
    finally:
        again.close(end_session=False)


def test_concept_context_grounds_concepts_in_view_and_shows_the_patterns(tmp_path):
    hub = make_hub(tmp_path, NOW, context_budget_s=5.0)
    try:
        for e in scenario():
            hub.capture_episode(e)
        hub.extractor.drain(timeout=10)
        (entry,) = hub.concept_context(objects=['ball']).entries
        names = {c['name'] for c in entry['layer_context']}
        # grounded through ConceptGrounder (IPS -> AG) while the context was built
        assert {'ball_salience', 'ball_novelty', 'ball_success_rate'} <= names
        assert entry['properties']['mean_salience'] == pytest.approx(0.525, abs=1e-3)
        assert entry['properties']['success_rate'] == 1.0
        ball = hub.atl.find_by_name('ball', fuzzy=False)
        rid = hub.angular_gyrus.find_by_name('ball_salience')
        assert hub.cross.has_link('angular_gyrus', rid, 'atl', ball, 'QUANTIFIES')
        assert 'ball_salience_trend' not in names
        hub.on_session_end()
        (entry,) = hub.concept_context(objects=['ball']).entries
        verbal = {c['name']: c['verbal'] for c in entry['layer_context']}
        assert 'rising' in verbal['ball_salience_trend']
        assert {r['type'] for r in entry['relationships']} >= {'LOCATED_AT'}
        assert not any(k.startswith('stat:') for k in entry['properties'])
    finally:
        hub.close(end_session=False)


def test_noise_few_samples_and_blocked_calls_confirm_nothing(tmp_path):
    st = Statistician(None, None, None, None)
    confirmed = 0
    for seed in range(400):  # a constant 0.6 success rate: any confirmed trend is noise
        rng = random.Random(seed)
        outs = [_Outcome(T0 + i * 3600, 'look', rng.random() < 0.6, 'c') for i in range(30)]
        confirmed += st.tool_trend('look', outs).confirmed
    assert confirmed / 400 <= 0.03, confirmed  # 1.3% over 1000 such runs
    hub = make_hub(tmp_path, NOW)
    try:
        for i in range(4):  # too few uses for any statistic
            hub.capture_episode(episode('wave', i < 2, T0 + i * STEP, objects=('hand',)))
        for i in range(10):  # blocked calls never ran: they are not outcomes of the tool
            e = episode('push', False, T0 + i * STEP, objects=('box',))
            e.outcome.blocked = i >= 5
            hub.capture_episode(e)
        report = hub.on_session_end()
        names = {hub.angular_gyrus.get(i).name for i in report.patterns.stored}
        assert not any('wave' in n for n in names)
        (push,) = hub.angular_gyrus.recall(name='stat:tool:push:success')
        assert push.values['n'] == 5 and not push.confirmed
        assert report.patterns.confirmed == []
    finally:
        hub.close(end_session=False)


def test_a_failing_detector_is_reported_and_the_session_end_goes_on(tmp_path):
    hub = make_hub(tmp_path, NOW)
    try:
        ids = [hub.capture_episode(e) for e in scenario()[:10]]

        def broken():
            raise ValueError('bad statistic')

        hub.statistician.run = broken
        report = hub.on_session_end()
        assert report.errors == ['detect failed: ValueError: bad statistic']
        assert report.steps == ['scn_save', 'detect', 'promote', 'consolidate', 'persist']
        assert report.persisted_records >= len(ids)
    finally:
        hub.close(end_session=False)
