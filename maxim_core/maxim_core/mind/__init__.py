"""The Mind: one pure composition of the robot's thinking, behind small ports."""

from maxim_core.mind.cerebellum import Cerebellum, MotorProgram
from maxim_core.mind.config import DEFAULT_ACTIVE, MEMORY_CHANNELS, MindConfig, SYSTEMS
from maxim_core.mind.mind import Mind, StepResult
from maxim_core.mind.ports import (BodyPort, EpisodeRecord, EventSink, FearPort,
                                   HeadGoalCommand, MemoryItem, MemoryPort, ModelPort,
                                   PainReport, WorldPort)
from maxim_core.mind.runtime import MAX_CHAIN, result_percept, Runtime, TurnEnd

__all__ = ['BodyPort', 'Cerebellum', 'DEFAULT_ACTIVE', 'EpisodeRecord', 'EventSink',
           'FearPort', 'HeadGoalCommand', 'MAX_CHAIN', 'MEMORY_CHANNELS', 'MemoryItem',
           'MemoryPort', 'Mind', 'MindConfig', 'ModelPort', 'MotorProgram', 'PainReport',
           'result_percept', 'Runtime', 'StepResult', 'SYSTEMS', 'TurnEnd', 'WorldPort']
