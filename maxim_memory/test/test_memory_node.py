"""The memory node in-process over real DDS: episodes in, every query service answered."""

import json
import time

import numpy as np
import pytest
import rclpy
from rclpy.executors import SingleThreadedExecutor
from rclpy.lifecycle import TransitionCallbackReturn
from rclpy.parameter import Parameter
from std_srvs.srv import Trigger

from maxim_common.qos import EVENTS
from maxim_interfaces.msg import Episode, PainSignal
from maxim_interfaces.srv import (CausalLinks, ConceptQuery, Embed, MemoryRecall, PainHistory,
                                  PredictOutcome, Relate, SimilaritySearch, SystemStats,
                                  TemporalPatterns)
from maxim_memory.hub import to_plain
from maxim_memory.nodes.memory_node import MemoryNode
from maxim_memory.records import record_to_dict
from maxim_memory.store import MemoryStore

pytestmark = pytest.mark.ros


def spin_until(executor, cond, timeout=15.0):
    deadline = time.monotonic() + timeout  # a bounded wait, not a timing assertion
    while time.monotonic() < deadline:
        if cond():
            return True
        executor.spin_once(timeout_sec=0.1)
    return cond()


def call(executor, node, srv_type, service, **fields):
    client = node.create_client(srv_type, f'memory/{service}')
    assert spin_until(executor, lambda: client.service_is_ready() or
                      client.wait_for_service(timeout_sec=0.0)), service
    req = srv_type.Request(**fields)
    future = client.call_async(req)
    assert spin_until(executor, future.done), f'{service} did not answer'
    node.destroy_client(client)
    return future.result()


def episode(i, tool='grasp', success=True, objects=('mug',)):
    m = Episode(episode_id=f'ep-{i}', run_id='run-1', perception=f'I see a {objects[0]}',
                detected_objects=list(objects), salience=0.6, novelty=0.2,
                goal='grasp_the_mug', mode='active', intent='pick up the mug', confidence=0.8,
                tool_name=tool, arguments_json='{"target": "mug"}', success=success,
                valence=0.7 if success else -0.7, outcome='held' if success else 'slipped',
                duration_s=1.5)
    m.header.stamp.sec = 1_800_000_000 + i * 60
    return m


def memory_node(ctx, **params):
    """A memory node brought up as the lifecycle manager does: configure, then activate."""
    node = MemoryNode(context=ctx, parameter_overrides=[
        Parameter(k, value=v) for k, v in params.items()])
    assert node.trigger_configure() == TransitionCallbackReturn.SUCCESS, node.last_error
    assert node.trigger_activate() == TransitionCallbackReturn.SUCCESS
    return node


@pytest.fixture
def ros():
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    try:
        yield ctx, executor
    finally:
        executor.shutdown()
        rclpy.try_shutdown(context=ctx)


def test_memory_node_captures_and_answers_every_query(ros, tmp_path):
    ctx, executor = ros
    db = tmp_path / 'memory.db'
    node = memory_node(ctx, db_path=str(db), **{'budgets.max_results': 5})
    peer = rclpy.create_node('peer', context=ctx)
    executor.add_node(node)
    executor.add_node(peer)
    try:
        pub = peer.create_publisher(Episode, 'episodes', EVENTS)
        pain_pub = peer.create_publisher(PainSignal, 'pain', EVENTS)
        assert spin_until(executor, lambda: pub.get_subscription_count() > 0)
        for i in range(8):
            pub.publish(episode(i, success=i % 4 != 3))
        bad = episode(99)
        bad.context_json = '[not an object'
        pub.publish(bad)
        worse = episode(98)
        worse.valence = 3.0
        pub.publish(worse)
        pain_pub.publish(PainSignal(pain_type=PainSignal.TYPE_TOOL_FAILURE,
                                    type_name='tool_failure', intensity=0.4, source='grasp',
                                    description='grasp failed'))
        assert spin_until(executor, lambda: len(node.hub.hippocampus) == 8)
        assert node.hub.hippocampus.find('ep-99') is None  # rejected, logged
        assert node.hub.hippocampus.find('ep-98') is None

        stats = call(executor, peer, SystemStats, 'system_stats')
        assert stats.available and stats.episodes == 8 and stats.error_code == 0
        assert json.loads(stats.result_json)['layers']['hippocampus']['records'] == 8

        r = call(executor, peer, MemoryRecall, 'memory_recall', tool_name='grasp',
                 success=MemoryRecall.Request.FAILURE_ONLY, limit=10)
        assert r.available and r.total_matches == 2
        assert [e.episode_id for e in r.episodes] == ['ep-7', 'ep-3']
        assert not r.episodes[0].success and r.episodes[0].stamp == 1_800_000_420.0
        big = call(executor, peer, MemoryRecall, 'memory_recall', limit=1000)
        assert len(big.episodes) == 5 and big.total_matches == 8  # capped by the node
        bad_req = call(executor, peer, MemoryRecall, 'memory_recall', success=7)
        assert bad_req.error_code == MemoryRecall.Response.ERROR_INVALID_REQUEST

        node.hub.extractor.drain(timeout=10)
        c = call(executor, peer, ConceptQuery, 'concept_query', name='mug', limit=3)
        assert c.available and [x.name for x in c.concepts] == ['mug']
        assert c.concepts[0].episode_count == 8

        t = call(executor, peer, TemporalPatterns, 'temporal_patterns', hour=-1, day=-1,
                 discover_rhythms=True, limit=3)
        assert len(t.episodes) == 3 and t.error_code == 0
        t_bad = call(executor, peer, TemporalPatterns, 'temporal_patterns', hour=30, day=-1)
        assert t_bad.error_code == TemporalPatterns.Response.ERROR_INVALID_REQUEST

        p = call(executor, peer, PredictOutcome, 'predict_outcome', tool_name='grasp',
                 context='mug', include_all_outcomes=True)
        assert p.available and p.known and p.observations == 8 and p.error_code == 0
        assert 0.5 < p.value < 1.0 and {o.outcome for o in p.outcomes} == {'success', 'failure'}
        links = call(executor, peer, CausalLinks, 'causal_links', event='grasp',
                     valence=CausalLinks.Request.VALENCE_NEGATIVE, limit=3)
        assert links.total_links == 1 and links.links[0].outcome == 'failure'
        assert set(links.links[0].memory_ids) == {'ep-3', 'ep-7'}
        assert spin_until(executor, lambda: len(node.hub.pain.obj) == 1)
        pain = call(executor, peer, PainHistory, 'pain_history', check_action='grasp', limit=3)
        assert pain.available and pain.recent[0].source == 'grasp'
        assert dict(zip(pain.pain_types, pain.pain_counts))['tool_failure'] == 1
        assert not pain.would_block and pain.current_intensity > 0
        bad_pain = call(executor, peer, PainHistory, 'pain_history', action_params_json='[1]')
        assert bad_pain.error_code == PainHistory.Response.ERROR_INVALID_REQUEST
        sim = call(executor, peer, SimilaritySearch, 'similarity_search', memory_id='ep-1',
                   limit=3)
        assert sim.available and sim.error_code == 0, sim.error_msg
        assert len(sim.episodes) == 3 and 'ep-1' not in [e.episode_id for e in sim.episodes]
        assert sim.modalities and json.loads(sim.result_json)['episodes']
        nosim = call(executor, peer, SimilaritySearch, 'similarity_search')
        assert nosim.error_code == SimilaritySearch.Response.ERROR_INVALID_REQUEST
        before = [(r.id, r.access_count) for r in node.hub.hippocampus]
        call(executor, peer, SystemStats, 'system_stats')
        assert [(r.id, r.access_count) for r in node.hub.hippocampus] == before

        end = call(executor, peer, Trigger, 'end_session')
        assert end.success and json.loads(end.message)['steps'][-1] == 'persist'
    finally:
        executor.remove_node(node)
        node.destroy_node()  # ends the session and closes the database
        peer.destroy_node()
    with MemoryStore(db) as st:
        assert st.count('hippocampus') == 8 and st.count('atl') >= 1
        assert st.get_state('relationship_registry') is not None


def snapshot(node, db):
    """Everything a query could change: records, graphs, learned state, the EC index and
    the database's rows (read through a second connection)."""
    hub = node.hub
    out = {name: sorted(json.dumps(record_to_dict(r), sort_keys=True) for r in layer)
           for name, layer in hub.layers.items()}
    out['graphs'] = {name: sorted(map(repr, layer.graph.to_edges()))
                     for name, layer in hub.layers.items()}
    out['cross'] = sorted(map(repr, hub.cross.to_edges()))
    for part in ('nac', 'scn', 'pain'):
        out[part] = json.dumps(to_plain(getattr(hub, part).obj.to_dict()), sort_keys=True)
    out['ec'] = (sorted(hub.similarity.obj.ids()), hub.similarity.obj.stats())
    out['hours'] = list(hub.hours.counts)
    with MemoryStore(db) as st:
        graphs = list(hub.layers) + ['cross_layer']
        out['db'] = ([st.load_records(name) for name in hub.layers],
                     [st.get_state(name) for name in ('nac', 'scn', 'pain',
                                                      'relationship_registry')],
                     [sorted(map(repr, st.load_edges(g))) for g in graphs])
    return out


def test_memory_node_queries_never_change_state(ros, tmp_path):
    ctx, executor = ros
    db = tmp_path / 'memory.db'
    node = memory_node(ctx, db_path=str(db))
    # the default semantic modality is the sentence model
    assert node.hub.similarity.obj.embedder.name == 'sentence'
    peer = rclpy.create_node('peer', context=ctx)
    executor.add_node(node)
    executor.add_node(peer)
    try:
        pub = peer.create_publisher(Episode, 'episodes', EVENTS)
        pain_pub = peer.create_publisher(PainSignal, 'pain', EVENTS)
        assert spin_until(executor, lambda: pub.get_subscription_count() > 0)
        for i in range(12):
            pub.publish(episode(i, tool=('grasp', 'look')[i % 2], success=i % 3 != 0,
                                objects=(('mug', 'cup', 'ball')[i % 3],)))
        pain_pub.publish(PainSignal(pain_type=PainSignal.TYPE_TOOL_FAILURE,
                                    type_name='tool_failure', intensity=0.4, source='grasp',
                                    description='grasp failed'))
        assert spin_until(executor, lambda: len(node.hub.hippocampus) == 12
                          and len(node.hub.pain.obj) == 1)
        node.hub.extractor.drain(timeout=10)
        assert call(executor, peer, Trigger, 'end_session').success  # everything on disk
        before = snapshot(node, db)
        answers = [
            call(executor, peer, MemoryRecall, 'memory_recall', query='cup', limit=5),
            call(executor, peer, MemoryRecall, 'memory_recall', tool_name='grasp',
                 success=MemoryRecall.Request.SUCCESS_ONLY, object='mug', expand=True),
            call(executor, peer, MemoryRecall, 'memory_recall', time_after=1_800_000_100.0,
                 time_before=1_800_000_500.0),
            call(executor, peer, SimilaritySearch, 'similarity_search', memory_id='ep-2'),
            call(executor, peer, SimilaritySearch, 'similarity_search', tool_name='look',
                 context='I see a cup'),
            call(executor, peer, PredictOutcome, 'predict_outcome', tool_name='grasp',
                 context='mug', include_all_outcomes=True),
            call(executor, peer, PredictOutcome, 'predict_outcome', tool_name='never_seen'),
            call(executor, peer, CausalLinks, 'causal_links', event='grasp'),
            call(executor, peer, PainHistory, 'pain_history', check_action='grasp'),
            call(executor, peer, TemporalPatterns, 'temporal_patterns', hour=-1, day=-1,
                 discover_rhythms=True),
            call(executor, peer, ConceptQuery, 'concept_query', name='mug'),
            call(executor, peer, ConceptQuery, 'concept_query', category='object'),
            call(executor, peer, SystemStats, 'system_stats'),
            call(executor, peer, MemoryRecall, 'memory_recall', success=9),  # an error path
        ]
        assert all(a.error_code == 0 for a in answers[:-1]), [a.error_msg for a in answers]
        assert answers[0].total_matches == 4 and answers[-1].error_code != 0
        assert answers[3].episodes and answers[10].concepts
        # The chooser's similarity term: what was said against each act, by the sentence
        # model; an act on the thing asked for is nearer than one on another thing.
        rel = call(executor, peer, Relate, 'relate',
                   text='Would you mind facing the small green frog over there?',
                   phrases=['track target green object', 'track target red object'])
        assert rel.available and rel.error_code == 0, rel.error_msg
        assert len(rel.similarities) == 2 and rel.similarities[0] > rel.similarities[1]
        assert rel.model.startswith('sentence')
        too_many = call(executor, peer, Relate, 'relate', text='hi', phrases=['a'] * 65)
        assert too_many.error_code == Relate.Response.ERROR_INVALID_REQUEST
        # The probe's reading: the sentence model's vectors, row after row, unit length.
        emb = call(executor, peer, Embed, 'embed',
                   texts=['look at the green frog', 'face the green frog', 'the weather'])
        assert emb.available and emb.error_code == 0, emb.error_msg
        rows = np.asarray(emb.vectors, dtype=np.float32).reshape(3, emb.dim)
        assert emb.dim == 384 and np.allclose(np.linalg.norm(rows, axis=1), 1.0, atol=1e-3)
        assert rows[0] @ rows[1] > rows[0] @ rows[2]
        too_many = call(executor, peer, Embed, 'embed', texts=['a'] * 65)
        assert too_many.error_code == Embed.Response.ERROR_INVALID_REQUEST
        assert snapshot(node, db) == before
    finally:
        executor.remove_node(node)
        node.destroy_node()
        peer.destroy_node()


def test_memory_node_publishes_what_it_learned_from_each_episode(ros, tmp_path):
    """memory/updates after every capture: the NAc prediction under the context the outcome
    was learned in (the same as predict_outcome answers) and the size of memory."""
    from maxim_interfaces.msg import MemoryUpdate
    ctx, executor = ros
    node = memory_node(ctx, db_path=str(tmp_path / 'memory.db'))
    peer = rclpy.create_node('peer', context=ctx)
    executor.add_node(node)
    executor.add_node(peer)
    updates = []
    try:
        pub = peer.create_publisher(Episode, 'episodes', EVENTS)
        peer.create_subscription(MemoryUpdate, 'memory/updates', updates.append, EVENTS)
        assert spin_until(executor, lambda: pub.get_subscription_count() > 0)
        outcomes = [True, True, False, True]
        for i, ok in enumerate(outcomes):
            pub.publish(episode(i, success=ok))
        assert spin_until(executor, lambda: len(updates) == len(outcomes))
        assert [u.episode_id for u in updates] == [f'ep-{i}' for i in range(4)]
        assert [u.episodes for u in updates] == [1, 2, 3, 4]
        assert [u.observations for u in updates] == [1, 2, 3, 4]
        assert [u.outcome for u in updates] == ['success', 'success', 'failure', 'success']
        assert all(u.learned and u.prediction_available and u.tool_name == 'grasp'
                   for u in updates)
        assert updates[1].confidence > updates[0].confidence        # evidence accumulates
        assert updates[2].value < updates[1].value                  # a failure lowers it
        last = updates[-1]
        answer = call(executor, peer, PredictOutcome, 'predict_outcome', tool_name='grasp',
                      context=last.context)
        assert answer.value == pytest.approx(last.value)
        assert answer.confidence == pytest.approx(last.confidence)
        stats = call(executor, peer, SystemStats, 'system_stats')
        assert (stats.episodes + stats.compressed_episodes, stats.concepts,
                stats.causal_links) == (last.episodes, last.concepts, last.causal_links)
        # The session ends while the graph runs (the runner quiesces before stopping): one
        # more update says what promotion did; closing afterwards does not end it again.
        node.quiesce()
        node.quiesce()
        assert spin_until(executor, lambda: len(updates) == len(outcomes) + 1)
        end = updates[-1]
        assert end.session_end and not end.episode_id and end.episodes == 4
        stats = call(executor, peer, SystemStats, 'system_stats')
        assert end.concepts == stats.concepts
        assert end.concepts >= end.concepts_created   # the promoted concepts are counted
    finally:
        node.destroy_node()
        peer.destroy_node()


def test_a_flood_of_bad_episodes_is_a_few_counted_log_lines(ros, tmp_path, capfd):
    ctx, executor = ros
    node = memory_node(ctx, db_path=str(tmp_path / 'memory.db'))
    probe = rclpy.create_node('probe', context=ctx)
    executor.add_node(node)
    executor.add_node(probe)
    try:
        pub = probe.create_publisher(Episode, 'episodes', EVENTS)
        assert spin_until(executor, lambda: pub.get_subscription_count() >= 1)
        capfd.readouterr()
        for i in range(200):
            bad = episode(i)
            bad.valence = 5.0                       # outside -1..1: rejected
            pub.publish(bad)
            executor.spin_once(timeout_sec=0.005)
        assert spin_until(executor, lambda: node._throttle.suppressed_total >= 150)
        lines = [ln for ln in capfd.readouterr().err.splitlines() if 'rejected' in ln]
        assert 1 <= len(lines) <= 4, lines
        assert len(node.hub.hippocampus) == 0 and node.episodes_stored == 0
    finally:
        node.destroy_node()
        probe.destroy_node()
