"""The scenario runner's agents under test think with the robot's memory system: a memory
node each, asked through the same client the agent node uses."""

import json
import time

import pytest

pytestmark = pytest.mark.ros


def answer(text, tool=None, args=None):
    action = {'tool': tool, 'args': args or {}} if tool else None
    return json.dumps({'reasoning': text, 'ready_to_act': bool(tool), 'action': action})


def stored(port, at_least, timeout_s=30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stats = port.query('system_stats', {}, 5.0)
        if stats and stats.get('episodes', 0) >= at_least:
            return stats['episodes']
        time.sleep(0.1)
    raise AssertionError(f'memory did not reach {at_least} episodes')


def test_the_agent_under_test_remembers_through_the_memory_node():
    from maxim_core.llm.backend import ScriptedBackend
    from maxim_eval.scenario_memory import GraphMemory
    from maxim_eval.scenario.bridge import BridgeConfig, SimulationBridge

    backend = ScriptedBackend([answer('A guard sleeps. I sneak past him.', 'sneak_past_guard'),
                               answer('Done.')])
    with GraphMemory() as graph:
        port = graph.port('aut')
        bridge = SimulationBridge(
            backend, goal='leave the courtyard', name='aut', memory_port=port,
            memories=['The courtyard guard wakes at the smallest noise.'],
            config=BridgeConfig(settle_s=0.0, max_actions_per_turn=1, max_cycles=1),
            allowed_tools=['say', 'think', 'sense_entity'])
        try:
            bridge.send_message('A guard sleeps on a stool by the courtyard gate.')
            # The seeded memory and the turn's episode are in the memory node's SQLite file.
            assert stored(port, 2) >= 2
            bridge.send_message('Another guard dozes at the courtyard gate.')
        finally:
            bridge.close()
    second = backend.prompts[-1]
    memory_lines = [ln for ln in second.splitlines() if ln.startswith('- Memory: ')]
    assert any('courtyard' in ln and '[shared words' in ln for ln in memory_lines), second
    assert port.captured >= 3
