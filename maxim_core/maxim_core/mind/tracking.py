"""A track the Mind asked for, watched against what the robot sees.

track_target succeeds when the head controller takes the goal; whether the target stays in
view is known later, from the views perception sends (a percept each time the scene changes).
A view without the tracked thing ends the watch and becomes a percept for the mind, as an
act's result does: the track lost its target, where it was last seen, and that the head looks
for it there (the head controller does: `maxim_perception.head.control`). The mind then does
not go on believing it sees it. Nothing here reads a clock: times are passed in.
"""

from __future__ import annotations

from dataclasses import dataclass
import math

from maxim_common.labels import resolve_label


@dataclass(frozen=True)
class Lost:
    """A track that lost its target: what it followed, for how long, and where the head was
    when it last saw it ((pan, tilt) rad; None when no joint state came)."""

    label: str
    goal_id: str
    tracked_s: float
    last_head: tuple[float, float] | None

    def text(self) -> str:
        where = (f' (head at pan {self.last_head[0]:.2f}, tilt {self.last_head[1]:.2f} rad)'
                 if self.last_head is not None else '')
        return (f'Your track_target lost the {self.label}: it is no longer in view, after '
                f'{self.tracked_s:.1f} s. The head looks where it was last seen{where} and '
                f'follows it again if it comes back; you do not see it now.')


class TrackWatch:
    """The one track under way, if any (`start`, `stop`), checked at each view (`view`)."""

    def __init__(self):
        self._track: tuple | None = None   # (label, goal_id, started, until, last seen head)

    @property
    def label(self) -> str | None:
        return self._track[0] if self._track is not None else None

    def start(self, label: str, goal_id: str, now: float, duration_s: float = 0.0,
              head: tuple[float, float] | None = None) -> None:
        """A track_target goal was sent for `label` (for `duration_s`, 0: until replaced)."""
        until = now + duration_s if duration_s > 0 else math.inf
        self._track = (label, goal_id, now, until, head)

    def stop(self) -> None:
        """Another head goal replaced the track."""
        self._track = None

    def view(self, labels: list[str], now: float,
             head: tuple[float, float] | None = None) -> Lost | None:
        """A view (the labels of everything in it) at `now`; a `Lost` once, when the tracked
        thing is not among them (the watch then ends)."""
        if self._track is None:
            return None
        label, goal_id, started, until, seen_head = self._track
        if now >= until:
            self._track = None              # the goal expired: the reflex has the head
            return None
        if resolve_label(label, labels) is not None:
            self._track = (label, goal_id, started, until, head or seen_head)
            return None
        self._track = None
        return Lost(label, goal_id, max(0.0, now - started), seen_head)
