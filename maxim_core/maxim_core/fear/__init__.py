"""The FearAgent: the safety gate before every non-introspection tool call (seed 001)."""

from maxim_core.fear.agent import (FearAgent, FearConfig, INTROSPECTION_TOOLS, LAYER_CODES,
                                   ToolPainBridge, Verdict)
from maxim_core.fear.patterns import ARG_KINDS, CATEGORIES, Finding, scan_call, ScanPolicy

__all__ = ['ARG_KINDS', 'CATEGORIES', 'FearAgent', 'FearConfig', 'Finding',
           'INTROSPECTION_TOOLS', 'LAYER_CODES', 'scan_call', 'ScanPolicy', 'ToolPainBridge',
           'Verdict']
