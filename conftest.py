"""Every test run keeps DDS on this machine and away from other test runs, and starts
without the shared-memory files of Fast DDS processes that were killed before it (tests
kill processes on purpose; see clean_stale_shm in maxim_bringup/dds.py).

This file sits at the repository root so it applies to the tests of every package and to the
cross-package tests in test/ alike.
"""

import os
import sys

# The helpers of test/helpers (`from helpers.runner_probe import ...`) for every package's
# tests, not only the cross-package ones.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'test'))

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(1 + os.getpid() % 200))
os.environ.setdefault('MUJOCO_GL', 'egl')


def pytest_sessionstart(session):
    from maxim_bringup.dds import clean_stale_shm
    clean_stale_shm()
