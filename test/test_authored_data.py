"""The authored data: every author's files pass the format check, the tiers are split by
author, the sealed batch round-trips in sealed form and is large enough, a moment becomes the
decision bench's situation, and the act/abstain figures fail a mind that only waits."""

import json
from pathlib import Path
import sys

import pytest

AUTHORED = Path(__file__).resolve().parents[1] / 'bench' / 'authored'
sys.path.insert(0, str(AUTHORED))

import tiers  # noqa: E402
import evaluate  # noqa: E402
import seal  # noqa: E402
import validate  # noqa: E402


def _moment(**kw) -> dict:
    m = {'id': 'x01-001', 'capability': 'request', 'goal': '', 'percept': '',
         'objects': ['red object', 'green object'], 'entities': [],
         'heard': [{'by': 'user', 'text': 'look at the green one'}], 'memory': [],
         'recent': [], 'tools': ['track_target', 'respond'],
         'right': [{'tool': 'track_target', 'args': {'target_label': 'green object'}}],
         'wrong': [{'tool': None}], 'why': 'asked'}
    m.update(kw)
    return m


def _write(folder: Path, moments: list[dict], scenarios: dict[str, str] = None) -> Path:
    folder.mkdir(parents=True)
    (folder / 'moments.jsonl').write_text(''.join(json.dumps(m) + '\n' for m in moments))
    if scenarios:
        (folder / 'scenarios').mkdir()
        for name, text in scenarios.items():
            (folder / 'scenarios' / name).write_text(text)
    return folder


def test_every_authored_folder_passes_the_format_check():
    problems = validate.Problems()
    counted = 0
    for aid in tiers.authors():
        folder = AUTHORED / aid
        if folder.is_dir():
            counted += sum(validate.check_dir(folder, problems))
    assert not problems.items, problems.items[:20]
    assert counted > 0


def test_the_check_names_what_is_wrong(tmp_path):
    bad = _moment(id='x01-002', tools=['track_target'],
                  right=[{'tool': 'fly_away', 'args': {}}],
                  wrong=[{'tool': 'track_target', 'args': {'colour': 'red'}}],
                  objects=['red ball'])
    folder = _write(tmp_path / 'x01', [_moment(), bad, _moment()])
    problems = validate.Problems()
    validate.check_dir(folder, problems)
    text = '\n'.join(problems.items)
    assert "unknown tool 'fly_away'" in text
    assert "has no argument 'colour'" in text
    assert "object 'red ball'" in text
    assert 'used twice' in text


def test_tiers_are_split_by_author_and_every_capability_is_in_train_and_validation():
    authors = tiers.authors()
    caps = tiers.capabilities()
    for tier in tiers.TIERS:
        assert {a['capability'] for a in authors.values() if a['tier'] == tier} == set(caps)
    train = {m['author'] for m in tiers.load_moments('train')}
    validation = {m['author'] for m in tiers.load_moments('validation')}
    assert not train & validation
    for m in tiers.load_moments('validation'):
        assert authors[m['author']]['tier'] == 'validation'


def test_sealing_round_trips_deletes_the_plain_folder_and_hides_the_words(
        tmp_path, monkeypatch):
    monkeypatch.setattr(seal, 'SEALED', tmp_path / 'sealed')
    secret = 'zanzibarquokka'
    folder = _write(tmp_path / 'x02', [_moment(id='x02-001', goal=f'Help {secret}.')])
    assert seal.main([str(folder), '--batch', 'b1']) == 0
    assert not folder.exists()
    packed = (tmp_path / 'sealed' / 'b1' / 'x02.sealed').read_text()
    assert packed.startswith(seal.HEADER)
    assert secret not in packed
    assert seal.decode(packed)['moments'][0]['goal'] == f'Help {secret}.'
    with pytest.raises(ValueError):
        seal.decode('plain text\n')


def test_the_sealed_batch_holds_what_the_issue_asks_for():
    folder = tiers.SEALED / 'issue-42'
    if not folder.is_dir():
        pytest.skip('no sealed batch yet')
    moments, scenarios = tiers.sealed_batch('issue-42')
    assert len(moments) >= 600
    assert len(scenarios) >= 150
    sealed_authors = {m['author'] for m in moments}
    tier_of = {a: r['tier'] for a, r in tiers.authors().items()}
    assert all(tier_of.get(a) == 'sealed' for a in sealed_authors)


def test_a_moment_becomes_the_situation_the_decision_bench_reads():
    m = _moment(objects=['face', 'red object'],
                heard=[{'by': 'Ravi', 'text': 'watch the red one', 'after_acts': 0},
                       {'by': 'user', 'text': 'no, stop'}],
                recent=[{'tool': 'track_target', 'args': {'target_label': 'red object'},
                         'success': True, 'result': 'tracking'}],
                tools=['track_target', 'open_door', 'unlock_door'])
    m['author'], m['tier'] = 'x01', 'train'
    s = tiers.to_situation(m)
    assert s['heard'] == 'Ravi says: "watch the red one" The user says: "no, stop"'
    assert s['people'] == ['face'] and s['objects'] == ['red object']
    assert s['acts_since_heard'] == 0          # the newest line came after the act
    unlock = next(t for t in s['tools'] if t['name'] == 'unlock_door')
    assert unlock['scene'] and unlock['secret'] == 'code' and 'code' in unlock['params']
    assert s['needs_act']
    m2 = dict(m, heard=[{'by': 'user', 'text': 'watch it', 'after_acts': 0}],
              right=[{'tool': None}])
    s2 = tiers.to_situation(m2)
    assert s2['acts_since_heard'] == 1 and not s2['needs_act']


def _item(family, needs_act, labels):
    return {'family': family, 'needs_act': needs_act,
            'cands': [{'tool': None if lab == 'wait' else 't', 'label': r, 'likelihood': 0.0,
                       'features': {}} for lab, r in labels]}


def test_a_mind_that_only_waits_fails_the_act_abstain_figures():
    items = [_item('request', True, [('act', 'right'), ('wait', 'wrong')])] * 8 + \
        [_item('waiting', False, [('act', 'wrong'), ('wait', 'right')])] * 2

    def waits(it):
        return next(c for c in it['cands'] if c['tool'] is None), None

    def acts(it):
        return next(c for c in it['cands'] if c['tool'] is not None), None
    w = evaluate.figures(items, waits)['overall']
    assert w['act_accuracy'] == 0 and w['abstention'] == 1 and w['only_waits']
    assert w['harmonic_mean'] == 0
    a = evaluate.figures(items, acts)['overall']
    assert a['act_accuracy'] == 1 and a['abstention'] == 0 and not a['only_waits']
    assert a['top1'] == 0.8
