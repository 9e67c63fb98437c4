"""Deliberation (seed 000): the ThoughtGate, bio-enrichment, computed salience, working
memory, multi-cycle thinking under a schema of the active tools, and energy accounting."""

from maxim_core.deliberation.cycles import DeliberationConfig, Deliberator
from maxim_core.deliberation.thoughts import DeliberationResult, Thought, TranscriptEntry
from maxim_core.deliberation.energy import EnergyBudget, EnergyReport
from maxim_core.deliberation.enrichment import BioEnrichmentPipeline, Enrichment
from maxim_core.deliberation.gate import GateDecision, ThoughtGate
from maxim_core.deliberation.render import render_thought_stream
from maxim_core.deliberation.salience import jaccard, thought_salience, WorkingMemorySet

__all__ = ['BioEnrichmentPipeline', 'DeliberationConfig', 'DeliberationResult', 'Deliberator',
           'EnergyBudget', 'EnergyReport', 'Enrichment', 'GateDecision', 'Thought',
           'ThoughtGate', 'TranscriptEntry', 'WorkingMemorySet', 'jaccard',
           'render_thought_stream', 'thought_salience']
