"""The shape of the code: packages that never import each other but share maxim_common, no
import circles, pure parts that stay free of ROS, one mind composed once, nodes that only
translate (ROS in nodes/ and conversions.py alone, at most 250 lines a node file), and
evaluation code (maxim_eval) that imports the product and is imported by none of it.

Every import counts, at module level or inside a function: a lazy import still ties two
modules together."""

import ast
import os

import pytest

WS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# What the robot ships; maxim_eval (scenarios, soaks, the robot world) evaluates it.
PRODUCT = ('maxim_common', 'maxim_core', 'maxim_memory', 'maxim_perception', 'maxim_bringup')
PACKAGES = PRODUCT + ('maxim_eval',)
# The modules of maxim_common that import no rclpy and no message package: a pure core may use
# them and stays pure.
PURE_COMMON = {'maxim_common', 'maxim_common.conversions', 'maxim_common.errors',
               'maxim_common.futures', 'maxim_common.health', 'maxim_common.throttle',
               'maxim_common.labels', 'maxim_common.urdf'}
# A node file (<package>/<package>/nodes/*.py) that only translates fits in this many lines.
NODE_FILE_MAX_LINES = 250
# The mind (maxim_core/maxim_core/mind/) and its deliberation (deliberation/) read as one
# pass: files and functions a reader takes in whole.
MIND_FILE_MAX_LINES = 400
MIND_FUNCTION_MAX_LINES = 60
MIND_DIR = os.path.join(WS, 'maxim_core', 'maxim_core', 'mind')
DELIBERATION_DIR = os.path.join(WS, 'maxim_core', 'maxim_core', 'deliberation')


def modules(package):
    root = os.path.join(WS, package, package)
    for folder, _, files in os.walk(root):
        for f in files:
            if f.endswith('.py'):
                path = os.path.join(folder, f)
                rel = os.path.relpath(path, os.path.join(WS, package))[:-3].replace(os.sep, '.')
                yield rel.removesuffix('.__init__'), path


def imports_of(path, module):
    with open(path, encoding='utf-8') as f:
        tree = ast.parse(f.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:            # relative: resolve against the importing module
                base = module.split('.')[:-node.level] if not path.endswith('__init__.py') \
                    else module.split('.')[:len(module.split('.')) - node.level + 1]
                name = '.'.join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ''
            out.add(name)
            out.update(f'{name}.{a.name}' for a in node.names)
    return out


GRAPH = {}
for pkg in PACKAGES:
    for mod, path in modules(pkg):
        GRAPH[mod] = imports_of(path, mod)


def edges(mod):
    """The project modules `mod` imports (a name resolves to the longest known module)."""
    out = set()
    for name in GRAPH[mod]:
        parts = name.split('.')
        while parts and '.'.join(parts) not in GRAPH:
            parts.pop()
        if parts and '.'.join(parts) != mod:
            out.add('.'.join(parts))
    return out


def ros_names(names):
    """The names among `names` that are ROS: rclpy and message packages."""
    ros = ('rclpy', 'builtin_interfaces', 'maxim_interfaces')
    return {n for n in names if n.split('.')[0] in ros
            or n.split('.')[0].endswith(('_msgs', '_srvs', '_interfaces'))}


@pytest.mark.parametrize('package', ('maxim_core', 'maxim_memory', 'maxim_perception'))
def test_the_three_packages_never_import_each_other(package):
    # maxim_common is what they share; the other two, maxim_bringup and maxim_eval are out
    # of bounds.
    others = {p for p in PACKAGES if p not in (package, 'maxim_common')}
    bad = sorted((m, n) for m in GRAPH if m.split('.')[0] == package
                 for n in GRAPH[m] if n.split('.')[0] in others)
    assert bad == []


def test_maxim_common_imports_no_other_maxim_package():
    mods = [m for m in GRAPH if m.split('.')[0] == 'maxim_common']
    assert 'maxim_common.lifetime' in mods
    bad = sorted((m, n) for m in mods for n in GRAPH[m]
                 if n.split('.')[0].startswith('maxim') and n.split('.')[0] != 'maxim_common')
    assert bad == []


def test_no_product_package_imports_maxim_eval():
    mods = [m for m in GRAPH if m.split('.')[0] in PRODUCT]
    assert {m.split('.')[0] for m in mods} == set(PRODUCT)
    bad = sorted((m, n) for m in mods for n in GRAPH[m] if n.split('.')[0] == 'maxim_eval')
    assert bad == []


def test_maxim_eval_may_import_every_other_package():
    """The evaluation code takes what it evaluates from the product packages (and their
    interfaces), never the other way round; the moved code is here, not in the product."""
    mods = [m for m in GRAPH if m.split('.')[0] == 'maxim_eval']
    assert {'maxim_eval.scenario.bridge', 'maxim_eval.scenario.cli', 'maxim_eval.robot_world',
            'maxim_eval.scenario_memory', 'maxim_eval.soak.idle',
            'maxim_eval.soak.graph'} <= set(mods)
    used = {n.split('.')[0] for m in mods for n in GRAPH[m] if n.startswith('maxim')}
    assert used - {'maxim_eval'} <= set(PRODUCT) | {'maxim_interfaces'}
    assert {'maxim_core', 'maxim_memory', 'maxim_perception', 'maxim_bringup'} <= used
    moved = ('maxim_core.sim', 'maxim_core.idle.soak', 'maxim_bringup.robot_world',
             'maxim_bringup.scenario_memory', 'maxim_bringup.idle_soak')
    assert [m for m in GRAPH if m in moved or m.startswith(tuple(p + '.' for p in moved))] == []


def test_the_pure_parts_of_maxim_common_import_no_ros():
    assert PURE_COMMON <= set(GRAPH)
    assert {m: ros_names(GRAPH[m]) for m in sorted(PURE_COMMON) if ros_names(GRAPH[m])} == {}


def test_a_module_free_of_ros_stays_free_through_maxim_common():
    """A module that imports no rclpy and no messages (a core, a health builder, a driver
    that only formats commands) takes from maxim_common only its pure modules."""
    bad = sorted((m, n) for m in GRAPH if not ros_names(GRAPH[m])
                 for n in edges(m) if n.split('.')[0] == 'maxim_common'
                 and n not in PURE_COMMON)
    assert bad == []


def test_there_is_no_import_circle():
    # Packages import their submodules in __init__ (the package is a facade): an edge from a
    # package to its own submodule is not a circle.
    def deps(m):
        return {n for n in edges(m) if not n.startswith(m + '.')}

    state, cycles = {}, []

    def visit(m, stack):
        state[m] = 'open'
        stack.append(m)
        for n in sorted(deps(m)):
            if state.get(n) == 'open':
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, stack)
        stack.pop()
        state[m] = 'done'

    for m in sorted(GRAPH):
        if m not in state:
            visit(m, [])
    assert cycles == []


def test_the_mind_is_pure_and_composed_once():
    mind = [m for m in GRAPH if m.startswith('maxim_core.mind')]
    assert mind and all(not any(n.split('.')[0] in ('rclpy', 'maxim_interfaces')
                                or n.endswith('_msgs') or '_msgs.' in n for n in GRAPH[m])
                        for m in mind)
    # The agent node and the scenario runner both build the Mind; neither composes a
    # deliberator, a gate or an agent loop of its own.
    parts = {'maxim_core.deliberation.gate', 'maxim_core.deliberation.enrichment',
             'maxim_core.prompt.builder', 'maxim_core.tools.learned_index',
             'maxim_core.idle.controller'}
    for m in ('maxim_core.nodes.agent_node', 'maxim_eval.scenario.bridge'):
        used = edges(m)
        assert 'maxim_core.mind' in used, m
        assert not used & parts, (m, used & parts)


def python_files(folder):
    return sorted(os.path.join(folder, f) for f in os.listdir(folder) if f.endswith('.py'))


def line_counts(folder):
    """(lines per file, lines per function) of the Python files in `folder`."""
    files, functions = {}, {}
    for path in python_files(folder):
        with open(path, encoding='utf-8') as f:
            text = f.read()
        name = os.path.basename(path)
        files[name] = len(text.splitlines())
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[f'{name}:{node.name}'] = node.end_lineno - node.lineno + 1
    return files, functions


@pytest.mark.parametrize('folder, known', [
    (MIND_DIR, {'mind.py', 'situation.py', 'act.py', 'runtime.py', 'idle.py'}),
    (DELIBERATION_DIR, {'words.py', 'world.py', 'candidates.py', 'facts.py', 'scorers.py',
                        'why.py', 'chooser.py', 'cycles.py'}),
], ids=['mind', 'deliberation'])
def test_every_file_within_400_lines_and_every_function_within_60(folder, known):
    files, functions = line_counts(folder)
    assert known <= set(files)
    assert {n: v for n, v in files.items() if v > MIND_FILE_MAX_LINES} == {}
    assert {n: v for n, v in functions.items() if v > MIND_FUNCTION_MAX_LINES} == {}


def test_the_act_never_calls_back_into_the_mind():
    """act.py gets ports and parts, never the Mind or one of its bound methods: it imports
    nothing of mind.py, and where the Mind builds its Act, no argument is `self.<method>`
    (a bound method) or `self` itself."""
    with open(os.path.join(MIND_DIR, 'act.py'), encoding='utf-8') as f:
        assert 'maxim_core.mind.mind' not in {n for n in imports_of(f.name, 'x')}
    with open(os.path.join(MIND_DIR, 'mind.py'), encoding='utf-8') as f:
        tree = ast.parse(f.read())
    mind = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == 'Mind')
    methods = {n.name for n in mind.body if isinstance(n, ast.FunctionDef)}
    builds = [n for n in ast.walk(mind) if isinstance(n, ast.Call)
              and isinstance(n.func, ast.Name) and n.func.id == 'Act']
    assert len(builds) == 1
    given = list(builds[0].args) + [k.value for k in builds[0].keywords]
    inner = [n for g in given for n in ast.walk(g)]
    bound = [n.attr for n in inner if isinstance(n, ast.Attribute)
             and isinstance(n.value, ast.Name) and n.value.id == 'self' and n.attr in methods]
    assert bound == []
    assert not [n for n in given if isinstance(n, ast.Name) and n.id == 'self']
    assert not [n for n in inner if isinstance(n, ast.Lambda)]


def test_the_agent_node_only_translates():
    path = os.path.join(WS, 'maxim_core', 'maxim_core', 'nodes', 'agent_node.py')
    with open(path, encoding='utf-8') as f:
        text = f.read()
    assert len(text.splitlines()) <= NODE_FILE_MAX_LINES
    tree = ast.parse(text)
    names = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    # No thinking, inbox, idle or parsing logic of its own.
    assert not names & {'_think', '_work', '_idle_work', '_idle_tick', '_run_task',
                        '_idle_retrieve', '_drive_state', '_ask', 'thought_to_msg'}
    assert 'json' not in {a.name for n in ast.walk(tree) if isinstance(n, ast.Import)
                          for a in n.names}


@pytest.mark.parametrize('package', [p for p in PRODUCT if p != 'maxim_common'])
def test_every_node_file_only_translates_within_250_lines(package):
    """A file in <package>/<package>/nodes/ declares parameters, creates the ROS endpoints,
    translates messages and calls the pure core: at most NODE_FILE_MAX_LINES lines. What
    grows past that is logic for the package's pure modules (head/, conversions.py...)."""
    folder = os.path.join(WS, package, package, 'nodes')
    sizes = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith('.py'):
            with open(os.path.join(folder, name), encoding='utf-8') as f:
                sizes[name] = len(f.read().splitlines())
    assert sizes
    assert {n: lines for n, lines in sizes.items() if lines > NODE_FILE_MAX_LINES} == {}


@pytest.mark.parametrize('package', ('maxim_core', 'maxim_memory', 'maxim_perception'))
def test_only_the_nodes_and_the_conversions_import_ros(package):
    """What a node moves out (its schedule, supervision, parameter table, state machine) goes
    to a pure module: outside nodes/ and conversions.py, no rclpy and no message package."""
    bad = {m: sorted(ros_names(GRAPH[m])) for m in GRAPH if m.split('.')[0] == package
           and not m.startswith(f'{package}.nodes') and m != f'{package}.conversions'
           and ros_names(GRAPH[m])}
    assert bad == {}
