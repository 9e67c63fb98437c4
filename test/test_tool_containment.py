"""The holes of issue 31, each closed and tested against canaries, for real.

- `speak`: its text is never an option of espeak-ng (``--phonout=<file>``, ``-f<file>``) and
  espeak-ng runs inside the kernel sandbox, writing only into a private folder;
- UNIX sockets: a listener under /var/tmp, /run, a bound read root or the workspace cannot be
  reached from inside the sandbox (``--unshare-net`` does not cover socket files);
- secrets by name (``.env``, ``.aws/credentials``, keys...) in the workspace are hidden by the
  kernel too, not only refused by the tools' Python rules.

Canaries come from helpers/canaries.py (a file outside the workspace, one not bound at all, a
secret in a fake home, the gate's source in the workspace, a canary HTTP server); every call
is bounded by a timeout and every listener is closed and removed afterwards. When bwrap cannot
start here the tests skip with the reason.
"""

import os
from pathlib import Path
import shutil
import socket
import stat
import tempfile

import pytest

from helpers.canaries import CanaryServer, Canaries
from maxim_common.errors import ERROR_INVALID_ARGUMENTS, ERROR_UNAVAILABLE
from maxim_core.tools.communication import SpeakTool
from maxim_core.tools.filesystem import filesystem_tools, Sandbox

needs_espeak = pytest.mark.skipif(shutil.which('espeak-ng') is None,
                                  reason='espeak-ng is not installed')


@pytest.fixture
def canaries(tmp_path):
    server = CanaryServer(max_s=600).start()
    try:
        assert server.reachable()
        c = Canaries(tmp_path, server)
        reason = c.verify()
        if reason is not None:
            pytest.skip(f'the kernel sandbox cannot be used here: {reason}')
        c.reset_workspace()
        yield c
    finally:
        server.stop()


def _script(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


# -- speak -----------------------------------------------------------------------------------
@needs_espeak
def test_speak_text_is_never_an_option_of_espeak(canaries):
    c = canaries
    speak = SpeakTool(wav_path=str(c.workspace / 'out.wav'))
    for target in (c.outside_file, c.unbound_file, c.gate / 'patterns.py', c.secret_file):
        out = speak.run({'text': f'--phonout={target}'})
        assert not c.check(), (target, c.check())
        assert out.success and out.output['sandboxed'] is True, out
    out = speak.run({'text': 'hello', 'voice': f'--phonout={c.outside_file}'})
    assert not out.success and out.error_code == ERROR_INVALID_ARGUMENTS
    assert len(out.error_msg.splitlines()) == 1
    assert not c.check()


@needs_espeak
def test_speak_text_cannot_make_espeak_read_a_file(canaries):
    """`-f<file>` once made espeak-ng read the file aloud: now it is said as written, so the
    speech is as short as the words, not as long as the file."""
    c = canaries
    said = 'the secret word is pineapple. ' * 60
    secret = c.home / '.ssh' / 'speech_notes'
    secret.write_text(said)
    wav = c.workspace / 'out.wav'
    speak = SpeakTool(wav_path=str(wav))
    assert speak.run({'text': said}).success
    whole = wav.stat().st_size
    for text in (f'-f{secret}', f'-f {secret}', f'--stdin -f{secret}'):
        out = speak.run({'text': text})
        assert out.success, out.error_msg
        assert wav.stat().st_size * 4 < whole, (text, wav.stat().st_size, whole)
    assert not c.check()


def test_speak_runs_espeak_inside_the_kernel_sandbox(canaries):
    """A hostile espeak-ng (a stand-in that tries to write outside and read the secret) can
    only write its speech into the private folder the tool gives it."""
    c = canaries
    fake = _script(c.root / 'bin' / 'espeak-ng', f'''#!/bin/sh
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-w" ]; then out="$2"; shift; fi
  shift
done
cat "{c.secret_file}" > "$out" 2>/dev/null
echo pwned > "{c.outside_file}" 2>/dev/null
echo pwned > "{c.unbound_file}" 2>/dev/null
echo pwned > "{c.gate / 'patterns.py'}" 2>/dev/null
echo pwned > "{c.workspace / 'planted'}" 2>/dev/null
printf RIFF >> "$out"
exit 0
''')
    wav = c.workspace / 'fake.wav'
    out = SpeakTool(str(fake), wav_path=str(wav)).run({'text': 'hello'})
    assert not c.check()
    assert wav.read_bytes() == b'RIFF'                # only its own output came back
    assert not (c.workspace / 'planted').exists()
    assert out.success and out.output['sandboxed'] is True, out


@needs_espeak
def test_speak_plays_the_sandboxed_speech_with_a_fixed_argv(canaries):
    c = canaries
    played = c.workspace / 'played.wav'
    player = _script(c.root / 'bin' / 'player', f'#!/bin/sh\ncp "$1" "{played}"\n')
    out = SpeakTool(player=[str(player)]).run({'text': f'--phonout={c.outside_file}'})
    assert out.success and out.output['sandboxed'] is True, out
    assert played.read_bytes()[:4] == b'RIFF'
    assert not c.check()


def test_speak_without_the_kernel_sandbox_refuses_or_warns(tmp_path):
    fake = _script(tmp_path / 'bin' / 'espeak-ng', '#!/bin/sh\n'
                   'while [ $# -gt 0 ]; do [ "$1" = "-w" ] && out="$2"; shift; done\n'
                   'printf RIFF > "$out"\n')
    wav = tmp_path / 'out.wav'
    missing = str(tmp_path / 'no-such-bwrap')
    refused = SpeakTool(str(fake), wav_path=str(wav), process='bwrap', bwrap=missing)
    out = refused.run({'text': 'hello'})
    assert not out.success and out.error_code == ERROR_UNAVAILABLE and 'refused' in out.error_msg
    assert len(out.error_msg.splitlines()) == 1 and not wav.exists()
    silent = SpeakTool(str(fake), process='bwrap', bwrap=missing, player=[])
    assert silent.run({'text': 'hello'}).error_code == ERROR_UNAVAILABLE
    warned = SpeakTool(str(fake), wav_path=str(wav), process='python', bwrap=missing)
    out = warned.run({'text': '--phonout=/nowhere'})
    assert out.success and out.output['sandboxed'] is False and 'WARNING' in out.output['warning']
    assert wav.read_bytes() == b'RIFF'


# -- UNIX sockets ----------------------------------------------------------------------------
CONNECT = ('import socket, sys\n'
           'for path in sys.argv[1:]:\n'
           '    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)\n'
           '    s.settimeout(2)\n'
           '    try:\n'
           '        s.connect(path)\n'
           '        s.sendall(b"leak")\n'
           '        print("CONNECTED", path)\n'
           '    except OSError as exc:\n'
           '        print("refused", path, exc)\n'
           '    finally:\n'
           '        s.close()\n')


class Listener:
    """An AF_UNIX listener that counts the connections it was offered (never blocks)."""

    def __init__(self, folder: Path):
        self.path = folder / 'l.sock'
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(str(self.path))
        self.sock.listen(16)
        self.sock.setblocking(False)

    def pending(self) -> int:
        n = 0
        while True:
            try:
                conn, _ = self.sock.accept()
            except BlockingIOError:
                return n
            conn.close()
            n += 1

    def reachable_from_here(self) -> bool:
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(2)
            s.connect(str(self.path))
        return self.pending() == 1

    def close(self) -> None:
        self.sock.close()
        if self.path.exists():
            self.path.unlink()


def _socket_folders(c) -> list[tuple[Path, bool]]:
    """(folder, made here) for the listeners: under /var/tmp and /run when writable, in a
    read root that the sandbox binds, and in the workspace."""
    out = []
    for base in ('/var/tmp', '/run'):
        if os.path.isdir(base) and os.access(base, os.W_OK | os.X_OK):
            out.append((Path(tempfile.mkdtemp(prefix='maxim-sock-', dir=base)), True))
    out += [(c.outside, False), (c.workspace, False)]
    return out


def test_unix_socket_listeners_are_unreachable_from_the_sandbox(canaries):
    c = canaries
    folders = _socket_folders(c)
    listeners = []
    try:
        for folder, _ in folders:
            listeners.append(Listener(folder))
        for lst in listeners:
            assert lst.reachable_from_here(), lst.path        # the listener really listens
        paths = [str(lst.path) for lst in listeners]
        (c.workspace / 'probe.py').write_text(CONNECT)
        direct = c.sandbox().run(['python3', '-c', CONNECT, *paths], timeout_s=20)
        sandbox = Sandbox('singularity', c.workspace, read_roots=[c.outside],
                          hidden=[c.home / '.maxim'], protected=[c.gate], process=c.sandbox())
        bash = {t.name: t for t in filesystem_tools(sandbox)}['bash']
        line = 'python3 probe.py ' + ' '.join(paths)
        if shutil.which('curl'):
            line += ''.join(f'; curl -s -m 2 --unix-socket {p} http://x/' for p in paths)
        tool = bash.run({'command': line, 'timeout_s': 30})
        for text in (direct.stdout, tool.output['stdout']):
            assert 'CONNECTED' not in text, text
            refused = [ln for ln in text.splitlines() if ln.startswith('refused ')]
            assert len(refused) == len(paths), text
        assert [lst.pending() for lst in listeners] == [0] * len(listeners)
    finally:
        for lst in listeners:
            lst.close()
        for folder, made in folders:
            if made:
                shutil.rmtree(folder, ignore_errors=True)
        (c.workspace / 'probe.py').unlink(missing_ok=True)
    assert not c.check()


def test_run_and_var_tmp_are_empty_inside(canaries):
    c = canaries
    result = c.sandbox().run(['bash', '-c', 'ls -A /run /var/tmp | grep -v :; echo done'],
                             timeout_s=10)
    assert result.stdout.split() == ['done'], result.stdout
    ok = c.sandbox().run(['python3', '-c', 'print(6 * 7)'], timeout_s=20)
    assert ok.stdout.strip() == '42'


# -- secrets by name, hidden by the kernel ---------------------------------------------------
def test_the_kernel_hides_secrets_by_name_in_the_workspace(canaries):
    c = canaries
    names = ('.env', '.env.production', '.aws/credentials', 'deploy/server.key',
             'deploy/tls.pem', 'id_ed25519', '.config/gcloud/adc.json', '.npmrc',
             '.docker/config.json')
    for name in names:
        p = c.workspace / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f'TOKEN={c.secret}\n')
    (c.workspace / 'deploy' / 'notes.txt').write_text('visible notes\n')
    line = ('cat .e?v .env.p* .a*/cred* deploy/* id_ed* .config/g*/* .n?mrc .d*/c*; '
            'python3 -c "print(open(\'.env\').read())"; grep -r TOKEN .; '
            'cp .e?v copy.txt; cat copy.txt; mv .e?v gone.txt')
    result = c.sandbox().run(['bash', '--noprofile', '--norc', '-c', line], timeout_s=20)
    assert c.secret not in result.stdout + result.stderr
    assert 'visible notes' in result.stdout                # the ordinary file is read
    assert (c.workspace / '.env').read_text() == f'TOKEN={c.secret}\n'   # not moved away
    assert not c.check(result)
