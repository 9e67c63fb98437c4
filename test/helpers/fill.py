"""Deterministic, fully populated instances of any rosidl message, for contract tests."""

import importlib
import re

_INT_RANGES = {
    'int8': 100, 'uint8': 200, 'int16': 1000, 'uint16': 2000, 'int32': 100000,
    'uint32': 200000, 'int64': 10 ** 10, 'uint64': 2 * 10 ** 10, 'byte': 7, 'char': 65,
    'octet': 7,
}


def _scalar(kind: str, seed: int):
    if kind == 'boolean':
        return seed % 2 == 0
    if kind in ('float', 'double'):
        return float(seed % 97) + 0.5
    if kind in _INT_RANGES:
        value = seed % _INT_RANGES[kind]
        return -value if kind.startswith('int') and seed % 3 == 0 else value
    if kind in ('string', 'wstring') or kind.startswith('string<'):
        return f'value-{seed}-ünïcode'
    return None


def _msg_class(kind: str):
    pkg, name = kind.split('/')
    return getattr(importlib.import_module(f'{pkg}.msg'), name)


def filled(cls, seed: int = 1):
    """Return an instance of `cls` with every field set to a deterministic, non-default value."""
    msg = cls()
    for i, (field, kind) in enumerate(sorted(cls.get_fields_and_field_types().items())):
        s = seed * 31 + i
        seq = re.match(r'sequence<([^,>]+)(?:, \d+)?>', kind)
        arr = re.match(r'(.+)\[(\d+)\]$', kind)
        if seq or arr:
            inner = (seq or arr).group(1)
            count = int(arr.group(2)) if arr else 2
            values = [_one(inner, s + k) for k in range(count)]
            if inner in ('float', 'double', 'boolean') or inner in _INT_RANGES:
                setattr(msg, field, values)
            else:
                setattr(msg, field, values)
        else:
            setattr(msg, field, _one(kind, s))
    return msg


def _one(kind: str, seed: int):
    value = _scalar(kind, seed)
    if value is not None:
        return value
    if kind == 'builtin_interfaces/Time' or kind == 'builtin_interfaces/Duration':
        inst = _msg_class(kind)()
        inst.sec = seed % 1000
        inst.nanosec = (seed * 7919) % 1000000000
        return inst
    return filled(_msg_class(kind), seed)
