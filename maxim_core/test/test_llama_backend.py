"""LlamaCppBackend on the real embedded model: streaming, stops, grammars, counts, reuse."""

import json
import threading

import jsonschema
import pytest

from maxim_core.llm.backend import (BAD_REQUEST, LLMError, STOP_CANCELLED, STOP_EOS,
                                    STOP_LENGTH)
from maxim_core.llm.llama import GrammarCompileError, LlamaCppBackend, render_plain_chat
from maxim_core.llm.model import resolve_model

pytestmark = pytest.mark.real_model

STABLE = ('You are Maxim, a small robot head with a camera on a pan and tilt neck. '
          'You look at what moves, you remember faces, and you think before you act. ') * 12


@pytest.fixture(scope='module')
def backend():
    b = LlamaCppBackend(resolve_model(), n_ctx=1024)
    yield b
    b.close()


def test_tokenize_uses_the_model_vocabulary(backend):
    tokens = backend.tokenize('hello robot')
    assert 0 < len(tokens) < 6 and all(isinstance(t, int) for t in tokens)
    assert backend.tokenize('hello robot', add_bos=True)[1:] == tokens


def test_streaming_pieces_make_the_text_and_length_stops(backend):
    pieces = []
    c = backend.complete('The robot looked at', max_tokens=12, temperature=0.0,
                         on_token=pieces.append)
    assert c.stop_reason == STOP_LENGTH and c.completion_tokens == 12
    assert ''.join(pieces) == c.text and c.text
    assert c.prompt_tokens == len(backend.tokenize('The robot looked at', add_bos=True))
    assert 0 < c.ttft_s <= c.total_s


def test_greedy_is_deterministic_and_seeds_repeat(backend):
    # Same KV-cache state, same answer (a different split of the prompt evaluation may
    # round differently and flip a near tie, so the first call only sets the state).
    backend.complete('Once upon a time', max_tokens=8, temperature=0.0)
    a = backend.complete('Once upon a time', max_tokens=8, temperature=0.0)
    b = backend.complete('Once upon a time', max_tokens=8, temperature=0.0)
    assert a.text == b.text and a.cached_tokens == b.cached_tokens > 0
    c = backend.complete('Once upon a time', max_tokens=8, temperature=0.9, seed=7)
    d = backend.complete('Once upon a time', max_tokens=8, temperature=0.9, seed=7)
    assert c.text == d.text


def test_stop_sequence_cuts_and_is_reported(backend):
    pieces = []
    c = backend.complete('Say:', max_tokens=20, grammar='root ::= "abc STOP def"',
                         stop=['STOP'], on_token=pieces.append)
    assert c.text == 'abc ' and c.stop_reason == STOP_EOS and c.stop_sequence == 'STOP'
    assert ''.join(pieces) == 'abc '


def test_cancel_from_on_token(backend):
    seen = []
    c = backend.complete('Count: one, two, three,', max_tokens=50, temperature=0.0,
                         on_token=lambda p: seen.append(p) or len(seen) < 3)
    assert c.stop_reason == STOP_CANCELLED and c.completion_tokens <= 4 and len(seen) == 3


def test_json_schema_output_validates(backend):
    schema = {'type': 'object', 'properties': {'name': {'type': 'string', 'maxLength': 20},
                                               'age': {'type': 'integer'}},
              'required': ['name', 'age']}
    c = backend.complete('A person:', max_tokens=60, temperature=0.8, seed=1,
                         json_schema=schema)
    jsonschema.validate(json.loads(c.text), schema)
    assert backend.grammar_for(json_schema=schema) is backend.grammar_for(json_schema=schema)


def test_bad_requests_are_typed(backend):
    with pytest.raises(GrammarCompileError) as info:
        backend.complete('x', grammar='root ::= undefined-rule')
    assert info.value.code == BAD_REQUEST
    for kwargs in ({'temperature': -1}, {'top_p': 0}, {'max_tokens': 0}):
        with pytest.raises(LLMError) as info:
            backend.complete('x', **kwargs)
        assert info.value.code == BAD_REQUEST
    with pytest.raises(LLMError, match='context holds'):
        backend.complete('word ' * 1200, max_tokens=4)


def test_stable_prefix_is_reused_from_the_kv_cache(backend):
    n_stable = len(backend.tokenize(STABLE, add_bos=True))
    backend.complete('Unrelated text first.', max_tokens=1, temperature=0.0)
    first = backend.complete(STABLE + 'A ball rolls left.', max_tokens=2, temperature=0.0)
    second = backend.complete(STABLE + 'A person waves.', max_tokens=2, temperature=0.0)
    assert first.cached_tokens < 5
    assert second.cached_tokens >= n_stable - 1
    assert second.prompt_tokens - second.cached_tokens < 10


def test_concurrent_calls_are_serialised(backend):
    results, errors = [], []

    def call(prompt):
        try:
            results.append(backend.complete(prompt, max_tokens=4, temperature=0.0).text)
        except LLMError as exc:
            errors.append(exc)

    threads = [threading.Thread(target=call, args=(p,)) for p in ('Red', 'Blue', 'Green')]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and len(results) == 3


def test_chat_without_template_renders_plain_turns(backend):
    assert backend.chat_template == ''   # gemma-3-270m is a base model
    text = backend.format_chat([{'role': 'system', 'content': 'Be brief.'},
                                {'role': 'user', 'content': 'Hi'}])
    assert text == 'Be brief.\nUser: Hi\nAssistant:'
    with pytest.raises(LLMError):
        render_plain_chat([{'role': 'robot', 'content': 'x'}])


def test_closed_backend_is_unavailable():
    b = LlamaCppBackend(resolve_model(), n_ctx=256)
    b.close()
    with pytest.raises(LLMError) as info:
        b.complete('x', max_tokens=1)
    assert info.value.code == 'unavailable'


def test_an_avoided_continuation_is_left_at_its_first_token(backend):
    prompt = 'The robot looked at the table and said: I want to'
    first = backend.complete(prompt, max_tokens=8, temperature=0.0)
    word = first.text.split()[0]
    again = backend.complete(prompt, max_tokens=8, temperature=0.0, avoid=[first.text])
    assert again.text.split()[0] != word, (first.text, again.text)
    # Without it, the same answer again: the ban is per call.
    assert backend.complete(prompt, max_tokens=8, temperature=0.0).text == first.text
