"""The prompt builder: stable part first, budgets in model tokens, priority dropping."""

import pytest

from maxim_core.llm.backend import ScriptedBackend
from maxim_core.prompt.builder import (identity_section, PFC_PREAMBLE, PromptBudgetError,
                                       PromptBuilder)
from maxim_core.prompt.sections import Priority, Section
from maxim_core.prompt.tools import ToolSpec

TOOLS = [ToolSpec('look_at', 'Turn the head.', {'pan': 'number', 'tilt': 'number'}),
         ToolSpec('speak', 'Say something.', {'text': 'string'})]


def count(text):
    return len(ScriptedBackend([]).tokenize(text))


def builder(**kw):
    return PromptBuilder(count, **kw)


def words(n, w='word'):
    return ' '.join([w] * n)


def test_stable_part_comes_first_and_is_identical_across_cycles():
    b = builder(mode_context='You may read files in the sandbox.')
    one = b.build(b.deliberation_sections('a person waves', enrichment='- Memory: waved'),
                  4000, tools=TOOLS)
    two = b.build(b.deliberation_sections('a person waves',
                                          transcript='[Cycle 1] You thought: hello'),
                  4000, tools=TOOLS)
    assert one.included[:6] == ['identity', 'pfc_preamble', 'rules', 'tools', 'mode_context',
                                'response_format']
    assert one.included[-1] == 'cue' and 'percept' in one.included
    assert one.stable_text == two.stable_text
    assert one.text.startswith(one.stable_text) and two.text.startswith(two.stable_text)
    # The percept is the same in both cycles: it belongs to the common prefix too.
    common = next(i for i, (a, c) in enumerate(zip(one.text, two.text)) if a != c)
    assert one.text.index('What you perceive now: a person waves') < common
    assert one.stable_tokens == count(one.stable_text)
    assert one.tokens == count(one.text) and not one.dropped


def test_lowest_priority_dropped_first_and_critical_kept():
    b = builder(mode_context=words(50, 'mode'))
    sections = b.deliberation_sections('the percept', context_pool=words(50, 'pool'),
                                       transcript=words(50, 'memo'))
    full = b.build(sections, 10000, tools=TOOLS).tokens
    # Room for everything but the mode context (NICE_TO_HAVE) only.
    p = b.build(sections, full - 10, tools=TOOLS)
    assert p.dropped == ['mode_context'] and p.tokens <= full - 10
    # Tighter: the context pool (NORMAL) goes next, the transcript (IMPORTANT) survives.
    p = b.build(sections, full - 60, tools=TOOLS)
    assert p.dropped == ['mode_context', 'context_pool'] and 'transcript' in p.included
    p = b.build(sections, full - 110, tools=TOOLS)
    assert p.dropped[:3] == ['mode_context', 'context_pool', 'transcript']
    for name in ('identity', 'pfc_preamble', 'rules', 'response_format', 'percept', 'cue'):
        assert name in p.included
    assert p.tokens <= full - 110


def test_at_equal_priority_the_changing_section_goes_before_the_stable_one():
    b = builder(mode_context=words(20, 'mode'))
    extra = Section('scene', words(20, 'scene'), Priority.NICE_TO_HAVE)
    sections = [extra] + b.deliberation_sections('p')
    full = b.build(sections, 10000).tokens
    assert b.build(sections, full - 5).dropped == ['scene']


def test_identity_is_never_dropped_and_carries_the_mode_blocks():
    ident = identity_section(simulation=True, interactive=True)
    assert 'SIMULATION ENVIRONMENT' in ident.text and 'INTERACTIVE MODE' in ident.text
    assert ident.priority == Priority.CRITICAL and ident.stable
    plain = identity_section()
    assert 'SIMULATION ENVIRONMENT' not in plain.text and 'INTERACTIVE MODE' not in plain.text
    b = builder(identity=ident, mode_context=words(30))
    sections = b.deliberation_sections('p', context_pool=words(30, 'x'))
    minimal = b.build(sections, 10000, tools=TOOLS).tokens - 60 - count(
        b.stable_sections(TOOLS)[3].text) - 2
    p = b.build(sections, minimal + 2, tools=TOOLS)
    assert 'identity' in p.included and 'SIMULATION ENVIRONMENT' in p.text
    assert set(p.dropped) == {'mode_context', 'context_pool', 'tools'}
    with pytest.raises(ValueError):
        PromptBuilder(count, identity=Section('identity', 'me', Priority.IMPORTANT))


def test_critical_over_budget_is_a_typed_error():
    b = builder()
    with pytest.raises(PromptBudgetError) as err:
        b.build(b.deliberation_sections(words(500)), 300)
    assert err.value.budget == 300 and err.value.tokens > 300
    assert 'percept' in str(err.value)
    with pytest.raises(PromptBudgetError):
        b.build([], 0)


def test_budget_is_counted_with_the_given_tokenizer_not_characters():
    # A tokenizer where one long word is many tokens: the builder must trust it.
    def heavy(text):
        return sum(1 + len(w) // 2 for w in text.split())
    b = PromptBuilder(heavy)
    sections = b.deliberation_sections('x' * 400, context_pool='short pool')
    need = b.build(sections, 100000).tokens
    assert need == heavy(b.build(sections, 100000).text)
    p = b.build(sections, need - 1)
    assert p.dropped and p.tokens <= need - 1 and heavy(p.text) == p.tokens


def test_pfc_preamble_frames_private_inner_thought():
    b = builder()
    text = b.build(b.deliberation_sections('p'), 4000).text
    assert PFC_PREAMBLE in text
    assert 'private' in PFC_PREAMBLE and 'first person' in PFC_PREAMBLE


def test_sections_validate_their_input():
    with pytest.raises(ValueError):
        Section('', 'text')
    with pytest.raises(TypeError):
        Section('x', None)
    assert Section('x', 'y', 3).priority == Priority.IMPORTANT
    assert Section('x', '  ').empty
    with pytest.raises(TypeError):
        PromptBuilder(None)
    b = builder()
    with pytest.raises(ValueError):
        b.build([Section('percept', 'a'), Section('percept', 'b')], 4000)
