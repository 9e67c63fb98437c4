"""IDLE-3: drives annotate salience; they never inject goals.

A drive reads one bodily quantity of the robot head (energy budget left, recent pain, how
much of its field of regard is unexplored, time since someone last interacted with it, how
full its episodic memory is) and turns it into a pressure in 0..1 and, when the pressure is
notable, a plain factual sentence for the idle situation. Facts, not suggestions: the model
decides what, if anything, to do about them. A drive whose threshold is crossed also lets a
goal through the spacing budget (IDLE-4).

`Drives(enabled=False)` (the `drives_enabled` switch) is the ablation: no facts, no
crossings; nothing else changes.
"""

from dataclasses import dataclass, field


@dataclass(frozen=True)
class DriveState:
    """What the body reports (the agent node fills it from energy_status, pain, memory stats
    and percepts). None means unknown: the drive stays silent."""

    energy_fraction: float | None = None        # 1 = full budget, 0 = exhausted
    pain_level: float | None = None             # 0..1, recent peak
    unexplored_fraction: float | None = None    # 0..1 of pan/tilt cells never looked at
    seconds_since_interaction: float | None = None
    memory_fill_fraction: float | None = None   # episodic store size / capacity


@dataclass(frozen=True)
class DriveConfig:
    """Thresholds: a fact is stated from `notice` pressure, a threshold crossed at `urgent`."""

    notice: float = 0.5
    urgent: float = 0.8
    energy_low_fraction: float = 0.2        # energy pressure 1.0 at/below this fraction left
    interaction_lonely_s: float = 3600.0    # social pressure 1.0 after this long alone

    def __post_init__(self):
        if not 0.0 <= self.notice <= self.urgent <= 1.0:
            raise ValueError('need 0 <= notice <= urgent <= 1')
        if not 0.0 < self.energy_low_fraction < 1.0 or self.interaction_lonely_s <= 0:
            raise ValueError('energy_low_fraction in (0, 1), interaction_lonely_s > 0')


@dataclass(frozen=True)
class InteroceptiveSummary:
    """What the drives say: pressures, the facts stated, the thresholds crossed."""

    pressures: dict = field(default_factory=dict)   # drive name -> 0..1
    facts: tuple = ()
    crossed: tuple = ()                              # drive names at or above `urgent`

    @property
    def text(self) -> str:
        return ' '.join(self.facts)

    @property
    def threshold_crossed(self) -> bool:
        return bool(self.crossed)


def _clamp(x: float) -> float:
    return max(0.0, min(1.0, float(x)))


class Drives:
    """Turns a DriveState into an InteroceptiveSummary."""

    def __init__(self, config: DriveConfig | None = None, enabled: bool = True):
        self.config = config or DriveConfig()
        self.enabled = bool(enabled)

    def pressures(self, state: DriveState) -> dict:
        cfg = self.config
        p = {}
        if state.energy_fraction is not None:
            used = 1.0 - _clamp(state.energy_fraction)
            p['energy'] = _clamp(used / (1.0 - cfg.energy_low_fraction))
        if state.pain_level is not None:
            p['pain'] = _clamp(state.pain_level)
        if state.unexplored_fraction is not None:
            p['novelty'] = _clamp(state.unexplored_fraction)
        if state.seconds_since_interaction is not None:
            p['social'] = _clamp(state.seconds_since_interaction / cfg.interaction_lonely_s)
        if state.memory_fill_fraction is not None:
            p['memory'] = _clamp(state.memory_fill_fraction)
        return p

    def summarize(self, state: DriveState | None) -> InteroceptiveSummary:
        if not self.enabled or state is None:
            return InteroceptiveSummary()
        pressures = self.pressures(state)
        facts, crossed = [], []
        for name, value in pressures.items():
            if value < self.config.notice:
                continue
            facts.append(self._fact(name, state))
            if value >= self.config.urgent:
                crossed.append(name)
        return InteroceptiveSummary(pressures, tuple(facts), tuple(crossed))

    @staticmethod
    def _fact(name: str, s: DriveState) -> str:
        # Descriptions of the body's state, in numbers; never a course of action.
        if name == 'energy':
            return f'Energy budget left: {100 * s.energy_fraction:.0f}%.'
        if name == 'pain':
            return f'Recent pain level: {s.pain_level:.2f} of 1.'
        if name == 'novelty':
            return f'Unexplored share of the field of regard: {100 * s.unexplored_fraction:.0f}%.'
        if name == 'social':
            return f'Time since the last interaction: {s.seconds_since_interaction / 60:.0f} min.'
        return f'Episodic memory fill: {100 * s.memory_fill_fraction:.0f}%.'
