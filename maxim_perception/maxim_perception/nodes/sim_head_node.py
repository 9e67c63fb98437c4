"""The simulated head node: MuJoCo physics and camera on their own thread, on the ROS graph."""

import math
import threading
import time

from rclpy.lifecycle import LifecycleNode, TransitionCallbackReturn
from builtin_interfaces.msg import Time as TimeMsg
from rosgraph_msgs.msg import Clock
from sensor_msgs.msg import CameraInfo, Image, JointState

from maxim_common.conversions import joint_values
from maxim_common.diagnostics import Diagnostics
from maxim_common.health import Health, not_ready
from maxim_common.lifetime import run
from maxim_common.params import declare_table
from maxim_common.qos import CLOCK, COMMANDS, JOINT_STATES, SENSOR
from maxim_common.throttle import ThrottledLog
from maxim_perception.conversions import (camera_info_dict_to_msg, image_to_msg,
                                          joint_state_to_msg, time_msg)
from maxim_perception.health import RateMeter, sim_head_health
from maxim_perception.sim.params import PARAMS, read_params, SimSchedule
from maxim_perception.sim.simhead import JOINT_NAMES, SimHead, SimRenderError


class SimHeadNode(LifecycleNode):
    """The MuJoCo head: consumes joint commands, publishes its camera, joints and sim clock.

    The simulation runs in real time on its own thread (MuJoCo's renderer is bound to the
    thread that made its GL context, and the physics must not wait on the executor).

    Lifecycle: configure loads the MuJoCo model, activate starts the simulation thread,
    deactivate stops it (and releases its renderer), cleanup drops the model. On a failed
    configure `last_error` holds the reason. `autostart` (constructor, default true) brings
    the node up at construction, for graphs composed by hand; the launch files and the runner
    leave that to the lifecycle manager.

    Parameters: sim/params.py (PARAMS, all read-only; described there): width, height, fps,
        physics_rate_hz, joint_state_rate_hz, moving_target, target_period_s, publish_clock,
        frame_id.
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
        # Bad commands: a line per kind per 2 s, counted.
        self._warn = ThrottledLog(self.get_logger().warning, 2.0)
        self.params = read_params(declare_table(self, PARAMS, read_only=True))
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
        self._joint_pub = self.create_publisher(JointState, 'joint_states', JOINT_STATES)
        self._clock_pub = (self.create_publisher(Clock, 'clock', CLOCK)
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

    def _on_command(self, msg: JointState) -> None:
        command = joint_values(msg.name, msg.position, JOINT_NAMES)   # (pan, tilt) set points
        if command is None:
            self._warn('names', f'joint command without {" and ".join(JOINT_NAMES)} '
                       f'positions: names {list(msg.name)[:8]}')
            return
        if not all(math.isfinite(v) for v in command):
            self._warn('finite', f'rejected non-finite joint command {command}')
            return
        with self._lock:
            self._command = command

    # ---- the simulation thread ----------------------------------------------------------

    def _stamp(self) -> TimeMsg:
        if self.params.publish_clock:
            return time_msg(self.sim.time)
        return self.get_clock().now().to_msg()

    def _run(self) -> None:
        sim = self.sim
        schedule = SimSchedule(self.params, time.monotonic())
        try:
            while not self._stop.is_set():
                dt = schedule.dt(time.monotonic())   # a stall does not make the physics jump
                with self._lock:
                    command = self._command
                with self.sim_lock:
                    if command is not None:
                        sim.set_joint_targets(*command)
                    if dt >= sim.model.opt.timestep / 2:
                        sim.step(dt)
                    stamp = self._stamp()
                    pos, vel = sim.joint_state()
                    if not self.render_error and schedule.frame_due(sim.time):
                        self._publish_frame(stamp)
                if self._clock_pub is not None:
                    self._clock_pub.publish(Clock(clock=stamp))
                if schedule.joints_due(sim.time):
                    self._joint_pub.publish(joint_state_to_msg(JOINT_NAMES, pos, vel, stamp))
                self._stop.wait(schedule.wait(time.monotonic()))
        finally:
            sim.close()

    def _publish_frame(self, stamp: TimeMsg) -> None:
        try:
            img = self.sim.render()
        except SimRenderError as exc:
            self.render_error = str(exc)
            self.get_logger().error(f'no camera images: {exc}')
            return
        self._image_pub.publish(image_to_msg(img, 'rgb8', stamp, self.params.frame_id))
        self._info_pub.publish(camera_info_dict_to_msg(self.sim.camera_info(),
                                                       self.params.frame_id, stamp))
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
