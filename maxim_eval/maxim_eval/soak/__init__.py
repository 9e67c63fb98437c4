"""Idle introspection over hours of robot time on a simulated clock.

idle: the controller, task store and executor in one process with a synthetic world
(`python -m maxim_eval.soak.idle`); graph: the same world on the real node graph over DDS
(`python -m maxim_eval.soak.graph`).
"""
