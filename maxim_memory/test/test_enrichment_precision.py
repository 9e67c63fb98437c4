"""Enrichment precision on the labelled pairs of bench/cognition (the benchmark's own code,
run on the sentence model): a relevant section for >= 90% of the related pairs, for <= 10% of
the unrelated ones; the word-hashing fallback, measured the same way, finds no paraphrase."""

import importlib.util
from pathlib import Path
import sys

import pytest

from maxim_memory.embedding import HashingEmbedder, SentenceEmbedder
from maxim_memory.relevance import content_words

BENCH = Path(__file__).resolve().parents[2] / 'bench' / 'cognition' / 'precision.py'


@pytest.fixture(scope='module')
def precision():
    spec = importlib.util.spec_from_file_location('cognition_precision', BENCH)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # its dataclasses look their module up
    try:
        spec.loader.exec_module(mod)
        yield mod
    finally:
        del sys.modules[spec.name]


@pytest.fixture(scope='module')
def pairs(precision):
    return precision.load_pairs()


def test_the_labelled_set_is_what_it_says(precision, pairs):
    kinds = [p['kind'] for p in pairs]
    assert len(pairs) >= 60
    assert 0.4 <= kinds.count('unrelated') / len(pairs) <= 0.6
    assert kinds.count('paraphrase') >= 12
    for p in pairs:
        memory = set(content_words(precision.to_episode(p, 0.0).text()))
        shared = set(content_words(p['percept'])) & memory
        if p['kind'] == 'paraphrase':
            assert not shared, (p['id'], shared)  # paraphrases share no content word
        elif p['kind'] == 'lexical':
            assert shared, p['id']


def test_bad_pairs_are_a_clear_error(precision, tmp_path):
    bad = tmp_path / 'pairs.jsonl'
    bad.write_text('{"id": "x", "kind": "unrelated", "related": true, "percept": "a", '
                   '"memory": {"narrative": "b"}}\n')
    with pytest.raises(precision.PairsError, match='pairs.jsonl:1'):
        precision.load_pairs(bad)


def test_sentence_model_meets_the_precision_goals(precision, pairs, tmp_path):
    hub = precision.build_hub(SentenceEmbedder(), str(tmp_path), pairs)
    try:
        res = precision.evaluate(hub, pairs)
    finally:
        hub.close(end_session=False)
    assert res.rates['related'] >= precision.GOAL_RELATED, res.misses
    assert res.rates['unrelated'] <= precision.GOAL_UNRELATED, res.false_alarms
    assert res.rates['para_recall5'] >= 0.9
    assert res.rates['unrelated_own'] == 0.0


def test_hashing_finds_shared_words_but_no_paraphrase(precision, pairs, tmp_path):
    hub = precision.build_hub(HashingEmbedder(), str(tmp_path), pairs)
    try:
        res = precision.evaluate(hub, pairs)
    finally:
        hub.close(end_session=False)
    lexical = sum(1 for p in pairs if p['kind'] == 'lexical')
    assert res.rates['related_kw'] * res.counts['related'] >= 0.9 * lexical
    assert res.rates['paraphrase'] == 0.0
    assert res.rates['unrelated'] <= precision.GOAL_UNRELATED, res.false_alarms
