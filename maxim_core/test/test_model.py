"""Finding and assembling the model file: every bad case gives one clear ModelFileError."""

import os
import shutil
import struct

import pytest

from maxim_core.llm.model import (assemble_embedded, check_gguf, default_cache_dir,
                                  ModelFileError, resolve_model)


@pytest.fixture(scope='module')
def cache(tmp_path_factory):
    """The embedded model assembled once into a fresh cache, with its progress reports."""
    reports = []
    directory = tmp_path_factory.mktemp('models')
    path = assemble_embedded(str(directory), lambda stage, f: reports.append((stage, f)))
    return path, reports


def test_assembly_reports_progress_and_verifies(cache):
    path, reports = cache
    assert os.path.basename(path) == 'gemma-3-270m-q4_k_m.gguf'
    assert reports[0][0] == 'assembling the model' and reports[-1][1] == pytest.approx(1.0)
    assert all(0 <= f <= 1 for _, f in reports)
    check_gguf(path)
    assert not [n for n in os.listdir(os.path.dirname(path)) if '.part-' in n]


def test_second_use_trusts_the_stamp_without_rehashing(cache):
    path, _ = cache
    reports = []
    assert assemble_embedded(os.path.dirname(path), lambda s, f: reports.append(s)) == path
    assert reports == []


def test_damaged_cache_file_is_rebuilt(cache, tmp_path):
    path, _ = cache
    copy = tmp_path / os.path.basename(path)
    shutil.copyfile(path, copy)
    with open(copy, 'r+b') as f:   # same size, flipped bytes: only the sha256 can tell
        f.seek(1 << 20)
        f.write(b'\0' * 64)
    (tmp_path / 'gemma-3-270m-q4_k_m.gguf.part-99').write_bytes(b'GGUF half')  # a killed run
    reports = []
    assert assemble_embedded(str(tmp_path), lambda s, f: reports.append(s)) == str(copy)
    assert 'verifying the model' in reports and 'assembling the model' in reports
    with open(copy, 'rb') as f, open(path, 'rb') as g:
        f.seek(1 << 20)
        g.seek(1 << 20)
        assert f.read(64) == g.read(64)


def test_missing_path(tmp_path):
    missing = str(tmp_path / 'nope.gguf')
    with pytest.raises(ModelFileError, match='does not exist') as info:
        resolve_model(missing)
    assert missing in str(info.value) and 'model_path' in str(info.value)


def test_garbage_file(tmp_path):
    junk = tmp_path / 'junk.gguf'
    junk.write_bytes(b'<html>not a model</html>' * 100000)
    with pytest.raises(ModelFileError, match='not a GGUF') as info:
        resolve_model(str(junk))
    assert str(junk) in str(info.value)
    with pytest.raises(ModelFileError, match='not a file'):
        resolve_model(str(tmp_path))


@pytest.mark.parametrize('keep', [20, 4096, 50_000_000, -1])
def test_truncated_copy(cache, tmp_path, keep):
    path, _ = cache
    size = os.path.getsize(path)
    cut = tmp_path / 'cut.gguf'
    with open(path, 'rb') as f:
        cut.write_bytes(f.read(keep if keep > 0 else size + keep))
    with pytest.raises(ModelFileError, match='truncated|damaged') as info:
        resolve_model(str(cut))
    assert str(cut) in str(info.value)


def test_a_complete_gguf_path_is_accepted(cache):
    path, _ = cache
    assert resolve_model(path) == path


def test_cache_dir_from_environment(monkeypatch, tmp_path):
    monkeypatch.setenv('MAXIM_MODEL_CACHE', str(tmp_path))
    assert default_cache_dir() == str(tmp_path)
    monkeypatch.delenv('MAXIM_MODEL_CACHE')
    assert default_cache_dir().endswith(os.path.join('.cache', 'maxim', 'models'))


@pytest.mark.parametrize('where', ['type', 'length'])
def test_damaged_metadata_in_a_full_size_file_is_not_called_truncated(cache, tmp_path, where):
    path, _ = cache
    bad = tmp_path / 'damaged.gguf'
    shutil.copyfile(path, bad)
    with open(bad, 'r+b') as f:
        f.seek(24)
        key_len = struct.unpack('<Q', f.read(8))[0]
        if where == 'type':     # the first value's type code: 0xdead is no GGUF type
            f.seek(24 + 8 + key_len)
            f.write(struct.pack('<I', 0xDEAD))
        else:                   # the first key's length: far past any real string
            f.seek(24)
            f.write(struct.pack('<Q', 1 << 40))
    assert os.path.getsize(bad) == os.path.getsize(path)
    with pytest.raises(ModelFileError, match='damaged metadata') as info:
        resolve_model(str(bad))
    assert 'truncated' not in str(info.value) and str(bad) in str(info.value)


def test_a_copy_cut_inside_its_metadata_is_truncated(cache, tmp_path):
    path, _ = cache
    cut = tmp_path / 'cut.gguf'
    with open(path, 'rb') as f:
        cut.write_bytes(f.read(4096))
    with pytest.raises(ModelFileError, match='is truncated'):
        resolve_model(str(cut))
