"""Messages -> plain Python values, for the console display and recordings."""


def msg_to_dict(msg):
    """Any rosidl message (nested, with sequences) as plain dicts, lists and scalars."""
    if hasattr(msg, 'get_fields_and_field_types'):
        return {f: msg_to_dict(getattr(msg, f)) for f in msg.get_fields_and_field_types()}
    if isinstance(msg, (list, tuple)):
        return [msg_to_dict(v) for v in msg]
    if hasattr(msg, 'tolist'):  # numpy arrays from numeric sequences
        return msg.tolist()
    return msg
