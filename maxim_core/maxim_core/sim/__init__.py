"""Simulation (seeds 000, 001, 003): an agent-under-test driven in-process by an orchestrator.

bridge.SimulationBridge runs the AUT in a text world, robot_bridge.RobotBridge in the robot
world (the robot's own tools and a simulated head, composed by maxim_bringup.robot_world);
narrative holds the text world's tools and the imagined scene; orchestrator the
orchestrator's tools and role tool sets; scenario the YAML scenarios, their runner and
report; cli the command line.
"""

from maxim_core.sim.bridge import (ActionRecord, BridgeConfig, INSPECT_QUERIES,
                                   SimulationBridge, SimulationClosed, TurnResult,
                                   VirtualClock)
from maxim_core.sim.components import ComponentIndex, SEED_COMPONENTS
from maxim_core.sim.memory import SimMemory
from maxim_core.sim.orchestrator import (OrchestratorAgent, orchestrator_registry,
                                         ROLE_TOOL_SETS, role_tools, SimulationSession)
from maxim_core.sim.scenario import (find_scenario, run_scenario, Scenario, ScenarioError,
                                     ScenarioReport, shipped_scenarios)

__all__ = ['ActionRecord', 'BridgeConfig', 'ComponentIndex', 'find_scenario',
           'INSPECT_QUERIES', 'OrchestratorAgent', 'orchestrator_registry', 'ROLE_TOOL_SETS',
           'role_tools', 'run_scenario', 'Scenario', 'ScenarioError', 'ScenarioReport',
           'SEED_COMPONENTS', 'shipped_scenarios', 'SimMemory', 'SimulationBridge',
           'SimulationClosed', 'SimulationSession', 'TurnResult', 'VirtualClock']
