"""`./maxim sim --panel`: the graph in the background, the thinking panel in front."""

import threading

from rich.console import Console

from maxim_bringup.panel.app import ThinkingPanelApp
from maxim_bringup.runner import Runner, RunConfig, StartupError


def run_with_panel(config: RunConfig, console: Console | None = None) -> int:
    """Start the graph (progress shown on the terminal), then hand the terminal to the panel.

    Leaving the panel (Ctrl-C) stops the graph; the exit code is 0.
    """
    from maxim_bringup.nodes.panel_node import PanelNode

    config.console = False
    out = console or Console(highlight=False)
    runner = Runner(config, out)
    try:
        runner.start()
        app = ThinkingPanelApp(title=f'Maxim · {config.graph}')
        node = PanelNode(app, context=runner.context)
        app.say, app.answer = node.say, node.answer
        runner.add_node(node)
        spinner = threading.Thread(target=runner.spin, name='graph', daemon=True)
        spinner.start()
        app.run()
        runner.request_stop()
        spinner.join(timeout=10.0)
        return 0
    except StartupError as exc:
        out.print(f'[bold red]maxim:[/] {exc}')
        return 1
    finally:
        runner.stop()
