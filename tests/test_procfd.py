"""ProcFiles: /proc files read through kept descriptors answer what the kernel says now."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from gpuwatch.collectors import procfd
from gpuwatch.collectors.procfd import ProcFiles
from gpuwatch.collectors.procfs import parse_io, parse_stat


def _cpu_ticks(files: ProcFiles) -> int:
    return parse_stat(files.text(f"/proc/self/task/{_tid()}/stat") or "").cpu_ticks


def _tid() -> int:
    return __import__("threading").get_native_id()


def test_a_kept_descriptor_reads_the_current_counters():
    files = ProcFiles()
    before = _cpu_ticks(files)
    assert len(files) == 1
    start = os.times()
    while os.times().user + os.times().system - start.user - start.system < 0.05:  # 5 clock ticks of CPU
        sum(range(10_000))
    after = _cpu_ticks(files)
    assert len(files) == 1  # the same descriptor, read again
    assert after >= before + 3
    files.close()
    assert len(files) == 0


def test_a_file_longer_than_one_chunk_is_read_whole(monkeypatch):
    monkeypatch.setattr(procfd, "CHUNK", 64)
    files = ProcFiles()
    raw = files.read("/proc/self/status")
    with open("/proc/self/status", "rb") as f:
        direct = f.read()
    assert raw is not None and len(raw) > 64 * 4
    # The same lines, bar the counters that moved between the two reads.
    assert [ln.split(b":")[0] for ln in raw.splitlines()] == [ln.split(b":")[0] for ln in direct.splitlines()]
    files.close()


def test_an_exited_process_reads_as_gone_and_its_descriptor_is_closed():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    files = ProcFiles()
    try:
        assert parse_io(files.read(f"/proc/{child.pid}/io") or b"") is not None
        assert len(files) == 1
    finally:
        child.kill()
        child.wait()
    assert files.read(f"/proc/{child.pid}/io") is None
    assert len(files) == 0


def test_a_missing_file_is_none_and_nothing_is_kept():
    files = ProcFiles()
    assert files.read("/proc/self/no-such-file") is None
    assert len(files) == 0


def test_descriptors_are_bounded_and_reads_past_the_bound_still_answer():
    files = ProcFiles(max_open=2)
    paths = ["/proc/self/stat", "/proc/self/io", "/proc/self/statm", "/proc/self/status"]
    texts = [files.read(p) for p in paths]
    assert all(t for t in texts)
    assert len(files) == 2
    files.close()


@pytest.mark.skipif(os.geteuid() == 0, reason="root may read every process's io file")
def test_a_refused_file_raises_permission_error():
    files = ProcFiles()
    with pytest.raises(PermissionError):
        files.read("/proc/1/io")


def test_sweep_closes_what_was_not_read_since_the_last_sweep():
    files = ProcFiles()
    files.read("/proc/self/stat")
    files.read("/proc/self/io")
    files.sweep()
    assert len(files) == 2
    files.read("/proc/self/stat")  # a tick that no longer reads io (its thread or process exited)
    files.sweep()
    assert len(files) == 1
    files.close()


def test_kept_descriptors_share_one_budget_across_readers(monkeypatch):
    """Past the process-wide budget a file is read and closed, not kept; closing gives it back."""
    monkeypatch.setattr(procfd, "BUDGET", procfd._Budget(2))
    a, b = ProcFiles(), ProcFiles()
    assert a.read("/proc/self/stat") and a.read("/proc/self/io")
    assert b.read("/proc/self/schedstat") is not None
    assert (len(a), len(b)) == (2, 0)
    a.close()
    assert b.read("/proc/self/schedstat") is not None and len(b) == 1 and procfd.BUDGET.used == 1
    b.close()
    assert procfd.BUDGET.used == 0
