"""Multi-cycle deliberation on a scripted backend: cycles, convergence, schema of the active
tools, transcript budget, typed failure outcomes, energy, cancel and the thought stream."""

import json

import jsonschema
import pytest

from maxim_core.deliberation.answer import decision_schema, parse_answer, tool_arg_schemas
from maxim_core.deliberation.cycles import DeliberationConfig, Deliberator
from maxim_core.deliberation.thoughts import (CONVERGED, CYCLE_CAP, fit_transcript, KIND_STATUS,
                                              OUT_CANCELLED, OUT_MODEL_ERROR, OUT_TIMEOUT,
                                              OUT_UNPARSABLE, READY, STATUS_CANCELLED,
                                              STATUS_GATED, STATUS_MODEL_ERROR, STATUS_OK,
                                              STATUS_TIMEOUT, STATUS_UNPARSABLE, TranscriptEntry)
from maxim_core.deliberation.energy import EnergyBudget
from maxim_core.deliberation.enrichment import BioEnrichmentPipeline
from maxim_core.deliberation.render import render_thought_stream
from maxim_core.llm.backend import BAD_REQUEST, LLMError, MODEL_ERROR, ScriptedBackend, TIMEOUT
from maxim_core.llm.grammar import deliberation_grammar
from maxim_core.prompt.tools import ToolSpec

LOOK = ToolSpec('look_at', 'Turn the head.', {'pan': 'number', 'tilt': 'number'})
SPEAK = ToolSpec('speak', 'Say something.', {'text': 'string'})
TRACK = ToolSpec('track_target', 'Follow a target.', {'target': 'string'})
PERCEPT = 'A person in a red shirt waves at you from the door.'


def answer(reasoning, ready=False, action=None):
    return json.dumps({'reasoning': reasoning, 'ready_to_act': ready, 'action': action})


class Clock:
    def __init__(self, step=0.0):
        self.t, self.step = 0.0, step

    def __call__(self):
        self.t += self.step
        return self.t


def make(script, n_ctx=4096, enrichment=None, clock=None, **cfg):
    clock = clock or Clock()
    backend = ScriptedBackend(script, n_ctx=n_ctx, clock=clock)
    config = DeliberationConfig(**{'max_tokens': 64, **cfg})
    return backend, Deliberator(backend, enrichment=enrichment, config=config, clock=clock)


@pytest.fixture
def memory():
    asked = []

    def hippocampus(text):
        asked.append(text)
        return 'A person waved at you yesterday\nYou greeted them'

    pipe = BioEnrichmentPipeline({'episodes': hippocampus,
                                  'values': lambda t: 'greeting a waving person -> 80% positive'})
    pipe.asked = asked
    yield pipe
    pipe.close()


def test_not_ready_feeds_the_reasoning_back_until_ready(memory):
    first = 'A person waves at me from the door. Someone wants my attention.'
    second = 'I remember greeting them yesterday. I will look at the door.'
    action = {'tool': 'look_at', 'args': {'pan': 0.4, 'tilt': 0.1}}
    backend, d = make([answer(first), answer(second, True, action)], enrichment=memory)
    seen = []
    res = d.deliberate(PERCEPT, [LOOK, SPEAK], on_thought=seen.append)
    assert res.status == READY and res.action == action and res.cycles == 2
    assert [t.cycle for t in seen] == [1, 2] and seen == res.thoughts
    # Cycle 1 enriches the percept, cycle 2 the previous thought.
    assert memory.asked == [PERCEPT, first]
    assert f'[Cycle 1] You thought: {first}' in backend.prompts[1]
    assert '- Memory: A person waved at you yesterday' in backend.prompts[1]
    assert '[Cycle 1]' not in backend.prompts[0]
    t1, t2 = res.thoughts
    assert t1.enriched_by == ['episodes', 'values'] and t1.status == STATUS_OK
    assert t1.salience == pytest.approx(0.3 * 2 / 4 + 0.3 * 2 / 5 + 0.4)
    assert t2.jaccard_previous < 0.8 and not t2.converged and t2.ready_to_act
    assert json.loads(t2.action_json) == action and t1.action_json == ''
    assert t1.prompt_tokens == len(backend.tokenize(backend.prompts[0]))
    assert [e.cycle for e in res.transcript] == [1, 2]
    assert res.transcript[0].experience.startswith('- Memory:') and res.transcript[0].tokens


def test_convergence_stops_at_jaccard_point_eight():
    a = 'the person keeps waving at me from the door and I should look there now'
    b = 'the person keeps waving at me from the door and I should look there soon'
    _, d = make([answer(a), answer(b, action={'tool': 'speak', 'args': {'text': 'hi'}})])
    res = d.deliberate(PERCEPT, [LOOK, SPEAK])
    assert res.status == CONVERGED and res.cycles == 2
    assert res.thoughts[-1].converged and res.thoughts[-1].jaccard_previous >= 0.8
    assert res.action == {'tool': 'speak', 'args': {'text': 'hi'}}
    assert res.confidence == res.thoughts[-1].jaccard_previous


def test_cycle_cap():
    script = [answer('first idea about the door'), answer('second idea: the red shirt'),
              answer('third idea: maybe a visitor'), answer('never asked')]
    backend, d = make(script, max_cycles=3)
    res = d.deliberate(PERCEPT, [LOOK])
    assert res.status == CYCLE_CAP and res.cycles == 3 and len(backend.prompts) == 3
    res = d.deliberate(PERCEPT, [LOOK], max_cycles=1)
    assert res.cycles == 1 and res.thoughts[0].max_cycles == 1


def test_the_schema_follows_the_active_tools_every_cycle():
    active = [[LOOK, SPEAK], [TRACK]]
    script = [answer('I should look around first'),
              # Cycle 2: look_at is no longer active, so naming it cannot pass the schema.
              answer('look now', True, {'tool': 'look_at', 'args': {'pan': 0, 'tilt': 0}}),
              answer('I follow the person', True,
                     {'tool': 'track_target', 'args': {'target': 'person'}})]
    backend, d = make(script)
    res = d.deliberate(PERCEPT, lambda: active[min(len(backend.prompts), 1)])
    assert res.status == READY and res.action['tool'] == 'track_target'
    assert res.thoughts[1].attempts == 2
    enums = []
    for call in backend.calls:
        branches = call['json_schema']['properties']['action']['anyOf'][1:]
        enums.append(sorted(b['properties']['tool']['const'] for b in branches))
    assert enums == [['look_at', 'speak'], ['track_target'], ['track_target']]
    schema = backend.calls[0]['json_schema']
    jsonschema.validate(json.loads(script[1]), schema)
    with pytest.raises(jsonschema.ValidationError):     # arguments are checked per tool
        jsonschema.validate(json.loads(answer('x', True, {'tool': 'speak',
                                                          'args': {'pan': 1}})), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(json.loads(answer('x', True, {'tool': 'fly', 'args': {}})),
                            schema)
    assert 'look_at' in backend.prompts[0] and 'look_at' not in backend.prompts[1]


def test_with_a_lookup_aliases_are_checked_as_their_tool_and_unknown_names_pass_on():
    schema = decision_schema(tool_arg_schemas([LOOK, SPEAK]))
    names = {'look_at': 'look_at', 'speak': 'speak', 'say': 'speak',
             'track_target': 'track_target'}
    lookup = names.get
    said = parse_answer(answer('hi', True, {'tool': 'say', 'args': {'text': 'hi'}}), schema,
                        ['look_at', 'speak'], lookup)
    assert said['action'] == {'tool': 'say', 'args': {'text': 'hi'}}   # the loop resolves it
    with pytest.raises(ValueError, match='does not fit the schema'):   # speak's own arguments
        parse_answer(answer('x', True, {'tool': 'say', 'args': {'pan': 1}}), schema,
                     ['look_at', 'speak'], lookup)
    flown = parse_answer(answer('x', True, {'tool': 'fly', 'args': {}}), schema,
                         ['look_at', 'speak'], lookup)
    assert flown['action']['tool'] == 'fly'          # the loop reports it as unknown
    with pytest.raises(ValueError):                  # a real tool, but not offered now
        parse_answer(answer('x', True, {'tool': 'track_target', 'args': {'target': 'a'}}),
                     schema, ['look_at', 'speak'], lookup)
    with pytest.raises(ValueError):                  # without a lookup nothing changes
        parse_answer(answer('x', True, {'tool': 'say', 'args': {'text': 'hi'}}), schema,
                     ['look_at', 'speak'])
    backend, d = make([answer('x', True, {'tool': 'fly', 'args': {}})])
    d.lookup = lookup
    res = d.deliberate(PERCEPT, [LOOK, SPEAK])
    assert res.status == READY and res.action['tool'] == 'fly' and len(backend.prompts) == 1


def test_no_tools_means_the_action_can_only_be_null():
    schema = decision_schema(tool_arg_schemas([]))
    jsonschema.validate({'reasoning': 'x', 'ready_to_act': True, 'action': None}, schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({'reasoning': 'x', 'ready_to_act': True,
                             'action': {'tool': 'look_at', 'args': {}}}, schema)


def test_a_grammar_for_the_active_tools_replaces_the_json_schema():
    got = []

    def grammar_for(arg_schemas):
        got.append(sorted(arg_schemas))
        return deliberation_grammar(arg_schemas)

    backend = ScriptedBackend([answer('look', True, {'tool': 'speak', 'args': {'text': 'hi'}})])
    d = Deliberator(backend, grammar_for=grammar_for)
    assert d.deliberate(PERCEPT, [LOOK, SPEAK]).status == READY
    assert got == [['look_at', 'speak']]
    call = backend.calls[0]
    assert call['json_schema'] is None
    assert call['grammar'] == deliberation_grammar(tool_arg_schemas([LOOK, SPEAK]))

    # A schema the lean grammar cannot express falls back to the generic JSON schema.
    nested = ToolSpec('plan', 'Plan.', {'steps': {'type': 'array', 'items': {'type': 'string'}}})
    backend = ScriptedBackend([answer('plan', True, {'tool': 'plan', 'args': {'steps': ['a']}})])
    d = Deliberator(backend, grammar_for=deliberation_grammar)
    assert d.deliberate(PERCEPT, [nested]).status == READY
    assert backend.calls[0]['grammar'] is None and backend.calls[0]['json_schema']


@pytest.mark.parametrize('failure, outcome, status, calls', [
    (LLMError(TIMEOUT, 'llm node did not answer'), OUT_TIMEOUT, STATUS_TIMEOUT, 3),
    (LLMError(MODEL_ERROR, 'llama.cpp crashed'), OUT_MODEL_ERROR, STATUS_MODEL_ERROR, 3),
    (LLMError(BAD_REQUEST, 'bad grammar'), OUT_MODEL_ERROR, STATUS_MODEL_ERROR, 1),
    ('I think the person is nice', OUT_UNPARSABLE, STATUS_UNPARSABLE, 3),
    ('{"reasoning": "x", "ready_to_act": "yes", "action": null}', OUT_UNPARSABLE,
     STATUS_UNPARSABLE, 3),
])
def test_failures_end_in_a_named_outcome_after_the_retry_budget(
        failure, outcome, status, calls):
    seen = []
    energy = EnergyBudget()
    backend = ScriptedBackend([failure], clock=Clock())
    d = Deliberator(backend, config=DeliberationConfig(retries=2), energy=energy,
                    clock=Clock())
    res = d.deliberate(PERCEPT, [LOOK], on_thought=seen.append)
    assert res.status == outcome and res.failed and len(backend.prompts) == calls
    assert seen[-1].kind == KIND_STATUS and seen[-1].status == status and seen[-1].status_msg
    assert res.action is None and res.confidence == 0.0
    assert energy.status().requests == calls


def test_a_failed_attempt_is_retried_and_the_cycle_goes_on():
    script = [LLMError(TIMEOUT, 'slow'), 'garbage',
              answer('I look', True, {'tool': 'look_at', 'args': {'pan': 1, 'tilt': 0}})]
    _, d = make(script)
    res = d.deliberate(PERCEPT, [LOOK])
    assert res.status == READY and res.thoughts[0].attempts == 3


def test_the_llm_time_budget_is_checked_on_the_injected_clock():
    long = answer('word ' * 40)
    backend, d = make([long], clock=Clock(step=1.0), llm_timeout_s=5.0, retries=1,
                      max_tokens=200)
    res = d.deliberate(PERCEPT, [LOOK])
    assert res.status == OUT_TIMEOUT and 'within 5.0 s' in res.status_msg
    assert len(backend.prompts) == 2


def test_cancel_before_a_cycle_and_while_generating():
    script = [answer('first thought on the door'), answer('second thought')]
    backend, d = make(script)
    res = d.deliberate(PERCEPT, [LOOK], on_thought=lambda t: d.cancel())
    assert res.status == OUT_CANCELLED and res.cycles == 1 and len(backend.prompts) == 1
    assert res.thoughts[-1].status == STATUS_CANCELLED
    flag = []
    backend, d = make([answer('a long thought ' * 5)])

    def cancel():
        flag.append(1)
        return len(flag) > 3           # becomes true while tokens stream
    res = d.deliberate(PERCEPT, [LOOK], cancel=cancel)
    assert res.status == OUT_CANCELLED and len(backend.prompts) == 1
    backend, d = make([LLMError('cancelled', 'goal cancelled')])
    assert d.deliberate(PERCEPT, [LOOK]).status == OUT_CANCELLED


def test_transcript_budget_drops_oldest_and_surfaces_salient_thoughts():
    # n_ctx 1000, max_tokens 200, margin 16: available 784, transcript budget 235 words;
    # an entry costs ~110: two fit, three do not.
    thoughts = [f'cycle {i} ' + ' '.join(f'w{i}x{k}' for k in range(105)) for i in range(4)]
    backend, d = make([answer(t) for t in thoughts], n_ctx=1000, max_cycles=4, max_tokens=200)
    assert d.transcript_budget == int(0.3 * 784)
    res = d.deliberate(PERCEPT, [LOOK])
    last = backend.prompts[3]
    assert '[Cycle 3] You thought' in last and '[Cycle 2] You thought' in last
    assert '[Cycle 1] You thought' not in last
    # The dropped cycle 1 surfaces through the working memory's top_by_salience.
    assert 'Your most salient earlier thoughts:' in last and '(cycle 1,' in last
    assert sum(e.tokens for e in res.transcript) <= d.transcript_budget
    _, big = make([answer('x')], n_ctx=32768)
    assert big.transcript_budget == 2000


def test_fit_transcript_keeps_newest_and_shortens_a_lone_giant():
    def count(text):
        return len(text.split())
    entries = [TranscriptEntry(i, ' '.join(['t'] * 10), ' '.join(['e'] * 10))
               for i in (1, 2, 3)]
    kept, dropped = fit_transcript(entries, 60, count)
    assert [e.cycle for e in kept] == [2, 3] and dropped == 1
    giant = [TranscriptEntry(1, ' '.join(['t'] * 30), ' '.join(['e'] * 30))]
    kept, _ = fit_transcript(giant, 40, count)
    assert len(kept) == 1 and kept[0].tokens <= 40 and kept[0].thought.count('t') == 30
    kept, _ = fit_transcript(giant, 12, count)
    assert kept[0].tokens <= 12 and kept[0].experience == ''


def test_prompt_over_budget_is_a_model_error_not_a_crash():
    backend, d = make([answer('x')], n_ctx=300)
    res = d.deliberate('word ' * 400, [LOOK])
    assert res.status == OUT_MODEL_ERROR and 'prompt over budget' in res.status_msg
    assert backend.prompts == []
    with pytest.raises(ValueError):
        d.deliberate('  ', [LOOK])
    with pytest.raises(ValueError):
        d.deliberate(PERCEPT, [LOOK], max_cycles=-1)


def test_energy_accounting_and_the_energy_status_answer():
    clock = Clock()
    energy = EnergyBudget(token_budget=10000, refill_tokens_per_s=10.0, clock=clock)
    backend = ScriptedBackend([answer('thinking about the red shirt'),
                               answer('done', True, None)], clock=clock)
    d = Deliberator(backend, energy=energy, clock=clock)
    res = d.deliberate(PERCEPT, [LOOK])
    report = energy.status()
    assert report.requests == 2 and report.available
    assert report.prompt_tokens == res.prompt_tokens == sum(
        len(backend.tokenize(p)) for p in backend.prompts)
    assert report.completion_tokens == res.completion_tokens > 0
    spent = report.prompt_tokens + report.completion_tokens
    assert report.budget_remaining == pytest.approx(1 - spent / 10000)
    clock.t += 10.0                                  # rest refills 100 tokens
    assert energy.remaining_fraction() == pytest.approx(1 - (spent - 100) / 10000)
    clock.t += 100.0
    assert energy.status(window_seconds=50).requests == 0
    assert EnergyBudget().remaining_fraction() == 1.0
    with pytest.raises(ValueError):
        energy.status(-1)


def test_gated_and_the_thought_stream_rendering(memory):
    seen = []
    _, d = make([answer('I notice a person waving at the door'),
                 answer('I remember greeting them; I look at the door', True,
                        {'tool': 'look_at', 'args': {'pan': 0.4, 'tilt': 0.0}})],
                enrichment=memory, clock=Clock(step=0.5))
    gated = d.gated('salience 0.20 below threshold 0.40', on_thought=seen.append)
    assert gated.status == 'gated' and seen[0].status == STATUS_GATED
    res = d.deliberate(PERCEPT, [LOOK], on_thought=seen.append)
    text = render_thought_stream(seen)
    lines = text.splitlines()
    assert lines[0] == '-- not thinking: salience 0.20 below threshold 0.40'
    assert lines[1] == ''
    assert lines[2].startswith('-- Cycle 1/3  ') and 'enriched: episodes, values' in lines[2]
    assert f's={res.thoughts[0].salience:.2f}' in lines[2]
    assert lines[3] == '  I notice a person waving at the door'
    assert 'J=' in lines[4] and lines[-1] == '  => ready to act: look_at {"pan": 0.4, "tilt": 0.0}'
