"""The one list of secrets: what no tool reads, lists, searches or names, in every layer.

Every layer reads this module:

- the Python rules of the file tools (`filesystem.Sandbox.check_read` / `check_write`:
  read_file, write_file, edit_file), `glob` and `search_code`, which skip a secret silently
  and never return its name or its lines;
- the bash token check (`filesystem.Sandbox.check_command`): a word of the command line that
  names a secret is refused;
- the kernel layer (`sandbox.ProcessSandbox.bwrap_args`): the system secrets below, the
  secret paths of the home folders, and every secret found by `find_secrets` in the
  workspace and the bound roots are hidden (folders under an empty tmpfs, files under
  /dev/null).

A path is a secret when any of its components matches `SECRET_NAMES` (private keys, .env
files, package-registry and git credentials), when it holds one of `SECRET_SEQUENCES`
(``.ssh``, ``.aws``, ``.config/gcloud``, browser profiles...), when it is or lies in one of
the system secrets, or when it is a process environment under ``/proc``
(``/proc/self/environ``, ``/proc/thread-self/environ``, ``/proc/<pid>/task/<tid>/environ``,
``/proc/self/task/*/environ``...). Both the path as written (normalised, ``~`` expanded) and
the path it resolves to are checked, so neither a symlink nor a ``/proc/self`` spelling leads
around the list.

Pure (no rclpy): unit-tested in ``maxim_core/test/test_tools_secrets.py``.
"""

import fnmatch
import os
from pathlib import Path
import re
import time
from typing import Iterable

# Base names (any component of a path), matched case-insensitively.
SECRET_NAMES = (
    'id_rsa*', 'id_dsa*', 'id_ecdsa*', 'id_ed25519*',          # ssh private keys (and .pub)
    '*.pem', '*.key',                                           # TLS and other private keys
    '.env', '.env.*',                                           # dotenv files
    '.netrc', '.pypirc', '.npmrc', '.git-credentials',          # registry and git credentials
)
# Component sequences: a path holding one of these (and everything beneath it) is a secret.
SECRET_SEQUENCES = (
    ('.ssh',), ('.gnupg',), ('.aws',), ('.azure',), ('.kube',),
    ('.config', 'gcloud'), ('.docker', 'config.json'),
    ('.mozilla',), ('.config', 'google-chrome'), ('.config', 'chromium'),
)
# System secrets, by absolute path (files and folders; fnmatch patterns allowed).
SYSTEM_SECRETS = (
    '/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-', '/etc/sudoers',
    '/etc/sudoers.d', '/etc/ssh/ssh_host_*_key', '/run/secrets', '/var/run/secrets',
)
# Concrete system secrets the kernel layer hides (the patterns above, spelled out).
SYSTEM_SECRET_FILES = ('/etc/shadow', '/etc/gshadow', '/etc/shadow-', '/etc/gshadow-',
                       '/etc/sudoers', '/etc/ssh/ssh_host_rsa_key',
                       '/etc/ssh/ssh_host_ecdsa_key', '/etc/ssh/ssh_host_ed25519_key',
                       '/etc/ssh/ssh_host_dsa_key')
SYSTEM_SECRET_DIRS = ('/etc/sudoers.d', '/run/secrets', '/var/run/secrets')

_NAMES = re.compile('|'.join(fnmatch.translate(n) for n in SECRET_NAMES), re.IGNORECASE)

# find_secrets: folders not walked (tool caches, environments and build trees: many files,
# nobody's secrets). The tools' Python rules and the token check still refuse a secret there.
SCAN_SKIP = frozenset({'.git', '__pycache__', 'node_modules', '.mypy_cache', '.pytest_cache',
                       '.tox', '.cache', '.venv', 'venv', 'site-packages', 'dist-packages',
                       'build', 'install', 'log'})
SCAN_MAX_ENTRIES = 20_000
SCAN_MAX_S = 0.5


def _normal(path: 'str | os.PathLike') -> str:
    return os.path.normpath(os.path.expanduser(os.fspath(path)))


def _parts(path: str) -> tuple[str, ...]:
    return tuple(part for part in path.split('/') if part)


def is_proc_environ(path: 'str | os.PathLike') -> bool:
    """A process environment under /proc, in any spelling (self, thread-self, a pid, a task,
    a glob): the mind's own environment holds its tokens."""
    parts = _parts(_normal(path))
    return len(parts) >= 2 and parts[0] == 'proc' and parts[-1] == 'environ'


def _secret_spelling(path: str) -> str | None:
    """Why this absolute, normalised path is a secret, or None."""
    parts = _parts(path)
    if len(parts) >= 2 and parts[0] == 'proc' and parts[-1] == 'environ':
        return 'a process environment'
    for pattern in SYSTEM_SECRETS:
        depth = len(_parts(pattern))
        if len(parts) >= depth and fnmatch.fnmatchcase('/' + '/'.join(parts[:depth]), pattern):
            return 'a system secret'
    if any(_NAMES.match(part) for part in parts):
        return 'a key or credentials file'
    for seq in SECRET_SEQUENCES:
        n = len(seq)
        if any(parts[i:i + n] == seq for i in range(len(parts) - n + 1)):
            return 'a credentials or browser-profile folder'
    return None


def secret_reason(path: 'str | os.PathLike', root: 'str | os.PathLike | None' = None
                  ) -> str | None:
    """Why `path` is a secret (checked as written and as resolved), or None.

    A relative `path` is taken from `root` (default: the current folder).
    """
    raw = os.path.expanduser(os.fspath(path))
    if not os.path.isabs(raw):
        raw = os.path.join(os.fspath(root) if root is not None else os.getcwd(), raw)
    written = os.path.normpath(raw)
    reason = _secret_spelling(written)
    if reason is not None:
        return reason
    try:
        resolved = str(Path(written).resolve())
    except (OSError, RuntimeError):
        return None        # a symlink loop or a name too long: nothing can be opened there
    return _secret_spelling(resolved)


def is_secret(path: 'str | os.PathLike', root: 'str | os.PathLike | None' = None) -> bool:
    return secret_reason(path, root) is not None


def home_secrets(home: 'str | os.PathLike') -> list[Path]:
    """The secret paths directly under a home folder that exist there (for the kernel)."""
    base = Path(home)
    out = []
    for seq in SECRET_SEQUENCES:
        out.append(base.joinpath(*seq))
    for name in SECRET_NAMES:
        if not any(ch in name for ch in '*?['):
            out.append(base / name)
    try:
        names = os.listdir(base)
    except OSError:
        names = []
    for name in names:
        if _NAMES.match(name):
            out.append(base / name)
    return [p for p in dict.fromkeys(out) if os.path.lexists(p)]


def _is_secret_entry(rel: tuple[str, ...]) -> bool:
    """Whether the last of these parts (relative to a scanned root) names a secret: by its
    own name, or as the end of a secret sequence."""
    if _NAMES.match(rel[-1]):
        return True
    return any(rel[-len(seq):] == seq for seq in SECRET_SEQUENCES if len(rel) >= len(seq))


def find_secrets(roots: Iterable['str | os.PathLike'], prune: Iterable[Path] = (),
                 max_entries: int = SCAN_MAX_ENTRIES, max_s: float = SCAN_MAX_S
                 ) -> tuple[list[Path], bool]:
    """Secrets by name under `roots` (for the kernel layer to hide), and whether the walk was
    complete (False: it stopped at `max_entries` entries or `max_s` seconds).

    A secret folder is reported once, not walked; symlinks are not followed (their targets
    are checked by whoever reads through them); folders in `prune` and those named in
    `SCAN_SKIP` (tool caches, environments, build trees) are not walked.
    """
    pruned = {Path(p) for p in prune}
    deadline = time.monotonic() + max_s
    found: list[Path] = []
    seen = 0
    for root in dict.fromkeys(Path(r) for r in roots):
        stack: list[tuple[Path, tuple[str, ...]]] = [(root, ())]
        while stack:
            folder, rel = stack.pop()
            try:
                entries = list(os.scandir(folder))
            except OSError:
                continue                   # unreadable or vanished: nothing to hide there
            for entry in entries:
                seen += 1
                if seen > max_entries or time.monotonic() > deadline:
                    return found, False
                parts = rel + (entry.name,)
                if _is_secret_entry(parts):
                    if not entry.is_symlink():
                        found.append(Path(entry.path))
                    continue
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir and entry.name not in SCAN_SKIP and Path(entry.path) not in pruned:
                    stack.append((Path(entry.path), parts))
    return found, True


# TreeScan: a folder listed less than this long after its last change is listed again next
# time (a change within the file system's timestamp granularity leaves the time unchanged).
_RACY_S = 1.0


class TreeScan:
    """`find_secrets` that remembers what it listed, for the kernel layer's per-call scan.

    A folder whose modification time is the one seen when it was listed (and was not changed
    within `_RACY_S` of that listing) is neither listed nor judged again: a name is created,
    removed or renamed in a folder only by changing that folder's time, and only names are
    judged here. `extra(parts, is_dir)`, when given, marks more entries to report in a second list
    (the traps of `maxim_core.tools.traps`); `git(path)` is called with each `.git` folder
    met (which is not walked) and returns more paths for that list. Not thread-safe: one per
    sandbox, under its lock.
    """

    def __init__(self, max_entries: int = SCAN_MAX_ENTRIES, max_s: float = SCAN_MAX_S,
                 extra=None):
        self.max_entries = max_entries
        self.max_s = max_s
        self.extra = extra
        # folder -> (mtime_ns, listed at, entries, secrets, marked, .git folders, subfolders)
        self._dirs: dict[str, tuple] = {}

    def _folder(self, folder: str, rel: tuple[str, ...]) -> tuple | None:
        try:
            st = os.lstat(folder)
        except OSError:
            self._dirs.pop(folder, None)
            return None
        cached = self._dirs.get(folder)
        if cached is not None and cached[0] == st.st_mtime_ns and \
                cached[1] - st.st_mtime_ns / 1e9 > _RACY_S:
            return cached
        listed_at = time.time()
        secrets, marked, gits, subs = [], [], [], []
        count = 0
        try:
            with os.scandir(folder) as it:
                for entry in it:
                    count += 1
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    parts = rel + (entry.name,)
                    if _is_secret_entry(parts):
                        if is_dir or not entry.is_symlink():
                            secrets.append(entry.path)
                        continue
                    if self.extra is not None and self.extra(parts, is_dir):
                        if not entry.is_symlink():
                            marked.append(entry.path)
                        continue
                    if entry.name == '.git' and is_dir:
                        gits.append(entry.path)
                    if is_dir and entry.name not in SCAN_SKIP:
                        subs.append((entry.path, parts))
        except OSError:
            self._dirs.pop(folder, None)
            return None
        result = (st.st_mtime_ns, listed_at, count, secrets, marked, gits, subs)
        self._dirs[folder] = result
        return result

    def scan(self, roots: Iterable['str | os.PathLike'], prune: Iterable[Path] = (),
             git=None) -> tuple[list[Path], list[Path], bool]:
        """(secrets, extra marks, complete) under `roots`, as `find_secrets` walks them."""
        pruned = {os.fspath(p) for p in prune}
        deadline = time.monotonic() + self.max_s
        secrets: list[Path] = []
        marked: list[Path] = []
        seen = 0
        visited = set()
        for root in dict.fromkeys(os.fspath(r) for r in roots):
            stack: list[tuple[str, tuple[str, ...]]] = [(root, ())]
            while stack:
                folder, rel = stack.pop()
                visited.add(folder)
                listing = self._folder(folder, rel)
                if listing is None:
                    continue
                seen += listing[2]
                if seen > self.max_entries or time.monotonic() > deadline:
                    return secrets, marked, False
                secrets.extend(Path(p) for p in listing[3])
                marked.extend(Path(p) for p in listing[4])
                if git is not None:
                    for g in listing[5]:
                        marked.extend(git(Path(g)))
                stack.extend((p, parts) for p, parts in listing[6] if p not in pruned)
        for gone in [f for f in self._dirs if f not in visited]:
            del self._dirs[gone]
        return secrets, marked, True
