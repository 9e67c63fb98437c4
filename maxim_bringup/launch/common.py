"""Launch pieces shared by sim.launch.py and robot.launch.py."""

import os

from launch.actions import DeclareLaunchArgument, LogInfo, SetEnvironmentVariable
from launch.substitution import Substitution
from launch.substitutions import LaunchConfiguration, PathJoinSubstitution
from launch.substitutions.substitution_failure import SubstitutionFailure
from launch.utilities import normalize_to_list_of_substitutions, perform_substitutions
from launch_ros.actions import Node
from launch_ros.substitutions import FindPackageShare

from maxim_bringup.params import namespaced_params_file, ParamsError


# A Maxim node's stop has one 3 s budget (maxim_common/lifetime.py), but the mind's nodes run
# at nice 10 and wait for the CPU on a loaded machine: with every core busy, a robot's stop
# from Ctrl-C to its last process gone took 1.3 s at the median and 4.7 s at worst (40 stops,
# test_ros2_launch.py TestTwoRobots), too near launch's default of 5 s. 10 s keeps the
# escalation for a process that does not stop.
SIGTERM_TIMEOUT_S = '10'


class NamespacedParamsFile(Substitution):
    """The params file for nodes in the launch's namespace: its plain node keys
    (`attention:`) become full names (`/r1/attention:`), which ROS 2 matches to namespaced
    nodes. The file is checked first: an unusable one stops the launch before any node
    starts, with the reason."""

    def __init__(self, params_file, namespace):
        super().__init__()
        self._file = normalize_to_list_of_substitutions(params_file)
        self._namespace = normalize_to_list_of_substitutions(namespace)

    def describe(self) -> str:
        return 'NamespacedParamsFile(params_file, namespace)'

    def perform(self, context) -> str:
        path = perform_substitutions(context, self._file)
        namespace = perform_substitutions(context, self._namespace)
        try:
            return namespaced_params_file(path, namespace)
        except ParamsError as exc:
            raise SubstitutionFailure(str(exc)) from exc


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
            description='Params YAML with one top-level key per node (plain node keys also '
                        'apply under a namespace)'),
        DeclareLaunchArgument(
            'autostart', default_value='true',
            description='Configure and activate the lifecycle nodes at start (else: '
                        'ros2 service call lifecycle_manager/startup std_srvs/srv/Trigger)'),
        DeclareLaunchArgument(
            'log_level', default_value='info',
            description='Log level of every node (debug, info, warn, error)'),
        DeclareLaunchArgument(
            'use_sim_time', default_value=use_sim_time,
            description='Use the /clock topic (true with the simulated head)'),
        # launch's own setting (5 s unless declared): how long it waits after Ctrl-C before
        # it escalates to SIGTERM.
        DeclareLaunchArgument(
            'sigterm_timeout', default_value=SIGTERM_TIMEOUT_S,
            description='Seconds each process has to end after Ctrl-C before launch sends '
                        'SIGTERM (a node stops within 3 s; the rest is room for a loaded '
                        'machine)'),
    ]


def launch_env():
    """Every node learns which process launched it: it ends with that process, even when
    the launch fails before the node has finished starting (maxim_common/lifetime.py)."""
    return {'MAXIM_LAUNCH_PID': str(os.getpid())}


def node_kwargs():
    """Namespace, parameters and logging shared by every node."""
    return dict(
        namespace=LaunchConfiguration('namespace'),
        parameters=[NamespacedParamsFile(LaunchConfiguration('params_file'),
                                         LaunchConfiguration('namespace')),
                    {'use_sim_time': LaunchConfiguration('use_sim_time')}],
        arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
        output='screen',
        emulate_tty=True,
        additional_env=launch_env(),
    )


def dds_profile_actions():
    """Maxim's Fast DDS profile for every process launched (config/fastdds.xml, or
    fastdds_localhost.xml with ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST: a shared-memory segment
    that holds camera frames), unless the user set one; a warning instead where /dev/shm is too
    small (maxim_bringup/dds.py). The shared-memory files of Fast DDS processes that ended
    without closing them (a launch killed before) are removed first: dds.clean_stale_shm."""
    from maxim_bringup import dds
    stale = dds.clean_stale_shm()
    updates, warning = dds.choose(os.environ, dds.shm_free_bytes(),
                                  dds.profile_path(os.environ))
    actions = [SetEnvironmentVariable(name, value) for name, value in updates.items()]
    if stale:
        actions.append(LogInfo(msg=f'maxim: removed {len(stale)} shared-memory files of Fast '
                                   'DDS processes that ended without closing them'))
    if warning:
        actions.append(LogInfo(msg=f'maxim: {warning}'))
    return actions


def lifecycle_manager(node_names):
    """The node that configures and activates the launch's lifecycle nodes in this order
    (and takes them down in reverse on lifecycle_manager/shutdown)."""
    return Node(package='maxim_bringup', executable='lifecycle_manager',
                name='lifecycle_manager', namespace=LaunchConfiguration('namespace'),
                parameters=[{'node_names': list(node_names),
                             'autostart': LaunchConfiguration('autostart')}],
                arguments=['--ros-args', '--log-level', LaunchConfiguration('log_level')],
                output='screen', emulate_tty=True, additional_env=launch_env())


def audio_argument(default: str):
    """audio:= true | false | auto (auto: when PortAudio finds a microphone)."""
    return DeclareLaunchArgument(
        'audio', default_value=default, choices=['true', 'false', 'auto'],
        description='Start the hearing node (speech in, replies spoken; '
                    'config <params_file> hearing:): true, false, or auto (when a '
                    'microphone is found)')


def hearing_and_manager(context, common, lifecycle):
    """The hearing node when audio:= asks for it, and the lifecycle manager over `lifecycle`
    (and hearing, last)."""
    from launch_ros.actions import LifecycleNode

    audio = LaunchConfiguration('audio').perform(context).strip().lower()
    actions = []
    on = audio == 'true'
    if audio == 'auto':
        from maxim_perception.hearing.audio import input_devices
        devices = input_devices()
        on = bool(devices)
        actions.append(LogInfo(msg=f'maxim: audio: microphone {devices[0]!r}' if on else
                               'maxim: audio: no microphone found, the hearing node is not '
                               'started (audio:=true starts it anyway)'))
    if on:
        actions.append(LifecycleNode(package='maxim_perception', executable='hearing_node',
                                     name='hearing', **common))
    actions.append(lifecycle_manager(list(lifecycle) + (['hearing'] if on else [])))
    return actions
