"""The real head: camera, pan/tilt (serial board, Dynamixel servos or ros2_control),
perception, memory, LLM and the mind.

    ros2 launch maxim_bringup robot.launch.py
    ros2 launch maxim_bringup robot.launch.py params_file:=/path/to/my_head.yaml
    ros2 launch maxim_bringup robot.launch.py driver:=ros2_control
    ros2 launch maxim_bringup robot.launch.py driver:=ros2_control start_controllers:=false
    ros2 launch maxim_bringup robot.launch.py camera:=topic camera_topic:=/usb_cam/image_raw
    ros2 launch maxim_bringup robot.launch.py audio:=false    # no ears (default: auto)
    ros2 launch maxim_bringup robot.launch.py params_file:=~/.maxim/robot_calibrated.yaml \
        urdf:=~/.maxim/robot_calibrated.urdf          # after ./maxim calibrate

The head's driver and its port are head_controller parameters in the params file
(config/robot.yaml: `driver: serial`, `dynamixel`, `ros2_control` or `dry_run`, with the
`serial.*`, `dynamixel.*` or `ros2_control.*` block); `driver:=...` overrides the file's.
robot_state_publisher publishes urdf/maxim_head.urdf, or `urdf:=...` (the calibrated copy
`./maxim calibrate` writes beside the calibrated params file).

With ros2_control the launch also starts controller_manager (ros2_control_node) with
config/ros2_controllers.yaml, robot_state_publisher on urdf/maxim_head.urdf.xacro (its
<ros2_control> tag: mock hardware unless hardware_plugin:=...), and spawns
joint_state_broadcaster and the head's controller (head_position_controller, or
head_trajectory_controller for `ros2_control.interface: joint_trajectory`). Where the
ros2_control packages are not installed it stops at once and says which are missing;
start_controllers:=false starts only Maxim's side, for controllers that run elsewhere.

DDS: the simulated default keeps discovery on this machine; on a robot whose LLM runs on
another host, export ROS_AUTOMATIC_DISCOVERY_RANGE=SUBNET (and a shared ROS_DOMAIN_ID) before
launching. See README, "Running on a real head".
"""

import os
import shutil
import sys

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction
from launch.substitutions import (Command, FindExecutable, LaunchConfiguration,
                                  PathJoinSubstitution)
from launch_ros.actions import LifecycleNode, Node
from launch_ros.parameter_descriptions import ParameterValue
from launch_ros.substitutions import FindPackageShare

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import (audio_argument, dds_profile_actions, hearing_and_manager,  # noqa: E402
                    launch_env, node_kwargs, standard_arguments)


# Lifecycle nodes, in bring-up order (the manager takes them down in reverse).
LIFECYCLE = ['camera', 'head_controller', 'memory', 'llm', 'agent']
HEAD_DRIVERS = ('serial', 'dynamixel', 'ros2_control', 'dry_run')
# The head controller's defaults (maxim_perception/head/ros2_control.py), and the package
# each interface's controller comes in.
CONTROLLERS = {'forward_position': ('head_position_controller', 'forward_command_controller'),
               'joint_trajectory': ('head_trajectory_controller',
                                    'joint_trajectory_controller')}
MOCK_PLUGIN = 'mock_components/GenericSystem'
INSTALL_HINT = ('sudo apt install ros-jazzy-ros2-control ros-jazzy-ros2-controllers '
                'ros-jazzy-xacro ros-jazzy-robot-state-publisher')


class LaunchSetupError(RuntimeError):
    """A launch that cannot work as asked: launch prints the message as one line and ends
    before any process has started."""


def _missing(packages) -> list[str]:
    from ament_index_python.packages import get_package_prefix, PackageNotFoundError

    missing = []
    for package in packages:
        try:
            get_package_prefix(package)
        except PackageNotFoundError:
            missing.append(package)
    return missing


def head_side(context, common):
    """The head controller with its driver (the driver argument over the params file's),
    robot_state_publisher, and for ros2_control the controller manager and its spawners."""
    from ament_index_python.packages import get_package_share_directory

    from maxim_bringup.params import load_params, namespaced_params_file

    share = get_package_share_directory('maxim_bringup')
    arg = LaunchConfiguration('driver').perform(context).strip()
    if arg and arg not in HEAD_DRIVERS:
        raise LaunchSetupError(f'driver:={arg} is no head driver: use one of '
                               f'{", ".join(HEAD_DRIVERS)}')
    params_file = LaunchConfiguration('params_file').perform(context)
    head = load_params(params_file).get('head_controller', {})
    driver = arg or str(head.get('driver', 'sim'))
    namespace = LaunchConfiguration('namespace').perform(context)
    with_rsp = LaunchConfiguration('robot_state_publisher').perform(context).lower() == 'true'
    with_controllers = (driver == 'ros2_control' and LaunchConfiguration(
        'start_controllers').perform(context).lower() == 'true')
    given = head_urdf(context)
    if given and not os.path.isfile(given):
        raise LaunchSetupError(f'urdf:={given}: no such file')
    urdf = given or os.path.join(share, 'urdf', 'maxim_head.urdf')

    actions = []
    if with_controllers:
        interface = str(head.get('ros2_control.interface', 'forward_position'))
        default, package = CONTROLLERS.get(interface, CONTROLLERS['forward_position'])
        controller = str(head.get('ros2_control.controller', '') or default)
        missing = _missing(['controller_manager', 'joint_state_broadcaster', package,
                            'robot_state_publisher'])
        if shutil.which('xacro') is None:
            missing.append('xacro')
        if missing:
            raise LaunchSetupError(
                f'driver:=ros2_control needs ros2_control, not installed here (missing: '
                f'{", ".join(missing)}): {INSTALL_HINT}; or start_controllers:=false when '
                'the controllers run elsewhere')
        if not with_rsp:
            raise LaunchSetupError(
                'driver:=ros2_control starts controller_manager, which reads the URDF from '
                "robot_state_publisher's robot_description topic: leave "
                'robot_state_publisher:=true (or start_controllers:=false)')
        controllers = namespaced_params_file(
            LaunchConfiguration('controllers_file').perform(context), namespace)
        xacro_file = os.path.join(share, 'urdf', 'maxim_head.urdf.xacro')
        # The same URDF as the head controller's and the agent's: its limits reach
        # controller_manager through the xacro's include (the limits' one source).
        description = Command([FindExecutable(name='xacro'), ' ', xacro_file,
                               ' hardware_plugin:=', LaunchConfiguration('hardware_plugin'),
                               ' urdf:=', urdf])
        ros_args = ['--ros-args', '--log-level', LaunchConfiguration('log_level')]
        extra = dict(namespace=namespace, output='screen', emulate_tty=True,
                     additional_env=launch_env())
        actions += [
            Node(package='controller_manager', executable='ros2_control_node',
                 parameters=[controllers,
                             {'use_sim_time': LaunchConfiguration('use_sim_time')}],
                 arguments=ros_args, **extra),
            Node(package='controller_manager', executable='spawner',
                 arguments=['joint_state_broadcaster', controller, '--param-file',
                            controllers] + ros_args, **extra),
        ]
    else:
        description = Command(['cat ', urdf])
    extra = {'driver': arg} if arg else {}
    if given:
        extra['urdf'] = given
    if with_controllers and 'ros2_control.feedback' not in head:
        # The mock's state is its command: no feeling (movement pain off) unless a real
        # hardware interface measures the joints.
        plugin = LaunchConfiguration('hardware_plugin').perform(context).strip()
        extra['ros2_control.feedback'] = plugin != MOCK_PLUGIN
    overrides = dict(common, parameters=common['parameters'] + ([extra] if extra else []))
    actions.insert(0, LifecycleNode(package='maxim_perception',
                                    executable='head_controller_node', name='head_controller',
                                    **overrides))
    if with_rsp:
        actions.append(Node(
            package='robot_state_publisher', executable='robot_state_publisher',
            name='robot_state_publisher', namespace=namespace,
            parameters=[{'robot_description': ParameterValue(description, value_type=str)}]))
    return actions


def head_urdf(context) -> str:
    """The head URDF the launch was given (urdf:=), else the params file's
    head_controller urdf (the calibrated copy `./maxim calibrate` names), else '' (the
    shipped one): the one source of the joint limits."""
    from maxim_bringup.params import load_params

    given = LaunchConfiguration('urdf').perform(context).strip()
    if not given:
        head = load_params(LaunchConfiguration('params_file').perform(context))
        given = str(head.get('head_controller', {}).get('urdf', '') or '')
    return os.path.expanduser(given)


def agent_side(context, common):
    """The agent, with the head URDF whose limits its move tool checks."""
    given = head_urdf(context)
    extra = [{'urdf': given}] if given else []
    kwargs = dict(common, parameters=common['parameters'] + extra)
    return [LifecycleNode(package='maxim_core', executable='agent_node', name='agent',
                          **kwargs)]


# camera:= values: the camera node's `source` (README, "Any ROS camera").
CAMERA_SOURCES = ('device', 'topic', 'video', 'synthetic')


def camera_side(context, common):
    """The camera node, with camera:= and camera_topic:= over the params file's `source`
    and `topic` (each only when given)."""
    overrides = {}
    for arg, param in (('camera', 'source'), ('camera_topic', 'topic')):
        value = LaunchConfiguration(arg).perform(context).strip()
        if value:
            overrides[param] = value
    kwargs = dict(common, parameters=common['parameters'] + ([overrides] if overrides else []))
    return [LifecycleNode(package='maxim_perception', executable='camera_node', name='camera',
                          **kwargs)]


def generate_launch_description():
    common = node_kwargs()
    # The mind's nodes yield to the model's threads, as in sim.launch.py; the camera and the
    # head's control loop keep their priority (a frame or a command late is a stale one).
    yielding = dict(common, prefix='nice -n 10')
    dds = dds_profile_actions()   # the frame transport (config/fastdds.xml)
    return LaunchDescription(standard_arguments('robot.yaml', 'false') + dds + [
        DeclareLaunchArgument(
            'robot_state_publisher', default_value='true',
            description='Publish the head URDF and TF from joint_states (for rviz)'),
        DeclareLaunchArgument(
            'driver', default_value='',
            description="Head driver over the params file's head_controller driver: serial, "
                        'dynamixel, ros2_control or dry_run (empty: the params file decides)'),
        DeclareLaunchArgument(
            'urdf', default_value='',
            description="The head URDF, the joint limits' one source: robot_state_publisher "
                        'publishes it, the head controller and the agent read its limits, '
                        "and driver:=ros2_control's xacro includes it (empty: the params "
                        "file's head_controller urdf, else urdf/maxim_head.urdf; ./maxim "
                        'calibrate writes a calibrated copy)'),
        DeclareLaunchArgument(
            'start_controllers', default_value='true',
            description='With the ros2_control driver: start controller_manager and spawn '
                        'joint_state_broadcaster and the head controller (false: they run '
                        'elsewhere)'),
        DeclareLaunchArgument(
            'controllers_file',
            default_value=PathJoinSubstitution(
                [FindPackageShare('maxim_bringup'), 'config', 'ros2_controllers.yaml']),
            description='ros2_control controllers YAML for controller_manager and the spawner'),
        DeclareLaunchArgument(
            'hardware_plugin', default_value='mock_components/GenericSystem',
            description='The ros2_control hardware interface in the URDF (xacro argument of '
                        'urdf/maxim_head.urdf.xacro); the default mocks the joints'),
        DeclareLaunchArgument(
            'camera', default_value='', choices=['', *CAMERA_SOURCES],
            description="Camera source over the params file's camera source: device (V4L2), "
                        'topic (a camera driver in the graph), video (a file in camera.device) '
                        'or synthetic (empty: the params file decides)'),
        DeclareLaunchArgument(
            'camera_topic', default_value='',
            description="With camera:=topic: the driver's image topic (sensor_msgs/Image, or "
                        'CompressedImage for a name ending in /compressed) over the params '
                        "file's camera topic (empty: the params file decides)"),
        # First: a driver that cannot work stops the launch before any process starts.
        OpaqueFunction(function=head_side, args=[common]),
        OpaqueFunction(function=camera_side, args=[common]),
        Node(package='maxim_perception', executable='attention_node', name='attention',
             **yielding),
        LifecycleNode(package='maxim_memory', executable='memory_node', name='memory',
                      **yielding),
        LifecycleNode(package='maxim_core', executable='llm_node', name='llm', **common),
        Node(package='maxim_core', executable='fear_node', name='fear', **yielding),
        OpaqueFunction(function=agent_side, args=[yielding]),
        audio_argument('auto'),
        OpaqueFunction(function=hearing_and_manager, args=[common, LIFECYCLE]),
    ])
