"""The agent node's side of the Mind's ports that publish: the event sink (what the Mind does,
on the agent's topics) and the interaction port (questions to the person, answers back)."""

import threading
import uuid

from maxim_common.qos import COMMANDS, EVENTS
from maxim_core import conversions as conv
from maxim_core.mind import EventSink
from maxim_interfaces.msg import (Episode, HeadGoal, IdleEvent, IdleProvenance,
                                  InteractionRequest, InteractionResponse, PainSignal, Thought,
                                  ToolCall, ToolResult)


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

    def forming(self, t):
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


class Interaction:
    """The Mind's `ask` port: a question on interaction/request, the answer that comes back
    on interaction/response (the thinking panel), or None after the timeout."""

    def __init__(self, node):
        self.node = node
        self._waiting: dict = {}          # request id -> [Event, answer]
        self._lock = threading.Lock()
        self._pub = node.create_publisher(InteractionRequest, 'interaction/request', EVENTS)
        node.create_subscription(InteractionResponse, 'interaction/response', self._on_answer,
                                 EVENTS)

    def ask(self, question: str, options: list, timeout_s: float):
        rid = uuid.uuid4().hex[:12]
        entry = [threading.Event(), None]
        with self._lock:
            self._waiting[rid] = entry
        msg = InteractionRequest(request_id=rid, prompt=conv.clean_text(question, 500),
                                 options=[conv.clean_text(o, 100) for o in options],
                                 timeout_s=float(timeout_s))
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self._pub.publish(msg)
        entry[0].wait(timeout_s)
        with self._lock:
            self._waiting.pop(rid, None)
        return entry[1]

    def _on_answer(self, msg: InteractionResponse) -> None:
        with self._lock:
            entry = self._waiting.get(msg.request_id)
        if entry is not None and not msg.timed_out:
            entry[1] = msg.text
            entry[0].set()
