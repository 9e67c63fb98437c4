"""Maxim's tools: the only way the mind acts, and the way it looks at itself (seed 001).

`@maxim_core.tools.tool` registers a user function as a tool; `build_tool_registry()` gives
the built-in set.
"""

from maxim_core.tools.base import (FunctionTool, InactiveToolError, Tool, ToolError,
                                   ToolInputError, ToolOutcome, UnknownToolError)
from maxim_core.tools.catalog import build_tool_registry
from maxim_core.tools.learned_index import LearnedToolIndex, ToolSelection
from maxim_core.tools.registry import (default_registry, register_tool, tool, TOOL_ALIASES,
                                       TOOL_DESCRIPTIONS, ToolRegistry)
from maxim_core.tools.sandbox import CommandTool, Limits, ProcessSandbox, SandboxUnavailable
from maxim_core.tools.scope import ToolExecutor, ToolScope

__all__ = ['build_tool_registry', 'CommandTool', 'default_registry', 'FunctionTool',
           'InactiveToolError', 'LearnedToolIndex', 'Limits', 'ProcessSandbox', 'register_tool',
           'SandboxUnavailable', 'tool', 'Tool', 'TOOL_ALIASES',
           'TOOL_DESCRIPTIONS', 'ToolError', 'ToolExecutor', 'ToolInputError', 'ToolOutcome',
           'ToolRegistry', 'ToolScope', 'ToolSelection', 'UnknownToolError']
