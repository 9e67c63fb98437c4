"""The lifecycle manager: brings the graph's lifecycle nodes up in order when the launch starts
(as nav2_lifecycle_manager does), and down in reverse order when asked."""

import threading
import time

from lifecycle_msgs.msg import Transition
from lifecycle_msgs.srv import ChangeState, GetState
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.executors import MultiThreadedExecutor
from rclpy.node import Node
from rcl_interfaces.msg import ParameterDescriptor
from std_srvs.srv import Trigger

from maxim_bringup.lifecycle import LifecycleError, LifecycleSequence, STATE_LABELS
from maxim_common.lifetime import run

_TRANSITIONS = {'configure': Transition.TRANSITION_CONFIGURE,
                'cleanup': Transition.TRANSITION_CLEANUP,
                'activate': Transition.TRANSITION_ACTIVATE,
                'deactivate': Transition.TRANSITION_DEACTIVATE}


class ServiceTransport:
    """Lifecycle transitions of nodes in other processes, through their lifecycle services,
    every wait bounded.

    A get_state unanswered for ASK_AGAIN_S is asked again, within the same overall budget:
    a service can take a request before it has discovered the client's reply reader (both
    processes just started), and DDS then drops the reply ("failed to send response") while
    the client would wait its whole budget for it. Asking the state again is harmless; a
    transition is not asked twice (the first get_state answered means the two processes have
    discovered each other).
    """

    ASK_AGAIN_S = 5.0

    def __init__(self, node: Node, names, wait_s: float, timeout_s: float, stop, group):
        self.node, self.wait_s, self.timeout_s, self.stop = node, wait_s, timeout_s, stop
        self.get = {n: node.create_client(GetState, f'{n}/get_state', callback_group=group)
                    for n in names}
        self.set = {n: node.create_client(ChangeState, f'{n}/change_state',
                                          callback_group=group) for n in names}

    def _call(self, client, request, what: str, again_s: float | None = None):
        waited = 0.0
        while not client.wait_for_service(timeout_sec=0.5):
            waited += 0.5
            if self.stop.is_set():
                raise LifecycleError(f'{what}: stopping')
            if waited >= self.wait_s:
                raise LifecycleError(f'{what}: no {client.srv_name} service after '
                                     f'{self.wait_s:g} s')
        deadline = time.monotonic() + self.timeout_s
        while True:
            future = client.call_async(request)
            done = threading.Event()
            future.add_done_callback(lambda _f, done=done: done.set())
            left = deadline - time.monotonic()
            if done.wait(max(0.0, min(left, again_s) if again_s else left)):
                return future.result()
            client.remove_pending_request(future)
            if again_s is None or time.monotonic() >= deadline or self.stop.is_set():
                raise LifecycleError(f'{what}: no answer within {self.timeout_s:g} s')
            self.node.get_logger().warning(
                f'{what}: no answer within {again_s:g} s, asking again (a reply sent before '
                'the node discovered this one is lost)')

    def state(self, name: str) -> int:
        return self._call(self.get[name], GetState.Request(), f'{name} state',
                          self.ASK_AGAIN_S).current_state.id

    def change(self, name: str, transition: str) -> tuple[bool, str]:
        request = ChangeState.Request()
        request.transition.id = _TRANSITIONS[transition]
        response = self._call(self.set[name], request, f'{name} {transition}')
        if response.success:
            return True, ''
        return False, f'refused (see the log of {name})'


class LifecycleManager(Node):
    """Configures and activates lifecycle nodes in order, deactivates and cleans them up in
    reverse. A failed step stops the bring-up there and is logged with the node's name; the
    failed node stays where its transition left it (a failed configure: unconfigured).

    Parameters:
        node_names (string[]): the managed nodes, in bring-up order (names relative to this
            node's namespace).
        autostart (bool, true): bring them up at start.
        service_wait_s (double, 60): how long a node's lifecycle services may take to appear.
        transition_timeout_s (double, 120): how long one transition may take (configure
            loads the model).
    Services:
        lifecycle_manager/startup, lifecycle_manager/shutdown (std_srvs/Trigger).
    """

    def __init__(self, **kwargs):
        super().__init__('lifecycle_manager', **kwargs)

        def p(name, default, description):
            return self.declare_parameter(name, default, ParameterDescriptor(
                description=description, read_only=True)).value

        from rclpy.parameter import Parameter
        names = self.declare_parameter(
            'node_names', Parameter.Type.STRING_ARRAY, ParameterDescriptor(
                description='Managed lifecycle nodes, in bring-up order',
                read_only=True)).value or []
        autostart = p('autostart', True, 'Bring the nodes up at start')
        wait_s = float(p('service_wait_s', 60.0, 'Longest wait for lifecycle services'))
        timeout_s = float(p('transition_timeout_s', 120.0, 'Longest wait for a transition'))
        self._stop = threading.Event()
        self._busy = threading.Lock()
        group = ReentrantCallbackGroup()
        self.sequence = LifecycleSequence(names, ServiceTransport(
            self, names, wait_s, timeout_s, self._stop, group))
        self.create_service(Trigger, 'lifecycle_manager/startup', self._on_startup,
                            callback_group=group)
        self.create_service(Trigger, 'lifecycle_manager/shutdown', self._on_shutdown,
                            callback_group=group)
        self.status = 'idle'
        if autostart and names:
            self._thread = threading.Thread(target=self._startup, name='autostart',
                                            daemon=True)
            self._thread.start()

    def _startup(self) -> tuple[bool, str]:
        with self._busy:
            try:
                self.sequence.startup()
            except LifecycleError as exc:
                self.status = f'bring-up stopped: {exc}'
                self.get_logger().error(self.status)
                return False, self.status
            self.status = 'active: ' + ', '.join(self.sequence.names)
            self.get_logger().info(self.status)
            return True, self.status

    def _on_startup(self, _request, response):
        response.success, response.message = self._startup()
        return response

    def _on_shutdown(self, _request, response):
        with self._busy:
            results = self.sequence.shutdown()
        failed = [f'{r.node} {r.transition}: {r.reason}' for r in results if not r.ok]
        response.success = not failed
        response.message = '; '.join(failed) or 'down: ' + ', '.join(
            f'{r.node} {r.transition}' for r in results)
        return response

    def states(self) -> dict:
        """Each managed node's state label (for logs and tests)."""
        return {n: STATE_LABELS.get(self.sequence.transport.state(n), '?')
                for n in self.sequence.names}

    def quiesce(self) -> None:
        """Stop waiting: on Ctrl-C every process of the launch stops at once, so asking the
        others to go down would only wait on processes that are ending."""
        self._stop.set()


def main(args=None):
    run(LifecycleManager, args, executor=lambda: MultiThreadedExecutor(num_threads=3))


if __name__ == '__main__':
    main()
