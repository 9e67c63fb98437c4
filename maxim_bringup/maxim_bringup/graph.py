"""The node graph of each way of running Maxim, as data.

The launch files and the in-process runner both follow this table, and a test checks that
the launch files, the console scripts and the params YAML agree with it.
"""

from dataclasses import dataclass
import importlib


@dataclass(frozen=True)
class NodeSpec:
    """One node of the graph: where its class lives and how launch starts it."""

    name: str           # Node name, also its top-level key in the params YAML.
    package: str        # ROS package (and Python package).
    executable: str     # Console script, as `ros2 run <package> <executable>`.
    module: str         # Python module that defines the node class.
    cls: str            # Node class name.
    lifecycle: bool = False
    # Threads of the node's own executor in the in-process runner, as its console script
    # spins it under launch (1: a single-threaded executor, which runs each callback in
    # place, the cheapest for a node of fast callbacks at a high rate).
    threads: int = 1

    def load(self):
        """Import and return the node class."""
        return getattr(importlib.import_module(self.module), self.cls)


def _spec(name, package, executable, cls, lifecycle=False, threads=1):
    return NodeSpec(name, package, executable, f'{package}.nodes.{executable}', cls, lifecycle,
                    threads)


NODES = {
    'sim_head': _spec('sim_head', 'maxim_perception', 'sim_head_node', 'SimHeadNode',
                      lifecycle=True),
    'camera': _spec('camera', 'maxim_perception', 'camera_node', 'CameraNode', lifecycle=True),
    'attention': _spec('attention', 'maxim_perception', 'attention_node', 'AttentionNode'),
    'head_controller': _spec(
        'head_controller', 'maxim_perception', 'head_controller_node', 'HeadControllerNode',
        lifecycle=True),
    'memory': _spec('memory', 'maxim_memory', 'memory_node', 'MemoryNode', lifecycle=True,
                    threads=3),
    'llm': _spec('llm', 'maxim_core', 'llm_node', 'LLMNode', lifecycle=True, threads=4),
    'fear': _spec('fear', 'maxim_core', 'fear_node', 'FearNode', threads=3),
    'agent': _spec('agent', 'maxim_core', 'agent_node', 'AgentNode', lifecycle=True,
                   threads=4),
    'hearing': _spec('hearing', 'maxim_perception', 'hearing_node', 'HearingNode',
                     lifecycle=True),
    'console': _spec('console', 'maxim_bringup', 'console_node', 'ConsoleNode'),
    'recorder': _spec('recorder', 'maxim_core', 'recorder_node', 'RecorderNode'),
}

# Which nodes make up each way of running. The console is added by the runner when a person
# watches, the recorder with --record, the ears and voice (hearing) with --voice or --hear;
# launch files leave the console and the recorder to `ros2 run` and take `audio:=`.
GRAPHS = {
    'sim': ['sim_head', 'attention', 'head_controller', 'memory', 'llm', 'fear', 'agent'],
    'robot': ['camera', 'attention', 'head_controller', 'memory', 'llm', 'fear', 'agent'],
    'headless': ['memory', 'llm', 'fear', 'agent'],
}


def graph(name: str) -> list[NodeSpec]:
    """The node specs of a graph, in start order."""
    if name not in GRAPHS:
        raise KeyError(f'unknown graph {name!r}; known: {", ".join(sorted(GRAPHS))}')
    return [NODES[n] for n in GRAPHS[name]]
