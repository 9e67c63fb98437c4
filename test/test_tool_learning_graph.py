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
import threading
import time
import uuid

import pytest

pytestmark = pytest.mark.ros

DRAWER, SHELF = 'drawer', 'shelf'     # the two situations (one object in view each)
NOTES = {DRAWER: 'notes/drawer.txt',   # never written: reading it fails for real
         SHELF: 'notes/shelf.txt'}
TOOLS = ['move', 'track_target', 'focus_interests', 'novelty_track', 'respond',
         'memory_recall', 'predict_outcome', 'scene_summary', 'read_file']
WAIT_S = 90.0                          # per step, generous for a loaded 2-core machine


def decision(reasoning, tool=None, args=None):
    action = None if tool is None else {'tool': tool, 'args': args or {}}
    return json.dumps({'reasoning': reasoning, 'ready_to_act': True, 'action': action})


class Graph:
    """memory + fear + llm + agent in one process, and a probe that drives and listens."""

    def __init__(self, tmp_path, backend=None, llm_params=None, agent_params=None):
        import rclpy
        from rclpy.executors import MultiThreadedExecutor
        from rclpy.parameter import Parameter

        from maxim_core.nodes.agent_node import AgentNode
        from maxim_core.nodes.fear_node import FearNode
        from maxim_core.nodes.llm_node import LLMNode
        from maxim_interfaces.msg import Episode, PainSignal, Percept, ToolResult
        from maxim_interfaces.srv import PainHistory, PredictOutcome, SystemStats
        from maxim_memory.nodes.memory_node import MemoryNode

        def params(d):
            return [Parameter(k, value=v) for k, v in d.items()]

        self.workspace = tmp_path / 'workspace'
        (self.workspace / 'notes').mkdir(parents=True)
        (self.workspace / NOTES[SHELF]).write_text('The shelf holds three red books.\n')
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.nodes = []
        self.executor = MultiThreadedExecutor(num_threads=6, context=self.ctx)
        try:
            self._add(MemoryNode(context=self.ctx, parameter_overrides=params(
                {'db_path': str(tmp_path / 'memory.db')})))
            # A generous bound on memory's answer: on a loaded machine a late answer would
            # skip the NAc layer, and this test is about what the layer decides.
            self._add(FearNode(context=self.ctx, parameter_overrides=params(
                {'mode': 'passive', 'sandbox.root': str(self.workspace),
                 'nac.timeout_s': 10.0})))
            llm = LLMNode(context=self.ctx, backend=backend,
                          parameter_overrides=params(llm_params or {}))
            for step in (llm.trigger_configure, llm.trigger_activate):
                step()
            assert llm.last_error == '', llm.last_error
            self._add(llm)
            self.agent = self._add(AgentNode(context=self.ctx, parameter_overrides=params({
                'workspace_root': str(self.workspace), 'tools.active': TOOLS,
                'deliberation.max_cycles': 1, 'deliberation.llm_timeout_s': 60.0,
                'idle.enabled': False, 'idle.task_db_path': str(tmp_path / 'tasks.db'),
                **(agent_params or {})})))
            self.probe = self._add(rclpy.create_node('probe', context=self.ctx))
        except BaseException:
            self.close()
            raise
        self.results, self.episodes, self.pains = [], [], []
        self.probe.create_subscription(ToolResult, 'tool_results', self.results.append, 100)
        self.probe.create_subscription(Episode, 'episodes', self.episodes.append, 100)
        self.probe.create_subscription(PainSignal, 'pain', self.pains.append, 100)
        self._percepts = self.probe.create_publisher(Percept, 'percepts', 10)
        self._predict = self.probe.create_client(PredictOutcome, 'memory/predict_outcome')
        self._stats = self.probe.create_client(SystemStats, 'memory/system_stats')
        self._pain = self.probe.create_client(PainHistory, 'memory/pain_history')
        self.Percept, self.PredictOutcome = Percept, PredictOutcome
        self.SystemStats, self.PainHistory = SystemStats, PainHistory
        self._spinner = threading.Thread(target=self.executor.spin, daemon=True)
        self._spinner.start()

    def _add(self, node):
        self.nodes.append(node)
        self.executor.add_node(node)
        return node

    def close(self):
        import rclpy
        self.executor.shutdown(timeout_sec=5.0)
        spinner = getattr(self, '_spinner', None)
        if spinner is not None:
            spinner.join(timeout=10.0)
        for node in reversed(self.nodes):
            node.destroy_node()
        rclpy.try_shutdown(context=self.ctx)

    # -- driving -----------------------------------------------------------------------------
    def until(self, condition, what, timeout_s=WAIT_S):
        deadline = time.monotonic() + timeout_s
        while not condition():
            assert time.monotonic() < deadline, f'timed out waiting for {what}'
            time.sleep(0.05)

    def ask(self, client, request):
        assert client.wait_for_service(timeout_sec=WAIT_S), f'{client.srv_name} is absent'
        future = client.call_async(request)
        self.until(future.done, client.srv_name)
        return future.result()

    def step(self, narrative, objects=()):
        """One percept through the whole loop: its tool result, once memory holds its episode
        (None when the mind chose no tool)."""
        from maxim_interfaces.msg import Detection
        pid = uuid.uuid4().hex[:8]
        stored = self.ask(self._stats, self.SystemStats.Request()).episodes
        results = len(self.results)
        self._percepts.publish(self.Percept(
            percept_id=pid, source=self.Percept.SOURCE_USER, source_name='test',
            narrative=narrative, salience=0.9, novelty=0.5,
            objects=[Detection(label=label) for label in objects]))

        def mine():
            return [e for e in self.episodes
                    if json.loads(e.context_json or '{}').get('percept_id') == pid]
        self.until(lambda: mine(), f'the episode of {narrative!r}')
        episode = mine()[0]
        if episode.tool_name:
            self.until(lambda: len(self.results) > results, f'the tool result of {narrative!r}')
        self.until(lambda: self.ask(self._stats, self.SystemStats.Request()).episodes > stored,
                   'memory to store the episode')
        return (self.results[-1] if episode.tool_name else None), episode

    def predict(self, tool, key):
        r = self.ask(self._predict, self.PredictOutcome.Request(tool_name=tool, context=key))
        assert r.available and r.error_code == 0, r.error_msg
        return r


def situation_model(prompts):
    """The scripted mind: read the note of whatever is in view; name tools as told."""
    def answer(prompt):
        prompts.append(prompt)
        seen = re.search(r'What you perceive now: (.*)', prompt)
        text = seen.group(1) if seen else ''
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
    assert (g.agent.loop.unknown_tool_calls, g.agent.loop.resolved_aliases) == (2, 1)


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
    g = Graph(tmp_path, agent_params={'deliberation.max_tokens': 96})
    thoughts = []
    g.probe.create_subscription(Thought, 'thoughts', thoughts.append, 100)
    try:
        registered = set(g.agent.registry.names())
        for i in range(runs):
            g.step(asks[i % len(asks)], [SHELF] if i % 2 else [])
    finally:
        g.close()
    named = [json.loads(t.action_json)['tool'] for t in thoughts if t.action_json]
    unknown = [r.call.requested_name for r in g.results
               if r.error_code == ToolResult.ERROR_UNKNOWN_TOOL
               or r.call.requested_name not in registered]
    unknown += [n for n in named if n not in registered]
    print(f'\nreal model, grammar on: {runs} deliberations, {len(named)} actions named '
          f'({", ".join(named) or "none"}), {len(g.results)} tool calls, '
          f'{len(unknown)} unknown names')
    deliberated = [t for t in thoughts if t.kind == Thought.KIND_DELIBERATION]
    assert len(deliberated) >= runs, [(t.kind, t.status_msg) for t in thoughts]
    assert unknown == [] and g.agent.loop.unknown_tool_calls == 0
