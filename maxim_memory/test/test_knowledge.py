"""Knowledge pipeline: tokens, extraction worker, IPS, grounding, promotion, completion,
budgeted concept context (seed 002's worked examples)."""

import math

import pytest

from maxim_memory.graph import CrossLayerGraph, RelationshipRegistry
from maxim_memory.knowledge import (ConceptContextBuilder, ConceptExtractor, ConceptGrounder,
                                    extract_terms, IPS, LEVEL_EXHAUSTED, LEVEL_FULL, LEVEL_LOW,
                                    normalize_tokens, PatternCompleter, PromotionCandidate,
                                    SemanticPromoter, StatisticianPromotionSource)
from maxim_memory.layers import AngularGyrus, ATL, Hippocampus
from maxim_memory.layers.base import DAY_S
from maxim_memory.layers.hippocampus import episode_time
from maxim_memory.records import (Action, CompressedMemory, Decision, EpisodeContext,
                                  EpisodicMemory, MathRecord, Outcome, Perception, Provenance)


def ep(objects=('coffee_mug',), tool='grasp', success=True, t=0.0, goal='', salience=0.5,
       novelty=0.5, confidence=0.8, people=()):
    return EpisodicMemory(created_at=t,
                          perception=Perception('', list(objects), list(people), salience,
                                                novelty),
                          context=EpisodeContext(goal=goal), action=Action(tool),
                          decision=Decision(intent=goal, confidence=confidence),
                          outcome=Outcome(success, 0.8 if success else -0.8))


@pytest.fixture
def mind():
    reg = RelationshipRegistry()
    h, atl, ag = Hippocampus(registry=reg), ATL(registry=reg), AngularGyrus(registry=reg)
    return h, atl, ag, CrossLayerGraph(reg)


def test_normalize_tokens_seed_examples():
    assert normalize_tokens('navigate_to_kitchen') == ['navigate', 'kitchen']
    assert normalize_tokens('graspObject') == ['grasp', 'object']
    assert normalize_tokens('Look at the RedBall, then go-home') == [
        'look', 'red', 'ball', 'go', 'home']
    assert normalize_tokens('') == []


def test_extract_terms_by_category():
    e = ep(objects=['mug'], people=['Dennis'], goal='navigate_to_kitchen', tool='navigate')
    assert extract_terms(e) == [('mug', 'object'), ('dennis', 'person'),
                                ('navigate', 'action'), ('kitchen', 'goal_term')]


def test_extractor_worker_links_episodes_and_follows_compression_and_deletion(mind):
    h, atl, ag, cross = mind
    ex = ConceptExtractor(atl, cross)
    h.register_capture_callback(ex.on_capture)
    h.register_compression_callback(ex.on_compress)
    h.register_deletion_callback(ex.on_delete)
    ex.start()
    try:
        eps = [ep(objects=['mug'], goal='grasp_the_mug', t=float(i)) for i in range(3)]
        for e in eps:
            e.outcome.valence = 0.5  # ordinary episodes: consolidation compresses them
            h.store(e)  # returns at once: the work is queued
        assert ex.drain(timeout=10)
        mug = atl.concept(atl.find_by_name('mug'))
        assert mug.refs('hippocampus') == [e.id for e in eps]
        assert mug.reinforcement_count == 3 and mug.category == 'object'
        assert atl.find_by_name('grasp') is not None
        assert cross.has_link('hippocampus', eps[0].id, 'atl', mug.id, 'INSTANCE_OF')
        h._clock = lambda: 2 * DAY_S  # consolidation a day later compresses them
        h.consolidate()
        h.remove(f'cm-{eps[2].id}')
        assert ex.drain(timeout=10)
        assert mug.refs('hippocampus') == [f'cm-{eps[0].id}', f'cm-{eps[1].id}']
    finally:
        assert ex.stop(timeout=10)
    assert ex.processed == 3 + 3 + 1 and ex.dropped == 0


def test_extractor_queue_overflow_is_counted_not_blocking(mind):
    h, atl, ag, cross = mind
    ex = ConceptExtractor(atl, max_queue=2)  # not started: nothing consumes
    for i in range(5):
        ex.on_capture(ep(t=float(i)))
    assert ex.dropped == 3
    for i in range(5):  # compression / deletion jobs are never dropped
        ex.on_compress(f'ep-{i}', CompressedMemory(id=f'cm-ep-{i}'))
        ex.on_delete(f'cm-ep-{i}')
    assert ex.dropped == 3
    assert ex.run_pending() == 2 + 10


def test_ips_assess_and_runs_test():
    ips = IPS()
    a = ips.assess([0.8, 0.7, 0.9])
    assert a.is_random is None and a.mean == pytest.approx(0.8)
    assert ips.assess([0.1, 0.9] * 8).is_random is False  # alternation: too many runs
    assert ips.assess([0.1] * 8 + [0.9] * 8).is_random is False  # two runs: a trend
    assert ips.assess([0.3, 0.8, 0.7, 0.2, 0.4, 0.9, 0.1, 0.6, 0.5, 0.35]).is_random is True


def _poisson_times(n, mean=100.0):
    gaps = [-mean * math.log(1 - (i + 0.5) / n) for i in range(n)]
    order = [(i * 7) % n for i in range(n)]  # a fixed shuffle (7 is coprime to n=20)
    t, out = 0.0, [0.0]
    for i in order:
        t += gaps[i]
        out.append(t)
    return out


def test_ips_timing_randomness():
    ips = IPS()
    assert ips.timing_randomness([0, 10, 20]).is_random is None
    assert ips.timing_randomness([i * 3600.0 for i in range(20)]).is_random is False
    assert ips.timing_randomness(_poisson_times(20)).is_random is True


def test_grounder_builds_ag_statistics_with_quantifies_edges(mind):
    h, atl, ag, cross = mind
    ex = ConceptExtractor(atl, cross)
    saliences = [0.8, 0.7, 0.9, 0.75, 0.85, 0.8, 0.7, 0.9]
    for i, s in enumerate(saliences):
        e = ep(objects=['mug'], success=i != 3, salience=s, t=float(i))
        h.store(e)
        ex.process(e)
    mug = atl.concept(atl.find_by_name('mug'))
    grounder = ConceptGrounder(h, atl, ag, cross)
    recs = grounder.ground_concept(mug)
    by = {r.name: r for r in recs}
    assert by['mug_salience'].values['mean'] == pytest.approx(sum(saliences) / 8)
    assert by['mug_success_rate'].values['rate'] == pytest.approx(0.875)
    assert 'mug success rate: 0.875 (7/8)' == by['mug_success_rate'].verbal
    assert len(mug.refs('angular_gyrus')) == 3 and len(ag) == 3
    for rid in mug.refs('angular_gyrus'):
        assert cross.has_link('angular_gyrus', rid, 'atl', mug.id, 'QUANTIFIES')
    grounder.ground_concept(mug)
    assert len(ag) == 3  # re-grounding updates in place
    assert grounder.ground_concept(atl.concept(atl.find_or_create('rare', 'object')[0])) == []


def test_cooccurrence_relates_concepts_by_jaccard(mind):
    h, atl, ag, cross = mind
    ex = ConceptExtractor(atl, cross)
    for i in range(10):
        e = ep(objects=['mug', 'kitchen'] if i < 6 else ['mug'], t=float(i))
        h.store(e)
        ex.process(e)
    made = ConceptGrounder(h, atl, ag, cross).cooccurrence(min_jaccard=0.3)
    mug, kitchen = atl.find_by_name('mug'), atl.find_by_name('kitchen')
    rel = {e.dst: e.weight for e in atl.relationships(mug, 'RELATED_TO')}
    assert made >= 1 and rel[kitchen] == pytest.approx(0.6)


class ScriptedSource:
    """A real PromotionSource with fixed candidates (deterministic logic test)."""

    def __init__(self, name, candidates):
        self.name, self.candidates = name, candidates

    def get_promotion_candidates(self, min_confidence=0.6, min_observations=3):
        return list(self.candidates)


def test_seed_example_five_grasp_mug_successes_promote_a_concept(mind):
    h, atl, ag, cross = mind
    eps = [ep(objects=['coffee_mug'], t=float(i)) for i in range(5)]
    for e in eps:
        h.store(e)
    cand = PromotionCandidate('grasp + coffee_mug -> success', 'causal_pattern', 0.8,
                              [e.id for e in eps], {'event': 'grasp', 'context': 'coffee_mug',
                                                    'outcome': 'success', 'observations': 5,
                                                    'timestamps': [e.created_at for e in eps]},
                              source='nac')
    promoter = SemanticPromoter(atl, h, cross, [ScriptedSource('nac', [cand])])
    report = promoter.promote()
    assert len(report.created) == 1 and not report.rejected_noise
    c = atl.concept(report.created[0])
    assert c.provenance is Provenance.EPISODIC_CONSOLIDATION
    assert c.category == 'causal_pattern' and c.reinforcement_count == 5
    assert c.properties['objects'] == ['coffee_mug'] and c.properties['tool'] == 'grasp'
    for e in eps:
        assert cross.has_link('atl', c.id, 'hippocampus', e.id, 'DERIVED_FROM')
    again = promoter.promote()  # the same pattern is recognised, not duplicated
    assert again.reinforced == [c.id] and not again.created and c.reinforcement_count == 5


def test_gate_rejects_random_timing_and_lets_small_samples_through(mind):
    h, atl, ag, cross = mind
    times = _poisson_times(20)
    eps = [ep(t=t) for t in times]
    for e in eps:
        h.store(e)
    noisy = PromotionCandidate('look -> success', 'causal_pattern', 0.9, [e.id for e in eps],
                               {'timestamps': times}, source='nac')
    regular = PromotionCandidate('wave -> smile', 'causal_pattern', 0.9, [],
                                 {'timestamps': [i * 3600.0 for i in range(20)]}, source='nac')
    few = PromotionCandidate('nod -> ok', 'causal_pattern', 0.9, [],
                             {'timestamps': times[:5]}, source='nac')
    weak = PromotionCandidate('blink -> ?', 'causal_pattern', 0.3, [], {}, source='nac')
    report = SemanticPromoter(atl, h, cross, [ScriptedSource('nac', [noisy, regular, few, weak])]
                              ).promote()
    assert report.rejected_noise == ['look -> success']
    assert report.rejected_low_confidence == ['blink -> ?']
    assert {atl.get(i).name for i in report.created} == {'wave -> smile', 'nod -> ok'}


def test_statistician_pattern_promotes_with_statistically_confirms(mind):
    h, atl, ag, cross = mind
    mid = ag.store(MathRecord(name='stat:tool:navigate:success', category='PATTERN',
                              verbal='declining, R2=0.73', confidence=0.73, confirmed=True))
    ag.store(MathRecord(name='unconfirmed', category='PATTERN', confidence=0.9))
    report = SemanticPromoter(atl, h, cross, [StatisticianPromotionSource(ag)]).promote()
    assert len(report.created) == 1
    c = atl.concept(report.created[0])
    assert c.provenance is Provenance.AGENT_INFERENCE and 'R2=0.73' in c.definition
    assert cross.has_link('angular_gyrus', mid, 'atl', c.id, 'STATISTICALLY_CONFIRMS')
    # already assessed by the IPS/AG pipeline: only confidence >= 0.4 is checked (the NAc's
    # 0.6 does not apply)
    ag.store(MathRecord(name='stat:tool:look:latency', category='PATTERN', confidence=0.45,
                        confirmed=True))
    ag.store(MathRecord(name='stat:tool:wave:success', category='PATTERN', confidence=0.35,
                        confirmed=True))
    report = SemanticPromoter(atl, h, cross, [StatisticianPromotionSource(ag)]).promote()
    assert [atl.get(i).name for i in report.created] == ['stat:tool:look:latency']
    assert report.rejected_noise == ['stat:tool:wave:success']


def test_pattern_completer_predicts_from_concept_linked_episodes(mind):
    h, atl, ag, cross = mind
    ex = ConceptExtractor(atl, cross)
    for i in range(25):
        e = ep(objects=['mug'], goal='grasp_mug', success=i % 5 != 0, t=float(i),
               confidence=0.9)
        h.store(e)
        ex.process(e)
    other = ep(objects=['ball'], tool='look', t=100.0)
    h.store(other)
    ex.process(other)
    old = h.recent(25)[-1]
    h.replace(old.id, CompressedMemory.from_episode(old, 200.0))
    ex._migrate(old.id, f'cm-{old.id}')
    ConceptGrounder(h, atl, ag, cross).ground_concept(atl.concept(atl.find_by_name('mug')))
    preds = PatternCompleter(atl, h, ag).complete(objects=['mug'], goal='grasp_mug')
    assert len(preds) == PatternCompleter.MAX_EPISODES
    newest_mug = max((e for e in h if e.id != other.id), key=episode_time)
    assert preds[0].source_episode_id == newest_mug.id
    assert all(p.tool == 'grasp' and p.goal == 'grasp_mug' for p in preds)
    assert preds[0].confidence == pytest.approx(0.9)
    assert {m.name for m in preds[0].math_context} >= {'mug_salience', 'mug_success_rate'}
    assert PatternCompleter(atl, h, ag).complete(objects=['unicorn']) == []


def test_pattern_completer_uses_compressed_confidence(mind):
    h, atl, ag, cross = mind
    ex = ConceptExtractor(atl, cross)
    e = ep(objects=['mug'], t=1.0)
    h.store(e)
    ex.process(e)
    h.replace(e.id, CompressedMemory.from_episode(e, 5.0))
    ex._migrate(e.id, f'cm-{e.id}')
    (p,) = PatternCompleter(atl, h).complete(objects=['mug'])
    assert p.confidence == 0.3 and p.source_episode_id == f'cm-{e.id}' and p.success


class SteppingClock:
    """Advances a fixed step per reading: a deterministic stand-in for slow work."""

    def __init__(self, step):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def test_context_builder_degrades_through_three_levels(mind):
    h, atl, ag, cross = mind
    ex = ConceptExtractor(atl, cross)
    for i in range(8):
        e = ep(objects=['mug', 'cup', 'plate'], t=float(i))
        h.store(e)
        ex.process(e)
    box, _ = atl.find_or_create('container', 'object')
    atl.relate(atl.find_by_name('mug'), box, 'IS_A', 0.8)
    grounder = ConceptGrounder(h, atl, ag, cross)
    fast = ConceptContextBuilder(atl, ag, grounder, budget_s=0.05, clock=SteppingClock(0.001))
    ctx = fast.build(objects=['mug'])
    assert ctx.level == LEVEL_FULL
    (entry,) = ctx.entries
    assert entry['relationships'] == [{'type': 'IS_A', 'target': 'container', 'weight': 0.8}]
    assert entry['properties']['success_rate'] == 1.0 and entry['episode_count'] == 8
    slow = ConceptContextBuilder(atl, ag, None, budget_s=0.05, clock=SteppingClock(0.02))
    ctx = slow.build(objects=['mug', 'cup', 'plate'])
    assert [len(e) for e in ctx.entries] == [7, 7, 4]
    assert ctx.level == LEVEL_EXHAUSTED
    levels = ConceptContextBuilder(atl, ag, None, budget_s=0.05, clock=SteppingClock(0.013))
    assert levels.build(objects=['mug', 'cup']).level == LEVEL_LOW
    with pytest.raises(ValueError):
        ConceptContextBuilder(atl, budget_s=0)
