"""Parameters declared from a table, as generate_parameter_library's `parameters.yaml` does.

A table lives beside the pure core it configures (no ROS there): name -> (default, description,
range), the range a (low, high) pair or None, and optionally a dict of other descriptor fields
({'dynamic_typing': True}). A pair of ints is an IntegerRange (step 1), else a
FloatingPointRange; the node declares the table here, where the ROS types are.
"""

from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor


def descriptor(description: str, rng=None, read_only: bool = False,
               **extra) -> ParameterDescriptor:
    """A ParameterDescriptor with a (low, high) range; `extra` sets other fields
    (dynamic_typing...)."""
    d = ParameterDescriptor(description=description, read_only=read_only, **extra)
    if rng is not None:
        lo, hi = rng
        if isinstance(lo, int) and isinstance(hi, int):
            d.integer_range = [IntegerRange(from_value=lo, to_value=hi, step=1)]
        else:
            d.floating_point_range = [FloatingPointRange(from_value=float(lo),
                                                         to_value=float(hi))]
    return d


def declare(node, name: str, default, description: str, rng=None, read_only: bool = False,
            **extra):
    """Declare one parameter; its value."""
    return node.declare_parameter(name, default,
                                  descriptor(description, rng, read_only, **extra)).value


def declare_table(node, table: dict, read_only: bool = False) -> dict:
    """Declare every parameter of `table` (name -> (default, description, range[, extra])),
    in its order; their values by name."""
    values = {}
    for name, (default, description, rng, *extra) in table.items():
        values[name] = declare(node, name, default, description, rng, read_only,
                               **(extra[0] if extra else {}))
    return values
