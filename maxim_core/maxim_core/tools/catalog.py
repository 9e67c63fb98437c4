"""The built-in tool set, assembled from what the running system provides."""

import os
from typing import Callable

from maxim_core.tools.code import code_tools
from maxim_core.tools.communication import communication_tools, Gateway
from maxim_core.tools.filesystem import filesystem_tools, Sandbox
from maxim_core.tools.introspection import introspection_tools, Query
from maxim_core.tools.registry import ToolRegistry
from maxim_core.tools.robot import (HeadGoalSender, HeadLimits, InView, move_params_text,
                                    robot_tools)
from maxim_core.tools.sandbox import Limits


def build_tool_registry(mode: str = 'passive', root: str | os.PathLike = '.',
                        send_head_goal: HeadGoalSender | None = None,
                        query: Query | None = None,
                        on_respond: Callable[[str], None] | None = None,
                        gateway: Gateway | None = None, read_roots=(), write_roots=(),
                        query_timeout_s: float = 2.0,
                        registry: ToolRegistry | None = None, process: str = 'bwrap',
                        network: bool = False, hidden=(), protected=None,
                        limits: Limits | None = None,
                        ask: Callable[[str, list, float], 'str | None'] | None = None,
                        in_view: InView | None = None,
                        head_limits: HeadLimits = None) -> ToolRegistry:
    """Every built-in tool: robot, filesystem, code, communication and introspection.

    None for a dependency means that part is absent (headless, no memory, no gateway):
    the tools still exist and say so in their results. `process`, `network`, `hidden`
    (e.g. the memory database path), `protected` and `limits` configure the kernel sandbox
    of the tools that start processes (see `maxim_core.tools.filesystem.Sandbox`); `speak`
    runs espeak-ng in a sandbox of its own, with the same `process` choice. The tools a user
    registers in the registry, before or after, run their calls in that same kernel sandbox
    (`ToolRegistry.contain_with`). `in_view`: the labels the robot sees now, for the head
    tools that need something in view (`maxim_core.tools.robot`). `head_limits`: the head's
    joint limits (the URDF's, handed in by the node), which `move` checks and describes.
    """
    registry = registry or ToolRegistry()
    sandbox = Sandbox(mode, root, read_roots, write_roots, process=process, network=network,
                      protected=protected, hidden=hidden, limits=limits)
    registry.contain_with(sandbox.process)
    if head_limits and 'move' in registry.descriptions:
        move = dict(registry.descriptions['move'])
        move['params'] = {**move.get('params', {}), **move_params_text(head_limits)}
        registry.descriptions['move'] = move
    for t in (robot_tools(send_head_goal, in_view, head_limits) + filesystem_tools(sandbox)
              + code_tools(sandbox)
              + communication_tools(on_respond, gateway, ask=ask, process=process)
              + introspection_tools(query, query_timeout_s)):
        registry.register(t)
    return registry
