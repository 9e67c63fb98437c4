"""The Fast DDS profile every way of running Maxim applies by default (config/fastdds.xml).

Camera frames are 0.9 MB; Fast DDS's built-in shared-memory segment (0.5 MB) cannot hold one,
so between two processes they went over UDP in fragments and about half were lost at 30 fps.
The project's profile gives shared memory a 16 MB segment. Fast DDS reads it from
FASTRTPS_DEFAULT_PROFILES_FILE / FASTDDS_DEFAULT_PROFILES_FILE when a process creates its
first participant, so the `maxim` command sets them before rclpy starts, the launch files set
them for the processes they start, and .maxim/env.sh for a shell (`ros2 run`).

With discovery kept on this machine (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST) the profile is
config/fastdds_localhost.xml, the same segment without a UDP transport: rmw_fastrtps appends
UDP (and shared memory) of its own then, and two UDP transports in every participant lost
service replies under load (see `profile_name`).

A profile the user already chose is kept. Where /dev/shm has too little room for the segments
(a container's default 64 MB), the profile is left out and one warning says what that costs
and how to fix it. `MAXIM_DDS_PROFILE=off` leaves Fast DDS's defaults.

`clean_stale_shm` removes the shared-memory files of Fast DDS processes that ended without
closing them (killed, crashed), by the rule of Fast DDS's own `fastdds shm clean`.
"""

import fcntl
import os
import re
import shutil

PROFILE_VARS = ('FASTRTPS_DEFAULT_PROFILES_FILE', 'FASTDDS_DEFAULT_PROFILES_FILE')
SEGMENT_BYTES = 16 * 1024 * 1024      # config/fastdds.xml's segment_size
# Room for the segments that carry frames (camera, attention's debug image, a viewer) and
# the small ones of the other processes; tmpfs pages are only used once written.
SHM_NEEDED_BYTES = 3 * SEGMENT_BYTES
_warned = False


def profile_name(environ) -> str:
    """The profile for this environment: with discovery kept on this machine
    (ROS_AUTOMATIC_DISCOVERY_RANGE=LOCALHOST, or the older ROS_LOCALHOST_ONLY=1) rmw_fastrtps
    adds a shared-memory and a UDP transport of its own to a profile's, so the profile for
    that case declares only the shared-memory segment (config/fastdds_localhost.xml: two UDP
    transports in one participant lost service replies under load); otherwise
    config/fastdds.xml (shared memory and UDP)."""
    localhost = (environ.get('ROS_AUTOMATIC_DISCOVERY_RANGE', '') == 'LOCALHOST'
                 or environ.get('ROS_LOCALHOST_ONLY', '') == '1')
    return 'fastdds_localhost.xml' if localhost else 'fastdds.xml'


def profile_path(environ=None) -> str:
    """The profile for `environ` (default: this process's) in the installed package (or the
    source tree)."""
    name = profile_name(os.environ if environ is None else environ)
    try:
        from ament_index_python.packages import (get_package_share_directory,
                                                 PackageNotFoundError)
        try:
            path = os.path.join(get_package_share_directory('maxim_bringup'), 'config', name)
            if os.path.isfile(path):
                return path
        except PackageNotFoundError:
            pass
    except ImportError:
        pass
    return os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                        'config', name)


def shm_free_bytes(path: str = '/dev/shm') -> int | None:
    """Free bytes of the shared-memory file system (None when there is none)."""
    try:
        return shutil.disk_usage(path).free
    except OSError:
        return None


def choose(environ, shm_free: int | None, profile: str) -> tuple[dict, str]:
    """The variables to set and a warning ('' when none), from the environment as it is.

    Pure: no file system access but what the caller measured.
    """
    if any(environ.get(v) for v in PROFILE_VARS):
        return {}, ''          # the user's own profile
    rmw = environ.get('RMW_IMPLEMENTATION', 'rmw_fastrtps_cpp')
    if not rmw.startswith('rmw_fastrtps'):
        return {}, ''          # another DDS: not ours to tune
    if environ.get('MAXIM_DDS_PROFILE', '') == 'off':
        return {}, ''
    if shm_free is None or shm_free < SHM_NEEDED_BYTES:
        room = 'no /dev/shm' if shm_free is None else \
            f'/dev/shm has {shm_free / 2**20:.0f} MB free'
        return {}, (f'{room}, the frame transport needs {SHM_NEEDED_BYTES / 2**20:.0f} MB: '
                    "using Fast DDS's defaults, so 640x480 frames between processes may be "
                    'lost. Give /dev/shm more room (docker run --shm-size=256m) or set '
                    'FASTRTPS_DEFAULT_PROFILES_FILE to a profile of your own.')
    return {v: profile for v in PROFILE_VARS}, ''


def apply(environ=None, warn=None) -> dict:
    """Set the profile in `environ` (default os.environ) unless already chosen; returns what
    it set. The warning is given once per process, through `warn` (default: stderr)."""
    global _warned
    environ = os.environ if environ is None else environ
    updates, warning = choose(environ, shm_free_bytes(), profile_path(environ))
    environ.update(updates)
    if warning and not _warned:
        _warned = True
        if warn is None:
            import sys
            print(f'maxim: {warning}', file=sys.stderr, flush=True)
        else:
            warn(warning)
    return updates


# Fast DDS 2.x (Jazzy) names its files fastrtps_*, Fast DDS 3 fastdds_*.
_SEGMENT_LOCK = re.compile(r'^(fastrtps|fastdds)_[0-9a-f]{16}_(el|sl)$')
_PORT_LOCK = re.compile(r'^(fastrtps|fastdds)_port\d{1,5}_(el|sl)$')


def clean_stale_shm(path: str = '/dev/shm') -> list[str]:
    """Remove the Fast DDS shared-memory files whose owner is gone; returns the paths removed.

    The rule is that of `fastdds shm clean` (Fast DDS's RobustExclusiveLock and
    RobustSharedLock): every segment (`fastrtps_<16 hex>`) and every port a participant
    listens on (`fastrtps_port<N>`) has a lock file beside it (`_el`, or `_sl` for a port
    shared by several listeners) that its owner holds with flock() for as long as it lives.
    The kernel drops a flock when the process dies, however it dies. So a lock file that can
    be locked exclusively belongs to nobody: it goes with its segment, or with its port and
    the port's mutex (`sem.fastrtps_port<N>_mutex`). A lock held by anyone, shared or
    exclusive, keeps everything of it. The probe never creates a lock file (Fast DDS's own
    probe does), only checks that the file it locked is still the one at that name, and
    removes the files while holding the lock: a participant opening that very port in those
    microseconds fails to lock it and, for its own unicast port, takes the next one, as when
    a live process holds it (`fastdds shm clean` has the same window).

    Files without a lock file beside them are kept: a port segment whose listener closed
    cleanly stays while a writer still has it open, and nothing tells a live writer from a
    dead one there; such a port is healthy, Fast DDS reuses it as it is.

    Why it matters: a process killed with SIGKILL (a test that checks what happens when a
    launch dies, a crash, `kill -9`) leaves its segments (16 MB each with the project's
    profile) and its ports behind. A port left by a listener killed while waiting fails
    Fast DDS's health check; every process that then writes to that port number waits the
    check's timeout before replacing it, and discovery on a crowded /dev/shm slowed until
    services were not found within half a minute. Hence the `maxim` command and the launch
    files clean before their first participant, and the test session before its first test.
    Live processes of any user and domain keep their files, so it may run while other ROS
    processes run (a file of another user cannot be removed anyway: /dev/shm is sticky).
    """
    try:
        names = os.listdir(path)
    except OSError:
        return []
    removed = []
    for name in sorted(names):
        port = _PORT_LOCK.match(name)
        if not port and not _SEGMENT_LOCK.match(name):
            continue
        lock = os.path.join(path, name)
        try:
            fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            continue            # gone meanwhile, or not ours to open
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue        # its owner lives (EWOULDBLOCK), or no telling: kept
            try:
                still = os.stat(lock, follow_symlinks=False)
            except FileNotFoundError:
                continue        # its owner closed it meanwhile
            mine = os.fstat(fd)
            if (still.st_dev, still.st_ino) != (mine.st_dev, mine.st_ino):
                continue        # a new owner made a new one at that name
            base = name[:-3]
            victims = [base] + ([f'sem.{base}_mutex'] if port else []) + [name]
            for victim in victims:
                try:
                    os.unlink(os.path.join(path, victim))
                except FileNotFoundError:
                    continue
                except PermissionError:
                    break       # another user's: leave the rest of it too
                removed.append(os.path.join(path, victim))
        finally:
            os.close(fd)
    return removed
