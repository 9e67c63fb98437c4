"""The agent loop: perceive -> decide -> act -> evaluate, as plain Python.

One pass takes a percept, lets the mind deliberate on it (the `think` callable: gate,
enrichment and cycles live behind it), sends the chosen action through the fear gate, runs
it, checks what it claims against the world where that can be checked, and writes the whole
pass down as an episode for memory. Everything that touches ROS is injected, so the loop is
tested without it; the agent node supplies ROS-backed callables.

The last few tool outcomes are kept and given to the next deliberation as context: a robot
that just failed to move should know it before it tries again.

Every pass also names its situation with one short key (`context_key`): the fear gate asks the
NAc for a prediction under that key, and the episode carries it so memory's NAc learns the
outcome under the same key. What is learned is what is asked.
"""

from collections import deque
from dataclasses import dataclass, field
import json
import re
import time
from typing import Callable
import uuid

from maxim_common.errors import (ERROR_BLOCKED, ERROR_INVALID_ARGUMENTS, ERROR_UNKNOWN_TOOL,
                                 ERROR_VERIFICATION_FAILED)


@dataclass
class Percept:
    """What the agent deliberates on (maps onto maxim_interfaces/Percept)."""

    narrative: str
    percept_id: str = ''
    source: str = 'vision'
    objects: list = field(default_factory=list)    # labels
    people: list = field(default_factory=list)     # labels or names
    novelty: float = 0.0
    salience: float = 0.0


def context_key(percept: Percept, goal: str = '') -> str:
    """The situation a tool outcome is learned and predicted under (the NAc's context key).

    What is in view names the situation: up to three object labels, lower case, sorted,
    joined by '+' (memory's own rule for episodes that carry no key). With nothing in view,
    the goal's words; with no goal either, 'none'.
    """
    labels = sorted({str(o).strip().lower() for o in percept.objects if str(o).strip()})
    if labels:
        return '+'.join(labels[:3])
    words = re.findall(r'[a-z0-9]+', goal.lower())
    return '_'.join(words) or 'none'


@dataclass
class Decision:
    """What deliberation concluded (the last thought of a deliberation)."""

    status: str                      # 'ready', 'converged', 'cycle_cap', 'gated', or a failure
    reasoning: str = ''
    action: dict | None = None       # {"tool": name, "args": {...}} or None
    cycles: int = 0
    confidence: float = 0.0
    deliberation_id: str = ''


@dataclass
class ToolRun:
    """A tool call and what became of it (maps onto ToolCall + ToolResult)."""

    call_id: str
    tool: str
    args: dict
    requested_name: str = ''
    introspection: bool = False
    context: str = ''            # the situation's NAc key (context_key)
    success: bool = False
    output: str = ''
    blocked: bool = False
    blocked_reason: str = ''
    blocked_layer: int = 0
    verified: bool = False
    verification: str = ''
    error_code: int = 0          # ToolResult.ERROR_* values
    error_msg: str = ''
    duration_s: float = 0.0
    data: dict = field(default_factory=dict)   # the tool's structured output


@dataclass
class LoopResult:
    """One pass of the loop."""

    percept: Percept
    decision: Decision
    run: ToolRun | None
    episode: dict | None


# Decision statuses that mean the mind did not produce a usable decision.
FAILED_STATUSES = ('timeout', 'model_error', 'unparsable', 'cancelled')


@dataclass(frozen=True)
class LoopConfig:
    mode: str = 'passive'
    run_id: str = ''
    goal: str = ''
    recent_outcomes: int = 5          # tool outcomes remembered for the next prompt
    record_gated: bool = False        # write episodes for percepts the gate let pass by


class AgentLoop:
    """Closes perceive -> decide -> act -> evaluate.

    Injected callables:
      think(percept, context_text) -> Decision
      resolve(name) -> (tool_name, introspection) or raises KeyError (unknown tool)
      review(run, context_text) -> dict with allowed, layer, reason (fear gate); run.context
          holds the situation's NAc key
      execute(run) -> ToolRun (fills success/output/error_*; never raises)
      verify(run) -> (verified, note) or None when the claim cannot be checked
      record_episode(dict) -> None
      on_call(run) / on_result(run) -> None (publish)
      on_outcome(run) -> None (NAc and pain learning from the outcome)
    """

    def __init__(self, config: LoopConfig, think: Callable, resolve: Callable,
                 review: Callable, execute: Callable, record_episode: Callable,
                 verify: Callable | None = None, on_call: Callable | None = None,
                 on_result: Callable | None = None, on_outcome: Callable | None = None,
                 clock: Callable[[], float] = time.monotonic):
        self.config = config
        self.think = think
        self.resolve = resolve
        self.review = review
        self.execute = execute
        self.verify = verify
        self.record_episode = record_episode
        self.on_call = on_call or (lambda run: None)
        self.on_result = on_result or (lambda run: None)
        self.on_outcome = on_outcome or (lambda run: None)
        self.clock = clock
        self.recent: deque = deque(maxlen=max(1, config.recent_outcomes))
        self.causal_notes: list[str] = []
        self.goal = config.goal
        self.unknown_tool_calls = 0      # actions naming no registered tool (nor an alias)
        self.resolved_aliases = 0        # actions whose name resolved to another tool's

    def context_text(self, goal: str | None = None) -> str:
        """Recent outcomes and learned causal links, for the next deliberation."""
        lines = []
        goal = self.goal if goal is None else goal
        if goal:
            lines.append(f'Current goal: {goal}')
        if self.recent:
            lines.append('Your last actions:')
            for run in self.recent:
                status = ('blocked: ' + run.blocked_reason if run.blocked
                          else 'ok' if run.success else 'failed: ' + run.error_msg)
                lines.append(f'- {run.tool} {json.dumps(run.args, sort_keys=True)[:120]}'
                             f' -> {status}')
        if self.causal_notes:
            lines.append('What you have learned:')
            lines.extend(f'- {note}' for note in self.causal_notes[:5])
        return '\n'.join(lines)

    def step(self, percept: Percept, *, goal: str | None = None,
             think_options: dict | None = None) -> LoopResult:
        """One pass. `goal` overrides the standing goal for this pass only (a task's turn, a
        Deliberate request); `think_options` go to `think` as keywords."""
        t0 = self.clock()
        goal = self.goal if goal is None else goal
        context = self.context_text(goal)
        key = context_key(percept, goal)
        decision = self.think(percept, context, **(think_options or {}))
        if decision.status == 'gated' and not self.config.record_gated:
            return LoopResult(percept, decision, None, None)
        run = None
        if decision.action and decision.status not in FAILED_STATUSES:
            run = self._act(decision, context, key)
        episode = self._episode(percept, decision, run, self.clock() - t0, key, goal)
        self.record_episode(episode)
        return LoopResult(percept, decision, run, episode)

    def _act(self, decision: Decision, context: str, key: str) -> ToolRun:
        action = decision.action or {}
        requested = str(action.get('tool', ''))
        args = action.get('args') or {}
        run = ToolRun(call_id=uuid.uuid4().hex[:12], tool=requested, args=args,
                      requested_name=requested, context=key)
        if not isinstance(args, dict):
            run.error_code, run.error_msg = ERROR_INVALID_ARGUMENTS, 'args must be an object'
            return self._finish(run)
        try:
            run.tool, run.introspection = self.resolve(requested)
        except KeyError as exc:
            self.unknown_tool_calls += 1
            run.error_code = ERROR_UNKNOWN_TOOL
            run.error_msg = str(exc.args[0]) if exc.args else f'unknown tool {requested!r}'
            return self._finish(run)
        if run.tool != requested:
            self.resolved_aliases += 1
        self.on_call(run)
        verdict = self.review(run, context)
        if not verdict.get('allowed', False):
            run.blocked = True
            run.blocked_reason = verdict.get('reason', 'blocked')
            run.blocked_layer = int(verdict.get('layer', 0))
            run.error_code, run.error_msg = ERROR_BLOCKED, run.blocked_reason
            return self._finish(run)
        t0 = self.clock()
        run = self.execute(run)
        run.duration_s = self.clock() - t0
        if run.success and self.verify is not None:
            checked = self.verify(run)
            if checked is not None:
                run.verified, run.verification = checked
                if not run.verified:
                    run.success = False
                    run.error_code = ERROR_VERIFICATION_FAILED
                    run.error_msg = f'the world disagrees: {run.verification}'
        return self._finish(run)

    def _finish(self, run: ToolRun) -> ToolRun:
        self.recent.append(run)
        self.on_result(run)
        self.on_outcome(run)
        return run

    def _episode(self, percept: Percept, decision: Decision, run: ToolRun | None,
                 duration_s: float, key: str, goal: str) -> dict:
        if run is None:
            success = decision.status not in FAILED_STATUSES
            valence = 0.0
            outcome = f'thought only ({decision.status})'
        else:
            success = run.success
            valence = 1.0 if run.success else -1.0 if (run.blocked or run.error_code) else 0.0
            outcome = (f'blocked: {run.blocked_reason}' if run.blocked else
                       f'{run.tool} succeeded' + (' (verified)' if run.verified else '')
                       if run.success else f'{run.tool} failed: {run.error_msg}')
        return {
            'episode_id': uuid.uuid4().hex,
            'run_id': self.config.run_id,
            'perception': percept.narrative,
            'detected_objects': list(percept.objects),
            'detected_people': list(percept.people),
            'salience': float(percept.salience),
            'novelty': float(percept.novelty),
            'goal': goal,
            'mode': self.config.mode,
            'context_json': json.dumps({'context': key, 'percept_id': percept.percept_id,
                                        'source': percept.source,
                                        'deliberation_id': decision.deliberation_id}),
            'intent': (f'{run.tool} {json.dumps(run.args, sort_keys=True)}' if run
                       else 'no action'),
            'reasoning': decision.reasoning,
            'confidence': float(decision.confidence),
            'cycles': int(decision.cycles),
            'tool_name': run.tool if run else '',
            'arguments_json': json.dumps(run.args) if run else '',
            'success': bool(success),
            'valence': float(valence),
            'outcome': outcome,
            'blocked': bool(run.blocked) if run else False,
            'verified': bool(run.verified) if run else False,
            'error': run.error_msg if run else '',
            'duration_s': float(duration_s),
        }
