"""The launch files give every process they start Maxim's Fast DDS profile (unless the user
chose one), or one warning where /dev/shm is too small. Runs where the ROS 2 launch system
imports."""

import importlib.util
import os
import sys

import pytest

PKG = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _common():
    spec = importlib.util.spec_from_file_location('maxim_launch_common',
                                                  os.path.join(PKG, 'launch', 'common.py'))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _launch(actions, out) -> str:
    """Run `actions` then a process that writes the profile variable it sees to `out`."""
    from launch import LaunchDescription, LaunchService
    from launch.actions import ExecuteProcess
    code = ('import os, sys; open(sys.argv[1], "w").write('
            'os.environ.get("FASTRTPS_DEFAULT_PROFILES_FILE", "<unset>"))')
    ls = LaunchService(argv=[])
    ls.include_launch_description(LaunchDescription(
        actions + [ExecuteProcess(cmd=[sys.executable, '-c', code, str(out)])]))
    assert ls.run() == 0
    return out.read_text()


def test_launched_processes_get_the_project_profile_or_keep_the_users(tmp_path, monkeypatch):
    pytest.importorskip('launch_ros', reason='the ROS 2 launch system is not installed')
    from launch.actions import LogInfo, SetEnvironmentVariable

    from maxim_bringup import dds
    common = _common()
    # (what another process on this machine left in /dev/shm must not change the actions)
    monkeypatch.setattr(dds, 'clean_stale_shm', lambda path='/dev/shm': [])
    monkeypatch.setenv('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    monkeypatch.delenv('MAXIM_DDS_PROFILE', raising=False)
    for name in dds.PROFILE_VARS:
        monkeypatch.delenv(name, raising=False)
    actions = common.dds_profile_actions()
    assert all(isinstance(a, SetEnvironmentVariable) for a in actions) and len(actions) == 2
    assert _launch(actions, tmp_path / 'a.txt') == dds.profile_path()

    for name in dds.PROFILE_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv('FASTRTPS_DEFAULT_PROFILES_FILE', str(tmp_path / 'mine.xml'))
    assert common.dds_profile_actions() == []
    assert _launch([], tmp_path / 'b.txt') == str(tmp_path / 'mine.xml')

    for name in dds.PROFILE_VARS:     # (launch's SetEnvironmentVariable sets os.environ)
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(dds, 'shm_free_bytes', lambda path='/dev/shm': 8 * 2**20)
    actions = common.dds_profile_actions()
    assert len(actions) == 1 and isinstance(actions[0], LogInfo)
    assert _launch(actions, tmp_path / 'c.txt') == '<unset>'

    # Stale shared-memory files are removed before the launch's processes start, and said.
    monkeypatch.setattr(dds, 'clean_stale_shm',
                        lambda path='/dev/shm': ['/dev/shm/fastrtps_port7411', 'x_el'])
    actions = common.dds_profile_actions()
    said = [a for a in actions if isinstance(a, LogInfo)]
    assert len(said) == 2
    assert 'removed 2 shared-memory files' in ''.join(part.text for part in said[0].msg)
