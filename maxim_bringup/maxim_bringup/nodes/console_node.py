"""The console node: prints what the robot is doing, readable at a glance."""

import sys

from rclpy.node import Node
from rclpy.qos import QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import ParameterDescriptor
from rich.console import Console

from maxim_bringup import display
from maxim_bringup.health import console_health
from maxim_common.conversions import msg_to_dict
from maxim_common.diagnostics import Diagnostics
from maxim_common.lifetime import run
from maxim_interfaces.msg import (IdleEvent, PainSignal, Percept, Thought, ToolResult,
                                  Utterance)

MAX_LINE = 2000     # characters of one printed line; the rest is counted, not printed


class ConsoleNode(Node):
    """Prints thoughts as they form and the key events on the terminal.

    Parameters:
        percept_min_salience (double): percepts below this salience are not printed.
        show_percepts (bool): print percepts at all.
    Subscriptions:
        thoughts (maxim_interfaces/Thought), percepts (maxim_interfaces/Percept),
        tool_results (maxim_interfaces/ToolResult), pain (maxim_interfaces/PainSignal),
        idle (maxim_interfaces/IdleEvent), hearing/utterance (maxim_interfaces/Utterance)
    Publishers:
        diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: lines shown)
    """

    def __init__(self, console: Console | None = None, node_name: str = 'console', **kwargs):
        super().__init__(node_name, **kwargs)
        self._min_salience = self.declare_parameter(
            'percept_min_salience', 0.3,
            ParameterDescriptor(description='Percepts below this salience are not printed'),
        ).value
        self._show_percepts = self.declare_parameter(
            'show_percepts', True, ParameterDescriptor(description='Print percepts'),
        ).value
        self._console = console or Console(file=sys.stdout, highlight=False)
        self._last_percept = ''
        qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)
        self.create_subscription(Thought, 'thoughts', self._on_thought, qos)
        self.create_subscription(Percept, 'percepts', self._on_percept, 10)
        self.create_subscription(ToolResult, 'tool_results', self._on_tool_result, qos)
        self.create_subscription(PainSignal, 'pain', self._on_pain, qos)
        self.create_subscription(IdleEvent, 'idle', self._on_idle, 10)
        self.create_subscription(Utterance, 'hearing/utterance', self._on_utterance, qos)
        self.lines = 0
        self.diagnostics = Diagnostics(self, 'console', lambda: console_health(self.lines))

    def _print(self, text: str) -> None:
        # A line is for a person: a 20,000-character thought costs rich ~0.1 s to wrap, and a
        # burst of them would hold the console's executor for seconds.
        if len(text) > MAX_LINE:
            text = f'{text[:MAX_LINE]} … ({len(text) - MAX_LINE} more characters)'
        self._console.print(text)
        self.lines += 1

    def _on_thought(self, msg: Thought) -> None:
        self._print(display.format_thought(msg_to_dict(msg)))

    def _on_percept(self, msg: Percept) -> None:
        if not self._show_percepts or msg.salience < self._min_salience \
                or msg.source_name == 'voice':       # shown as its hearing/utterance line
            return
        line = display.format_percept(msg_to_dict(msg))
        if line != self._last_percept:  # an unchanged scene is not news
            self._last_percept = line
            self._print(line)

    def _on_tool_result(self, msg: ToolResult) -> None:
        self._print(display.format_tool_result(msg_to_dict(msg)))

    def _on_pain(self, msg: PainSignal) -> None:
        self._print(display.format_pain(msg_to_dict(msg)))

    def _on_utterance(self, msg: Utterance) -> None:
        self._print(display.format_utterance(msg_to_dict(msg)))

    def _on_idle(self, msg: IdleEvent) -> None:
        self._print(display.format_idle(msg_to_dict(msg)))


def main(args=None):
    run(ConsoleNode, args)
