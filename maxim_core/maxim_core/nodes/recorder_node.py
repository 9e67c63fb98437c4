"""The recorder node: a session to an MCAP file that rosbag2 and Foxglove open."""

import datetime
import importlib
import os

import rclpy
from rclpy.executors import ExternalShutdownException
from rclpy.node import Node
from rclpy.qos import qos_profile_sensor_data, QoSProfile, ReliabilityPolicy
from rcl_interfaces.msg import ParameterDescriptor

from maxim_core.recording.writer import McapRecorder

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
    'head/state:maxim_interfaces/msg/HeadState',
    'joint_states:sensor_msgs/msg/JointState',
    'camera/image_raw:sensor_msgs/msg/Image',
]
SENSOR_TOPICS = ('joint_states', 'camera/image_raw', 'attention/debug_image')


def message_class(type_name: str):
    """'pkg/msg/Type' -> the Python message class."""
    package, kind, name = type_name.split('/')
    return getattr(importlib.import_module(f'{package}.{kind}'), name)


class RecorderNode(Node):
    """Records the session's topics (CDR, as received) into one MCAP file.

    Parameters:
        path (string): output file; '' = ~/.maxim/recordings/maxim-<time>.mcap.
        topics (string[]): 'topic:pkg/msg/Type' entries to record.
        image_rate_hz (double): images (sensor_msgs/Image topics) at most this often; 0 = all.
    Subscriptions: every entry of `topics`, raw.
    """

    def __init__(self, **kwargs):
        super().__init__('recorder', **kwargs)
        path = self.declare_parameter(
            'path', '', ParameterDescriptor(description='Output MCAP file', read_only=True)).value
        topics = self.declare_parameter(
            'topics', DEFAULT_TOPICS,
            ParameterDescriptor(description="'topic:pkg/msg/Type' entries", read_only=True)).value
        image_rate = self.declare_parameter(
            'image_rate_hz', 2.0,
            ParameterDescriptor(description='Images per second at most (0 = all)')).value
        if not path:
            stamp = datetime.datetime.now().strftime('%Y%m%d-%H%M%S')
            path = os.path.join('~', '.maxim', 'recordings', f'maxim-{stamp}.mcap')
        self.recorder = McapRecorder(path)
        self.get_logger().info(f'recording to {self.recorder.path}')
        for entry in topics:
            topic, _, type_name = entry.partition(':')
            cls = message_class(type_name)
            rate = image_rate if type_name == 'sensor_msgs/msg/Image' else 0.0
            self.recorder.add_topic(topic, type_name, rate)
            qos = qos_profile_sensor_data if topic in SENSOR_TOPICS else QoSProfile(
                depth=100, reliability=ReliabilityPolicy.RELIABLE)
            self.create_subscription(cls, topic, self._writer_for(topic), qos, raw=True)

    def _writer_for(self, topic: str):
        def write(data: bytes) -> None:
            self.recorder.write(topic, data, self.get_clock().now().nanoseconds)
        return write

    def destroy_node(self):
        self.recorder.close()
        self.get_logger().info(f'recorded {self.recorder.summary()}')
        return super().destroy_node()


def main(args=None):
    rclpy.init(args=args)
    node = RecorderNode()
    try:
        rclpy.spin(node)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass  # Ctrl-C or shutdown: the finally block closes the file
    finally:
        node.destroy_node()
        rclpy.try_shutdown()
