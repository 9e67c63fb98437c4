"""Typed graphs, the relationship registry and cross-layer spreading activation."""

import networkx as nx
import pytest

from maxim_memory.graph import (AssociativeGraph, CrossLayerGraph, relabel_node,
                                RelationshipNameError, RelationshipRegistry,
                                UnknownRelationshipError)
from maxim_memory.layers import AngularGyrus, ATL, Hippocampus
from maxim_memory.records import (Action, EpisodicMemory, EpisodeContext, MathRecord, Outcome,
                                  Perception)


def test_registry_builtins_symmetry_and_proposals_persist():
    reg = RelationshipRegistry()
    assert reg.get('TRENDS_WITH').symmetric and not reg.get('IS_A').symmetric
    assert reg.get('DERIVED_FROM').builtin
    with pytest.raises(UnknownRelationshipError):
        reg.get('LIKES')
    rel = reg.propose('BLOCKS_VIEW_OF', symmetric=False, description='occludes')
    assert not rel.builtin and reg.propose('BLOCKS_VIEW_OF') is rel
    with pytest.raises(RelationshipNameError):
        reg.propose('is a')
    with pytest.raises(RelationshipNameError):
        reg.propose('IS_A')
    with pytest.raises(RelationshipNameError):
        reg.propose('BLOCKS_VIEW_OF', symmetric=True)
    back = RelationshipRegistry.from_dict(reg.to_dict())
    assert back.get('BLOCKS_VIEW_OF').description == 'occludes'
    assert [t.name for t in back.types(builtin=False)] == ['BLOCKS_VIEW_OF']


def test_symmetric_edges_go_both_ways_and_weights_are_checked():
    g = AssociativeGraph()
    g.add_edge('a', 'b', 'RELATED_TO', 0.6)
    g.add_edge('a', 'c', 'IS_A', 1.0)
    assert g.has_edge('b', 'a', 'RELATED_TO') and not g.has_edge('c', 'a')
    with pytest.raises(ValueError):
        g.add_edge('a', 'b', 'IS_A', 1.5)
    with pytest.raises(UnknownRelationshipError):
        g.add_edge('a', 'b', 'LIKES')
    assert g.decay(0.5, min_weight=0.4) == 2  # both RELATED_TO halves fall to 0.3
    assert g.edge_count() == 1


def test_spreading_decays_by_half_per_hop_and_respects_depth_and_threshold():
    g = AssociativeGraph()
    for a, b in [('s', 'a'), ('a', 'b'), ('b', 'c'), ('c', 'd')]:
        g.add_edge(a, b, 'ASSOCIATES', 1.0)
    acts = g.spread(['s'], decay=0.5, threshold=0.05, max_depth=3)
    assert acts == {'s': 1.0, 'a': 0.5, 'b': 0.25, 'c': 0.125}
    assert 'c' not in g.spread(['s'], threshold=0.2)
    with pytest.raises(ValueError):
        g.spread(['s'], decay=0.0)


def test_seed_002_traversal_from_a_failed_navigate_episode():
    """Episode -> similar failures; INSTANCE_OF concept; IS_A; STATISTICALLY_CONFIRMS;
    TEMPORALLY_CORRELATES -- activations come back grouped by layer."""
    reg = RelationshipRegistry()
    hippo, atl, ag = Hippocampus(registry=reg), ATL(registry=reg), AngularGyrus(registry=reg)
    cross = CrossLayerGraph(reg)
    fails = [EpisodicMemory(perception=Perception('hallway', ['door']),
                            context=EpisodeContext(goal='navigate_to_kitchen'),
                            action=Action('navigate'), outcome=Outcome(False, -0.6))
             for _ in range(3)]
    for ep in fails:
        hippo.store(ep)
    reliability, _ = atl.find_or_create('navigate_tool_reliability', 'operational_pattern')
    capabilities, _ = atl.find_or_create('tool_capabilities', 'category')
    atl.relate(reliability, capabilities, 'IS_A')
    pattern = ag.store(MathRecord(name='stat:tool:navigate:success', category='PATTERN',
                                  verbal='R2=0.73, slope=-0.02/day', confidence=0.73))
    circadian = ag.store(MathRecord(name='navigate_decline_phase', category='correlation',
                                    verbal='circadian phase 0.8 (evening)', confidence=0.6))
    for ep in fails:
        cross.link('hippocampus', ep.id, 'atl', reliability, 'INSTANCE_OF')
    cross.link('angular_gyrus', pattern, 'atl', reliability, 'STATISTICALLY_CONFIRMS', 0.73)
    cross.link('angular_gyrus', pattern, 'angular_gyrus', circadian, 'TEMPORALLY_CORRELATES')
    layers = {'hippocampus': hippo, 'atl': atl, 'angular_gyrus': ag}
    acts = cross.spread_activation([('hippocampus', fails[0].id)], layers, max_depth=4)
    assert {rid for rid, _ in acts['hippocampus']} == {fails[1].id, fails[2].id}
    atl_acts = dict(acts['atl'])
    assert atl_acts[reliability] == pytest.approx(0.5)
    assert atl_acts[capabilities] == pytest.approx(0.25)
    ag_acts = dict(acts['angular_gyrus'])
    assert ag_acts[pattern] == pytest.approx(0.5 * 0.5 * 0.73)
    assert ag_acts[circadian] == pytest.approx(0.5 * 0.5 * 0.73 * 0.5)
    shallow = cross.spread_activation([('hippocampus', fails[0].id)], layers, max_depth=1)
    assert shallow['angular_gyrus'] == [] and dict(shallow['atl']) == {reliability: 0.5}


def test_cross_layer_relabel_remove_and_round_trip():
    cross = CrossLayerGraph()
    cross.link('atl', 'c1', 'hippocampus', 'ep-1', 'DERIVED_FROM')
    cross.link('hippocampus', 'ep-1', 'atl', 'c1', 'INFORMS', 0.5)
    cross.relabel('hippocampus', 'ep-1', 'cm-ep-1')
    assert cross.has_link('atl', 'c1', 'hippocampus', 'cm-ep-1', 'DERIVED_FROM')
    copy = CrossLayerGraph()
    copy.load_edges(cross.to_edges())
    assert copy.edge_count() == 2
    cross.remove_record('atl', 'c1')
    assert cross.edge_count() == 0
    with pytest.raises(UnknownRelationshipError):
        cross.link('atl', 'a', 'atl', 'b', 'LIKES')


def test_relabel_node_moves_every_edge_with_its_type():
    g = nx.MultiDiGraph()
    g.add_edge('a', 'b', key='ASSOCIATES', weight=1.0, data={})
    g.add_edge('b', 'a', key='ASSOCIATES', weight=0.5, data={})
    g.add_edge('c', 'a', key='CAUSES', weight=0.2, data={'rpe': -0.4})
    g.add_edge('a', 'a', key='INFORMS', weight=0.3, data={})
    g.add_edge('n', 'b', key='ASSOCIATES', weight=0.1, data={})
    relabel_node(g, 'a', 'n')
    assert 'a' not in g
    assert sorted((s, d, k, a['weight']) for s, d, k, a in g.edges(keys=True, data=True)) == [
        ('b', 'n', 'ASSOCIATES', 0.5), ('c', 'n', 'CAUSES', 0.2),
        ('n', 'b', 'ASSOCIATES', 1.0),  # merged with n's own edge of that type: moved wins
        ('n', 'n', 'INFORMS', 0.3)]
    assert g.edges['c', 'n', 'CAUSES']['data'] == {'rpe': -0.4}
    relabel_node(g, 'absent', 'z')
    assert 'z' not in g
