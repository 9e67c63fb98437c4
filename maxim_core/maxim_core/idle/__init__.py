"""Idle introspection under the invariants IDLE-1 to IDLE-5 (seed 004), as plain Python.

tasks: the task store and the executor's circuit breaker; eligibility: when the robot is idle
and why (IDLE-1); intent: the `[GOAL: action target amount]` contract (IDLE-2); drives:
interoceptive facts (IDLE-3); budgets: rate, spacing, novelty and storage gates (IDLE-4);
provenance: the per-cycle record and the run comparison (IDLE-5); controller: one idle cycle.
The soak (hours of robot time on a simulated clock) is evaluation code: maxim_eval.soak.idle.
"""
