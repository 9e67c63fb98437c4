"""Messages, requests and goals of any rosidl type, built from the type itself for fuzzing:
extreme and negative stamps, NaN / inf / huge numbers, empty and huge strings and arrays,
invalid enum values, wrong frame ids. Deterministic for a given random.Random."""

import array
import importlib
import math
import random
import re

# rosidl scalar type -> (min, max) of what its Python setter accepts.
INT_RANGES = {
    'int8': (-2 ** 7, 2 ** 7 - 1), 'uint8': (0, 2 ** 8 - 1), 'byte': (0, 255),
    'octet': (0, 255), 'char': (0, 255),
    'int16': (-2 ** 15, 2 ** 15 - 1), 'uint16': (0, 2 ** 16 - 1),
    'int32': (-2 ** 31, 2 ** 31 - 1), 'uint32': (0, 2 ** 32 - 1),
    'int64': (-2 ** 63, 2 ** 63 - 1), 'uint64': (0, 2 ** 64 - 1),
}
FLOAT_MAX = {'float': 3.4028234e38, 'double': 1.7976931348623157e308}

_SEQ = re.compile(r'^sequence<(.+?)(?:, (\d+))?>$')
_ARR = re.compile(r'^(.+)\[(\d+)\]$')
_BOUNDED_STR = re.compile(r'^w?string<=(\d+)$')

WILD_STRINGS = [
    '', ' ', 'a', 'ünïcode ✓ 日本', '\x01\x02\x1b[2J\x7f', '\t\n\r', 'null', 'NaN', '-1',
    '{}', '[]', '{"a": 1}', '{' * 2000, '[' * 5000 + ']' * 5000, '{"a":' * 400 + '1' + '}' * 400,
    '9' * 5000, '[GOAL: look_at door 1]', '[goal: \u017ftop ball 1]', '\ufeff\u202e', '../../etc',
    '%s%n%x', "'; DROP TABLE records; --", 'wrong_frame', '/', '~', 'x' * 300,
]
FRAME_IDS = ['', 'wrong_frame', 'camera_optical_frame', '/', 'x' * 256, 'ü']


def msg_class(kind: str):
    """The Python class of 'pkg/Type' (a message)."""
    pkg, name = kind.split('/')
    return getattr(importlib.import_module(f'{pkg}.msg'), name)


def constants(cls) -> dict[str, int]:
    """The integer constants a message declares (its enum values)."""
    return {k: v for k, v in vars(cls).items()
            if k.isupper() and not k.startswith('_') and not k.endswith('__DEFAULT')
            and isinstance(v, int) and not isinstance(v, bool)}


class Generator:
    """Builds instances of rosidl types. `wildness` in [0, 1]: the share of fields that get an
    extreme value; the others get plain, valid-looking values, so a case reaches past the
    first check of a callback."""

    def __init__(self, rng: random.Random, huge: int = 20_000, now_s: float = 1.7e9):
        self.rng = rng
        self.huge = huge
        self.now_s = now_s

    # -- scalars -------------------------------------------------------------------------------
    def _int(self, kind: str, wild: bool, enum: list[int]) -> int:
        lo, hi = INT_RANGES[kind]
        enum = [v for v in enum if lo <= v <= hi]   # rosidl's setters do not check ranges
        if not wild:
            return self.rng.choice(enum) if enum and self.rng.random() < 0.8 else \
                self.rng.randint(max(lo, 0), min(hi, 10))
        pool = [lo, hi, 0, 1, max(lo, -1), hi - 1, self.rng.randint(lo, hi)]
        if enum:
            pool += [max(enum) + 1 if max(enum) < hi else lo, hi]   # invalid enum values
        return self.rng.choice([v for v in pool if lo <= v <= hi])

    def _float(self, kind: str, wild: bool) -> float:
        if not wild:
            return self.rng.uniform(-1.0, 1.0)
        top = FLOAT_MAX[kind]
        return self.rng.choice([math.nan, math.inf, -math.inf, top, -top, 0.0, -0.0,
                                1e-300 if kind == 'double' else 1e-38, 5e-324 if kind ==
                                'double' else 1.4e-45, 1e9, -1e9,
                                self.rng.uniform(-1e6, 1e6)])

    def _string(self, field: str, wild: bool, bound: int | None) -> str:
        if field == 'frame_id':
            s = self.rng.choice(FRAME_IDS) if wild else 'camera_optical_frame'
        elif not wild:
            s = self.rng.choice(['hello', 'a red ball', 'person', 'look_at', 'test', ''])
        else:
            r = self.rng.random()
            if r < 0.1:
                s = 'x' * self.huge
            elif r < 0.15:
                s = ''.join(chr(self.rng.randint(1, 0xD7FF)) for _ in range(200))
            else:
                s = self.rng.choice(WILD_STRINGS)
        return s[:bound] if bound is not None else s

    def _time(self, cls, wild: bool):
        t = cls()
        if not wild:
            t.sec, t.nanosec = int(self.now_s), self.rng.randint(0, 999_999_999)
            return t
        t.sec = self.rng.choice([-2 ** 31, -1, 0, 1, int(self.now_s), int(self.now_s) + 10 ** 6,
                                 2 ** 31 - 1, int(self.now_s) - 10 ** 6])
        t.nanosec = self.rng.choice([0, 1, 999_999_999, 10 ** 9, 2 ** 32 - 1])
        return t

    # -- one value of a type string -------------------------------------------------------------
    def value(self, kind: str, field: str, wildness: float, enum: list[int], depth: int):
        wild = self.rng.random() < wildness
        seq, arr = _SEQ.match(kind), _ARR.match(kind)
        if seq or arr:
            inner = (seq or arr).group(1)
            if arr:
                n = int(arr.group(2))
            else:
                bound = int(seq.group(2)) if seq.group(2) else None
                big = 2000 if inner in INT_RANGES or inner in FLOAT_MAX else 30
                n = self.rng.choice([0, 1, 3, big]) if wild else self.rng.choice([0, 1, 2])
                if depth > 2:
                    n = min(n, 2)
                if bound is not None:
                    n = min(n, bound)
            if inner in ('uint8', 'octet', 'byte', 'char'):
                return array.array('B', self.rng.randbytes(n)) if inner == 'uint8' else \
                    [bytes([b]) for b in self.rng.randbytes(n)] if inner in ('octet', 'byte') \
                    else [self.rng.randint(0, 255) for _ in range(n)]
            return [self.value(inner, field, wildness, enum, depth + 1) for _ in range(n)]
        if kind == 'boolean':
            return self.rng.random() < 0.5
        if kind in INT_RANGES:
            if kind in ('octet', 'byte'):
                return bytes([self.rng.randint(0, 255)])
            return self._int(kind, wild, enum)
        if kind in FLOAT_MAX:
            return self._float(kind, wild)
        m = _BOUNDED_STR.match(kind)
        if kind in ('string', 'wstring') or m:
            return self._string(field, wild, int(m.group(1)) if m else None)
        cls = msg_class(kind)
        if kind in ('builtin_interfaces/Time', 'builtin_interfaces/Duration'):
            return self._time(cls, wild)
        return self.message(cls, wildness, depth + 1)

    def message(self, cls, wildness: float, depth: int = 0):
        """An instance of message (or request / goal) class `cls`."""
        if cls.__name__ == 'Image' and cls.__module__.startswith('sensor_msgs') and \
                self.rng.random() < 0.5:
            return self.image(cls, wildness)
        msg = cls()
        enum = list(constants(cls).values())
        for field, kind in cls.get_fields_and_field_types().items():
            if depth > 4 and ('/' in kind or kind.startswith('sequence')):
                continue
            setattr(msg, field, self.value(kind, field, wildness, enum, depth))
        return msg

    def image(self, cls, wildness: float):
        """An Image that is almost right: sizes, encodings and steps that do not add up."""
        w, h = self.rng.choice([(8, 6), (1, 1), (64, 48), (0, 0), (4096, 4096), (3, 100000)])
        enc = self.rng.choice(['bgr8', 'rgb8', 'mono8', 'mono16', 'rgba8', '8UC3', 'jpeg', '',
                               'bgr8' * 50])
        msg = cls(width=w, height=h, encoding=enc)
        msg.step = self.rng.choice([w * 3, w, 0, 2 ** 32 - 1, w * 3 + 4])
        n = min(self.rng.choice([w * h * 3, w * h, 0, 17]), 200_000)
        msg.data = array.array('B', self.rng.randbytes(n))
        msg.is_bigendian = self.rng.choice([0, 1, 255])
        msg.header.stamp = self._time(type(msg.header.stamp), self.rng.random() < wildness)
        msg.header.frame_id = self.rng.choice(FRAME_IDS)
        return msg


def float_paths(msg, prefix: str = ''):
    """Every (path, value) of a float field in `msg` and its nested messages."""
    for field, kind in msg.get_fields_and_field_types().items():
        value = getattr(msg, field)
        path = f'{prefix}{field}'
        base = (_SEQ.match(kind) or _ARR.match(kind))
        inner = base.group(1) if base else kind
        if inner in FLOAT_MAX:
            items = list(value) if base else [value]
            for i, v in enumerate(items):
                yield (f'{path}[{i}]' if base else path), float(v)
        elif '/' in inner:
            items = list(value) if base else [value]
            for i, v in enumerate(items):
                yield from float_paths(v, f'{path}[{i}].' if base else f'{path}.')
