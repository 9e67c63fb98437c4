"""The FearAgent: the safety gate before every non-introspection tool call (seed 001)."""

from maxim_core.fear.agent import (ChannelLimit, DEFAULT_OUTBOUND_LIMITS, FearAgent, FearConfig,
                                   INTROSPECTION_TOOLS, LAYER_CODES, OutboundLimiter,
                                   ToolPainBridge, Verdict)
from maxim_core.fear.patterns import (ARG_KINDS, CATEGORIES, find_secrets, Finding, scan_call,
                                      ScanPolicy)

__all__ = ['ARG_KINDS', 'CATEGORIES', 'ChannelLimit', 'DEFAULT_OUTBOUND_LIMITS', 'FearAgent',
           'FearConfig', 'find_secrets', 'Finding', 'INTROSPECTION_TOOLS', 'LAYER_CODES',
           'OutboundLimiter', 'scan_call', 'ScanPolicy', 'ToolPainBridge', 'Verdict']
