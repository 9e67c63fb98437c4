"""Associative graphs: one per layer, and the cross-layer graph between layers (seed 002).

Edges are typed by a `RelationshipRegistry` holding the built-in types (symmetric or not)
and the types agents propose at run time, which persist with the registry.
Spreading activation starts from seed records, multiplies activation by `decay` (default 0.5)
times the edge weight at each hop, stops under `threshold` or past `max_depth`, and follows
edges in both directions (an association is recalled from either end).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
import re
from typing import Any, Iterable, Mapping, Protocol

import networkx as nx

_TYPE_NAME = re.compile(r'^[A-Z][A-Z0-9_]{1,47}$')


class UnknownRelationshipError(KeyError):
    """An edge type that is neither built in nor proposed."""


class RelationshipNameError(ValueError):
    """A proposed relationship name that is malformed or clashes with a built-in."""


@dataclass(frozen=True)
class RelationshipType:
    name: str
    symmetric: bool
    builtin: bool
    description: str = ''
    proposed_by: str = ''


_BUILTIN_SPECS = (
    # semantic (ATL) relationships
    ('IS_A', False, 'a kind of'),
    ('HAS_PART', False, 'has as a part'),
    ('PART_OF', False, 'is a part of'),
    ('CAUSES', False, 'leads to'),
    ('TRENDS_WITH', True, 'moves together over time'),
    ('CORRELATES_WITH', True, 'confirmed cross-metric correlation'),
    ('PHASE_LOCKED_TO', False, 'locked to a rhythm (metadata: phase, coupling)'),
    ('PREDICTS', False, 'predicts'),
    ('RELATED_TO', True, 'co-occurs (Jaccard on shared episodes)'),
    ('EXECUTES_WITH', False, 'a skill used with an object'),
    ('PROPERTY_OF', False, 'a property of'),
    # hippocampal associations
    ('ASSOCIATES', True, 'perceptual overlap between episodes'),
    # cross-layer
    ('DERIVED_FROM', False, 'ATL concept <- source episodes'),
    ('INSTANCE_OF', False, 'episode -> ATL concept'),
    ('STATISTICALLY_CONFIRMS', False, 'AG pattern -> ATL concept'),
    ('QUANTIFIES', False, 'AG record -> ATL concept'),
    ('TEMPORALLY_CORRELATES', True, 'any <-> any in time'),
    ('COMPUTED_FROM', False, 'AG record <- source data'),
    ('INFORMS', False, 'any -> any'),
)
BUILTIN_TYPES: tuple[RelationshipType, ...] = tuple(
    RelationshipType(n, s, True, d) for n, s, d in _BUILTIN_SPECS)


class RelationshipRegistry:
    """Known edge types; agents may add new ones, which are kept across sessions."""

    def __init__(self):
        self._types: dict[str, RelationshipType] = {t.name: t for t in BUILTIN_TYPES}

    def get(self, name: str) -> RelationshipType:
        try:
            return self._types[name]
        except KeyError:
            raise UnknownRelationshipError(
                f'unknown relationship type {name!r}; propose it first') from None

    def __contains__(self, name: str) -> bool:
        return name in self._types

    def propose(self, name: str, symmetric: bool = False, description: str = '',
                proposed_by: str = 'agent') -> RelationshipType:
        """Register an agent-proposed type; re-proposing the same definition is a no-op."""
        if not _TYPE_NAME.match(name):
            raise RelationshipNameError(
                f'relationship name {name!r} must be UPPER_SNAKE_CASE, 2-48 characters')
        existing = self._types.get(name)
        if existing is not None:
            if existing.builtin:
                raise RelationshipNameError(f'{name} is a built-in relationship type')
            if existing.symmetric != symmetric:
                raise RelationshipNameError(f'{name} exists with symmetric={existing.symmetric}')
            return existing
        rel = RelationshipType(name, bool(symmetric), False, description, proposed_by)
        self._types[name] = rel
        return rel

    def types(self, builtin: bool | None = None) -> list[RelationshipType]:
        return [t for t in self._types.values() if builtin is None or t.builtin == builtin]

    def to_dict(self) -> dict[str, Any]:
        return {'proposed': [{'name': t.name, 'symmetric': t.symmetric,
                              'description': t.description, 'proposed_by': t.proposed_by}
                             for t in self.types(builtin=False)]}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> 'RelationshipRegistry':
        reg = cls()
        for t in (d or {}).get('proposed', []):
            reg.propose(t['name'], t.get('symmetric', False), t.get('description', ''),
                        t.get('proposed_by', 'agent'))
        return reg


@dataclass(frozen=True)
class Edge:
    src: str
    dst: str
    type: str
    weight: float
    data: dict[str, Any]


def _spread(neighbors, seeds: Mapping[Any, float], decay: float, threshold: float,
            max_depth: int) -> dict[Any, float]:
    """Breadth-first activation spreading; returns the best activation of each reached node."""
    if not 0.0 < decay <= 1.0:
        raise ValueError(f'decay must be in (0, 1], not {decay}')
    if max_depth < 0:
        raise ValueError('max_depth must be >= 0')
    best: dict[Any, float] = dict(seeds)
    frontier = dict(seeds)
    for _ in range(max_depth):
        nxt: dict[Any, float] = {}
        for node, act in frontier.items():
            for other, weight in neighbors(node):
                a = act * decay * weight
                if a < threshold or a <= best.get(other, 0.0) or a <= nxt.get(other, 0.0):
                    continue
                nxt[other] = a
        if not nxt:
            break
        best.update(nxt)
        frontier = nxt
    return best


def relabel_node(g: nx.MultiDiGraph, old: Any, new: Any) -> None:
    """Rename one node in place, in O(its degree). (networkx's relabel_nodes scans every node
    of the graph per call, which made consolidating n episodes O(n^2).) Edges keep their
    keys, the relationship types: an edge the new node already has of the same type and
    direction takes the moved edge's weight and data."""
    if old not in g or old == new:
        return
    moved = [(new, new if dst == old else dst, key, attrs)
             for _, dst, key, attrs in g.out_edges(old, keys=True, data=True)]
    moved += [(src, new, key, attrs)
              for src, _, key, attrs in g.in_edges(old, keys=True, data=True) if src != old]
    g.add_node(new, **g.nodes[old])
    g.remove_node(old)
    g.add_edges_from(moved)


class AssociativeGraph:
    """A layer's internal graph: typed, weighted edges between its record ids."""

    def __init__(self, registry: RelationshipRegistry | None = None):
        self.registry = registry or RelationshipRegistry()
        self._g = nx.MultiDiGraph()
        self._pending: list[Edge] = []

    def add_edge(self, src: str, dst: str, rel_type: str, weight: float = 1.0,
                 **data: Any) -> None:
        rel = self.registry.get(rel_type)
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f'edge weight must be in [0, 1], not {weight}')
        if src == dst:
            return
        pairs = [(src, dst), (dst, src)] if rel.symmetric else [(src, dst)]
        for a, b in pairs:
            self._g.add_edge(a, b, key=rel_type, weight=float(weight), data=dict(data))
            self._pending.append(Edge(a, b, rel_type, float(weight), dict(data)))

    def take_pending(self) -> list[Edge]:
        """Edges added since the last call (for incremental persistence)."""
        out, self._pending = self._pending, []
        return out

    def has_edge(self, src: str, dst: str, rel_type: str | None = None) -> bool:
        if rel_type is None:
            return self._g.has_edge(src, dst)
        return self._g.has_edge(src, dst, key=rel_type)

    def edges(self, node: str | None = None, rel_type: str | None = None) -> list[Edge]:
        it = (self._g.out_edges(node, keys=True, data=True) if node is not None
              else self._g.edges(keys=True, data=True))
        if node is not None and node not in self._g:
            return []
        return [Edge(s, d, k, a['weight'], a['data']) for s, d, k, a in it
                if rel_type is None or k == rel_type]

    def neighbors(self, node: str) -> list[tuple[str, float]]:
        """Neighbours in either direction with their strongest edge weight."""
        if node not in self._g:
            return []
        out: dict[str, float] = {}
        for _, other, attrs in self._g.out_edges(node, data=True):
            out[other] = max(out.get(other, 0.0), attrs['weight'])
        for other, _, attrs in self._g.in_edges(node, data=True):
            out[other] = max(out.get(other, 0.0), attrs['weight'])
        return list(out.items())

    def __contains__(self, node: str) -> bool:
        return node in self._g

    def remove_node(self, node: str) -> None:
        if node in self._g:
            self._g.remove_node(node)

    def relabel(self, old: str, new: str) -> None:
        relabel_node(self._g, old, new)

    def decay(self, factor: float, min_weight: float = 0.05) -> int:
        """Weaken every edge; drop those under min_weight. Returns the number dropped."""
        drop = []
        for s, d, k, a in self._g.edges(keys=True, data=True):
            a['weight'] *= factor
            if a['weight'] < min_weight:
                drop.append((s, d, k))
        self._g.remove_edges_from(drop)
        self._g.remove_nodes_from([n for n in list(self._g.nodes) if self._g.degree(n) == 0])
        return len(drop)

    def spread(self, seeds: Iterable[str], decay: float = 0.5, threshold: float = 0.05,
               max_depth: int = 3) -> dict[str, float]:
        seed_map = {s: 1.0 for s in seeds}
        return _spread(self.neighbors, seed_map, decay, threshold, max_depth)

    def edge_count(self) -> int:
        return self._g.number_of_edges()

    def node_count(self) -> int:
        return self._g.number_of_nodes()

    def to_edges(self) -> list[Edge]:
        return self.edges()

    def load_edges(self, edges: Iterable[Edge]) -> None:
        for e in edges:
            if e.type not in self.registry:
                continue  # a type proposed in a lost session: the edge cannot be typed
            self._g.add_edge(e.src, e.dst, key=e.type, weight=e.weight, data=dict(e.data))


DependencyGraph = AssociativeGraph  # the seed's name for a layer's graph


class LayerView(Protocol):
    """What the cross-layer spreading needs of a layer: its name and its graph."""

    @property
    def layer_name(self) -> str: ...

    @property
    def graph(self) -> AssociativeGraph: ...


def node_key(layer: str, record_id: str) -> str:
    return f'{layer}/{record_id}'


def split_key(key: str) -> tuple[str, str]:
    layer, _, rid = key.partition('/')
    return layer, rid


class CrossLayerGraph:
    """Typed edges between records of different layers (DERIVED_FROM, INSTANCE_OF, ...)."""

    def __init__(self, registry: RelationshipRegistry | None = None):
        self.registry = registry or RelationshipRegistry()
        self._g = nx.MultiDiGraph()
        self._pending: list[Edge] = []

    def link(self, src_layer: str, src_id: str, dst_layer: str, dst_id: str, rel_type: str,
             weight: float = 1.0, **data: Any) -> None:
        rel = self.registry.get(rel_type)
        if not 0.0 <= weight <= 1.0:
            raise ValueError(f'edge weight must be in [0, 1], not {weight}')
        s, d = node_key(src_layer, src_id), node_key(dst_layer, dst_id)
        for a, b in ([(s, d), (d, s)] if rel.symmetric else [(s, d)]):
            self._g.add_edge(a, b, key=rel_type, weight=float(weight), data=dict(data))
            self._pending.append(Edge(a, b, rel_type, float(weight), dict(data)))

    def take_pending(self) -> list[Edge]:
        out, self._pending = self._pending, []
        return out

    def has_link(self, src_layer: str, src_id: str, dst_layer: str, dst_id: str,
                 rel_type: str | None = None) -> bool:
        s, d = node_key(src_layer, src_id), node_key(dst_layer, dst_id)
        return self._g.has_edge(s, d) if rel_type is None else self._g.has_edge(s, d, rel_type)

    def links(self, layer: str, record_id: str, rel_type: str | None = None,
              direction: str = 'both') -> list[Edge]:
        key = node_key(layer, record_id)
        if key not in self._g:
            return []
        found = []
        if direction in ('out', 'both'):
            found += list(self._g.out_edges(key, keys=True, data=True))
        if direction in ('in', 'both'):
            found += list(self._g.in_edges(key, keys=True, data=True))
        return [Edge(s, d, k, a['weight'], a['data']) for s, d, k, a in found
                if rel_type is None or k == rel_type]

    def neighbors(self, key: str) -> list[tuple[str, float]]:
        if key not in self._g:
            return []
        out: dict[str, float] = {}
        for _, other, a in self._g.out_edges(key, data=True):
            out[other] = max(out.get(other, 0.0), a['weight'])
        for other, _, a in self._g.in_edges(key, data=True):
            out[other] = max(out.get(other, 0.0), a['weight'])
        return list(out.items())

    def remove_record(self, layer: str, record_id: str) -> None:
        key = node_key(layer, record_id)
        if key in self._g:
            self._g.remove_node(key)

    def relabel(self, layer: str, old_id: str, new_id: str) -> None:
        relabel_node(self._g, node_key(layer, old_id), node_key(layer, new_id))

    def edge_count(self) -> int:
        return self._g.number_of_edges()

    def spread_activation(self, seeds: Iterable[tuple[str, str]],
                          layers: Mapping[str, LayerView], decay: float = 0.5,
                          threshold: float = 0.05, max_depth: int = 3,
                          include_seeds: bool = False) -> dict[str, list[tuple[str, float]]]:
        """Activation over intra-layer and cross-layer edges, grouped by layer, best first."""

        def neighbors(key: str) -> list[tuple[str, float]]:
            layer, rid = split_key(key)
            found = dict()
            view = layers.get(layer)
            if view is not None:
                for other, w in view.graph.neighbors(rid):
                    found[node_key(layer, other)] = w
            for other, w in self.neighbors(key):
                found[other] = max(found.get(other, 0.0), w)
            return list(found.items())

        seed_keys = {node_key(layer, rid): 1.0 for layer, rid in seeds}
        acts = _spread(neighbors, seed_keys, decay, threshold, max_depth)
        grouped: dict[str, list[tuple[str, float]]] = defaultdict(list)
        for key, act in acts.items():
            if key in seed_keys and not include_seeds:
                continue
            layer, rid = split_key(key)
            grouped[layer].append((rid, act))
        for name in layers:
            grouped.setdefault(name, [])
        return {k: sorted(v, key=lambda x: (-x[1], x[0])) for k, v in grouped.items()}

    def to_edges(self) -> list[Edge]:
        return [Edge(s, d, k, a['weight'], a['data'])
                for s, d, k, a in self._g.edges(keys=True, data=True)]

    def load_edges(self, edges: Iterable[Edge]) -> None:
        for e in edges:
            if e.type in self.registry:
                self._g.add_edge(e.src, e.dst, key=e.type, weight=e.weight, data=dict(e.data))
