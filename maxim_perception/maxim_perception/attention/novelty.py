"""Novelty that habituates and recovers, and salience: what should draw the gaze now.

Habituation is the drop in response to a repeated stimulus: a target's novelty decays while
the gaze rests on it (fast, `focus_tau_s`) and while it merely stays in view (slowly,
`view_tau_s`), and recovers towards 1 when it is out of focus (`recover_tau_s`). Familiarity
is also remembered per label: a "red object" that reappears soon after one was watched does
not start fully novel.
"""

from dataclasses import dataclass
import math

from maxim_perception.attention.detectors import KIND_COLOR, KIND_FACE, KIND_MOTION


@dataclass(frozen=True)
class NoveltyConfig:
    focus_tau_s: float = 4.0       # novelty e-folding time while in focus
    view_tau_s: float = 40.0       # ... while in view but not in focus
    recover_tau_s: float = 20.0    # recovery towards 1 while not in focus
    label_memory_tau_s: float = 30.0  # how long a label stays familiar after it was seen

    def __post_init__(self) -> None:
        for name in ('focus_tau_s', 'view_tau_s', 'recover_tau_s', 'label_memory_tau_s'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f'{name} must be > 0, got {value}')


class NoveltyModel:
    """Per-track novelty in 0..1; call `update()` once per frame."""

    def __init__(self, config: NoveltyConfig | None = None) -> None:
        self.config = config or NoveltyConfig()
        self._novelty: dict[int, float] = {}
        self._label_of: dict[int, str] = {}
        # label -> (familiarity 0..1 at time t0, t0)
        self._familiar: dict[str, tuple[float, float]] = {}
        self._last_t: float | None = None

    def familiarity(self, label: str, t: float) -> float:
        fam, t0 = self._familiar.get(label, (0.0, t))
        return fam * math.exp(-max(0.0, t - t0) / self.config.label_memory_tau_s)

    def novelty(self, track_id: int) -> float:
        return self._novelty.get(track_id, 1.0)

    def update(self, tracks: dict[int, str], focus_id: int | None, t: float) -> dict[int, float]:
        """Advance to time t. `tracks`: id -> label of the targets in view now."""
        if not math.isfinite(t):
            raise ValueError(f'time must be finite, got {t}')
        dt = 0.0 if self._last_t is None else max(0.0, t - self._last_t)
        self._last_t = t if self._last_t is None else max(self._last_t, t)
        cfg = self.config
        for tid, label in tracks.items():
            if tid not in self._novelty:
                self._novelty[tid] = 1.0 - 0.7 * self.familiarity(label, t)
                self._label_of[tid] = label
                continue
            n = self._novelty[tid]
            if tid == focus_id:
                n *= math.exp(-dt / cfg.focus_tau_s)
            else:
                # Recovery towards 1 and slow habituation to what stays in view, combined.
                n = 1.0 - (1.0 - n) * math.exp(-dt / cfg.recover_tau_s)
                n *= math.exp(-dt / cfg.view_tau_s)
            self._novelty[tid] = min(1.0, max(0.0, n))
        for tid in [tid for tid in self._novelty if tid not in tracks]:
            self._remember(self._label_of.pop(tid), 1.0 - self._novelty.pop(tid), t)
        return {tid: self._novelty[tid] for tid in tracks}

    def _remember(self, label: str, familiarity: float, t: float) -> None:
        self._familiar[label] = (max(self.familiarity(label, t), familiarity), t)


KIND_WEIGHT = {KIND_FACE: 0.35, KIND_MOTION: 0.2, KIND_COLOR: 0.15}


@dataclass(frozen=True)
class SalienceWeights:
    novelty: float = 0.45
    kind: float = 1.0      # scales KIND_WEIGHT
    moving: float = 0.15
    size: float = 0.15     # sqrt of the image fraction the box covers
    centre: float = 0.05   # a little preference for what is already near the centre


def salience(kind: str, novelty: float, moving: bool, area_frac: float,
             centre_dist: float, weights: SalienceWeights = SalienceWeights()) -> float:
    """How strongly a target draws attention now, 0..1.

    centre_dist: the target's distance from the image centre over the half diagonal (0..1).
    """
    s = (weights.novelty * novelty + weights.kind * KIND_WEIGHT.get(kind, 0.1)
         + weights.moving * float(moving)
         + weights.size * math.sqrt(min(1.0, max(0.0, area_frac)))
         + weights.centre * (1.0 - min(1.0, max(0.0, centre_dist))))
    return min(1.0, max(0.0, s))
