"""The Mind's tools: the registry with its scope and executor, which of them the model may name
now, and the learned tool index (which the manifest describes in full for this percept and
goal, the choice's prior, and what it learns from each outcome).

The registry is the robot's own catalog, unless the world brings one of its own (an imagined
scene's tools): then the world decides which of its tools are in scope.
"""

from __future__ import annotations

import os
from typing import Callable

from maxim_core.agent.loop import ToolRun
from maxim_core.mind.config import MindConfig
from maxim_core.mind.ports import WorldPort
from maxim_core.prompt.tools import tool_manifest_section
from maxim_core.tools.catalog import build_tool_registry
from maxim_core.tools.learned_index import LearnedToolIndex
from maxim_core.tools.scope import ToolExecutor, ToolScope

SAVE_EVERY = 10          # the learned index is saved after this many updates (and at stop)


class Toolbox:
    """See the module docstring. `send_head_goal` and `query` are the robot tools' and the
    introspection tools' ways out (the Mind's ports); `in_view` what the robot sees now;
    `head_limits` the body's joint limits (the URDF's), None when unknown."""

    def __init__(self, config: MindConfig, world: WorldPort, *,
                 send_head_goal: Callable[[dict], None], query: Callable, ask=None,
                 status: Callable[[str], None] = lambda text: None, in_view=None,
                 head_limits: dict | None = None):
        self.config, self.world, self.status = config, world, status
        self.own_world = world.registry is not None
        self.registry = world.registry if self.own_world else build_tool_registry(
            mode=config.mode, root=config.workspace_root, send_head_goal=send_head_goal,
            query=query, ask=ask, process=config.tool_process, network=config.tool_network,
            hidden=tuple(config.tool_hidden), in_view=in_view, head_limits=head_limits)
        unknown = [n for n in config.active_tools if n not in self.registry]
        if unknown and not self.own_world:
            raise ValueError(f'tools.active names unknown tools: {", ".join(unknown)}')
        self.scope = world.scope or ToolScope(self.registry, cap=config.active_cap)
        self.executor = ToolExecutor(self.registry, self.scope)
        path = config.tool_index_path
        self.index = LearnedToolIndex(
            [self.registry.get(n) for n in self.registry.names()], self.registry.descriptions,
            path=os.path.expanduser(path) if path else None)
        self.priors: dict[str, float] = {}
        self.surfaced: list[str] = []       # what the manifest described in full this pass
        self.index_text = ''                # the goal and percept the index matches against
        self._updates = 0

    def now(self) -> list:
        """What the model may name now: the configured tools plus the scene's (or, in a
        world with tools of its own, what the world allows)."""
        if self.own_world:
            return [t for t in self.scope.active_tools() if self.world.allows(t)]
        active = set(self.config.active_tools)
        if self.config.interactive:
            active.add('request_interaction')     # a person is there to ask
        return [t for t in self.scope.active_tools()
                if t.name in active or self.scope.is_scene_tool(t.name)]

    def names_now(self) -> list[str]:
        return [t.name for t in self.now()]

    def begin(self, text: str) -> None:
        """A pass deliberates on `text` (its goal and percept): the index's priors for it."""
        self.index_text = text
        if not self.config.on('tool_index'):
            return
        scores = self.index.score(text)
        top = max(scores.values(), default=0.0)
        self.priors = {k: 0.5 * v / top for k, v in scores.items()} if top > 0 else {}

    def prior(self, tool: str) -> float:
        """The learned tool index's match of a tool to this percept and goal (0..0.5)."""
        return self.priors.get(tool, 0.0)

    def manifest(self, tools) -> list:
        """Manifest sections through the learned index: tools matched to this percept and
        goal in full, the rest by name."""
        names = [getattr(t, 'name', '') for t in tools]
        if not names:
            return [tool_manifest_section(tools, self.registry.descriptions)]
        sections, sel = self.index.sections(self.index_text, among=names)
        self.surfaced = list(sel.critical)
        return sections

    def learn(self, run: ToolRun | None, text: str) -> None:
        """The index learns from how the pass went (`text`: its goal and percept)."""
        if not self.config.on('tool_index'):
            return
        if run is not None and not run.blocked:
            if run.success:
                self.index.record_success(run.tool, text)
            else:
                self.index.record_failure(run.tool, text)
        self.index.record_unused(self.surfaced, [run.tool] if run else [], text)
        self._updates += 1
        if self.index.path is not None and self._updates % SAVE_EVERY == 0:
            self.save()

    def save(self) -> None:
        if self.index.path is None:
            return
        try:
            self.index.save()
        except OSError as exc:
            self.status(f'the learned tool index was not saved: {exc}')
