"""Cross-package tests: keep DDS on this machine and away from other test runs."""

import os
import sys

os.environ.setdefault('ROS_AUTOMATIC_DISCOVERY_RANGE', 'LOCALHOST')
os.environ.setdefault('ROS_DOMAIN_ID', str(1 + os.getpid() % 200))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
