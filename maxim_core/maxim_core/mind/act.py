"""The act: resolve -> review -> execute -> verify, then the pass written down as an episode.

Plain calls on the act's own collaborators, each a port or a part (the tool executor, the
fear port, the world verifier, the body, the event sink, the situation that pins pain on the
running act): nothing here calls back into the Mind. The last few outcomes are kept and told
to the next deliberation: a robot that just failed to move should know it before it tries
again.

Every pass names its situation with one short key (`agent.loop.context_key`): the fear gate
asks the NAc for a prediction under that key, and the episode carries it so memory's NAc
learns the outcome under the same key. What is learned is what is asked.
"""

from __future__ import annotations

from collections import deque
import json
import time
from typing import Any, Callable
import uuid

from maxim_common.errors import (ERROR_BLOCKED, ERROR_INVALID_ARGUMENTS, ERROR_UNKNOWN_TOOL,
                                 ERROR_VERIFICATION_FAILED)
from maxim_core.agent.loop import Decision, FAILED_STATUSES, Percept, ToolRun
from maxim_core.agent.verify import WorldVerifier
from maxim_core.fear.agent import ToolPainBridge
from maxim_core.mind.ports import EventSink, PainReport
from maxim_core.mind.situation import Situation
from maxim_core.tools.scope import ToolExecutor

RECENT_OUTCOMES = 5          # tool outcomes remembered for the next prompt


class Act:
    """One act of a pass, and the episode of that pass. `counts` is the Mind's counter dict
    (pains_sent is counted here)."""

    def __init__(self, executor: ToolExecutor, *, fear: Any, verifier: WorldVerifier,
                 body: Any, events: EventSink, situation: Situation, counts: dict,
                 mode: str, run_id: str, clock: Callable[[], float] = time.monotonic,
                 robot_clock: Callable[[], float] = time.time):
        self.executor, self.fear, self.verifier, self.body = executor, fear, verifier, body
        self.events, self.situation, self.counts = events, situation, counts
        self.mode, self.run_id = mode, run_id
        self.clock, self.robot_clock = clock, robot_clock
        self.recent: deque = deque(maxlen=RECENT_OUTCOMES)
        self.pain_bridge = ToolPainBridge(pain=self._pain)
        self.causal_notes: list[str] = []   # the NAc's values in words, for the context
        self.unknown_tool_calls = 0      # actions naming no registered tool (nor an alias)
        self.resolved_aliases = 0        # actions whose name resolved to another tool's

    def context_text(self, goal: str) -> str:
        """The goal, recent outcomes and learned causal links, for the next deliberation."""
        lines = [f'Current goal: {goal}'] if goal else []
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

    # -- resolve -> review -> execute -> verify ----------------------------------------------
    def run(self, decision: Decision, context: str, key: str, active: list[str]) -> ToolRun:
        """The decided action, from its name to its checked outcome (`active`: the names the
        model may use now)."""
        action = decision.action or {}
        requested = str(action.get('tool', ''))
        args = action.get('args') or {}
        run = ToolRun(call_id=uuid.uuid4().hex[:12], tool=requested, args=args,
                      requested_name=requested, context=key)
        if not isinstance(args, dict):
            run.error_code, run.error_msg = ERROR_INVALID_ARGUMENTS, 'args must be an object'
            return self._finish(run)
        try:
            run.tool, run.introspection = self.executor.resolve(requested, active)
        except KeyError as exc:
            self.unknown_tool_calls += 1
            run.error_code = ERROR_UNKNOWN_TOOL
            run.error_msg = str(exc.args[0]) if exc.args else f'unknown tool {requested!r}'
            return self._finish(run)
        if run.tool != requested:
            self.resolved_aliases += 1
        self.events.tool_call(run)
        verdict = self._review(run, context)
        if not verdict.get('allowed', False):
            run.blocked = True
            run.blocked_reason = verdict.get('reason', 'blocked')
            run.blocked_layer = int(verdict.get('layer', 0))
            run.error_code, run.error_msg = ERROR_BLOCKED, run.blocked_reason
            return self._finish(run)
        start = self.body.head_position() if self.body is not None else None
        self.situation.acting(run.tool, run.args)
        t0 = self.clock()
        self._execute(run)
        run.duration_s = self.clock() - t0
        if run.success:
            self._verify(run, start)
        return self._finish(run)

    def _review(self, run: ToolRun, context: str) -> dict:
        if self.fear is None:
            return {'allowed': False, 'layer': 255, 'reason': 'no fear gate: blocked to be safe'}
        return self.fear.review(run, context)

    def _execute(self, run: ToolRun) -> None:
        outcome = self.executor.execute(run.tool, run.args)
        run.success = bool(outcome.success)
        run.output = outcome.text()
        run.error_code = int(outcome.error_code)
        run.error_msg = outcome.error_msg
        run.data = dict(getattr(outcome, 'data', {}) or {})

    def _verify(self, run: ToolRun, start) -> None:
        """What the tool claims, against the world where it can be checked (`start`: where
        the head was when the call was made; a relative move is relative to that)."""
        checked = self.verifier(run, start=start)
        if checked is None:
            return
        run.verified, run.verification = checked
        if not run.verified:
            run.success = False
            run.error_code = ERROR_VERIFICATION_FAILED
            run.error_msg = f'the world disagrees: {run.verification}'

    def _finish(self, run: ToolRun) -> ToolRun:
        self.recent.append(run)
        self.situation.acted(run, self.robot_clock())
        self.events.tool_result(run)
        self.pain_bridge.record(run.tool, run.context, run.success, run.error_code,
                                run.error_msg)
        return run

    def _pain(self, signal: dict) -> None:
        """Pain from the act's own failure (the ToolPainBridge escalates repeats)."""
        self.counts['pains_sent'] += 1
        self.events.pain(PainReport.from_dict(signal))

    # -- record ------------------------------------------------------------------------------
    def episode(self, percept: Percept, decision: Decision, run: ToolRun | None,
                duration_s: float, key: str, goal: str) -> dict:
        """The pass as memory keeps it (maxim_interfaces/Episode's fields)."""
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
            'episode_id': uuid.uuid4().hex, 'run_id': self.run_id,
            'perception': percept.narrative, 'detected_objects': list(percept.objects),
            'detected_people': list(percept.people), 'salience': float(percept.salience),
            'novelty': float(percept.novelty), 'goal': goal, 'mode': self.mode,
            'context_json': json.dumps({'context': key, 'percept_id': percept.percept_id,
                                        'source': percept.source,
                                        'deliberation_id': decision.deliberation_id}),
            'intent': (f'{run.tool} {json.dumps(run.args, sort_keys=True)}' if run
                       else 'no action'),
            'reasoning': decision.reasoning, 'confidence': float(decision.confidence),
            'cycles': int(decision.cycles), 'tool_name': run.tool if run else '',
            'arguments_json': json.dumps(run.args) if run else '',
            'success': bool(success), 'valence': float(valence), 'outcome': outcome,
            'blocked': bool(run.blocked) if run else False,
            'verified': bool(run.verified) if run else False,
            'error': run.error_msg if run else '', 'duration_s': float(duration_s),
        }
