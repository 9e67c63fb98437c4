"""The three layers: protocol, index, recall filters, capacity, consolidation, persistence."""

from collections import Counter

import pytest

from maxim_memory.layers import (AccessBasedStrategy, AngularGyrus, ATL, CapacityPolicy,
                                 Hippocampus, HourProfile, MemoryLayer, RecordNotFoundError,
                                 RecordTypeError, TemporalAwareStrategy)
from maxim_memory.layers.base import DAY_S
from maxim_memory.records import (Action, CompressedMemory, Concept, EpisodeContext,
                                  EpisodicMemory, MathRecord, Outcome, Perception)
from maxim_memory.relevance import content_words, KeywordScorer
from maxim_memory.store import MemoryStore


class Clock:
    def __init__(self, t=1_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


def ep(objects=(), tool='grasp', success=True, t=0.0, goal='', people=(), mode='active',
       run='r1', text=''):
    return EpisodicMemory(created_at=t, perception=Perception(text, list(objects), list(people)),
                          context=EpisodeContext(goal=goal, mode=mode), action=Action(tool),
                          outcome=Outcome(success, 0.5 if success else -0.5), run_id=run)


def test_all_layers_implement_the_protocol():
    for cls in (Hippocampus, ATL, AngularGyrus):
        layer = cls()
        assert isinstance(layer, MemoryLayer) and len(layer) == 0 and list(layer) == []
        assert layer.stats()['layer'] == layer.layer_name


def test_hippocampus_recall_filters_and_keyword_query():
    h = Hippocampus()
    a = ep(['mug'], 'grasp', True, t=10, people=['Dennis'], text='a blue mug')
    b = ep(['chair'], 'navigate', False, t=20, goal='navigate_to_kitchen', mode='passive')
    c = ep(['mug', 'chair'], 'grasp', False, t=30)
    for e in (a, b, c):
        h.store(e)
    assert [e.id for e in h.recall(tool_name='grasp')] == [c.id, a.id]
    assert [e.id for e in h.recall(tool_name='grasp', success=True)] == [a.id]
    assert [e.id for e in h.recall(object='MUG', person='dennis')] == [a.id]
    assert [e.id for e in h.recall(mode='passive')] == [b.id]
    assert [e.id for e in h.recall(time_after=15, time_before=25)] == [b.id]
    assert [e.id for e in h.recall(query='kitchen')] == [b.id]
    assert [e.id for e in h.recall(limit=1)] == [c.id]
    assert h.recall(tool_name='fly') == []
    with pytest.raises(RecordTypeError):
        h.store(MathRecord(name='x'))
    with pytest.raises(RecordNotFoundError):
        h.get('nope')


def test_indexed_recall_equals_a_scan_of_every_episode():
    """Words, days and filters come from the index; the answers are those of reading every
    episode's text and fields, compressed and removed episodes included."""
    import random
    rng = random.Random(4)
    h = Hippocampus()
    words = ['mug', 'cup', 'door', 'kitchen', 'hall', 'blue', 'red', 'slipped', 'held']
    for i in range(400):
        h.store(ep(rng.sample(['mug', 'cup', 'door'], rng.randint(0, 2)),
                   rng.choice(['grasp', 'look', 'navigate']), rng.random() < 0.6,
                   t=i * 7_000.0, people=rng.sample(['ann', 'bob'], rng.randint(0, 1)),
                   text=' '.join(rng.sample(words, 3))))
    recs = list(h)
    for r in recs[:60]:  # consolidated: the gist keeps the episode's time and words
        h.replace(r.id, CompressedMemory.from_episode(r, 1e7))
    for r in recs[60:80]:
        h.remove(r.id)

    def scan(query='', tool_name='', success=None, object='', time_after=0.0,
             time_before=0.0):
        words = {r.id: set(content_words(r.text())) for r in h}
        df = Counter(w for ws in words.values() for w in ws)
        scorer = KeywordScorer(query, df, len(words))
        out = []
        for r in h:
            t = r.episode_time if isinstance(r, CompressedMemory) else r.created_at
            tool = r.tool_name if isinstance(r, CompressedMemory) else r.action.tool_name
            ok = r.success if isinstance(r, CompressedMemory) else r.outcome.success
            objs = r.objects if isinstance(r, CompressedMemory) else \
                r.perception.detected_objects
            if (tool_name and tool != tool_name) or (success is not None and ok != success) \
                    or (object and object not in objs) or (time_after and t < time_after) \
                    or (time_before and t > time_before):
                continue
            match = scorer.match(words[r.id])
            score = match.score if scorer.words else 1.0
            if score > 0:
                out.append((-score, -t, r.id))
        return [x[2] for x in sorted(out)]

    queries = [{'query': 'blue mug'}, {'query': 'kitchen', 'tool_name': 'look'},
               {'time_after': 300_000.0, 'time_before': 900_000.0},
               {'time_after': 2_000_000.0}, {'time_before': 150_000.0, 'object': 'door'},
               {'query': 'red held door', 'success': False, 'time_after': 100_000.0},
               {'query': 'nothing matches this'}, {}]
    for q in queries:
        want = scan(**q)
        top, total = h.search_top(7, **q)
        assert [r.id for r, _ in h.search(**q)] == want, q
        assert [r.id for r, _ in top] == want[:7] and total == len(want), q
    assert 0 < len(scan(time_before=150_000.0)) < 40  # the window is a real filter


def test_associates_on_perceptual_overlap_and_recall_associated():
    h = Hippocampus()
    a, b = ep(['mug', 'table']), ep(['mug', 'table'], tool='look')
    c = ep(['car'], tool='look', goal='drive')
    for e in (a, b, c):
        h.store(e)
    assert h.graph.has_edge(b.id, a.id, 'ASSOCIATES') and not h.graph.has_edge(c.id, a.id)
    h.add_causal_link(a.id, c.id, rpe=-0.7)
    assert h.graph.has_edge(a.id, c.id, 'CAUSES') and not h.graph.has_edge(c.id, a.id, 'CAUSES')
    assoc = dict(h.recall_associated([b.id]))
    assert assoc[a.id] == pytest.approx(0.5) and assoc[c.id] == pytest.approx(0.5 * 0.5 * 0.7)


def test_gets_and_queries_do_not_change_state_but_access_does():
    clock = Clock()
    h = Hippocampus(clock=clock)
    e = ep(['mug'])
    h.store(e)
    h.get(e.id)
    h.recall(object='mug')
    assert e.access_count == 0
    h.access(e.id)
    assert e.access_count == 1 and e.last_accessed == clock.t


def test_write_through_store_survives_reopen(tmp_path):
    db = tmp_path / 'm.db'
    st = MemoryStore(db)
    h = Hippocampus(store=st)
    ids = [h.store(ep(['mug'], t=i)) for i in range(5)]
    h.remove(ids[0])
    h.save_to(st)  # edges too
    st.close()
    h2 = Hippocampus()
    h2.load(str(db))
    assert sorted(r.id for r in h2) == sorted(ids[1:])
    assert h2.graph.edge_count() > 0 and [e.id for e in h2.recall(object='mug', limit=1)] == [
        ids[4]]


def test_derived_updates_and_new_edges_are_flushed_in_batches(tmp_path):
    st = MemoryStore(tmp_path / 'm.db')
    atl = ATL(store=st)
    cid, _ = atl.find_or_create('mug', 'object')
    other, _ = atl.find_or_create('cup', 'object')
    c = atl.concept(cid)
    c.add_ref('hippocampus', 'ep-1')
    atl.update(c, durable=False)
    atl.relate(cid, other, 'RELATED_TO', 0.5)
    assert st.get_record('atl', cid)['memory_refs'] == {} and st.load_edges('atl') == []
    assert atl.flush() == 1
    assert st.get_record('atl', cid)['memory_refs'] == {'hippocampus': {'ep-1': None}}
    assert {(e.src, e.dst) for e in st.load_edges('atl')} == {(cid, other), (other, cid)}
    assert atl.citing('hippocampus', 'ep-1') == [cid]
    st.close()


def test_capacity_evicts_least_used_and_notifies():
    clock = Clock(100 * DAY_S)
    deleted = []
    h = Hippocampus(capacity=CapacityPolicy(capacity=10, low_water=0.8), clock=clock)
    h.register_deletion_callback(deleted.append)
    first = [h.store(ep(t=clock.t - 20 * DAY_S + i)) for i in range(5)]
    for rid in first[:2]:
        for _ in range(5):
            h.access(rid)  # used: should survive
    for i in range(6):
        h.store(ep(t=clock.t - i))
    assert len(h) == 8
    assert set(deleted) == set(first[2:5]) and all(r in h for r in first[:2])


def test_temporal_aware_strategy_prefers_active_hours():
    hours = HourProfile()
    for _ in range(5):
        hours.observe(9 * 3600.0 + 60)
    hours.observe(3 * 3600.0)
    assert hours.activity(9 * 3600.0) == 1.0 and hours.activity(3 * 3600.0) == 0.2
    active = TemporalAwareStrategy(hours.activity, weight=1.0)
    morning, night = ep(t=9 * 3600.0), ep(t=3 * 3600.0)
    access = AccessBasedStrategy()
    policy = CapacityPolicy(capacity=1, strategies=[access, active], low_water=1.0)
    assert policy.select([morning, night], 2, now=10 * 3600.0) == [night.id]


def test_consolidation_compresses_then_prunes_and_migrates(tmp_path):
    clock = Clock(0.0)
    st = MemoryStore(tmp_path / 'm.db')
    h = Hippocampus(store=st, clock=clock)
    moved = []
    h.register_compression_callback(lambda old, new: moved.append((old, new.id)))
    old = ep(['mug'], t=0.0)
    vivid = ep(['mug'], t=0.0)
    vivid.outcome.valence = -0.95  # significant: kept whole as long-term
    fresh = ep(['mug'], t=2.5 * DAY_S)
    for e in (old, vivid, fresh):
        h.store(e)
    clock.t = 3 * DAY_S
    report = h.consolidate()
    assert report.compressed == 1 and moved == [(old.id, f'cm-{old.id}')]
    cm = h.get(f'cm-{old.id}')
    assert isinstance(cm, CompressedMemory) and h.get(vivid.id).long_term
    assert h.graph.has_edge(cm.id, fresh.id, 'ASSOCIATES')
    assert {r.id for r in h.recall(tool_name='grasp', time_before=1.0)} == {cm.id, vivid.id}
    assert sorted(st.record_ids('hippocampus')) == sorted([cm.id, vivid.id, fresh.id])
    assert st.get_record('hippocampus', vivid.id)['long_term'] is True  # written, batched
    clock.t = 8 * DAY_S
    report = h.consolidate()
    assert report.pruned == 1 and cm.id not in h and vivid.id in h


def test_replace_many_is_all_or_nothing_on_bad_ids(tmp_path):
    st = MemoryStore(tmp_path / 'm.db')
    h = Hippocampus(store=st)
    a, b = ep(['mug'], t=1.0), ep(['mug'], t=2.0)
    h.store(a)
    h.store(b)
    moved = []
    h.register_compression_callback(lambda old, new: moved.append((old, new.id)))
    ca, cb = (CompressedMemory.from_episode(x, 10.0) for x in (a, b))
    with pytest.raises(RecordNotFoundError):
        h.replace_many([(a.id, ca), ('missing', cb)])
    with pytest.raises(ValueError):
        h.replace_many([(a.id, ca), (a.id, cb)])
    assert a.id in h and b.id in h and not moved
    h.replace_many([(a.id, ca), (b.id, cb)])
    assert moved == [(a.id, ca.id), (b.id, cb.id)]
    assert sorted(st.record_ids('hippocampus')) == sorted([ca.id, cb.id])
    assert h.graph.has_edge(cb.id, ca.id, 'ASSOCIATES')


def test_atl_find_or_create_dedups_and_indexes():
    atl = ATL()
    cid, created = atl.find_or_create('coffee_mug', 'object', properties={'color': 'blue'})
    assert created
    assert atl.find_or_create('coffee mug', 'object') == (cid, False)
    assert atl.find_or_create('CoffeeMug') == (cid, False)
    assert atl.find_or_create('coffee mugs') == (cid, False)  # near-identical name
    other, created = atl.find_or_create('coffee machine', 'object')
    assert created and other != cid
    assert {c.id for c in atl.recall(category='object')} == {cid, other}
    assert [c.id for c in atl.recall(property_key='color', property_value='blue')] == [cid]
    assert atl.lookup('category', 'OBJECT') == {cid, other}
    assert [c.id for c in atl.recall(name='mug')] == [cid]
    with pytest.raises(ValueError):
        atl.find_or_create('  ')


def test_atl_recall_similar_offline_and_relationships():
    atl = ATL()
    mug, _ = atl.find_or_create('coffee_mug', 'object', definition='a ceramic cup for coffee')
    box, _ = atl.find_or_create('container', 'object')
    atl.relate(mug, box, 'IS_A', 0.8)
    hits = atl.recall_similar('coffee cup', k=2)
    assert hits[0][0] == mug and hits[0][1] > hits[1][1]
    assert [(e.type, e.dst) for e in atl.relationships(mug)] == [('IS_A', box)]
    with pytest.raises(RecordNotFoundError):
        atl.relate(mug, 'nope', 'IS_A')


def test_atl_decays_over_30_days_not_7():
    clock = Clock(0.0)
    atl = ATL(clock=clock)
    weak, _ = atl.find_or_create('blip', 'object')
    mid, _ = atl.find_or_create('mug', 'object')
    strong, _ = atl.find_or_create('person', 'category')
    atl.concept(mid).reinforcement_count = 2
    atl.concept(strong).reinforcement_count = 30
    clock.t = 10 * DAY_S
    assert atl.consolidate().pruned == 0 and len(atl) == 3
    clock.t = 31 * DAY_S
    report = atl.consolidate()
    assert report.pruned == 1 and report.compressed == 1 and weak not in atl
    assert isinstance(atl.get(strong), Concept)


def test_angular_gyrus_upserts_by_name():
    ag = AngularGyrus()
    first = ag.upsert(MathRecord(name='mug_salience', verbal='mean=0.7', confidence=0.5))
    again = ag.upsert(MathRecord(name='mug_salience', verbal='mean=0.8', confidence=0.6))
    assert first == again and len(ag) == 1 and ag.get(first).verbal == 'mean=0.8'
    assert [r.id for r in ag.recall(name='mug_salience')] == [first]
