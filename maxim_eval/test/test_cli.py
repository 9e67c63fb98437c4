"""`maxim scenario ...` through the `maxim` command (maxim_bringup.cli), which runs
maxim_eval.cli in a child process: the same lines and exit statuses as the runner's own."""

import subprocess
import sys

import pytest

from maxim_eval import cli
from maxim_eval.scenario.scenario import all_scenarios


def maxim(*args, timeout=300):
    return subprocess.run([sys.executable, '-P', '-m', 'maxim_bringup.cli', *args],
                          capture_output=True, text=True, timeout=timeout)


def test_list_needs_neither_the_memory_graph_nor_the_robot_world(capsys):
    assert cli.main(['list']) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == list(all_scenarios())
    check = ('import sys\n'
             'from maxim_eval import cli\n'
             'assert cli.main(["list"]) == 0\n'
             'print(sorted(m for m in sys.modules if m in ("maxim_eval.robot_world", '
             '"maxim_eval.scenario_memory", "rclpy")))')
    done = subprocess.run([sys.executable, '-P', '-c', check], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == '[]'


def test_maxim_scenario_list_and_usage_errors():
    done = maxim('scenario', 'list')
    assert done.returncode == 0, done.stderr
    assert [line.split()[0] for line in done.stdout.splitlines()] == list(all_scenarios())
    done = maxim('scenario', 'run', 'no_such_scenario')
    assert done.returncode == 2 and 'no_such_scenario' in done.stderr


@pytest.mark.ros
def test_maxim_scenario_runs_a_shipped_scenario_on_its_script():
    done = maxim('scenario', 'run', 'locked_door')
    assert done.returncode == 0, done.stdout + done.stderr
    assert 'Scenario locked_door (scripted): PASS' in done.stdout
