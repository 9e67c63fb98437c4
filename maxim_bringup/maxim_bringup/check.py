"""`maxim check`: is a running robot healthy? Reads its `diagnostics` for a few seconds.

It joins the robot's ROS graph (the same ROS_DOMAIN_ID, or --domain-id, and --namespace),
keeps the latest status of each component, and prints one line per node: level, message and
key values. Exit 0 when every node of the graph reported and none is in ERROR, 1 otherwise,
2 when ROS itself cannot start.
"""

import os
import time

from maxim_bringup.conversions import status_to_dict
from maxim_bringup.graph import GRAPHS
from maxim_bringup.health import infer_graph, split_name, summarize


def read_diagnostics(namespace: str = '', domain_id: int | None = None,
                     timeout_s: float = 5.0, expected: list[str] | None = None,
                     context=None) -> list[dict]:
    """The latest status of every component seen on `<namespace>/diagnostics` within
    `timeout_s` (sooner once every node of `expected` reported, after one full period)."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.executors import SingleThreadedExecutor

    own = context is None
    if own:
        context = rclpy.Context()
        kwargs = {} if domain_id is None else {'domain_id': domain_id}
        rclpy.init(context=context, **kwargs)
    latest: dict[str, dict] = {}
    try:
        node = rclpy.create_node(f'maxim_check_{os.getpid()}', namespace=namespace or '/',
                                 context=context, start_parameter_services=False)
        executor = SingleThreadedExecutor(context=context)
        executor.add_node(node)

        def on_diag(msg):
            for st in msg.status:
                latest[st.name] = status_to_dict(st)
        node.create_subscription(DiagnosticArray, 'diagnostics', on_diag, 50)
        start = time.monotonic()
        deadline = start + timeout_s
        while time.monotonic() < deadline:
            executor.spin_once(timeout_sec=0.1)
            if expected and time.monotonic() - start > 1.2:
                seen = {split_name(name)[0] for name in latest}
                if set(expected) <= seen:
                    break
        executor.remove_node(node)
        node.destroy_node()
    finally:
        if own:
            rclpy.try_shutdown(context=context)
    return list(latest.values())


def check(graph: str = 'auto', namespace: str = '', domain_id: int | None = None,
          timeout_s: float = 5.0, nodes: list[str] | None = None, out=print,
          context=None) -> int:
    """Print one line per node and return the exit code (0 healthy, 1 missing or ERROR)."""
    if graph != 'auto' and graph not in GRAPHS:
        raise KeyError(f'unknown graph {graph!r}; known: auto, {", ".join(sorted(GRAPHS))}')
    expected = list(nodes) if nodes else (GRAPHS[graph] if graph != 'auto' else None)
    statuses = read_diagnostics(namespace, domain_id, timeout_s, expected, context)
    if expected is None:
        seen = {split_name(s['name'])[0] for s in statuses}
        if not seen:
            out(f'MISSING no node reports on {namespace.rstrip("/")}/diagnostics within '
                f'{timeout_s:g} s: is a robot running on this ROS_DOMAIN_ID '
                f'({os.environ.get("ROS_DOMAIN_ID", "0") if domain_id is None else domain_id})'
                f' and namespace ({namespace or "/"})?')
            return 1
        graph = infer_graph(seen, GRAPHS)
        expected = GRAPHS[graph]
    reports = summarize(statuses, expected, timeout_s)
    width = max(len(r.node) for r in reports)
    for r in reports:
        out(r.line(width))
    failed = [r.node for r in reports if r.failed]
    where = f' in {namespace}' if namespace else ''
    if failed:
        out(f'maxim check: {len(failed)} of {len(reports)} nodes{where} missing or in '
            f'ERROR: {", ".join(failed)}')
        return 1
    out(f'maxim check: {len(reports)} nodes{where} healthy ({graph} graph)'
        if graph != 'auto' else f'maxim check: {len(reports)} nodes{where} healthy')
    return 0
