"""Maxim's evaluation code, apart from the product packages.

scenario: the simulation scenarios (text and robot worlds), their runner, the orchestrator and
the shipped scenario files; robot_world: the robot world those scenarios run on (the robot's
perception parts and simulated head); scenario_memory: the robot's memory system for the
agents under test; soak: idle introspection over hours of robot time (soak.idle in one
process, soak.graph on the real node graph); cli: the `maxim scenario` command.

maxim_eval may import every Maxim package; no product package (maxim_common, maxim_core,
maxim_memory, maxim_perception, maxim_bringup) imports it (test/test_structure.py).
"""
