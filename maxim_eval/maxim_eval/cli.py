"""`maxim scenario run|suite|list|agent|generate ...`: the simulation scenarios (text and robot).

The `maxim` command (maxim_bringup.cli) runs `python -m maxim_eval.cli <arguments after
scenario>` as a child process, since no product package imports maxim_eval. This module
composes what the scenario runner's own command line (maxim_eval.scenario.cli) leaves out: the
agents under test think with the robot's memory system (a memory node each), and robot-world
scenarios run on the robot's perception parts (maxim_eval.robot_world). `list` and
`generate` need neither.
"""

import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(argv if argv is not None else sys.argv[1:])
    from maxim_eval.scenario.cli import main as scenario_main
    if argv[:1] in (['list'], ['generate']):
        return scenario_main(argv)
    from maxim_eval.robot_world import WORLDS
    from maxim_eval.scenario_memory import GraphMemory
    with GraphMemory() as memory:
        code = scenario_main(argv, memory=memory.port, worlds=WORLDS)
    return code


if __name__ == '__main__':
    sys.exit(main())
