"""One list of secrets, read by every layer in-process: read_file, glob, search_code and the
bash token check refuse or skip the same paths (maxim_core/tools/secrets.py); a home folder is
not searched. No process is started here; the kernel layer is tested in
test/test_tool_containment.py."""

import os
from pathlib import Path
import threading

import pytest

from maxim_common.errors import ERROR_TIMEOUT
from maxim_core.tools.base import ToolError
from maxim_core.tools.code import code_tools, SearchCodeTool
from maxim_core.tools.filesystem import filesystem_tools, GlobTool, Sandbox
from maxim_core.tools.secrets import find_secrets, home_secrets, is_proc_environ, is_secret

CANARY = 'CANARY-TOKEN-7f3a9c'

SECRETS = [
    '~/.ssh/id_rsa', '/w/id_rsa', '/w/keys/id_ed25519', '/w/id_ed25519.pub', '/w/id_ecdsa',
    '/w/id_dsa', '/w/tls/server.pem', '/w/deploy/app.KEY', '/w/.env', '/w/.env.production',
    '/w/sub/.env.local', '/h/.aws/credentials', '/h/.aws/config',
    '/h/.config/gcloud/application_default_credentials.json', '/h/.azure/accessTokens.json',
    '/h/.netrc', '/h/.pypirc', '/h/.npmrc', '/h/.docker/config.json', '/h/.kube/config',
    '/h/.git-credentials', '/h/.gnupg/private-keys-v1.d/x',
    '/h/.mozilla/firefox/abc.default/logins.json',
    '/h/.config/google-chrome/Default/Login Data', '/h/.config/chromium/Default/Cookies',
    '/etc/shadow', '/etc/gshadow', '/etc/sudoers', '/etc/sudoers.d/admins',
    '/etc/ssh/ssh_host_ed25519_key', '/run/secrets/db', '/var/run/secrets/token',
    '/proc/self/environ', '/proc/thread-self/environ', '/proc/1/environ',
    '/proc/1/task/1/environ', '/proc/self/task/*/environ', '/proc/self/task/123/environ',
    '/proc/thread-self/../environ', '/proc//self///environ', '/proc/self/root/proc/1/environ',
]
ORDINARY = [
    '/w/src/main.py', '/w/environment.yml', '/w/docs/keys.md', '/w/.envrc', '/w/keyboard.py',
    '/w/.config/other/settings.ini', '/w/.docker/Dockerfile', '/proc/self/status',
    '/etc/passwd', '/etc/ssh/ssh_config', '/w/public.pem.md',
]


@pytest.mark.parametrize('path', SECRETS)
def test_every_secret_pattern_is_a_secret(path):
    assert is_secret(path), path


@pytest.mark.parametrize('path', ORDINARY)
def test_ordinary_paths_are_not_secrets(path):
    assert not is_secret(path), path


def test_every_proc_environ_spelling_is_recognised():
    tid = threading.get_native_id()
    for path in ('/proc/self/environ', '/proc/thread-self/environ', f'/proc/{os.getpid()}/'
                 f'task/{tid}/environ', f'/proc/self/task/{tid}/environ', '/proc/*/environ'):
        assert is_proc_environ(path) and is_secret(path), path
    assert not is_proc_environ('/proc/self/cmdline')


def test_a_link_to_a_secret_is_a_secret(tmp_path):
    key = tmp_path / 'home' / '.ssh' / 'id_rsa'
    key.parent.mkdir(parents=True)
    key.write_text(CANARY)
    (tmp_path / 'notes.txt').symlink_to(key)
    (tmp_path / 'env').symlink_to('/proc/thread-self/environ')
    assert is_secret(tmp_path / 'notes.txt') and is_secret('env', root=tmp_path)
    assert not is_secret('notes.md', root=tmp_path)


def test_the_kernel_finds_the_same_secrets_by_name(tmp_path):
    ws = _workspace(tmp_path)
    found, complete = find_secrets([ws], prune=[ws / 'private'])
    names = {str(p.relative_to(ws)) for p in found}
    assert complete and names == {'id_rsa', '.ssh', '.env', '.env.local', '.aws', '.npmrc',
                                  'deploy/server.pem', 'deploy/tls.key', '.config/gcloud',
                                  '.docker/config.json'}, names
    assert set(home_secrets(ws)) >= {ws / '.ssh', ws / '.env', ws / '.aws', ws / 'id_rsa'}
    stopped, complete = find_secrets([ws], max_entries=3)
    assert not complete and len(stopped) <= 3


def _workspace(tmp_path: Path) -> Path:
    """A workspace holding one ordinary file and secrets of every kind, all with CANARY."""
    ws = tmp_path / 'ws'
    files = ['src/main.py', 'id_rsa', '.ssh/id_ed25519', '.env', '.env.local',
             '.aws/credentials', '.npmrc', 'deploy/server.pem', 'deploy/tls.key',
             '.config/gcloud/credentials.db', '.docker/config.json', 'private/notes.txt']
    for name in files:
        p = ws / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(f'token = "{CANARY}"\n')
    return ws


@pytest.mark.parametrize('mode', ['passive', 'active', 'singularity'])
def test_read_file_glob_and_search_code_apply_the_same_rules(tmp_path, mode):
    ws = _workspace(tmp_path)
    outside_key = tmp_path / 'home' / '.ssh' / 'id_rsa'
    outside_key.parent.mkdir(parents=True)
    outside_key.write_text(CANARY)
    (ws / 'src' / 'link_to_key').symlink_to(outside_key)
    sandbox = Sandbox(mode, ws, hidden=[ws / 'private'])
    fs = {t.name: t for t in filesystem_tools(sandbox)}
    code = {t.name: t for t in code_tools(sandbox)}
    for path in ('id_rsa', '.ssh/id_ed25519', '.env', '.env.local', '.aws/credentials',
                 '.npmrc', 'deploy/server.pem', 'deploy/tls.key', 'private/notes.txt',
                 '.config/gcloud/credentials.db', '.docker/config.json', 'src/link_to_key'):
        out = fs['read_file'].run({'path': path})
        assert not out.success and len(out.error_msg.splitlines()) == 1, path
        assert CANARY not in out.text()
    listed = fs['glob'].run({'pattern': '**/*'})
    assert listed.success and listed.output['paths'] == [
        '.config/', '.docker/', 'deploy/', 'src/', 'src/main.py'], listed.output
    for pattern in ('.env*', '.ssh/*', '**/*.pem', 'private/*', '.aws/credentials', '*'):
        out = fs['glob'].run({'pattern': pattern})
        listed = ' '.join(out.output['paths'])
        assert not any(n in listed for n in ('.env', 'id_', '.pem', 'private', 'credentials',
                                             '.npmrc', '.ssh', '.aws')), (pattern, out)
    found = code['search_code'].run({'pattern': CANARY})
    assert found.success and [m['file'] for m in found.output['matches']] == ['src/main.py']
    for path in ('.ssh', 'private', '.env'):
        assert not code['search_code'].run({'pattern': CANARY, 'path': path}).success
    assert fs['read_file'].run({'path': 'src/main.py'}).success


def test_search_code_and_glob_stop_at_their_time_limit(tmp_path):
    ws = tmp_path / 'ws'
    for i in range(30):
        (ws / f'd{i}').mkdir(parents=True)
        (ws / f'd{i}' / 'f.py').write_text('x = 1\n')
    sandbox = Sandbox('active', ws)
    for tool, args in ((SearchCodeTool(sandbox, timeout_s=1e-9), {'pattern': 'x'}),
                       (GlobTool(sandbox, timeout_s=1e-9), {'pattern': '**/*.py'})):
        out = tool.run(args)
        assert not out.success and out.error_code == ERROR_TIMEOUT, out
        assert 'time limit' in out.error_msg and len(out.error_msg.splitlines()) == 1
    assert SearchCodeTool(sandbox).run({'pattern': 'x'}).output['total'] == 30


def test_search_code_over_a_home_folder_is_refused_at_once(tmp_path, monkeypatch):
    """`search_code` over a home folder once walked it in-process for 46 s and returned what
    it found there: now a home is hidden from the tools as from commands, in every mode."""
    home = tmp_path / 'home'
    for i in range(200):
        (home / f'd{i}').mkdir(parents=True)
        (home / f'd{i}' / 'notes.txt').write_text(f'{CANARY}\n')
    monkeypatch.setenv('HOME', str(home))
    ws = tmp_path / 'ws'
    ws.mkdir()
    for mode in ('passive', 'active', 'singularity'):
        search = {t.name: t for t in code_tools(Sandbox(mode, ws, process='python'))}[
            'search_code']
        for path in (str(home), '~', '~/d7'):
            out = search.run({'pattern': 'CANARY', 'path': path})
            assert not out.success and len(out.error_msg.splitlines()) == 1, (mode, path, out)
            assert CANARY not in out.text() and 'files_scanned' not in out.text()


def test_read_file_refuses_every_proc_environ_spelling_in_process(tmp_path, monkeypatch):
    """Singularity reads anywhere in-process: never the mind's own environment."""
    monkeypatch.setenv('MAXIM_CANARY_TOKEN', CANARY)
    read = {t.name: t for t in filesystem_tools(Sandbox('singularity', tmp_path))}['read_file']
    tid = threading.get_native_id()
    pid = os.getpid()
    (tmp_path / 'env_link').symlink_to('/proc/thread-self/environ')
    for path in ('/proc/self/environ', '/proc/thread-self/environ', f'/proc/{pid}/environ',
                 f'/proc/self/task/{tid}/environ', f'/proc/{pid}/task/{tid}/environ',
                 '/proc/self/task/*/environ', '/proc/thread-self/../environ', 'env_link',
                 f'/proc/self/root/proc/{pid}/environ'):
        out = read.run({'path': path})
        assert not out.success and 'secret' in out.error_msg, path
        assert CANARY not in out.text()
    assert read.run({'path': '/proc/self/status'}).success      # /proc itself stays readable


@pytest.mark.parametrize('mode', ['passive', 'active', 'singularity'])
def test_bash_words_naming_a_secret_are_refused(tmp_path, mode):
    sandbox = Sandbox(mode, tmp_path)
    for line in ('cat .env', 'cat sub/.env.production', 'grep -r x .aws/credentials',
                 'cat ~/.npmrc', 'head /proc/thread-self/environ', 'cat id_ed25519',
                 'wc --files0-from=.netrc', 'cat /proc/self/task/1/environ'):
        with pytest.raises(ToolError, match='secret') as err:
            sandbox.check_command(line)
        assert len(str(err.value).splitlines()) == 1
    sandbox.check_command('cat notes.txt')
    sandbox.check_command('grep -r TODO .')
