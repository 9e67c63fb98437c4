"""The agent's Deliberate action: a goal is one pass of the Mind, its thoughts as feedback.

A goal's execute callback holds an executor thread while the Mind thinks, and the model calls
of that thinking need another thread to take their replies. Goals that waited for each other
would hold every thread and starve those replies, so one goal runs at a time and another is
answered busy at once; a goal may not ask more cycles than the node allows, so each ends
within its cycles' model timeouts. A goal while the agent is not active is refused at once.
"""

import threading

from rclpy.action import ActionServer, CancelResponse

from maxim_core import conversions as conv
from maxim_core.llm.backend import LLMError
from maxim_interfaces.action import Deliberate
from maxim_interfaces.msg import Thought


class DeliberateServer:
    """agent/deliberate (Deliberate) on `node`, thinking with `live(what)`: the Mind while
    the node is active, else None. `max_cycles` may be changed while it serves."""

    def __init__(self, node, live, max_cycles: int, callback_group=None):
        self.live, self.max_cycles = live, max_cycles
        self._one_goal = threading.Lock()
        self._server = ActionServer(node, Deliberate, 'agent/deliberate', self._execute,
                                    cancel_callback=lambda _g: CancelResponse.ACCEPT,
                                    callback_group=callback_group)

    def destroy(self) -> None:
        self._server.destroy()

    def _execute(self, handle):
        goal, result = handle.request, Deliberate.Result()
        mind = self.live('Deliberate goal')
        if mind is None:
            result.status = Deliberate.Result.STATUS_INVALID_REQUEST
            result.status_msg = 'the agent is not active (lifecycle): no goal is taken'
        elif goal.max_cycles > self.max_cycles:
            result.status = Deliberate.Result.STATUS_INVALID_REQUEST
            result.status_msg = (f'max_cycles {goal.max_cycles} is more than a goal may ask '
                                 f'({self.max_cycles}, deliberation.goal_max_cycles)')
        elif not self._one_goal.acquire(blocking=False):
            result.status = Deliberate.Result.STATUS_TIMEOUT
            result.status_msg = 'the agent is busy with another Deliberate goal'
        else:
            try:
                return self._deliberate(mind, handle, goal, result)
            finally:
                self._one_goal.release()
        handle.abort()
        return result

    def _deliberate(self, mind, handle, goal, result):
        feedback = []

        def on_thought(t):
            msg = conv.thought_to_msg(t, Thought())
            feedback.append(msg)
            handle.publish_feedback(Deliberate.Feedback(thought=msg))
            if handle.is_cancel_requested:
                mind.cancel()

        kwargs = dict(goal=goal.goal or None, force=goal.force, on_thought=on_thought,
                      max_cycles=goal.max_cycles, timeout_s=mind.config.deliberation
                      .llm_timeout_s)
        try:
            percept = conv.msg_to_percept(goal.percept)
            if goal.execute:
                step = mind.step(percept, **kwargs)
                res = step.deliberation if step else None
                if step is not None and step.loop.run is not None:
                    conv.run_to_result(step.loop.run, result.tool_result,
                                       res.deliberation_id if res else '')
            else:
                res = mind.deliberate(percept, **kwargs)
        except LLMError as exc:
            result.status, result.status_msg = Deliberate.Result.STATUS_MODEL_ERROR, str(exc)
            handle.abort()
            return result
        except ValueError as exc:       # a percept that cannot be thought about
            result.status = Deliberate.Result.STATUS_INVALID_REQUEST
            result.status_msg = str(exc)
            handle.abort()
            return result
        if res is None:
            result.status = Deliberate.Result.STATUS_TIMEOUT
            result.status_msg = 'the agent stayed busy with another deliberation'
            handle.abort()
            return result
        result.status = int(res.code)
        if res.status == 'ready' and goal.execute and result.tool_result.call.tool_name:
            result.status = Deliberate.Result.STATUS_ACTED
        result.status_msg = res.status_msg or res.status
        result.deliberation_id, result.cycles = res.deliberation_id, int(res.cycles)
        result.action_json, result.thoughts = res.action_json, feedback
        if res.status != 'cancelled':
            handle.succeed()
        elif handle.is_cancel_requested:
            handle.canceled()
        else:       # the agent stopping ended it: no client asked, so it cannot be 'canceled'
            handle.abort()
        return result
