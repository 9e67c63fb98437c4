"""IDLE-4: idle introspection is bounded; silence is a valid, enforced outcome.

Goal budget: at most `max_goals_per_hour_in_backoff` goal emissions in any sliding hour
while the idle reason is all_in_backoff (and `max_goals_per_hour` in any case), at least
`min_goal_spacing_s` between goal-tagged outputs unless an interoceptive threshold is
crossed, and a novelty gate that refuses a goal which failed deterministically within
`novelty_window_s` (it would fail the same way again).

Storage gate: an idle thought is stored as an episode only when it carries a committed
intent, reflects a salient event delta, or is due as an identity checkpoint; otherwise it is
logged (provenance) and forgotten, so hours of idling do not fill episodic memory. Stored
thought-only reflections (salient delta, checkpoint) are also capped per sliding hour.
"""

from collections import deque
from dataclasses import dataclass

# Suppression reasons (IdleProvenance.suppression_reason).
NOVELTY_GATE = 'novelty_gate'
RATE_LIMIT_BACKOFF = 'rate_limit_backoff'
RATE_LIMIT_HOUR = 'rate_limit_hour'
MIN_SPACING = 'min_spacing'
DUPLICATE_TASK = 'duplicate_open_task'   # decided by the controller against the store
UNGROUNDED = 'ungrounded_intent'         # the tag echoes the contract or names nothing known

# Storage reasons.
STORE_INTENT = 'committed_intent'
STORE_SALIENT = 'salient_delta'
STORE_CHECKPOINT = 'identity_checkpoint'
NOT_STORED = 'gated'
REFLECTION_CAP = 'reflection_cap'    # would pass a gate, but the hourly cap is spent
STORED_REASONS = (STORE_INTENT, STORE_SALIENT, STORE_CHECKPOINT)


@dataclass(frozen=True)
class BudgetConfig:
    """Every bound of idle introspection (defaults from seed 004)."""

    max_goals_per_hour_in_backoff: int = 2
    max_goals_per_hour: int = 4
    rate_window_s: float = 3600.0
    min_goal_spacing_s: float = 300.0
    threshold_bypasses_spacing: bool = True
    novelty_window_s: float = 3600.0
    salient_delta_threshold: float = 0.7
    identity_checkpoint_interval_s: float = 3600.0
    max_stored_reflections_per_hour: int = 2    # thought-only idle episodes (not intents)

    def __post_init__(self):
        if min(self.max_goals_per_hour_in_backoff, self.max_goals_per_hour,
               self.max_stored_reflections_per_hour) < 0:
            raise ValueError('rate limits must be >= 0')
        if min(self.rate_window_s, self.identity_checkpoint_interval_s) <= 0:
            raise ValueError('rate_window_s and identity_checkpoint_interval_s must be > 0')
        if self.min_goal_spacing_s < 0 or self.novelty_window_s < 0:
            raise ValueError('min_goal_spacing_s and novelty_window_s must be >= 0')
        if not 0.0 <= self.salient_delta_threshold <= 1.0:
            raise ValueError('salient_delta_threshold must be in 0..1')


class GoalBudget:
    """Decides whether a goal-tagged output may become a task now."""

    def __init__(self, config: BudgetConfig | None = None):
        self.config = config or BudgetConfig()
        # Bounded: no more emissions fit in a window than the hourly cap (+1 for safety).
        self._emissions: deque = deque(maxlen=max(8, self.config.max_goals_per_hour + 1))

    def emissions_in_window(self, now: float) -> int:
        start = now - self.config.rate_window_s
        return sum(1 for at, _ in self._emissions if start < at <= now)

    def last_emission_at(self) -> float | None:
        return self._emissions[-1][0] if self._emissions else None

    def check(self, goal: str, idle_reason: str | None, now: float,
              threshold_crossed: bool = False, failed_goals=()) -> str | None:
        """The suppression reason for emitting `goal` now, or None when it may pass."""
        cfg = self.config
        if goal in set(failed_goals):
            return NOVELTY_GATE
        count = self.emissions_in_window(now)
        if idle_reason == 'all_in_backoff' and count >= cfg.max_goals_per_hour_in_backoff:
            return RATE_LIMIT_BACKOFF
        if count >= cfg.max_goals_per_hour:
            return RATE_LIMIT_HOUR
        last = self.last_emission_at()
        if last is not None and now - last < cfg.min_goal_spacing_s:
            if not (threshold_crossed and cfg.threshold_bypasses_spacing):
                return MIN_SPACING
        return None

    def record(self, goal: str, now: float) -> None:
        self._emissions.append((now, goal))


class StorageGate:
    """Decides whether an idle thought becomes an episode."""

    def __init__(self, config: BudgetConfig | None = None):
        self.config = config or BudgetConfig()
        self.last_checkpoint_at: float | None = None
        self._stored: deque = deque(maxlen=max(1, self.config.max_stored_reflections_per_hour))

    def checkpoint_due(self, now: float) -> bool:
        return (self.last_checkpoint_at is None
                or now - self.last_checkpoint_at >= self.config.identity_checkpoint_interval_s)

    def _reflection_room(self, now: float) -> bool:
        cap = self.config.max_stored_reflections_per_hour
        start = now - self.config.rate_window_s
        return sum(1 for at in self._stored if at > start) < cap

    def decide(self, has_thought: bool, committed: bool, salient_delta: float,
               now: float) -> str:
        """The storage reason (STORE_*), NOT_STORED or REFLECTION_CAP."""
        if committed:
            return STORE_INTENT
        if not has_thought:
            return NOT_STORED
        if salient_delta >= self.config.salient_delta_threshold:
            reason = STORE_SALIENT
        elif self.checkpoint_due(now):
            reason = STORE_CHECKPOINT
        else:
            return NOT_STORED
        if not self._reflection_room(now):
            return REFLECTION_CAP
        if reason == STORE_CHECKPOINT:
            self.last_checkpoint_at = now
        self._stored.append(now)
        return reason
