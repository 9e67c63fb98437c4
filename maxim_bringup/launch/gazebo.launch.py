"""Maxim on a Gazebo (gz sim) head, for users who have Gazebo and ros_gz installed.

    ros2 launch maxim_bringup gazebo.launch.py

Untested on the project's machines (Gazebo is not installable there; the MuJoCo head of
sim.launch.py is the tested simulator). ros_gz_bridge carries the camera, camera info,
joint states and clock into Maxim's topic names; the joint command relay splits
head/joint_commands into the per-joint position topics gz's JointPositionController takes.
"""

import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, ExecuteProcess
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode, Node
from launch_ros.substitutions import FindPackageShare

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (dds_profile_actions, lifecycle_manager, node_kwargs,  # noqa: E402
                    standard_arguments)

BRIDGED = [
    'camera/image_raw@sensor_msgs/msg/Image[gz.msgs.Image',
    'camera/camera_info@sensor_msgs/msg/CameraInfo[gz.msgs.CameraInfo',
    'joint_states@sensor_msgs/msg/JointState[gz.msgs.Model',
    '/clock@rosgraph_msgs/msg/Clock[gz.msgs.Clock',
    'head/pan_position_cmd@std_msgs/msg/Float64]gz.msgs.Double',
    'head/tilt_position_cmd@std_msgs/msg/Float64]gz.msgs.Double',
]


def generate_launch_description():
    common = node_kwargs()
    world = PathJoinSubstitution([FindPackageShare('maxim_bringup'), 'worlds', 'maxim_head.sdf'])
    dds = dds_profile_actions()   # the frame transport (config/fastdds.xml)
    return LaunchDescription(standard_arguments('sim.yaml', 'true') + dds + [
        DeclareLaunchArgument('world', default_value=world,
                              description='SDF world with the maxim_head model'),
        DeclareLaunchArgument('gz_args', default_value='-r -s',
                              description='Extra gz sim arguments (-s: no GUI, -r: run)'),
        ExecuteProcess(cmd=['gz', 'sim', LaunchConfiguration('gz_args'),
                            LaunchConfiguration('world')], output='screen'),
        Node(package='ros_gz_bridge', executable='parameter_bridge', name='gz_bridge',
             namespace=LaunchConfiguration('namespace'), arguments=BRIDGED, output='screen'),
        Node(package='maxim_bringup', executable='joint_command_relay',
             name='joint_command_relay', **common),
        Node(package='maxim_perception', executable='attention_node', name='attention',
             **common),
        LifecycleNode(package='maxim_perception', executable='head_controller_node',
                      name='head_controller', **common),
        LifecycleNode(package='maxim_memory', executable='memory_node', name='memory',
                      **common),
        LifecycleNode(package='maxim_core', executable='llm_node', name='llm', **common),
        Node(package='maxim_core', executable='fear_node', name='fear', **common),
        LifecycleNode(package='maxim_core', executable='agent_node', name='agent',
                      **common),
        lifecycle_manager(['head_controller', 'memory', 'llm', 'agent']),
    ])
