"""The three memory layers of seed 002 behind one protocol."""

from maxim_memory.layers.angular_gyrus import AngularGyrus
from maxim_memory.layers.atl import ATL, normalize_name
from maxim_memory.layers.base import (AccessBasedStrategy, BaseLayer, CapacityPolicy,
                                      ConsolidationReport, HourProfile, MemoryLayer,
                                      MemoryStrategy, RecordNotFoundError, RecordTypeError,
                                      TemporalAwareStrategy)
from maxim_memory.layers.hippocampus import episode_time, Hippocampus

__all__ = ['AccessBasedStrategy', 'AngularGyrus', 'ATL', 'BaseLayer', 'CapacityPolicy',
           'ConsolidationReport', 'episode_time', 'Hippocampus', 'HourProfile', 'MemoryLayer',
           'MemoryStrategy', 'normalize_name', 'RecordNotFoundError', 'RecordTypeError',
           'TemporalAwareStrategy']
