"""MemoryHub: durable capture, session-end order, read-only queries, learning, recovery."""

import importlib.util
import threading

import pytest

from maxim_memory.hub import (context_signature, HubConfig, MemoryHub, QueryError,
                              UnavailableError)
from maxim_memory.knowledge import PromotionCandidate
from maxim_memory.layers.base import DAY_S
from maxim_memory.records import (Action, CompressedMemory, Decision, EpisodeContext,
                                  EpisodicMemory, Outcome, Perception)
from maxim_memory.store import MemoryStore

HAVE_NAC = importlib.util.find_spec('maxim_memory.nac') is not None
HAVE_SIM = importlib.util.find_spec('maxim_memory.similarity') is not None
needs_nac = pytest.mark.skipif(not HAVE_NAC, reason='maxim_memory.nac not written yet')
needs_sim = pytest.mark.skipif(not HAVE_SIM, reason='maxim_memory.similarity not written yet')


class Clock:
    def __init__(self, t=1_800_000_000.0):
        self.t = t

    def __call__(self):
        return self.t


def ep(tool='grasp', success=True, objects=('mug',), t=1_800_000_000.0, run='run-1', scene='',
       goal='grasp_mug', valence=None):
    v = (0.6 if success else -0.6) if valence is None else valence
    return EpisodicMemory(created_at=t, run_id=run,
                          perception=Perception(f'I see {" ".join(objects)}', list(objects)),
                          context=EpisodeContext(goal=goal, mode='active', scene=scene),
                          decision=Decision(intent=goal, confidence=0.7), action=Action(tool),
                          outcome=Outcome(success, v, 'done' if success else 'it failed'))


def make_hub(tmp_path, clock=None, **kw):
    cfg = HubConfig(db_path=str(tmp_path / 'memory.db'), **kw)
    return MemoryHub(cfg, clock=clock or Clock())


def test_capture_is_durable_before_any_session_end(tmp_path):
    hub = make_hub(tmp_path)
    try:
        ids = [hub.capture_episode(ep(t=1_800_000_000.0 + i)) for i in range(3)]
        with MemoryStore(tmp_path / 'memory.db') as reader:  # a second connection (WAL)
            assert set(reader.record_ids('hippocampus')) == set(ids)
    finally:
        hub.close(end_session=False)
    with pytest.raises(TypeError):
        MemoryHub.capture_episode(hub, 'not an episode')
    with pytest.raises(ValueError):
        MemoryHub.capture_episode(hub, ep(valence=1.5))


def test_reopen_restores_layers_graphs_and_concepts(tmp_path):
    hub = make_hub(tmp_path)
    first = [hub.capture_episode(ep(objects=('mug', 'table'), t=1_800_000_000.0 + i))
             for i in range(4)]
    hub.extractor.drain(timeout=10)
    mug = hub.atl.find_by_name('mug')
    assert mug is not None
    edges = hub.cross.edge_count()
    hub.registry.propose('BLOCKS_VIEW_OF')
    hub.close()
    again = make_hub(tmp_path)
    try:
        assert {r.id for r in again.hippocampus} == set(first)
        assert again.atl.concept(mug).refs('hippocampus') == first
        assert again.cross.edge_count() == edges > 0
        assert again.hippocampus.graph.edge_count() > 0
        assert 'BLOCKS_VIEW_OF' in again.registry
        later = again.capture_episode(ep(objects=('mug', 'table'), t=1_800_000_100.0))
        assert again.hippocampus.graph.has_edge(later, first[-1], 'ASSOCIATES')
        assert again.capture_episode(again.hippocampus.get(later)) == later  # duplicate
        assert len(again.hippocampus) == 5
    finally:
        again.close(end_session=False)


def test_session_end_runs_in_the_mandatory_order(tmp_path):
    clock = Clock()
    hub = make_hub(tmp_path, clock=clock)
    seen = {}

    class OrderProbe:
        """A promotion source that records what it sees when promotion runs."""

        name = 'nac'

        def get_promotion_candidates(self, min_confidence=0.6, min_observations=3):
            seen['uncompressed'] = all(isinstance(r, EpisodicMemory) for r in hub.hippocampus)
            return [PromotionCandidate('grasp + mug -> success', 'causal_pattern', 0.8,
                                       ids, {'timestamps': []}, source='nac')]

    ids = [hub.capture_episode(ep(t=clock.t + i)) for i in range(5)]
    hub.promoter.sources = [OrderProbe()]
    clock.t += 2 * DAY_S  # the episodes are old enough to be compressed
    report = hub.on_session_end()
    assert report.steps == ['scn_save', 'detect', 'promote', 'consolidate', 'persist']
    assert seen['uncompressed'] is True
    (cid,) = report.promotion.created
    assert all(isinstance(r, CompressedMemory) for r in hub.hippocampus)
    for i in ids:  # promotion's DERIVED_FROM edges followed the episodes into compression
        assert hub.cross.has_link('atl', cid, 'hippocampus', f'cm-{i}', 'DERIVED_FROM')
    assert hub.atl.concept(cid).refs('hippocampus') == [f'cm-{i}' for i in ids]
    assert report.consolidation[0].compressed == 5
    if HAVE_SIM:  # the EC index follows: the gists took over their episodes' rows
        assert set(hub.similarity.obj.ids()) == {f'cm-{i}' for i in ids}
    assert set(report.durations_s) == set(report.steps)
    hub.close(end_session=False)


def test_queries_are_bounded_and_read_only(tmp_path):
    hub = make_hub(tmp_path, max_results=5)
    try:
        for i in range(12):
            hub.capture_episode(ep(success=i % 2 == 0, t=1_800_000_000.0 + i))
        hub.extractor.drain(timeout=10)
        before = [(r.id, r.access_count, r.last_accessed) for r in hub.hippocampus]
        concepts_before = [(r.id, r.reinforcement_count) for r in hub.atl]
        res = hub.recall(tool_name='grasp', success=False, limit=100)
        assert len(res.hits) == 5 and res.total_matches == 6
        assert hub.recall(object='mug', expand=True, limit=2).expanded >= 1
        assert len(hub.concept_query(name='mug')) == 1
        assert len(hub.temporal_patterns(limit=3)['episodes']) == 3
        hub.system_stats()
        hub.knowledge_context([res.hits[0][0].id])
        assert [(r.id, r.access_count, r.last_accessed) for r in hub.hippocampus] == before
        assert [(r.id, r.reinforcement_count) for r in hub.atl] == concepts_before
        with pytest.raises(QueryError):
            hub.recall(limit=-1)
        with pytest.raises(QueryError):
            hub.recall(time_after=10, time_before=5)
        with pytest.raises(QueryError):
            hub.temporal_patterns(hour=24)
        with pytest.raises(QueryError):
            hub.concept_query(relationship_type='LIKES')
    finally:
        hub.close(end_session=False)


def test_stats_report_absent_parts_instead_of_faking_them(tmp_path):
    hub = make_hub(tmp_path)
    try:
        stats = hub.system_stats()
        for part in ('nac', 'scn', 'pain', 'ec'):
            assert stats[part]['available'] or stats[part]['reason']
        assert stats['nac']['available'] == HAVE_NAC
        if not HAVE_NAC:
            with pytest.raises(UnavailableError):
                hub.predict_outcome('grasp')
        with pytest.raises(QueryError):
            hub.predict_outcome('')
    finally:
        hub.close(end_session=False)


def test_corrupt_database_is_set_aside_and_a_fresh_one_opens(tmp_path):
    db = tmp_path / 'memory.db'
    db.write_bytes(b'\x00garbage' * 512)
    hub = make_hub(tmp_path)
    try:
        assert hub.warnings and 'moved aside' in hub.warnings[0]
        assert len(list(tmp_path.glob('memory.db.corrupt-*'))) == 1
        hub.capture_episode(ep())
        assert hub.system_stats()['warnings'] == hub.warnings
    finally:
        hub.close(end_session=False)
    db.write_bytes(b'\x00garbage' * 512)
    from maxim_memory.store import CorruptStoreError
    with pytest.raises(CorruptStoreError):
        make_hub(tmp_path, recover_corrupt=False)


def test_concurrent_queries_are_answered_during_capture(tmp_path):
    hub = make_hub(tmp_path, synchronous='NORMAL')
    errors = []

    def writer():
        try:
            for i in range(150):
                hub.capture_episode(ep(t=1_800_000_000.0 + i, success=i % 3 != 0))
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    t = threading.Thread(target=writer)
    t.start()
    answers = 0
    while t.is_alive() or answers < 20:
        hub.recall(tool_name='grasp', limit=5)
        hub.system_stats()
        answers += 1
        if answers > 100_000:
            break
    t.join(timeout=30)
    try:
        assert not errors and not t.is_alive() and answers >= 20
        assert hub.recall(limit=1).total_matches == 150
    finally:
        hub.close(end_session=False)


def test_context_signature():
    assert context_signature(ep(scene='kitchen')) == 'kitchen'
    assert context_signature(ep(objects=('mug', 'cup'))) == 'cup+mug'
    assert context_signature(ep(objects=(), goal='navigate_to_kitchen')) == 'navigate_kitchen'


@needs_nac
def test_learning_repeated_failures_predict_bad_outcome(tmp_path):
    hub = make_hub(tmp_path)
    try:
        for i in range(25):
            hub.capture_episode(ep('navigate', False, objects=(), scene='kitchen',
                                   t=1_800_000_000.0 + i, valence=-0.8))
        for i in range(3):
            hub.capture_episode(ep('navigate', True, objects=(), scene='hallway',
                                   t=1_800_000_100.0 + i, valence=0.8))
        bad = hub.predict_outcome('navigate', 'kitchen')
        assert bad.value < 0.1 and bad.confidence > 0.85
        good = hub.predict_outcome('navigate', 'hallway')
        assert good.value > 0.5
        links, total = hub.causal_links(event='navigate', valence=-1)
        assert total >= 1 and all(ln.valence < 0 for ln in links)
    finally:
        hub.close(end_session=False)


@needs_nac
def test_blocked_calls_teach_the_nac_nothing(tmp_path):
    hub = make_hub(tmp_path)
    try:
        hub.capture_episode(ep('write_file', False, objects=(), scene='desk', valence=-1.0))
        before = hub.predict_outcome('write_file', 'desk')
        for i in range(12):
            blocked = ep('write_file', False, objects=(), scene='desk', valence=-1.0,
                         t=1_800_000_001.0 + i)
            blocked.outcome.blocked = True
            hub.capture_episode(blocked)
        after = hub.predict_outcome('write_file', 'desk')
        assert after.observation_count == before.observation_count == 1
        assert after.value == before.value and after.confidence == before.confidence
        assert len(hub.hippocampus) == 13       # still remembered as episodes
    finally:
        hub.close(end_session=False)


@needs_nac
def test_nac_pattern_promotes_at_session_end(tmp_path):
    clock = Clock()
    hub = make_hub(tmp_path, clock=clock)
    try:
        ids = [hub.capture_episode(ep('grasp', True, objects=('coffee_mug',),
                                      t=clock.t + i * 60.0)) for i in range(5)]
        report = hub.on_session_end()
        assert report.promotion.created, report.promotion
        c = hub.atl.concept(report.promotion.created[0])
        assert 'grasp' in c.name and 'coffee_mug' in c.name
        assert all(hub.cross.has_link('atl', c.id, 'hippocampus', i, 'DERIVED_FROM')
                   for i in ids)
    finally:
        hub.close(end_session=False)


@needs_sim
def test_similarity_search_finds_related_episodes(tmp_path):
    hub = make_hub(tmp_path)
    try:
        a = hub.capture_episode(ep('grasp', True, objects=('coffee_mug',), goal='grasp_mug'))
        hub.capture_episode(ep('grasp', True, objects=('coffee_mug',), goal='grasp_mug'))
        hub.capture_episode(ep('navigate', False, objects=('door',), goal='go_to_kitchen'))
        hits = hub.similarity_search(memory_id=a, limit=2)
        assert hits and hits[0][0].action.tool_name == 'grasp'
        with pytest.raises(QueryError):
            hub.similarity_search()
    finally:
        hub.close(end_session=False)


@needs_sim
def test_ec_index_is_saved_at_persist_and_reloaded_with_only_new_episodes_embedded(tmp_path):
    hub = make_hub(tmp_path)
    first = [hub.capture_episode(ep(objects=('mug',), t=1_800_000_000.0 + i))
             for i in range(6)]
    assert hub.ec_startup['loaded'] is False and hub.ec_startup['embedded'] == 0
    hub.close()  # session end -> persist -> the index is written next to the database
    index_file = tmp_path / 'memory.db.ec.npz'
    assert index_file.exists()
    hub = make_hub(tmp_path)
    try:
        assert hub.ec_startup | {'path': ''} == {'path': '', 'loaded': True, 'embedded': 0,
                                                 'removed': 0, 'rebuild_reason': ''}
        assert hub.system_stats()['ec']['startup']['loaded'] is True
        later = [hub.capture_episode(ep('navigate', False, objects=('door',),
                                        goal='go_to_door', t=1_800_000_100.0 + i))
                 for i in range(3)]
        hub.hippocampus.remove(first[0])  # the index follows the database, not the file
    finally:
        hub.close(end_session=False)  # as after a crash: the file predates these changes
    hub = make_hub(tmp_path)
    try:
        assert hub.ec_startup['loaded'] is True
        assert hub.ec_startup['embedded'] == 3 and hub.ec_startup['removed'] == 1
        assert set(hub.similarity.obj.ids()) == set(first[1:] + later)
        hits = hub.similarity_search(memory_id=later[0], limit=2)
        assert [r.id for r, _, _ in hits] and all(r.id in later for r, _, _ in hits)
    finally:
        hub.close(end_session=False)


@needs_sim
def test_ec_index_of_another_embedder_is_rebuilt(tmp_path):
    from maxim_memory.embedding import HashingEmbedder
    hub = make_hub(tmp_path)
    ids = [hub.capture_episode(ep(t=1_800_000_000.0 + i)) for i in range(4)]
    hub.close()
    cfg = HubConfig(db_path=str(tmp_path / 'memory.db'))
    hub = MemoryHub(cfg, embedder=HashingEmbedder(64), clock=Clock())
    try:
        assert hub.ec_startup['loaded'] is False and 'dim' in hub.ec_startup['rebuild_reason']
        assert hub.ec_startup['embedded'] == 4 and not hub.warnings
        assert hub.similarity.obj.dim == 64
        assert hub.similarity_search(memory_id=ids[0], limit=3)
        hub.persist()
    finally:
        hub.close(end_session=False)
    hub = MemoryHub(cfg, embedder=HashingEmbedder(64), clock=Clock())
    try:  # the rebuilt index replaced the old file
        assert hub.ec_startup['loaded'] is True and hub.ec_startup['embedded'] == 0
    finally:
        hub.close(end_session=False)


@needs_sim
def test_corrupt_ec_index_is_set_aside_rebuilt_and_reported(tmp_path):
    hub = make_hub(tmp_path)
    ids = [hub.capture_episode(ep(t=1_800_000_000.0 + i)) for i in range(4)]
    hub.close()
    index_file = tmp_path / 'memory.db.ec.npz'
    data = index_file.read_bytes()
    index_file.write_bytes(data[:len(data) // 3])  # a torn copy
    hub = make_hub(tmp_path)
    try:
        assert hub.ec_startup['loaded'] is False and hub.ec_startup['embedded'] == 4
        assert hub.warnings and 'moved aside' in hub.warnings[0]
        assert len(list(tmp_path.glob('memory.db.ec.npz.corrupt-*'))) == 1
        assert hub.similarity_search(memory_id=ids[0], limit=3)
        assert hub.system_stats()['warnings'] == hub.warnings
    finally:
        hub.close()
    assert index_file.exists()  # a sound index again
    hub = make_hub(tmp_path, persist_ec_index=False)
    try:
        assert hub.ec_startup['loaded'] is False and hub.ec_startup['embedded'] == 4
        assert hub.save_similarity() == 0
    finally:
        hub.close(end_session=False)
