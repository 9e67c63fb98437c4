"""Files that code runs on its own: what a tool may not plant in a workspace (one list).

A sandboxed command stays contained, but what it leaves in the workspace does not: a person
who later runs git, pytest, Python, a shell or CI in that checkout runs what the model
planted there. These files are *traps*:

- git: any file of a ``hooks`` folder of a repository (``.git/hooks/*``, a submodule's), and
  the folder named by ``core.hooksPath`` in the workspace's own ``.git/config``; git's
  configuration (``.git/config``, ``config.worktree``, a submodule's config) is kept only in
  an *inert* form: none of the keys that make git run a command (`git_config_danger`:
  ``core.fsmonitor``, ``core.hooksPath``, ``core.sshCommand``, ``core.pager``, ``alias.*=!``,
  filters, textconv, credential helpers, includes...);
- git's links: a ``.git`` *file* (``gitdir: <folder>``) makes git in that folder take the
  configuration and hooks of the folder it names;
- Python: ``conftest.py`` (pytest imports it on any run under its folder),
  ``sitecustomize.py``, ``usercustomize.py`` and ``*.pth`` (imported at every start of an
  interpreter that sees them), and compiled Python an import takes in place of the source
  beside it (``*.pyc`` caches, extension modules named ``*.cpython-*.so``, ``*.abi3.so``);
- shells and sessions: ``.bashrc``, ``.bash_profile``, ``.bash_login``, ``.bash_logout``,
  ``.profile``, ``.zshrc``, ``.zshenv``, ``.zprofile``, ``.zlogin``, ``.zlogout``, ``.kshrc``,
  ``.cshrc``, ``.tcshrc``, ``.login``, ``.logout``, ``.envrc`` (direnv), ``.xinitrc``,
  ``.xprofile``, ``.xsessionrc``, ``.gitconfig``, ``.config/fish/``, ``.config/autostart/``;
- CI and editors: ``.github/workflows/``, ``.gitlab-ci.yml``, ``.circleci/``, ``.buildkite/``,
  ``.travis.yml``, ``azure-pipelines.yml``, ``bitbucket-pipelines.yml``, ``.drone.yml``,
  ``Jenkinsfile``, ``.pre-commit-config.yaml`` (pre-commit runs it at the next commit once its
  hook is installed), ``.husky/``, ``.vscode/tasks.json`` and ``.vscode/settings.json``
  (folder-open tasks, interpreter paths).

Not traps, by decision: ``Makefile``, ``setup.py``, ``noxfile.py``, ``tox.ini``,
``pyproject.toml``, ``package.json`` and the sources and tests themselves. They run only when
a person asks for them by name (``make``, ``pip install .``, ``nox``, ``pytest`` on a test
file), exactly like every other file of the project the mind is allowed to change; refusing
them would refuse ordinary work. The fear gate still flags ``setup.py`` written with code that
starts a shell.

Every layer reads this module: `filesystem.Sandbox.check_write` (write_file, edit_file, a
bash redirect, git_commit paths) refuses a trap with one line; the kernel layer
(`sandbox.ProcessSandbox`) binds the traps it finds read-only and keeps nothing of the kind
a command writes (`kernel_refusal`, applied when a call's writes are merged back into the
workspace, or when they are swept after it). Pure: unit-tested in
``maxim_core/test/test_tools_traps.py``.
"""

import fnmatch
import os
from pathlib import Path
import re
from typing import Iterable

PYTHON_STARTUP = ('sitecustomize.py', 'usercustomize.py', '*.pth')
# Compiled Python that an import uses in place of the source beside it: bytecode caches and
# extension modules named as Python imports them.
PYTHON_SHADOW = ('*.pyc', '*.pyo', '*.cpython-*.so', '*.abi3.so', '*.cpython-*.pyd')
PYTEST_AUTO = ('conftest.py',)
SHELL_RC = ('.bashrc', '.bash_profile', '.bash_login', '.bash_logout', '.profile', '.zshrc',
            '.zshenv', '.zprofile', '.zlogin', '.zlogout', '.kshrc', '.cshrc', '.tcshrc',
            '.login', '.logout', '.envrc', '.xinitrc', '.xprofile', '.xsessionrc',
            '.gitconfig')
CI_FILES = ('.gitlab-ci.yml', '.gitlab-ci.yaml', '.travis.yml', 'azure-pipelines.yml',
            'bitbucket-pipelines.yml', '.drone.yml', 'Jenkinsfile',
            '.pre-commit-config.yaml')
# Component sequences: the sequence itself and everything beneath it.
TRAP_SEQUENCES = (
    (('.github', 'workflows'), 'a CI workflow'),
    (('.circleci',), 'a CI configuration'),
    (('.buildkite',), 'a CI configuration'),
    (('.husky',), 'a git hook (husky)'),
    (('.vscode', 'tasks.json'), 'an editor task (runs on folder open)'),
    (('.vscode', 'settings.json'), 'editor settings (interpreter and tool paths)'),
    (('.config', 'fish'), 'a shell start-up file'),
    (('.config', 'autostart'), 'a session start-up file'),
)
GIT_CONFIG_NAMES = ('config', 'config.worktree')

_WHY = {}
for _names, _why in ((PYTHON_STARTUP, 'a file Python runs at every start'),
                     (PYTHON_SHADOW, 'compiled Python that an import runs in place of its '
                      'source'),
                     (PYTEST_AUTO, 'a file pytest runs by itself on any run in its folder '
                      '(put fixtures in the test module)'),
                     (SHELL_RC, 'a shell or session start-up file'),
                     (CI_FILES, 'a CI or commit-hook configuration')):
    for _n in _names:
        _WHY[_n] = _why
_NAME_RE = [(re.compile(fnmatch.translate(n)), why) for n, why in _WHY.items()]
_ANY_NAME = re.compile('|'.join(fnmatch.translate(n) for n in _WHY))

GIT_HOOK = 'a git hook (git runs it by itself)'
GIT_CONFIG = 'the git configuration'
GIT_LINK = ('a .git file (git would take the configuration and hooks of the folder it '
            'names)')

# Keys of a git configuration that make git run a command (section.key, lowercase; a `*`
# is any subsection). An alias, or a submodule's update, whose value starts with `!` runs a
# shell.
_GIT_EXEC_KEYS = (
    'core.fsmonitor', 'core.hookspath', 'core.sshcommand', 'core.pager', 'core.editor',
    'core.askpass', 'core.gitproxy', 'core.alternaterefscommand', 'sequence.editor',
    'pager.*', 'filter.*.clean', 'filter.*.smudge', 'filter.*.process', 'diff.*.textconv',
    'diff.*.command', 'diff.external', 'merge.*.driver', 'credential.helper',
    'credential.*.helper', 'gpg.program', 'gpg.*.program', 'include.path', 'includeif.*.path',
    'uploadpack.packobjectshook', 'remote.*.uploadpack', 'remote.*.receivepack',
    'remote.*.vcs', 'protocol.allow', 'protocol.*.allow', 'web.browser', 'browser.*.cmd',
    'browser.*.path', 'difftool.*.cmd', 'mergetool.*.cmd', 'sendemail.tocmd',
    'sendemail.cccmd', 'sendemail.smtpserver', 'sendemail.*.smtpserver', 'man.*.cmd',
    'man.viewer', 'instaweb.httpd', 'ssh.variant', 'receive.procreceiverefs',
)
_GIT_EXEC = re.compile('|'.join(re.escape(k).replace(r'\*', '.+') for k in _GIT_EXEC_KEYS))
_BANG_KEYS = re.compile(r'alias\..+|submodule\..+\.update')
_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_KEY = re.compile(r'([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$')
# In a command line: a dotted key (`git config core.fsmonitor x`, `git -c alias.x=!sh`).
GIT_EXEC_WORD = re.compile(
    r'\b(core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy)'
    r'|sequence\.editor|pager\.[\w-]+|filter\.[^\s=]+\.(clean|smudge|process)'
    r'|diff\.[^\s=]+\.(textconv|command)|diff\.external|merge\.[^\s=]+\.driver'
    r'|credential\.([^\s=]+\.)?helper|gpg\.([^\s=]+\.)?program|include(if\.[^\s=]+)?\.path'
    r'|uploadpack\.packobjectshook|remote\.[^\s=]+\.(uploadpack|receivepack)'
    r'|protocol\.([^\s=]+\.)?allow)\b', re.IGNORECASE)
GIT_ALIAS_SHELL = re.compile(r'\b(alias\.[\w.-]+|submodule\.[^\s=]+\.update)\s*[= ]\s*'
                             r'["\']?\s*!', re.IGNORECASE)
GIT_CONFIG_READ_MAX = 256_000


def _parts(path: str) -> tuple[str, ...]:
    return tuple(p for p in path.split('/') if p)


def _git_kind(parts: tuple[str, ...]) -> str | None:
    """A git hook or a git configuration by position under a `.git` folder (or a bare
    repository's `<name>.git`): hooks/ and config directly under it (or under
    `modules/<name>/`, a submodule's git folder), config.worktree under
    `worktrees/<name>/`."""
    for i, part in enumerate(parts):
        if not part.endswith('.git') or i + 1 >= len(parts):
            continue                     # .git, or a bare repository (name.git)
        j = i + 1
        while j < len(parts):
            rest = parts[j:]
            if rest[0] == 'hooks':
                # *.sample files are what `git init` writes: git never runs them.
                return None if rest[-1].endswith('.sample') and len(rest) > 1 else GIT_HOOK
            if len(rest) == 1 and rest[0] in GIT_CONFIG_NAMES:
                return GIT_CONFIG
            if rest[0] in ('modules', 'worktrees') and len(rest) >= 3:
                j += 2                    # a submodule's or a worktree's own git folder
                continue
            break
    return None


def _spelling(path: str, hook_dirs: Iterable[Path] = (), folder: bool = False
              ) -> str | None:
    parts = _parts(path)
    if not parts:
        return None
    if parts[-1] == '.git' and not folder:
        return GIT_LINK
    why = _git_kind(parts)
    if why is not None:
        return why
    for d in hook_dirs:
        dp = _parts(str(d))
        if parts[:len(dp)] == dp and len(parts) > len(dp):
            return GIT_HOOK + ' (core.hooksPath)'
    for regex, why in _NAME_RE:
        if regex.match(parts[-1]):
            return why
    for seq, why in TRAP_SEQUENCES:
        n = len(seq)
        if any(parts[i:i + n] == seq for i in range(len(parts) - n + 1)):
            return why
    return None


def trap_reason(path: 'str | os.PathLike', root: 'str | os.PathLike | None' = None,
                hook_dirs: Iterable[Path] = ()) -> str | None:
    """Why `path` is a file code runs on its own (as written and as resolved), or None.
    A relative `path` is taken from `root` (default: the current folder). `hook_dirs`: the
    folders ``core.hooksPath`` names (`hooks_paths`)."""
    raw = os.path.expanduser(os.fspath(path))
    if not os.path.isabs(raw):
        raw = os.path.join(os.fspath(root) if root is not None else os.getcwd(), raw)
    written = os.path.normpath(raw)
    folder = os.path.isdir(written) and not os.path.islink(written)
    why = _spelling(written, hook_dirs, folder)
    if why is not None:
        return why
    try:
        resolved = str(Path(written).resolve())
    except (OSError, RuntimeError):
        return None
    return _spelling(resolved, hook_dirs, folder)


def is_git_config(path: 'str | os.PathLike') -> bool:
    return _git_kind(_parts(os.path.normpath(os.fspath(path)))) == GIT_CONFIG


def is_trap_entry(rel: tuple[str, ...], is_dir: bool = False) -> bool:
    """Whether the last of these parts (relative to a scanned root) is a trap to bind
    read-only: by name, or as the end of a trap sequence. Git's folders are looked at
    apart (`git_traps`), since scans do not walk `.git`; a `.git` file is a trap."""
    if rel[-1] == '.git':
        return not is_dir
    if _ANY_NAME.match(rel[-1]):
        return True
    return any(rel[-len(seq):] == seq for seq, _ in TRAP_SEQUENCES if len(rel) >= len(seq))


def git_traps(git_dir: Path) -> list[Path]:
    """The hooks folder of a `.git` folder that exists (bound read-only by the kernel)."""
    hooks = git_dir / 'hooks'
    return [hooks] if hooks.is_dir() and not hooks.is_symlink() else []


def _logical_lines(text: str) -> Iterable[str]:
    """Lines of a git configuration without comments (`#`, `;` outside quotes), with
    backslash continuations joined."""
    pending = ''
    for raw in text.splitlines():
        out, quoted, i = [], False, 0
        while i < len(raw):
            ch = raw[i]
            if ch == '\\' and i + 1 < len(raw):
                out.append(raw[i:i + 2])
                i += 2
                continue
            if ch == '"':
                quoted = not quoted
            elif ch in '#;' and not quoted:
                break
            out.append(ch)
            i += 1
        line = pending + ''.join(out)
        if raw.endswith('\\') and len(out) and out[-1] == '\\':
            pending = line[:-1]
            continue
        pending = ''
        yield line


def _entries(text: str) -> Iterable[tuple[str, str]]:
    """(section.key lowercase, value) of a git configuration text."""
    section = ''
    for line in _logical_lines(text):
        line = line.strip()
        while line.startswith('['):
            m = _SECTION.match(line)
            if not m:
                line = ''
                break
            name, sub = m.group(1).lower(), m.group(2)
            if '.' in name and sub is None:            # [section.sub], the old spelling
                name, sub = name.split('.', 1)
            section = name + (f'.{sub.lower()}' if sub is not None else '')
            line = line[m.end():].strip()
        k = _KEY.match(line) if line else None
        if k and section:
            yield f'{section}.{k.group(1).lower()}', (k.group(2) or '').strip()


def git_config_danger(text: str) -> list[str]:
    """The keys of a git configuration (file text) that make git run a command, as
    ``section.key`` (``alias.x`` for an alias that starts a shell); empty: inert."""
    found = []
    for key, value in _entries(text):
        bang = value.strip('"').lstrip().startswith('!')
        if _GIT_EXEC.fullmatch(key) or (bang and _BANG_KEYS.fullmatch(key)):
            found.append(key)
    return list(dict.fromkeys(found))


def hooks_paths(workspace: Path) -> list[Path]:
    """The folders ``core.hooksPath`` of the workspace's own git configuration names, when
    they lie in the workspace (git runs their files as hooks)."""
    try:
        with open(workspace / '.git' / 'config', encoding='utf-8', errors='replace') as f:
            text = f.read(GIT_CONFIG_READ_MAX)
    except OSError:
        return []
    out = []
    for key, value in _entries(text):
        if key == 'core.hookspath' and value:
            p = Path(os.path.expanduser(value.strip('"')))
            p = Path(os.path.normpath(workspace / p))
            if p == workspace or workspace in p.parents:
                out.append(p)
    return out


def kernel_refusal(rel: str, path: Path, source: Path | None = None,
                   hook_dirs: Iterable[Path] = ()) -> str | None:
    """Why a file a sandboxed command wrote at `path` (its content now at `source`) is not
    kept, or None: a trap, except a git configuration with no key that runs a command (what
    `git init`, `git config user.name` or `git remote add` write)."""
    why = _spelling(os.path.normpath(str(path)), hook_dirs)
    if why is None:
        return None
    if why == GIT_CONFIG:
        try:
            with open(source or path, 'rb') as f:
                text = f.read(GIT_CONFIG_READ_MAX + 1).decode('utf-8', errors='replace')
        except OSError as exc:
            return f'{rel}: {GIT_CONFIG} could not be checked ({exc.strerror}); not kept'
        if len(text) > GIT_CONFIG_READ_MAX:
            return f'{rel}: {GIT_CONFIG} is larger than {GIT_CONFIG_READ_MAX} bytes; not kept'
        keys = git_config_danger(text)
        if not keys:
            return None
        return (f'{rel}: {GIT_CONFIG} with {", ".join(keys)}, which makes git run a command; '
                'not kept')
    return f'{rel}: {why}; tools never plant files that code runs on its own; not kept'


def write_refusal(path: 'str | os.PathLike', root: 'str | os.PathLike | None' = None,
                  hook_dirs: Iterable[Path] = ()) -> str | None:
    """One line: why the file tools refuse to write `path` (a trap), or None."""
    why = trap_reason(path, root, hook_dirs)
    if why is None:
        return None
    if why == GIT_CONFIG:
        why += ' (git config through bash keeps it inert: keys that run a command are refused)'
    return f'{path}: {why}; tools never write files that code runs on its own'
