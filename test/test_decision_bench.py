"""The decision benchmark: its splits share no wording or name, its labels come from how a
situation is built, the fit finds what decides, and on the real model the fitted chooser puts
a right act first on held-out situations."""

import json
from pathlib import Path
import re
import sys

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / 'bench' / 'decisions'
sys.path.insert(0, str(BENCH))

import fit as fitting  # noqa: E402
import generate  # noqa: E402


@pytest.fixture(scope='module')
def situations():
    return generate.generate(per_family=12, seed=3)


def test_every_family_in_both_splits_with_right_and_wrong_acts(situations):
    fams = {(s['family'], s['split']) for s in situations}
    assert fams == {(f, sp) for f in generate.FAMILIES for sp in ('dev', 'test')}
    for s in situations:
        assert s['right'], s['id']
        assert not [p for p in s['right'] if p in s['wrong']], s['id']
    assert len({s['id'] for s in situations}) == len(situations)


def test_test_shares_no_template_and_no_name_with_dev(situations):
    generate.check_disjoint()
    dev_words = generate._vocab_words('dev')
    test_words = generate._vocab_words('test')
    for s in situations:
        text = json.dumps([s['percept'], s['heard'], s['recalled'], s['objects'],
                           s['entities'], s['right']]).lower()
        words = set(re.findall(r'[a-z0-9]+', text))
        other = test_words if s['split'] == 'dev' else dev_words
        assert not words & other, (s['id'], words & other)
    dev_t = set(generate.templates_of('dev'))
    assert not dev_t & set(generate.templates_of('test'))


def _items(rng, n, informative):
    """Situations whose right candidate is the one with the highest `informative` feature."""
    items = []
    for i in range(n):
        cands = []
        right = int(rng.integers(0, 5))
        for j in range(5):
            f = {'noise': float(rng.normal()), informative: float(j == right) + 0.1 *
                 float(rng.normal())}
            cands.append({'features': f, 'label': 'right' if j == right else 'wrong'})
        items.append({'cands': cands})
    return items


def test_the_fit_finds_the_feature_that_decides():
    rng = np.random.default_rng(0)
    train, held = _items(rng, 120, 'goal'), _items(rng, 60, 'goal')
    w, info = fitting.fit_weights(train, ['noise', 'goal'])
    assert w['goal'] > 5 * abs(w.get('noise', 0.0))
    assert fitting.top1(np.array([w.get('noise', 0.0), w['goal']]),
                        fitting.matrices(held, ['noise', 'goal'])) >= 0.95
    assert info['lambda'] in fitting.LAMBDAS


def test_the_fit_refuses_data_with_nothing_right():
    with pytest.raises(ValueError, match='no situation'):
        fitting.fit_weights([{'cands': [{'features': {'a': 1.0}, 'label': 'wrong'}]}], ['a'])


@pytest.mark.real_model
@pytest.mark.slow
def test_on_the_real_model_the_fitted_chooser_beats_the_hand_weights_on_test(tmp_path):
    """Three test-split situations of every family on gemma-3-270m: the fitted weights (the
    ones the robot loads, with the stance examples it ships) put a right act first in most,
    and in more than the hand weights and the model's likelihood alone, negations in words
    no dev situation has among them: what it was told to leave be is never what it acts on."""
    import run
    from maxim_core.deliberation import weights
    from maxim_core.llm.llama import LlamaCppBackend
    from maxim_core.llm.model import resolve_model
    picked = [s for s in generate.generate(per_family=3, seed=11) if s['split'] == 'test']
    from maxim_core.deliberation.stance import Stance
    backend = LlamaCppBackend(resolve_model(''), n_ctx=2048)
    try:
        # The robot's own parts: the sentence model and the stance examples it ships.
        items = run.featurise(picked, backend, run.sentence_relate(), Stance.load())
    finally:
        backend.close()
    fitted = run.judge(items, run.by_weights(dict(weights.Weights.load().w)))['overall']
    hand = run.judge(items, run.by_weights(
        dict(weights.Weights.hand(run.ChoiceConfig()).w)))['overall']
    likely = run.judge(items, run.by_likelihood)['overall']
    assert fitted['top1'] >= 0.75, fitted
    assert fitted['top1'] > hand['top1'] + 0.15 and fitted['top1'] > likely['top1'] + 0.25
    # Told to leave one thing be in words no dev situation has, it never acts on that thing.
    w = dict(weights.Weights.load().w)
    for it in items:
        if it['family'] == 'negation':
            chosen = run.pick(it, lambda c: sum(w.get(k, 0.0) * v
                                                for k, v in c['features'].items()))
            assert chosen['label'] != 'wrong', (it['id'], chosen['phrase'])


def test_the_models_scores_are_kept_and_reused_and_only_the_rest_is_asked(tmp_path):
    """A run keeps every score the model gave; a later run answers those from the file, opens
    the model only for what the file lacks, and gives the same numbers either way."""
    from maxim_core.llm.backend import ScriptedBackend
    from score_cache import CachedBackend, load_scores
    opened = []

    def model():
        opened.append(1)
        return ScriptedBackend([], scorer=lambda prompt, cont: -float(len(prompt + cont)))
    first = CachedBackend(model)
    a = first.score('Then I', [' open door.', ' knock door.'])
    first.save(tmp_path / 'run.scores.json')
    assert opened == [1] and first.misses == 2
    again = CachedBackend(model, load_scores(tmp_path / 'run.scores.json'))
    b = again.score('Then I', [' open door.', ' knock door.'])
    assert (b.logprobs, b.token_counts) == (a.logprobs, a.token_counts)
    assert opened == [1] and again.hits == 2 and again.misses == 0
    c = again.score('Then I', [' open door.', ' wait.'])       # one new: the model is asked
    assert opened == [1, 1] and again.misses == 1 and again.hits == 3   # for that one only
    assert c.logprobs == [a.logprobs[0], -float(len('Then I wait.'))]
    (tmp_path / 'bad.scores.json').write_text('[1, 2')
    with pytest.raises(ValueError, match='not a score file'):
        load_scores(tmp_path / 'bad.scores.json')


def test_a_tie_at_the_top_counts_as_the_share_of_right_candidates_in_it():
    """The chooser breaks a tie by the order the candidates came in, which says nothing: a
    tie of one right and two wrong counts a third, in the report and in the fit's CV."""
    import run
    item = {'cands': [{'label': 'wrong', 'features': {'a': 1.0}, 'tool': 'x'},
                      {'label': 'right', 'features': {'a': 1.0}, 'tool': 'y'},
                      {'label': 'wrong', 'features': {'a': 1.0}, 'tool': 'z'},
                      {'label': 'right', 'features': {'a': 0.0}, 'tool': 'w'}]}
    chosen, expect = run.by_weights({'a': 1.0})(item)
    assert chosen['tool'] == 'x' and expect == pytest.approx(1 / 3)
    assert run.by_weights({'a': -1.0})(item) == (item['cands'][3], None)
    X, valid, right = fitting.matrices([item], ['a'])
    assert fitting.top1(np.array([1.0]), (X, valid, right)) == pytest.approx(1 / 3)


def test_cross_validation_holds_out_some_of_every_familys_templates():
    """No fold holds out all of a family's templates (the fit would be measured on a family
    it never saw, and the penalty chosen by that luck)."""
    items = [{'family': fam, 'templates': [f'{fam}:{t}'],
              'cands': [{'label': 'right', 'features': {}}, {'label': 'wrong', 'features': {}}]}
             for fam in ('novelty', 'goal', 'request') for t in range(2) for _ in range(3)]
    for seed in range(5):
        folds = fitting.folds_of(items, 4, seed)
        for hold in folds:
            for fam in ('novelty', 'goal', 'request'):
                held = {items[i]['templates'][0] for i in hold if items[i]['family'] == fam}
                assert len(held) < 2, (seed, fam)
        assert sorted(i for f in folds for i in f) == list(range(len(items)))


def test_the_goal_family_names_things_as_the_worlds_do_half_the_time():
    """The scene says "gate", the tools and the world's thing another word of the same split,
    mapped by the aliases; the right and wrong acts follow the tools' names."""
    named = [s for s in generate.generate(per_family=36, seed=7)
             if s['family'] == 'goal' and s.get('aliases')]
    assert named
    for s in named:
        tools = {t['name'] for t in s['tools']}
        for word, other in s['aliases'].items():
            assert word != other and other in s['entities'] and word not in s['entities']
        for a in s['right'] + s['wrong']:
            assert a['tool'] is None or a['tool'] in tools, (s['id'], a['tool'])
