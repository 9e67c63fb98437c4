"""The agent node's body port: where the head is, and whether its motor answers, from
head/state; the joint limits a move is checked against, from the URDF."""

import math

from maxim_common.conversions import stamp_to_seconds
from maxim_common.urdf import read_head_limits, UrdfError
from maxim_core.agent.loop import Percept

HEAD_EXTRAPOLATE_S = 0.2     # a head state older than this is carried no further


def head_limits(urdf: str, warn) -> dict | None:
    """The head's joint limits from the URDF (their one source; '': the shipped one); None,
    said with `warn`, when it cannot be read: the head controller's clamp is then the only
    check of a move."""
    try:
        return read_head_limits(urdf)
    except UrdfError as exc:
        warn(f'{exc}: moves are not checked against joint limits')
        return None


class HeadBody:
    """The Mind's BodyPort: `head_position()` from the head/state messages given to
    `update`; head goals leave by the event sink (one message per goal), so
    `send_head_goal` has nothing to do. `now()` is the node's clock in seconds. `limits`:
    {'pan': (lo, hi), 'tilt': (lo, hi)} rad, those of the URDF at `urdf` ('': the shipped
    one; None: no URDF, limits unknown).

    `update` also follows the head driver's state (HeadState.driver_ok, error_msg): when the
    motor stops answering, or answers again, `news` holds a line for the mind to perceive
    (the node offers it as a percept), once per change, and `warn` says it on the log."""

    def __init__(self, now, urdf: str | None = None, warn=lambda line: None):
        self._now = now
        self._warn = warn
        self.limits = None if urdf is None else head_limits(urdf, warn)
        self.head = None               # (pan, tilt) last measured
        self.state = None              # (pan velocity, tilt velocity, stamp seconds)
        self.driver_ok: bool | None = None   # None: no head state yet
        self.news: str | None = None   # the driver's change at the last update, if any

    def update(self, msg) -> tuple | None:
        """Take a HeadState; the (pan, tilt) it measured, None for a non-finite reading (no
        position: the last good one stands)."""
        self.news = self._driver_news(bool(getattr(msg, 'driver_ok', True)),
                                      str(getattr(msg, 'driver', '') or 'head'),
                                      str(getattr(msg, 'error_msg', '')))
        if self.news is not None:
            self._warn(self.news)
        head = (msg.pan, msg.tilt)
        if not all(isinstance(v, float) and math.isfinite(v) for v in head):
            return None
        self.head = head
        self.state = (msg.pan_velocity, msg.tilt_velocity, stamp_to_seconds(msg.header.stamp))
        return head

    def _driver_news(self, ok: bool, driver: str, error: str) -> str | None:
        """A line when the driver's state changes: it went down (also when the first state
        says it is down), or it is back after having been down."""
        was, self.driver_ok = self.driver_ok, ok
        if not ok and was is not False:
            return (f'My neck motor stopped answering ({driver} driver: '
                    f'{error or "no reason given"}). My head holds where it is and will not '
                    'move until the motor answers again; the head controller keeps trying.')
        if ok and was is False:
            return f'My neck motor answers again ({driver} driver): my head can move.'
        return None

    def news_percept(self, percept_id: str) -> Percept:
        """The driver's news as a percept of the body, salient: the mind thinks about it."""
        return Percept(self.news or '', percept_id, source='body', salience=1.0)

    def head_position(self):
        """Where the head is: the last measured state, carried forward along its velocity
        for the time since (at most HEAD_EXTRAPOLATE_S: the state comes ~10 times a
        second, and a relative move is measured from where the head was when it was
        sent)."""
        if self.head is None or self.state is None:
            return self.head
        vp, vt, stamp = self.state
        age = self._now() - stamp
        if not (math.isfinite(vp) and math.isfinite(vt)) or stamp <= 0 or age <= 0:
            return self.head
        age = min(age, HEAD_EXTRAPOLATE_S)
        return (self.head[0] + vp * age, self.head[1] + vt * age)

    def send_head_goal(self, command) -> None:
        pass     # published by the event sink (one message per goal)
