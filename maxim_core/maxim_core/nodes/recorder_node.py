"""The recorder node: a session to an MCAP file that rosbag2 and Foxglove open, and/or a live
Foxglove view of the same topics."""

from dataclasses import dataclass
import datetime
import importlib
import json
import os

from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import IntegerRange, ParameterDescriptor

from maxim_core.health import Health, recorder_health
from maxim_core.nodes.diagnostics import Diagnostics
from maxim_core.recording.live import (check_address, DEFAULT_HOST, DEFAULT_PORT,
                                       FoxgloveLiveView, LiveViewError)
from maxim_core.recording.writer import McapRecorder
from maxim_core.nodes.lifetime import run

# What a session recording holds by default: topic -> type.
DEFAULT_TOPICS = [
    'thoughts:maxim_interfaces/msg/Thought',
    'percepts:maxim_interfaces/msg/Percept',
    'attention/state:maxim_interfaces/msg/AttentionState',
    'tool_calls:maxim_interfaces/msg/ToolCall',
    'tool_results:maxim_interfaces/msg/ToolResult',
    'pain:maxim_interfaces/msg/PainSignal',
    'episodes:maxim_interfaces/msg/Episode',
    'idle:maxim_interfaces/msg/IdleEvent',
    'idle/provenance:maxim_interfaces/msg/IdleProvenance',
    'memory/updates:maxim_interfaces/msg/MemoryUpdate',
    'head/state:maxim_interfaces/msg/HeadState',
    'joint_states:sensor_msgs/msg/JointState',
    'camera/image_raw:sensor_msgs/msg/Image',
]
SENSOR_TOPICS = ('joint_states', 'camera/image_raw', 'attention/debug_image')


def message_class(type_name: str):
    """'pkg/msg/Type' -> the Python message class."""
    package, kind, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


@dataclass(frozen=True)
class RecorderConfig:
    path: str = ''
    topics: tuple = tuple(DEFAULT_TOPICS)
    image_rate_hz: float = 2.0
    write_file: bool = True
    foxglove: bool = False
    foxglove_host: str = DEFAULT_HOST
    foxglove_port: int = DEFAULT_PORT
    run_info: str = ''

    def __post_init__(self):
        if not self.write_file and not self.foxglove:
            raise ValueError('the recorder has nothing to do: set write_file or '
                             'foxglove.enabled')
        if self.image_rate_hz < 0:
            raise ValueError(f'image_rate_hz must be >= 0, got {self.image_rate_hz}')
        if self.foxglove:
            check_address(self.foxglove_host, self.foxglove_port)
        if self.run_info:
            try:
                info = json.loads(self.run_info)
            except json.JSONDecodeError as exc:
                raise ValueError(f'run_info must be a JSON object: {exc}') from exc
            if not isinstance(info, dict):
                raise ValueError('run_info must be a JSON object')
        for entry in self.topics:
            topic, sep, type_name = entry.partition(':')
            if not sep or not topic or type_name.count('/') != 2:
                raise ValueError(f"a topics entry must be 'topic:pkg/msg/Type', got {entry!r}")


class RecorderNode(Node):
    """Records the session's topics (CDR, as received) into one MCAP file, and/or serves them
    live to Foxglove over a local WebSocket (Foxglove SDK).

    Parameters:
        path (string): output file; '' = ~/.maxim/recordings/maxim-<time>.mcap.
        topics (string[]): 'topic:pkg/msg/Type' entries to record.
        image_rate_hz (double): images (sensor_msgs/Image topics) at most this often; 0 = all.
        write_file (bool, true): write the MCAP file (false: live view only).
        foxglove.enabled (bool, false): serve the topics to Foxglove live.
        foxglove.host (string, 127.0.0.1): address the live view binds.
        foxglove.port (int, 8765): its port; 0 = any free port.
        run_info (string, JSON object): how the run was started (graph, parameters of every
            node); written into the file as the MCAP metadata record 'maxim_run', one entry
            per key, each value as JSON, so a report shows the parameters and model.
    Subscriptions: every entry of `topics`, raw.
    Publishers: diagnostics (diagnostic_msgs/DiagnosticArray, 1 Hz: messages written).
    """

    def __init__(self, **kwargs):
        super().__init__('recorder', **kwargs)
        p = self.declare_parameter
        fixed = {'read_only': True}
        cfg = RecorderConfig(
            path=p('path', '', ParameterDescriptor(description='Output MCAP file',
                                                   **fixed)).value,
            topics=tuple(p('topics', DEFAULT_TOPICS, ParameterDescriptor(
                description="'topic:pkg/msg/Type' entries", **fixed)).value),
            image_rate_hz=p('image_rate_hz', 2.0, ParameterDescriptor(
                description='Images per second at most (0 = all)', **fixed)).value,
            write_file=p('write_file', True, ParameterDescriptor(
                description='Write the MCAP file (false: live view only)', **fixed)).value,
            foxglove=p('foxglove.enabled', False, ParameterDescriptor(
                description='Serve the topics live to Foxglove (WebSocket)', **fixed)).value,
            foxglove_host=p('foxglove.host', DEFAULT_HOST, ParameterDescriptor(
                description='Address the Foxglove live view binds', **fixed)).value,
            foxglove_port=p('foxglove.port', DEFAULT_PORT, ParameterDescriptor(
                description='Port of the Foxglove live view (0 = any free port)',
                integer_range=[IntegerRange(from_value=0, to_value=65535, step=1)],
                **fixed)).value,
            run_info=p('run_info', '', ParameterDescriptor(
                description='How the run was started (JSON object), kept as MCAP metadata',
                **fixed)).value)
        self.config = cfg
        self.recorder = None
        self.live = None
        if cfg.write_file:
            path = cfg.path
            if not path:
                stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
                path = os.path.join('~', '.maxim', 'recordings', f'maxim-{stamp}.mcap')
            self.recorder = McapRecorder(path)
            if cfg.run_info:
                self.recorder.add_metadata('maxim_run', {
                    key: json.dumps(value) for key, value in json.loads(cfg.run_info).items()})
            self.get_logger().info(f'recording to {self.recorder.path}')
        if cfg.foxglove:
            try:
                self.live = FoxgloveLiveView(cfg.foxglove_host, cfg.foxglove_port)
            except LiveViewError:
                if self.recorder is not None:
                    self.recorder.close()
                raise
            self.get_logger().info(f'Foxglove live view on {self.live.url} (Foxglove: Open '
                                   'connection > Foxglove WebSocket)')
        for entry in cfg.topics:
            topic, _, type_name = entry.partition(':')
            cls = message_class(type_name)
            rate = cfg.image_rate_hz if type_name == 'sensor_msgs/msg/Image' else 0.0
            for sink in (self.recorder, self.live):
                if sink is not None:
                    sink.add_topic(topic, type_name, rate)
            qos = qos_profile_sensor_data if topic in SENSOR_TOPICS else QoSProfile(
                depth=100, reliability=ReliabilityPolicy.RELIABLE)
            self.create_subscription(cls, topic, self._writer_for(topic), qos, raw=True)
        self.diagnostics = Diagnostics(self, 'recording', self.health)

    def health(self) -> Health:
        rec, live = self.recorder, self.live
        written = sum(t['written'] for t in rec.summary().values()) if rec else 0
        sent = sum(t['sent'] for t in live.summary().values()) if live else 0
        return recorder_health(rec.path if rec else '', written, live.url if live else '',
                               sent, bool(rec and rec.closed))

    def _writer_for(self, topic: str):
        def write(data: bytes) -> None:
            stamp = self.get_clock().now().nanoseconds
            if self.recorder is not None:
                self.recorder.write(topic, data, stamp)
            if self.live is not None:
                self.live.log(topic, data, stamp)
        return write

    def destroy_node(self):
        if self.recorder is not None:
            self.recorder.close()
            self.get_logger().info(f'recorded {self.recorder.summary()}')
        if self.live is not None:
            self.live.close()
            self.get_logger().info(f'served live {self.live.summary()}')
        return super().destroy_node()


def main(args=None):
    run(RecorderNode, args)
