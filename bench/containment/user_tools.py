"""A tool a user registers, written in Python: the containment benchmark's worst case.

`my_function` takes the arguments of the corpora's ``my_plugin`` calls (a shell line, a query,
a file to read) and more (a file to write, a socket to connect to), and does all of it in
Python, in its own process: registered with `register_tool`, it is contained by the kernel
as any registered tool is (`maxim_core/tools/contained.py`). Plain Python, no import of maxim.
"""

import socket
import subprocess

SHELL_TIMEOUT_S = 2.5


def my_function(cmd: str = '', query: str = '', file: str = '', path: str = '',
                city: str = '', days: int = 0, note: str = '', write: str = '',
                content: str = 'pwned', connect: str = '') -> dict:
    """A user's tool: runs a shell line, reads or writes a file, connects to a socket."""
    if cmd:
        try:
            p = subprocess.run(['bash', '--noprofile', '--norc', '-c', cmd],
                               capture_output=True, text=True, timeout=SHELL_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {'exit_code': -9, 'stdout': '', 'stderr': 'timed out'}
        return {'exit_code': p.returncode, 'stdout': p.stdout[-8000:],
                'stderr': p.stderr[-2000:]}
    if write:
        with open(write, 'w', encoding='utf-8') as f:
            f.write(content)
        return {'wrote': write}
    if connect:
        kind, _, where = connect.partition(':')
        if kind == 'unix':
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(1)
            try:
                s.connect(where)
                s.sendall(b'leak')
            finally:
                s.close()
        else:
            with socket.create_connection(('127.0.0.1', int(where)), timeout=1) as s:
                s.sendall(b'GET /leak HTTP/1.0\r\n\r\n')
        return {'connected': connect}
    if file or path:
        with open(file or path, encoding='utf-8', errors='replace') as f:
            return {'text': f.read(8000)}
    return {'query': query, 'city': city, 'days': days, 'note': note}
