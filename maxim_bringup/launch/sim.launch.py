"""The simulated head (MuJoCo) with the whole mind: `ros2 launch maxim_bringup sim.launch.py`.

The same graph as `./maxim sim`, as separate processes; `audio:=true` adds the hearing
node (the microphone, or `hearing.source` in the params file), as `./maxim sim --voice` does.
Watch it with `ros2 run maxim_bringup console_node` and rviz (`rviz2 -d $(ros2 pkg prefix
maxim_bringup)/share/maxim_bringup/rviz/maxim.rviz`).
"""

import os
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.conditions import IfCondition
from launch.substitutions import Command, LaunchConfiguration, PathJoinSubstitution
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (audio_argument, dds_profile_actions, hearing_and_manager,  # noqa: E402
                    node_kwargs, standard_arguments)


# Lifecycle nodes, in bring-up order (the manager takes them down in reverse).
LIFECYCLE = ['sim_head', 'head_controller', 'memory', 'llm', 'agent']


def generate_launch_description():
    common = node_kwargs()
    urdf = PathJoinSubstitution([FindPackageShare('maxim_bringup'), 'urdf', 'maxim_head.urdf'])
    dds = dds_profile_actions()   # the frame transport (config/fastdds.xml)
    # Everything but the model and the head's control loop yields to the model's threads, as
    # in `./maxim sim` (runner.yield_to_model): llm.n_threads 2 on two cores.
    yielding = dict(common, prefix='nice -n 10')
    return LaunchDescription(standard_arguments('sim.yaml', 'true') + dds + [
        DeclareLaunchArgument(
            'robot_state_publisher', default_value='true',
            description='Publish the head URDF and TF from joint_states (for rviz)'),
        LifecycleNode(package='maxim_perception', executable='sim_head_node', name='sim_head',
                      **yielding),
        Node(package='maxim_perception', executable='attention_node', name='attention',
             **yielding),
        LifecycleNode(package='maxim_perception', executable='head_controller_node',
                      name='head_controller', **common),
        LifecycleNode(package='maxim_memory', executable='memory_node', name='memory',
                      **yielding),
        LifecycleNode(package='maxim_core', executable='llm_node', name='llm', **common),
        Node(package='maxim_core', executable='fear_node', name='fear', **yielding),
        LifecycleNode(package='maxim_core', executable='agent_node', name='agent',
                      **yielding),
        audio_argument('false'),
        OpaqueFunction(function=hearing_and_manager, args=[common, LIFECYCLE]),
        Node(package='robot_state_publisher', executable='robot_state_publisher',
             name='robot_state_publisher', namespace=LaunchConfiguration('namespace'),
             parameters=[{'robot_description': ParameterValue(
                 Command(['cat ', urdf]), value_type=str),
                 'use_sim_time': LaunchConfiguration('use_sim_time')}],
             condition=IfCondition(LaunchConfiguration('robot_state_publisher'))),
    ])
