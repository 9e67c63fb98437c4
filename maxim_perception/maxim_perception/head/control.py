"""The pan/tilt head controller: where to look, and how to get there smoothly and safely.

Two sources steer the head. Attention's reflex (a pan/tilt that centres its focus) drives it at
control rate without waiting for deliberation; a goal from the agent's tools (move, track a
target, focus on interests, follow novelty, stop) overrides the reflex while it holds. Every
control tick `step(dt, now)` moves the commanded position towards the wanted one under velocity
and acceleration limits and inside the joint limits, so a servo never sees a jump. A target to
track is named as the agent's track_target tool names it (`maxim_common.labels`); while it is
out of view the head looks where it was last seen, and follows it again when it comes back.

Bad input never moves the head: NaN/inf and stale commands are rejected, out-of-range ones are
clamped, and each decision carries a reason for the node's log line. The body hurts when it
cannot follow its commands (movement error, judged against the driver's own motion model in
motion.py: a joint on its way at the speed its driver allows is not hurt, however far it still
is) or keeps reversing direction (thrashing): those become pain events. So does what a servo
reports of itself (`feel`: overload, overheating, an electrical shock, an encoder error, a
current over its limit for `effort_s`), each a pain of its own kind with the joint as its
source. A driver that cannot feel (its reading is what it was told: MotionModel.feedback)
raises no movement pain at all.

Time is always passed in (`now`, seconds on any monotonic clock); the core never reads a clock.
"""

from collections import deque
from dataclasses import dataclass, field
from enum import IntEnum
import math

from maxim_common.labels import resolve_label
from maxim_perception.head.motion import judge, MotionModel, Trajectory, Verdict


class HeadMode(IntEnum):
    """What drives the head; values match maxim_interfaces/HeadGoal.MODE_*."""

    MOVE = 0
    MOVE_RELATIVE = 1
    TRACK_TARGET = 2
    FOCUS_INTERESTS = 3
    NOVELTY_TRACK = 4
    RELEASE = 5   # no goal: the reflex drives the head
    STOP = 6


class PainType(IntEnum):
    """Kinds of pain; values match maxim_interfaces/PainSignal.TYPE_*."""

    TOOL_FAILURE = 0
    TIMEOUT = 1
    MOVEMENT_ERROR = 2
    DIRECTION_THRASHING = 3
    JOINT_LIMIT = 4
    INJECTED = 5
    OVERLOAD = 6
    OVERHEATING = 7
    ELECTRICAL_SHOCK = 8
    ENCODER_ERROR = 9
    OVERCURRENT = 10


# What a servo reports of itself (the kinds a driver's `harms` name), and how much each hurts
# at first (chosen by hand: a servo that shut itself down hurts more than one that strains).
HARM_INTENSITY = {PainType.OVERLOAD: 0.7, PainType.OVERHEATING: 0.7,
                  PainType.ELECTRICAL_SHOCK: 0.8, PainType.ENCODER_ERROR: 0.5,
                  PainType.OVERCURRENT: 0.5}


@dataclass(frozen=True)
class HeadConfig:
    """Limits and thresholds of the controller. Joint limits default to the URDF's."""

    pan_min: float = -2.6
    pan_max: float = 2.6
    tilt_min: float = -0.8
    tilt_max: float = 0.8
    max_velocity: float = 3.0          # rad/s, per joint (the URDF's velocity limit)
    max_acceleration: float = 15.0     # rad/s^2, per joint
    command_timeout_s: float = 0.5     # commands (and reflex targets) older than this are stale
    goal_tolerance_rad: float = 0.02   # measured within this of the goal: goal reached
    measurement_timeout_s: float = 0.5  # joint readings older than this are not trusted
    # Movement pain (motion.py): a joint farther than movement_error_rad from its command that
    # moves towards it slower than movement_speed_ratio times what the driver's motion model
    # predicts (stalled, blocked, moving away, held off by a limit) for longer than
    # movement_error_s hurts. Its speed is measured over movement_window_s of its trajectory.
    # The ratio and the window are chosen by hand: half the model's speed separates a servo
    # on its way (the MuJoCo head cruises at 0.96-1.0 of it) from one held back; a quarter
    # second holds ~12 readings at 50 Hz and is well below movement_error_s.
    movement_error_rad: float = 0.2
    movement_error_s: float = 0.5
    movement_speed_ratio: float = 0.5
    movement_window_s: float = 0.25
    thrash_window_s: float = 2.0       # pan reversals counted over this window ...
    thrash_reversals: int = 6          # ... this many of them is thrashing
    thrash_min_velocity: float = 0.05  # rad/s; slower motion has no direction worth counting
    thrash_min_swing_rad: float = 0.05  # a reversal counts after a swing this long (detection
    #                                     jitter around a still target is not thrashing)
    # A servo's present current (or load) above effort_limit of its full scale (its Current
    # Limit, or 100 % load) for effort_s hurts (overcurrent). Chosen by hand: a servo that
    # holds the tilt against gravity stays well under 0.8; a stall is above it within a tick,
    # and 0.2 s lets a start's inrush pass and still hurts within 0.5 s.
    effort_limit: float = 0.8
    effort_s: float = 0.2
    pain_cooldown_s: float = 2.0       # one pain of a type per cooldown, not one per tick
    pain_repeat_reset_s: float = 10.0  # a quiet period this long resets the repeat count
    focus_dwell_s: float = 3.0         # FOCUS_INTERESTS: seconds on a target before the next
    # Latency compensation of the reflex (and of the goals that follow a target): a target
    # seen in a frame `age` seconds old is aimed at where it will be, position + rate * (age +
    # reflex_lead_s), the lead capped at reflex_predict_max_s (0 turns prediction off). The
    # rate is a line fitted to the target's positions over reflex_rate_window_s, for one track
    # id; reflex_lead_s covers the servo's own lag behind its command.
    reflex_predict_max_s: float = 0.3
    reflex_lead_s: float = 0.04
    reflex_rate_window_s: float = 0.4

    def __post_init__(self):
        if not all(math.isfinite(v) for v in (self.pan_min, self.pan_max, self.tilt_min,
                                              self.tilt_max)):
            raise ValueError('joint limits must be finite')
        if self.pan_min >= self.pan_max or self.tilt_min >= self.tilt_max:
            raise ValueError(f'joint limits must satisfy min < max: pan [{self.pan_min}, '
                             f'{self.pan_max}], tilt [{self.tilt_min}, {self.tilt_max}]')
        positive = ('max_velocity', 'max_acceleration', 'command_timeout_s',
                    'goal_tolerance_rad', 'measurement_timeout_s', 'movement_error_rad',
                    'thrash_window_s', 'focus_dwell_s', 'reflex_rate_window_s',
                    'movement_window_s')
        for name in positive:
            value = getattr(self, name)
            if not (math.isfinite(value) and value > 0):
                raise ValueError(f'{name} must be a finite number > 0, got {value!r}')
        if not (math.isfinite(self.effort_limit) and 0 < self.effort_limit <= 1):
            raise ValueError(f'effort_limit must be in (0, 1], got {self.effort_limit!r}')
        if not (math.isfinite(self.movement_speed_ratio) and 0 < self.movement_speed_ratio <= 1):
            raise ValueError('movement_speed_ratio must be in (0, 1], got '
                             f'{self.movement_speed_ratio!r}')
        if self.thrash_reversals < 2:
            raise ValueError(f'thrash_reversals must be >= 2, got {self.thrash_reversals}')
        for name in ('movement_error_s', 'effort_s', 'thrash_min_velocity',
                     'thrash_min_swing_rad',
                     'pain_cooldown_s', 'pain_repeat_reset_s', 'reflex_predict_max_s',
                     'reflex_lead_s'):
            value = getattr(self, name)
            if not (math.isfinite(value) and value >= 0):
                raise ValueError(f'{name} must be a finite number >= 0, got {value!r}')


@dataclass(frozen=True)
class HeadGoalSpec:
    """A goal from the agent's tools, as in maxim_interfaces/HeadGoal."""

    mode: HeadMode
    goal_id: str = ''
    requested_by: str = ''
    pan: float = 0.0           # target (MOVE) or offset (MOVE_RELATIVE), radians
    tilt: float = 0.0
    track_id: int = 0          # TRACK_TARGET; 0: use target_label
    target_label: str = ''
    speed: float = 0.0         # fraction of max_velocity, 0..1; 0 = full speed
    duration_s: float = 0.0    # seconds the goal holds; 0 = until replaced
    stamp: float | None = None  # when it was issued (same clock as `now`); None = now


@dataclass(frozen=True)
class TargetView:
    """A tracked target as attention sees it: the pan/tilt that would centre it."""

    track_id: int
    pan: float
    tilt: float
    label: str = ''
    salience: float = 0.0
    novelty: float = 0.0


@dataclass(frozen=True)
class CommandResult:
    """What the controller made of a command, with a reason for the log when not plain."""

    accepted: bool
    clamped: bool = False
    reason: str = ''


@dataclass(frozen=True)
class JointCommand:
    """One control tick's output: where the joints should be now, and how fast they move."""

    pan: float
    tilt: float
    pan_velocity: float
    tilt_velocity: float
    stamp: float


@dataclass(frozen=True)
class PainEvent:
    """A body signal for the pain topic (maxim_interfaces/PainSignal)."""

    pain_type: PainType
    intensity: float        # 0..1, escalating with repeats
    message: str
    source: str = 'head'
    context: str = ''
    repeat_count: int = 1
    stamp: float = 0.0

    @property
    def type_name(self) -> str:
        return self.pain_type.name.lower()


@dataclass(frozen=True)
class HeadStatus:
    """The controller's state, shaped like maxim_interfaces/HeadState."""

    mode: HeadMode
    reflex_active: bool
    active_goal_id: str
    pan: float               # measured when a fresh reading exists, else commanded
    tilt: float
    pan_command: float
    tilt_command: float
    pan_velocity: float
    tilt_velocity: float
    goal_reached: bool
    has_target: bool
    tracking_error_deg: float  # pointing vs the wanted direction; 0 without a target
    measurement_fresh: bool


@dataclass
class _Axis:
    pos: float
    vel: float = 0.0


@dataclass
class _PainClock:
    last: float = -math.inf
    repeats: int = 0


@dataclass
class _Reflex:
    pan: float
    tilt: float
    stamp: float
    track_id: int = 0
    pan_rate: float = 0.0    # rad/s, fitted over the recent reflex targets of this track
    tilt_rate: float = 0.0


@dataclass
class _Focus:
    track_id: int = 0
    since: float = 0.0
    visited: list = field(default_factory=list)


def direction(pan: float, tilt: float) -> tuple[float, float, float]:
    """Unit vector the camera looks along (x forward, z up; positive tilt looks down)."""
    return (math.cos(tilt) * math.cos(pan), math.cos(tilt) * math.sin(pan), -math.sin(tilt))


def angle_between_deg(pan_a: float, tilt_a: float, pan_b: float, tilt_b: float) -> float:
    """Angle in degrees between two pan/tilt pointing directions."""
    a, b = direction(pan_a, tilt_a), direction(pan_b, tilt_b)
    dot = max(-1.0, min(1.0, sum(x * y for x, y in zip(a, b))))
    return math.degrees(math.acos(dot))


def _finite(*values: float) -> bool:
    return all(isinstance(v, (int, float)) and math.isfinite(v) for v in values)


def _axis_step(axis: _Axis, target: float, vmax: float, amax: float, dt: float,
               lo: float, hi: float) -> None:
    """Move one joint towards target with a trapezoidal profile that stops exactly on it."""
    err = target - axis.pos
    dist = abs(err)
    a_dt = amax * dt
    # The largest speed v for this tick from which braking by a_dt per tick still stops on
    # the target: v*dt + sum_j max(0, v - j*a_dt)*dt <= dist. Piecewise linear in v; n whole
    # braking ticks follow this one.
    n = math.floor(math.sqrt(0.25 + 2.0 * dist / (a_dt * dt)) - 0.5)
    v_stop = (dist / dt + a_dt * n * (n + 1) / 2.0) / (n + 1)
    v_want = math.copysign(min(vmax, v_stop), err)
    dv = max(-a_dt, min(a_dt, v_want - axis.vel))
    axis.vel += dv
    axis.pos += axis.vel * dt
    if axis.pos <= lo or axis.pos >= hi:
        axis.pos = max(lo, min(hi, axis.pos))
        axis.vel = 0.0


class HeadController:
    """Turns reflex targets and goals into smooth joint commands, and notices when it hurts.

    Feed it with `set_measured` (joint readings), `set_reflex_target`/`clear_reflex`
    (attention's focus), `update_targets` (every tracked target, for the tracking goals) and
    `set_goal`; call `step(dt, now)` at the control rate and send the returned command to the
    driver. `pop_pain()` and `pop_notices()` drain what happened since the last call.
    """

    def __init__(self, config: HeadConfig | None = None, initial: tuple[float, float] = (0., 0.)):
        self.config = config or HeadConfig()
        c = self.config
        pan0 = max(c.pan_min, min(c.pan_max, float(initial[0])))
        tilt0 = max(c.tilt_min, min(c.tilt_max, float(initial[1])))
        self._pan = _Axis(pan0)
        self._tilt = _Axis(tilt0)
        self._synced = False          # the command starts from the first measurement
        self._measured: tuple[float, float] | None = None
        self._measured_vel: tuple[float, float] | None = None
        self._measured_at = -math.inf
        self._reflex: _Reflex | None = None
        self._trail: deque[tuple[float, float, float, int]] = deque(maxlen=64)  # reflex fit
        self._goal: HeadGoalSpec | None = None
        self._goal_target: tuple[float, float] | None = None
        self._goal_expires = math.inf
        self._targets: dict[int, TargetView] = {}
        self._targets_at = -math.inf
        self._targets_stamp = -math.inf
        self._target_trails: dict[int, deque] = {}        # track id -> recent positions
        self._target_rates: dict[int, tuple[float, float]] = {}
        self._focus = _Focus()
        self._last_seen: tuple[float, float] | None = None   # TRACK_TARGET: where, last
        self._wanted: tuple[float, float] | None = None
        self._hold: tuple[float, float] | None = None
        self._last_dt = 0.02
        self._pain: list[PainEvent] = []
        self._notices: list[str] = []
        self._pain_clock: dict = {}    # pain type, or (type, joint) for a servo's own harm
        self._strained_since: dict[str, float] = {}   # joint -> when its effort went over
        self._motion = MotionModel()
        self._trails = (Trajectory(c.movement_window_s), Trajectory(c.movement_window_s))
        self._blocked_since: list[float | None] = [None, None]   # per joint
        self._last_sign = 0
        self._swing_from = self._pan.pos
        self._reversals: deque[float] = deque()

    # ---- inputs -------------------------------------------------------------------------

    def set_motion_model(self, model: MotionModel) -> None:
        """How the driver's joints follow their commands: what movement pain is judged
        against (MotionModel.of(driver)). Until set: the controller's max_velocity."""
        self._motion = model

    def set_measured(self, pan: float, tilt: float, now: float,
                     pan_velocity: float | None = None,
                     tilt_velocity: float | None = None,
                     source_t: float | None = None) -> CommandResult:
        """A joint reading from the driver or joint_states.

        `source_t`: when it was measured on the measurement's own clock (a joint_states
        stamp), the time axis of the joint's trajectory: a simulation slower than real time
        moves its joints at full speed in its own seconds, not in `now`'s. None: `now`.
        """
        if not _finite(pan, tilt, now):
            return CommandResult(False, reason=f'rejected joint reading: not finite '
                                               f'(pan={pan}, tilt={tilt})')
        self._measured = (float(pan), float(tilt))
        t = source_t if source_t is not None and _finite(source_t) else now
        for trail, position in zip(self._trails, self._measured):
            trail.add(t, position)
        if pan_velocity is not None and tilt_velocity is not None and _finite(pan_velocity,
                                                                              tilt_velocity):
            self._measured_vel = (float(pan_velocity), float(tilt_velocity))
        else:
            self._measured_vel = None
        self._measured_at = now
        if not self._synced:
            c = self.config
            self._pan = _Axis(max(c.pan_min, min(c.pan_max, float(pan))))
            self._tilt = _Axis(max(c.tilt_min, min(c.tilt_max, float(tilt))))
            self._synced = True
        return CommandResult(True)

    def restart_from(self, position: tuple[float, float] | None = None) -> None:
        """Start the command afresh, at rest: from `position` (the joints as the driver
        measures them once it is (re)connected; inside the limits), or from where the
        command is when the driver cannot say. The next steps ramp from there under
        max_velocity and max_acceleration, whatever the command did while the driver was
        away (it may have moved on while the servos held)."""
        c = self.config
        if position is not None and _finite(*position):
            self._pan = _Axis(max(c.pan_min, min(c.pan_max, float(position[0]))))
            self._tilt = _Axis(max(c.tilt_min, min(c.tilt_max, float(position[1]))))
            self._synced = True
        else:
            self._pan.vel = self._tilt.vel = 0.0
        self._hold = None
        self._blocked_since = [None, None]
        self._last_sign = 0
        self._swing_from = self._pan.pos

    @property
    def command(self) -> tuple[float, float]:
        """Where the last step() put the joints' command (pan, tilt)."""
        return self._pan.pos, self._tilt.pos

    def set_reflex_target(self, pan: float, tilt: float, now: float,
                          stamp: float | None = None, track_id: int = 0,
                          source_t: float | None = None) -> CommandResult:
        """Attention's focus: the pan/tilt that centres it. Followed while no goal holds.

        `stamp`: when its frame was taken, on the clock of `now`. `source_t`: the same moment
        on the frame's own clock (its header stamp), the time axis of the focus's rate fit:
        with a simulation slower than real time, rates fitted against `now`'s clock come out
        too small by the real-time factor, and positions a frame apart can even share a time
        (measured: at a 0.3 real-time factor the trail kept 1-3 points and the head lagged
        the ball by ~200 ms).
        """
        stamp = now if stamp is None else stamp
        bad = self._check_time(stamp, now, 'reflex target')
        if bad is not None:
            return bad
        if not _finite(pan, tilt):
            return CommandResult(False, reason=f'rejected reflex target: not finite '
                                               f'(pan={pan}, tilt={tilt})')
        (pan_c, tilt_c), clamped, why = self._clamp(pan, tilt)
        axis = source_t if source_t is not None and _finite(source_t) else stamp
        rates = self._reflex_rates(float(pan), float(tilt), axis, int(track_id))
        self._reflex = _Reflex(pan_c, tilt_c, stamp, int(track_id), *rates)
        return CommandResult(True, clamped, f'clamped reflex target: {why}' if clamped else '')

    def _reflex_rates(self, pan: float, tilt: float, stamp: float,
                      track_id: int) -> tuple[float, float]:
        """The focus's angular rates from its recent positions (one track id; see _fit_rates).

        A new track id, or id 0 (untracked), starts over.
        """
        trail = self._trail
        if not track_id or (trail and trail[-1][3] != track_id):
            trail.clear()
        if not track_id:
            return 0.0, 0.0
        return self._fit_rates(trail, stamp, pan, tilt, track_id)

    def _fit_rates(self, trail: deque, stamp: float, pan: float, tilt: float,
                   track_id: int) -> tuple[float, float]:
        """Add a position to a target's trail; its rates: a least-squares line through it.

        From at least three positions spanning a quarter of the window; each rate is capped at
        max_velocity, as the head cannot follow faster anyway.
        """
        c = self.config
        if trail and stamp < trail[-1][0]:
            trail.clear()               # the clock went back (a restarted simulation)
        if not trail or stamp > trail[-1][0]:
            trail.append((stamp, pan, tilt, track_id))
        while trail and stamp - trail[0][0] > c.reflex_rate_window_s:
            trail.popleft()
        if len(trail) < 3 or trail[-1][0] - trail[0][0] < c.reflex_rate_window_s / 4:
            return 0.0, 0.0
        n = len(trail)
        t_mean = sum(p[0] for p in trail) / n
        var = sum((p[0] - t_mean) ** 2 for p in trail)
        rates = []
        for k in (1, 2):
            mean = sum(p[k] for p in trail) / n
            slope = sum((p[0] - t_mean) * (p[k] - mean) for p in trail) / var
            rates.append(max(-c.max_velocity, min(c.max_velocity, slope)))
        return rates[0], rates[1]

    def _lead(self, pan: float, tilt: float, rates: tuple[float, float], stamp: float,
              now: float) -> tuple[float, float]:
        """(pan, tilt) seen at `stamp`, moved on at `rates` to where it will be (clamped)."""
        c = self.config
        if not (rates[0] or rates[1]):
            return self._clamp(pan, tilt)[0]
        lead = min(c.reflex_predict_max_s, max(0.0, now - stamp + c.reflex_lead_s))
        return self._clamp(pan + rates[0] * lead, tilt + rates[1] * lead)[0]

    def clear_reflex(self) -> None:
        """Attention has no focus: the reflex lets go and the head holds where it is."""
        self._reflex = None
        self._trail.clear()

    def update_targets(self, targets: list[TargetView], now: float,
                       stamp: float | None = None, source_t: float | None = None) -> None:
        """Every target attention tracks, for TRACK_TARGET, FOCUS_INTERESTS and NOVELTY_TRACK.

        `stamp`: when the frame they were seen in was taken (same clock as `now`); the goals
        that follow a target lead it by its age, as the reflex does. `source_t`: the frame's
        own stamp, the time axis of the rate fits (see set_reflex_target).
        """
        self._targets = {t.track_id: t for t in targets if _finite(t.pan, t.tilt)}
        self._targets_at = now
        self._targets_stamp = now if stamp is None or not _finite(stamp) else stamp
        axis = source_t if source_t is not None and _finite(source_t) else self._targets_stamp
        self._target_rates = {}
        for tid, t in self._targets.items():
            if not tid:
                continue
            trail = self._target_trails.setdefault(tid, deque(maxlen=64))
            self._target_rates[tid] = self._fit_rates(trail, axis, t.pan, t.tilt, tid)
        for tid in [tid for tid in self._target_trails if tid not in self._targets]:
            del self._target_trails[tid]

    def set_goal(self, goal: HeadGoalSpec, now: float) -> CommandResult:
        """A goal from the agent. RELEASE ends any goal; the others override the reflex."""
        stamp = now if goal.stamp is None else goal.stamp
        bad = self._check_time(stamp, now, f'goal {goal.goal_id!r}')
        if bad is not None:
            return bad
        try:
            mode = HeadMode(goal.mode)
        except ValueError:
            return CommandResult(False, reason=f'rejected goal {goal.goal_id!r}: '
                                               f'unknown mode {goal.mode!r}')
        if not _finite(goal.pan, goal.tilt, goal.speed, goal.duration_s):
            return CommandResult(False, reason=f'rejected goal {goal.goal_id!r}: not finite '
                                               f'(pan={goal.pan}, tilt={goal.tilt}, '
                                               f'speed={goal.speed}, '
                                               f'duration_s={goal.duration_s})')
        if goal.duration_s < 0:
            return CommandResult(False, reason=f'rejected goal {goal.goal_id!r}: negative '
                                               f'duration_s {goal.duration_s}')
        if mode == HeadMode.TRACK_TARGET and not goal.track_id and not goal.target_label:
            return CommandResult(False, reason=f'rejected goal {goal.goal_id!r}: track_target '
                                               'needs a track_id or a target_label')
        if mode == HeadMode.RELEASE:
            previous = self._goal.goal_id if self._goal else ''
            self._end_goal()
            return CommandResult(True, reason=f'released goal {previous!r}' if previous else '')
        notes = []
        speed = goal.speed
        if speed < 0 or speed > 1:
            speed = max(0.0, min(1.0, speed))
            notes.append(f'speed {goal.speed} clamped to {speed}')
        target = None
        if mode in (HeadMode.MOVE, HeadMode.MOVE_RELATIVE):
            pan, tilt = goal.pan, goal.tilt
            if mode == HeadMode.MOVE_RELATIVE:
                base = self._pointing(now)
                pan, tilt = base[0] + goal.pan, base[1] + goal.tilt
            target, clamped, why = self._clamp(pan, tilt)
            if clamped:
                notes.append(why)
        elif mode == HeadMode.STOP:
            target = self._stopping_point()
        self._goal = HeadGoalSpec(mode=mode, goal_id=goal.goal_id,
                                  requested_by=goal.requested_by, pan=goal.pan, tilt=goal.tilt,
                                  track_id=int(goal.track_id), target_label=goal.target_label,
                                  speed=speed, duration_s=goal.duration_s, stamp=stamp)
        self._goal_target = target
        self._goal_expires = now + goal.duration_s if goal.duration_s > 0 else math.inf
        self._focus = _Focus()
        self._last_seen = None
        if target is not None and notes and notes[-1].startswith(('pan', 'tilt')):
            self._hurt(PainType.JOINT_LIMIT, 0.2, f'goal {goal.goal_id!r} asked past the '
                       f'joint limits: {notes[-1]}', now)
        clamped = bool(notes)
        return CommandResult(True, clamped,
                             f'clamped goal {goal.goal_id!r}: ' + '; '.join(notes)
                             if clamped else '')

    # ---- the control tick ---------------------------------------------------------------

    def step(self, dt: float, now: float) -> JointCommand:
        """Advance the commanded position by dt seconds towards what the head should look at."""
        if not (_finite(dt, now) and dt > 0):
            raise ValueError(f'step needs a finite dt > 0 and a finite now, got dt={dt!r}, '
                             f'now={now!r}')
        c = self.config
        if self._goal is not None and now >= self._goal_expires:
            self._notices.append(f'goal {self._goal.goal_id!r} ({self._goal.mode.name.lower()}) '
                                 f'expired after {self._goal.duration_s:g} s; reflex resumes')
            self._end_goal()
        wanted = self._wanted_target(now)
        self._wanted = wanted
        vmax = c.max_velocity
        if self._goal is not None and self._goal.speed > 0:
            vmax *= self._goal.speed
        if wanted is not None:
            self._hold = None
            target = wanted
        else:
            # Nothing to look at: brake to a stop and stay there (computed once, so the hold
            # point does not creep forward with the head).
            if self._hold is None:
                self._hold = self._stopping_point()
            target = self._hold
        _axis_step(self._pan, target[0], vmax, c.max_acceleration, dt, c.pan_min, c.pan_max)
        _axis_step(self._tilt, target[1], vmax, c.max_acceleration, dt, c.tilt_min, c.tilt_max)
        self._last_dt = dt
        self._synced = True   # from now on the command is continuous, whatever is measured
        self._watch_thrashing(now)
        self._watch_movement_error(now)
        return JointCommand(self._pan.pos, self._tilt.pos, self._pan.vel, self._tilt.vel, now)

    def status(self, now: float) -> HeadStatus:
        """Where the head is, what drives it and whether it got there."""
        fresh = self._measurement_fresh(now)
        pan, tilt = self._pointing(now)
        if fresh and self._measured_vel is not None:
            pan_v, tilt_v = self._measured_vel
        else:
            pan_v, tilt_v = self._pan.vel, self._tilt.vel
        wanted = self._wanted
        reached, err_deg = False, 0.0
        if wanted is not None:
            tol = self.config.goal_tolerance_rad
            reached = abs(wanted[0] - pan) <= tol and abs(wanted[1] - tilt) <= tol
            err_deg = angle_between_deg(pan, tilt, wanted[0], wanted[1])
        goal = self._goal
        return HeadStatus(
            mode=goal.mode if goal else HeadMode.RELEASE,
            reflex_active=goal is None and self._reflex_fresh(now),
            active_goal_id=goal.goal_id if goal else '',
            pan=pan, tilt=tilt, pan_command=self._pan.pos, tilt_command=self._tilt.pos,
            pan_velocity=pan_v, tilt_velocity=tilt_v, goal_reached=reached,
            has_target=wanted is not None, tracking_error_deg=err_deg,
            measurement_fresh=fresh)

    def feel(self, harms: dict[str, tuple[tuple[str, str], ...]],
             efforts: dict[str, float] | None, now: float) -> None:
        """What the servos report of themselves at `now`: `harms` (joint -> (kind, what the
        servo says)..., the kind a PainType's name in lower case: 'overload') hurts at once,
        each kind of each joint in its own cooldown; `efforts`
        (joint -> |present current| as a fraction of the servo's full scale; None: not
        measured this time) hurts as OVERCURRENT once one has stayed over effort_limit for
        effort_s."""
        for joint, kinds in harms.items():
            for name, what in kinds:
                kind = PainType[name.upper()]
                self._hurt(kind, HARM_INTENSITY.get(kind, 0.5), f'{joint}: {what}', now,
                           source=joint, key=(kind, joint))
        if efforts is None:
            return
        c = self.config
        for joint, effort in efforts.items():
            if not (_finite(effort) and effort > c.effort_limit):
                self._strained_since.pop(joint, None)
                continue
            since = self._strained_since.setdefault(joint, now)
            if now - since >= c.effort_s:
                self._hurt(PainType.OVERCURRENT, HARM_INTENSITY[PainType.OVERCURRENT],
                           f'{joint} strains at {effort:.0%} of its current for '
                           f'{now - since:.2f} s (limit {c.effort_limit:.0%}): blocked or '
                           'overloaded', now, source=joint, key=(PainType.OVERCURRENT, joint))

    @property
    def feels_movement(self) -> bool:
        """Movement pain is judged: the driver's reading is measured (MotionModel.feedback)."""
        return self._motion.feedback

    def pop_pain(self) -> list[PainEvent]:
        """Pain events since the last call."""
        out, self._pain = self._pain, []
        return out

    def pop_notices(self) -> list[str]:
        """Things worth a log line that happened inside step() (a goal expiring...)."""
        out, self._notices = self._notices, []
        return out

    @property
    def goal(self) -> HeadGoalSpec | None:
        return self._goal

    @property
    def wanted(self) -> tuple[float, float] | None:
        """Where the last step() aimed (pan, tilt), prediction included; None: holding."""
        return self._wanted

    # ---- internals ----------------------------------------------------------------------

    def _check_time(self, stamp: float, now: float, what: str) -> CommandResult | None:
        if not _finite(stamp, now):
            return CommandResult(False, reason=f'rejected {what}: stamp not finite ({stamp})')
        age = now - stamp
        timeout = self.config.command_timeout_s
        if age > timeout:
            return CommandResult(False, reason=f'rejected {what}: stale, {age:.3f} s old '
                                               f'> {timeout} s')
        if -age > timeout:
            return CommandResult(False, reason=f'rejected {what}: stamped {-age:.3f} s in the '
                                               'future')
        return None

    def _clamp(self, pan: float, tilt: float) -> tuple[tuple[float, float], bool, str]:
        c = self.config
        pan_c = max(c.pan_min, min(c.pan_max, pan))
        tilt_c = max(c.tilt_min, min(c.tilt_max, tilt))
        why = []
        if pan_c != pan:
            why.append(f'pan {pan:.3f} outside [{c.pan_min}, {c.pan_max}] -> {pan_c:.3f}')
        if tilt_c != tilt:
            why.append(f'tilt {tilt:.3f} outside [{c.tilt_min}, {c.tilt_max}] -> {tilt_c:.3f}')
        return (pan_c, tilt_c), bool(why), '; '.join(why)

    def _measurement_fresh(self, now: float) -> bool:
        return (self._measured is not None
                and now - self._measured_at <= self.config.measurement_timeout_s)

    def _pointing(self, now: float) -> tuple[float, float]:
        if self._measurement_fresh(now):
            return self._measured
        return self._pan.pos, self._tilt.pos

    def _reflex_fresh(self, now: float) -> bool:
        return (self._reflex is not None
                and now - self._reflex.stamp <= self.config.command_timeout_s)

    def _stopping_point(self) -> tuple[float, float]:
        """Where each joint stops if it brakes at the acceleration limit, tick by tick."""
        dt = self._last_dt
        a_dt = self.config.max_acceleration * dt
        out = []
        for axis in (self._pan, self._tilt):
            speed, dist = abs(axis.vel), 0.0
            while speed > a_dt:    # at most max_velocity / (max_acceleration * dt) ticks
                speed -= a_dt
                dist += speed * dt
            out.append(axis.pos + math.copysign(dist, axis.vel))
        return out[0], out[1]

    def _end_goal(self) -> None:
        self._goal = None
        self._goal_target = None
        self._goal_expires = math.inf

    def _wanted_target(self, now: float) -> tuple[float, float] | None:
        goal = self._goal
        if goal is None:
            if not self._reflex_fresh(now):
                return None
            r = self._reflex
            if not (r.pan_rate or r.tilt_rate):
                return r.pan, r.tilt
            return self._lead(r.pan, r.tilt, (r.pan_rate, r.tilt_rate), r.stamp, now)
        if self._goal_target is not None:
            return self._goal_target
        tracking = goal.mode == HeadMode.TRACK_TARGET
        if now - self._targets_at > self.config.command_timeout_s:
            return None   # attention went quiet: hold rather than chase an old position
        target = None
        if tracking:
            # Out of a view attention still reports: looked for where it was last seen.
            target = self._tracked()
            if target is None:
                return self._last_seen
        elif not self._targets:
            return None
        elif goal.mode == HeadMode.NOVELTY_TRACK:
            target = max(self._targets.values(), key=lambda t: (t.novelty, t.salience))
        elif goal.mode == HeadMode.FOCUS_INTERESTS:
            target = self._next_interest(now)
        if target is None:
            return None
        return self._lead(target.pan, target.tilt,
                          self._target_rates.get(target.track_id, (0.0, 0.0)),
                          self._targets_stamp, now)

    def _tracked(self) -> TargetView | None:
        """The TRACK_TARGET goal's target in view: by track id, or the most salient of the
        targets its label names (`maxim_common.labels.resolve_label`: "blue" names "blue
        object", as the track_target tool resolved it). Remembers where it was seen."""
        goal = self._goal
        if goal.track_id:
            target = self._targets.get(goal.track_id)
        else:
            label = resolve_label(goal.target_label, (t.label for t in self._targets.values()))
            matches = [t for t in self._targets.values()
                       if label is not None and t.label.lower() == label.lower()]
            target = max(matches, key=lambda t: t.salience) if matches else None
        if target is not None:
            self._last_seen = self._clamp(target.pan, target.tilt)[0]
        return target

    def _next_interest(self, now: float) -> TargetView:
        """Most salient targets in turn, each for focus_dwell_s, least recently visited first."""
        focus = self._focus
        current = self._targets.get(focus.track_id)
        if current is not None and now - focus.since < self.config.focus_dwell_s:
            return current
        ranked = sorted(self._targets.values(), key=lambda t: -t.salience)
        unvisited = [t for t in ranked if t.track_id not in focus.visited]
        if not unvisited:
            focus.visited = []
            unvisited = [t for t in ranked if t.track_id != focus.track_id] or ranked
        chosen = unvisited[0]
        focus.track_id, focus.since = chosen.track_id, now
        focus.visited.append(chosen.track_id)
        return chosen

    def _hurt(self, pain_type: PainType, intensity: float, message: str, now: float,
              source: str = 'head', key=None) -> None:
        clock = self._pain_clock.setdefault(pain_type if key is None else key, _PainClock())
        if now - clock.last < self.config.pain_cooldown_s:
            return
        if now - clock.last > self.config.pain_repeat_reset_s:
            clock.repeats = 0
        clock.repeats += 1
        clock.last = now
        # Repeated hurt escalates: each repeat adds 0.15, up to 1.
        level = min(1.0, intensity + 0.15 * (clock.repeats - 1))
        context = self._goal.mode.name.lower() if self._goal else 'reflex'
        self._pain.append(PainEvent(pain_type, level, message, source=source, context=context,
                                    repeat_count=clock.repeats, stamp=now))

    def _watch_thrashing(self, now: float) -> None:
        c = self.config
        vel = self._pan.vel
        if abs(vel) >= c.thrash_min_velocity:
            sign = 1 if vel > 0 else -1
            if self._last_sign and sign != self._last_sign:
                if abs(self._pan.pos - self._swing_from) >= c.thrash_min_swing_rad:
                    self._reversals.append(now)
                self._swing_from = self._pan.pos
            self._last_sign = sign
        while self._reversals and now - self._reversals[0] > c.thrash_window_s:
            self._reversals.popleft()
        count = len(self._reversals)
        if count >= c.thrash_reversals:
            self._hurt(PainType.DIRECTION_THRASHING, min(1.0, 0.3 + 0.05 * count),
                       f'pan reversed direction {count} times in {c.thrash_window_s:g} s',
                       now, source='head_pan_joint')
            self._reversals.clear()

    def _watch_movement_error(self, now: float) -> None:
        """Pain when a joint has not followed its command as its driver's motion model says
        it can, for movement_error_s: stalled, blocked, moving away or held off by a limit.
        A joint on its way at the speed its driver allows is not hurt, however far it is."""
        c = self.config
        if not (self._measurement_fresh(now) and self._motion.feedback):
            self._blocked_since = [None, None]
            return
        model = self._motion
        vmax = c.max_velocity if model.max_velocity is None else model.max_velocity
        joints = (('head_pan_joint', self._pan.pos, (c.pan_min, c.pan_max), model.pan_limits),
                  ('head_tilt_joint', self._tilt.pos, (c.tilt_min, c.tilt_max),
                   model.tilt_limits))
        worst: tuple[Verdict, float, str] | None = None
        for i, (joint, command, limits, own) in enumerate(joints):
            if own is not None:
                limits = (max(limits[0], own[0]), min(limits[1], own[1]))
            verdict = judge(command, self._trails[i], limits, vmax, c.movement_error_rad,
                            c.movement_speed_ratio, c.movement_error_s, c.goal_tolerance_rad)
            if verdict is None:
                continue            # too short a trajectory to tell: the clock neither starts
            if not verdict.hurt:    # nor stops
                self._blocked_since[i] = None
                continue
            # How long on the measurement's own clock: a starved simulation thread loses
            # wall-clock time in which its joints could not move.
            t = self._trails[i].time
            since = self._blocked_since[i]
            if since is None or since > t:
                since = self._blocked_since[i] = t
            held = t - since
            if held >= c.movement_error_s and (worst is None
                                               or verdict.distance > worst[0].distance):
                worst = (verdict, held, joint)
        if worst is None:
            return
        verdict, held, joint = worst
        self._hurt(PainType.MOVEMENT_ERROR, min(1.0, 0.25 * verdict.distance /
                                                c.movement_error_rad),
                   f'{joint} is {math.degrees(verdict.distance):.1f} deg from its command for '
                   f'{held:.2f} s: {verdict.cause} ({verdict.speed:+.2f} rad/s towards it, '
                   f'its motion model expects {verdict.expected:.2f})', now, source=joint)
