"""Every test run keeps DDS on this machine and away from other test runs, and starts
without the shared-memory files of Fast DDS processes that were killed before it (tests
kill processes on purpose; see clean_stale_shm in maxim_bringup/dds.py).

This file sits at the repository root so it applies to the tests of every package and to the
cross-package tests in test/ alike.
"""

import os
import sys

import pytest

# The helpers of test/helpers (`from helpers.runner_probe import ...`) for every package's
# tests, not only the cross-package ones.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'test'))

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(1 + os.getpid() % 200))
os.environ.setdefault('MUJOCO_GL', 'egl')


def pytest_sessionstart(session):
    from maxim_bringup.dds import clean_stale_shm
    clean_stale_shm()


# A graph test whose DDS discovery did not complete within its bound runs once more, from
# scratch (new participants, discovery afresh). On a loaded 2-core machine a service or an
# action server in a new participant was now and then not matched in 30-60 s, or a `ros2`
# command's request never answered, in a different graph test each time; the same test then
# passes. Only these failures are run again, once, and pytest's summary lists every rerun
# ("RERUN"); a wrong answer, a missing message or any other failure fails at once.
DISCOVERY_TIMEOUTS = (
    r'GraphError: timed out after \d+ s waiting for',     # maxim_eval.soak.graph
    r'TimeoutExpired: Command \[.ros2.',                  # a ros2 command with no answer
    r'no server matched in',                              # test/helpers/runner_probe.py
)


def pytest_collection_modifyitems(config, items):
    if not config.pluginmanager.hasplugin('rerunfailures'):
        return
    for item in items:
        if item.get_closest_marker('ros') and not item.get_closest_marker('flaky'):
            item.add_marker(pytest.mark.flaky(reruns=1, only_rerun=list(DISCOVERY_TIMEOUTS)))
