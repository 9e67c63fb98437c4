"""Ordered bring-up and reverse shutdown of lifecycle nodes, as nav2_lifecycle_manager does:
configure then activate each node in the given order, stopping at the first failure (a later
node may need an earlier one); deactivate then clean up in reverse order.

The sequence is plain Python over a small transport: the in-process runner drives the node
objects directly (`DirectTransport`), the lifecycle_manager node drives other processes
through their `<node>/get_state` and `<node>/change_state` services.
"""

from dataclasses import dataclass

# lifecycle_msgs/State primary state ids (kept here so the sequence needs no ROS import).
UNCONFIGURED, INACTIVE, ACTIVE, FINALIZED = 1, 2, 3, 4
STATE_LABELS = {0: 'unknown', UNCONFIGURED: 'unconfigured', INACTIVE: 'inactive',
                ACTIVE: 'active', FINALIZED: 'finalized'}

# What each step needs and leads to.
UP = (('configure', UNCONFIGURED, INACTIVE), ('activate', INACTIVE, ACTIVE))
DOWN = (('deactivate', ACTIVE, INACTIVE), ('cleanup', INACTIVE, UNCONFIGURED))


class LifecycleError(RuntimeError):
    """A transition failed or could not be asked for; the message names node and step."""


@dataclass
class StepResult:
    node: str
    transition: str
    ok: bool
    reason: str = ''


class LifecycleSequence:
    """Bring nodes up in order and down in reverse over a transport with
    `state(name) -> int` and `change(name, transition) -> (ok, reason)`."""

    def __init__(self, names, transport):
        self.names = list(names)
        self.transport = transport
        self.log: list[StepResult] = []

    def bring_up(self, name: str) -> None:
        """Configure and activate one node (steps it already took are skipped). A failed
        step raises LifecycleError; the node stays where the failure left it (a failed
        configure: unconfigured), and no transition its state lacks is attempted."""
        for transition, before, _after in UP:
            state = self.transport.state(name)
            if state == ACTIVE:
                return
            if state != before:
                continue
            ok, reason = self.transport.change(name, transition)
            self.log.append(StepResult(name, transition, ok, reason))
            if not ok:
                raise LifecycleError(f'{name}: {transition} failed: {reason or "no reason given"}')
        state = self.transport.state(name)
        if state != ACTIVE:
            raise LifecycleError(f'{name} is {STATE_LABELS.get(state, state)}, not active')

    def startup(self) -> None:
        """Every node up, in order; the first failure stops the bring-up (LifecycleError)."""
        for name in self.names:
            self.bring_up(name)

    def shutdown(self) -> list[StepResult]:
        """Every node down, in reverse order: deactivate the active, clean up the inactive.
        A node that refuses is recorded and the others still go down."""
        results = []
        for name in reversed(self.names):
            for transition, before, _after in DOWN:
                try:
                    if self.transport.state(name) != before:
                        continue
                    ok, reason = self.transport.change(name, transition)
                except LifecycleError as exc:
                    ok, reason = False, str(exc)
                results.append(StepResult(name, transition, ok, reason))
                if not ok:
                    break
        self.log.extend(results)
        return results


class DirectTransport:
    """Lifecycle transitions on node objects in this process (the runner's)."""

    def __init__(self, nodes: dict):
        self.nodes = nodes

    def state(self, name: str) -> int:
        node = self.nodes.get(name)
        if node is None:          # not started (or failed and destroyed): nothing to move
            return 0
        return node._state_machine.current_state[0]  # noqa: SLF001 - no public getter

    def change(self, name: str, transition: str) -> tuple[bool, str]:
        from rclpy.lifecycle import TransitionCallbackReturn

        node = self.nodes[name]
        result = getattr(node, f'trigger_{transition}')()
        if result == TransitionCallbackReturn.SUCCESS:
            return True, ''
        return False, getattr(node, 'last_error', '') or "see the node's log"
