"""The real head: camera, pan/tilt (serial board or Dynamixel), perception, memory, LLM and
the mind.

    ros2 launch maxim_bringup robot.launch.py
    ros2 launch maxim_bringup robot.launch.py params_file:=/path/to/my_head.yaml

The head's driver and its port are head_controller parameters in the params file
(config/robot.yaml: `driver: serial` or `driver: dynamixel`, with the `serial.*` or
`dynamixel.*` block).

DDS: the simulated default keeps discovery on this machine; on a robot whose LLM runs on
another host, export ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET (and a shared ROS_DOMAIN_ID) before
launching. See README, "Running on a real head".
"""

import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (dds_profile_actions, lifecycle_manager, node_kwargs,  # noqa: E402
                    standard_arguments)


# Lifecycle nodes, in bring-up order (the manager takes them down in reverse).
LIFECYCLE = ['camera', 'head_controller', 'memory', 'llm']


def generate_launch_description():
    common = node_kwargs()
    # The mind's nodes yield to the model's threads, as in sim.launch.py; the camera and the
    # head's control loop keep their priority (a frame or a command late is a stale one).
    yielding = dict(common, prefix='nice -n 10')
    urdf = PathJoinSubstitution([FindPackageShare('maxim_bringup'), 'urdf', 'maxim_head.urdf'])
    dds = dds_profile_actions()   # the frame transport (config/fastdds.xml)
    return LaunchDescription(standard_arguments('robot.yaml', 'false') + dds + [
        DeclareLaunchArgument(
            'robot_state_publisher', default_value='true',
            description='Publish the head URDF and TF from joint_states (for rviz)'),
        LifecycleNode(package='maxim_perception', executable='camera_node', name='camera',
                      **common),
        Node(package='maxim_perception', executable='attention_node', name='attention',
             **yielding),
        LifecycleNode(package='maxim_perception', executable='head_controller_node',
                      name='head_controller', **common),
        LifecycleNode(package='maxim_memory', executable='memory_node', name='memory',
                      **yielding),
        LifecycleNode(package='maxim_core', executable='llm_node', name='llm', **common),
        Node(package='maxim_core', executable='fear_node', name='fear', **yielding),
        Node(package='maxim_core', executable='agent_node', name='agent', **yielding),
        lifecycle_manager(LIFECYCLE),
        Node(package='robot_state_publisher', executable='robot_state_publisher',
             name='robot_state_publisher', namespace=LaunchConfiguration('namespace'),
             parameters=[{'robot_description': ParameterValue(
                 Command(['cat ', urdf]), value_type=str)}],
             condition=IfCondition(LaunchConfiguration('robot_state_publisher'))),
    ])
