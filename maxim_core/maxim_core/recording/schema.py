"""ROS 2 message definitions in the `ros2msg` form MCAP readers expect.

rosbag2 stores each channel's schema as the type's .msg text followed by the text of every
type it uses, each introduced by a line of 80 '=' and `MSG: pkg/Type`. Foxglove and the mcap
readers decode CDR with it. The .msg files come from the installed share/ directories found
on AMENT_PREFIX_PATH, so this module needs no ROS import.
"""

import os
import re

SEPARATOR = '=' * 80

PRIMITIVES = {
    'bool', 'byte', 'char', 'float32', 'float64', 'int8', 'uint8', 'int16', 'uint16',
    'int32', 'uint32', 'int64', 'uint64', 'string', 'wstring',
}


class SchemaError(LookupError):
    """A message type whose definition cannot be found."""


def _split(type_name: str) -> tuple[str, str]:
    """'pkg/msg/Type' or 'pkg/Type' -> ('pkg', 'Type')."""
    parts = type_name.split('/')
    if len(parts) == 3 and parts[1] == 'msg':
        return parts[0], parts[2]
    if len(parts) == 2:
        return parts[0], parts[1]
    raise SchemaError(f'not a message type name: {type_name!r}')


class DefinitionFinder:
    """Reads .msg files from share/<pkg>/msg/ under the given prefixes."""

    def __init__(self, prefixes: list[str] | None = None):
        if prefixes is None:
            prefixes = [p for p in os.environ.get('AMENT_PREFIX_PATH', '').split(os.pathsep)
                        if p]
        self.prefixes = prefixes
        self._cache: dict[str, str] = {}

    def msg_text(self, package: str, name: str) -> str:
        key = f'{package}/{name}'
        if key not in self._cache:
            for prefix in self.prefixes:
                path = os.path.join(prefix, 'share', package, 'msg', f'{name}.msg')
                if os.path.isfile(path):
                    with open(path, encoding='utf-8') as f:
                        self._cache[key] = f.read()
                    break
            else:
                raise SchemaError(f'no definition of {key} under {", ".join(self.prefixes)}')
        return self._cache[key]

    def definition(self, type_name: str) -> str:
        """The full ros2msg text of a type, dependencies included, each once."""
        package, name = _split(type_name)
        root = self.msg_text(package, name)
        out = [root.rstrip('\n')]
        seen = {f'{package}/{name}'}
        queue = _dependencies(root, package)
        while queue:
            dep_pkg, dep = queue.pop(0)
            key = f'{dep_pkg}/{dep}'
            if key in seen:
                continue
            seen.add(key)
            text = self.msg_text(dep_pkg, dep)
            out += [SEPARATOR, f'MSG: {key}', text.rstrip('\n')]
            queue += _dependencies(text, dep_pkg)
        return '\n'.join(out) + '\n'


def _dependencies(text: str, package: str) -> list[tuple[str, str]]:
    """(package, Type) of every non-primitive field type in a .msg text."""
    deps = []
    for line in text.splitlines():
        line = line.split('#', 1)[0].strip()
        if not line:
            continue
        field_type = line.split()[0]  # constants and defaults are primitive: skipped below
        base = re.sub(r'\[.*\]$', '', field_type)
        base = re.sub(r'<=\d+$', '', base)
        if base in PRIMITIVES:
            continue
        if base == 'Header':
            deps.append(('std_msgs', 'Header'))
        elif '/' in base:
            deps.append(_split(base))
        else:
            deps.append((package, base))
    return deps
