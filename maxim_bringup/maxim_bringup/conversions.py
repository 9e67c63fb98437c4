"""Messages -> plain Python values, for the console display, recordings and `maxim check`."""


def msg_to_dict(msg):
    """Any rosidl message (nested, with sequences) as plain dicts, lists and scalars."""
    if hasattr(msg, 'get_fields_and_field_types'):
        return {f: msg_to_dict(getattr(msg, f)) for f in msg.get_fields_and_field_types()}
    if isinstance(msg, (list, tuple)):
        return [msg_to_dict(v) for v in msg]
    if hasattr(msg, 'tolist'):  # numpy arrays from numeric sequences
        return msg.tolist()
    return msg


def status_to_dict(status) -> dict:
    """A diagnostic_msgs/DiagnosticStatus as {name, level (int), message, hardware_id,
    values ({key: value})}, what maxim_bringup.health reads."""
    level = status.level
    return {'name': status.name, 'level': level[0] if isinstance(level, bytes) else int(level),
            'message': status.message, 'hardware_id': status.hardware_id,
            'values': {kv.key: kv.value for kv in status.values}}
