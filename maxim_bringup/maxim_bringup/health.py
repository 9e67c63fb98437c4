"""What `maxim check` concludes from a running robot's `diagnostics`, as plain data.

Every node publishes a diagnostic_msgs/DiagnosticArray on `diagnostics` once a second, one
status per component, named '<node>: <component>'. `summarize` takes the latest status of each
(as plain dicts, see conversions.status_to_dict) and the nodes the graph should have, and says
per node: its level, its message and a few key values; a node that did not report is MISSING.
The check fails when a node is missing or in ERROR (a WARN is shown but passes).
"""

from dataclasses import dataclass, field

from maxim_common.health import ERROR, Health, OK, STALE, WARN

LEVEL_NAMES = {OK: 'OK', WARN: 'WARN', ERROR: 'ERROR', STALE: 'STALE'}
MISSING = 'MISSING'

# The values worth a glance, per node; the rest stay in `ros2 topic echo /diagnostics`.
KEY_VALUES = {
    'camera': ('fps', 'dropped_frames', 'frames'),
    'sim_head': ('fps', 'frames'),
    'attention': ('fps', 'frames_received', 'frames_skipped', 'percepts'),
    'head_controller': ('driver', 'mode', 'commands_sent'),
    'memory': ('episodes_stored', 'journaled', 'lost'),
    'llm': ('state', 'model', 'queue_depth'),
    'fear': ('mode', 'reviews', 'blocked'),
    'agent': ('mode', 'sandbox_available', 'llm', 'energy_remaining'),
    'recorder': ('messages_written', 'live_view'),
    'console': ('lines',),
}


def console_health(lines: int) -> Health:
    """The console prints what it receives; it has nothing that can fail but the terminal."""
    return Health(OK, f'{lines} lines shown', {'lines': str(lines)})


def split_name(status_name: str) -> tuple[str, str]:
    """'<node>: <component>' -> (node, component); a name without ': ' is all node."""
    node, sep, component = status_name.partition(': ')
    return node.strip(), component.strip() if sep else ''


@dataclass
class NodeReport:
    """One node's line in the check."""

    node: str
    level: str                   # OK, WARN, ERROR, STALE or MISSING
    message: str
    values: dict = field(default_factory=dict)

    @property
    def failed(self) -> bool:
        return self.level in (ERROR_NAME, MISSING)

    def line(self, width: int = 16) -> str:
        shown = ' '.join(f'{k}={v}' for k, v in self.values.items())
        return f'{self.level:<7} {self.node:<{width}} {self.message}' + (
            f'  [{shown}]' if shown else '')


ERROR_NAME = LEVEL_NAMES[ERROR]


def infer_graph(nodes_seen, graphs: dict) -> str:
    """The graph a set of reporting nodes belongs to: robot when a camera reports, sim with
    a simulated head, else headless."""
    seen = set(nodes_seen)
    for name, marker in (('robot', 'camera'), ('sim', 'sim_head')):
        if name in graphs and marker in seen:
            return name
    return 'headless'


def summarize(statuses: list[dict], expected: list[str], timeout_s: float
              ) -> list[NodeReport]:
    """One report per expected node (then per other node that reported), worst component
    first. `statuses` are the latest status of each component: dicts with name, level (int),
    message and values ({key: value})."""
    by_node: dict[str, list[dict]] = {}
    for st in statuses:
        node, _ = split_name(st['name'])
        by_node.setdefault(node, []).append(st)
    reports = []
    for node in list(expected) + sorted(set(by_node) - set(expected)):
        got = by_node.get(node)
        if not got:
            reports.append(NodeReport(node, MISSING, f'no status on diagnostics within '
                                      f'{timeout_s:g} s'))
            continue
        worst = max(got, key=lambda s: s['level'])
        level = LEVEL_NAMES.get(worst['level'], f'LEVEL{worst["level"]}')
        merged = {}
        for st in got:
            merged.update(st['values'])
        keys = KEY_VALUES.get(node, ())
        shown = {k: merged[k] for k in keys if k in merged}
        if len(got) == 1:
            message = got[0]['message']
        else:      # several components: each named, the worst first
            message = '; '.join(f'{split_name(s["name"])[1] or node}: {s["message"]}'
                                for s in sorted(got, key=lambda s: -s['level']))
        reports.append(NodeReport(node, level, message, shown))
    return reports
