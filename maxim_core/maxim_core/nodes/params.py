"""Parameter helpers the agent node shares with nothing else but keeps out of its body."""

from rclpy.parameter import Parameter
from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

from maxim_core.idle.runtime import configs_from, IdleSettings, PARAMS as IDLE_PARAMS


def declare_string_array(node, name: str, default: list, description: str) -> list:
    """A string[] parameter; an empty default has no ROS type of its own, so it is typed."""
    d = ParameterDescriptor(description=description)
    if default:
        return list(node.declare_parameter(name, default, d).value)
    return list(node.declare_parameter(name, Parameter.Type.STRING_ARRAY, d).value or [])


def declare_idle(node, run_id: str) -> IdleSettings:
    """Declare the `idle.*` parameters (read-only: they shape the task store and the
    controller at start) and build their configs; a bad value is a ValueError naming it."""
    values = {}
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
            value = node.declare_parameter(p.name, Parameter.Type.STRING_ARRAY, d).value
            values[p.name] = list(value or [])
        else:
            values[p.name] = node.declare_parameter(p.name, p.default, d).value
    try:
        return configs_from(values, run_id=run_id)
    except ValueError as exc:
        raise ValueError(f'bad idle.* parameters: {exc}') from exc
