"""The launch files, checked as far as a machine without `ros2 launch` allows: they parse,
every argument is described, and their nodes agree with the console scripts, the params
YAML and the runner's graph table."""

import ast
import os
import re

import pytest

from maxim_bringup.graph import GRAPHS, NODES
from maxim_bringup.params import load_params

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WS = os.path.dirname(PKG)
STANDARD_ARGS = {'namespace', 'params_file', 'log_level', 'use_sim_time', 'autostart'}


def calls(tree, name):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            fname = func.id if isinstance(func, ast.Name) else getattr(func, 'attr', '')
            if fname == name:
                yield node


def kw(call, key):
    for k in call.keywords:
        if k.arg == key and isinstance(k.value, ast.Constant):
            return k.value.value
    return None


def parse(name):
    with open(os.path.join(PKG, 'launch', name), encoding='utf-8') as f:
        return ast.parse(f.read(), name)


def console_scripts(package):
    with open(os.path.join(WS, package, 'setup.py'), encoding='utf-8') as f:
        return set(re.findall(r"'(\w+) = [\w.]+:main'", f.read()))


@pytest.mark.parametrize('launch,graph,params', [
    ('sim.launch.py', 'sim', 'sim.yaml'), ('robot.launch.py', 'robot', 'robot.yaml')])
def test_launch_file_matches_graph_scripts_and_params(launch, graph, params):
    tree = parse(launch)
    assert any(isinstance(n, ast.FunctionDef) and n.name == 'generate_launch_description'
               for n in tree.body)
    common = parse('common.py')
    declared = {c.args[0].value: c for c in calls(common, 'DeclareLaunchArgument')}
    declared.update({c.args[0].value: c for c in calls(tree, 'DeclareLaunchArgument')})
    assert STANDARD_ARGS <= set(declared)
    for name, call in declared.items():
        assert kw(call, 'description'), f'argument {name} has no description'

    nodes = [c for c in list(calls(tree, 'Node')) + list(calls(tree, 'LifecycleNode'))
             if kw(c, 'package', ) and kw(c, 'package').startswith('maxim_')]
    launched = {kw(c, 'name'): (kw(c, 'package'), kw(c, 'executable')) for c in nodes}
    assert set(launched) == set(GRAPHS[graph])
    yaml_params = load_params(os.path.join(PKG, 'config', params))
    for name, (package, executable) in launched.items():
        spec = NODES[name]
        assert (package, executable) == (spec.package, spec.executable)
        assert executable in console_scripts(package), f'{executable} is no console script'
        assert name in yaml_params, f'{params} has no key for node {name}'
        module_path = os.path.join(WS, package, *spec.module.split('.')) + '.py'
        assert os.path.isfile(module_path), f'{module_path} missing'
    lifecycle = {kw(c, 'name') for c in calls(tree, 'LifecycleNode')}
    assert lifecycle == {n for n in launched if NODES[n].lifecycle}
    # The lifecycle manager brings them up in the graph's order.
    managed = next(ast.literal_eval(n.value) for n in tree.body if isinstance(n, ast.Assign)
                   and getattr(n.targets[0], 'id', '') == 'LIFECYCLE')
    assert managed == [n for n in GRAPHS[graph] if NODES[n].lifecycle]
    # ... with the hearing node last when audio:= starts it (common.hearing_and_manager).
    managers = [c for c in calls(tree, 'OpaqueFunction')
                if getattr(kw_node(c, 'function'), 'id', '') == 'hearing_and_manager']
    managed_args = [[a.id for a in kw_node(c, 'args').elts] for c in managers]
    assert managed_args == [['common', 'LIFECYCLE']]
    assert 'lifecycle_manager' in console_scripts('maxim_bringup')
    hearing = [c for c in calls(common, 'LifecycleNode')]
    assert [(kw(c, 'package'), kw(c, 'executable'), kw(c, 'name')) for c in hearing] == [
        (NODES['hearing'].package, NODES['hearing'].executable, 'hearing')]
    assert NODES['hearing'].executable in console_scripts(NODES['hearing'].package)
    assert 'hearing' in yaml_params, f'{params} has no key for node hearing'


def kw_node(call, key):
    return next((k.value for k in call.keywords if k.arg == key), None)


def test_params_files_have_only_known_nodes():
    for params in ('sim.yaml', 'robot.yaml'):
        keys = set(load_params(os.path.join(PKG, 'config', params))) - {'**'}
        assert keys <= set(NODES) | {'robot_state_publisher'}, keys


def test_the_params_files_hold_no_joint_limit():
    """The URDF is the joint limits' one source: no params file repeats them."""
    for name in ('robot.yaml', 'sim.yaml'):
        head = load_params(os.path.join(PKG, 'config', name))['head_controller']
        assert not {k for k in head if k.split('.')[0] in ('pan', 'tilt')}, name


def test_gazebo_variant_matches_urdf_and_our_topics():
    import xml.etree.ElementTree as ET
    tree = parse('gazebo.launch.py')
    common = parse('common.py')
    declared = {c.args[0].value: c for c in calls(common, 'DeclareLaunchArgument')}
    declared.update({c.args[0].value: c for c in calls(tree, 'DeclareLaunchArgument')})
    assert STANDARD_ARGS <= set(declared)
    assert all(kw(c, 'description') for c in declared.values())
    urdf = {j.get('name'): j.find('limit')
            for j in ET.parse(os.path.join(PKG, 'urdf', 'maxim_head.urdf')).getroot()
            .iter('joint')}
    sdf = ET.parse(os.path.join(PKG, 'worlds', 'maxim_head.sdf')).getroot()
    joints = {j.get('name'): j for j in sdf.iter('joint') if j.get('type') == 'revolute'}
    assert set(joints) == {'head_pan_joint', 'head_tilt_joint'}
    for name, joint in joints.items():
        limit = joint.find('axis/limit')
        assert float(limit.find('lower').text) == float(urdf[name].get('lower'))
        assert float(limit.find('upper').text) == float(urdf[name].get('upper'))
    from maxim_bringup.nodes.joint_command_relay import JOINT_TOPICS
    topics = {p.find('topic').text for p in sdf.iter('plugin') if p.find('topic') is not None}
    assert set(JOINT_TOPICS.values()) <= topics
    sensor_topics = {s.find('topic').text for s in sdf.iter('sensor')}
    assert 'camera/image_raw' in sensor_topics
    assert 'joint_command_relay' in console_scripts('maxim_bringup')


def test_joint_command_relay_splits_commands_and_drops_nan():
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64

    from maxim_bringup.nodes.joint_command_relay import JointCommandRelay

    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    try:
        relay = JointCommandRelay(context=ctx)
        peer = rclpy.create_node('peer', context=ctx)
        pan, tilt = [], []
        peer.create_subscription(Float64, 'head/pan_position_cmd', pan.append, 10)
        peer.create_subscription(Float64, 'head/tilt_position_cmd', tilt.append, 10)
        pub = peer.create_publisher(JointState, 'head/joint_commands', 10)
        executor = SingleThreadedExecutor(context=ctx)
        executor.add_node(relay)
        executor.add_node(peer)
        for _ in range(100):
            if pan and tilt:
                break
            pub.publish(JointState(name=['head_pan_joint', 'head_tilt_joint'],
                                   position=[0.5, float('nan')]))
            pub.publish(JointState(name=['head_tilt_joint'], position=[-0.2]))
            executor.spin_once(timeout_sec=0.05)
        assert pan[0].data == 0.5 and all(m.data == -0.2 for m in tilt)
        relay.destroy_node()
        peer.destroy_node()
    finally:
        rclpy.try_shutdown(context=ctx)


# ---- a head under ros2_control: the xacro, the controllers YAML, robot.launch.py's wiring ----

def _limits(root):
    return {j.get('name'): (float(j.find('limit').get('lower')),
                            float(j.find('limit').get('upper')))
            for j in root.iter('joint') if j.find('limit') is not None}


def test_the_xacro_is_the_urdf_plus_its_ros2_control_tag():
    import xml.etree.ElementTree as ET
    xacro = pytest.importorskip('xacro', reason='xacro is in requirements/python.txt')
    plain = ET.parse(os.path.join(PKG, 'urdf', 'maxim_head.urdf')).getroot()
    path = os.path.join(PKG, 'urdf', 'maxim_head.urdf.xacro')
    root = ET.fromstring(xacro.process_file(path).toxml())
    assert _limits(root) == _limits(plain)
    assert {link.get('name') for link in root.iter('link')} == {
        link.get('name') for link in plain.iter('link')}
    tag = root.find('ros2_control')
    assert tag.get('type') == 'system'
    assert tag.find('hardware/plugin').text == 'mock_components/GenericSystem'
    joints = {j.get('name'): j for j in tag.iter('joint')}
    params = load_params(os.path.join(PKG, 'config', 'robot.yaml'))['head_controller']
    assert list(joints) == params['ros2_control.joints']
    for name, (lower, upper) in _limits(plain).items():
        command = joints[name].find('command_interface')
        assert command.get('name') == 'position'
        assert list(command.iter('param')) == []     # no limit but the URDF's own
        assert [s.get('name') for s in joints[name].iter('state_interface')] == [
            'position', 'velocity']
    real = ET.fromstring(xacro.process_file(path, mappings={
        'hardware_plugin': 'my_robot/PanTiltHardware'}).toxml())
    assert real.find('ros2_control/hardware/plugin').text == 'my_robot/PanTiltHardware'
    without = ET.fromstring(xacro.process_file(path, mappings={'ros2_control': 'false'}).toxml())
    assert without.find('ros2_control') is None and _limits(without) == _limits(plain)


def test_the_controllers_yaml_drives_the_head_controllers_joints():
    controllers = load_params(os.path.join(PKG, 'config', 'ros2_controllers.yaml'))
    manager = controllers['controller_manager']
    assert isinstance(manager['update_rate'], int) and manager['update_rate'] >= 50
    assert manager['joint_state_broadcaster.type'] == (
        'joint_state_broadcaster/JointStateBroadcaster')
    assert manager['head_position_controller.type'] == (
        'forward_command_controller/ForwardCommandController')
    assert manager['head_trajectory_controller.type'] == (
        'joint_trajectory_controller/JointTrajectoryController')
    head = load_params(os.path.join(PKG, 'config', 'robot.yaml'))['head_controller']
    position = controllers['head_position_controller']
    assert position['joints'] == head['ros2_control.joints']
    assert position['interface_name'] == 'position'
    trajectory = controllers['head_trajectory_controller']
    assert trajectory['joints'] == head['ros2_control.joints']
    assert trajectory['command_interfaces'] == ['position']


def _robot_launch():
    import importlib.util
    pytest.importorskip('launch_ros', reason='launch_ros does not import: the ROS 2 launch '
                        'system is not installed', exc_type=ImportError)
    spec = importlib.util.spec_from_file_location(
        'robot_launch', os.path.join(PKG, 'launch', 'robot.launch.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _head_side(module, tmp_path, head_params, **args):
    """The nodes of robot.launch.py's head side for these launch arguments, as (package,
    executable, its arguments rendered, its parameters: {name: value} with '_files' the
    parameter files)."""
    import yaml
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument
    from launch.utilities import perform_substitutions
    from launch_ros.utilities import evaluate_parameters

    params = tmp_path / 'params.yaml'
    params.write_text(yaml.safe_dump({'head_controller': {'ros__parameters': head_params}}))
    description = module.generate_launch_description()
    context = LaunchContext()
    for entity in description.entities:
        if isinstance(entity, DeclareLaunchArgument):
            entity.execute(context)
    context.launch_configurations.update({'params_file': str(params), **args})
    out = []
    for action in module.head_side(context, module.node_kwargs()):
        params = {'_files': []}
        for p in evaluate_parameters(context, action._Node__parameters):
            if isinstance(p, dict):
                params.update(p)
            else:
                params['_files'].append(str(p))
        cmd = []
        # cmd[0], the executable, is looked up in a package that may not be installed here;
        # a remapping rule (-r __node:=...) is rendered only as the node is launched.
        for part in action.cmd[1:]:
            try:
                cmd.append(perform_substitutions(context, part))
            except AttributeError:
                cmd.append('?')
        out.append((action.node_package, action.node_executable, cmd, params))
    return out


def test_robot_launch_wires_ros2_control(tmp_path, monkeypatch):
    module = _robot_launch()
    monkeypatch.setattr(module, '_missing', lambda packages: [])
    monkeypatch.setattr(module.shutil, 'which', lambda name: f'/usr/bin/{name}')
    actions = _head_side(module, tmp_path, {'driver': 'serial'}, driver='ros2_control',
                         namespace='r1')
    nodes = {(p, e): (cmd, a) for p, e, cmd, a in actions}
    assert set(nodes) == {('maxim_perception', 'head_controller_node'),
                          ('controller_manager', 'ros2_control_node'),
                          ('controller_manager', 'spawner'),
                          ('robot_state_publisher', 'robot_state_publisher')}
    assert nodes['maxim_perception', 'head_controller_node'][1]['driver'] == 'ros2_control'
    spawner = nodes['controller_manager', 'spawner'][0]
    assert spawner[:3] == ['joint_state_broadcaster', 'head_position_controller',
                           '--param-file']
    # The controllers file, its node keys made the namespace's (/r1/head_position_controller),
    # for the controller manager and the controllers alike.
    import yaml
    with open(spawner[3], encoding='utf-8') as f:
        assert {'/r1/controller_manager', '/r1/head_position_controller'} <= set(
            yaml.safe_load(f))
    assert nodes['controller_manager', 'ros2_control_node'][1]['_files'] == [spawner[3]]
    # robot_state_publisher publishes the xacro's URDF (controller_manager reads it there).
    urdf = nodes['robot_state_publisher', 'robot_state_publisher'][1]['robot_description']
    assert '<ros2_control name="maxim_head"' in urdf
    assert '<plugin>mock_components/GenericSystem</plugin>' in urdf

    trajectory = _head_side(module, tmp_path, {
        'driver': 'ros2_control', 'ros2_control': {'interface': 'joint_trajectory'}})
    spawner = next(cmd for p, e, cmd, _ in trajectory if e == 'spawner')
    assert spawner[:2] == ['joint_state_broadcaster', 'head_trajectory_controller']

    elsewhere = _head_side(module, tmp_path, {'driver': 'ros2_control'},
                           start_controllers='false')
    assert [(p, e) for p, e, _, _ in elsewhere] == [
        ('maxim_perception', 'head_controller_node'),
        ('robot_state_publisher', 'robot_state_publisher')]
    assert 'driver' not in elsewhere[0][3]       # the params file's driver stands
    assert '<ros2_control' not in elsewhere[1][3]['robot_description']
    dry = _head_side(module, tmp_path, {'driver': 'ros2_control'}, driver='dry_run',
                     robot_state_publisher='false')
    assert [(p, e) for p, e, _, _ in dry] == [('maxim_perception', 'head_controller_node')]
    assert dry[0][3]['driver'] == 'dry_run'


def test_robot_launch_refuses_a_driver_that_cannot_work(tmp_path, monkeypatch):
    module = _robot_launch()
    with pytest.raises(module.LaunchSetupError, match='driver:=telepathy is no head driver'):
        _head_side(module, tmp_path, {'driver': 'serial'}, driver='telepathy')
    monkeypatch.setattr(module, '_missing', lambda packages: list(packages)[:1])
    with pytest.raises(module.LaunchSetupError, match=r'driver:=ros2_control needs '
                       r'ros2_control, not installed here \(missing: controller_manager'):
        _head_side(module, tmp_path, {'driver': 'ros2_control'})
    monkeypatch.setattr(module, '_missing', lambda packages: [])
    monkeypatch.setattr(module.shutil, 'which', lambda name: f'/usr/bin/{name}')
    with pytest.raises(module.LaunchSetupError, match='leave robot_state_publisher:=true'):
        _head_side(module, tmp_path, {'driver': 'ros2_control'},
                   robot_state_publisher='false')


def test_robot_launch_publishes_the_calibrated_urdf_given(tmp_path):
    """urdf:= (the copy `./maxim calibrate` writes) is what robot_state_publisher publishes;
    a missing file stops the launch."""
    module = _robot_launch()
    with open(os.path.join(PKG, 'urdf', 'maxim_head.urdf'), encoding='utf-8') as f:
        shipped = f.read()
    calibrated = tmp_path / 'robot_calibrated.urdf'
    calibrated.write_text(shipped.replace('lower="-2.6" upper="2.6"',
                                          'lower="-1.2" upper="1.3"'))
    for urdf, want in (('', shipped), (str(calibrated), calibrated.read_text())):
        actions = _head_side(module, tmp_path, {'driver': 'dry_run'}, urdf=urdf)
        rsp = [a for p, e, _, a in actions if p == 'robot_state_publisher']
        assert len(rsp) == 1 and rsp[0]['robot_description'] == want
    with pytest.raises(module.LaunchSetupError, match='urdf:=/no/such.urdf: no such file'):
        _head_side(module, tmp_path, {'driver': 'dry_run'}, urdf='/no/such.urdf')


def test_a_changed_urdf_alone_moves_the_controller_the_xacro_and_the_body_model(
        tmp_path, monkeypatch):
    """One URDF with other limits, given as urdf:= and nothing else changed: the head
    controller's limits (and the servos' own), the ros2_control xacro's joints and the
    agent's move tool all follow it."""
    import xml.etree.ElementTree as ET

    from maxim_core.nodes.agent_body import HeadBody
    from maxim_core.tools.catalog import build_tool_registry
    from maxim_perception.head.params import make_driver, PARAMS, read_params

    module = _robot_launch()
    monkeypatch.setattr(module, '_missing', lambda packages: [])
    monkeypatch.setattr(module.shutil, 'which', lambda name: f'/usr/bin/{name}')
    with open(os.path.join(PKG, 'urdf', 'maxim_head.urdf'), encoding='utf-8') as f:
        shipped = f.read()
    narrow = tmp_path / 'narrow.urdf'
    narrow.write_text(shipped.replace('lower="-2.6" upper="2.6"', 'lower="-1.2" upper="1.3"')
                      .replace('lower="-0.8" upper="0.8"', 'lower="-0.3" upper="0.5"'))
    want = {'head_pan_joint': (-1.2, 1.3), 'head_tilt_joint': (-0.3, 0.5)}
    actions = _head_side(module, tmp_path, {'driver': 'serial'}, driver='ros2_control',
                         urdf=str(narrow))
    nodes = {(p, e): a for p, e, _, a in actions}
    # The xacro controller_manager reads includes it.
    description = nodes['robot_state_publisher', 'robot_state_publisher']['robot_description']
    assert _limits(ET.fromstring(description)) == dict(want, **{
        k: v for k, v in _limits(ET.fromstring(shipped)).items() if k not in want})
    assert '<ros2_control name="maxim_head"' in description
    # The head controller reads it (the parameter the launch hands it) ...
    head = nodes['maxim_perception', 'head_controller_node']
    assert head['urdf'] == str(narrow)
    values = {name: default for name, (default, *_rest) in PARAMS.items()}
    values.update(urdf=head['urdf'], driver='dynamixel')
    p = read_params(values)
    assert (p.head.pan_min, p.head.pan_max, p.head.tilt_min, p.head.tilt_max) == (
        -1.2, 1.3, -0.3, 0.5)
    dxl = make_driver(p, None, None, None, None, None)
    assert dxl.joint_limits[0] == pytest.approx((-1.2, 1.3), abs=2e-3)  # the servos' own
    # ... and so does the agent (its urdf parameter), whose body model checks moves by it.
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument
    from launch_ros.utilities import evaluate_parameters
    context = LaunchContext()
    for entity in module.generate_launch_description().entities:
        if isinstance(entity, DeclareLaunchArgument):
            entity.execute(context)
    context.launch_configurations.update({'urdf': str(narrow),
                                          'params_file': str(tmp_path / 'params.yaml')})
    [agent] = module.agent_side(context, module.node_kwargs())
    given = [x for x in evaluate_parameters(context, agent._Node__parameters)
             if isinstance(x, dict)]
    assert {'urdf': str(narrow)} in given
    body = HeadBody(lambda: 0.0, str(narrow))
    move = build_tool_registry(head_limits=body.limits).get('move')
    assert (move.pan_limits, move.tilt_limits) == ((-1.2, 1.3), (-0.3, 0.5))
    assert not move.run({'pan': 1.4, 'tilt': 0.0}).success
