"""The robot's memory system for the scenario runner's agents under test.

Each agent under test gets its own memory node (its own SQLite file, in a namespace of its
own) in one in-process ROS graph, and a port that asks it through the same service client
the agent node uses and captures episodes by publishing them on its `episodes` topic. So the
scenarios run the robot's Mind on the robot's memory: hippocampus, EC, NAc, SCN, concepts,
knowledge and pattern completion, not a stand-in.
"""

import itertools
import shutil
import os
import tempfile
import threading
import time

import rclpy
from rclpy.executors import MultiThreadedExecutor
from rclpy.parameter import Parameter

from maxim_common.qos import EVENTS
from maxim_core import conversions as conv
from maxim_core.nodes.clients import ServiceQuery
from maxim_interfaces.msg import Episode
from maxim_memory.nodes.memory_node import MemoryNode


class MemoryPort:
    """`query(name, fields, timeout_s)` and `capture(episode)` for one agent under test."""

    def __init__(self, graph: 'GraphMemory', namespace: str):
        self.namespace = namespace
        self.node = rclpy.create_node('aut_memory_client', namespace=namespace,
                                      context=graph.ctx)
        self._query = ServiceQuery(self.node)
        self._episodes = self.node.create_publisher(Episode, 'episodes', EVENTS)
        self.captured = 0

    def query(self, name: str, fields: dict, timeout_s: float = 2.0) -> dict | None:
        return self._query(name, fields, timeout_s)

    def capture(self, episode) -> None:
        msg = conv.record_to_msg(episode, Episode())
        msg.header.stamp = self.node.get_clock().now().to_msg()
        self._episodes.publish(msg)
        self.captured += 1


class GraphMemory:
    """Memory nodes for agents under test, on one executor; `port(name)` makes one more.
    Use as a context manager (or call close)."""

    def __init__(self, directory: str | None = None):
        self._own_dir = directory is None
        self.directory = directory or tempfile.mkdtemp(prefix='maxim-scenario-memory-')
        self.ctx = rclpy.Context()
        rclpy.init(context=self.ctx)
        self.executor = MultiThreadedExecutor(num_threads=4, context=self.ctx)
        self.nodes = []
        self._count = itertools.count(1)
        self._spin = threading.Thread(target=self.executor.spin, name='aut-memory',
                                      daemon=True)
        self._spin.start()

    def port(self, name: str) -> MemoryPort:
        namespace = f'/scenario_{name}_{next(self._count)}'
        db = os.path.join(self.directory, f'{namespace.strip("/")}.db')
        memory = MemoryNode(context=self.ctx, namespace=namespace, autostart=True,
                            parameter_overrides=[Parameter('db_path', value=db)])
        if memory.hub is None:      # configure failed: the reason is in last_error
            memory.destroy_node()
            raise RuntimeError(f'memory for {name} did not open: {memory.last_error}')
        port = MemoryPort(self, namespace)
        for node in (memory, port.node):
            self.nodes.append(node)
            self.executor.add_node(node)
        deadline = time.monotonic() + 10.0
        while not port.node.count_subscribers(f'{namespace}/episodes') and \
                time.monotonic() < deadline:
            time.sleep(0.02)      # the first seeded episode must not be published to nobody
        return port

    def close(self) -> None:
        self.executor.shutdown(timeout_sec=5.0)
        self._spin.join(timeout=10.0)
        for node in reversed(self.nodes):
            node.destroy_node()
        rclpy.try_shutdown(context=self.ctx)
        if self._own_dir:
            shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
