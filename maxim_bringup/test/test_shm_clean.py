"""clean_stale_shm (maxim_bringup/dds.py): the shared-memory files of Fast DDS processes that
ended without closing them go, those of live processes stay and keep working.

The first tests hold the lock files themselves (plain files in a temporary folder, no ROS);
the last ones run a real rclpy participant in a subprocess over the project's DDS set-up,
clean the real /dev/shm while it lives (it still talks afterwards), then SIGKILL it (its
files go).
"""

import fcntl
import os
import select
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from maxim_bringup import dds

SEG = 'fastrtps_0123456789abcdef'
PORT = 'fastrtps_port7411'


def touch(folder, *names):
    for name in names:
        (folder / name).write_bytes(b'')


def hold(path, how=fcntl.LOCK_EX) -> int:
    """A lock as a live owner holds it (flock on its own open file)."""
    fd = os.open(path, os.O_RDONLY)
    fcntl.flock(fd, how | fcntl.LOCK_NB)
    return fd


def test_files_whose_lock_nobody_holds_go_with_their_segment_or_port(tmp_path):
    touch(tmp_path, SEG, f'{SEG}_el', PORT, f'{PORT}_el', f'sem.{PORT}_mutex',
          'fastdds_port7413', 'fastdds_port7413_sl', 'sem.fastdds_port7413_mutex')
    removed = dds.clean_stale_shm(str(tmp_path))
    assert sorted(os.path.basename(p) for p in removed) == sorted(
        [SEG, f'{SEG}_el', PORT, f'{PORT}_el', f'sem.{PORT}_mutex', 'fastdds_port7413',
         'fastdds_port7413_sl', 'sem.fastdds_port7413_mutex'])
    assert os.listdir(tmp_path) == []


def test_a_held_lock_keeps_everything_of_it_exclusive_or_shared(tmp_path):
    touch(tmp_path, SEG, f'{SEG}_el', PORT, f'{PORT}_el', f'sem.{PORT}_mutex',
          'fastrtps_port7413', 'fastrtps_port7413_sl', 'sem.fastrtps_port7413_mutex')
    fds = [hold(tmp_path / f'{SEG}_el'), hold(tmp_path / f'{PORT}_el'),
           hold(tmp_path / 'fastrtps_port7413_sl', fcntl.LOCK_SH)]
    try:
        before = sorted(os.listdir(tmp_path))
        assert dds.clean_stale_shm(str(tmp_path)) == []
        assert sorted(os.listdir(tmp_path)) == before
    finally:
        for fd in fds:
            os.close(fd)
    assert len(dds.clean_stale_shm(str(tmp_path))) == 8     # released: now stale


def test_files_without_a_lock_and_other_files_stay(tmp_path):
    """A port segment without a lock file may still be open in a live writer; other files
    are not Fast DDS's."""
    keep = ['fastrtps_port59411', 'sem.fastrtps_port59411_mutex', 'fastrtps_fedcba9876543210',
            'other_el', 'fastrtps_xyz_el', 'lttng-ust-wait-6']
    touch(tmp_path, *keep)
    assert dds.clean_stale_shm(str(tmp_path)) == []
    assert sorted(os.listdir(tmp_path)) == sorted(keep)
    assert dds.clean_stale_shm(str(tmp_path / 'missing')) == []


def test_a_lock_released_by_a_killed_owner_makes_its_files_stale(tmp_path):
    touch(tmp_path, SEG, f'{SEG}_el')
    owner = subprocess.Popen(
        [sys.executable, '-c', textwrap.dedent(f'''
            import fcntl, os, sys, time
            fd = os.open({str(tmp_path / (SEG + '_el'))!r}, os.O_RDONLY)
            fcntl.flock(fd, fcntl.LOCK_EX)
            print('locked', flush=True)
            time.sleep(60)
            ''')], stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == 'locked'
        assert dds.clean_stale_shm(str(tmp_path)) == []
        owner.send_signal(signal.SIGKILL)
        owner.wait(timeout=10)
        assert len(dds.clean_stale_shm(str(tmp_path))) == 2
    finally:
        owner.kill()
        owner.wait(timeout=10)
        owner.stdout.close()


# A participant that answers: every String on shm_probe/in comes back on shm_probe/out.
ECHO = textwrap.dedent('''
    import rclpy
    from std_msgs.msg import String
    rclpy.init()
    node = rclpy.create_node('shm_owner')
    pub = node.create_publisher(String, 'shm_probe/out', 10)
    node.create_subscription(String, 'shm_probe/in',
                             lambda m: pub.publish(String(data='echo ' + m.data)), 10)
    print('ready', flush=True)
    rclpy.spin(node)
    ''')


def echo_env(domain_id: int) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in dds.PROFILE_VARS}
    env.update(ROS_DOMAIN_ID=str(domain_id), ROS_AUTOMATIC_DISCOVERY_RANGE='LOCALHOST')
    env.pop('MAXIM_DDS_PROFILE', None)
    env.update(dds.choose(env, dds.shm_free_bytes(), dds.profile_path(env))[0])
    return env


def start_echo(domain_id: int) -> subprocess.Popen:
    proc = subprocess.Popen([sys.executable, '-c', ECHO], env=echo_env(domain_id),
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    said = []
    while time.monotonic() < deadline:
        if not select.select([proc.stdout], [], [], deadline - time.monotonic())[0]:
            break
        line = proc.stdout.readline()
        if line.strip() == 'ready':
            return proc
        if not line:
            break
        said.append(line)
    proc.kill()
    proc.wait(timeout=10)
    proc.stdout.close()
    pytest.fail(f'the echo participant did not start: {"".join(said)}')


def shm_locks(pid: int) -> dict[str, tuple[int, int]]:
    """The Fast DDS lock files a process holds open in /dev/shm, with their inodes."""
    held = {}
    for fd in os.listdir(f'/proc/{pid}/fd'):
        try:
            target = os.readlink(f'/proc/{pid}/fd/{fd}')
        except OSError:
            continue
        name = os.path.basename(target)
        if target.startswith('/dev/shm/') and name.endswith(('_el', '_sl')):
            st = os.stat(target)
            held[target] = (st.st_dev, st.st_ino)
    return held


def talks(domain_id: int, timeout=60.0) -> bool:
    """A new participant in this process reaches the echo and hears its answer."""
    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from std_msgs.msg import String

    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=domain_id)
    node = rclpy.create_node('shm_probe', context=ctx)
    executor = SingleThreadedExecutor(context=ctx)
    executor.add_node(node)
    try:
        got = []
        node.create_subscription(String, 'shm_probe/out', got.append, 10)
        pub = node.create_publisher(String, 'shm_probe/in', 10)
        deadline = time.monotonic() + timeout
        next_send = 0.0
        while time.monotonic() < deadline and not got:
            if time.monotonic() >= next_send:
                pub.publish(String(data='ping'))
                next_send = time.monotonic() + 0.5
            executor.spin_once(timeout_sec=0.1)
        return any(m.data == 'echo ping' for m in got)
    finally:
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown(context=ctx)


def domain() -> int:
    return int(os.environ.get('ROS_DOMAIN_ID', '0'))      # this run's own (conftest.py)


@pytest.mark.ros
def test_a_live_participant_keeps_its_files_and_still_talks_after_a_clean():
    if not os.path.isdir('/dev/shm'):
        pytest.skip('no /dev/shm here')
    d = domain()
    echo = start_echo(d)
    try:
        locks = shm_locks(echo.pid)
        assert any('_port' not in path for path in locks), locks     # at least a segment
        files = set(locks) | {path[:-3] for path in locks}
        removed = set(dds.clean_stale_shm())
        assert not removed & files, removed & files
        assert all(os.path.exists(path) for path in files)
        assert talks(d), 'the live participant no longer answers after the clean'
        assert not set(dds.clean_stale_shm()) & files    # again, with two live participants
        assert echo.poll() is None
    finally:
        echo.kill()
        echo.wait(timeout=10)
        echo.stdout.close()


def inodes(paths) -> dict[str, tuple[int, int]]:
    found = {}
    for path in paths:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            continue
        found[path] = (st.st_dev, st.st_ino)
    return found


@pytest.mark.ros
def test_the_files_of_a_killed_participant_go():
    if not os.path.isdir('/dev/shm'):
        pytest.skip('no /dev/shm here')
    echo = start_echo(domain())
    try:
        locks = shm_locks(echo.pid)
        files = inodes(set(locks) | {path[:-3] for path in locks})
        assert locks and len(files) >= 2 * len([p for p in locks if '_port' not in p])
    finally:
        echo.send_signal(signal.SIGKILL)
        echo.wait(timeout=10)
        echo.stdout.close()
    # SIGKILL left the participant's own segments behind. Its port files are shared by
    # design: another Fast DDS process on the machine may take the port again in the
    # meantime (a CI run saw fastrtps_port39921 recreated), which the check below allows.
    own = {path: inode for path, inode in files.items() if '_port' not in path}
    assert own and inodes(own) == own
    removed = dds.clean_stale_shm()
    # Each is gone, or (a port number taken again meanwhile) a new live owner's own file.
    left = {path for path, inode in inodes(files).items() if files[path] == inode}
    assert not left, f'files of a dead participant stayed: {left}'
    assert set(removed) & set(files)
