"""Canaries for the kernel sandbox tests: things a hostile command must not be able to touch.

- a canary file outside the workspace, visible inside (bound read-only) so commands can aim
  at it, and a second one outside that is not bound at all;
- a canary secret in a fake home (``~/.ssh/id_rsa``) and a fake ``~/.maxim/memory.db``;
- a fake copy of the gate's source inside the workspace, declared protected;
- a canary HTTP server on 127.0.0.1 that records every connection, stops itself after
  `max_s` seconds whatever happens, and is stopped by the fixture.

`check()` lists what was damaged or leaked (empty: every canary intact). Everything lives in a
throwaway temporary folder; dangerous commands run only inside the sandbox built by
`sandbox()`, after `verify()` has shown, with harmless probes, that the sandbox holds.
"""

from dataclasses import dataclass, field
import hashlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import os
from pathlib import Path
import shutil
import socket
import threading
import time
import uuid

from maxim_core.tools.sandbox import Limits, ProcessSandbox, RunResult

TEST_LIMITS = Limits(cpu_s=10, address_space_mb=2048, processes=64, memory_mb=256,
                     file_size_mb=4, open_files=256)


class _Recorder(BaseHTTPRequestHandler):
    def _record(self):
        length = int(self.headers.get('Content-Length') or 0)
        body = self.rfile.read(min(length, 65536)) if length else b''
        self.server.requests.append((self.command, self.path, body))
        self.send_response(200)
        self.end_headers()

    do_GET = do_POST = do_PUT = do_HEAD = do_DELETE = _record

    def log_message(self, *args):
        return


class CanaryServer(ThreadingHTTPServer):
    """Records every connection to 127.0.0.1:port; bounded in time."""

    daemon_threads = True

    def __init__(self, max_s: float = 900.0):
        super().__init__(('127.0.0.1', 0), _Recorder)
        self.connections: list = []
        self.requests: list = []
        self.port = self.server_address[1]
        self._thread = threading.Thread(target=self.serve_forever, kwargs={
            'poll_interval': 0.05}, daemon=True)
        self._timer = threading.Timer(max_s, self.shutdown)
        self._timer.daemon = True

    def verify_request(self, request, client_address) -> bool:
        self.connections.append(client_address)
        return True

    def start(self) -> 'CanaryServer':
        self._thread.start()
        self._timer.start()
        return self

    def stop(self) -> None:
        self._timer.cancel()
        self.shutdown()
        self.server_close()
        self._thread.join(5.0)

    def reachable(self, timeout_s: float = 5.0) -> bool:
        """A connection from this process arrives (the server really listens); then the
        record is cleared, so only the sandbox's connections count."""
        with socket.create_connection(('127.0.0.1', self.port), timeout=timeout_s):
            pass
        deadline = time.monotonic() + timeout_s
        while not self.connections and time.monotonic() < deadline:
            time.sleep(0.01)
        arrived = bool(self.connections)
        self.connections.clear()
        return arrived


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Canaries:
    root: Path
    server: CanaryServer
    secret: str = field(default_factory=lambda: 'CANARY-SECRET-' + uuid.uuid4().hex)
    digests: dict = field(default_factory=dict)

    def __post_init__(self):
        self.workspace = self.root / 'ws'
        self.outside = self.root / 'outside'
        self.unbound = self.root / 'unbound'
        self.home = self.root / 'home'
        for d in (self.workspace, self.outside, self.unbound, self.home / '.ssh',
                  self.home / '.maxim'):
            d.mkdir(parents=True, exist_ok=True)
        self.outside_file = self.outside / 'canary.txt'
        self.outside_file.write_text('outside canary\n')
        self.unbound_file = self.unbound / 'canary.txt'
        self.unbound_file.write_text('unbound canary\n')
        self.secret_file = self.home / '.ssh' / 'id_rsa'
        self.secret_file.write_text(f'-----BEGIN OPENSSH PRIVATE KEY-----\n{self.secret}\n')
        self.memory_db = self.home / '.maxim' / 'memory.db'
        self.memory_db.write_text(f'memory {self.secret}\n')
        self.gate = self.workspace / 'maxim_gate'
        self.gate.mkdir()
        (self.gate / 'patterns.py').write_text('BLOCK = "block"\n')
        self.files = [self.outside_file, self.unbound_file, self.secret_file, self.memory_db,
                      self.gate / 'patterns.py']
        self.digests = {p: _digest(p) for p in self.files}

    def sandbox(self, hidden=(), **kw) -> ProcessSandbox:
        kw.setdefault('limits', TEST_LIMITS)
        return ProcessSandbox(self.workspace, read_roots=[self.outside], home=self.home,
                              hidden=[self.home / '.maxim', *hidden], protected=[self.gate],
                              **kw)

    def reset_workspace(self) -> None:
        """The workspace emptied and refilled (hostile commands may wreck it: allowed)."""
        for child in self.workspace.iterdir():
            if child == self.gate:
                continue
            if child.is_dir() and not child.is_symlink():
                shutil.rmtree(child)
            else:
                child.unlink()
        (self.workspace / 'notes.txt').write_text('a\nTODO: x\n')
        (self.workspace / 'memory.db').write_text('workspace data\n')

    def check(self, result: RunResult | None = None) -> list[str]:
        """Every canary intact and nothing sent: the list of problems (empty = all good)."""
        problems = []
        for p in self.files:
            if not p.exists() or p.is_symlink():
                problems.append(f'{p} was removed or replaced')
            elif _digest(p) != self.digests[p]:
                problems.append(f'{p} was modified')
        if sorted(os.listdir(self.outside)) != ['canary.txt']:
            problems.append(f'{self.outside} gained or lost entries')
        if self.server.connections or self.server.requests:
            problems.append(f'the canary server got {len(self.server.connections)} '
                            f'connection(s): {self.server.requests[:2]}')
        if result is not None and self.secret in result.stdout + result.stderr:
            problems.append('the canary secret appeared in the output')
        return problems

    def verify(self) -> str | None:
        """Harmless probes showing the sandbox holds; the reason it does not, or None."""
        sb = self.sandbox()
        found = sb.available()
        if not found.ok:
            return found.reason
        marker = self.root / f'probe-{uuid.uuid4().hex}'
        probes = {
            'root is read-only': f'touch /probe-{uuid.uuid4().hex}',
            'outside is read-only': f'touch {self.outside}/probe',
            'unbound is invisible': f'cat {self.unbound_file}',
            'the home secret is hidden': f'cat {self.secret_file}',
            'the network is cut': f'exec 3<>/dev/tcp/127.0.0.1/{self.server.port}',
        }
        for what, line in probes.items():
            result = sb.run(['bash', '-c', line], timeout_s=10)
            if result.exit_code == 0 or result.timed_out:
                return f'sandbox probe failed: {what} ({line} exited {result.exit_code})'
        sb.run(['bash', '-c', f'touch {marker}'], timeout_s=10)    # lands in the private /tmp
        if marker.exists():
            return 'sandbox probe failed: a write reached the real temporary folder'
        ok = sb.run(['bash', '-c', 'echo ok > inside.txt && cat inside.txt'], timeout_s=10)
        if ok.stdout.strip() != 'ok' or not (self.workspace / 'inside.txt').exists():
            return f'sandbox probe failed: the workspace is not writable ({ok.stderr[:200]})'
        (self.workspace / 'inside.txt').unlink()
        problems = self.check()
        return '; '.join(problems) if problems else None
