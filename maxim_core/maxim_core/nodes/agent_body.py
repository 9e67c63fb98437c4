"""The agent node's body port: where the head is, from head/state."""

import math

from maxim_common.conversions import stamp_to_seconds

HEAD_EXTRAPOLATE_S = 0.2     # a head state older than this is carried no further


class HeadBody:
    """The Mind's BodyPort: `head_position()` from the head/state messages given to
    `update`; head goals leave by the event sink (one message per goal), so
    `send_head_goal` has nothing to do. `now()` is the node's clock in seconds."""

    def __init__(self, now):
        self._now = now
        self.head = None               # (pan, tilt) last measured
        self.state = None              # (pan velocity, tilt velocity, stamp seconds)

    def update(self, msg) -> tuple | None:
        """Take a HeadState; the (pan, tilt) it measured, None for a non-finite reading (no
        position: the last good one stands)."""
        head = (msg.pan, msg.tilt)
        if not all(isinstance(v, float) and math.isfinite(v) for v in head):
            return None
        self.head = head
        self.state = (msg.pan_velocity, msg.tilt_velocity, stamp_to_seconds(msg.header.stamp))
        return head

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
