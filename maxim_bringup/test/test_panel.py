"""The thinking panel: its model's key handling, and the Textual app driven headless by
its test pilot, reading what the screen shows."""

import asyncio
import html
import re

from maxim_bringup.panel.app import ThinkingPanelApp, ThoughtPanel
from maxim_bringup.panel.model import ThoughtStreamModel


def test_model_follows_scrolls_and_resizes():
    m = ThoughtStreamModel(height=3)
    for i in range(10):
        m.add(f'line {i}')
    assert m.visible() == ['line 7', 'line 8', 'line 9']
    assert not m.key('up')               # not entered: arrows belong to the talk line
    assert m.key('left') and m.focused and not m.follow
    m.key('up')
    m.key('up')
    assert m.visible() == ['line 5', 'line 6', 'line 7']
    m.add('line 10')                     # reading position is kept while thoughts arrive
    assert m.visible() == ['line 5', 'line 6', 'line 7']
    for _ in range(50):
        m.key('up')
    assert m.visible() == ['line 0', 'line 1', 'line 2']
    m.key('down')
    assert m.visible()[0] == 'line 1'
    assert m.key('right') and m.follow and m.visible()[-1] == 'line 10'
    assert m.key('alt+up') and m.height == 5
    for _ in range(30):
        m.key('alt+down')
    assert m.height == m.min_height


def test_model_drops_oldest_history():
    m = ThoughtStreamModel(max_lines=5)
    for i in range(8):
        m.add(f'{i}')
    assert m.lines == ['3', '4', '5', '6', '7']


def screen_text(app) -> str:
    """What the terminal shows: the app's screenshot (SVG) as plain text lines."""
    svg = app.export_screenshot()
    return html.unescape(re.sub(r'<[^>]+>', '', svg)).replace('\xa0', ' ')


def panel_lines(app) -> list[str]:
    return [line for line in screen_text(app).splitlines() if 'thought number' in line]


def test_app_keys_and_talk_line_headless():
    said, answers = [], []

    async def drive():
        app = ThinkingPanelApp(say=said.append, answer=lambda r, t: answers.append((r, t)),
                               model=ThoughtStreamModel(height=4))
        async with app.run_test(size=(100, 30)) as pilot:
            for i in range(12):
                app.add_block(f'Cycle {i}/12 thought number {i}')
            await pilot.pause()
            assert 'thought number 11' in screen_text(app)
            await pilot.press('left')                  # empty line: enter the panel
            assert app.focused is app.query_one(ThoughtPanel)
            for _ in range(5):
                await pilot.press('up')
            await pilot.pause()
            text = screen_text(app)
            assert 'thought number 6' in text and 'thought number 11' not in text
            await pilot.press('down')
            await pilot.pause()
            text = screen_text(app)
            assert 'thought number 7' in text and 'thought number 3' not in text
            await pilot.press('alt+up')
            assert app.model.height == 6
            await pilot.pause()
            assert len(panel_lines(app)) == 6    # a taller panel shows more
            await pilot.press('alt+down')
            assert app.model.height == 4
            await pilot.pause()
            assert len(panel_lines(app)) == 4
            await pilot.press('right')                 # back to the latest, keys to the line
            await pilot.pause()
            assert 'thought number 11' in screen_text(app) and app.model.follow
            assert app.focused is not app.query_one(ThoughtPanel)
            await pilot.press('alt+up')                # resizing works from the line too
            assert app.model.height == 6
            await pilot.press(*'hello robot')
            await pilot.press('enter')
            assert said == ['hello robot']
            app.ask('q1', 'Which object should I track?', ['red', 'blue'])
            await pilot.press(*'red', 'enter')
            assert answers == [('q1', 'red')] and said == ['hello robot']
            assert 'you (answer): red' in screen_text(app)

    asyncio.run(drive())


class Sink:
    """Stands where the Textual app stands: collects what the node posts."""

    def __init__(self):
        self.blocks, self.questions = [], []

    def post_block(self, markup):
        self.blocks.append(markup)

    def post_question(self, request_id, prompt, options):
        self.questions.append((request_id, prompt, options))


def test_panel_node_over_dds(tmp_path):
    """The panel against the real agent node: its thoughts show, a line typed becomes a user
    percept, and a question the agent asks (request_interaction's port) is shown and
    answered through the panel."""
    import threading

    import pytest
    pytest.importorskip('rclpy')
    import rclpy
    from rclpy.executors import MultiThreadedExecutor
    from rclpy.parameter import Parameter

    from maxim_bringup.nodes.panel_node import PanelNode
    from maxim_core.nodes.agent_node import AgentNode
    from maxim_interfaces.msg import Percept, Thought

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    executor = MultiThreadedExecutor(num_threads=3, context=ctx)
    try:
        sink = Sink()
        panel = PanelNode(sink, context=ctx)
        agent = AgentNode(context=ctx, autostart=True, parameter_overrides=[
            Parameter('idle.enabled', value=False),
            Parameter('idle.task_db_path', value=str(tmp_path / 'tasks.db')),
            Parameter('workspace_root', value=str(tmp_path))])
        peer = rclpy.create_node('listener', context=ctx)
        heard = []
        peer.create_subscription(Percept, 'percepts', heard.append, 10)
        thoughts = peer.create_publisher(Thought, 'thoughts', 10)
        for node in (panel, agent, peer):
            executor.add_node(node)
        spin = threading.Thread(target=executor.spin, daemon=True)
        spin.start()
        answer = []
        asking = threading.Thread(target=lambda: answer.append(
            agent.interaction.ask('Track which?', ['red', 'blue'], 20.0)), daemon=True)
        asking.start()
        for _ in range(200):
            if sink.blocks and sink.questions and heard:
                break
            thoughts.publish(Thought(cycle=1, max_cycles=2, text='the ball rolls away'))
            panel.say('look left')
            threading.Event().wait(0.05)
        assert any('the ball rolls away' in b for b in sink.blocks)
        request_id, prompt, options = sink.questions[0]
        assert (prompt, options) == ('Track which?', ['red', 'blue'])
        panel.answer(request_id, 'the red one')
        asking.join(timeout=20.0)
        assert answer == ['the red one']
        user = [p for p in heard if p.source == Percept.SOURCE_USER]
        assert user and user[0].narrative == 'The user says: "look left"'
    finally:
        executor.shutdown(timeout_sec=5.0)
        for node in executor.get_nodes():
            node.destroy_node()
        rclpy.try_shutdown(context=ctx)
