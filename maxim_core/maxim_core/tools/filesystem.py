"""Filesystem tools (read_file, write_file, edit_file, glob, bash), sandboxed by mode.

The sandbox is enforced here, in the tool, whatever the fear gate decided (defence in
depth: the gate looks for danger, the sandbox bounds reach). `root` is the workspace.

passive (observe only)
    read:  files under `root` and the extra `read_roots`.
    write: nothing (write_file / edit_file fail).
    bash:  one read-only command from PASSIVE_COMMANDS (ls, cat, head, grep, find without
           -exec/-delete...), no shell operators at all (no ; | & < > ` $), every path
           argument inside the readable roots. Run without a shell.
active (work in the workspace)
    read:  as passive.
    write: files under `root` and the extra `write_roots`, except files that code runs on
           its own (`maxim_core.tools.traps`: git hooks and config, conftest.py,
           sitecustomize.py, *.pth, shell rc files, CI files).
    bash:  with the kernel sandbox (the usual case): any command line, contained by the
           kernel (read-only system, the workspace the only writable place, no network);
           pipes, lists, variables and loops are allowed; command and process substitution
           and backticks are not (what runs stays visible in the line, for the gate and the
           log); `>`/`>>` only into writable roots (and /dev/null...). Without the kernel
           sandbox (``process='python'`` and no bwrap): only commands from PASSIVE_COMMANDS
           + ACTIVE_COMMANDS (python, pytest, git, mkdir, cp, mv, rm, sed...), joined by
           | && || ; only, no variable expansion, every path argument inside the readable
           roots. Run by bash in `root`.
singularity (trusted autonomy)
    read:  anywhere except secrets (`maxim_core.tools.secrets`: keys, .env files, cloud,
           registry and git credentials, browser profiles, /proc/*/environ), the hidden
           paths, and what the kernel sandbox hides from commands (the home folders, /run,
           /var/run, /var/tmp, /var/lock, the processes under /proc), unless it lies in the
           workspace or a read root.
    write: under `root` and the `write_roots` (not the system temp folder: commands get a
           private one from the kernel sandbox, and the real one holds what other
           processes keep there).
    bash:  any command line, run by bash in `root`; words naming a secret are refused. The
           fear gate is the main guard in this mode.

In every mode a path that names a secret (as written or as resolved) or lies in a hidden
folder is refused by read_file, write_file and edit_file, skipped silently by glob and
search_code (never listed, never searched), and a bash word naming one is refused; the
kernel sandbox hides the same secrets from the commands themselves.

Every command runs inside the kernel sandbox (`maxim_core.tools.sandbox`: bubblewrap with a
read-only root, the workspace the only writable place (read-only too in passive mode), no
network, resource limits, a disk quota), with a timeout (default 30 s, at most 300 s) and a
bounded output. The rules above still apply first (defence in depth). Without bwrap the
command is refused, unless the sandbox was built with ``process='python'``, which runs it
under these rules alone and warns each time.

The tools that work in this process (read_file, write_file, edit_file, glob) run under a
wall clock (`Tool.wall_clock_s`) and never block: a file is opened non-blocking and must be
a regular file (a FIFO, a device or a socket is refused with one line).

Paths are resolved through symlinks (realpath) before any check, so a link planted inside the
workspace cannot lead a read or a write outside it, and writes open the final file with
O_NOFOLLOW. The mind's own code, configuration and the gate's source (`own_paths()`) are never
writable, and ~/.maxim (the memory database, learned weights) is neither readable nor writable.
"""

import fnmatch
import functools
import os
from pathlib import Path
import re
import shlex
import shutil
import stat
import tempfile
import time
from typing import Callable, Iterable

from maxim_common.errors import ERROR_TIMEOUT
from maxim_core.tools.base import bounded, Tool, ToolError, ToolInputError, ToolOutcome
from maxim_core.tools.sandbox import (default_hidden, Limits, own_paths, ProcessSandbox,
                                      SECRET_DIRS, SOCKET_DIRS, timeout_error)
from maxim_core.tools.secrets import secret_reason
from maxim_core.tools.traps import hooks_paths, write_refusal

MODES = ('passive', 'active', 'singularity')

PASSIVE_COMMANDS = frozenset('''
ls cat head tail wc grep egrep fgrep find pwd echo date stat file du df sort uniq diff cut
tr basename dirname realpath readlink tree which whoami uname printf true false md5sum
sha256sum nl column comm cmp
'''.split())
ACTIVE_COMMANDS = frozenset('''
python python3 pytest pip git mkdir touch cp mv rm rmdir sed awk tee ln tar gzip gunzip zip
unzip make cmake patch xargs env test sleep chmod
'''.split())
_OPERATORS = re.compile(r'[;&|<>`$\n\r]')
_ACTIVE_FORBIDDEN = re.compile(r'`|\$[({A-Za-z0-9_@*?!#$-]|<\(|>\(')
_SUBSTITUTION = re.compile(r'`|\$\(|<\(|>\(')
# Redirect targets that are not files: always allowed.
SAFE_DEVICES = frozenset(('/dev/null', '/dev/stdout', '/dev/stderr', '/dev/tty', '/dev/fd/1',
                          '/dev/fd/2'))
_FIND_FORBIDDEN = ('-exec', '-execdir', '-delete', '-ok', '-okdir', '-fprint', '-fls')
MAX_TIMEOUT_S = 300.0
READ_MAX_BYTES = 256_000
EDIT_MAX_BYTES = 4_000_000
IN_PROCESS_TIMEOUT_S = 10.0     # wall clock of the tools that walk folders in-process
WALL_CLOCK_S = 20.0             # the most any in-process file tool may take


class SandboxError(ToolError):
    """The mode does not allow this path or command."""


def _inside(path: Path, roots: Iterable[Path]) -> bool:
    return any(path == r or r in path.parents for r in roots)


class Sandbox:
    """Which paths and commands a mode allows (see the module docstring)."""

    def __init__(self, mode: str, root: str | os.PathLike,
                 read_roots: Iterable[str | os.PathLike] = (),
                 write_roots: Iterable[str | os.PathLike] = (),
                 process: 'str | ProcessSandbox' = 'bwrap', network: bool = False,
                 protected: Iterable[str | os.PathLike] | None = None,
                 hidden: Iterable[str | os.PathLike] = (), limits: Limits | None = None):
        """`process`: 'bwrap' (commands only in the kernel sandbox, refused without it),
        'python' (the kernel sandbox when it works, else the Python rules alone with a
        warning each time) or a ready ProcessSandbox. `protected`: never writable (default:
        the mind's own code and config); `hidden`: never readable nor writable (always adds
        ~/.maxim), e.g. the memory database."""
        if mode not in MODES:
            raise ValueError(f'unknown mode {mode!r}; one of {", ".join(MODES)}')
        self.mode = mode
        self.root = Path(root).expanduser().resolve()
        if not self.root.is_dir():
            raise ValueError(f'sandbox root {self.root} is not a folder')
        self.read_roots = [self.root] + [Path(p).expanduser().resolve() for p in read_roots]
        self.write_roots = [self.root] + [Path(p).expanduser().resolve() for p in write_roots]
        self.protected = [Path(p).expanduser().resolve() for p in
                          (own_paths() if protected is None else protected)]
        self.hidden = [Path(p).expanduser().resolve() for p in hidden] + default_hidden()
        self._hidden_dirs: list[Path] | None = None
        if isinstance(process, ProcessSandbox):
            self.process = process
        elif process in ('bwrap', 'python'):
            tmp = Path(tempfile.gettempdir()).resolve()
            self.process = ProcessSandbox(
                self.root, write_roots=[p for p in self.write_roots[1:] if p != tmp],
                read_roots=self.read_roots[1:], hidden=self.hidden, protected=self.protected,
                network=network, limits=limits or Limits(),
                fallback='refuse' if process == 'bwrap' else 'python',
                read_only=mode == 'passive')
        else:
            raise ValueError(f"process must be 'bwrap', 'python' or a ProcessSandbox, not "
                             f'{process!r}')

    def resolve(self, path: str) -> Path:
        if not isinstance(path, str) or not path.strip():
            raise ToolInputError('a path must be a non-empty string')
        if '\x00' in path:
            raise SandboxError('a path must not contain NUL bytes')
        p = Path(path).expanduser()
        if not p.is_absolute():
            p = self.root / p
        return p.resolve()     # follows symlinks: a link out of the sandbox stays out

    def _is_secret(self, p: 'str | Path') -> bool:
        return secret_reason(p, self.root) is not None

    def read_refusal(self, path: 'str | Path', resolved: Path | None = None) -> str | None:
        """Why reading `path` is refused (one line), or None. The one rule of read_file,
        glob and search_code: secrets (as written and as resolved), hidden paths, and outside
        the readable folders (except in singularity mode)."""
        p = resolved if resolved is not None else self.resolve(str(path))
        why = secret_reason(path, self.root) or secret_reason(p, self.root)
        if why is not None:
            return f'{path}: {why}; secrets are never readable by tools'
        if _inside(p, self.hidden):
            return f'{path}: the memory and state of the mind are not readable by tools'
        if self.mode != 'singularity' and not _inside(p, self.read_roots):
            return (f'{path}: outside the readable folders in {self.mode} mode '
                    f'({", ".join(str(r) for r in self.read_roots)})')
        proc = str(p).split('/')
        if len(proc) > 2 and proc[1] == 'proc' and proc[2].isdigit() and \
                int(proc[2]) != os.getpid():
            return (f'{path}: the other processes of this machine are not readable by tools '
                    '(the kernel sandbox shows commands only their own)')
        if self.mode == 'singularity' and not _inside(p, self.read_roots + self.write_roots) \
                and _inside(p, self._kernel_hidden()):
            return (f'{path}: hidden from commands by the kernel sandbox (home folders, '
                    '/run, /var/tmp...), so not readable by tools either')
        return None

    def _kernel_hidden(self) -> list[Path]:
        """The folders the kernel sandbox hides from commands (homes, sockets, mounted
        secrets): singularity's in-process reads see what its commands see."""
        if self._hidden_dirs is None:
            dirs = [Path(d) for d in SECRET_DIRS + SOCKET_DIRS] + [Path.home()]
            if isinstance(self.process, ProcessSandbox):
                dirs.append(Path(self.process.home))
            self._hidden_dirs = list(dict.fromkeys(Path(os.path.realpath(d)) for d in dirs))
        return self._hidden_dirs

    def check_read(self, path: str) -> Path:
        p = self.resolve(path)
        refusal = self.read_refusal(path, p)
        if refusal is not None:
            raise SandboxError(refusal)
        return p

    def check_write(self, path: str, traps: bool = True) -> Path:
        """The resolved path `path` to write, or SandboxError (one line). `traps`: refuse
        files that code runs on its own (False: for a folder, which is not one)."""
        if self.mode == 'passive':
            raise SandboxError(f'{path}: writing is not allowed in passive mode')
        p = self.resolve(path)
        if _inside(p, self.protected) or _inside(p, self.hidden):
            raise SandboxError(f'{path}: the own code, configuration, memory and safety gate of '
                               'the mind are never writable by tools')
        why = secret_reason(path, self.root) or secret_reason(p, self.root)
        if why is not None:
            raise SandboxError(f'{path}: {why}; secrets are never writable by tools')
        trap = traps and (write_refusal(path, self.root, hooks_paths(self.root))
                          or write_refusal(p, self.root, hooks_paths(self.root)))
        if trap:
            raise SandboxError(trap)
        if not _inside(p, self.write_roots):
            raise SandboxError(f'{path}: outside the writable folders in {self.mode} mode '
                               f'({", ".join(str(r) for r in self.write_roots)})')
        return p

    def kernel(self) -> bool:
        """Whether commands run inside the kernel sandbox here (its probe, cached)."""
        return self.process.available().ok

    def check_command(self, command: str) -> list[str] | None:
        """argv to run without a shell (passive), or None to run the line with bash."""
        if not isinstance(command, str) or not command.strip():
            raise ToolInputError('bash: the command must be a non-empty string')
        if self.mode == 'passive':
            if _OPERATORS.search(command):
                raise SandboxError('bash: shell operators (; | & < > ` $) are not allowed '
                                   'in passive mode')
            argv = self._split(command)
            self._check_segment(argv, PASSIVE_COMMANDS)
            return argv
        if self.mode == 'active':
            kernel = self.kernel()
            if kernel and _SUBSTITUTION.search(command):
                raise SandboxError('bash: command substitution ($(...), backticks, <(...)) is '
                                   'not allowed in active mode: what runs must be visible in '
                                   'the line')
            if not kernel and _ACTIVE_FORBIDDEN.search(command):
                raise SandboxError('bash: command substitution and variable expansion are '
                                   'not allowed in active mode without the kernel sandbox')
            lexer = shlex.shlex(command, posix=True, punctuation_chars=';&|<>')
            lexer.whitespace_split = True
            try:
                tokens = list(lexer)
            except ValueError as exc:
                raise ToolInputError(f'bash: cannot parse the command: {exc}') from exc
            segment: list[str] = []
            redirect = False
            dup = False
            for tok in tokens + [';']:
                if dup:                                  # 2>&1, >&2: a file descriptor
                    dup = False
                    if re.fullmatch(r'\d+|-', tok):
                        continue
                    redirect = True
                if tok in (';', '&&', '||', '|') or kernel and tok in ('&', '|&', ';;'):
                    if segment:
                        self._check_segment(segment, PASSIVE_COMMANDS | ACTIVE_COMMANDS,
                                            kernel)
                    segment = []
                elif tok in ('>', '>>') or kernel and tok in ('&>', '&>>', '>|'):
                    redirect = True
                elif kernel and tok in ('>&', '<&'):
                    dup = True
                elif tok in ('<',):
                    continue
                elif set(tok) <= set(';&|<>'):
                    raise SandboxError(f'bash: operator {tok!r} is not allowed in active mode')
                elif redirect:
                    if tok not in SAFE_DEVICES:
                        self.check_write(tok)
                    redirect = False
                else:
                    segment.append(tok)
            return None
        for tok in self._split(command, strict=False):
            self._refuse_secret_word(tok)
        return None

    def _refuse_secret_word(self, word: str) -> None:
        """A word of a command line (or the value of its --option=value) naming a secret is
        refused: the same list as read_file, whatever the mode."""
        values = [word]
        if word.startswith('-'):
            values = [word.split('=', 1)[1]] if '=' in word else []
        for value in values:
            if not value or '\x00' in value:
                continue
            why = secret_reason(value, self.root)
            if why is not None:
                raise SandboxError(f'bash: {value!r} names {why}; tools never touch secrets')

    def _split(self, command: str, strict: bool = True) -> list[str]:
        try:
            return shlex.split(command)
        except ValueError as exc:
            if strict:
                raise ToolInputError(f'bash: cannot parse the command: {exc}') from exc
            return command.split()

    def _check_segment(self, argv: list[str], allowed: frozenset, kernel: bool = False
                       ) -> None:
        if kernel:
            # The kernel bounds what the program reaches; the words still name no secret.
            for arg in argv:
                self._refuse_secret_word(arg)
            return
        prog = os.path.basename(argv[0])
        if prog not in allowed:
            raise SandboxError(f'bash: {prog!r} is not allowed in {self.mode} mode')
        if prog == 'find' and any(a in _FIND_FORBIDDEN for a in argv):
            raise SandboxError('bash: find with -exec/-delete is not allowed here')
        for arg in argv[1:]:
            self._refuse_secret_word(arg)
            if arg.startswith('-') and '=' not in arg:
                continue
            value = arg.split('=', 1)[1] if arg.startswith('-') else arg
            if value.startswith(('/', '~', '..')) or '/..' in value:
                self.check_read(value)


def run_process(argv: list[str], sandbox: 'Sandbox', timeout_s: float,
                max_chars: int = 8000, cwd: Path | None = None,
                env: dict | None = None) -> dict:
    """Run argv in the kernel sandbox with a timeout; a structured, bounded result.

    ToolError (ERROR_TIMEOUT) when the wall clock ran out (the process group was killed);
    SandboxUnavailable when the kernel sandbox cannot start and the Python rules were not
    chosen instead.
    """
    result = sandbox.process.run(argv, cwd or sandbox.root, timeout_s, max_bytes=max_chars * 4,
                                 env=env)
    if result.timed_out:
        raise timeout_error(argv, timeout_s)
    out = {'exit_code': result.exit_code, 'stdout': bounded(result.stdout, max_chars),
           'stderr': bounded(result.stderr, max_chars // 4)}
    if result.stdout_dropped:
        out['stdout'] += f' [{result.stdout_dropped} more bytes discarded]'
    if result.warning:
        out['warning'] = result.warning
    if result.not_kept:
        # What the command wrote that the kernel layer did not keep, one line each.
        out['not_kept'] = result.not_kept[:50]
    return out


def _regular(fd: int, path: 'str | Path', tool: str) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ToolError(f'{tool}: {path} is not a regular file (a FIFO, a device or a '
                        'socket): only files are read or written')


def write_text_nofollow(p: Path, content: str, tool: str = 'write_file') -> None:
    """Write `content` to `p` without following a symlink in its final component and
    without blocking: `p` must be (or become) a regular file."""
    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                 0o644)
    _regular(fd, p, tool)
    os.set_blocking(fd, True)
    os.ftruncate(fd, 0)
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
        f.write(content)


def read_text_regular(p: Path, limit: int, tool: str, errors: str = 'replace') -> str:
    """At most `limit` bytes of the regular file `p` as text, without blocking (a FIFO,
    a device or /proc/kmsg is refused or answers at once)."""
    fd = os.open(p, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    _regular(fd, p, tool)
    with os.fdopen(fd, 'rb') as f:
        data = f.read(limit)
    return data.decode('utf-8', errors=errors)


def _glob_parts(pattern: str) -> tuple[str, ...]:
    parts = tuple(p for p in pattern.split('/') if p not in ('', '.'))
    if not parts:
        raise ToolInputError(f'an empty glob pattern: {pattern!r}')
    return parts


def _matcher(pats: tuple[str, ...]) -> Callable[[tuple[str, ...], bool], bool]:
    """match(parts, whole): do these path parts match the glob (whole=True), or can a path
    beneath them still match (whole=False)? `**` is any number of folders, `*` any name
    (dot names too, as pathlib). Memoised, so no pattern is exponential."""
    def match(parts: tuple[str, ...], whole: bool) -> bool:
        @functools.lru_cache(maxsize=None)
        def at(i: int, j: int) -> bool:
            if i == len(parts):
                return j == len(pats) or not whole or all(p == '**' for p in pats[j:])
            if j == len(pats):
                return False
            if pats[j] == '**':
                return at(i, j + 1) or at(i + 1, j)
            return fnmatch.fnmatchcase(parts[i], pats[j]) and at(i + 1, j + 1)
        return at(0, 0)
    return match


def walk_readable(sandbox: 'Sandbox', base: Path, pattern: str, timeout_s: float,
                  tool: str, skip: Iterable[str] = ()) -> list[tuple[Path, bool]]:
    """(path, is_dir) under `base` whose path relative to it matches the glob `pattern`,
    among what read_file could read: a secret, a hidden path or a path out of the readable
    folders is neither listed nor entered (the same rule as read_file, `read_refusal`).
    Symlinked folders are not followed. ToolError (ERROR_TIMEOUT) after `timeout_s`."""
    match = _matcher(_glob_parts(pattern))
    skip = frozenset(skip)
    deadline = time.monotonic() + timeout_s
    out: list[tuple[Path, bool]] = []
    stack: list[tuple[Path, tuple[str, ...]]] = [(base, ())]
    seen = 0
    while stack:
        folder, rel = stack.pop()
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue                 # unreadable or gone: nothing of it to list
        for entry in entries:
            seen += 1
            if time.monotonic() > deadline:
                raise ToolError(f'{tool}: stopped at its {timeout_s:g} s time limit after '
                                f'{seen} entries under {base}; narrow the path or the '
                                'pattern', ERROR_TIMEOUT)
            p = Path(entry.path)
            rp = p.resolve()
            if not _inside(rp, sandbox.read_roots) or sandbox.read_refusal(p, rp) is not None:
                continue
            parts = rel + (entry.name,)
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                continue
            if match(parts, True):
                out.append((p, is_dir or entry.is_dir()))
            if is_dir and entry.name not in skip and match(parts, False):
                stack.append((p, parts))
    return out


class _FsTool(Tool):
    category = 'filesystem'
    wall_clock_s = WALL_CLOCK_S

    def __init__(self, sandbox: Sandbox):
        super().__init__()
        self.sandbox = sandbox

    def rel(self, p: Path) -> str:
        return str(p.relative_to(self.sandbox.root)) if _inside(p, [self.sandbox.root]) \
            else str(p)


class ReadFileTool(_FsTool):
    name = 'read_file'
    description = 'Read a text file.'
    input_schema = {'type': 'object', 'properties': {
        'path': {'type': 'string', 'maxLength': 1024},
        'offset': {'type': 'integer', 'minimum': 0, 'default': 0},
        'limit': {'type': 'integer', 'minimum': 1, 'maximum': 2000, 'default': 200}},
        'required': ['path']}

    def execute(self, path: str, offset: int = 0, limit: int = 200) -> dict:
        p = self.sandbox.check_read(path)
        if p.is_dir():
            raise ToolError(f'read_file: {path} is a folder, not a file')
        text = read_text_regular(p, READ_MAX_BYTES, 'read_file')
        lines = text.splitlines()
        chunk = lines[offset:offset + limit]
        return {'path': self.rel(p), 'content': bounded('\n'.join(chunk)),
                'lines': len(chunk), 'total_lines': len(lines),
                'truncated': offset + limit < len(lines)}


class WriteFileTool(_FsTool):
    name = 'write_file'
    description = 'Create or overwrite a text file.'
    input_schema = {'type': 'object', 'properties': {
        'path': {'type': 'string', 'maxLength': 1024},
        'content': {'type': 'string', 'maxLength': 200_000}},
        'required': ['path', 'content']}

    def execute(self, path: str, content: str) -> ToolOutcome:
        p = self.sandbox.check_write(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        self.sandbox.check_write(str(p.parent), traps=False)   # mkdir crossed no link
        write_text_nofollow(p, content)
        return ToolOutcome.ok({'path': self.rel(p), 'bytes': len(content.encode('utf-8'))},
                              path=str(p), content=content)


class EditFileTool(_FsTool):
    name = 'edit_file'
    description = 'Replace one occurrence of old_text by new_text in a file.'
    input_schema = {'type': 'object', 'properties': {
        'path': {'type': 'string', 'maxLength': 1024},
        'old_text': {'type': 'string', 'minLength': 1},
        'new_text': {'type': 'string'},
        'context_before': {'type': 'string', 'default': ''},
        'context_after': {'type': 'string', 'default': ''}},
        'required': ['path', 'old_text', 'new_text']}

    def execute(self, path: str, old_text: str, new_text: str, context_before: str = '',
                context_after: str = '') -> ToolOutcome:
        p = self.sandbox.check_write(path)
        if not p.is_file():
            raise ToolError(f'edit_file: {path} is not a file')
        text = read_text_regular(p, EDIT_MAX_BYTES + 1, 'edit_file', errors='strict')
        if len(text.encode('utf-8')) > EDIT_MAX_BYTES:
            raise ToolError(f'edit_file: {path} is larger than {EDIT_MAX_BYTES} bytes; edit '
                            'it with bash')
        starts = [m.start() for m in re.finditer(re.escape(old_text), text)]
        if not starts:
            raise ToolError(f'edit_file: old_text not found in {path}')
        matches = [s for s in starts
                   if text[:s].endswith(context_before)
                   and text[s + len(old_text):].startswith(context_after)]
        if not matches:
            raise ToolError(f'edit_file: old_text occurs {len(starts)} times but none has '
                            'that context_before/context_after')
        if len(matches) > 1:
            raise ToolError(f'edit_file: old_text occurs {len(matches)} times with this '
                            'context; give context_before/context_after to pick one')
        s = matches[0]
        new = text[:s] + new_text + text[s + len(old_text):]
        write_text_nofollow(p, new, 'edit_file')
        line = text.count('\n', 0, s) + 1
        return ToolOutcome.ok({'path': self.rel(p), 'line': line,
                               'replaced_chars': len(old_text)}, path=str(p), content=new)


class GlobTool(_FsTool):
    """Lists what read_file could read: secrets, hidden paths and links out of the readable
    folders are skipped without their names; the walk is bounded by a wall clock."""

    name = 'glob'
    description = 'List files matching a glob pattern.'
    input_schema = {'type': 'object', 'properties': {
        'pattern': {'type': 'string', 'maxLength': 256},
        'limit': {'type': 'integer', 'minimum': 1, 'maximum': 1000, 'default': 100}},
        'required': ['pattern']}

    def __init__(self, sandbox: Sandbox, timeout_s: float = IN_PROCESS_TIMEOUT_S):
        super().__init__(sandbox)
        self.timeout_s = timeout_s

    def execute(self, pattern: str, limit: int = 100) -> dict:
        if pattern.startswith('/') or '..' in Path(pattern).parts:
            raise SandboxError('glob: patterns are relative to the workspace, without ..')
        listed = sorted(walk_readable(self.sandbox, self.sandbox.root, pattern,
                                      self.timeout_s, 'glob'))
        found = [self.rel(p) + ('/' if is_dir else '') for p, is_dir in listed[:limit]]
        return {'pattern': pattern, 'paths': found, 'total': len(listed),
                'truncated': len(listed) > len(found)}


class BashTool(_FsTool):
    name = 'bash'
    description = 'Run a shell command in the workspace.'
    wall_clock_s = None              # bounded by its own timeout, in the kernel sandbox
    input_schema = {
        'type': 'object',
        'properties': {
            'command': {'type': 'string', 'maxLength': 4000},
            'timeout_s': {'type': 'number', 'exclusiveMinimum': 0, 'maximum': MAX_TIMEOUT_S,
                          'default': 30}},
        'required': ['command']}

    def execute(self, command: str, timeout_s: float = 30.0) -> ToolOutcome:
        argv = self.sandbox.check_command(command)
        if argv is None:
            shell = shutil.which('bash') or '/bin/bash'
            argv = [shell, '--noprofile', '--norc', '-c', command]
        result = run_process(argv, self.sandbox, timeout_s)
        result['command'] = command
        if result['exit_code'] != 0:
            return ToolOutcome.fail(f'exit code {result["exit_code"]}', output=result)
        return ToolOutcome.ok(result)


def filesystem_tools(sandbox: Sandbox) -> list[Tool]:
    return [cls(sandbox) for cls in (ReadFileTool, WriteFileTool, EditFileTool, GlobTool,
                                     BashTool)]
