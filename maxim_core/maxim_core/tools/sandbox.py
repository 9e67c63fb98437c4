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
- resource limits: CPU seconds, address space, open files, file size (``RLIMIT_*``, set by
  ``prlimit`` before bwrap starts and inherited), and a process count: ``RLIMIT_NPROC`` inside
  the sandbox for an ordinary user, a ``pids`` control group for root, whom the kernel exempts
  from RLIMIT_NPROC; and the memory of the whole call (every process together) by a
  ``memory`` control group when one can be created;
- a wall-clock timeout that kills the whole process group; the PID namespace then takes every
  descendant with it;
- a scrubbed environment (``--clearenv``, then PATH, HOME, LANG, TMPDIR only).

`probe()` starts bwrap once for real with these flags and remembers what works. When bwrap is
missing or cannot start, `ProcessSandbox.run` refuses with one clear error (fail closed); a
sandbox built with ``fallback='python'`` runs the command without the kernel layer instead,
under the Python-only rules of `maxim_core.tools.filesystem.Sandbox`, and warns each time.

This module is pure (no rclpy) and is unit-tested against real hostile commands in
``test/test_tool_sandbox.py``.
"""

from dataclasses import dataclass, field
import itertools
import logging
import os
from pathlib import Path
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from typing import Callable, Iterable, Mapping, Sequence

from maxim_core.tools.base import (bounded, ERROR_TIMEOUT, ERROR_UNAVAILABLE, Tool, ToolError,
                                   ToolOutcome)
from maxim_core.tools.secrets import (find_secrets, home_secrets, SYSTEM_SECRET_DIRS,
                                      SYSTEM_SECRET_FILES)

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

    def __post_init__(self):
        for name in ('cpu_s', 'address_space_mb', 'processes', 'memory_mb', 'file_size_mb',
                     'open_files'):
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
    prlimit = shutil.which('prlimit')
    if prlimit is None:
        return Probe(False, 'prlimit (util-linux) is not installed: resource limits cannot be '
                     'set', exe)
    base = ['--ro-bind', '/', '/', '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp',
            '--unshare-net', '--unshare-pid', '--unshare-ipc', '--unshare-uts',
            '--die-with-parent', '--new-session', '--clearenv']
    true = shutil.which('true') or '/bin/true'
    reasons = []
    for flags in (('--unshare-user', '--disable-userns', '--cap-drop', 'ALL'),
                  ('--unshare-user', '--cap-drop', 'ALL')):
        code, err = _run_quiet([exe, *flags, *base, '--', true], _PROBE_TIMEOUT_S)
        if code == 0:
            break
        reasons.append(f'bwrap {" ".join(flags)}: exit {code}: {err}')
    else:
        return Probe(False, 'bwrap cannot start a sandbox here (' + '; '.join(reasons) + ')',
                     exe, prlimit)
    v2 = os.path.exists('/sys/fs/cgroup/cgroup.controllers')
    memory = _cgroup('memory', 'memory.max' if v2 else 'memory.limit_in_bytes')
    mem_root = memory[0] if memory else None
    mem_note = (f'; memory of a whole call bounded by a memory cgroup under {mem_root}'
                if mem_root else '; no writable memory cgroup: memory bounded per process only')
    if os.geteuid() != 0:
        return Probe(True, 'bwrap works; processes bounded by RLIMIT_NPROC inside the '
                     'user namespace' + mem_note, exe, prlimit, flags, 'rlimit', None,
                     mem_root, bool(memory and memory[1]))
    pids = _cgroup('pids', 'pids.max')
    if pids is not None and (memory is None or memory[1] == pids[1]):
        return Probe(True, f'bwrap works; processes bounded by a pids cgroup under {pids[0]}'
                     + mem_note, exe, prlimit, flags, 'cgroup', pids[0], mem_root, pids[1])
    return Probe(True, 'bwrap works, but running as root without a writable pids cgroup: the '
                 'process count is bounded only by the wall-clock timeout (the kernel does not '
                 'apply RLIMIT_NPROC to root)' + mem_note, exe, prlimit, flags, 'none', None,
                 mem_root, bool(memory and memory[1]))


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


class _Drain(threading.Thread):
    """Reads a pipe to its end, keeping the first `limit` bytes (a flood cannot fill memory)."""

    def __init__(self, stream, limit: int):
        super().__init__(daemon=True)
        self.stream = stream
        self.limit = limit
        self.kept = bytearray()
        self.dropped = 0

    def run(self) -> None:
        try:
            while True:
                chunk = self.stream.read(65536)
                if not chunk:
                    break
                room = self.limit - len(self.kept)
                if room > 0:
                    self.kept += chunk[:room]
                self.dropped += max(0, len(chunk) - max(room, 0))
        except (OSError, ValueError) as exc:
            log.debug('pipe closed while reading: %s', exc)

    def text(self) -> str:
        return self.kept.decode('utf-8', errors='replace')


def _real(path: str | os.PathLike) -> Path:
    return Path(os.path.expanduser(str(path))).resolve()


def _inside(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


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

    # -- the command line ---------------------------------------------------------------------
    def _hide_args(self, paths: Iterable[Path]) -> list[str]:
        out = []
        for p in paths:
            if p.is_symlink() or not p.exists():
                continue
            if p.is_dir():
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

    def _secrets_inside(self, hide_dirs: Sequence[Path], visible: Sequence[Path],
                        writable: Sequence[Path]) -> list[Path]:
        """The secrets of `maxim_core.tools.secrets` that would be visible inside: those of
        the home folders, and those found by name in the writable and bound roots."""
        found = home_secrets(_real('~')) + home_secrets(self.home)
        roots = [p for p in writable + [r for r in self.read_roots if r.exists()]]
        interpreter = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
        scanned, complete = find_secrets(roots, prune=list(self.hidden) + interpreter)
        if not complete and not self._scan_warned:
            self._scan_warned = True
            log.warning('the secret scan of %s stopped at its bound: secrets by name deeper '
                        'in it are refused by the tools, not hidden by the kernel',
                        ', '.join(str(r) for r in roots))
        out = []
        for p in dict.fromkeys(found + scanned):
            if self._visible(p, hide_dirs, visible) and \
                    not any(h != p and _inside(p, h) for h in found + scanned):
                out.append(p)
        return out

    def _sockets_inside(self, hide_dirs: Sequence[Path], visible: Sequence[Path]
                        ) -> list[Path]:
        """The host's UNIX socket files that would be visible inside."""
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
        return out

    def environment(self) -> dict[str, str]:
        """The whole environment inside: PATH (with the running venv), HOME, LANG, TMPDIR."""
        path = BASE_PATH
        venv_bin = str(Path(sys.executable).parent)
        if venv_bin not in path.split(':'):
            path = venv_bin + ':' + path
        env = {'PATH': path, 'HOME': str(self.home), 'LANG': 'C.UTF-8', 'TMPDIR': '/tmp',
               'PYTHONDONTWRITEBYTECODE': '1'}
        if self.env:
            env.update({str(k): str(v) for k, v in self.env.items()})
        return env

    def bwrap_args(self, probe_result: Probe, cwd: Path) -> list[str]:
        """bwrap's options for one call (before `--` and the command)."""
        args = [probe_result.bwrap, *probe_result.flags, '--ro-bind', '/', '/',
                '--dev', '/dev', '--proc', '/proc', '--tmpfs', '/tmp',
                '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--unshare-cgroup-try',
                '--die-with-parent', '--new-session', '--clearenv']
        if not self.network:
            args.append('--unshare-net')
        hide_dirs = list(dict.fromkeys([_real(p) for p in SECRET_DIRS + SOCKET_DIRS]
                                       + [self.home] + list(self.hidden)))
        args += self._hide_args(h for h in hide_dirs
                                if not any(h != o and _inside(h, o) for o in hide_dirs))
        args += self._hide_args(Path(p) for p in SECRET_FILES)
        # The interpreter running us must stay usable inside even when it lives in a home
        # or under /tmp (a checkout there keeps its venv there), both hidden above.
        prefixes = {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()}
        bound = [p for p in sorted(prefixes)
                 if any(_inside(p, h) for h in hide_dirs + [Path('/tmp')])]
        for p in bound:
            args += ['--ro-bind', str(p), str(p)]
        for p in self.read_roots:
            if p.exists():
                args += ['--ro-bind', str(p), str(p)]
                bound.append(p)
        writable = [self.workspace] + [p for p in self.write_roots if p.exists()]
        for p in writable:
            args += ['--bind', str(p), str(p)]
        # What lies inside a bind made above: hidden again; protected: read-only again.
        inner_hidden = [h for h in hide_dirs + [Path(p) for p in SECRET_FILES]
                        if any(_inside(h, b) for b in bound + writable)]
        args += self._hide_args(inner_hidden)
        for p in self.protected:
            if p.exists() and any(_inside(p, w) for w in writable) and \
                    not any(_inside(p, h) for h in inner_hidden):
                args += ['--ro-bind', str(p), str(p)]
        if self.network:
            # The resolver's file often lives in /run (hidden above): bound back read-only.
            resolv = Path('/etc/resolv.conf').resolve()
            if resolv.is_file() and any(_inside(resolv, h) for h in hide_dirs):
                args += ['--ro-bind', str(resolv), str(resolv)]
        # Last, so that no bind above uncovers them again: secrets by pattern, and sockets.
        visible = bound + writable
        args += self._hide_args(self._secrets_inside(hide_dirs, visible, writable))
        for sock in self._sockets_inside(hide_dirs, visible):
            args += ['--ro-bind', '/dev/null', str(sock)]
        for key, value in self.environment().items():
            args += ['--setenv', key, value]
        args += ['--chdir', str(cwd)]
        return args

    def command(self, argv: Sequence[str], cwd: Path, probe_result: Probe,
                cgroup_procs: Sequence[str] = ()) -> list[str]:
        """The full command line: [cgroup join] prlimit ... bwrap ... -- [prlimit nproc] argv."""
        inner = list(argv)
        if self.limits.processes and probe_result.pids == 'rlimit':
            inner = [probe_result.prlimit, f'--nproc={self.limits.processes}', '--'] + inner
        outer = [probe_result.prlimit, *self.limits.prlimit_args(), '--',
                 *self.bwrap_args(probe_result, cwd), '--', *inner]
        if cgroup_procs:
            # The shell joins the cgroups, then becomes prlimit, then bwrap: nothing forks
            # before the process is inside them.
            outer = ['/bin/sh', '-c', 'n=$1; shift; while [ "$n" -gt 0 ]; do '
                     'echo $$ > "$1" || exit 125; shift; n=$((n - 1)); done; exec "$@"', 'sh',
                     str(len(cgroup_procs)), *cgroup_procs] + outer
        return outer

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
            stdin: bytes | None = None) -> RunResult:
        """Run argv in the sandbox; the process group is killed at `timeout_s`."""
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
                                 env=self.environment())
            result.sandboxed = False
            result.warning = warning
            return result
        cgroups = self._make_cgroups(found)
        try:
            procs = [str(c / 'cgroup.procs') for c in cgroups]
            return self._spawn(self.command(argv, where, found, procs), where, timeout_s,
                               max_bytes, stdin, env={'PATH': BASE_PATH})
        finally:
            for c in cgroups:
                self._remove_cgroup(c)

    def _make_cgroups(self, found: Probe) -> list[Path]:
        """One fresh cgroup per controller for this call, limits written (v2: one folder)."""
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
            except OSError as exc:
                if time.monotonic() > deadline:
                    log.warning('cgroup %s still busy after %.0f s: %s', path,
                                _CGROUP_DRAIN_S, exc)
                    return
            time.sleep(0.005)

    @staticmethod
    def _spawn(argv: list[str], cwd: Path, timeout_s: float, max_bytes: int,
               stdin: bytes | None, env: dict) -> RunResult:
        t0 = time.monotonic()
        try:
            proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE,
                                    stdin=subprocess.PIPE if stdin is not None
                                    else subprocess.DEVNULL,
                                    start_new_session=True)
        except FileNotFoundError as exc:
            raise ToolError(f'{argv[0]}: command not found') from exc
        out, err = _Drain(proc.stdout, max_bytes), _Drain(proc.stderr, max_bytes // 4)
        out.start()
        err.start()
        if stdin is not None:
            try:
                proc.stdin.write(stdin)
                proc.stdin.close()
            except (BrokenPipeError, OSError) as exc:
                log.debug('stdin closed early: %s', exc)
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass         # it ended between the timeout and the kill
            try:
                proc.wait(timeout=_KILL_WAIT_S)
            except subprocess.TimeoutExpired:
                log.error('process group %d survived SIGKILL for %.0f s', proc.pid,
                          _KILL_WAIT_S)
        out.join(_KILL_WAIT_S)
        err.join(_KILL_WAIT_S)
        for stream in (proc.stdout, proc.stderr):
            stream.close()
        code = proc.returncode if proc.returncode is not None else -9
        return RunResult(code, out.text(), err.text(), timed_out, True, out.dropped,
                         err.dropped, '', time.monotonic() - t0)


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
        if result.exit_code != 0:
            return ToolOutcome.fail(f'exit code {result.exit_code}', output=output)
        return ToolOutcome.ok(output)
