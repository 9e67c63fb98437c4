"""Tool learning in the running system: the memory, fear, llm and agent nodes over DDS.

A tool that keeps failing in one situation is predicted worse after every failure, then blocked
there by the fear gate's NAc rule (value < 0.1 with confidence > 0.85, asked of the memory node
under the same context key the agent's episodes taught it), while the same tool still runs in
another situation. The failure is real: `read_file` of a note that is not in the workspace.
The deliberation answers come from a scripted backend inside the real `llm` node, so which tool
the mind picks is fixed; everything after that (fear review, tool, episode, NAc, pain) is the
running system's own.

The same graph shows what happens to tool names the model invents: an alias resolves to its
tool, an unknown name is a typed error, and the second unknown name in a row lists the tools
the model was offered. With the real model decoding under the grammar, no name is unknown.
"""

import json
import os
import re

import pytest

from helpers.mind_graph import decision, Graph as _Graph

pytestmark = pytest.mark.ros

DRAWER, SHELF = 'drawer', 'shelf'     # the two situations (one object in view each)
NOTES = {DRAWER: 'notes/drawer.txt',   # never written: reading it fails for real
         SHELF: 'notes/shelf.txt'}
TOOLS = ['move', 'track_target', 'focus_interests', 'novelty_track', 'respond',
         'memory_recall', 'predict_outcome', 'scene_summary', 'read_file']


def Graph(tmp_path, **kwargs):
    """The mind graph with this test's tools and the shelf's note."""
    return _Graph(tmp_path, tools=TOOLS,
                  notes={NOTES[SHELF]: 'The shelf holds three red books.\n'}, **kwargs)


def situation_model(prompts):
    """The scripted mind: read the note of whatever is in view; name tools as told; on what
    an act brought (the runtime's next percept), do nothing more."""
    def answer(prompt):
        prompts.append(prompt)
        seen = re.search(r'What you perceive now: (.*)', prompt)
        text = seen.group(1) if seen else ''
        if text.startswith(('Result of your ', 'Your ')):
            return decision('That is what came of it.')   # an act's result: no second act
        told = re.search(r'use the tool "([^"]+)"', text)
        if told:
            return decision(f'I was asked to use {told.group(1)}.', told.group(1),
                            {'query': 'notes'} if told.group(1) == 'remember' else {})
        for place, path in NOTES.items():
            if place in text:
                return decision(f'The note on the {place} may say more.', 'read_file',
                                {'path': path})
        return decision('Nothing to do.')
    return answer


@pytest.fixture(scope='module')
def scripted(tmp_path_factory):
    from maxim_core.llm.backend import ScriptedBackend
    prompts = []
    graph = Graph(tmp_path_factory.mktemp('learning'),
                  backend=ScriptedBackend(situation_model(prompts)))
    graph.prompts = prompts
    yield graph
    graph.close()


def test_a_tool_failing_in_one_situation_is_blocked_there_and_still_runs_elsewhere(scripted):
    from maxim_interfaces.msg import PainSignal, ToolResult
    from maxim_interfaces.srv import ReviewAction
    g = scripted

    result, episode = g.step('A note lies on the shelf.', [SHELF])
    assert result.success and 'three red books' in result.output, result.error_msg
    assert json.loads(episode.context_json)['context'] == SHELF

    trail = []                           # (value, confidence) after each failure
    for attempt in range(1, 16):
        result, episode = g.step('A note lies on the drawer.', [DRAWER])
        assert result.call.tool_name == 'read_file'
        if result.blocked:
            break
        assert not result.success and result.error_code == ToolResult.ERROR_EXECUTION
        assert 'drawer.txt' in result.error_msg
        p = g.predict('read_file', DRAWER)
        assert p.known and p.observations == attempt
        trail.append((p.value, p.confidence))
    print(f'\nread_file in {DRAWER!r}: (value, confidence) after each failure: '
          + ', '.join(f'({v:.3f}, {c:.3f})' for v, c in trail))
    # Predicted bad from the first failure on, and worse after every one ...
    assert trail[0][0] < 0.5
    assert all(b[0] < a[0] and b[1] > a[1] for a, b in zip(trail, trail[1:]))
    # ... allowed while the NAc was not sure, blocked by it once it was.
    assert all(not (v < 0.1 and c > 0.85) for v, c in trail[:-1])
    assert trail[-1][0] < 0.1 and trail[-1][1] > 0.85
    assert result.blocked and result.blocked_by == ReviewAction.Response.LAYER_NAC
    assert result.error_code == ToolResult.ERROR_BLOCKED and 'NAc' in result.blocked_reason
    assert episode.blocked and episode.outcome.startswith('blocked: NAc')
    assert g.predict('read_file', DRAWER).observations == len(trail)   # a block teaches nothing

    # Elsewhere the same tool still runs, and the mind is told what happened at the drawer.
    result, episode = g.step('A note lies on the shelf.', [SHELF])
    assert result.success and not result.blocked and 'three red books' in result.output
    assert re.search(r'read_file .*drawer\.txt.* -> blocked: NAc', g.prompts[-1])

    # Each failure hurt a little more; the blocked call, which never ran, did not hurt.
    failures = [p for p in g.pains if p.source == 'read_file']
    assert [p.repeat_count for p in failures] == list(range(1, len(trail) + 1))
    assert all(p.context == DRAWER and p.pain_type == PainSignal.TYPE_TOOL_FAILURE
               for p in failures)
    assert failures[-1].intensity > failures[0].intensity
    history = g.ask(g._pain, g.PainHistory.Request(limit=50))
    assert dict(zip(history.pain_types, history.pain_counts)).get('tool_failure') == len(trail)


def test_invented_tool_names_resolve_or_fail_and_the_second_miss_lists_the_tools(scripted):
    from maxim_interfaces.msg import ToolResult
    g = scripted
    result, _ = g.step('The user says: "use the tool "teleport" now."')
    assert result.error_code == ToolResult.ERROR_UNKNOWN_TOOL
    assert result.call.requested_name == 'teleport' and 'Available tools' not in result.error_msg
    result, _ = g.step('The user says: "use the tool "fly_away" now."')
    assert result.error_code == ToolResult.ERROR_UNKNOWN_TOOL
    listed = result.error_msg.split('Available tools: ')[1].split(', ')
    assert sorted(listed) == sorted(TOOLS)          # what the model was offered, no more
    result, _ = g.step('The user says: "use the tool "remember" now."')
    assert result.call.requested_name == 'remember'
    assert result.call.tool_name == 'memory_recall' and result.error_code == 0, result.error_msg
    assert 'fly_away' in g.prompts[-1] and 'Available tools: ' in g.prompts[-1]
    assert (g.agent.mind.act.unknown_tool_calls, g.agent.mind.act.resolved_aliases) == (2, 1)


@pytest.mark.real_model
@pytest.mark.slow
def test_the_real_model_under_the_grammar_names_no_unknown_tool(tmp_path):
    """A handful of deliberations on requests that invite invented tools; the count of
    unknown names is printed (MAXIM_TOOLNAME_RUNS sets how many, default 3)."""
    from maxim_interfaces.msg import Thought, ToolResult
    # Requests that name tools the robot does not have, between ones its tools can serve.
    asks = ['The user says: "Use your teleport tool now: go to the kitchen."',
            'The user says: "Look at the red ball on your left."',
            'The user says: "Call web_search for tomorrow\'s weather, right away."',
            'The user says: "Read the note in notes/shelf.txt."',
            'The user says: "Run open_door, then turn on the lights."']
    runs = int(os.environ.get('MAXIM_TOOLNAME_RUNS', '3'))
    # Seeded: what is asserted is that the grammar admits no unknown name, whatever the
    # sample; an unseeded run also varies in how many passes end in a deliberation.
    g = Graph(tmp_path, agent_params={'deliberation.max_tokens': 96, 'deliberation.seed': 7})
    thoughts = []
    g.probe.create_subscription(Thought, 'thoughts', thoughts.append, 100)

    def deliberated():
        return [t for t in thoughts if t.kind == Thought.KIND_DELIBERATION]

    def told():                     # every thought but the forming ones
        return len([t for t in thoughts if t.kind != Thought.KIND_FORMING])

    # A sample can end a deliberation without a decision (the loop's retries on the model
    # copying the prompt's example run out: a status thought). Such a pass names no tool and
    # proves nothing, so passes go on, within a budget, until `runs` deliberations decided.
    steps = 0
    try:
        mind = g.agent.mind           # the lifecycle node lets it go when the graph closes
        registered = set(mind.tools.registry.names())
        while len(deliberated()) < runs and steps < 3 * runs:
            before = told()
            g.step(asks[steps % len(asks)], [SHELF] if steps % 2 else [])
            g.until(lambda: told() > before, 'the thought of the pass')
            steps += 1
    finally:
        g.close()
    named = [json.loads(t.action_json)['tool'] for t in thoughts if t.action_json]
    unknown = [r.call.requested_name for r in g.results
               if r.error_code == ToolResult.ERROR_UNKNOWN_TOOL
               or r.call.requested_name not in registered]
    unknown += [n for n in named if n not in registered]
    print(f'\nreal model, grammar on: {steps} passes, {len(deliberated())} deliberations '
          f'decided, {len(named)} actions named '
          f'({", ".join(named) or "none"}), {len(g.results)} tool calls, '
          f'{len(unknown)} unknown names')
    assert len(deliberated()) >= runs, [(t.kind, t.status_msg) for t in thoughts]
    assert unknown == [] and mind.act.unknown_tool_calls == 0
