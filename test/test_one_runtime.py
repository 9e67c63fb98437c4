"""One turn, two runners: a person's line through the agent node's runtime (memory, fear, llm
and agent nodes over DDS) and through the scenario runner's bridge makes the same sequence of
Mind calls: a pass on the line, then a pass on what the act brought (the act's result is the
next percept on the robot too), then nothing more.

The model is scripted (the same script on both sides); the calls are recorded on the Mind
class itself, so what is compared is what each runner asked of the one Mind.
"""

import pytest

from helpers.mind_graph import decision, Graph

pytestmark = pytest.mark.ros

LINE = 'Hello robot, what is your name?'
SCRIPT = [decision('Someone asks my name. I answer.', 'respond', {'text': 'I am Maxim.'}),
          decision('I have answered. I wait.')]


def record_mind_calls(monkeypatch) -> list:
    """Every Mind.step from now on, as (source, what it is about, force, the tool it ran)."""
    from maxim_core.mind import Mind
    calls, step = [], Mind.step

    def recorded(self, percept, **kw):
        result = step(self, percept, **kw)
        run = result.loop.run if result is not None else None
        about = percept.narrative.split(':')[0] if percept.source == 'tool_result' \
            else percept.narrative
        calls.append((percept.source, about, bool(kw.get('force')), run.tool if run else None))
        return result

    monkeypatch.setattr(Mind, 'step', recorded)
    return calls


def through_the_agent_node(tmp_path, monkeypatch) -> list:
    from maxim_core.llm.backend import ScriptedBackend
    calls = record_mind_calls(monkeypatch)
    g = Graph(tmp_path, backend=ScriptedBackend(list(SCRIPT)), tools=['respond'])
    try:
        g.say(LINE)
        g.until(lambda: len(calls) >= 2 and calls[-1][3] is None, 'the turn to end')
        mind = g.agent.mind              # the turn has ended: no pass runs, nothing waits
        g.until(lambda: not mind.busy() and not mind.runtime.waiting(), 'the runtime to rest')
    finally:
        g.close()
    return list(calls)


def through_the_scenario_runner(monkeypatch) -> tuple:
    from maxim_core.llm.backend import ScriptedBackend
    from maxim_eval.scenario.bridge import BridgeConfig, SimulationBridge, VirtualClock
    calls = record_mind_calls(monkeypatch)
    clock = VirtualClock()
    bridge = SimulationBridge(ScriptedBackend(list(SCRIPT)), allowed_tools=['respond'],
                              config=BridgeConfig(settle_s=2.0, timeout_s=60.0),
                              clock=clock, sleep=clock.sleep)
    try:
        turn = bridge.send_message(LINE, source='user')
    finally:
        bridge.close()
    return list(calls), turn


def test_the_robot_and_a_scenario_make_the_same_mind_calls(tmp_path, monkeypatch):
    robot = through_the_agent_node(tmp_path, monkeypatch)
    scenario, turn = through_the_scenario_runner(monkeypatch)
    assert turn.settled and [a.tool for a in turn.actions] == ['respond']

    def shape(calls):       # the robot's first pass is not forced: a person's words always
        return [(s, about, tool) for s, about, _, tool in calls]   # get a thought anyway

    assert shape(robot) == shape(scenario) == [
        ('user', LINE, 'respond'), ('tool_result', 'Result of your respond', None)]
    assert [force for s, _, force, _ in robot + scenario if s == 'tool_result'] == [True, True]
