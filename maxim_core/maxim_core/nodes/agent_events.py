"""The agent node's event sink: what the Mind does, published on the agent's topics."""

from maxim_core import conversions as conv
from maxim_core.mind import EventSink
from maxim_core.qos import COMMANDS, EVENTS
from maxim_interfaces.msg import (Episode, HeadGoal, IdleEvent, IdleProvenance, PainSignal,
                                  Thought, ToolCall, ToolResult)


class AgentEvents(EventSink):
    """The Mind's events, published on the agent's topics."""

    def __init__(self, node):
        self.node = node
        pub = node.create_publisher
        self.pubs = {'thought': pub(Thought, 'thoughts', EVENTS),
                     'call': pub(ToolCall, 'tool_calls', EVENTS),
                     'result': pub(ToolResult, 'tool_results', EVENTS),
                     'episode': pub(Episode, 'episodes', EVENTS),
                     'pain': pub(PainSignal, 'pain', EVENTS),
                     'goal': pub(HeadGoal, 'head/goal', COMMANDS),
                     'idle': pub(IdleEvent, 'idle', EVENTS),
                     'provenance': pub(IdleProvenance, 'idle/provenance', EVENTS)}

    def _send(self, key, msg):
        if hasattr(msg, 'header'):
            msg.header.stamp = self.node.get_clock().now().to_msg()
        self.pubs[key].publish(msg)

    def thought(self, t):
        self._send('thought', conv.thought_to_msg(t, Thought()))

    def tool_call(self, run):
        self._send('call', conv.run_to_call(run, ToolCall()))

    def tool_result(self, run):
        self._send('result', conv.run_to_result(run, ToolResult()))

    def episode(self, record):
        self._send('episode', conv.record_to_msg(record, Episode()))

    def pain(self, report):
        self._send('pain', conv.record_to_msg(report, PainSignal()))

    def head_goal(self, goal):
        self._send('goal', conv.record_to_msg(goal, HeadGoal()))

    def idle_event(self, status):
        self._send('idle', conv.idle_status_to_msg(status, IdleEvent()))

    def provenance(self, record):
        self._send('provenance', conv.provenance_to_msg(record, IdleProvenance()))

    def status(self, text):
        self.node.get_logger().warning(text, throttle_duration_sec=5.0)
        self._send('thought', Thought(kind=Thought.KIND_STATUS,
                                      status=Thought.STATUS_MODEL_ERROR,
                                      status_msg=conv.clean_text(text, 500)))
