"""A second process for the contract test: echoes every maxim_interfaces message, answers
every service and serves every action, so the test sees each type cross real DDS both ways.

Run as a script; it prints READY once every endpoint exists and exits when stdin closes.
"""

import os
import sys
import threading

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import rclpy  # noqa: E402
from rclpy.action import ActionServer  # noqa: E402
from rclpy.executors import ExternalShutdownException, MultiThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402

from helpers.fill import filled  # noqa: E402
from helpers.interfaces import action_types, message_types, service_types  # noqa: E402


class EchoAll(Node):

    def __init__(self):
        super().__init__('contract_echo')
        self._keep = []
        for cls in message_types():
            name = cls.__name__
            pub = self.create_publisher(cls, f'contract/echo/{name}', 10)
            self._keep.append(pub)
            self._keep.append(self.create_subscription(
                cls, f'contract/msg/{name}', lambda m, p=pub: p.publish(m), 10))
        for srv in service_types():
            self._keep.append(self.create_service(
                srv, f'contract/srv/{srv.__name__}', self._answer(srv)))
        for act in action_types():
            self._keep.append(ActionServer(
                self, act, f'contract/action/{act.__name__}', self._execute(act)))

    @staticmethod
    def _answer(srv):
        def callback(request, response):
            if request == filled(srv.Request, 1):
                return filled(srv.Response, 2)
            return response
        return callback

    @staticmethod
    def _execute(act):
        def callback(goal_handle):
            if goal_handle.request != filled(act.Goal, 1):
                goal_handle.abort()
                return act.Result()
            goal_handle.publish_feedback(filled(act.Feedback, 3))
            goal_handle.succeed()
            return filled(act.Result, 2)
        return callback


def main():
    rclpy.init()
    node = EchoAll()
    executor = MultiThreadedExecutor()
    executor.add_node(node)
    print('READY', flush=True)

    def wait_stdin():
        sys.stdin.read()
        rclpy.try_shutdown()

    threading.Thread(target=wait_stdin, daemon=True).start()
    try:
        executor.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass  # shutdown requested: the normal way out
    finally:
        node.destroy_node()
        rclpy.try_shutdown()


if __name__ == '__main__':
    main()
