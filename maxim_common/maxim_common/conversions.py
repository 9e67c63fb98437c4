"""Conversions every package needs: a header stamp in seconds (and its age), any message as plain
values and back, joints of a JointState by name.

Duck-typed: this module imports no rclpy and no message package, so a pure core (the
ros2_control driver, a health builder) may use it; the nodes pass the message objects in.
"""

from typing import Sequence


def stamp_to_seconds(stamp) -> float:
    """A header stamp (builtin_interfaces/Time) in seconds; an unset stamp is 0.0."""
    return float(stamp.sec) + float(stamp.nanosec) * 1e-9


def stamp_age_s(stamp, now_ns: int) -> float:
    """Seconds between a (valid) header stamp and now (`now_ns`, nanoseconds on the same
    clock); 0 for an unset one. Plain float arithmetic: no stamp, however far off, raises
    here."""
    if stamp.sec == 0 and stamp.nanosec == 0:
        return 0.0
    return now_ns * 1e-9 - stamp_to_seconds(stamp)


def msg_to_dict(msg):
    """Any rosidl message (nested, with sequences) as plain dicts, lists and scalars."""
    if hasattr(msg, 'get_fields_and_field_types'):
        return {f: msg_to_dict(getattr(msg, f)) for f in msg.get_fields_and_field_types()}
    if isinstance(msg, (list, tuple)):
        return [msg_to_dict(v) for v in msg]
    if hasattr(msg, 'tolist'):  # numpy arrays from numeric sequences
        return msg.tolist()
    return msg


def fill_msg(msg, fields: dict):
    """Set the fields of a rosidl message from a dict (nested messages from nested dicts);
    unknown keys are a ValueError. The message, for chaining."""
    known = msg.get_fields_and_field_types()
    for key, value in fields.items():
        if key not in known:
            raise ValueError(f'{type(msg).__name__} has no field {key!r}')
        current = getattr(msg, key)
        if hasattr(current, 'get_fields_and_field_types') and isinstance(value, dict):
            fill_msg(current, value)
        else:
            setattr(msg, key, value)
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
