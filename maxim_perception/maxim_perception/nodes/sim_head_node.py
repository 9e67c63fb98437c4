"""The simulated head node: MuJoCo physics and camera on their own thread, on the ROS graph."""

from dataclasses import dataclass
import math
import threading
import time

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy
from builtin_interfaces.msg import Time as TimeMsg
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState

from maxim_common.conversions import joint_values
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health, not_ready
from maxim_common.lifetime import run
from maxim_common.qos import COMMANDS, SENSOR
from maxim_common.throttle import LogThrottle
from maxim_perception.conversions import time_msg
from maxim_perception.health import RateMeter, sim_head_health
from maxim_perception.sim.simhead import JOINT_NAMES, SimHead, SimRenderError

# joint_states: reliable, so robot_state_publisher and rviz (reliable subscribers) hear it.
JOINT_STATES_QOS = QoSProfile(depth=10, history=HistoryPolicy.KEEP_LAST,
                              reliability=ReliabilityPolicy.RELIABLE,
                              durability=DurabilityPolicy.VOLATILE)
CLOCK_QOS = QoSProfile(depth=1, history=HistoryPolicy.KEEP_LAST,
                       reliability=ReliabilityPolicy.RELIABLE,
                       durability=DurabilityPolicy.VOLATILE)


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


# ---- message helpers (to move into maxim_perception/conversions.py) --------------------------

def _image_msg(img, frame_id: str, stamp: TimeMsg) -> Image:
    msg = Image()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    msg.height, msg.width = int(img.shape[0]), int(img.shape[1])
    msg.encoding = 'rgb8'
    msg.is_bigendian = 0
    msg.step = int(img.shape[1]) * 3
    msg.data = img.tobytes()
    return msg


def _camera_info_msg(info: dict, frame_id: str, stamp: TimeMsg) -> CameraInfo:
    msg = CameraInfo()
    msg.header.stamp, msg.header.frame_id = stamp, frame_id
    msg.width, msg.height = info['width'], info['height']
    msg.distortion_model = info['distortion_model']
    msg.d, msg.k, msg.r, msg.p = info['d'], info['k'], info['r'], info['p']
    return msg


# ---- the node --------------------------------------------------------------------------------

class SimHeadNode(LifecycleNode):
    """The MuJoCo head: consumes joint commands, publishes its camera, joints and sim clock.

    The simulation runs in real time on its own thread (MuJoCo's renderer is bound to the
    thread that made its GL context, and the physics must not wait on the executor).

    Lifecycle: configure loads the MuJoCo model, activate starts the simulation thread,
    deactivate stops it (and releases its renderer), cleanup drops the model. On a failed
    configure `last_error` holds the reason. `autostart` (constructor, default true) brings
    the node up at construction, for graphs composed by hand; the launch files and the runner
    leave that to the lifecycle manager.

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
    Publishers:
        camera/image_raw (sensor_msgs/Image rgb8, sensor QoS),
        camera/camera_info (sensor_msgs/CameraInfo, sensor QoS),
        joint_states (sensor_msgs/JointState: head_pan_joint, head_tilt_joint),
        clock (rosgraph_msgs/Clock),
        diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: frames, fps, render error).
    Subscriptions:
        head/joint_commands (sensor_msgs/JointState: position set points by joint name).
    """

    def __init__(self, autostart: bool = True, **kwargs):
        super().__init__('sim_head', **kwargs)
        self._throttle = LogThrottle(2.0)   # bad commands: a line per kind per 2 s, counted
        self.params = self._read_params()
        p = self.params
        self.sim: SimHead | None = None
        self.last_error = ''
        self._lock = threading.Lock()
        # Held while the simulation thread steps and renders: hold it to read ground truth
        # (self.sim.angle_to(...)) from another thread.
        self.sim_lock = threading.Lock()
        self._command: tuple[float, float] | None = None
        self.frames = 0
        self.rate = RateMeter()
        self.render_error = ''
        self.diagnostics = Diagnostics(self, 'simulation', self.health)
        self._image_pub = self.create_publisher(Image, 'camera/image_raw', SENSOR)
        self._info_pub = self.create_publisher(CameraInfo, 'camera/camera_info', SENSOR)
        self._joint_pub = self.create_publisher(JointState, 'joint_states', JOINT_STATES_QOS)
        self._clock_pub = (self.create_publisher(Clock, 'clock', CLOCK_QOS)
                           if p.publish_clock else None)
        self.create_subscription(JointState, 'head/joint_commands', self._on_command, COMMANDS)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        if autostart and self.trigger_configure() == TransitionCallbackReturn.SUCCESS:
            self.trigger_activate()

    # ---- lifecycle ----------------------------------------------------------------------

    def on_configure(self, state) -> TransitionCallbackReturn:
        p = self.params
        try:
            self.sim = SimHead(width=p.width, height=p.height, fps=p.fps,
                               moving_target=p.moving_target,
                               target_period_s=p.target_period_s)
        except (OSError, ValueError, RuntimeError) as exc:
            self.last_error = f'the MuJoCo head did not load: {type(exc).__name__}: {exc}'
            self.get_logger().error(self.last_error)
            return TransitionCallbackReturn.FAILURE
        self.last_error = ''
        return TransitionCallbackReturn.SUCCESS

    def on_activate(self, state) -> TransitionCallbackReturn:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name='sim_head', daemon=True)
        self._thread.start()
        return super().on_activate(state)

    def _stop_thread(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5.0)
            if self._thread.is_alive():
                self.get_logger().error('simulation thread did not stop within 5 s')
            self._thread = None

    def on_deactivate(self, state) -> TransitionCallbackReturn:
        self._stop_thread()
        return super().on_deactivate(state)

    def on_cleanup(self, state) -> TransitionCallbackReturn:
        self.sim = None
        return TransitionCallbackReturn.SUCCESS

    def on_shutdown(self, state) -> TransitionCallbackReturn:
        self._stop_thread()
        self.sim = None
        return TransitionCallbackReturn.SUCCESS

    def _read_params(self) -> SimHeadParams:
        def declare(name, default, description, **ranges):
            return self.declare_parameter(name, default, ParameterDescriptor(
                description=description, read_only=True, **ranges)).value

        def frange(lo, hi):
            return {'floating_point_range': [FloatingPointRange(from_value=lo, to_value=hi)]}

        def irange(lo, hi):
            return {'integer_range': [IntegerRange(from_value=lo, to_value=hi, step=1)]}

        return SimHeadParams(
            width=declare('width', 320, 'Camera image width, pixels', **irange(16, 4096)),
            height=declare('height', 240, 'Camera image height, pixels', **irange(16, 4096)),
            fps=declare('fps', 15.0, 'Camera frames per second', **frange(0.1, 120.0)),
            physics_rate_hz=declare('physics_rate_hz', 100.0, 'Simulation ticks per second',
                                    **frange(1.0, 1000.0)),
            joint_state_rate_hz=declare('joint_state_rate_hz', 50.0,
                                        'joint_states messages per second',
                                        **frange(1.0, 1000.0)),
            moving_target=declare('moving_target', True, 'The ball circles in front'),
            target_period_s=declare('target_period_s', 10.0, 'Seconds per turn of the ball',
                                    **frange(0.5, 600.0)),
            publish_clock=declare('publish_clock', True, 'Publish sim time on clock'),
            frame_id=declare('frame_id', 'camera_optical_frame', 'Frame id of the images'))

    def _on_command(self, msg: JointState) -> None:
        command = joint_values(msg.name, msg.position, JOINT_NAMES)   # (pan, tilt) set points
        if command is None:
            line = self._throttle('names', f'joint command without '
                                  f'{" and ".join(JOINT_NAMES)} positions: names '
                                  f'{list(msg.name)[:8]}')
            if line is not None:
                self.get_logger().warning(line)
            return
        if not all(math.isfinite(v) for v in command):
            line = self._throttle('finite', f'rejected non-finite joint command {command}')
            if line is not None:
                self.get_logger().warning(line)
            return
        with self._lock:
            self._command = command

    # ---- the simulation thread ----------------------------------------------------------

    def _stamp(self) -> TimeMsg:
        if self.params.publish_clock:
            return time_msg(self.sim.time)
        return self.get_clock().now().to_msg()

    def _run(self) -> None:
        p = self.params
        sim = self.sim
        period = 1.0 / p.physics_rate_hz
        frame_period = 1.0 / p.fps
        joint_period = 1.0 / p.joint_state_rate_hz
        next_frame = next_joints = 0.0
        last = time.monotonic()
        next_tick = last
        try:
            while not self._stop.is_set():
                now = time.monotonic()
                dt = min(0.1, now - last)   # a stall does not make the physics jump
                last = now
                with self._lock:
                    command = self._command
                with self.sim_lock:
                    if command is not None:
                        sim.set_joint_targets(*command)
                    if dt >= sim.model.opt.timestep / 2:
                        sim.step(dt)
                    stamp = self._stamp()
                    pos, vel = sim.joint_state()
                    frame_due = sim.time >= next_frame and not self.render_error
                    if frame_due:
                        next_frame = max(next_frame + frame_period, sim.time)
                        self._publish_frame(stamp)
                if self._clock_pub is not None:
                    self._clock_pub.publish(Clock(clock=stamp))
                if sim.time >= next_joints:
                    next_joints = max(next_joints + joint_period, sim.time)
                    msg = JointState(name=list(JOINT_NAMES), position=pos.tolist(),
                                     velocity=vel.tolist())
                    msg.header.stamp = stamp
                    self._joint_pub.publish(msg)
                next_tick += period
                wait = next_tick - time.monotonic()
                if wait < -period:          # fell behind: do not try to catch up in a burst
                    next_tick = time.monotonic()
                self._stop.wait(max(0.0, wait))
        finally:
            sim.close()

    def _publish_frame(self, stamp: TimeMsg) -> None:
        try:
            img = self.sim.render()
        except SimRenderError as exc:
            self.render_error = str(exc)
            self.get_logger().error(f'no camera images: {exc}')
            return
        self._image_pub.publish(_image_msg(img, self.params.frame_id, stamp))
        self._info_pub.publish(_camera_info_msg(self.sim.camera_info(), self.params.frame_id,
                                                stamp))
        self.frames += 1
        self.rate.tick()

    def health(self) -> Health:
        if getattr(self, 'sim', None) is None:
            return not_ready('no simulation')
        with self._lock:
            command = self._command
        p = self.params
        return sim_head_health(self.frames, self.rate.rate(), p.fps, self.render_error, command,
                               p.width, p.height, self.rate.settled())

    def destroy_node(self):
        self._stop_thread()
        return super().destroy_node()


def main(args=None):
    run(lambda: SimHeadNode(autostart=False), args)


if __name__ == '__main__':
    main()
