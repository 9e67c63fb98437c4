"""The thinking panel's node: the console's subscriptions, shown in the panel, plus the line
to talk to the robot and the answers to its questions."""

import uuid

from maxim_interfaces.msg import InteractionRequest, InteractionResponse, Percept

from maxim_bringup.conversions import speech_to_percept
from maxim_bringup.nodes.console_node import ConsoleNode


class PanelNode(ConsoleNode):
    """Feeds a ThinkingPanelApp from the graph and speaks for the user.

    Subscriptions: as ConsoleNode, plus interaction/request (maxim_interfaces/InteractionRequest)
    Publishers: percepts (maxim_interfaces/Percept, SOURCE_USER) for what the user says,
        interaction/response (maxim_interfaces/InteractionResponse) for answers.
    """

    def __init__(self, app, **kwargs):
        self.app = app
        super().__init__(node_name='panel', **kwargs)
        self._say_pub = self.create_publisher(Percept, 'percepts', 10)
        self._answer_pub = self.create_publisher(InteractionResponse, 'interaction/response',
                                                 10)
        self.create_subscription(InteractionRequest, 'interaction/request', self._on_request,
                                 10)

    def _print(self, text: str) -> None:
        self.app.post_block(text)

    def _on_request(self, msg: InteractionRequest) -> None:
        self.app.post_question(msg.request_id, msg.prompt, list(msg.options))

    def say(self, text: str) -> None:
        msg = speech_to_percept(text, uuid.uuid4().hex[:12])
        msg.header.stamp = self.get_clock().now().to_msg()
        self._say_pub.publish(msg)

    def answer(self, request_id: str, text: str) -> None:
        msg = InteractionResponse(request_id=request_id, text=text)
        msg.header.stamp = self.get_clock().now().to_msg()
        self._answer_pub.publish(msg)
