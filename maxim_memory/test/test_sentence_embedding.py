"""all-MiniLM-L6-v2 in numpy: tokenizer ids, known similarities, batching, the EC's identity.

The reference ids were produced by the `tokenizers` library (0.23.3) from the package's own
tokenizer.json; the reference similarities are sentence-transformers' published quickstart
values for this model (0.6660, 0.1046, 0.1411).
"""

import numpy as np
import pytest

from maxim_memory import minilm
from maxim_memory.embedding import (EmbedderError, embedder_identity, HashingEmbedder,
                                    make_embedder, SentenceEmbedder)
from maxim_memory.similarity import EpisodeSimilarityIndex, IndexMismatchError


@pytest.fixture(scope='module')
def emb():
    return SentenceEmbedder()


def cos(e, a, b):
    v = e.embed([a, b])
    return float(v[0] @ v[1])


REFERENCE_IDS = {
    'hello world': [101, 7592, 2088, 102],
    'unaffable': [101, 14477, 20961, 3468, 102],
    'Héllo Wörld, naïve café!': [101, 7592, 2088, 1010, 15743, 7668, 999, 102],
    'I see 1 face: Maria (#2).': [101, 1045, 2156, 1015, 2227, 1024, 3814, 1006, 1001, 1016,
                                  1007, 1012, 102],
    'look_at(pan=30) failed: pan limit': [101, 2298, 1035, 2012, 1006, 6090, 1027, 2382, 1007,
                                          3478, 1024, 6090, 5787, 102],
    "東京 robot's\tarm": [101, 1879, 1755, 8957, 1005, 1055, 2849, 102],
    'xqzjvvkw': [101, 1060, 4160, 2480, 3501, 2615, 2615, 2243, 2860, 102],
}


def test_tokenizer_ids_match_the_reference_tokenizer(emb):
    tok = emb._model.tokenizer
    for text, ids in REFERENCE_IDS.items():
        assert tok.encode(text) == ids, text
    assert tok.vocab['hello'] == 7592 and tok.vocab['[CLS]'] == 101
    long = tok.encode('word ' * 1000)
    assert len(long) == 256 and long[0] == 101 and long[-1] == 102  # max_seq_length


def test_known_similarities_of_the_published_model(emb):
    v = emb.embed(['The weather is lovely today.', "It's so sunny outside!",
                   'He drove to the stadium.'])
    sims = v @ v.T
    assert sims[0, 1] == pytest.approx(0.6660, abs=2e-3)
    assert sims[0, 2] == pytest.approx(0.1046, abs=2e-3)
    assert sims[1, 2] == pytest.approx(0.1411, abs=2e-3)
    assert np.allclose(np.linalg.norm(v, axis=1), 1.0, atol=1e-5)


def test_paraphrases_close_unrelated_far(emb):
    assert cos(emb, 'A man is eating food.', 'A man is eating a piece of bread.') > 0.7
    assert cos(emb, 'Someone is knocking at the entrance.', 'A visitor rapped on the front '
               'door.') > 0.45
    assert cos(emb, 'The cat sleeps on the sofa.', 'The printer jammed on page two.') < 0.2


def test_batches_equal_single_texts_and_empty_is_zero(emb):
    texts = ['a short one', 'a much longer sentence about the red mug on the kitchen table',
             '', 'Sarah says hello']
    batch = SentenceEmbedder(batch_size=3, cache_size=0).embed(texts)
    for i, t in enumerate(texts):
        assert np.allclose(batch[i], emb.embed([t])[0], atol=1e-5)
    assert not batch[2].any()
    with pytest.raises(TypeError):
        emb.embed('not a list')


def test_percept_scaffolding_is_not_embedded(emb):
    a = 'I see 1 object: a bicycle, to my right, new. I am looking at the bicycle (#4) for 2 s.'
    b = 'I see 1 object: a red mug, straight ahead, new. I am looking at the mug (#1) for 3 s.'
    assert cos(emb, a, b) < 0.4  # as alike as 'a bicycle' and 'a red mug', not as templates
    assert cos(emb, a, 'a bicycle') > 0.9


def test_identity_rebuilds_an_index_of_another_embedder(emb, tmp_path):
    ident = embedder_identity(emb)
    assert ident.startswith('sentence:all-MiniLM-L6-v2:') and 'dim=384' in ident
    idx = EpisodeSimilarityIndex(emb)
    idx.add_many([('e1', 'Sarah made tea in the kitchen', {'tool': 'speak'}, 1e9),
                  ('e2', 'the ball rolled under the sofa', {'tool': 'look_at'}, 1e9 + 60)])
    path = tmp_path / 'ec.npz'
    idx.save(path)
    back = EpisodeSimilarityIndex.load(path, SentenceEmbedder())
    assert back.search('someone brewed a hot drink', k=1)[0].episode_id == 'e1'
    with pytest.raises(IndexMismatchError):
        EpisodeSimilarityIndex.load(path, HashingEmbedder())


def test_missing_package_falls_back_to_hashing_with_a_warning(tmp_path):
    missing = tmp_path / 'model.zip'
    with pytest.raises(EmbedderError, match='cannot read the sentence model'):
        SentenceEmbedder(missing)
    warnings = []
    got = make_embedder('sentence', str(missing), warn=warnings.append)
    assert isinstance(got, HashingEmbedder)
    assert len(warnings) == 1 and 'FALLING BACK to word hashing' in warnings[0]
    with pytest.raises(EmbedderError):
        make_embedder('sentence', str(missing), fallback=False)
    with pytest.raises(ValueError, match='sentence'):
        make_embedder('word2vec')
    assert isinstance(make_embedder('sentence'), SentenceEmbedder)


def test_a_corrupt_model_zip_is_a_clear_error(tmp_path):
    bad = tmp_path / 'model.zip'
    bad.write_bytes(b'not a zip at all')
    with pytest.raises(minilm.ModelUnavailableError, match='BadZipFile'):
        minilm.MiniLM.load(bad)


def test_gelu_uses_an_accurate_erf():
    import math
    x = np.linspace(-6, 6, 241).astype(np.float64)
    want = np.array([math.erf(v) for v in x])
    assert np.max(np.abs(minilm._erf(x) - want)) < 2e-7
