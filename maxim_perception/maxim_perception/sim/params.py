"""The simulated head node's parameters (all read-only) and when its simulation thread steps,
renders and publishes (plain Python, no rclpy, no MuJoCo).

Parameters:
    width, height (int, 320x240): camera image size.
    fps (double, 15): camera frames per second (sim time).
    physics_rate_hz (double, 100): simulation ticks per second (each steps the physics by
        the wall time elapsed, so sim time follows wall time when the machine keeps up).
    joint_state_rate_hz (double, 50): joint_states messages per second.
    moving_target (bool, true): the orange ball circles in front of the head.
    target_period_s (double, 10): seconds per turn of the ball.
    publish_clock (bool, true): publish sim time on clock and stamp messages with it.
    frame_id (string, camera_optical_frame): frame of the images.
"""

from dataclasses import dataclass

# name: (default, description, (low, high) range or None), in the order the node declares them.
PARAMS = {
    'width': (320, 'Camera image width, pixels', (16, 4096)),
    'height': (240, 'Camera image height, pixels', (16, 4096)),
    'fps': (15.0, 'Camera frames per second', (0.1, 120.0)),
    'physics_rate_hz': (100.0, 'Simulation ticks per second', (1.0, 1000.0)),
    'joint_state_rate_hz': (50.0, 'joint_states messages per second', (1.0, 1000.0)),
    'moving_target': (True, 'The ball circles in front', None),
    'target_period_s': (10.0, 'Seconds per turn of the ball', (0.5, 600.0)),
    'publish_clock': (True, 'Publish sim time on clock', None),
    'frame_id': ('camera_optical_frame', 'Frame id of the images', None),
}


@dataclass(frozen=True)
class SimHeadParams:
    width: int
    height: int
    fps: float
    physics_rate_hz: float
    joint_state_rate_hz: float
    moving_target: bool
    target_period_s: float
    publish_clock: bool
    frame_id: str


def read_params(values: dict) -> SimHeadParams:
    """The parameters from their declared values by name."""
    return SimHeadParams(**values)


class SimSchedule:
    """The simulation thread's clock. Physics ticks come `physics_rate_hz` a second on the
    steady clock, each stepping by the wall time elapsed, at most 0.1 s (a stall does not make
    the physics jump); a loop that fell more than a tick behind does not try to catch up in a
    burst. Frames are due `fps` and joint states `joint_state_rate_hz` a second of sim time.
    """

    def __init__(self, p: SimHeadParams, start: float):
        self.period = 1.0 / p.physics_rate_hz
        self.frame_period = 1.0 / p.fps
        self.joint_period = 1.0 / p.joint_state_rate_hz
        self.next_frame = self.next_joints = 0.0
        self.last = self.next_tick = start

    def dt(self, now: float) -> float:
        """The wall time to step the physics by at `now`."""
        dt = min(0.1, now - self.last)
        self.last = now
        return dt

    def frame_due(self, sim_time: float) -> bool:
        if sim_time < self.next_frame:
            return False
        self.next_frame = max(self.next_frame + self.frame_period, sim_time)
        return True

    def joints_due(self, sim_time: float) -> bool:
        if sim_time < self.next_joints:
            return False
        self.next_joints = max(self.next_joints + self.joint_period, sim_time)
        return True

    def wait(self, now: float) -> float:
        """Seconds to wait at `now` for the next tick."""
        self.next_tick += self.period
        wait = self.next_tick - now
        if wait < -self.period:          # fell behind: do not try to catch up in a burst
            self.next_tick = now
        return max(0.0, wait)
