"""Messages -> plain Python values, for the console display, recordings and `maxim check`."""


def speech_to_percept(text: str, percept_id: str, source_name: str = 'panel'):
    """A line a person says to the robot as the Percept message the agent hears (the panel's
    input line, and the person of the scenarios' robot world): a person speaking is always
    salient and new."""
    from maxim_interfaces.msg import Percept
    return Percept(percept_id=percept_id, source=Percept.SOURCE_USER, source_name=source_name,
                   narrative=f'The user says: "{text}"', salience=1.0, novelty=1.0)


def status_to_dict(status) -> dict:
    """A diagnostic_msgs/DiagnosticStatus as {name, level (int), message, hardware_id,
    values ({key: value})}, what maxim_bringup.health reads."""
    level = status.level
    return {'name': status.name, 'level': level[0] if isinstance(level, bytes) else int(level),
            'message': status.message, 'hardware_id': status.hardware_id,
            'values': {kv.key: kv.value for kv in status.values}}
