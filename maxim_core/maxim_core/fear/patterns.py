"""The fear gate's deterministic layer: known-dangerous tool calls, found despite obfuscation.

Every string argument is classified by what the tool does with it (ARG_KINDS: a shell line,
a path read or written, a regex, free text, an outbound message, file content), and only the
checks that make sense for that kind run: "rm -rf /" said to the console is harmless, the same
text in a bash command is not. Unknown (user) tools get every check on every string.

Before matching, a shell line is normalised the way the shell itself would see it:
unicode look-alikes and zero-width characters (NFKC + a confusables map), ANSI-C `$'\\x72m'`
strings, quoting and backslashes (`r''m`, `"r"m`, `\\rm`), simple variables (`a=rm; $a`,
`${IFS}`), command substitutions and process substitutions (scanned as commands of their
own), `bash -c`/`python -c` payloads, and base64 or hex payloads (decoded and scanned; an
encoded payload piped into a shell is blocked whatever it says).

Beyond strings, the rules name classes of behaviour, so that a new spelling of a known kind
is still caught:
- interpreter one-liners (python -c, perl -e, ruby -e, node -e) are read for what their code
  does by API: deleting (shutil.rmtree, os.remove, unlink, FileUtils.rm_rf, fs.rmSync...),
  sending (urllib, sockets, LWP, Net::HTTP, fetch... with a payload), running a shell from a
  string built at run time, writing files; literal concatenations ('r' + 'm') are joined
  before the literals are scanned as shell lines;
- package installs from a URL, a VCS or a foreign index (pip, uv, npm, gem, cargo...);
- deleting the repository's history (.git, git filter-branch, update-ref -d, reflog expire);
- writing files Python imports or runs by itself (sitecustomize.py, usercustomize.py, *.pth;
  setup.py or conftest.py that start a shell);
- writing a key that makes git run a command (core.fsmonitor, core.hooksPath,
  core.sshCommand, core.pager, alias.*=!..., filters, textconv, includes) into a git
  configuration, by `git config`, `git -c`, a file tool or any command line naming the file;
- program names hidden by a glob (/bin/r?) or by a wrapper (busybox, xargs, find -exec, env,
  nice, timeout, flock, watch...): the wrapped command is judged as itself;
- rewriting the gate's own source (maxim_core/fear, the tools' sandbox);
- secrets in outbound text (respond, speak, send_message, call_user, git_commit): private key
  blocks, cloud keys (AWS, GCP), GitHub, Slack, Stripe and OpenAI-style tokens, JWTs, and
  high-entropy values labelled as a key, secret, token or password (`find_secrets`).

Categories: shell_injection, path_traversal, destructive, privilege_escalation,
exfiltration, credential_access, sandbox_escape (writes outside the sandbox), fork_bomb,
supply_chain. A finding is 'block' (certainly dangerous) or 'ambiguous' (the LLM layer may
decide).
"""

import base64
import binascii
from dataclasses import dataclass
import math
import os
import posixpath
import re
import shlex
import unicodedata
from typing import Any, Iterable, Mapping
from urllib.parse import unquote

BLOCK = 'block'
AMBIGUOUS = 'ambiguous'

CATEGORIES = ('shell_injection', 'path_traversal', 'destructive', 'privilege_escalation',
              'exfiltration', 'credential_access', 'sandbox_escape', 'fork_bomb',
              'supply_chain')

# tool -> {argument: kind}. Kinds: shell, path_read, path_write, glob, regex, text,
# outbound, content, arg (an opaque argument: every check), skip.
ARG_KINDS: dict[str, dict[str, str]] = {
    'bash': {'command': 'shell'},
    'read_file': {'path': 'path_read'},
    'write_file': {'path': 'path_write', 'content': 'content'},
    'edit_file': {'path': 'path_write', 'old_text': 'text', 'new_text': 'content',
                  'context_before': 'text', 'context_after': 'text'},
    'glob': {'pattern': 'glob'},
    'search_code': {'pattern': 'regex', 'path': 'path_read', 'file_glob': 'glob'},
    'run_tests': {'path': 'path_read', 'keyword': 'arg'},
    'git_diff': {'path': 'path_read'},
    'git_commit': {'message': 'outbound', 'paths': 'path_write'},
    'respond': {'text': 'outbound'},
    'speak': {'text': 'outbound', 'voice': 'arg'},
    'send_message': {'to': 'arg', 'text': 'outbound'},
    'call_user': {'text': 'outbound'},
    'track_target': {'target_label': 'arg'},
    'say': {'text': 'text'},
    'think': {'thought': 'text'},
    'examine': {'target': 'text'},
}

_ZERO_WIDTH = dict.fromkeys(map(ord, '\u200b\u200c\u200d\u2060\ufeff\u00ad\u202a\u202b'
                                     '\u202c\u202d\u202e\u2066\u2067\u2068\u2069'), None)
_CONFUSABLES = str.maketrans({
    'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'і': 'i', 'ѕ': 's',
    'ј': 'j', 'ԁ': 'd', 'һ': 'h', 'ӏ': 'l', 'ԛ': 'q', 'ԝ': 'w', 'ѵ': 'v', 'к': 'k', 'м': 'm',
    'т': 't', 'в': 'b', 'н': 'h', 'г': 'r', 'п': 'n', 'ɡ': 'g', 'ⅼ': 'l',
    'А': 'A', 'Е': 'E', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'Х': 'X', 'М': 'M', 'К': 'K',
    'ο': 'o', 'α': 'a', 'ν': 'v', 'ρ': 'p', 'τ': 't', 'ι': 'i', 'κ': 'k', 'ε': 'e', 'υ': 'u',
    'μ': 'u', 'η': 'n', 'ѡ': 'w', '∕': '/', '⁄': '/', '／': '/', '‐': '-', '‑': '-',
    '‒': '-', '–': '-', '—': '-', '−': '-', 'ǀ': '|', '∣': '|', '；': ';', '＆': '&',
})

SYSTEM_DIRS = ('/bin', '/boot', '/dev', '/etc', '/lib', '/lib32', '/lib64', '/opt', '/proc',
               '/root', '/sbin', '/srv', '/sys', '/usr', '/var', '/home', '/mnt', '/media',
               '/snap', '/run')
SAFE_DEVICES = ('/dev/null', '/dev/stdout', '/dev/stderr', '/dev/zero', '/dev/urandom',
                '/dev/random', '/dev/tty', '/dev/fd/1', '/dev/fd/2')
_SECRET_RE = re.compile(
    r'(^|/)\.ssh(/|$)|id_(rsa|dsa|ecdsa|ed25519)\b|/etc/(shadow|gshadow|sudoers|master\.passwd)'
    r'|/etc/passwd\b|(^|/)\.aws/(credentials|config)|(^|/)\.netrc\b|(^|/)\.git-credentials\b'
    r'|(^|/)\.gnupg(/|$)|/proc/[^/\s]+/environ|(^|/)\.kube/config|(^|/)\.docker/config\.json'
    r'|(^|/)\.config/gcloud|(^|/)\.password-store|\.pem\b|\.p12\b|(^|/)\.pgpass\b'
    r'|(^|/)\.bash_history\b|/var/run/secrets')
_STARTUP_FILE = re.compile(r'(^|/)\.(bashrc|bash_profile|profile|zshrc|zprofile|bash_login|'
                           r'bash_logout|xinitrc|xprofile)$|(^|/)\.ssh/authorized_keys|'
                           r'(^|/)\.config/autostart/|/etc/cron|/var/spool/cron'
                           r'|(^|/)(sitecustomize|usercustomize)\.py$|\.pth$')
# Python files that run code by themselves: at install (setup.py) or test collection.
_AUTORUN_PY = re.compile(r'(^|/)(setup|conftest|noxfile|__main__)\.py$')
# A git configuration file, and the keys in one that make git run a command (the list of
# maxim_core/tools/traps.py, which keeps what a command writes there inert; a test holds the
# two equal). In a command line: dotted (`git config core.fsmonitor x`, `git -c alias.x=!sh`);
# in a file: `[core]` then `fsmonitor = x`.
_GIT_CONFIG_FILE = re.compile(r'(^|[\s/"\'=])(\.git/(config|config\.worktree|modules/\S+?/config)'
                              r'|\.gitconfig|etc/gitconfig|\.config/git/config)(?![\w.-])')
_GIT_EXEC_DOTTED = re.compile(
    r'\b(core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy'
    r'|alternaterefscommand)|sequence\.editor|pager\.[\w-]+|filter\.[^\s=]+\.(clean|smudge'
    r'|process)|diff\.[^\s=]+\.(textconv|command)|diff\.external|merge\.[^\s=]+\.driver'
    r'|credential\.([^\s=]+\.)?helper|gpg\.([^\s=]+\.)?program|include(if\.[^\s=]+)?\.path'
    r'|uploadpack\.packobjectshook|remote\.[^\s=]+\.(uploadpack|receivepack|vcs)'
    r'|protocol\.([^\s=]+\.)?allow)\b|\b(alias\.[\w.-]+|submodule\.[^\s=]+\.update)'
    r'\s*[= ]\s*["\']?\s*!', re.IGNORECASE)
_GIT_EXEC_KEYS = re.compile(
    r'core\.(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy|alternaterefscommand)'
    r'|sequence\.editor|pager\..+|filter\..+\.(clean|smudge|process)|diff\..+\.(textconv'
    r'|command)|diff\.external|merge\..+\.driver|credential\.helper|credential\..+\.helper'
    r'|gpg\.program|gpg\..+\.program|include\.path|includeif\..+\.path'
    r'|uploadpack\.packobjectshook|remote\..+\.(uploadpack|receivepack|vcs)|protocol\.allow'
    r'|protocol\..+\.allow|web\.browser|browser\..+\.(cmd|path)|(difftool|mergetool)\..+\.cmd'
    r'|sendemail\.(tocmd|cccmd|smtpserver)|sendemail\..+\.smtpserver|man\..+\.cmd|man\.viewer'
    r'|instaweb\.httpd|ssh\.variant|receive\.procreceiverefs')
# A key that runs a command, as a line of the file, in a shell line or a fragment.
_GIT_EXEC_INI = re.compile(
    r'(^|\s|["\';/|,:]|\\[nt])(fsmonitor|hookspath|sshcommand|pager|editor|askpass|gitproxy'
    r'|alternaterefscommand|textconv|smudge|clean|process|driver|helper|program'
    r'|packobjectshook|uploadpack|receivepack|vcs|cmd|tocmd|cccmd|smtpserver|viewer|httpd'
    r'|variant|procreceiverefs|allow|external|path)\s*=|=\s*["\']?\s*!', re.IGNORECASE)
_GIT_SECTION = re.compile(r'\[\s*([A-Za-z0-9.-]+)(?:\s+"((?:[^"\\]|\\.)*)")?\s*\]')
_GIT_KEY = re.compile(r'([A-Za-z][A-Za-z0-9-]*)\s*(?:=\s*(.*))?$')


def git_config_exec(text: str) -> list[str]:
    """The keys of a git configuration text that make git run a command (section.key)."""
    found, section = [], ''
    for raw in text.replace('\\n', '\n').replace('\\t', '\t').splitlines():
        line = re.sub(r'\s[#;].*$|^[#;].*$', '', raw).strip()
        while line.startswith('['):
            m = _GIT_SECTION.match(line)
            if not m:
                line = ''
                break
            name, sub = m.group(1).lower(), m.group(2)
            if '.' in name and sub is None:
                name, sub = name.split('.', 1)
            section = name + (f'.{sub.lower()}' if sub is not None else '')
            line = line[m.end():].strip()
        k = _GIT_KEY.match(line) if line and section else None
        if not k:
            continue
        key = f'{section}.{k.group(1).lower()}'
        bang = (k.group(2) or '').strip().strip('"').lstrip().startswith('!')
        if _GIT_EXEC_KEYS.fullmatch(key) or bang and re.fullmatch(
                r'alias\..+|submodule\..+\.update', key):
            found.append(key)
    return list(dict.fromkeys(found))


# The gate's own source and the tools' containment: never a write target.
_OWN_DIRS = tuple(sorted({os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          os.path.dirname(os.path.dirname(os.path.realpath(__file__)))}))
_GATE_SOURCE = re.compile(r'(^|/)maxim_core/(fear(/|$)|tools/(sandbox|filesystem)\.py$)')
_SECRET_VALUE = re.compile(
    r'-----BEGIN [A-Z ]*PRIVATE KEY-----|\bAKIA[0-9A-Z]{16}\b|\bgh[pousr]_[A-Za-z0-9]{30,}'
    r'|\bsk-[A-Za-z0-9_\-]{20,}|\bxox[abprs]-[A-Za-z0-9\-]{10,}|\b[a-z_]*root:\$[1256y]\$'
    r'|(password|passwd|secret|api[_-]?key|token)\s*[:=]\s*\S{6,}', re.I)

# Secrets in outbound text: (kind, pattern).
_SECRET_KINDS = (
    ('private_key', re.compile(r'-----BEGIN [A-Z0-9 ]*PRIVATE KEY( BLOCK)?-----')),
    ('aws_access_key', re.compile(r'\b(AKIA|ASIA|AGPA|AIDA|AROA)[0-9A-Z]{16}\b')),
    ('aws_secret_key', re.compile(r'(?i)aws.{0,20}secret.{0,20}[:=]\s*[\'"]?'
                                  r'[A-Za-z0-9/+]{40}\b')),
    ('gcp_api_key', re.compile(r'\bAIza[0-9A-Za-z_\-]{35}\b')),
    ('gcp_service_account', re.compile(r'"type"\s*:\s*"service_account"|'
                                       r'"private_key_id"\s*:')),
    ('gcp_oauth_token', re.compile(r'\bya29\.[0-9A-Za-z_\-]{20,}')),
    ('github_token', re.compile(r'\b(gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})')),
    ('slack_token', re.compile(r'\bxox[abposr]-[A-Za-z0-9\-]{10,}|\bxapp-\d-[A-Za-z0-9\-]{10,}'
                               r'|hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/\w+')),
    ('api_key', re.compile(r'\b(sk|rk)_(live|test)_[0-9A-Za-z]{16,}|\bsk-[A-Za-z0-9_\-]{20,}')),
    ('jwt', re.compile(r'\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}')),
    ('password_hash', re.compile(r'\b[a-z_]*root:\$[1256y]\$')),
)
_LABELLED_SECRET = re.compile(
    r'(?i)\b(?:[a-z0-9_]*[_-])?(api[_-]?key|apikey|secret|token|passwd|password|passphrase|'
    r'access[_-]?key|auth[_-]?key|client[_-]?secret|private[_-]?key|credentials?)\b'
    r'["\']?\s*(?:[:=]|\bis\b)\s*["\']?([^\s"\',;]{8,})')


def _entropy(text: str) -> float:
    """Shannon entropy in bits per character."""
    counts = {c: text.count(c) for c in set(text)}
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


def find_secrets(text: str) -> list[str]:
    """The kinds of secret found in `text` (outbound text must carry none)."""
    text = normalize_unicode(text)
    found = [kind for kind, rx in _SECRET_KINDS if rx.search(text)]
    for m in _LABELLED_SECRET.finditer(text):
        label, value = m.group(1).lower(), m.group(2)
        mixed = re.search(r'[A-Za-z]', value) and re.search(r'[\d\W_]', value)
        if mixed and (_entropy(value) >= 3.0 or label.startswith('pass')):
            found.append('labelled_secret')
            break
    return found


NETWORK_TOOLS = frozenset('curl wget nc ncat netcat socat telnet ftp sftp scp rsync ssh tftp '
                          'http https xh aria2c lftp'.split())
INTERPRETERS = frozenset('sh bash dash zsh ksh csh tcsh fish ash busybox python python2 '
                         'python3 perl ruby node nodejs php lua tclsh'.split())
_SHELLS = frozenset('sh bash dash zsh ksh csh tcsh fish ash'.split())
_PREFIXES = frozenset('env nohup time command builtin exec nice ionice stdbuf xargs timeout '
                      'unbuffer setsid chronic caffeinate then do else busybox toybox flock '
                      'taskset chrt strace ltrace nocache catchsegv'.split())
# Programs that change or remove what they are given (judged on xargs' and find's inputs).
_MUTATORS = frozenset('rm shred unlink rmdir mv chmod chown chgrp dd truncate cp tee ln '
                      'sed'.split())
_CODE_LANGS = frozenset('python python2 python3 perl ruby node nodejs php lua'.split())
# What interpreter code does, by API (python, perl, ruby, node, php).
_CODE_DELETE = re.compile(
    r'shutil\.rmtree|\bos\.(remove|unlink|rmdir|removedirs)\b|\.(unlink|rmdir)\(|\bunlink\b'
    r'|\brmtree\b|\brmdir\b|File\.(delete|unlink)|FileUtils\.(rm|rm_r|rm_rf|rm_f|remove\w*)'
    r'|Dir\.(delete|rmdir|unlink)|fs\.(rm|rmSync|unlink|unlinkSync|rmdir|rmdirSync)\b'
    r'|fs\.promises\.(rm|unlink|rmdir)|\.(rmSync|unlinkSync|rmdirSync|rm_rf|rm_r)\b'
    r'|\bos\.truncate|send2trash')
_CODE_HOME = re.compile(r'Path\.home|expanduser|\bHOME\b|homedir\(|getpwuid|Dir\.home')
_CODE_NETWORK = re.compile(
    r'urllib|http\.client|\brequests\b|httpx|aiohttp|\bsocket\b|smtplib|ftplib|telnetlib'
    r'|paramiko|LWP|HTTP::Tiny|IO::Socket|Net::(HTTP|FTP|SMTP)|TCPSocket|open-uri|URI\.open'
    r'|\bfetch\(|require\([\'"](https?|net|dgram|tls)[\'"]\)|XMLHttpRequest|curl_exec'
    r'|file_get_contents\([\'"]https?:')
_CODE_SENDS = re.compile(
    r'data\s*=|\.(post|put|patch)\(|\.send(all|to)?\(|\.write\(|\.request\(|\bbody\s*:'
    r'|(POST|PUT)|post_form|->post|urlopen\([^)]*,|sendmail|storbinary|\.connect\(')
_CODE_SHELL = re.compile(
    r'\bos\.(system|popen|exec\w*|spawn\w*)|subprocess|pty\.spawn|\bsystem\s*\(|\bexec\s*\('
    r'|child_process|execSync|spawnSync|IO\.popen|Open3|%x\{|\bqx[{(/]|`|shell_exec|passthru'
    r'|\beval\s*\(|__import__')
_CODE_BUILT = re.compile(r'[\'"]\s*\+|\+\s*[\'"]|\bchr\(|\.join\(|decode\(|\[::-1\]'
                         r'|\bpack\(|fromCharCode|\.reverse\(|%c|\\x[0-9a-f]{2}|b64decode'
                         r'|base64', re.I)
_CODE_WRITE = re.compile(r'open\([^)]*[\'"][wax]b?\+?[\'"]|write_text|write_bytes|File\.write'
                         r'|fs\.(writeFileSync|writeFile|appendFileSync|appendFile)'
                         r'|open\s*\(\s*\w*\s*,\s*[\'"]>|copyfile|shutil\.(copy|move)'
                         r'|os\.(rename|replace)')
_PIP_INDEX_FLAGS = ('-i', '--index-url', '--extra-index-url', '-f', '--find-links',
                    '--trusted-host', '--registry', '--source', '--index', '--extra-index',
                    '--default-index', '-s')
_INSTALLERS = frozenset('pip pip3 pipx uv poetry npm pnpm yarn gem cargo conda mamba '
                        'easy_install bun deno'.split())
_PRIV_COMMANDS = frozenset('sudo su doas pkexec runuser visudo usermod useradd userdel groupadd '
                           'gpasswd passwd chpasswd adduser addgroup setcap nsenter unshare '
                           'mount umount insmod modprobe rmmod chroot capsh'.split())
_DESTRUCTIVE_COMMANDS = frozenset('mkfs wipefs shred fdisk sfdisk parted gdisk sgdisk '
                                  'shutdown reboot halt poweroff mkswap swapoff'.split())
_SEPARATORS = (';', '&&', '||', '|', '&', '|&', '(', ')', ';;', '\n')
_B64_TOKEN = re.compile(r'[A-Za-z0-9+/]{8,}={0,2}')
_HEX_ESC = re.compile(r'(\\x[0-9a-fA-F]{2}){2,}')
_OCT_ESC = re.compile(r'(\\[0-7]{3}){2,}')


@dataclass(frozen=True)
class Finding:
    """One reason for concern."""

    category: str
    rule: str
    detail: str
    severity: str = BLOCK
    risk: float = 1.0


@dataclass(frozen=True)
class ScanPolicy:
    """Where the sandbox is: writes outside `root` and `write_roots` are an escape."""

    root: str | None = None
    write_roots: tuple = ()
    mode: str = 'passive'


# -- normalisation --------------------------------------------------------------------------
def normalize_unicode(text: str) -> str:
    """Zero-width and bidi controls removed, NFKC, look-alike letters mapped to ASCII."""
    return unicodedata.normalize('NFKC', text.translate(_ZERO_WIDTH)).translate(_CONFUSABLES)


def _decode_escapes(body: str) -> str:
    try:
        return body.encode('latin-1', 'backslashreplace').decode('unicode_escape')
    except UnicodeDecodeError:
        return body


def decode_ansi_c(text: str) -> str:
    """`$'\\x72\\x6d'` -> `'rm'` (the shell's ANSI-C quoting)."""
    return re.sub(r"\$'((?:[^'\\]|\\.)*)'",
                  lambda m: "'" + _decode_escapes(m.group(1)).replace("'", '') + "'", text)


def expand_variables(text: str, max_rounds: int = 3) -> str:
    """Substitute simple `NAME=value` assignments made in the same line, and IFS."""
    text = re.sub(r'\$\{IFS[^}]*\}|\$IFS\b', ' ', text)
    assigns: dict[str, str] = {}
    for m in re.finditer(r'(?:^|[\s;&|(])(?:export\s+|local\s+|declare\s+)?'
                         r'([A-Za-z_][A-Za-z0-9_]*)=("[^"]*"|\'[^\']*\'|[^\s;&|]*)', text):
        assigns[m.group(1)] = m.group(2).strip('\'"')
    if not assigns:
        return text
    for _ in range(max_rounds):
        new = re.sub(r'\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)',
                     lambda m: assigns.get(m.group(1) or m.group(2), m.group(0)), text)
        if new == text:
            break
        text = new
    return text


def _balanced(text: str, start: int) -> int:
    """Index of the parenthesis closing the one at `start` (or len(text))."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] == '(':
            depth += 1
        elif text[i] == ')':
            depth -= 1
            if depth == 0:
                return i
    return len(text)


def extract_substitutions(text: str) -> tuple[str, list[str]]:
    """`$(...)`, backticks, `<(...)`, `>(...)` cut out (each is a command of its own)."""
    inner: list[str] = []
    out = []
    i = 0
    while i < len(text):
        two = text[i:i + 2]
        if two in ('$(', '<(', '>('):
            end = _balanced(text, i + 1)
            inner.append(text[i + 2:end])
            out.append(' $SUBST ' if two == '$(' else ' /dev/fd/63 ')
            i = end + 1
        elif text[i] == '`':
            end = text.find('`', i + 1)
            end = len(text) if end < 0 else end
            inner.append(text[i + 1:end])
            out.append(' $SUBST ')
            i = end + 1
        else:
            out.append(text[i])
            i += 1
    return ''.join(out), inner


def decode_payloads(text: str) -> list[str]:
    """Base64, hex and octal payloads that decode to printable text."""
    out = []
    for m in _B64_TOKEN.finditer(text):
        token = m.group(0)
        if len(token) % 4 == 1:
            continue
        try:
            raw = base64.b64decode(token + '=' * (-len(token) % 4), validate=True)
            decoded = raw.decode('utf-8')
        except (binascii.Error, UnicodeDecodeError, ValueError):
            continue
        if decoded and sum(c.isprintable() or c in '\n\t' for c in decoded) / \
                len(decoded) > 0.95 and re.search(r'[a-z]{2}', decoded):
            out.append(decoded)
    for rx in (_HEX_ESC, _OCT_ESC):
        for m in rx.finditer(text):
            out.append(_decode_escapes(m.group(0)))
    return out


def shell_segments(line: str) -> list[tuple[str, list[str], list[tuple[str, str]]]]:
    """(separator before, words, redirections) per simple command, quotes removed."""
    lexer = shlex.shlex(line.replace('\n', ' ; '), posix=True, punctuation_chars='();<>|&')
    lexer.whitespace_split = True
    lexer.commenters = ''
    try:
        tokens = list(lexer)
    except ValueError:
        tokens = re.sub(r'[\'"\\]', '', line).replace('\n', ' ; ').split()
    segments = []
    words: list[str] = []
    redirs: list[tuple[str, str]] = []
    sep = ''
    pending = None
    for tok in tokens:
        if pending is not None:
            redirs.append((pending, tok))
            pending = None
        elif tok in _SEPARATORS:
            if words or redirs:
                segments.append((sep, words, redirs))
            words, redirs, sep = [], [], tok
        elif set(tok) <= set('<>&') and '>' in tok or tok in ('<', '<<', '<<<'):
            pending = tok
        elif re.fullmatch(r'[0-9]?>{1,2}&?[0-9]?|&>{1,2}', tok):
            pending = tok
        elif tok in ('{', '}', '!', 'then', 'do', 'fi', 'done', 'else', 'elif', 'esac'):
            continue
        else:
            words.append(tok)
    if words or redirs:
        segments.append((sep, words, redirs))
    return segments


# -- shell rules ----------------------------------------------------------------------------
class _Scanner:
    def __init__(self, policy: ScanPolicy):
        self.policy = policy
        self.findings: list[Finding] = []
        self.root = policy.root
        self.decoding = False
        roots = [policy.root] if policy.root else []
        roots += list(policy.write_roots)
        if policy.mode == 'singularity':
            roots.append('/tmp')
        self.write_roots = [posixpath.normpath(os.path.expanduser(r)) for r in roots]

    def add(self, category: str, rule: str, detail: str, severity: str = BLOCK,
            risk: float | None = None) -> None:
        if risk is None:
            risk = 0.95 if severity == BLOCK else 0.5
        self.findings.append(Finding(category, rule, detail[:160], severity, risk))

    # paths -------------------------------------------------------------------------------
    def abspath(self, path: str) -> str:
        path = os.path.expanduser(path.replace('$HOME', '~').replace('${HOME}', '~'))
        if not path.startswith('/'):
            path = posixpath.join(self.root or '/__workspace__', path)
        return posixpath.normpath(path)

    def escapes_root(self, path: str) -> bool:
        if path.startswith(('/', '~', '$HOME', '${HOME}')):
            return False
        base = self.root or '/__workspace__'
        full = posixpath.normpath(posixpath.join(base, path))
        return not (full == base or full.startswith(base.rstrip('/') + '/'))

    def check_path(self, path: str, write: bool, where: str) -> None:
        if not path:
            return
        decoded = path
        for _ in range(3):
            decoded = unquote(decoded)
        decoded = normalize_unicode(decoded).replace('\\', '/')
        if '\x00' in decoded:
            self.add('path_traversal', 'nul_byte', f'{where}: NUL byte in a path')
        if decoded != path and '..' in decoded and '..' not in path:
            self.add('path_traversal', 'encoded_traversal', f'{where}: encoded ..: {path}')
        if '..' in decoded.split('/') and self.escapes_root(decoded):
            self.add('path_traversal', 'dotdot_escape', f'{where}: {path} leaves the workspace')
        full = self.abspath(decoded)
        if _SECRET_RE.search(decoded) or _SECRET_RE.search(full):
            self.add('credential_access', 'secret_path', f'{where}: {path}')
        if write:
            self.check_write_target(decoded, where)

    def check_write_target(self, path: str, where: str) -> None:
        if path in ('-', '') or path.startswith('$SUBST'):
            return
        full = self.abspath(path)
        if full in SAFE_DEVICES:
            return
        if self.is_gate_source(full):
            self.add('sandbox_escape', 'gate_tamper', f'{where}: writes {path}, the safety '
                     "gate's own source")
            return
        if _STARTUP_FILE.search(full):
            self.add('sandbox_escape', 'startup_file', f'{where}: writes {path} (persistence)')
            return
        if re.match(r'/dev/(sd|hd|nvme|mmcblk|vd|xvd|disk|mapper|md|loop|mem|kmem|port)', full):
            self.add('destructive', 'raw_device_write', f'{where}: writes the device {path}')
            return
        inside = any(full == r or full.startswith(r.rstrip('/') + '/') for r in self.write_roots)
        if inside:
            return
        if self.root is not None or any(full == d or full.startswith(d + '/')
                                        for d in SYSTEM_DIRS):
            self.add('sandbox_escape', 'write_outside', f'{where}: writes {path} outside '
                     'the sandbox')

    @staticmethod
    def is_gate_source(full: str) -> bool:
        return bool(_GATE_SOURCE.search(full)) or any(
            full == d or full.startswith(d + '/') for d in _OWN_DIRS)

    @staticmethod
    def is_history(path: str) -> bool:
        return '.git' in [p for p in path.replace('\\', '/').split('/') if p]

    # shell -------------------------------------------------------------------------------
    def scan_shell(self, line: str, where: str, depth: int = 0) -> None:
        if depth > 4 or not line.strip():
            return
        text = expand_variables(decode_ansi_c(normalize_unicode(line)))
        self.whole_line_rules(text, where)
        outer, inner = extract_substitutions(text)
        for sub in inner:
            self.scan_shell(sub, where + ' (substitution)', depth + 1)
        for payload in decode_payloads(text):
            self.scan_shell(payload, where + ' (decoded payload)', depth + 1)
        self.decoding = any(re.search(r'base64|xxd|openssl|\\x[0-9a-fA-F]|rev\b', sub)
                            for sub in inner)
        segments = shell_segments(outer)
        previous = None
        for sep, words, redirs in segments:
            for op, target in redirs:
                if '>' in op:
                    self.check_path(target, True, where)
                    if _AUTORUN_PY.search(target) and _CODE_SHELL.search(text):
                        self.add('sandbox_escape', 'autorun_shell', f'{where}: writes {target}'
                                 ', which Python runs by itself, with code that starts a shell')
                else:
                    self.check_path(target, False, where)
            if words:
                self.command_rules(words, sep, previous, where, depth)
            previous = words
        self.pipeline_rules(segments, where)

    def whole_line_rules(self, text: str, where: str) -> None:
        compact = re.sub(r'\s+', '', text)
        if re.search(r'(\w+|:)\(\)\{[^}]*\1\|\1&?', compact) or ':(){:|:&};:' in compact \
                or re.search(r'forkwhilefork|while\(?(true|1|:)\)?;?(do)?[^;]*&;?done', compact) \
                or re.search(r'(while|for).{0,40}os\.fork\(\)', compact) \
                or '%0|%0' in compact or re.search(r'fork\(\).{0,20}fork\(\)', compact):
            self.add('fork_bomb', 'fork_bomb', f'{where}: self-replicating process pattern')
        if re.search(r'/dev/(tcp|udp)/', text):
            self.add('exfiltration', 'dev_tcp', f'{where}: raw network socket via /dev/tcp')
        if re.search(r'\b(pty\.spawn|socket\.socket|subprocess\.call\(\[.?/bin/(ba)?sh)', text) \
                and re.search(r'connect|spawn', text):
            self.add('exfiltration', 'reverse_shell', f'{where}: socket-driven shell')
        if re.search(r'shutil\.rmtree\(\s*[\'"]?(/|~|\$HOME)[\'"]?\s*[,)]', text):
            self.add('destructive', 'rmtree_root', f'{where}: rmtree of / or home')
        if re.search(r'os\.(setuid|setgid|seteuid)\(\s*0\s*\)', text):
            self.add('privilege_escalation', 'setuid0', f'{where}: setuid(0)')
        if re.search(r'requests\.(post|put)\(|urllib\.request\.urlopen\([^)]*data=', text):
            self.add('exfiltration', 'http_upload', f'{where}: HTTP upload from code')
        self.git_config_rule(text, where)
        if re.search(r'\b(drop\s+(table|database|schema)|truncate\s+table)\b', text, re.I) or \
                re.search(r'\bdelete\s+from\s+\w+\s*(;|$|")', text, re.I):
            self.add('destructive', 'sql_drop', f'{where}: destructive SQL')

    def git_config_rule(self, text: str, where: str) -> None:
        """A key that makes git run a command, written into a git configuration: by `git
        config` (or `git -c`, which runs it at once), or by any command that names a git
        configuration file (echo >>, tee, sed -i, cp...). A person who later runs git in
        that checkout would run the command."""
        words = text.split()
        for i, w in enumerate(words):
            if os.path.basename(w.strip('"\'')) != 'git':
                continue
            rest = ' '.join(words[i + 1:])
            if re.search(r'\s(--get|--get-all|--get-regexp|--list|-l|get|list)(\s|$)',
                         ' ' + re.split(r'[;&|]', rest, 1)[0]):
                continue                                   # reads the configuration
            if re.match(r'(-\S+\s+)*(-C\s+\S+\s+)*config\b', rest) or re.match(
                    r'(\S+\s+)*?-c\s*["\']?\S+=', rest):
                head = re.split(r'[;&|]', rest, 1)[0]
                for m in _GIT_EXEC_DOTTED.finditer(head):
                    key = m.group(0).lower()
                    if re.search(r'-c\s*["\']?$', head[:m.start()]) and \
                            re.match(r'(core\.)?pager', key):
                        continue             # git -c core.pager=cat log: runs a pager, now
                    self.add('sandbox_escape', 'git_config_exec', f'{where}: sets '
                             f'{m.group(0).strip()}, which makes git run a command')
                    return
        if _GIT_CONFIG_FILE.search(text) and (_GIT_EXEC_DOTTED.search(text)
                                              or git_config_exec(text)
                                              or _GIT_EXEC_INI.search(text)):
            self.add('sandbox_escape', 'git_config_exec', f'{where}: writes a key that makes '
                     'git run a command into a git configuration')

    def command_rules(self, words: list[str], sep: str, previous: list[str] | None,
                      where: str, depth: int) -> None:
        i = 0
        while i < len(words) and re.fullmatch(r'[A-Za-z_][A-Za-z0-9_]*=.*', words[i]):
            i += 1
        wrapped = []
        while i < len(words):
            prog = os.path.basename(words[i]).lower()
            if re.search(r'[?*]|\[.*\]', words[i]) and words[i] not in ('[', '[['):
                self.add('shell_injection', 'globbed_command', f'{where}: the program name '
                         f'{words[i]!r} is a glob: what runs is hidden')
            if prog in _PRIV_COMMANDS:
                self.add('privilege_escalation', f'cmd_{prog}', f'{where}: {prog}')
                i += 1
                while i < len(words) and words[i].startswith('-'):
                    i += 2 if words[i] in ('-u', '-g', '-c') and prog != 'su' else 1
                if prog == 'su' and i < len(words) and words[i] == '-c':
                    i += 1
                continue
            if prog in _PREFIXES:
                wrapped.append(prog)
                i += 1
                while i < len(words) and (words[i].startswith('-') or
                                          re.fullmatch(r'(0x)?[0-9a-fA-F.,-]+[smhd]?', words[i])
                                          or re.fullmatch(r'[A-Za-z_]\w*=.*', words[i])):
                    i += 2 if words[i] in ('-n', '-I', '-L', '-P', '-s', '-u', '-E', '-d',
                                           '-k', '-a', '-o', '-e') and prog in (
                        'xargs', 'timeout', 'strace', 'ltrace', 'nice', 'env', 'ionice',
                        'stdbuf', 'flock') else 1
                if prog == 'flock' and i < len(words):
                    i += 1          # the lock file
                continue
            break
        if i >= len(words):
            return
        prog = os.path.basename(words[i]).lower()
        args = words[i + 1:]
        if 'xargs' in wrapped and prog in _MUTATORS | NETWORK_TOOLS | INTERPRETERS:
            self.xargs_rule(prog, args, previous, where, depth)
        flags = ''.join(a[1:] for a in args if a.startswith('-') and not a.startswith('--'))
        long_flags = [a for a in args if a.startswith('--')]
        targets = [a for a in args if not a.startswith('-')]
        for a in targets:
            if '/' in a or a.startswith(('~', '.')):
                self.check_path(a, False, where)
        detail = f'{where}: {" ".join(words[i:])[:120]}'
        if prog.startswith('$subst'):
            if self.decoding:
                self.add('shell_injection', 'decoded_command', f'{detail} (decoded payload '
                         'run as a command)')
            else:
                self.add('shell_injection', 'computed_command', detail, AMBIGUOUS)
        if prog in _DESTRUCTIVE_COMMANDS or prog.startswith('mkfs'):
            self.add('destructive', f'cmd_{prog}', detail)
        elif prog == 'rm':
            self.rm_rule(targets, flags, long_flags, detail)
        elif prog in ('rmdir', 'unlink'):
            for t in targets:
                self.dangerous_target(t, detail, recursive=False)
        elif prog == 'dd':
            for a in args:
                if a.startswith('of='):
                    self.check_write_target(a[3:], where)
        elif prog in ('chmod', 'chown', 'chgrp'):
            self.perm_rule(prog, args, flags, targets, detail, where)
        elif prog == 'find':
            self.find_exec_rule(args, where, depth)
            if any(a in ('-delete', '-exec', '-execdir') for a in args) and \
                    any(a == '-delete' or a in ('rm', '/bin/rm', 'shred') for a in args):
                filtered = any(a in ('-name', '-iname', '-path', '-ipath', '-regex', '-newer',
                                     '-mtime', '-mmin', '-empty', '-size') for a in args)
                for t in targets[:1]:
                    if filtered and t in ('.', './') + tuple(self.write_roots):
                        continue
                    self.dangerous_target(t, detail, recursive=True)
        elif prog in ('mv', 'cp', 'install', 'ln', 'tee', 'touch', 'truncate', 'mkdir'):
            dests = targets if prog in ('tee', 'touch', 'truncate', 'mkdir') else targets[-1:]
            if prog == 'mv':
                for t in targets[:-1]:
                    self.dangerous_target(t, detail, recursive=True)
                if targets and targets[-1] == '/dev/null':
                    self.add('destructive', 'mv_devnull', detail)
            if prog == 'truncate':
                dests = [t for t in targets if not re.fullmatch(r'[0-9]+[KMGkmg]?', t)]
            for d in dests:
                self.check_write_target(d, where)
        elif prog == 'sed' and ('i' in flags or '--in-place' in long_flags):
            for t in targets[1:]:
                self.check_write_target(t, where)
        elif prog in ('kill', 'pkill', 'killall'):
            if prog == 'kill' and any(t in ('-1', '1') for t in args):
                self.add('destructive', 'kill_all', detail)
            elif prog == 'killall' or (prog == 'pkill' and any(
                    t in ('-9', '-KILL') for t in args)):
                self.add('destructive', f'cmd_{prog}', detail, AMBIGUOUS)
        elif prog == 'init' and targets[:1] in (['0'], ['6']) or \
                prog == 'systemctl' and any(t in ('poweroff', 'reboot', 'halt', 'stop',
                                                  'disable', 'mask', 'kill') for t in targets):
            self.add('destructive', f'cmd_{prog}', detail)
        elif prog == 'crontab':
            if 'r' in flags:
                self.add('destructive', 'crontab_remove', detail)
            elif targets:
                self.add('sandbox_escape', 'crontab_install', detail)
        elif prog == 'history' and 'c' in flags or prog == 'unset' and 'HISTFILE' in args:
            self.add('destructive', 'anti_forensics', detail)
        elif prog in ('iptables', 'ip6tables', 'nft', 'ufw'):
            self.add('destructive', 'firewall', detail)
        elif prog == 'git':
            self.git_rule(args, detail)
        elif prog in _INSTALLERS:
            self.install_rule(prog, args, detail)
        elif prog in ('watch', 'script', 'parallel'):
            line = ' '.join(a for a in args if not a.startswith('-') and
                            not re.fullmatch(r'[0-9.]+', a))
            self.scan_shell(line, where + f' ({prog})', depth + 1)
        elif prog == 'docker' or prog == 'podman':
            if '--privileged' in args or any(re.match(r'/:/', a) for a in args) or \
                    any(a.startswith('/:') for a in args):
                self.add('privilege_escalation', 'container_escape', detail)
        elif prog == 'eval':
            self.add('shell_injection', 'eval', detail, AMBIGUOUS, 0.6)
            self.scan_shell(' '.join(args), where + ' (eval)', depth + 1)
        elif prog in ('source', '.'):
            if any(t.startswith(('/dev/fd', '/dev/stdin', 'http')) for t in targets):
                self.add('shell_injection', 'source_remote', detail)
        if prog in NETWORK_TOOLS:
            self.network_rule(prog, args, flags, long_flags, targets, detail)
        if prog in ('dig', 'nslookup', 'host') and any('$SUBST' in a for a in args):
            self.add('exfiltration', 'dns_exfil', detail)
        if prog in INTERPRETERS:
            self.interpreter_rule(prog, args, sep, previous, detail, where, depth)

    def dangerous_target(self, target: str, detail: str, recursive: bool) -> None:
        t = target.rstrip('/') or '/'
        full = self.abspath(t)
        if self.is_history(t):
            self.add('destructive', 'history_delete', f'{detail} (the repository history '
                     f'{target})')
        if self.is_gate_source(full):
            self.add('sandbox_escape', 'gate_tamper', f"{detail} (the gate's own source)")
        if t in ('/', '/*', '~', '~/*', '*', '.', '..', './*', '../*', '$HOME', '${HOME}') \
                or full == '/' or full == os.path.expanduser('~'):
            self.add('destructive', 'wipe_root', f'{detail} (target {target})')
        elif t.startswith('$') and not t.startswith('$SUBST'):
            self.add('destructive', 'unknown_target', f'{detail} (target {target})', AMBIGUOUS)
        elif t.startswith('$SUBST'):
            self.add('destructive', 'computed_target', f'{detail} (computed target)', AMBIGUOUS)
        elif any(full == d or full.startswith(d + '/') for d in SYSTEM_DIRS) and \
                not (self.root and (full == self.root or full.startswith(self.root + '/'))):
            self.add('destructive', 'system_path', f'{detail} (target {target})')
        elif self.escapes_root(t) or (full.startswith('/') and self.root and not any(
                full == r or full.startswith(r.rstrip('/') + '/') for r in self.write_roots)
                and recursive):
            self.add('destructive', 'outside_sandbox', f'{detail} (target {target})')

    def rm_rule(self, targets, flags, long_flags, detail) -> None:
        recursive = bool(set(flags) & set('rR')) or '--recursive' in long_flags
        if '--no-preserve-root' in long_flags:
            self.add('destructive', 'no_preserve_root', detail)
        for t in targets:
            self.dangerous_target(t, detail, recursive)

    def perm_rule(self, prog, args, flags, targets, detail, where) -> None:
        mode = targets[0] if targets else ''
        if prog == 'chmod' and (re.search(r'[ugoa]*[+=][rwxX]*s', mode)
                                or re.fullmatch(r'[2467][0-7]{3}', mode)):
            self.add('privilege_escalation', 'setuid_bit', detail)
        if prog in ('chown', 'chgrp') and re.match(r'(root|0)([:.]|$)', mode):
            self.add('privilege_escalation', 'chown_root', detail)
        for t in targets[1:]:
            full = self.abspath(t)
            if full == '/' or any(full == d or full.startswith(d + '/') for d in SYSTEM_DIRS):
                if not (self.root and full.startswith(self.root + '/')):
                    self.add('destructive' if 'R' in flags else 'privilege_escalation',
                             f'{prog}_system', detail)
            elif t in ('~', '$HOME'):
                self.add('destructive', f'{prog}_home', detail)

    def git_rule(self, args, detail) -> None:
        sub = next((a for a in args if not a.startswith('-')), '')
        if sub == 'push' and any(a in ('-f', '--force', '--mirror', '--delete')
                                 or a.startswith('--force') or a.startswith('+')
                                 for a in args):
            self.add('destructive', 'git_force_push', detail, AMBIGUOUS, 0.6)
        if sub == 'config' and any('credential' in a or 'core.sshcommand' in a.lower()
                                   or 'core.hookspath' in a.lower() for a in args):
            self.add('credential_access', 'git_config', detail, AMBIGUOUS)
        if sub in ('filter-branch', 'filter-repo') or \
                sub == 'update-ref' and '-d' in args or \
                sub == 'reflog' and 'expire' in args and any(
                    a.startswith('--expire') and a.split('=')[-1] in ('now', 'all', '0')
                    for a in args) or \
                sub == 'checkout' and '--orphan' in args and '-f' in args:
            self.add('destructive', 'history_delete', f'{detail} (rewrites or drops the '
                     'repository history)')
        if sub == 'clean' and any('x' in a and a.startswith('-') for a in args):
            self.add('destructive', 'git_clean_ignored', detail, AMBIGUOUS)

    def network_rule(self, prog, args, flags, long_flags, targets, detail) -> None:
        upload = False
        if prog == 'curl':
            upload = bool(set(flags) & set('dFT')) or any(
                f.split('=')[0] in ('--data', '--data-binary', '--data-raw', '--data-urlencode',
                                    '--form', '--upload-file', '--json') for f in long_flags)
        elif prog == 'wget':
            upload = any(f.split('=')[0] in ('--post-data', '--post-file', '--body-file',
                                             '--body-data') for f in long_flags) or \
                '--method=PUT' in long_flags or '--method=POST' in long_flags
        elif prog in ('nc', 'ncat', 'netcat', 'socat', 'telnet', 'tftp'):
            self.add('exfiltration', f'cmd_{prog}', detail)
            return
        elif prog in ('scp', 'rsync', 'sftp', 'ftp', 'lftp'):
            upload = any(re.match(r'[^/\s]*@?[\w.-]+:', t) for t in targets[-1:]) or \
                prog in ('sftp', 'ftp', 'lftp')
        elif prog == 'ssh':
            if len(targets) > 1:
                self.add('exfiltration', 'ssh_remote_command', detail, AMBIGUOUS)
            return
        if upload:
            self.add('exfiltration', f'{prog}_upload', detail)

    def interpreter_rule(self, prog, args, sep, previous, detail, where, depth) -> None:
        code = None
        for n, a in enumerate(args):
            if a in ('-c', '-e', '-E', '-r') and n + 1 < len(args):
                code = args[n + 1]
                break
        if code is None and prog in _CODE_LANGS:
            for n, a in enumerate(args):
                if a in ('--eval', '-p', '--print', '-r') and n + 1 < len(args):
                    code = args[n + 1]
                    break
        if prog.startswith('python') and args[:2] in (['-m', 'pip'], ['-m', 'pip3']):
            self.install_rule('pip', args[2:], detail)
        if code is not None:
            joined = re.sub(r'([\'"])\s*\+\s*([\'"])', '', code)    # 'r' + 'm' -> 'rm'
            self.scan_shell(code, where + f' ({prog} code)', depth + 1)
            for lit in re.findall(r'"([^"]{3,})"|\'([^\']{3,})\'', joined):
                self.scan_shell(lit[0] or lit[1], where + f' ({prog} string)', depth + 1)
            if prog in _CODE_LANGS:
                self.code_rules(prog, joined, detail, where)
        piped = sep in ('|', '|&')
        scriptless = code is None and not any(not a.startswith('-') for a in args) or \
            args[:1] in (['-'], ['-s'], ['/dev/stdin'])
        if piped and (prog in _SHELLS or scriptless):
            src = os.path.basename(previous[0]).lower() if previous else ''
            rule = ('remote_code' if src in NETWORK_TOOLS else
                    'decoded_payload' if src in ('base64', 'xxd', 'openssl', 'printf', 'echo',
                                                 'rev', 'tr', 'gzip', 'zcat')
                    else 'pipe_to_interpreter')
            self.add('shell_injection', rule, f'{detail} (stdin from {src or "a pipe"})')
        if any(a.startswith('/dev/fd/63') for a in args):
            self.add('shell_injection', 'process_substitution_exec', detail)

    def code_rules(self, prog: str, code: str, detail: str, where: str) -> None:
        """An interpreter one-liner, judged by what its code does."""
        literals = [a or b for a, b in re.findall(r'"([^"]*)"|\'([^\']*)\'', code)]
        paths = [lit for lit in literals if lit and (
            '/' in lit or lit.startswith(('~', '.', '$')) or re.search(r'\.\w{1,4}$', lit))]
        for lit in paths:
            self.check_path(lit, False, where + f' ({prog} code)')
        if _CODE_DELETE.search(code):
            if _CODE_HOME.search(code):
                paths = ['~/' + p.lstrip('./') for p in paths] or ['~']
            if not paths:
                self.add('destructive', 'code_delete_computed', f'{detail} ({prog} deletes '
                         'a path built at run time)')
            for lit in paths:
                self.dangerous_target(lit, f'{detail} ({prog} deletes)', recursive=True)
        if _CODE_NETWORK.search(code):
            if _CODE_SENDS.search(code) or _SECRET_RE.search(code):
                self.add('exfiltration', 'code_upload', f'{detail} ({prog} sends data over '
                         'the network)')
            else:
                self.add('exfiltration', 'code_network', f'{detail} ({prog} opens a network '
                         'connection)', AMBIGUOUS)
        if _CODE_SHELL.search(code) and _CODE_BUILT.search(code):
            self.add('shell_injection', 'code_built_command', f'{detail} ({prog} runs a '
                     'command built at run time)')
        if _CODE_WRITE.search(code):
            for lit in paths:
                self.check_write_target(lit, where + f' ({prog} writes)')
                if self.is_history(lit):
                    self.add('destructive', 'history_delete', f'{detail} (writes into .git)')

    def install_rule(self, prog: str, args: list[str], detail: str) -> None:
        """Installing from a URL, a VCS or a foreign index runs code nobody reviewed."""
        sub = next((a for a in args if not a.startswith('-')), '')
        if prog == 'uv' and sub == 'pip':
            args = args[args.index('pip') + 1:]
            sub = next((a for a in args if not a.startswith('-')), '')
        if sub not in ('install', 'add', 'i', 'download', 'wheel', 'sync', 'upgrade') and \
                prog not in ('easy_install',):
            return
        for n, a in enumerate(args):
            flag = a.split('=')[0]
            if flag in _PIP_INDEX_FLAGS and (n + 1 < len(args) or '=' in a):
                self.add('supply_chain', 'foreign_index', f'{detail} (installs from another '
                         'index)')
                return
            if re.match(r'(git\+|hg\+|svn\+|bzr\+)?(https?|ftp|file|ssh|git)://|git@|'
                        r'github:|gitlab:|[\w.-]+/[\w.-]+#', a) or '@ http' in a or \
                    re.search(r'\.(tar\.gz|tgz|zip|whl|egg)$', a) and '://' in a:
                self.add('supply_chain', 'install_from_url', f'{detail} (installs {a[:60]})')
                return

    def find_exec_rule(self, args: list[str], where: str, depth: int) -> None:
        """`find START ... -exec CMD {} ;` is CMD run on what find finds: judge CMD on it."""
        starts = []
        for a in args:
            if a.startswith(('-', '(', '!')):
                break
            starts.append(a)
        starts = starts or ['.']
        filtered = any(a in ('-name', '-iname', '-path', '-ipath', '-regex', '-newer',
                             '-mtime', '-mmin', '-empty', '-size', '-type') for a in args)
        named = [b for a, b in zip(args, args[1:]) if a in ('-name', '-iname', '-path')
                 and not re.search(r'[*?\[]', b)]
        n = 0
        while n < len(args):
            if args[n] in ('-exec', '-execdir', '-ok', '-okdir'):
                end = n + 1
                while end < len(args) and args[end] not in (';', '+', '\\;'):
                    end += 1
                cmd = args[n + 1:end]
                if cmd and os.path.basename(cmd[0]).lower() in ('sh', 'bash', 'dash', 'zsh'):
                    cmd = [w.replace('{}', starts[0]) for w in cmd]
                    self.command_rules(cmd, '', None, where + ' (find -exec)', depth + 1)
                elif cmd:
                    for start in starts:
                        inside = not start.startswith(('/', '~', '$')) and \
                            not self.escapes_root(start)
                        what = start.rstrip('/') + '/' + (named[0] if named else 'match') \
                            if filtered and inside else start
                        self.command_rules([w.replace('{}', what) for w in cmd], '', None,
                                           where + ' (find -exec)', depth + 1)
                n = end
            n += 1

    def xargs_rule(self, prog: str, args: list[str], previous: list[str] | None, where: str,
                   depth: int) -> None:
        """`... | xargs CMD`: CMD's targets come from the previous command; judge them."""
        if not previous:
            self.add('destructive', 'xargs_unknown_input', f'{where}: xargs {prog} on input '
                     'from elsewhere', AMBIGUOUS)
            return
        src = os.path.basename(previous[0]).lower()
        if src in ('echo', 'printf', 'cat', 'ls'):
            items = [a for a in previous[1:] if not a.startswith('-')] or ['.']
            if src == 'cat':
                return       # file lists read from a file: the file's content is unknown
            for item in items:
                self.command_rules([prog, *args, item], '', None, where + ' (xargs)',
                                   depth + 1)
        elif src == 'find':
            starts = [a for a in previous[1:] if not a.startswith(('-', '(', '!'))][:1] or ['.']
            filtered = any(a in ('-name', '-iname', '-path', '-type', '-newer', '-mtime')
                           for a in previous)
            start = starts[0]
            inside = not start.startswith(('/', '~', '$')) and not self.escapes_root(start)
            what = start.rstrip('/') + '/match' if filtered and inside else start
            self.command_rules([prog, *args, what], '', None, where + ' (xargs)', depth + 1)

    def pipeline_rules(self, segments, where) -> None:
        for (sep, words, _), (_, prev, _) in zip(segments[1:], segments[:-1]):
            if sep in ('|', '|&') and words:
                prog = os.path.basename(words[0]).lower()
                if prog in NETWORK_TOOLS and prev:
                    src = ' '.join(prev)[:80]
                    self.add('exfiltration', 'pipe_to_network', f'{where}: {src} | {prog}')

    # other kinds -------------------------------------------------------------------------
    def scan_injection(self, value: str, where: str, allow_pipe: bool = False) -> None:
        v = normalize_unicode(value)
        pattern = r'`|\$\(|\$\{|[;&]\s*\S|\n\s*\S' + ('' if allow_pipe else r'|\|')
        if re.search(pattern, v):
            self.add('shell_injection', 'metacharacters', f'{where}: shell syntax in '
                     f'{value[:80]!r}')


def _strings(value: Any, path: str = '') -> Iterable[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for k, v in value.items():
            yield from _strings(v, f'{path}.{k}' if path else str(k))
    elif isinstance(value, (list, tuple)):
        for n, v in enumerate(value):
            yield from _strings(v, f'{path}[{n}]')


def _script_like(path: str, content: str) -> bool:
    return bool(re.search(r'\.(sh|bash|zsh|ksh|command)$', path or '')
                or content.lstrip().startswith('#!') or _STARTUP_FILE.search(path or ''))


def scan_call(tool: str, args: Mapping, policy: ScanPolicy = ScanPolicy(),
              arg_kinds: Mapping[str, Mapping[str, str]] | None = None) -> list[Finding]:
    """Every finding about one tool call (empty: nothing known-dangerous)."""
    kinds = dict(ARG_KINDS)
    if arg_kinds:
        kinds.update(arg_kinds)
    known = kinds.get(tool)
    s = _Scanner(policy)
    for key, value in _strings(args):
        top = key.split('.')[0].split('[')[0]
        kind = known.get(top, 'arg') if known is not None else 'arg'
        where = f'{tool}.{key}'
        if kind == 'shell':
            s.scan_shell(value, where)
        elif kind in ('path_read', 'path_write'):
            s.scan_injection(value, where)
            for part in (value.split() if tool == 'git_commit' else [value]):
                s.check_path(part, kind == 'path_write', where)
        elif kind == 'glob':
            s.scan_injection(value, where)
            s.check_path(value, False, where)
            if value.startswith('/'):
                s.add('path_traversal', 'absolute_glob', f'{where}: {value}', AMBIGUOUS)
        elif kind == 'regex':
            if re.search(r'`|\$\(', value):
                s.add('shell_injection', 'metacharacters', f'{where}: {value[:80]!r}')
        elif kind == 'outbound':
            kinds_found = find_secrets(value)
            if kinds_found:
                s.add('exfiltration', 'secret_in_message', f'{where}: carries a secret '
                      f'({", ".join(sorted(set(kinds_found)))})')
        elif kind == 'content':
            path = str(args.get('path', ''))
            if _script_like(path, value):
                s.scan_shell(value, where)
            if _GIT_CONFIG_FILE.search('/' + path.lstrip('/')) and (
                    git_config_exec(value) or _GIT_EXEC_INI.search(value)):
                s.add('sandbox_escape', 'git_config_exec', f'{where}: writes a key that makes '
                      f'git run a command into {path}')
            if _AUTORUN_PY.search(path) and _CODE_SHELL.search(value):
                s.add('sandbox_escape', 'autorun_shell', f'{where}: {path} runs by itself '
                      '(install or test collection) and starts a shell')
        elif kind == 'arg':
            s.scan_injection(value, where)
            s.scan_shell(value, where)
            if _SECRET_RE.search(normalize_unicode(value)):
                s.add('credential_access', 'secret_path', f'{where}: {value[:80]}')
            if _SECRET_VALUE.search(value):
                s.add('exfiltration', 'secret_in_argument', f'{where}: looks like a secret')
    return s.findings


def call_danger(tool: str, args: Mapping) -> float:
    """How dangerous the patterns find one call: 1 for a finding that blocks, 0.5 for an
    ambiguous one, 0 for none. A feature of the choice (the amygdala's signal before the act),
    not a verdict: the gate still reviews whatever is chosen."""
    found = scan_call(tool, args)
    return max((1.0 if f.severity == BLOCK else 0.5 for f in found), default=0.0)
