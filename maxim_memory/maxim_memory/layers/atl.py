"""ATL (anterior temporal lobe): semantic concepts with typed relationships.

Mirrors the hippocampus (context index, associative graph, consolidation) with slower decay:
concepts age over 30 days where episodes age over 7. `find_or_create` deduplicates by name
("coffee_mug" is "coffee mug"); `recall_similar` answers "do I already know this?" with an
embedder when one is given, or lexical similarity offline.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterable, Protocol

import numpy as np

from maxim_memory.graph import Edge
from maxim_memory.layers.base import BaseLayer, ConsolidationReport, DAY_S, norm_key
from maxim_memory.records import (CompressedSemantic, Concept, MemoryRecord, Provenance,
                                  SemanticMemory)

_CAMEL = re.compile(r'(?<=[a-z0-9])(?=[A-Z])')
_SEP = re.compile(r'[\s_\-./:]+')
_WORD = re.compile(r'[a-z0-9]+')


class Embedder(Protocol):
    dim: int

    def embed(self, texts: list[str]) -> np.ndarray: ...


def normalize_name(name: str) -> str:
    """'coffee_mug', 'CoffeeMug', 'coffee-mug ' -> 'coffee mug'."""
    return _SEP.sub(' ', _CAMEL.sub(' ', name.strip())).strip().lower()


def _tokens(text: str) -> set[str]:
    return set(_WORD.findall(normalize_name(text)))


class ATL(BaseLayer):
    """Concepts indexed by name, category and property; typed edges between them."""

    name = 'atl'
    record_types = (SemanticMemory, Concept, CompressedSemantic)

    def __init__(self, *args, embedder: Embedder | None = None, max_age_s: float = 30 * DAY_S,
                 edge_decay: float = 0.98, name_match: float = 0.9, **kwargs):
        super().__init__(*args, **kwargs)
        self.embedder = embedder
        self.max_age_s = max_age_s
        self.edge_decay = edge_decay
        self.name_match = name_match
        self._vectors: dict[str, tuple[str, np.ndarray]] = {}

    def index_keys(self, rec: MemoryRecord) -> Iterable[tuple[str, str]]:
        keys = [('name', normalize_name(rec.name)), ('category', rec.category)]
        for k, v in getattr(rec, 'properties', {}).items():
            keys += [('prop_key', k), ('prop', f'{k}={v}')]
        for layer, refs in getattr(rec, 'memory_refs', {}).items():
            keys += [(f'ref:{layer}', rid) for rid in refs]  # which concepts cite a record
        return keys

    def citing(self, layer: str, record_id: str) -> list[str]:
        """Ids of the concepts whose memory_refs hold this record (O(1) lookup)."""
        return sorted(self.lookup(f'ref:{layer}', record_id))

    # --- concepts ------------------------------------------------------------------------------

    def find_by_name(self, name: str, fuzzy: bool = True) -> str | None:
        norm = normalize_name(name)
        ids = self._index.get(('name', norm_key(norm)))
        if ids:
            return min(ids)
        if not fuzzy or not norm:
            return None
        names = [k[1] for k in self._index if k[0] == 'name']
        close = difflib.get_close_matches(norm, names, n=1, cutoff=self.name_match)
        if close:
            return min(self._index[('name', close[0])])
        return None

    def find_or_create(self, name: str, category: str = '', definition: str = '',
                       properties: dict[str, Any] | None = None,
                       provenance: Provenance = Provenance.EPISODIC_CONSOLIDATION
                       ) -> tuple[str, bool]:
        """The concept with this name (or a near-identical one), created when absent."""
        if not normalize_name(name):
            raise ValueError('a concept needs a non-empty name')
        found = self.find_by_name(name)
        if found is not None:
            return found, False
        concept = Concept(name=normalize_name(name), category=category, definition=definition,
                          properties=dict(properties or {}), provenance=provenance,
                          created_at=self._clock())
        return self.store(concept), True

    def concept(self, concept_id: str) -> Concept:
        rec = self.get(concept_id)
        if not isinstance(rec, Concept):
            raise TypeError(f'{concept_id} is a {type(rec).__name__}, not a Concept')
        return rec

    def recall(self, limit: int = 10, name: str = '', category: str = '',
               property_key: str = '', property_value: str = '', min_confidence: float = 0.0,
               **_: Any) -> list[MemoryRecord]:
        sets = []
        if category:
            sets.append(self._index.get(('category', norm_key(category)), set()))
        if property_key and property_value:
            sets.append(self._index.get(('prop', norm_key(f'{property_key}={property_value}')),
                                        set()))
        elif property_key:
            sets.append(self._index.get(('prop_key', norm_key(property_key)), set()))
        ids = set(sets[0]).intersection(*sets[1:]) if sets else set(self._records)
        recs = [self._records[i] for i in ids]
        if name:
            want = _tokens(name)
            norm = normalize_name(name)
            recs = [r for r in recs if norm in normalize_name(r.name)
                    or (want and want <= _tokens(r.name))
                    or difflib.SequenceMatcher(None, norm, normalize_name(r.name)).ratio() >= 0.8]
        recs = [r for r in recs if r.confidence >= min_confidence]
        recs.sort(key=lambda r: (-r.confidence, r.name))
        return recs[:max(0, limit)]

    def recall_similar(self, text: str, k: int = 5,
                       min_score: float = 0.0) -> list[tuple[str, float]]:
        """Concepts closest in meaning to `text` (embedder) or in words (offline fallback)."""
        cands = [r for r in self._records.values() if isinstance(r, SemanticMemory)]
        if not cands or not text.strip():
            return []
        if self.embedder is not None:
            q = self._unit(self.embedder.embed([text])[0])
            scored = [(r.id, float(np.dot(q, self._vector(r)))) for r in cands]
        else:
            norm, toks = normalize_name(text), _tokens(text)
            scored = []
            for r in cands:
                name_sim = difflib.SequenceMatcher(None, norm, normalize_name(r.name)).ratio()
                other = _tokens(r.embedding_text) | _tokens(r.name)
                jac = len(toks & other) / len(toks | other) if toks | other else 0.0
                scored.append((r.id, max(name_sim, jac)))
        scored = [s for s in scored if s[1] >= min_score]
        scored.sort(key=lambda x: (-x[1], x[0]))
        return scored[:k]

    def _vector(self, r: SemanticMemory) -> np.ndarray:
        cached = self._vectors.get(r.id)
        if cached is None or cached[0] != r.embedding_text:
            cached = (r.embedding_text, self._unit(self.embedder.embed([r.embedding_text])[0]))
            self._vectors[r.id] = cached
        return cached[1]

    @staticmethod
    def _unit(v: np.ndarray) -> np.ndarray:
        v = np.asarray(v, dtype=np.float32)
        n = float(np.linalg.norm(v))
        return v / n if n > 0 else v

    # --- relationships -------------------------------------------------------------------------

    def relate(self, src_id: str, dst_id: str, rel_type: str, weight: float = 1.0,
               **meta: Any) -> None:
        for rid in (src_id, dst_id):
            self.get(rid)
        self._graph.add_edge(src_id, dst_id, rel_type, weight, **meta)

    def relationships(self, concept_id: str, rel_type: str | None = None) -> list[Edge]:
        return self._graph.edges(concept_id, rel_type)

    # --- consolidation -------------------------------------------------------------------------

    def consolidate(self, now: float | None = None, **kw: Any) -> ConsolidationReport:
        """Stale weak concepts are compressed (conf < 0.7) or pruned (never reinforced)."""
        now = self._clock() if now is None else now
        report = ConsolidationReport(self.name)
        prune, compress = [], []
        for rec in list(self._records.values()):
            idle = now - max(rec.created_at, rec.last_accessed)
            if rec.long_term or idle < self.max_age_s:
                continue
            if isinstance(rec, CompressedSemantic) or rec.reinforcement_count == 0:
                prune.append(rec.id)
            elif rec.confidence < 0.7:
                compress.append((rec.id, CompressedSemantic(
                    id=f'cs-{rec.id}', created_at=now, original_id=rec.id, name=rec.name,
                    category=rec.category, definition=rec.definition,
                    reinforcement_count=rec.reinforcement_count)))
        self.replace_many(compress)
        report.compressed = len(compress)
        self._remove_many(prune)
        for rid in prune:
            self._vectors.pop(rid, None)
        report.pruned = len(prune)
        report.edges_decayed = self._graph.decay(self.edge_decay)
        return report

    def stats(self) -> dict[str, Any]:
        s = super().stats()
        s['concepts'] = sum(1 for r in self._records.values() if isinstance(r, SemanticMemory))
        s['relationships'] = self._graph.edge_count()
        return s
