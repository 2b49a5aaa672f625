"""readable_files: the files a live process has open for reading, from /proc (this test's process)."""

import os

import pytest

from gpuwatch.collectors.open_files import readable_files

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")


def test_reading_files_listed_written_files_and_folders_not(tmp_path):
    data, out, rw = tmp_path / "shard-0.tar", tmp_path / "log.txt", tmp_path / "index.lmdb"
    data.write_bytes(b"x" * 10)
    rw.write_bytes(b"y")
    folder = os.open(tmp_path, os.O_RDONLY | os.O_DIRECTORY)
    with open(data, "rb"), open(out, "w"), open(rw, "r+b"):
        try:
            got = set(readable_files(os.getpid(), lambda p: p.startswith(str(tmp_path))))
        finally:
            os.close(folder)
    assert got == {str(data), str(rw)}


def test_keep_filters_before_anything_is_read(tmp_path):
    data = tmp_path / "a.bin"
    data.write_bytes(b"x")
    with open(data, "rb"):
        assert readable_files(os.getpid(), lambda p: False) == []
        assert str(data) in readable_files(os.getpid(), lambda p: p.endswith(".bin"))


def test_deleted_files_are_not_data(tmp_path):
    data = tmp_path / "gone.bin"
    data.write_bytes(b"x")
    with open(data, "rb"):
        data.unlink()
        assert readable_files(os.getpid(), lambda p: "gone" in p) == []


def test_a_gone_process_raises_oserror():
    with pytest.raises(OSError):
        readable_files(2**22 + 12345, lambda p: True)
