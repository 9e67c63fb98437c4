"""EC similarity: multi-modal scores, the faiss HNSW path against brute force, removal."""

import random

import numpy as np
import pytest

from maxim_memory.embedding import embedder_identity, HashingEmbedder
from maxim_memory.similarity import (EpisodeSimilarityIndex, IndexFileError,
                                     IndexMismatchError, structural_components,
                                     structural_hash)

MONDAY = 1704067200.0  # 2024-01-01 00:00 UTC
H = 3600.0
TOOLS = ['navigate', 'grasp', 'look', 'speak', 'track', 'search', 'wave', 'point']
OBJECTS = ['mug', 'cup', 'chair', 'table', 'door', 'ball', 'book', 'phone', 'plant', 'box']
PLACES = ['kitchen', 'hallway', 'office', 'garden', 'lab', 'lobby']


def synthetic(n, seed=0, start=0):
    rng = random.Random(seed)
    out = []
    for i in range(start, start + n):
        tool, place = rng.choice(TOOLS), rng.choice(PLACES)
        objs = rng.sample(OBJECTS, rng.randint(0, 3))
        ok = rng.random() < 0.7
        text = (f'saw {" and ".join(objs) or "nothing"} in the {place}; {tool} '
                f'{"succeeded" if ok else "failed"} (trial {rng.randint(0, 999)})')
        ctx = {'tool': tool, 'goal': f'{tool}_{place}', 'success': ok, 'objects': objs,
               'mode': 'active'}
        out.append((f'ep-{i}', text, ctx, MONDAY + i * 97.0))
    return out


def small_index(**kw):
    idx = EpisodeSimilarityIndex(HashingEmbedder(128), utc_offset_s=0, **kw)
    idx.add('mug-1', 'grasped the coffee mug on the kitchen table',
            {'tool': 'grasp', 'success': True, 'objects': ['mug', 'table']}, MONDAY + 9 * H)
    idx.add('mug-2', 'grasp of the coffee mug slipped',
            {'tool': 'grasp', 'success': False, 'objects': ['mug']}, MONDAY + 21 * H)
    idx.add('nav-1', 'navigation to the kitchen failed at the door',
            {'tool': 'navigate', 'success': False, 'objects': ['door']}, MONDAY + 9 * H)
    return idx


def test_search_ranks_by_combined_similarity_with_breakdown():
    idx = small_index()
    hits = idx.search('grasped the coffee mug', {'tool': 'grasp', 'objects': ['mug']}, k=3,
                      timestamp=MONDAY + 7 * 24 * H + 9 * H)
    assert [h.episode_id for h in hits][:2] == ['mug-1', 'mug-2']
    top = hits[0]
    assert set(top.breakdown) == {'semantic', 'structural', 'temporal', 'context'}
    assert top.breakdown['temporal'] == pytest.approx(1.0)  # same weekday and hour
    assert top.breakdown['context'] == pytest.approx(0.75)  # tool equal, objects Jaccard 1/2
    assert hits[0].score >= hits[1].score >= hits[2].score and 0 <= hits[2].score <= 1
    # only the modalities the query gives take part, weights renormalised over them
    sem_only = idx.search('navigation to the kitchen failed', k=1)[0]
    assert sem_only.episode_id == 'nav-1' and set(sem_only.breakdown) == {'semantic'}
    assert sem_only.score == pytest.approx(sem_only.breakdown['semantic'])
    by_ctx = idx.search('', {'tool': 'navigate'}, k=1)[0]
    assert by_ctx.episode_id == 'nav-1'


def test_temporal_modality_prefers_the_same_time_of_day():
    idx = small_index(weights={'temporal': 1.0})
    hits = idx.search('', None, k=3, timestamp=MONDAY + 14 * 24 * H + 21 * H)
    assert hits[0].episode_id == 'mug-2'


def test_structural_hash_and_components():
    a = {'tool': 'grasp', 'success': True, 'objects': ['mug', 'cup'], 'mode': 'active'}
    b = {'tool': 'Grasp', 'success': True, 'objects': ['ball', 'box'], 'mode': 'active'}
    c = {'tool': 'grasp', 'success': False, 'objects': ['mug'], 'mode': 'active'}
    assert structural_hash(a) == structural_hash(b)  # same shape, different objects
    assert structural_hash(a) != structural_hash(c)
    ca, cc = structural_components(a), structural_components(c)
    assert (ca == cc).sum() == 3  # tool, mode, and the absent people component
    assert structural_components(None).tolist() == [0] * 5
    idx = small_index()
    assert idx.signature('mug-1') == structural_hash(
        {'tool': 'grasp', 'success': True, 'objects': ['mug', 'table']})


def test_hnsw_search_matches_brute_force():
    idx = EpisodeSimilarityIndex(HashingEmbedder(128), utc_offset_s=0, exact_below=0,
                                 candidates=32)
    assert idx.add_many(synthetic(3000), batch_size=500) == 3000
    assert len(idx) == 3000
    recalls = []
    for _, text, ctx, ts in synthetic(30, seed=1, start=5000):
        for query in ((text, ctx, ts), (text, None, None)):
            approx = {h.episode_id for h in idx.search(*query[:2], k=10, timestamp=query[2])}
            exact = {h.episode_id for h in idx.exact_search(*query[:2], k=10,
                                                            timestamp=query[2])}
            recalls.append(len(approx & exact) / 10)
    assert np.mean(recalls) >= 0.95


def test_remove_replace_rebuild_and_search_episode():
    idx = EpisodeSimilarityIndex(HashingEmbedder(64), utc_offset_s=0, exact_below=0,
                                 candidates=16)
    items = synthetic(2400, seed=3)
    idx.add_many(items)
    gone = [eid for eid, *_ in items[:1200]]
    for eid in gone:
        assert idx.remove(eid)
    assert not idx.remove('never-there') and len(idx) == 1200
    stats = idx.stats()  # more than a quarter were tombstones: the index was rebuilt
    assert stats['rebuilds'] == 1 and stats['tombstones'] < 1200 and stats['episodes'] == 1200
    _, text, ctx, ts = items[5]
    hits = idx.search(text, ctx, k=20, timestamp=ts)
    assert len(hits) == 20 and not {h.episode_id for h in hits} & set(gone)
    keep_id, keep_text, keep_ctx, keep_ts = items[2000]
    like = idx.search_episode(keep_id, k=5)
    assert keep_id not in {h.episode_id for h in like} and len(like) == 5
    idx.add(keep_id, 'a completely different text about waving at a plant', {'tool': 'wave'},
            keep_ts)
    assert len(idx) == 1200
    v = idx.vector(keep_id)
    assert v.shape == (64,) and v.dtype == np.float32
    assert abs(float(np.linalg.norm(v)) - 1.0) < 1e-5
    assert idx.search('waving at a plant', k=1)[0].episode_id == keep_id
    assert idx.memory_bytes() > 1200 * 64 * 4


def test_empty_index_and_bad_input():
    idx = EpisodeSimilarityIndex(HashingEmbedder(32))
    assert idx.search('anything') == [] and idx.exact_search('anything') == []
    idx.add('a', 'text', None, MONDAY)
    with pytest.raises(ValueError):
        idx.search('', None)  # no modality at all
    with pytest.raises(ValueError):
        idx.search('text', k=-1)
    with pytest.raises(TypeError):
        idx.search('text', context='tool=grasp')
    with pytest.raises(ValueError):
        idx.add('', 'text', None, MONDAY)
    with pytest.raises(ValueError):
        idx.add('b', 'text', None, float('inf'))
    with pytest.raises(KeyError):
        idx.search_episode('missing')
    with pytest.raises(ValueError):
        EpisodeSimilarityIndex(HashingEmbedder(32), weights={'smell': 1.0})
    with pytest.raises(TypeError):
        EpisodeSimilarityIndex(object())


def _answers(idx, queries):
    return [[(h.episode_id, round(h.score, 9)) for h in idx.search(t, c, k=10, timestamp=ts)]
            for _, t, c, ts in queries]


def test_save_and_load_round_trip_without_re_embedding(tmp_path):
    idx = EpisodeSimilarityIndex(HashingEmbedder(64), utc_offset_s=0, exact_below=0,
                                 candidates=16)
    items = synthetic(1500, seed=4)
    idx.add_many(items)
    for eid, *_ in items[:40]:  # tombstones travel with the file
        idx.remove(eid)
    path = tmp_path / 'memory.db.ec.npz'
    assert idx.save(path) > 1500 * 64 * 4 and path.exists()
    assert not list(tmp_path.glob('*.tmp-*'))  # the atomic write left no temporary file

    class Counting(HashingEmbedder):
        """The same vectors, counting the texts it embeds."""

        texts = 0

        def embed(self, texts):
            Counting.texts += len(texts)
            return super().embed(texts)

    emb = Counting(64)
    assert embedder_identity(emb) == embedder_identity(HashingEmbedder(64))
    back = EpisodeSimilarityIndex.load(path, emb, utc_offset_s=0, exact_below=0,
                                       candidates=16)
    assert Counting.texts == 0  # nothing re-embedded
    assert len(back) == len(idx) == 1460 and back.stats()['tombstones'] == 40
    assert set(back.ids()) == set(idx.ids()) and items[0][0] not in back
    queries = synthetic(15, seed=9, start=9000)
    assert _answers(back, queries) == _answers(idx, queries)
    eid = items[700][0]
    assert back.signature(eid) == idx.signature(eid)
    assert np.array_equal(back.vector(eid), idx.vector(eid))
    assert [h.episode_id for h in back.search_episode(eid, k=5)] == \
        [h.episode_id for h in idx.search_episode(eid, k=5)]
    back.add('new-1', 'waved at the plant in the lobby', {'tool': 'wave'}, MONDAY)
    assert back.search('waved at the plant', k=1)[0].episode_id == 'new-1'
    assert back.search('', {'tool': 'wave'}, k=1)[0].breakdown['context'] == 1.0


def test_a_different_embedder_is_a_mismatch_and_the_file_stays(tmp_path):
    path = tmp_path / 'ec.npz'
    small_index().save(path)
    with pytest.raises(IndexMismatchError, match='dim'):
        EpisodeSimilarityIndex.load(path, HashingEmbedder(64))
    with pytest.raises(IndexMismatchError, match='embedder'):
        EpisodeSimilarityIndex.load(path, HashingEmbedder(128, char_ngrams=4))
    with pytest.raises(IndexMismatchError, match='hnsw_m'):
        EpisodeSimilarityIndex.load(path, HashingEmbedder(128), hnsw_m=16)
    assert path.exists()  # not corrupt: kept until the next save replaces it
    assert len(EpisodeSimilarityIndex.load(path, HashingEmbedder(128))) == 3
    with pytest.raises(FileNotFoundError):
        EpisodeSimilarityIndex.load(tmp_path / 'absent.npz', HashingEmbedder(128))


@pytest.mark.parametrize('damage', ['garbage', 'truncated', 'flipped', 'empty', 'foreign'])
def test_a_corrupt_or_foreign_index_file_is_moved_aside(tmp_path, damage):
    path = tmp_path / 'ec.npz'
    small_index().save(path)
    data = path.read_bytes()
    if damage == 'garbage':
        path.write_bytes(b'\x00not an index' * 300)
    elif damage == 'truncated':
        path.write_bytes(data[:len(data) // 2])
    elif damage == 'flipped':  # one byte inside the stored vectors: the zip CRC catches it
        pos = len(data) // 2
        path.write_bytes(data[:pos] + bytes([data[pos] ^ 0xFF]) + data[pos + 1:])
    elif damage == 'empty':
        path.write_bytes(b'')
    else:  # a valid .npz from something else
        np.savez(path, meta=np.frombuffer(b'{"magic": "other"}', dtype=np.uint8))
    with pytest.raises(IndexFileError) as err:
        EpisodeSimilarityIndex.load(path, HashingEmbedder(128))
    moved = err.value.moved_to
    assert not path.exists() and moved is not None and moved.exists()
    assert moved.name.startswith('ec.npz.corrupt-') and 'unreadable' in str(err.value)


def test_rename_keeps_the_vector_and_takes_the_new_context():
    idx = small_index(exact_below=0, candidates=2)
    v = idx.vector('mug-1')
    assert idx.rename('mug-1', 'cm-mug-1', {'tool': 'grasp', 'success': True,
                                            'objects': ['mug', 'table'], 'goal': 'tidy'})
    assert 'mug-1' not in idx and 'cm-mug-1' in idx and len(idx) == 3
    assert np.array_equal(idx.vector('cm-mug-1'), v)  # no re-embedding
    assert idx.search('grasped the coffee mug', k=1)[0].episode_id == 'cm-mug-1'
    assert idx.search('', {'goal': 'tidy'}, k=1)[0].episode_id == 'cm-mug-1'  # new posting
    assert idx.signature('cm-mug-1') == structural_hash(
        {'tool': 'grasp', 'success': True, 'objects': ['mug', 'table']})
    assert not idx.rename('absent', 'x')
    with pytest.raises(ValueError):
        idx.rename('mug-2', '')
    assert idx.rename('mug-2', 'nav-1')  # onto an existing id: that one is replaced
    assert len(idx) == 2 and idx.search('grasp of the coffee mug slipped',
                                        k=1)[0].episode_id == 'nav-1'
