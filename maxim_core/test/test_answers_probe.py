"""Replies built from what is known (answers.py) and the learned probe of what a person wants
(probe.py): what each source gives, how they are ranked, how they become candidates, and how
the probe's score reaches the choice as the term `understood`."""

import numpy as np
import pytest

from maxim_core.deliberation import answers, probe as pr, scorers
from maxim_core.deliberation.candidates import CandidateBuilder
from maxim_core.deliberation.choice import ChoiceConfig, RESULT_FRAME
from maxim_core.deliberation.grounding import Grounding, RecentAct
from maxim_core.deliberation.words import memory_content, result_words
from maxim_core.deliberation.chooser import Chooser
from maxim_core.llm.backend import ScriptedBackend
from maxim_core.tools.communication import RespondTool

OWN = tuple(RESULT_FRAME.format(tool=t) for t in ('respond', 'say', 'speak'))


def test_the_view_is_told_with_how_many_of_each():
    assert answers.view_sentence(['face', 'red object', 'face']) == \
        'I see 3 things: 2 faces and a red object.'
    assert answers.view_sentence(['blue object']) == 'I see 1 thing: a blue object.'
    assert answers.view_sentence([]) == ''


def test_every_source_gives_its_sentences_and_the_robots_own_words_are_none():
    g = Grounding(percept='A narrow hall. A sign hangs by the stairs.', heard=(
        'Ines says: "tell Omar the bus leaves at nine" Omar says: "any message for me?"'),
        objects=['green object'], people=['face'],
        recalled=['The bakery on Rua Augusta opens at seven.',
                  RESULT_FRAME.format(tool='respond') + 'I am a robot.'],
        recent=[RecentAct('read_note', {}, True, 'The sign reads: no entry after dark')],
        scene='A narrow hall. A sign hangs by the stairs.')
    found = answers.sources(g, memory_content, result_words, OWN)
    by = {}
    for text, source in found:
        by.setdefault(source, []).append(text)
    assert any('opens at seven' in t for t in by['memory'])
    assert not any('I am a robot' in t for texts in by.values() for t in texts)
    assert by['view'] == ['I see 2 things: a green object and a face.']
    assert by['read'] == ['The sign reads: no entry after dark']
    assert 'A sign hangs by the stairs.' in by['scene']
    assert by['heard'] == ['tell Omar the bus leaves at nine']     # not the newest line


def test_the_closest_sources_are_kept_and_without_a_sentence_model_one_of_each():
    found = [('the bus leaves at nine', 'heard'), ('I see 1 thing: a face.', 'view'),
             ('the bakery opens at seven', 'memory'), ('the museum shuts at five', 'memory')]

    def relate(text, phrases):
        return [1.0 if 'bakery' in p else 0.1 * i for i, p in enumerate(phrases)]
    best = answers.ranked(found, 'when does the bakery open', relate, keep=2)
    assert best[0] == ('the bakery opens at seven', 'memory', 1.0)
    assert len(best) == 2
    plain = answers.ranked(found, 'when does the bakery open', None, keep=5)
    assert [s for _, s, _ in plain] == ['heard', 'view', 'memory']
    assert answers.ranked(found, '', relate) == []


def test_replies_from_sources_are_candidates_with_their_source():
    g = Grounding(heard='The user says: "where did Jo park?"', someone_there=True,
                  addressed=True, answers=(('Jo parked on level 3.', 'memory', 0.8),),
                  reply_tool='respond')
    cands = CandidateBuilder(ChoiceConfig()).build([RespondTool()], g)
    built = [c for c in cands if 'answer' in c.sources]
    assert [(c.tool, c.args) for c in built] == [('respond', {'text': 'Jo parked on level 3.'})]
    assert 'memory' in built[0].sources


def _probe(dim, W=None, classes=('wait', 'reply', 'scene', 'other', 'track_target')):
    width = pr.N_TEXTS * dim + pr.N_FLAGS
    W = np.zeros((width, len(classes)), dtype=np.float32) if W is None else W
    return pr.Probe(classes, W, np.zeros(width), np.ones(width), 'test', dim,
                    {'lambda': 0.01})


def test_a_probe_round_trips_and_refuses_what_it_was_not_fitted_for(tmp_path):
    dim = 4
    p = _probe(dim, np.arange((pr.N_TEXTS * dim + pr.N_FLAGS) * 5, dtype=np.float32)
               .reshape(-1, 5) / 100)
    p.save(tmp_path / 'p.npz')
    q = pr.Probe.load(tmp_path / 'p.npz')
    assert q.embedder == 'test' and q.dim == dim and q.provenance == {'lambda': 0.01}
    assert np.array_equal(q.W, p.W) and q.classes == p.classes
    assert pr.Probe.load(tmp_path / 'none.npz') is None
    with pytest.raises(ValueError, match='weights of shape'):
        pr.Probe(p.classes, np.zeros((3, 5)), p.mean, p.scale, 'test', dim)
    with pytest.raises(ValueError, match='classes'):
        pr.Probe(('wait', 'reply'), np.zeros((p.W.shape[0], 2)), p.mean, p.scale, 'x', dim)
    with pytest.raises(ValueError, match='reads 4-d'):
        q.log_probs(np.ones(5, dtype=np.float32), {'wait'})
    (tmp_path / 'bad.npz').write_bytes(b'not a probe')
    with pytest.raises(ValueError, match='not a probe'):
        pr.Probe.load(tmp_path / 'bad.npz')


def test_classes_tell_waiting_a_reply_an_act_on_the_scene_a_known_tool_and_the_rest():
    classes = ('wait', 'reply', 'scene', 'other', 'track_target')
    speech = ('respond', 'say')
    assert pr.class_of(None, {}, [], classes, speech) == 'wait'
    assert pr.class_of('respond', {'text': 'Jo parked on level 3.'}, [], classes,
                       speech) == 'reply'
    assert pr.class_of('open_door', {}, ['door'], classes, speech) == 'scene'
    assert pr.class_of('track_target', {'target_label': 'red object'}, [], classes,
                       speech) == 'track_target'
    assert pr.class_of('glob', {'pattern': '*'}, [], classes, speech) == 'other'


def test_log_probabilities_are_over_the_offered_classes_only():
    dim = 2
    p = _probe(dim)
    lp = p.log_probs(np.zeros(pr.N_TEXTS * dim + pr.N_FLAGS), {'wait', 'reply'})
    assert set(lp) == {'wait', 'reply'}
    assert lp['wait'] == pytest.approx(np.log(0.5)) and lp['reply'] == pytest.approx(lp['wait'])


def _embed(texts):
    """A stand-in sentence model: one dimension per word of a small vocabulary."""
    vocab = ['red', 'green', 'look', 'wait', 'respond', 'track']
    out = np.zeros((len(texts), len(vocab)), dtype=np.float32)
    for i, t in enumerate(texts):
        for j, w in enumerate(vocab):
            out[i, j] = float(w in t.lower())
        n = np.linalg.norm(out[i])
        out[i] /= n if n else 1.0
    return out


def test_the_probes_reading_is_the_choices_understood_term():
    dim = 6
    classes = ('wait', 'reply', 'scene', 'other', 'track_target')
    W = np.zeros((pr.N_TEXTS * dim + pr.N_FLAGS, len(classes)), dtype=np.float32)
    W[2, classes.index('track_target')] = 3.0   # "look" in the newest words: an act of the head
    W[3, classes.index('wait')] = 3.0           # "wait" in them: keep still
    probe = _probe(dim, W, classes)
    weights = scorers.Weights({'understood': 1.0}, 'test')
    ch = Chooser(ScriptedBackend([]), ChoiceConfig(), weights=weights, embed=_embed,
                 probe=probe)
    from maxim_core.tools.robot import TrackTargetTool

    def reading(heard):
        g = Grounding(percept='I see red object, green object.',
                      objects=['red object', 'green object'],
                      heard=f'The user says: "{heard}"', someone_there=True, addressed=True)
        cands = ch.builder.build([TrackTargetTool(None)], g)
        ch.weigh(cands, g)
        track = max(c.features.get('understood', FLOOR) for c in cands if c.tool)
        still = max(c.features.get('understood', FLOOR) for c in cands if c.tool is None)
        return track, still
    track, still = reading('look at the green one')
    assert track > still
    track, still = reading('wait there')
    assert still > track
    plain = Chooser(ScriptedBackend([]), ChoiceConfig(), weights=weights, probe=probe)
    g = Grounding(heard='The user says: "look"', objects=['red object'])
    cands = plain.builder.build([TrackTargetTool(None)], g)
    plain.weigh(cands, g)
    assert all(c.features.get('understood', 0.0) == 0.0 for c in cands)


FLOOR = pr.FLOOR


def test_declining_and_asking_which_one_are_always_replies_to_choose_from():
    g = Grounding(objects=['red object', 'green object'], people=['face'])
    got = answers.standing(g)
    assert got[0] == (answers.DECLINE, 'decline', 0.0)
    assert got[1][0] == ('Which one do you mean: the red object, the green object or '
                         'the face?') and got[1][1] == 'clarify'
    assert [s for _, s, _ in answers.standing(Grounding(objects=['red object']))] == \
        ['decline']


def test_the_lines_memory_gave_are_replies_the_closest_first_when_the_weights_know_them():
    lines = ['A person said to me: "My name is Greta."', 'Later Yuki waved at someone.']
    g = Grounding(heard='The user says: "Who am I, do you recall?"', someone_there=True,
                  addressed=True, recalled=lines)

    def relate(text, phrases):
        return [0.6 if 'name' in p else 0.1 for p in phrases]
    say = RespondTool()
    knows = scorers.Weights({'answer_memory': 1.0}, 'test')
    flat = ScriptedBackend([], scorer=lambda p, c: -5.0)
    built = [c.args['text'] for c in Chooser(flat, weights=knows,
                                             relate=relate).candidates([say], g)
             if 'answer' in c.sources]
    assert built == lines                       # 'decline' is not weighed: not offered
    blind = scorers.Weights({'relevance': 1.0}, 'test')
    assert not [c for c in Chooser(flat, weights=blind,
                                   relate=relate).candidates([say], g)
                if 'answer' in c.sources]
