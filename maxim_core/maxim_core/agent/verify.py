"""Checking what an action claims against the world, before it counts as a success.

A tool saying "moved" is a claim; the joint states reaching the goal are the world. Each
verifier returns (verified, note), or None when the tool's claim cannot be checked here.
"""

import math
import os
import time
from typing import Callable

# Where the head is now: (pan, tilt) in radians, or None when no joint state has arrived.
HeadPosition = Callable[[], 'tuple[float, float] | None']


class WorldVerifier:
    """Verifiers for the tools whose effects the agent can observe."""

    def __init__(self, head_position: HeadPosition | None = None, tolerance_rad: float = 0.05,
                 settle_timeout_s: float = 3.0, poll_s: float = 0.05,
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep,
                 limits: dict | None = None, root: str = '.'):
        self.head_position = head_position
        self.tolerance = tolerance_rad
        self.settle_timeout_s = settle_timeout_s
        self.poll_s = poll_s
        self.clock = clock
        self.sleep = sleep
        self.limits = limits      # the URDF's {'pan': (lo, hi), 'tilt': ...}; None: unknown
        self.root = root      # the filesystem tools' sandbox root: relative paths start here

    def __call__(self, run, start=None) -> 'tuple[bool, str] | None':
        """`start` is where the head was when the call was made (read before the command was
        sent: a relative move is relative to that, not to where the head is by now)."""
        check = getattr(self, f'_verify_{run.tool}', None)
        if check is None:
            return None
        return check(run, start) if run.tool == 'move' else check(run)

    def _verify_move(self, run, start=None):
        if self.head_position is None:
            return None
        start = start if start is not None else self.head_position()
        if start is None:
            return False, 'no joint states from the head'
        pan, tilt = float(run.args.get('pan', start[0])), float(run.args.get('tilt', start[1]))
        if run.args.get('relative'):
            pan, tilt = start[0] + pan, start[1] + tilt
        if self.limits:          # where the head controller clamps the goal to
            pan = min(max(pan, self.limits['pan'][0]), self.limits['pan'][1])
            tilt = min(max(tilt, self.limits['tilt'][0]), self.limits['tilt'][1])
        deadline = self.clock() + self.settle_timeout_s
        position = start
        while True:
            position = self.head_position() or position
            error = math.hypot(position[0] - pan, position[1] - tilt)
            if error <= self.tolerance:
                return True, f'head reached pan={position[0]:.2f} tilt={position[1]:.2f}'
            if self.clock() >= deadline:
                return False, (f'head at pan={position[0]:.2f} tilt={position[1]:.2f}, '
                               f'{math.degrees(error):.1f} deg from the goal after '
                               f'{self.settle_timeout_s:.1f} s')
            self.sleep(self.poll_s)

    def _verify_write_file(self, run):
        path = run.args.get('path')
        content = run.args.get('content')
        if not isinstance(path, str) or not isinstance(content, str):
            return None
        path = os.path.expanduser(path)
        if not os.path.isabs(path):
            path = os.path.join(os.path.expanduser(self.root), path)
        try:
            with open(path, encoding='utf-8') as f:
                actual = f.read()
        except OSError as exc:
            return False, f'cannot read {path} back: {exc.strerror}'
        if actual == content:
            return True, f'{path} holds the {len(content)} characters written'
        return False, f'{path} does not hold what was written ({len(actual)} characters)'
