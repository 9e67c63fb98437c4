"""Attention: detectors, tracker, novelty/salience and the core that ties them (pure Python)."""

from maxim_perception.attention.attention import (AttentionConfig, AttentionCore,
                                                  AttentionError, AttentionResult, PerceptGate,
                                                  PerceptSummary, Target)

__all__ = ['AttentionConfig', 'AttentionCore', 'AttentionError', 'AttentionResult',
           'PerceptGate', 'PerceptSummary', 'Target']
