"""Simulation (seeds 000, 001, 003): an agent-under-test driven in-process by an orchestrator.

bridge.SimulationBridge runs the AUT in a text world, robot_bridge.RobotBridge in the robot
world (the robot's own tools and a simulated head, composed by maxim_eval.robot_world);
narrative holds the text world's tools and the imagined scene; orchestrator the
orchestrator's tools and role tool sets; scenario the YAML scenarios, their runner and
report; cli the command line.
"""

from maxim_eval.scenario.bridge import (ActionRecord, BridgeConfig, INSPECT_QUERIES,
                                        SimulationBridge, SimulationClosed, TurnResult,
                                        VirtualClock)
from maxim_eval.scenario.components import ComponentIndex, SEED_COMPONENTS
from maxim_eval.scenario.memory import SimMemory
from maxim_eval.scenario.orchestrator import (OrchestratorAgent, orchestrator_registry,
                                              ROLE_TOOL_SETS, role_tools, SimulationSession)
from maxim_eval.scenario.scenario import (find_scenario, run_scenario, Scenario, ScenarioError,
                                          ScenarioReport, shipped_scenarios)

__all__ = ['ActionRecord', 'BridgeConfig', 'ComponentIndex', 'find_scenario',
           'INSPECT_QUERIES', 'OrchestratorAgent', 'orchestrator_registry', 'ROLE_TOOL_SETS',
           'role_tools', 'run_scenario', 'Scenario', 'ScenarioError', 'ScenarioReport',
           'SEED_COMPONENTS', 'shipped_scenarios', 'SimMemory', 'SimulationBridge',
           'SimulationClosed', 'SimulationSession', 'TurnResult', 'VirtualClock']
