"""Parameter helpers the agent node shares with nothing else but keeps out of its body.

Declaring and reading are apart: a lifecycle node declares its parameters once, in its
constructor (where launch's values and parameter overrides arrive), and reads them at each
configure (a cleanup and a configure read them again).
"""

from rclpy.exceptions import ParameterUninitializedException
from rclpy.parameter import Parameter
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

from maxim_core.idle.runtime import configs_from, IdleSettings, PARAMS as IDLE_PARAMS


def declare_string_array(node, name: str, default: list, description: str,
                         read_only: bool = False) -> list:
    """A string[] parameter; an empty default has no ROS type of its own, so it is typed."""
    d = ParameterDescriptor(description=description, read_only=read_only)
    if default:
        return list(node.declare_parameter(name, default, d).value)
    return list(node.declare_parameter(name, Parameter.Type.STRING_ARRAY, d).value or [])


def read_string_array(node, name: str) -> list:
    """A string[] parameter's value; unset (an empty default) is the empty list."""
    try:
        return list(node.get_parameter(name).value or [])
    except ParameterUninitializedException:     # declared by type, never given a value
        return []


def declare_idle(node) -> None:
    """Declare the `idle.*` parameters, read-only: they shape the task store and the
    controller that configure builds."""
    for p in IDLE_PARAMS:
        d = ParameterDescriptor(description=p.description, read_only=True)
        if p.range is not None:
            lo, hi = p.range
            if isinstance(p.default, float):
                d.floating_point_range = [FloatingPointRange(from_value=float(lo),
                                                             to_value=float(hi))]
            else:
                d.integer_range = [IntegerRange(from_value=int(lo), to_value=int(hi), step=1)]
        if isinstance(p.default, list):  # an empty list has no ROS type of its own
            node.declare_parameter(p.name, Parameter.Type.STRING_ARRAY, d)
        else:
            node.declare_parameter(p.name, p.default, d)


def read_idle(node, run_id: str) -> IdleSettings:
    """The `idle.*` configs from the declared parameters; a bad value is a ValueError
    naming it."""
    values = {p.name: (read_string_array(node, p.name) if isinstance(p.default, list)
                       else node.get_parameter(p.name).value) for p in IDLE_PARAMS}
    try:
        return configs_from(values, run_id=run_id)
    except ValueError as exc:
        raise ValueError(f'bad idle.* parameters: {exc}') from exc
