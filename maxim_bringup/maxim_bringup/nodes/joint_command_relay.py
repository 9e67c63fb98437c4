"""Splits head/joint_commands (one JointState) into one Float64 position topic per joint,
the form Gazebo's JointPositionController (through ros_gz_bridge) and many servo stacks take."""

from rclpy.node import Node
from rcl_interfaces.msg import ParameterDescriptor
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from maxim_common.lifetime import run

JOINT_TOPICS = {'head_pan_joint': 'head/pan_position_cmd',
                'head_tilt_joint': 'head/tilt_position_cmd'}


class JointCommandRelay(Node):
    """Relays joint position commands per joint.

    Parameters:
        joints (string[]): joint names to relay; each goes to JOINT_TOPICS[name].
    Subscriptions: head/joint_commands (sensor_msgs/JointState)
    Publishers: head/pan_position_cmd, head/tilt_position_cmd (std_msgs/Float64)
    """

    def __init__(self, **kwargs):
        super().__init__('joint_command_relay', **kwargs)
        joints = self.declare_parameter(
            'joints', list(JOINT_TOPICS),
            ParameterDescriptor(description='Joints to relay', read_only=True)).value
        unknown = [j for j in joints if j not in JOINT_TOPICS]
        if unknown:
            raise ValueError(f'no position topic for joints {unknown}; known: '
                             f'{", ".join(JOINT_TOPICS)}')
        self._pubs = {j: self.create_publisher(Float64, JOINT_TOPICS[j], 10) for j in joints}
        self.create_subscription(JointState, 'head/joint_commands', self._on_command, 10)

    def _on_command(self, msg: JointState) -> None:
        for name, position in zip(msg.name, msg.position):
            pub = self._pubs.get(name)
            if pub is not None and position == position:  # NaN never reaches a motor
                pub.publish(Float64(data=float(position)))


def main(args=None):
    run(JointCommandRelay, args)
