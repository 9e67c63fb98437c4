"""The workspace's disk quota: each sandboxed call writes into an overlay on a size-limited
tmpfs, and what it wrote is merged back into the real workspace when it ends.

Linux has no per-folder quota on an ordinary ext4 root (project quotas need a file system
made and mounted for them), and the workspace is a folder that already exists, so the bound
is put on the call's writes instead:

- per call, a tmpfs of ``Limits.disk_mb`` (and ``Limits.disk_files`` inodes) is mounted in a
  private folder of the host (``/run/maxim-sandbox/<pid>/``, a private mount: nothing
  propagates), and each writable root of the sandbox becomes an overlay (the real folder as
  its lower layer, an upper folder on that tmpfs); bwrap binds the overlay where the folder
  is. A write past the quota fails with ``ENOSPC`` inside the call;
- when the call has ended (every process of it is gone with its PID namespace), the upper
  layer is merged into the real folder (`merge_upper`): new and changed files are copied in
  (written beside, then renamed over, never through a symlink: every step is relative to a
  folder opened with ``O_NOFOLLOW``), deletions (overlay whiteouts) are applied, set-user-ID
  and set-group-ID bits are dropped, and each path the caller refuses (a file code runs on
  its own, `maxim_core.tools.traps`; the mind's own code) is left out with one line saying
  why. Then the tmpfs is unmounted.

The cost is a few mount calls per call (about 0.3 ms measured) and a copy of what the call
wrote; a call that writes nothing pays no copy. Mounting needs root in the host's mount
namespace (`overlay_base` says why not otherwise); without it the workspace is bound
directly, with no quota (the per-file limit still holds).

Differences a command can see (the overlay without ``redirect_dir``): renaming a folder that
existed before the call fails with ``EXDEV`` and ``mv`` copies instead; a hard link to a file
that existed before is a copy. Pure Python (ctypes for mount(2)); tested in
``test/test_tool_bounds.py``.
"""

import ctypes
import ctypes.util
import errno
import itertools
import logging
import os
from pathlib import Path
import shutil
import stat
import threading
from typing import Callable, Iterable

log = logging.getLogger(__name__)

MS_NOSUID = 2
MS_NODEV = 4
MS_BIND = 4096
MS_PRIVATE = 1 << 18
MNT_DETACH = 2
OVERLAY_OPTIONS = 'redirect_dir=off,metacopy=off,index=off,xino=off'
_OPAQUE = 'trusted.overlay.opaque'
_XWHITEOUT = 'trusted.overlay.whiteout'
# A refusal callback: (relative path, real path, the written file or None, kind) -> why/None.
# kind: 'file', 'link', 'dir', 'delete', 'other'.
Refuse = Callable[[str, Path, 'Path | None', str], 'str | None']

_libc = None
_libc_lock = threading.Lock()
_counter = itertools.count()
_base_lock = threading.Lock()
_base: dict[int, 'Path | None'] = {}
_base_reason: dict[int, str] = {}


def _lib():
    global _libc
    with _libc_lock:
        if _libc is None:
            _libc = ctypes.CDLL(ctypes.util.find_library('c') or None, use_errno=True)
        return _libc


def mount(source: str, target: 'str | Path', fstype: str | None, flags: int,
          data: str | None = None) -> None:
    lib = _lib()
    rc = lib.mount(source.encode(), os.fsencode(target),
                   fstype.encode() if fstype else None, ctypes.c_ulong(flags),
                   data.encode() if data else None)
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f'mount {fstype or "(flags)"} on {target}: {os.strerror(err)}')


def umount(target: 'str | Path', flags: int = MNT_DETACH) -> None:
    if _lib().umount2(os.fsencode(target), flags) != 0:
        err = ctypes.get_errno()
        if err not in (errno.EINVAL, errno.ENOENT):       # not mounted (any more)
            raise OSError(err, f'umount {target}: {os.strerror(err)}')


def _mounts_under(folder: Path) -> list[str]:
    prefix = str(folder).rstrip('/') + '/'
    out = []
    try:
        with open('/proc/self/mountinfo', encoding='utf-8', errors='replace') as f:
            for line in f:
                fields = line.split()
                if len(fields) > 4:
                    point = fields[4].encode().decode('unicode_escape')
                    if point == str(folder) or point.startswith(prefix):
                        out.append(point)
    except OSError as exc:
        log.debug('cannot read the mount table: %s', exc)
    return sorted(out, key=len, reverse=True)


def _clean_stale(top: Path) -> None:
    """Folders of processes that are gone (a mind that crashed): unmounted and removed."""
    try:
        names = os.listdir(top)
    except OSError:
        return
    for name in names:
        if not name.isdigit() or os.path.exists(f'/proc/{name}'):
            continue
        folder = top / name
        for point in _mounts_under(folder):
            try:
                umount(point)
            except OSError as exc:
                log.warning('cannot unmount the stale %s: %s', point, exc)
        shutil.rmtree(folder, ignore_errors=True)


def overlay_base() -> tuple['Path | None', str]:
    """This process's private folder for quota overlays (made once), or None and why not.
    A trial overlay is mounted, written and merged there first."""
    pid = os.getpid()
    with _base_lock:
        if pid in _base:
            return _base[pid], _base_reason[pid]
        base, reason = _make_base(pid)
        _base[pid], _base_reason[pid] = base, reason
        return base, reason


def _make_base(pid: int) -> tuple['Path | None', str]:
    if os.geteuid() != 0:
        return None, ('not root: overlays cannot be mounted here, so the workspace has no '
                      'disk quota (each file is still bounded)')
    top = Path('/run/maxim-sandbox') if os.path.isdir('/run') else \
        Path('/tmp/maxim-sandbox')          # noqa: S108 (root only, mode 0700)
    try:
        top.mkdir(mode=0o700, exist_ok=True)
        os.chmod(top, 0o700)
        _clean_stale(top)
        base = top / str(pid)
        base.mkdir(mode=0o700, exist_ok=True)
        if str(base) not in _mounts_under(base):
            # A small tmpfs of its own (the calls' folders are made and removed in memory),
            # private: nothing mounted in it propagates anywhere.
            mount('maxim-sandbox', base, 'tmpfs', MS_NOSUID | MS_NODEV,
                  'size=1m,nr_inodes=4096,mode=0700')
        mount('none', base, None, MS_PRIVATE)
    except OSError as exc:
        return None, f'cannot prepare {top} for quota overlays ({exc}): no disk quota'
    try:
        trial = QuotaLayer(base, [], 1, 64)
        lower = trial.dir / 'lower'
        lower.mkdir()
        (lower / 'old').write_text('old')
        layer = QuotaLayer(base, [lower], 1, 64)
        try:
            merged = layer.merged[lower]
            (merged / 'new').write_text('new')
            (merged / 'old').unlink()
        finally:
            layer.finish(lambda *a: None)
        ok = (lower / 'new').read_text() == 'new' and not (lower / 'old').exists()
        trial.finish(lambda *a: None)
    except OSError as exc:
        return None, f'overlays cannot be mounted here ({exc}): no disk quota'
    if not ok:
        return None, 'a trial overlay did not merge back: no disk quota'
    import atexit
    atexit.register(_remove_base, base)
    return base, f'the workspace has a disk quota (an overlay on a tmpfs under {base})'


def _remove_base(base: Path) -> None:
    if os.getpid() != int(base.name):
        return
    for point in _mounts_under(base):
        try:
            umount(point)
        except OSError as exc:
            log.warning('cannot unmount %s: %s', point, exc)
    try:
        base.rmdir()
    except OSError as exc:
        log.warning('cannot remove %s: %s', base, exc)


def escapable(path: Path) -> bool:
    """Whether a folder can be an overlay's lower layer (its path goes into mount options)."""
    return not any(ch in str(path) for ch in ',:\\\n')


class QuotaLayer:
    """One call's writable folders as overlays on one tmpfs of `size_mb` and `files` inodes.
    `merged[root]` is where bwrap binds `root` from; `finish(refuse)` unmounts, merges what
    was written into the real folders and says what was not kept."""

    def __init__(self, base: Path, roots: Iterable[Path], size_mb: int, files: int):
        self.dir = base / str(next(_counter))
        self.dir.mkdir(mode=0o700)
        self.merged: dict[Path, Path] = {}
        self.uppers: dict[Path, Path] = {}
        self._mounted: list[Path] = []
        try:
            mount('maxim-quota', self.dir, 'tmpfs', MS_NOSUID | MS_NODEV,
                  f'size={size_mb}m,nr_inodes={files},mode=0700')
            self._mounted.append(self.dir)
            for n, root in enumerate(roots):
                upper, work, merged = (self.dir / f'{k}{n}' for k in 'uwm')
                for d in (upper, work, merged):
                    d.mkdir()
                mount('overlay', merged, 'overlay', MS_NOSUID | MS_NODEV,
                      f'lowerdir={root},upperdir={upper},workdir={work},{OVERLAY_OPTIONS}')
                self._mounted.append(merged)
                self.merged[root] = merged
                self.uppers[root] = upper
        except OSError:
            self._unmount()
            raise

    def _unmount(self) -> None:
        for point in reversed(self._mounted):
            try:
                umount(point)
            except OSError as exc:
                log.warning('cannot unmount %s: %s', point, exc)
        self._mounted = []
        try:
            self.dir.rmdir()
        except OSError as exc:
            log.warning('cannot remove %s: %s', self.dir, exc)

    def finish(self, refuse: Refuse) -> tuple[int, list[str]]:
        """Unmount the overlays, merge every upper layer, unmount the tmpfs: (entries kept,
        lines of what was not kept and why)."""
        kept, refused = 0, []
        try:
            for merged in list(self.merged.values()):
                umount(merged)
            for root, upper in self.uppers.items():
                k, r = merge_upper(upper, root, refuse)
                kept += k
                refused += r
        finally:
            self._unmount()
        return kept, refused


# -- merging ---------------------------------------------------------------------------------
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


def _open_dir(root_fd: int, parts: tuple[str, ...]) -> int:
    """A folder under `root_fd`, opened one component at a time, never through a symlink."""
    fd = os.dup(root_fd)
    try:
        for part in parts:
            nxt = os.open(part, _DIR_FLAGS, dir_fd=fd)
            os.close(fd)
            fd = nxt
    except OSError:
        os.close(fd)
        raise
    return fd


def _lstat_at(fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=fd, follow_symlinks=False)
    except FileNotFoundError:
        return None


def _remove_at(fd: int, name: str) -> None:
    st = _lstat_at(fd, name)
    if st is None:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(name, dir_fd=fd)
    else:
        os.unlink(name, dir_fd=fd)


def _empty_dir_at(fd: int, name: str) -> None:
    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
    try:
        for child in os.listdir(sub):
            _remove_at(sub, child)
    finally:
        os.close(sub)


def _is_whiteout(path: str, st: os.stat_result) -> bool:
    if stat.S_ISCHR(st.st_mode) and st.st_rdev == 0:
        return True
    if stat.S_ISREG(st.st_mode) and st.st_size == 0:
        try:
            os.getxattr(path, _XWHITEOUT, follow_symlinks=False)
            return True
        except OSError:
            return False
    return False


def _opaque(path: str) -> bool:
    try:
        return os.getxattr(path, _OPAQUE, follow_symlinks=False) == b'y'
    except OSError:
        return False


def _owner(fd: int, st: os.stat_result) -> None:
    if os.geteuid() == 0:
        try:
            os.fchown(fd, st.st_uid, st.st_gid)
        except OSError as exc:
            log.debug('cannot keep the owner: %s', exc)


def _copy_at(src: str, st: os.stat_result, fd: int, name: str) -> None:
    tmp = f'.{name[:40]}.maxim-merge-{os.getpid()}-{next(_counter)}'
    out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                  0o600, dir_fd=fd)
    try:
        with open(src, 'rb') as inp:
            while True:
                chunk = inp.read(1 << 20)
                if not chunk:
                    break
                view = memoryview(chunk)
                while view:
                    view = view[os.write(out, view):]
        _owner(out, st)
        os.fchmod(out, stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID))
        os.utime(out, ns=(st.st_atime_ns, st.st_mtime_ns))
    except OSError:
        os.close(out)
        os.unlink(tmp, dir_fd=fd)
        raise
    os.close(out)
    old = _lstat_at(fd, name)
    if old is not None and stat.S_ISDIR(old.st_mode):
        shutil.rmtree(name, dir_fd=fd)
    os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)


def _ensure_dir_at(fd: int, name: str, st: os.stat_result, opaque: bool) -> None:
    old = _lstat_at(fd, name)
    if old is not None and not stat.S_ISDIR(old.st_mode):
        os.unlink(name, dir_fd=fd)
        old = None
    mode = stat.S_IMODE(st.st_mode) & ~(stat.S_ISUID | stat.S_ISGID)
    if old is None:
        os.mkdir(name, 0o700, dir_fd=fd)
    elif opaque:
        _empty_dir_at(fd, name)
    sub = os.open(name, _DIR_FLAGS, dir_fd=fd)
    try:
        _owner(sub, st)
        os.fchmod(sub, mode)
    finally:
        os.close(sub)


def merge_upper(upper: Path, target: Path, refuse: Refuse) -> tuple[int, list[str]]:
    """Apply an overlay's upper layer to the real folder `target` (see the module docstring):
    (entries applied, one line per entry left out)."""
    kept, refused = 0, []
    root_fd = os.open(target, _DIR_FLAGS)
    try:
        stack: list[tuple[str, tuple[str, ...]]] = [(str(upper), ())]
        while stack:
            folder, parts = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
                fd = _open_dir(root_fd, parts)
            except OSError as exc:
                refused.append(f'{"/".join(parts) or "."}: could not be merged back '
                               f'({exc.strerror}); not kept')
                continue
            try:
                for entry in entries:
                    rel = '/'.join(parts + (entry.name,))
                    real = target.joinpath(*parts, entry.name)
                    try:
                        st = entry.stat(follow_symlinks=False)
                        if _is_whiteout(entry.path, st):
                            kind = 'delete'
                        elif stat.S_ISDIR(st.st_mode):
                            kind = 'dir'
                        elif stat.S_ISREG(st.st_mode):
                            kind = 'file'
                        elif stat.S_ISLNK(st.st_mode):
                            kind = 'link'
                        elif stat.S_ISSOCK(st.st_mode):
                            continue              # a socket means nothing once its call ended
                        else:
                            kind = 'other'
                        why = refuse(rel, real, Path(entry.path) if kind == 'file' else None,
                                     kind)
                        if why is None and kind == 'other':
                            why = f'{rel}: a FIFO or a device; not kept'
                        if why is not None:
                            refused.append(why)
                            continue
                        if kind == 'delete':
                            _remove_at(fd, entry.name)
                        elif kind == 'dir':
                            _ensure_dir_at(fd, entry.name, st, _opaque(entry.path))
                            stack.append((entry.path, parts + (entry.name,)))
                        elif kind == 'file':
                            _copy_at(entry.path, st, fd, entry.name)
                        else:
                            _remove_at(fd, entry.name)
                            os.symlink(os.readlink(entry.path), entry.name, dir_fd=fd)
                        kept += 1
                    except OSError as exc:
                        refused.append(f'{rel}: could not be merged back ({exc.strerror}); '
                                       'not kept')
            finally:
                os.close(fd)
    finally:
        os.close(root_fd)
    return kept, refused
