"""The Mind: one pure composition of the robot's thinking, behind small ports."""

from maxim_core.mind.cerebellum import Cerebellum, MotorProgram
from maxim_core.mind.mind import (DEFAULT_ACTIVE, MEMORY_CHANNELS, Mind, MindConfig,
                                  StepResult, SYSTEMS)
from maxim_core.mind.ports import (BodyPort, EpisodeRecord, EventSink, FearPort,
                                   HeadGoalCommand, MemoryPort, ModelPort, PainReport)

__all__ = ['BodyPort', 'Cerebellum', 'DEFAULT_ACTIVE', 'EpisodeRecord', 'EventSink',
           'FearPort', 'HeadGoalCommand', 'MEMORY_CHANNELS', 'MemoryPort', 'Mind',
           'MindConfig', 'ModelPort', 'MotorProgram', 'PainReport', 'StepResult', 'SYSTEMS']
