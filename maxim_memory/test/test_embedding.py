"""Embedders: the hashing fallback, and llama.cpp embeddings of the embedded model."""

import numpy as np
import pytest

from maxim_memory.embedding import (Embedder, EmbedderError, HashingEmbedder, l2_normalise,
                                    LlamaEmbedder)

MUG = 'grasped the coffee mug'
CUP = 'picked up a cup of coffee'
NAV = 'navigation to the kitchen failed'


def test_hashing_embedder_is_deterministic_and_normalised():
    e = HashingEmbedder(dim=64)
    assert isinstance(e, Embedder) and e.dim == 64
    m = e.embed([MUG, CUP, NAV, '', MUG])
    assert m.shape == (5, 64) and m.dtype == np.float32
    norms = np.linalg.norm(m, axis=1)
    assert norms[[0, 1, 2, 4]] == pytest.approx(1.0, abs=1e-5)
    assert norms[3] == 0.0  # an empty text has no direction
    assert np.array_equal(m[0], m[4])
    assert np.array_equal(HashingEmbedder(dim=64).embed([MUG])[0], m[0])  # no per-process salt
    assert e.embed([]).shape == (0, 64)


def test_hashing_embedder_matches_shared_words_and_spellings():
    e = HashingEmbedder()
    a, b, c = e.embed(['navigate to the kitchen', 'navigation into the kitchen',
                       'wave at the red ball'])
    assert a @ b > a @ c and a @ b > 0.3


def test_bad_input():
    with pytest.raises(TypeError):
        HashingEmbedder().embed('not a list')
    with pytest.raises(TypeError):
        HashingEmbedder().embed([1, 2])
    with pytest.raises(ValueError):
        HashingEmbedder(dim=2)
    with pytest.raises(EmbedderError):
        LlamaEmbedder('/nonexistent/model.gguf')


def test_l2_normalise_keeps_zero_rows():
    m = l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert m.dtype == np.float32
    np.testing.assert_allclose(m, [[0.6, 0.8], [0.0, 0.0]], rtol=1e-6)


@pytest.fixture(scope='module')
def llama():
    return LlamaEmbedder.embedded()


@pytest.mark.real_model
def test_llama_embedder_on_the_embedded_model(llama):
    assert isinstance(llama, Embedder) and llama.dim == 640
    m = llama.embed([MUG, CUP, NAV, ''])
    assert m.shape == (4, 640) and m.dtype == np.float32
    assert np.linalg.norm(m[:3], axis=1) == pytest.approx(1.0, abs=1e-5)
    assert not m[3].any()
    assert m[0] @ m[1] > m[0] @ m[2] + 0.1  # meaning, not shared words: no word in common
    again = llama.embed([MUG])[0]
    assert again @ m[0] > 0.999
    long = llama.embed(['the robot looked around the room again and again ' * 200])
    assert np.linalg.norm(long[0]) == pytest.approx(1.0, abs=1e-5)  # truncated, not failed
