"""Conversions every package needs: a header stamp in seconds, any message as plain values,
joints of a JointState by name.

Duck-typed: this module imports no rclpy and no message package, so a pure core (the
ros2_control driver, a health builder) may use it; the nodes pass the message objects in.
"""

from typing import Sequence


def stamp_to_seconds(stamp) -> float:
    """A header stamp (builtin_interfaces/Time) in seconds; an unset stamp is 0.0."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def msg_to_dict(msg):
    """Any rosidl message (nested, with sequences) as plain dicts, lists and scalars."""
    if hasattr(msg, 'get_fields_and_field_types'):
        return {f: msg_to_dict(getattr(msg, f)) for f in msg.get_fields_and_field_types()}
    if isinstance(msg, (list, tuple)):
        return [msg_to_dict(v) for v in msg]
    if hasattr(msg, 'tolist'):  # numpy arrays from numeric sequences
        return msg.tolist()
    return msg


def joint_values(names: Sequence[str], values: Sequence[float],
                 joints: Sequence[str]) -> tuple[float, ...] | None:
    """The values of `joints`, in that order, from a JointState's `names` and one of its
    arrays (position, velocity), by name, whatever their order and whatever other joints it
    carries; None when a joint is missing or the array is too short for it. Values are not
    checked for being finite: each caller says what a non-finite one means to it."""
    names = list(names)
    try:
        idx = [names.index(j) for j in joints]
    except ValueError:
        return None
    if len(values) <= max(idx, default=-1):
        return None
    return tuple(float(values[i]) for i in idx)
