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
    assert [c.args[0].id for c in calls(tree, 'lifecycle_manager')] == ['LIFECYCLE']
    assert 'lifecycle_manager' in console_scripts('maxim_bringup')


def test_params_files_have_only_known_nodes():
    for params in ('sim.yaml', 'robot.yaml'):
        keys = set(load_params(os.path.join(PKG, 'config', params))) - {'**'}
        assert keys <= set(NODES) | {'robot_state_publisher'}, keys


def test_urdf_joints_match_params():
    import xml.etree.ElementTree as ET
    root = ET.parse(os.path.join(PKG, 'urdf', 'maxim_head.urdf')).getroot()
    joints = {j.get('name'): j for j in root.iter('joint')}
    assert {'head_pan_joint', 'head_tilt_joint'} <= set(joints)
    params = load_params(os.path.join(PKG, 'config', 'sim.yaml'))
    head = params['head_controller']
    for axis in ('pan', 'tilt'):
        limit = joints[f'head_{axis}_joint'].find('limit')
        assert float(limit.get('lower')) == pytest.approx(head[f'{axis}.min'])
        assert float(limit.get('upper')) == pytest.approx(head[f'{axis}.max'])


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
