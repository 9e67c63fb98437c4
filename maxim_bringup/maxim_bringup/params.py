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


def for_namespace(data: dict, namespace: str) -> dict:
    """A params YAML's mapping with every plain node key (`attention:`) made the node's full
    name in `namespace` (`/r1/attention:`), so a namespaced robot gets its parameters: ROS 2
    matches a plain key only to the node of that name in the root namespace. Keys that start
    with `/` (full names, `/**` wildcards) are kept as they are."""
    ns = '/'.join(part for part in str(namespace).split('/') if part)
    if not ns:
        return dict(data)
    return {(key if str(key).startswith('/') else f'/{ns}/{key}'): body
            for key, body in data.items()}


def namespaced_params_file(path: str, namespace: str, directory: str | None = None) -> str:
    """Check a params file (ParamsError with the reason when it is not usable) and return
    the path of a file with its keys for nodes in `namespace` (the file itself when the
    namespace is empty). The copy is named by its content, so launching again reuses it."""
    import hashlib
    import tempfile

    load_params(path)
    ns = '/'.join(part for part in str(namespace).split('/') if part)
    if not ns:
        return path
    with open(path, encoding='utf-8') as f:
        data = yaml.safe_load(f) or {}
    text = yaml.safe_dump(for_namespace(data, ns), sort_keys=False)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    out = os.path.join(directory or tempfile.gettempdir(), f'maxim-params-{digest}.yaml')
    if not os.path.isfile(out):
        tmp = f'{out}.{os.getpid()}.tmp'
        with open(tmp, 'w', encoding='utf-8') as f:
            f.write(text)
        os.replace(tmp, out)
    return out
