"""Scene-scoped tools (seed 001, I3) and the executor gate.

Core tools (registered with `scene_id=None`) are always active. Scene tools belong to a
scene: entering a scene activates its tools and deactivates (never deletes) those of other
scenes. A cap bounds how many scene tools are active at once so many entities in view cannot
overflow the prompt; when it is exceeded the least recently used ones are deactivated.
The prompt and the deliberation grammar see `active_schemas()` only, and the executor
rejects a call to an inactive tool with an error that says which tools are active.
"""

from collections import OrderedDict
import threading
from typing import Iterable

from maxim_core.prompt.tools import normalize_schema
from maxim_core.tools.base import (InactiveToolError, Tool, ToolError, ToolOutcome,
                                   UnknownToolError)
from maxim_core.tools.registry import ToolRegistry


class ToolScope:
    """Which tools are active, with an LRU-capped window of scene tools."""

    def __init__(self, registry: ToolRegistry, cap: int = 8):
        if cap < 1:
            raise ValueError(f'the active scene-tool cap must be >= 1, got {cap}')
        self.registry = registry
        self.cap = cap
        self.scene_of: dict[str, str] = {}              # scene tool -> its scene
        self._active: OrderedDict[str, None] = OrderedDict()   # LRU order, oldest first
        self.current_scene: str | None = None
        self.evicted: list[str] = []                    # the last activation's evictions
        self._lock = threading.Lock()

    def register_scene_tools(self, tools: Iterable[Tool], scene_id: str,
                             activate: bool = True) -> list[str]:
        """Register entity tools of a scene; returns the names evicted by the cap."""
        if not scene_id:
            raise ValueError('scene tools need a non-empty scene_id')
        names = []
        for t in tools:
            self.registry.register(t, replace=t.name in self.scene_of)
            self.scene_of[t.name] = scene_id
            names.append(t.name)
        return self.activate(names) if activate else []

    def is_scene_tool(self, name: str) -> bool:
        return name in self.scene_of

    def activate(self, names: Iterable[str]) -> list[str]:
        """Activate scene tools (most recent last); returns the LRU names the cap evicted."""
        evicted = []
        with self._lock:
            for name in names:
                if name not in self.scene_of:
                    raise UnknownToolError(f'{name!r} is not a scene tool')
                self._active[name] = None
                self._active.move_to_end(name)
            while len(self._active) > self.cap:
                oldest, _ = self._active.popitem(last=False)
                evicted.append(oldest)
            self.evicted = evicted
        return evicted

    def deactivate(self, names: Iterable[str]) -> None:
        with self._lock:
            for name in names:
                self._active.pop(name, None)

    def enter_scene(self, scene_id: str) -> list[str]:
        """Scene change: this scene's tools on, every other scene's off."""
        mine = [n for n, s in self.scene_of.items() if s == scene_id]
        with self._lock:
            for name in list(self._active):
                if self.scene_of.get(name) != scene_id:
                    del self._active[name]
            self.current_scene = scene_id
        return self.activate(mine)

    def touch(self, name: str) -> None:
        """A use: the tool becomes the most recently used."""
        with self._lock:
            if name in self._active:
                self._active.move_to_end(name)

    def is_active(self, name: str) -> bool:
        if name not in self.registry:
            return False
        return name not in self.scene_of or name in self._active

    def active_names(self) -> list[str]:
        return [n for n in self.registry.names() if self.is_active(n)]

    def active_tools(self) -> list[Tool]:
        return self.registry.tools(self.active_names())

    def active_schemas(self) -> dict[str, dict]:
        """name -> closed argument schema of every active tool (for the prompt and grammar)."""
        return {t.name: normalize_schema(t.schema, strict=True) for t in self.active_tools()}

    def check(self, name: str) -> None:
        if not self.is_active(name):
            scene = self.scene_of.get(name, '?')
            raise InactiveToolError(
                f'tool {name!r} belongs to scene {scene!r} and is not active now '
                f'(current scene: {self.current_scene!r}). Active tools: '
                + ', '.join(self.active_names()))


class ToolExecutor:
    """Resolve (aliases), gate on scope, validate and run: one call -> one ToolOutcome."""

    def __init__(self, registry: ToolRegistry, scope: ToolScope | None = None):
        self.registry = registry
        self.scope = scope or ToolScope(registry)

    def resolve(self, requested: str,
                offered: Iterable[str] | None = None) -> tuple[str, bool]:
        """(tool name, introspection) for the agent loop; UnknownToolError (a KeyError).

        `offered` is what the model was shown; a repeated miss lists those (default: every
        active tool)."""
        t = self.registry.resolve(requested, available=self.scope.active_names()
                                  if offered is None else list(offered))
        return t.name, t.introspection

    def execute(self, requested: str, args: dict | None) -> ToolOutcome:
        try:
            t = self.registry.resolve(requested, available=self.scope.active_names())
            self.scope.check(t.name)
        except ToolError as exc:
            outcome = ToolOutcome.fail(str(exc), exc.code)
            outcome.tool = requested
            return outcome
        self.scope.touch(t.name)
        return t.run(args)
