"""The prompt system (seed 003): prioritised sections, a budgeted builder that keeps the
stable part first for KV-cache reuse, and tool descriptions from a table or the tool itself."""

from maxim_core.prompt.builder import (BuiltPrompt, identity_section, PFC_PREAMBLE,
                                       PromptBudgetError, PromptBuilder)
from maxim_core.prompt.sections import Priority, Section
from maxim_core.prompt.tools import (describe_tool, normalize_schema, tool_manifest,
                                     ToolDescription, ToolSpec, ToolSpecError)

__all__ = ['BuiltPrompt', 'PFC_PREAMBLE', 'Priority', 'PromptBudgetError', 'PromptBuilder',
           'Section', 'ToolDescription', 'ToolSpec', 'ToolSpecError', 'describe_tool',
           'identity_section', 'normalize_schema', 'tool_manifest']
