"""Read a ROS 2 params YAML (the file launch passes to nodes) for the in-process runner."""

import os

import yaml


class ParamsError(ValueError):
    """The params file is missing or not in the ROS 2 params layout."""


def flatten(tree: dict, prefix: str = '') -> dict:
    """Nested YAML mappings -> dotted parameter names, as ROS 2 reads them."""
    out = {}
    for key, value in tree.items():
        name = f'{prefix}.{key}' if prefix else str(key)
        if isinstance(value, dict):
            out.update(flatten(value, name))
        else:
            out[name] = value
    return out


def load_params(path: str) -> dict[str, dict]:
    """Return {node_name: {parameter: value}} from a params YAML.

    Keys may be plain node names, `/name`, `/namespace/name` or the `/**` wildcard, which
    applies to every node (node-specific values win).
    """
    if not os.path.isfile(path):
        raise ParamsError(f'params file not found: {path}')
    try:
        with open(path, encoding='utf-8') as f:
            data = yaml.safe_load(f) or {}
    except yaml.YAMLError as exc:
        raise ParamsError(f'params file {path} is not valid YAML: {exc}') from exc
    if not isinstance(data, dict):
        raise ParamsError(f'params file {path} must map node names to ros__parameters')
    wildcard: dict = {}
    nodes: dict[str, dict] = {}
    for key, body in data.items():
        if not isinstance(body, dict) or 'ros__parameters' not in body:
            raise ParamsError(f'{path}: entry {key!r} has no ros__parameters mapping')
        values = flatten(body['ros__parameters'] or {})
        name = str(key).rstrip('/').split('/')[-1]
        if name == '**':
            wildcard.update(values)
        else:
            nodes.setdefault(name, {}).update(values)
    return {name: {**wildcard, **values} for name, values in nodes.items()} | (
        {'**': wildcard} if wildcard else {})


def for_node(params: dict[str, dict], name: str) -> dict:
    """Parameters for one node: its own entry over the wildcard."""
    return {**params.get('**', {}), **params.get(name, {})}
