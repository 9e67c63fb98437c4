"""Launch pieces shared by sim.launch.py and robot.launch.py."""

import os

from launch.actions import DeclareLaunchArgument, LogInfo, SetEnvironmentVariable
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch_ros.substitutions import FindPackageShare


def standard_arguments(default_params: str, use_sim_time: str):
    """The arguments every Maxim launch file takes."""
    return [
        DeclareLaunchArgument(
            'namespace', default_value='',
            description='Namespace of every node (one per robot when several share a network)'),
        DeclareLaunchArgument(
            'params_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare('maxim_bringup'), 'config', default_params]),
            description='Params YAML with one top-level key per node'),
        DeclareLaunchArgument(
            'log_level', default_value='info',
            description='Log level of every node (debug, info, warn, error)'),
        DeclareLaunchArgument(
            'use_sim_time', default_value=use_sim_time,
            description='Use the /clock topic (true with the simulated head)'),
    ]


def node_kwargs():
    """Namespace, parameters and logging shared by every node."""
    return dict(
        namespace=LaunchConfiguration('namespace'),
        parameters=[LaunchConfiguration('params_file'),
                    {'use_sim_time': LaunchConfiguration('use_sim_time')}],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
        output='screen',
        emulate_tty=True,
    )


def dds_profile_actions():
    """Maxim's Fast DDS profile for every process launched (config/fastdds.xml: a shared-memory
    segment that holds camera frames), unless the user set one; a warning instead where
    /dev/shm is too small (maxim_bringup/dds.py)."""
    from maxim_bringup import dds
    updates, warning = dds.choose(os.environ, dds.shm_free_bytes(), dds.profile_path())
    actions = [SetEnvironmentVariable(name, value) for name, value in updates.items()]
    if warning:
        actions.append(LogInfo(msg=f'maxim: {warning}'))
    return actions
