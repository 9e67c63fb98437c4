"""The kernel sandbox: every tool that starts a process runs it inside bubblewrap.

A pattern layer (the fear gate) cannot see code built at run time, so what a command can reach
is bounded by the kernel instead, whatever the command says:

- the root file system is mounted read-only (``--ro-bind / /``); the workspace and the
  mode's extra write roots are the only writable binds;
- ``/tmp`` is private (a tmpfs that vanishes with the call), the home folders (``$HOME``,
  ``/root``, ``/home``), ``~/.maxim`` and the memory database are hidden under empty tmpfs or
  ``/dev/null``; the system secrets (``/etc/shadow``...) likewise, and every secret of the one
  list (`maxim_core.tools.secrets`: keys, ``.env``, cloud and registry credentials, browser
  profiles) found by name in the workspace, the bound roots and the real home;
- UNIX sockets: ``/run``, ``/var/run``, ``/var/tmp`` and ``/var/lock`` are empty tmpfs inside,
  and every socket file the host has bound (``/proc/net/unix``) that would still be visible is
  covered by ``/dev/null``: ``--unshare-net`` cuts abstract sockets, not socket files;
- the mind's own code, configuration and the gate's source are bound read-only again when they
  lie inside a writable bind (a tool cannot rewrite what judges it);
- no network (``--unshare-net``: only a private loopback) unless the caller allows it;
- its own PID, IPC and UTS namespaces, a new session (no terminal injection), a user namespace
  with every capability dropped and no nested user namespaces, and ``--die-with-parent``;
- resource limits: CPU seconds, address space, open files, file size (``RLIMIT_*``), and a
  process count: ``RLIMIT_NPROC`` for an ordinary user, a ``pids`` control group for root,
  whom the kernel exempts from RLIMIT_NPROC; and the memory of a session's calls by a
  ``memory`` control group when one can be created. bwrap is started with ``--info-fd`` and
  ``--block-fd``: it stops before the command, the limits are set on its child
  (``prlimit(2)``), then the command runs; no helper process is started for that. The
  cgroups are made once per sandbox (a session), not per call; with cgroup v1 a thread of
  this process that lives in them starts bwrap, so each call is born there (`_Spawner`),
  with v2 bwrap's child is moved into them while it waits;
- disk: the workspace (and every writable root) is an overlay on a tmpfs of
  ``Limits.disk_mb`` whose writes are merged back when the call ends
  (`maxim_core.tools.quota`, root only; otherwise bound directly, each file still bounded),
  and the private ``/tmp`` and home are tmpfs of ``Limits.tmp_mb``; the other hidden folders
  are empty, read-only tmpfs;
- files that code runs on its own (`maxim_core.tools.traps`: git hooks, conftest.py,
  sitecustomize.py, .pth, shell rc files, CI files) are bound read-only where they exist,
  and none a command writes is kept (left out of the merge, or moved aside after the call
  when there is no overlay); a git configuration is kept only inert;
- a wall-clock timeout that kills the whole process group; the PID namespace then takes every
  descendant with it;
- a scrubbed environment (``--clearenv``, then PATH, HOME, LANG, TMPDIR, and git's identity
  (Maxim) only).

`probe()` starts bwrap once for real with these flags and remembers what works. When bwrap is
missing or cannot start, `ProcessSandbox.run` refuses with one clear error (fail closed); a
sandbox built with ``fallback='python'`` runs the command without the kernel layer instead,
under the Python-only rules of `maxim_core.tools.filesystem.Sandbox`, and warns each time.

This module is pure (no rclpy) and is unit-tested against real hostile commands in
``test/test_tool_sandbox.py``.
"""

from dataclasses import dataclass, field
import itertools
import json
import logging
import os
from pathlib import Path
import queue
import resource
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from typing import Callable, Iterable, Mapping, Sequence
import weakref

from maxim_common.errors import ERROR_TIMEOUT, ERROR_UNAVAILABLE
from maxim_core.tools.base import bounded, Tool, ToolError, ToolOutcome
from maxim_core.tools import quota
from maxim_core.tools.secrets import (home_secrets, secret_reason, SYSTEM_SECRET_DIRS,
                                      SYSTEM_SECRET_FILES, TreeScan)
from maxim_core.tools.traps import (git_traps, hooks_paths, is_git_config, is_trap_entry,
                                    kernel_refusal)

log = logging.getLogger(__name__)

FALLBACKS = ('refuse', 'python')
BASE_PATH = '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'
# Files that hold system secrets: replaced by /dev/null inside (when they exist). The one list
# of secrets is `maxim_core.tools.secrets`; these are its system entries, spelled out.
SECRET_FILES = SYSTEM_SECRET_FILES
# Folders hidden under an empty tmpfs (when they exist): homes and mounted secrets.
SECRET_DIRS = ('/root', '/home') + SYSTEM_SECRET_DIRS
# Folders where services keep their UNIX sockets (docker, D-Bus, systemd, X, databases):
# hidden under an empty tmpfs, since --unshare-net does not cover a socket file.
SOCKET_DIRS = ('/run', '/var/run', '/var/tmp', '/var/lock')
# Every UNIX socket the host has bound (`/proc/net/unix`): one still visible inside (outside
# the folders above) is covered by /dev/null, so connect() finds no socket there.
_PROC_NET_UNIX = '/proc/net/unix'
_MAX_SOCKETS = 4096
_socket_table_warned: set = set()
# In the mind's own checkout, besides the maxim_* packages: what runs when it starts or tests.
_CHECKOUT_OWN = ('scripts', 'requirements', 'install', 'build', '.maxim', '.venv', '.ci',
                 'conftest.py', 'pytest.ini', 'colcon.meta', '.flake8')
_KILL_WAIT_S = 5.0          # after a kill: how long to wait for the pipes to close
_CGROUP_DRAIN_S = 2.0       # after a call: how long to wait for its cgroups to empty
_PROBE_TIMEOUT_S = 15.0
_IMPORT_SCAN_MAX = 2000     # entries of one import-path folder looked at for symlinks


class SandboxUnavailable(ToolError):
    """bwrap is missing or cannot start here: tools that start processes are refused."""

    def __init__(self, message: str):
        super().__init__(message, ERROR_UNAVAILABLE)


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed call (0 = no limit of that kind)."""

    cpu_s: int = 120                 # RLIMIT_CPU, per process
    address_space_mb: int = 4096     # RLIMIT_AS, per process
    processes: int = 256             # RLIMIT_NPROC inside, or the pids cgroup for root
    memory_mb: int = 4096            # the whole call, when a memory cgroup can be made
    file_size_mb: int = 256          # RLIMIT_FSIZE: the largest file a call can write
    open_files: int = 1024           # RLIMIT_NOFILE
    disk_mb: int = 1024              # what one call may write into the workspace (overlay)
    disk_files: int = 100_000        # files and folders one call may create there
    tmp_mb: int = 256                # the private /tmp, and the private home, each

    def __post_init__(self):
        for name in ('cpu_s', 'address_space_mb', 'processes', 'memory_mb', 'file_size_mb',
                     'open_files', 'disk_mb', 'disk_files', 'tmp_mb'):
            value = getattr(self, name)
            if not isinstance(value, int) or value < 0:
                raise ValueError(f'Limits.{name} must be an integer >= 0, got {value!r}')

    def prlimit_args(self) -> list[str]:
        """prlimit options for every limit except the process count."""
        out = ['--core=0']
        if self.cpu_s:
            out.append(f'--cpu={self.cpu_s}')
        if self.address_space_mb:
            out.append(f'--as={self.address_space_mb * 1024 * 1024}')
        if self.file_size_mb:
            out.append(f'--fsize={self.file_size_mb * 1024 * 1024}')
        if self.open_files:
            out.append(f'--nofile={self.open_files}')
        return out

    def rlimits(self, nproc: bool = False) -> list[tuple[int, int]]:
        """(RLIMIT_*, value) for prlimit(2) on the sandbox's first process: the same limits
        as `prlimit_args`, and the process count when `nproc`."""
        mb = 1024 * 1024
        out = [(resource.RLIMIT_CORE, 0)]
        for res, value in ((resource.RLIMIT_CPU, self.cpu_s),
                           (resource.RLIMIT_AS, self.address_space_mb * mb),
                           (resource.RLIMIT_FSIZE, self.file_size_mb * mb),
                           (resource.RLIMIT_NOFILE, self.open_files),
                           (resource.RLIMIT_NPROC, self.processes if nproc else 0)):
            if value:
                out.append((res, value))
        return out


@dataclass(frozen=True)
class Probe:
    """What a real start of bwrap found on this machine."""

    ok: bool
    reason: str
    bwrap: str | None = None
    prlimit: str | None = None
    flags: tuple = ()                # namespace flags that worked
    pids: str = 'none'               # how the process count is bounded: rlimit, cgroup, none
    cgroup_root: str | None = None   # the pids cgroup folder we may create children in
    memory_root: str | None = None   # the memory cgroup folder, when one is usable
    cgroup_v2: bool = False          # cgroup_root and memory_root are unified (v2) folders
    sized: bool = False              # bwrap takes --size and --perms for a tmpfs (>= 0.8)
    overlay: str | None = None       # where quota overlays are mounted (None: no disk quota)


def _run_quiet(argv: list[str], timeout_s: float) -> tuple[int, str]:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout_s,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return -1, f'did not finish within {timeout_s} s'
    except OSError as exc:
        return -1, str(exc)
    return proc.returncode, (proc.stderr or proc.stdout).strip()[:300]


def _cgroup(controller: str, marker: str) -> tuple[str, bool] | None:
    """A cgroup folder of `controller` (v2 or v1) this process may create children in, and
    whether it is v2; None when there is none. `marker` is a file the child must have."""
    candidates = []
    unified = Path('/sys/fs/cgroup')
    try:
        own = Path('/proc/self/cgroup').read_text().splitlines()
    except OSError:
        own = []
    for line in own:
        parts = line.split(':', 2)
        if len(parts) != 3:
            continue
        if parts[0] == '0' and parts[1] == '':
            base = unified / parts[2].lstrip('/')
            try:
                controllers = (base / 'cgroup.controllers').read_text().split()
            except OSError:
                controllers = []
            if controller in controllers:
                candidates.append((base, True))
        elif controller in parts[1].split(','):
            candidates.append((unified / controller / parts[2].lstrip('/'), False))
    for base, v2 in candidates:
        test = base / f'maxim-probe-{os.getpid()}'
        try:
            test.mkdir()
        except OSError:
            continue
        try:
            ok = (test / marker).exists() and (test / 'cgroup.procs').exists()
        finally:
            try:
                test.rmdir()
            except OSError as exc:
                log.warning('could not remove the probe cgroup %s: %s', test, exc)
        if ok:
            return str(base), v2
    return None


def _clean_stale_cgroups(roots: Iterable[str | None]) -> None:
    """The cgroups of sandboxes whose process is gone (killed before its clean-up ran)."""
    for root in roots:
        if not root:
            continue
        try:
            names = os.listdir(root)
        except OSError:
            continue
        for name in names:
            parts = name.split('-')
            if len(parts) == 4 and name.startswith('maxim-sandbox-') and parts[2].isdigit() \
                    and not os.path.exists(f'/proc/{parts[2]}'):
                try:
                    os.rmdir(os.path.join(root, name))
                except OSError as exc:
                    log.debug('stale cgroup %s not removed: %s', name, exc)


_probe_lock = threading.Lock()
_probe_cache: dict[str, Probe] = {}


def probe(bwrap: str | None = None, refresh: bool = False) -> Probe:
    """Start bwrap once for real (cached per executable) and say what works."""
    exe = bwrap or shutil.which('bwrap')
    key = exe or ''
    with _probe_lock:
        if not refresh and key in _probe_cache:
            return _probe_cache[key]
        result = _probe(exe)
        _probe_cache[key] = result
    if not result.ok:
        log.warning('kernel sandbox unavailable: %s', result.reason)
    return result


def _probe(exe: str | None) -> Probe:
    if exe is None:
        return Probe(False, 'bwrap (bubblewrap) is not installed: install it with '
                     '"apt-get install bubblewrap" (scripts/bootstrap.sh does)')
    prlimit = shutil.which('prlimit')      # not needed any more: limits are set by prlimit(2)
    base = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc',
            '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
            '--die-with-parent', '--new-session', '--clearenv']
    sized_tmp = ['--perms', '1777', '--size', str(1 << 20), '--tmpfs', '/tmp']
    true = shutil.which('true') or '/bin/true'
    reasons = []
    for flags, sized in ((('--unshare-user', '--disable-userns', '--cap-drop', 'ALL'), True),
                         (('--unshare-user', '--disable-userns', '--cap-drop', 'ALL'), False),
                         (('--unshare-user', '--cap-drop', 'ALL'), True),
                         (('--unshare-user', '--cap-drop', 'ALL'), False)):
        tmp = sized_tmp if sized else ['--tmpfs', '/tmp']
        code, err = _run_quiet([exe, *flags, *base, *tmp, '--', true], _PROBE_TIMEOUT_S)
        if code == 0:
            break
        reasons.append(f'bwrap {" ".join(flags)}{" --size" if sized else ""}: exit {code}: '
                       f'{err}')
    else:
        return Probe(False, 'bwrap cannot start a sandbox here (' + '; '.join(reasons) + ')',
                     exe, prlimit)
    v2 = os.path.exists('/sys/fs/cgroup/cgroup.controllers')
    memory = _cgroup('memory', 'memory.max' if v2 else 'memory.limit_in_bytes')
    mem_root = memory[0] if memory else None
    pids_root = _cgroup('pids', 'pids.max') if os.geteuid() == 0 else None
    _clean_stale_cgroups([mem_root, pids_root[0] if pids_root else None])
    mem_note = (f'; memory of a session bounded by a memory cgroup under {mem_root}'
                if mem_root else '; no writable memory cgroup: memory bounded per process only')
    base_dir, overlay_note = quota.overlay_base()
    notes = mem_note + '; ' + overlay_note + ('' if sized else
                                              '; bwrap < 0.8: /tmp and the home are unsized')
    extra = {'sized': sized, 'overlay': str(base_dir) if base_dir else None}
    if os.geteuid() != 0:
        return Probe(True, 'bwrap works; processes bounded by RLIMIT_NPROC inside the '
                     'user namespace' + notes, exe, prlimit, flags, 'rlimit', None,
                     mem_root, bool(memory and memory[1]), **extra)
    pids = pids_root
    if pids is not None and (memory is None or memory[1] == pids[1]):
        return Probe(True, f'bwrap works; processes bounded by a pids cgroup under {pids[0]}'
                     + notes, exe, prlimit, flags, 'cgroup', pids[0], mem_root, pids[1],
                     **extra)
    return Probe(True, 'bwrap works, but running as root without a writable pids cgroup: the '
                 'process count is bounded only by the wall-clock timeout (the kernel does not '
                 'apply RLIMIT_NPROC to root)' + notes, exe, prlimit, flags, 'none', None,
                 mem_root, bool(memory and memory[1]), **extra)


@dataclass
class RunResult:
    """What one sandboxed call produced."""

    exit_code: int
    stdout: str
    stderr: str
    timed_out: bool = False
    sandboxed: bool = True
    stdout_dropped: int = 0          # bytes read past the capture bound and discarded
    stderr_dropped: int = 0
    warning: str = ''
    seconds: float = 0.0
    not_kept: list = field(default_factory=list)   # what was written but not kept, and why


class _Sink:
    """The first `limit` bytes of a pipe, and how many more were read and dropped."""

    def __init__(self, limit: int):
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    def add(self, chunk: bytes) -> None:
        room = self.limit - len(self.kept)
        if room > 0:
            self.kept += chunk[:room]
        self.dropped += max(0, len(chunk) - max(room, 0))

    def text(self) -> str:
        return self.kept.decode('utf-8', errors='replace')


def _collect(proc: subprocess.Popen, deadline: float, max_bytes: int, stdin: bytes | None,
             child_fd: int | None = None) -> tuple[_Sink, _Sink, bool]:
    """Read stdout and stderr (bounded in memory), feed stdin, and wait for `proc`, in one
    poll loop in this thread (no helper threads: starting one costs a scheduling round on a
    busy machine); at `deadline` the process group is killed. (stdout, stderr, timed out)."""
    out, err = _Sink(max_bytes), _Sink(max_bytes // 4)
    sinks = {proc.stdout.fileno(): out, proc.stderr.fileno(): err}
    poller = select.poll()
    for fd in sinks:
        poller.register(fd, select.POLLIN)
    pending = memoryview(stdin) if stdin is not None else None
    in_fd = proc.stdin.fileno() if proc.stdin is not None else None
    if in_fd is not None:
        os.set_blocking(in_fd, False)
        poller.register(in_fd, select.POLLOUT)
    pfd = _pidfd(proc.pid)
    if pfd is not None:
        poller.register(pfd, select.POLLIN)
    timed_out, exited = False, False
    stop = deadline
    try:
        while sinks or not exited:
            remaining = stop - time.monotonic()
            if remaining <= 0:
                if timed_out or exited:
                    break                   # killed (or ended) and the pipes stay open
                timed_out = True
                _kill(proc, child_fd)
                stop = time.monotonic() + _KILL_WAIT_S
                continue
            if pfd is None and not exited and proc.poll() is not None:
                exited = True
            events = poller.poll(min(remaining, 0.05 if pfd is None else remaining) * 1000)
            for fd, ev in events:
                if fd == pfd:
                    poller.unregister(pfd)
                    os.close(pfd)
                    pfd = None
                    proc.wait()
                    exited = True
                    stop = min(stop, time.monotonic() + _KILL_WAIT_S)
                elif fd == in_fd:
                    try:
                        n = os.write(in_fd, pending[:65536]) if pending else 0
                        pending = pending[n:] if pending else None
                    except OSError as exc:          # the command closed its stdin
                        log.debug('stdin closed early: %s', exc)
                        pending = None
                    if not pending:
                        poller.unregister(in_fd)
                        proc.stdin.close()
                        in_fd = None
                elif fd in sinks:
                    chunk = os.read(fd, 65536) if ev & (select.POLLIN | select.POLLHUP) else b''
                    if chunk:
                        sinks[fd].add(chunk)
                    else:
                        poller.unregister(fd)
                        del sinks[fd]
            if exited and pfd is None and proc.returncode is None:
                proc.wait()
    finally:
        if pfd is not None:
            os.close(pfd)
        if in_fd is not None:
            try:
                proc.stdin.close()
            except OSError as exc:
                log.debug('stdin: %s', exc)
        for stream in (proc.stdout, proc.stderr):
            stream.close()
    if proc.returncode is None:
        try:
            proc.wait(timeout=_KILL_WAIT_S)
        except subprocess.TimeoutExpired:
            log.error('process group %d survived SIGKILL for %.0f s', proc.pid, _KILL_WAIT_S)
    return out, err, timed_out


def _real(path: str | os.PathLike) -> Path:
    return Path(os.path.expanduser(str(path))).resolve()


def _inside(path: Path, root: Path) -> bool:
    p, r = str(path), str(root)
    return p == r or p.startswith(r if r.endswith('/') else r + '/')


def own_paths() -> list[Path]:
    """The mind's own code, configuration and the gate's source (never writable by tools).

    The installed maxim_core package, the source it was installed from (a symlink install
    points there), the Python environment running it (a planted .pth or sitecustomize.py there
    would run inside the mind at its next start), and, when that source sits in a checkout, its
    sibling maxim_* packages (their code and their config/), the launcher, the scripts, the
    colcon build and install trees and the test configuration.
    """
    here = Path(__file__).parent.parent            # the maxim_core package folder
    paths = {here.absolute(), here.resolve()}
    gate = (Path(__file__).parent.parent / 'fear' / 'patterns.py').resolve()
    src_pkg = gate.parent.parent                    # .../maxim_core/maxim_core
    paths.add(src_pkg)
    checkout = src_pkg.parent.parent
    prefix = Path(sys.prefix).resolve()
    if len(prefix.parts) > 2:          # a venv or a dedicated install, not / or /usr
        paths.add(prefix)
    if (checkout / 'maxim_core' / 'package.xml').exists() or \
            (checkout / 'maxim').exists() and (checkout / 'maxim_core').is_dir():
        for child in checkout.iterdir():
            if child.name.startswith('maxim') or child.name in _CHECKOUT_OWN:
                paths.add(child.resolve())
    return sorted(paths)


def default_hidden() -> list[Path]:
    """~/.maxim (memory database, learned weights, recordings, task store)."""
    return [_real('~/.maxim')]


def unix_sockets(table: str = _PROC_NET_UNIX, limit: int = _MAX_SOCKETS) -> list[Path]:
    """The paths of the UNIX sockets bound on this host (abstract ones have no path: the
    private network namespace already cuts them)."""
    try:
        with open(table, encoding='utf-8', errors='replace') as f:
            lines = f.read(4 << 20).splitlines()[1:]
    except OSError as exc:
        if table not in _socket_table_warned:
            _socket_table_warned.add(table)
            log.warning('cannot list the UNIX sockets (%s): only the socket folders are '
                        'hidden', exc)
        return []
    out = []
    for line in lines:
        fields = line.split(None, 7)
        if len(fields) == 8 and fields[7].startswith('/'):
            out.append(Path(fields[7]))
            if len(out) >= limit:
                log.warning('more than %d UNIX sockets: the rest are left to the socket '
                            'folders', limit)
                break
    return list(dict.fromkeys(out))


_counter = itertools.count()
_MOVED_ASIDE = '.maxim-refused'
_HIDDEN_TMPFS = str(64 * 1024)        # the size of an empty, read-only tmpfs that hides


class _Request:
    """One process to start on the spawner thread."""

    def __init__(self, kwargs: dict):
        self.kwargs = kwargs
        self.result = None
        self.abandoned = False
        self.lock = threading.Lock()
        self.done = threading.Event()


class _Spawner:
    """A thread of this process that lives in a session's cgroups and starts its processes.

    With cgroup v1 a thread can belong to other cgroups than the rest of its process, and a
    process is born in the cgroups of the thread that forks it: so no call pays for moving
    its process between cgroups (the kernel then waits for an RCU grace period, 2-10 ms on a
    busy machine). The mind's own memory stays charged to its own cgroup (v1 charges a
    process's memory to its main thread's); the thread counts as one task of the pids
    cgroup. cgroup v2 has no such threads for the memory controller: there each call's
    first process is moved instead (`ProcessSandbox._confine`).
    """

    def __init__(self, cgroups: Sequence[Path]):
        self.cgroups = list(cgroups)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._ready = threading.Event()
        self.error: OSError | None = None
        self.thread = threading.Thread(target=self._run, name='maxim-sandbox-spawner',
                                       daemon=True)
        self.thread.start()
        if not self._ready.wait(_PROBE_TIMEOUT_S) or self.error is not None:
            raise OSError(f'the sandbox spawner could not join its cgroups: {self.error}')

    def _run(self) -> None:
        try:
            for c in self.cgroups:
                with open(c / 'tasks', 'w', encoding='ascii') as f:
                    f.write(str(threading.get_native_id()))
        except OSError as exc:
            self.error = exc
            self._ready.set()
            return
        self._ready.set()
        while True:
            request = self._queue.get()
            if request is None:
                return
            try:
                result = subprocess.Popen(**request.kwargs)
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                result = exc
            with request.lock:
                request.result = result
                abandoned = request.abandoned
                request.done.set()
            if abandoned and isinstance(result, subprocess.Popen):
                _kill(result, None)                  # the caller gave up waiting for it
                result.wait()

    def popen(self, **kwargs) -> subprocess.Popen:
        request = _Request(kwargs)
        self._queue.put(request)
        request.done.wait(_PROBE_TIMEOUT_S)
        with request.lock:
            if request.result is None:
                request.abandoned = True
                raise OSError('the sandbox spawner did not start the process in time')
        if isinstance(request.result, Exception):
            raise request.result
        return request.result

    def alive(self) -> bool:
        return self.thread.is_alive()

    def stop(self) -> None:
        self._queue.put(None)
        self.thread.join(_KILL_WAIT_S)


def _end_session(spawner: '_Spawner | None', paths: list) -> None:
    if spawner is not None:
        spawner.stop()
    for path in paths:
        ProcessSandbox._remove_cgroup(path)


@dataclass
class ProcessSandbox:
    """Runs argv inside bubblewrap with the workspace as the only writable place.

    workspace       the writable folder (bound read-write at the same path).
    write_roots     more writable folders (bound read-write).
    read_roots      folders bound read-only (visible even if they lie under a hidden folder).
    hidden          more paths hidden (folders under an empty tmpfs, files under /dev/null).
    protected       paths bound read-only again inside writable binds (default `own_paths()`).
    home            the home folder to hide; HOME inside is this (empty, private) path.
    network         False: a private network namespace (loopback only, nothing outside).
    fallback        'refuse' (fail closed) or 'python' (run unsandboxed, warn every time).
    read_only       True: the workspace and the write roots are bound read-only too (passive).
    overlay         False: bind the writable folders directly even where a quota overlay
                    could be mounted (no disk quota; new traps are moved aside after a call).

    One sandbox is one session: its cgroups are made at its first call and kept for the next
    ones (`close()` removes them; so does the garbage collector, and the interpreter's exit).
    """

    workspace: str | os.PathLike
    write_roots: Sequence[str | os.PathLike] = ()
    read_roots: Sequence[str | os.PathLike] = ()
    hidden: Sequence[str | os.PathLike] = ()
    protected: Sequence[str | os.PathLike] | None = None
    home: str | os.PathLike | None = None
    network: bool = False
    limits: Limits = field(default_factory=Limits)
    fallback: str = 'refuse'
    bwrap: str | None = None
    env: Mapping[str, str] | None = None
    read_only: bool = False
    overlay: bool = True

    def __post_init__(self):
        if self.fallback not in FALLBACKS:
            raise ValueError(f'fallback must be one of {FALLBACKS}, got {self.fallback!r}')
        self.workspace = _real(self.workspace)
        if not self.workspace.is_dir():
            raise ValueError(f'sandbox workspace {self.workspace} is not a folder')
        if self.workspace == Path('/'):
            raise ValueError('the sandbox workspace cannot be /')
        self.write_roots = [_real(p) for p in self.write_roots]
        self.read_roots = [_real(p) for p in self.read_roots]
        self.home = _real(self.home if self.home is not None else Path.home())
        for secret in [self.home] + [Path(d) for d in SECRET_DIRS]:
            if _inside(secret, self.workspace):
                raise ValueError(f'the sandbox workspace {self.workspace} holds {secret}, '
                                 'which is never visible to tools: choose a folder inside it')
        hidden = [_real(p) for p in self.hidden] + default_hidden()
        # A SQLite database lives in several files: its journal and WAL are hidden with it.
        self.hidden = hidden + [p.with_name(p.name + suffix) for p in hidden
                                for suffix in ('-wal', '-shm', '-journal') if p.is_file()]
        for h in self.hidden:
            if _inside(self.workspace, h):
                raise ValueError(f'the sandbox workspace {self.workspace} lies in {h}, which '
                                 'is hidden from tools')
        self.protected = [_real(p) for p in (own_paths() if self.protected is None
                                             else self.protected)]
        self._scan_warned = False
        self._lock = threading.Lock()
        self._merge_lock = threading.Lock()
        self._scan = TreeScan(extra=is_trap_entry)
        self._cache: dict = {}
        self._cgroups: list[Path] = []
        self._spawner: _Spawner | None = None
        self._finalizer = None
        self._hide_dirs = list(dict.fromkeys([_real(p) for p in SECRET_DIRS + SOCKET_DIRS]
                                             + [self.home] + list(self.hidden)))
        # Hidden folders not inside another one (the home apart: it gets a writable tmpfs).
        self._outer_hidden = [h for h in self._hide_dirs if h != self.home and not any(
            h != o and _inside(h, o) for o in self._hide_dirs)]
        self._interpreter = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
        self._interpreter_bound = [p for p in sorted(set(self._interpreter)) if any(
            _inside(p, h) for h in self._hide_dirs + [Path('/tmp')])]
        self._sockets_seen: tuple = (None, [])

    # -- the command line ---------------------------------------------------------------------
    def _hide_args(self, paths: Iterable[Path], sized: bool = False) -> list[str]:
        """Folders under an empty tmpfs (read-only and tiny when bwrap can size it), files
        under /dev/null."""
        out = []
        for p in paths:
            if p.is_symlink() or not p.exists():
                continue
            if p.is_dir():
                if sized:
                    out += ['--perms', '0555', '--size', _HIDDEN_TMPFS]
                out += ['--tmpfs', str(p)]
            else:
                out += ['--ro-bind', '/dev/null', str(p)]
        return out

    @staticmethod
    def _visible(p: Path, hide_dirs: Sequence[Path], visible: Sequence[Path]) -> bool:
        """Whether `p` is seen inside the sandbox before the secret and socket hides."""
        if any(_inside(p, b) for b in visible):
            return True
        return not any(_inside(p, h) for h in list(hide_dirs) + [Path('/tmp')])

    def sees(self, path: str | os.PathLike) -> bool:
        """Whether `path` is visible inside: bound, or not under a folder the sandbox hides
        (the homes, /tmp, the socket folders, the hidden paths)."""
        bound = list(self._interpreter_bound) + list(self.read_roots) + self.writable()
        return self._visible(_real(path), self._hide_dirs, bound)

    def import_binds(self, entries: Iterable[str | os.PathLike]) -> list[Path]:
        """The folders of an import path (``sys.path``) that this sandbox would not show, to
        be bound read-only so that a Python process inside imports what this one imports,
        wherever the checkout and its environment live: under /tmp, in a home, on another
        mount, in a path with spaces or non-ASCII characters.

        Each entry that is not visible, and the real folder each symlink in it leads to
        (colcon's ``build/<pkg>/<pkg>`` points at the source package). Never a folder that is
        or holds a hidden one (a home, /tmp itself, the socket folders), one inside a path
        hidden on purpose (``~/.maxim``, the mounted secrets), nor a secret; secrets found by
        name inside what is bound stay hidden (bound folders are scanned like the others).
        """
        roots = list(self._hide_dirs) + [Path('/tmp')]
        never = [Path(p) for p in SYSTEM_SECRET_DIRS] + list(self.hidden)
        out: list[Path] = []

        def want(p: Path) -> bool:
            if not p.exists() or self.sees(p) or any(_inside(p, o) for o in out):
                return False
            if any(_inside(r, p) for r in roots) or any(_inside(p, n) for n in never):
                return False
            return secret_reason(p) is None

        for entry in entries:
            if not entry or not os.path.isabs(entry):
                continue
            folder = _real(entry)
            if not want(folder) or not folder.is_dir():
                continue
            out.append(folder)
            try:
                links = [Path(e.path) for e in itertools.islice(os.scandir(folder),
                                                                _IMPORT_SCAN_MAX)
                         if e.is_symlink()]
            except OSError as exc:
                log.debug('import path %s not listed: %s', folder, exc)
                continue
            for link in links:
                target = link.resolve()
                if not _inside(target, folder) and want(target):
                    out.append(target)
        return out

    def _scan_roots(self, writable: Sequence[Path]) -> tuple[list[Path], list[Path]]:
        """(secrets by name, traps) in the writable and bound roots (`TreeScan`, remembered
        between calls), and the secrets of the home folders."""
        roots = list(writable) + [r for r in self.read_roots if r.exists()]
        with self._lock:
            scanned, traps, complete = self._scan.scan(
                roots, prune=list(self.hidden) + self._interpreter,
                git=lambda g: git_traps(g) + [c for c in (g / 'config',) if c.is_file()
                                              and not c.is_symlink()])
        if not complete and not self._scan_warned:
            self._scan_warned = True
            log.warning('the scan of %s stopped at its bound: secrets and traps by name deeper '
                        'in it are refused by the tools, not hidden or bound read-only by the '
                        'kernel', ', '.join(str(r) for r in roots))
        found = self._home_secrets(_real('~')) + self._home_secrets(self.home) + scanned
        hooks = [h for w in writable for h in self._hooks_paths(w) if h.is_dir()]
        traps = [t for t in traps + hooks if any(_inside(t, w) for w in writable)]
        return found, traps

    @staticmethod
    def _stamp(paths: Iterable[Path]) -> tuple:
        out = []
        for p in paths:
            try:
                st = os.lstat(p)
                out.append((st.st_mtime_ns, st.st_size, st.st_ino))
            except OSError:
                out.append(None)
        return tuple(out)

    def _remembered(self, key: tuple, stamp_of: Sequence[Path], compute):
        """`compute()` again only when the times of `stamp_of` changed (or are too recent to
        trust: `secrets._RACY_S`)."""
        stamp = self._stamp(stamp_of)
        now = time.time()
        cached = self._cache.get(key)
        if cached is not None and cached[0] == stamp and all(
                s is None or now - s[0] / 1e9 > 1.0 for s in stamp):
            return cached[1]
        value = compute()
        self._cache[key] = (stamp, value)
        return value

    def _home_secrets(self, home: Path) -> list[Path]:
        """`home_secrets`, listed again when the home, its .config or .docker changed."""
        return self._remembered(('home', home), [home, home / '.config', home / '.docker'],
                                lambda: home_secrets(home))

    def _hooks_paths(self, folder: Path) -> list[Path]:
        return self._remembered(('hooks', folder), [folder / '.git' / 'config'],
                                lambda: hooks_paths(folder))

    def _secrets_inside(self, found: Sequence[Path], hide_dirs: Sequence[Path],
                        visible: Sequence[Path]) -> list[Path]:
        """The secrets of `maxim_core.tools.secrets` that would be visible inside."""
        out = []
        for p in dict.fromkeys(found):
            if self._visible(p, hide_dirs, visible) and \
                    not any(h != p and _inside(p, h) for h in found):
                out.append(p)
        return out

    def _sockets_inside(self, hide_dirs: Sequence[Path], visible: Sequence[Path]
                        ) -> list[Path]:
        """The host's UNIX socket files that would be visible inside (worked out again only
        when the host's table of sockets changed)."""
        try:
            with open(_PROC_NET_UNIX, 'rb') as f:
                table = f.read(4 << 20)
        except OSError:
            table = None
        key = (table, tuple(visible))
        if table is not None and self._sockets_seen[0] == key:
            return [p for p in self._sockets_seen[1] if os.path.lexists(p)]
        out = []
        for sock in unix_sockets():
            try:
                real = _real(sock.parent) / sock.name
                if not stat.S_ISSOCK(os.lstat(real).st_mode):
                    continue
            except OSError:
                continue          # gone, or in a folder we cannot see: nothing to cover
            if self._visible(real, hide_dirs, visible):
                out.append(real)
        self._sockets_seen = (key, out)
        return out

    def environment(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The whole environment inside: PATH (with the running venv), HOME, LANG, TMPDIR,
        and `env` (the sandbox's, then the call's)."""
        path = BASE_PATH
        venv_bin = str(Path(sys.executable).parent)
        if venv_bin not in path.split(':'):
            path = venv_bin + ':' + path
        env = {'PATH': path, 'HOME': str(self.home), 'LANG': 'C.UTF-8', 'TMPDIR': '/tmp',
               'PYTHONDONTWRITEBYTECODE': '1'}
        # The home inside is empty: git's identity is the mind's (as the git tools give it).
        for who in ('AUTHOR', 'COMMITTER'):
            env[f'GIT_{who}_NAME'] = 'Maxim'
            env[f'GIT_{who}_EMAIL'] = 'maxim@localhost'
        for more in (self.env, extra):
            if more:
                env.update({str(k): str(v) for k, v in more.items()})
        return env

    def writable(self) -> list[Path]:
        """The folders a call may write: the workspace and the write roots that exist."""
        return [self.workspace] + [p for p in self.write_roots if p.exists()]

    def bwrap_args(self, probe_result: Probe, cwd: Path,
                   merged: Mapping[Path, Path] | None = None,
                   env: Mapping[str, str] | None = None) -> list[str]:
        """bwrap's options for one call (before `--` and the command). `merged`: the overlay
        to bind for each writable folder (`quota.QuotaLayer`), else the folder itself."""
        sized = probe_result.sized
        tmp_size = str(self.limits.tmp_mb * 1024 * 1024)
        args = [probe_result.bwrap, *probe_result.flags, '--ro-bind', '/', '/',
                '--dev', '/dev', '--proc', '/proc']
        args += (['--perms', '1777', '--size', tmp_size] if sized and self.limits.tmp_mb
                 else []) + ['--tmpfs', '/tmp']
        args += ['--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
                 '--die-with-parent', '--new-session', '--clearenv']
        if not self.network:
            args.append('--unshare-net')
        hide_dirs = self._hide_dirs
        args += self._hide_args(self._outer_hidden, sized)
        # The home: a private, writable tmpfs (sized), even inside a folder hidden above.
        if self.home.is_dir() and not self.home.is_symlink():
            args += (['--size', tmp_size] if sized and self.limits.tmp_mb else []) + \
                ['--tmpfs', str(self.home)]
        args += self._hide_args(Path(p) for p in SECRET_FILES)
        # The interpreter running us must stay usable inside even when it lives in a home
        # or under /tmp (a checkout there keeps its venv there), both hidden above.
        bound = list(self._interpreter_bound)
        for p in bound:
            args += ['--ro-bind', str(p), str(p)]
        for p in self.read_roots:
            if p.exists():
                args += ['--ro-bind', str(p), str(p)]
                bound.append(p)
        writable = self.writable()
        for p in writable:
            source = str((merged or {}).get(p, p))
            args += ['--ro-bind' if self.read_only else '--bind', source, str(p)]
        # What lies inside a bind made above: hidden again; protected: read-only again.
        inner_hidden = [h for h in hide_dirs + [Path(p) for p in SECRET_FILES]
                        if any(_inside(h, b) for b in bound + writable)]
        args += self._hide_args(inner_hidden, sized)
        for p in self.protected:
            if any(_inside(p, w) for w in writable) and \
                    not any(_inside(p, h) for h in inner_hidden) and p.exists():
                args += ['--ro-bind', str(p), str(p)]
        if self.network:
            # The resolver's file often lives in /run (hidden above): bound back read-only.
            resolv = Path('/etc/resolv.conf').resolve()
            if resolv.is_file() and any(_inside(resolv, h) for h in hide_dirs):
                args += ['--ro-bind', str(resolv), str(resolv)]
        # Last, so that no bind above uncovers them again: secrets by pattern, files that
        # code runs on its own (read-only; a git configuration too when nothing checks what
        # is written to it after the call), and sockets.
        visible = bound + writable
        found, traps = self._scan_roots(writable)
        args += self._hide_args(self._secrets_inside(found, hide_dirs, visible), sized)
        if not self.read_only:
            for t in traps:
                if merged and is_git_config(t):
                    continue           # merged back only when inert (traps.kernel_refusal)
                if not any(_inside(t, p) for p in self.protected + list(inner_hidden)):
                    args += ['--ro-bind', str(t), str(t)]
        for sock in self._sockets_inside(hide_dirs, visible):
            args += ['--ro-bind', '/dev/null', str(sock)]
        for key, value in self.environment(env).items():
            args += ['--setenv', key, value]
        args += ['--chdir', str(cwd)]
        return args

    # -- running ------------------------------------------------------------------------------
    def available(self) -> Probe:
        return probe(self.bwrap)

    def check_cwd(self, cwd: str | os.PathLike | None) -> Path:
        where = self.workspace if cwd is None else _real(cwd)
        roots = [self.workspace] + list(self.write_roots) + list(self.read_roots)
        if not any(_inside(where, r) for r in roots):
            raise ToolError(f'sandbox: the working folder {where} is outside the workspace')
        return where

    def run(self, argv: Sequence[str], cwd: str | os.PathLike | None = None,
            timeout_s: float = 30.0, max_bytes: int = 64_000,
            stdin: bytes | None = None, env: Mapping[str, str] | None = None) -> RunResult:
        """Run argv in the sandbox; the process group is killed at `timeout_s`. `env`: more
        variables for this call. What the call wrote but was not kept is in `not_kept`."""
        if not argv or not all(isinstance(a, str) for a in argv):
            raise ToolError('sandbox: argv must be a non-empty list of strings')
        if not timeout_s or timeout_s <= 0:
            raise ToolError('sandbox: a positive timeout is required')
        where = self.check_cwd(cwd)
        found = self.available()
        if not found.ok:
            if self.fallback == 'refuse':
                raise SandboxUnavailable(
                    f'refused: commands run only inside the kernel sandbox and it is '
                    f'unavailable: {found.reason}')
            warning = (f'WARNING: the kernel sandbox is unavailable ({found.reason}); ran '
                       'under the Python-only rules, without kernel containment')
            log.warning(warning)
            result = self._spawn(list(argv), where, timeout_s, max_bytes, stdin,
                                 env=self.environment(env))
            result.sandboxed = False
            result.warning = warning
            return result
        session = self._session_cgroups(found)
        layer = self._quota_layer(found)
        before = None if layer is not None or self.read_only else \
            set(self._scan_roots(self.writable())[1])
        result = None
        try:
            args = self.bwrap_args(found, where, layer.merged if layer else None, env)
            result = self._spawn_bwrap(args, list(argv), found, session, where, timeout_s,
                                       max_bytes, stdin)
        finally:
            if layer is not None:
                with self._merge_lock:        # two calls never merge into one folder at once
                    _, not_kept = layer.finish(self._merge_refusal)
            elif before is not None:
                not_kept = self._sweep(before)
            else:
                not_kept = []
        result.not_kept = not_kept
        return result

    def bare_command(self, argv: Sequence[str], cwd: str | os.PathLike | None = None
                     ) -> list[str]:
        """bwrap with this call's binds (the writable folders bound directly) and nothing
        else: no limits, no cgroups, no overlay. The baseline of the cost benchmarks."""
        return self.bwrap_args(self.available(), self.check_cwd(cwd)) + ['--', *argv]

    def close(self) -> None:
        """Remove this session's cgroups (the next call makes new ones)."""
        with self._lock:
            if self._finalizer is not None:
                self._finalizer()
                self._finalizer = None
            self._cgroups = []
            self._spawner = None

    def _session_cgroups(self, found: Probe) -> tuple[list[Path], '_Spawner | None']:
        """This session's cgroups (made at its first call) and, with cgroup v1, the thread
        that starts its processes inside them (`_Spawner`)."""
        with self._lock:
            if self._cgroups and all(c.is_dir() for c in self._cgroups) and \
                    (self._spawner is None or self._spawner.alive()):
                return self._cgroups, self._spawner
            if self._finalizer is not None:
                self._finalizer()
            self._cgroups = self._make_cgroups(found)
            self._spawner = None
            if self._cgroups and not found.cgroup_v2:
                try:
                    self._spawner = _Spawner(self._cgroups)
                except OSError as exc:
                    log.warning('%s: each call joins the cgroups instead', exc)
            self._finalizer = weakref.finalize(self, _end_session, self._spawner,
                                               list(self._cgroups))
            return self._cgroups, self._spawner

    def _quota_layer(self, found: Probe) -> 'quota.QuotaLayer | None':
        """The overlays of this call's writable folders on a tmpfs of `Limits.disk_mb`, when
        overlays work here and the call may write (None otherwise)."""
        if not (self.overlay and found.overlay and self.limits.disk_mb) or self.read_only:
            return None
        roots = self.writable()
        if not all(quota.escapable(r) for r in roots):
            log.warning('a writable folder has a , : or \\ in its path: bound without a quota')
            return None
        try:
            return quota.QuotaLayer(Path(found.overlay), roots, self.limits.disk_mb,
                                    self.limits.disk_files or 1_000_000)
        except OSError as exc:
            log.warning('could not mount the quota overlay (%s): bound without a quota', exc)
            return None

    def _merge_refusal(self, rel: str, real: Path, source: Path | None, kind: str
                       ) -> str | None:
        """Why something a call wrote is not merged back, or None (`quota.merge_upper`)."""
        if any(_inside(real, p) for p in self.protected + list(self.hidden)):
            return (f'{rel}: the own code, configuration, memory and safety gate of the mind '
                    'are never writable by tools; not kept')
        if kind in ('dir', 'delete'):
            return None
        hook_dirs = [h for w in self.writable() for h in self._hooks_paths(w)]
        return kernel_refusal(rel, real, source, hook_dirs)

    def _sweep(self, before: set) -> list[str]:
        """No overlay: the traps a call made are moved aside (`<name>.maxim-refused`)."""
        out = []
        writable = self.writable()
        hook_dirs = [h for w in writable for h in hooks_paths(w)]
        for trap in set(self._scan_roots(writable)[1]) - before:
            files = [trap]
            if trap.is_dir() and not trap.is_symlink():
                files = [Path(d) / f for d, _, names in os.walk(trap) for f in names][:1000]
            for f in files:
                root = next((w for w in writable if _inside(f, w)), self.workspace)
                rel = os.path.relpath(f, root)
                why = kernel_refusal(rel, f, None, hook_dirs)
                if why is None or f.is_symlink() and not f.exists():
                    continue
                aside = f.with_name(f.name + _MOVED_ASIDE)
                try:
                    os.rename(f, aside)
                except OSError as exc:
                    out.append(f'{why} (could not be moved aside: {exc.strerror})')
                    continue
                out.append(f'{why}; moved aside to {aside.name}')
        return out

    def _make_cgroups(self, found: Probe) -> list[Path]:
        """One cgroup per controller for this session, limits written (v2: one folder)."""
        name = f'maxim-sandbox-{os.getpid()}-{next(_counter)}'
        writes: dict[Path, list[tuple[str, str]]] = {}
        if found.pids == 'cgroup' and self.limits.processes:
            writes.setdefault(Path(found.cgroup_root) / name, []).append(
                ('pids.max', str(self.limits.processes)))
        if found.memory_root and self.limits.memory_mb:
            size = str(self.limits.memory_mb * 1024 * 1024)
            files = [('memory.max', size), ('memory.swap.max', '0')] if found.cgroup_v2 \
                else [('memory.limit_in_bytes', size), ('memory.memsw.limit_in_bytes', size)]
            writes.setdefault(Path(found.memory_root) / name, []).extend(files)
        made = []
        try:
            for path, files in writes.items():
                path.mkdir()
                made.append(path)
                for file, value in files:
                    required = file in ('pids.max', 'memory.max', 'memory.limit_in_bytes')
                    if required or (path / file).exists():     # swap files are optional
                        (path / file).write_text(value)
        except OSError as exc:
            for path in made:
                self._remove_cgroup(path)
            raise SandboxUnavailable(f'refused: cannot create the cgroup that bounds this '
                                     f'call ({exc})') from exc
        return made

    @staticmethod
    def _remove_cgroup(path: Path) -> None:
        deadline = time.monotonic() + _CGROUP_DRAIN_S
        while True:
            try:
                path.rmdir()
                return
            except FileNotFoundError:
                return
            except OSError as exc:
                if time.monotonic() > deadline:
                    log.warning('cgroup %s still busy after %.0f s: %s', path,
                                _CGROUP_DRAIN_S, exc)
                    return
            time.sleep(0.005)

    def _confine(self, pid: int, found: Probe, cgroups: Sequence[Path]) -> None:
        """The limits, and the cgroups it is not born in, on bwrap's child while it waits
        before the command."""
        for res, value in self.limits.rlimits(nproc=found.pids == 'rlimit'):
            resource.prlimit(pid, res, (value, value))
        for c in cgroups:
            with open(c / 'cgroup.procs', 'w', encoding='ascii') as f:
                f.write(str(pid))

    def _spawn_bwrap(self, args: list[str], argv: list[str], found: Probe,
                     session: tuple[list[Path], '_Spawner | None'], cwd: Path,
                     timeout_s: float, max_bytes: int, stdin: bytes | None) -> RunResult:
        """Start bwrap stopped before the command (``--info-fd``, ``--block-fd``), confine
        its child, let it go, and wait for it with the wall clock."""
        cgroups, spawner = session
        t0 = time.monotonic()
        r_info, w_info = os.pipe()
        r_block, w_block = os.pipe()
        command = [args[0], '--info-fd', str(w_info), '--block-fd', str(r_block),
                   *args[1:], '--', *argv]
        kwargs = dict(args=command, cwd=cwd, env={'PATH': BASE_PATH}, stdout=subprocess.PIPE,
                      stderr=subprocess.PIPE,
                      stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                      start_new_session=True, pass_fds=(w_info, r_block))
        try:
            proc = spawner.popen(**kwargs) if spawner is not None else \
                subprocess.Popen(**kwargs)
        except OSError:
            for fd in (r_info, w_info, r_block, w_block):
                os.close(fd)
            raise
        os.close(w_info)
        os.close(r_block)
        child_fd = None
        try:
            child, ended = _child_pid(r_info, t0 + max(timeout_s, _PROBE_TIMEOUT_S))
            if child is None and not ended:
                # No word from bwrap: the command must not start unbounded.
                _kill(proc, None)
                _collect(proc, time.monotonic() + _KILL_WAIT_S, 0, None)
                raise SandboxUnavailable('refused: bwrap did not report its sandbox in time; '
                                         'the call was not started')
            if child is not None:
                child_fd = _pidfd(child)
                try:
                    self._confine(child, found, [] if spawner is not None else cgroups)
                except OSError as exc:
                    _kill(proc, child_fd)
                    _collect(proc, time.monotonic() + _KILL_WAIT_S, 0, None)
                    raise SandboxUnavailable(f'refused: cannot bound this call ({exc})') \
                        from exc
                try:
                    os.write(w_block, b'1')
                except OSError as exc:
                    log.debug('bwrap ended before its command started: %s', exc)
        finally:
            os.close(r_info)
            os.close(w_block)
        try:
            out, err, timed_out = _collect(proc, t0 + timeout_s, max_bytes, stdin, child_fd)
        finally:
            if child_fd is not None:
                os.close(child_fd)
        code = proc.returncode if proc.returncode is not None else -9
        return RunResult(code, out.text(), err.text(), timed_out, True, out.dropped,
                         err.dropped, '', time.monotonic() - t0)

    @staticmethod
    def _spawn(argv: list[str], cwd: Path, timeout_s: float, max_bytes: int,
               stdin: bytes | None, env: dict) -> RunResult:
        """Without the kernel layer (the 'python' fallback): a plain process group."""
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE,
                                    stdin=subprocess.PIPE if stdin is not None
                                    else subprocess.DEVNULL,
                                    start_new_session=True)
        except FileNotFoundError as exc:
            raise ToolError(f'{argv[0]}: command not found') from exc
        out, err, timed_out = _collect(proc, t0 + timeout_s, max_bytes, stdin)
        code = proc.returncode if proc.returncode is not None else -9
        return RunResult(code, out.text(), err.text(), timed_out, True, out.dropped,
                         err.dropped, '', time.monotonic() - t0)


def _child_pid(fd: int, deadline: float) -> tuple[int | None, bool]:
    """(bwrap's child from its `--info-fd` JSON, whether bwrap closed the pipe first).
    (None, False): nothing came before `deadline`."""
    data = b''
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return None, False
        ready, _, _ = select.select([fd], [], [], remaining)
        if not ready:
            return None, False
        chunk = os.read(fd, 4096)
        if not chunk:
            break
        data += chunk
        if data.rstrip().endswith(b'}'):
            break
    try:
        return int(json.loads(data)['child-pid']), True
    except (ValueError, KeyError, TypeError):
        return None, not data


def _pidfd(pid: int) -> int | None:
    try:
        return os.pidfd_open(pid)
    except (AttributeError, OSError):
        return None


def _kill(proc: subprocess.Popen, child_fd: int | None) -> None:
    """SIGKILL to bwrap's process group and to its child (the PID namespace's first process:
    the namespace dies with it)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass         # it ended between the deadline and the kill
    if child_fd is not None:
        try:
            signal.pidfd_send_signal(child_fd, signal.SIGKILL)
        except (ProcessLookupError, OSError) as exc:
            log.debug('the sandbox child was already gone: %s', exc)


def timeout_error(argv: Sequence[str], timeout_s: float) -> ToolError:
    return ToolError(f'{os.path.basename(argv[0])} did not finish within {timeout_s} s '
                     '(killed)', ERROR_TIMEOUT)


class CommandTool(Tool):
    """A user tool that runs a command: its argv is built from the arguments and always runs
    inside a ProcessSandbox (fail closed like the built-in tools).

        CommandTool('make', 'Run a make target.', {'target': {'type': 'string'}},
                    lambda target: ['make', target], sandbox)
    """

    category = 'user'

    def __init__(self, name: str, description: str, input_schema: Mapping,
                 argv_for: Callable[..., Sequence[str]], sandbox: ProcessSandbox,
                 timeout_s: float = 30.0, max_chars: int = 8000):
        self.argv_for = argv_for
        self.sandbox = sandbox
        self.timeout_s = timeout_s
        self.max_chars = max_chars
        super().__init__(name, description, input_schema)

    def execute(self, **args) -> ToolOutcome:
        argv = list(self.argv_for(**args))
        result = self.sandbox.run(argv, timeout_s=self.timeout_s, max_bytes=self.max_chars * 4)
        if result.timed_out:
            raise timeout_error(argv, self.timeout_s)
        output = {'exit_code': result.exit_code,
                  'stdout': bounded(result.stdout, self.max_chars),
                  'stderr': bounded(result.stderr, self.max_chars // 4)}
        if result.warning:
            output['warning'] = result.warning
        if result.not_kept:
            output['not_kept'] = result.not_kept[:50]
        if result.exit_code != 0:
            return ToolOutcome.fail(f'exit code {result.exit_code}', output=output)
        return ToolOutcome.ok(output)
