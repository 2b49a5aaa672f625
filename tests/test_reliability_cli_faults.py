"""Command-line faults of issue 22 items 10, 12 and 14: a PID reused after the job exits, /proc
files that cannot be parsed, --gpu indexes that do not exist, --duration shorter than --interval,
a kernel thread given as --pid. Each: one clear line and exit 2, or a clean end; no traceback."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from gpuwatch.assemble import check_gpu_indexes
from gpuwatch.collectors.nvml_session import NvmlSession
from gpuwatch.collectors.target import Target
from gpuwatch.errors import UsageError
from tests.fake_nvml import CAPTURE, FakeNvml

GW = [sys.executable, "-m", "gpuwatch"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(GW + list(args), capture_output=True, text=True, timeout=timeout)


def sleeper(*argv: str) -> subprocess.Popen:
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *argv])
    time.sleep(0.3)
    return p


# -- item 14 ------------------------------------------------------------------------------------

def test_gpu_99_names_the_gpus_that_exist():
    # The fake NVML replays a real H200 capture (tests/data/nvml), here as 2 GPUs.
    session = NvmlSession(nvml=FakeNvml(CAPTURE, gpus=2))
    with pytest.raises(UsageError) as e:
        check_gpu_indexes(session, [0, 99])
    assert str(e.value) == "--gpu 99: no such GPU; this host has 2 GPU(s) (nvidia-smi order): 0 NVIDIA H200, 1 NVIDIA H200"
    check_gpu_indexes(session, [1, 0])  # indexes that exist pass


def test_gpu_index_without_nvml_is_left_to_the_gpu_panel():
    # Nothing to check against: the watch starts and the GPU panel says why it is empty.
    check_gpu_indexes(NvmlSession(nvml=FakeNvml(CAPTURE, scenario="no_library")), [99])


def test_duration_wins_over_interval():
    # `--interval 60 --duration 0.5` ran 61 s. Now: the first frame, one at 0.5 s, then the end
    # (the subprocess timeout of 40 s would catch a 60 s tick).
    p = sleeper()
    try:
        r = run("--pid", str(p.pid), "--json", "--interval", "60", "--duration", "0.5", timeout=40)
    finally:
        p.kill()
        p.wait()
    assert r.returncode == 0, r.stderr
    ticks = [json.loads(x) for x in r.stdout.splitlines()]
    assert 1 <= len(ticks) <= 2 and ticks[0]["frame"]["interval"] == 60.0
    assert ticks[-1]["frame"]["wall"] - ticks[0]["frame"]["wall"] < 5


@pytest.mark.skipif(not os.path.exists("/proc/2/stat"), reason="needs a kernel thread at PID 2 (kthreadd)")
def test_a_kernel_thread_is_named_as_one():
    with open("/proc/2/stat") as f:
        if not int(f.read().rsplit(")", 1)[1].split()[6]) & 0x00200000:
            pytest.skip("PID 2 is not a kernel thread in this PID namespace")
    r = run("--pid", "2", "--json", "--duration", "1")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert r.stderr.strip().splitlines() == [
        "gpuwatch: error: process 2 (kthreadd) is a kernel thread, not a Python process: "
        "give the PID of the training process (or its launcher)"]


# -- item 10 ------------------------------------------------------------------------------------

def _reuse_pid(pid: int, *argv: str) -> subprocess.Popen | None:
    """A new process with ``pid`` (just freed), through /proc/sys/kernel/ns_last_pid (root)."""
    for _ in range(50):
        try:
            with open("/proc/sys/kernel/ns_last_pid", "w") as f:
                f.write(str(pid - 1))
        except OSError:
            return None
        p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", *argv])
        if p.pid == pid:
            return p
        p.kill()
        p.wait()
    return None


def test_a_reused_pid_is_not_taken_for_the_job():
    job = sleeper("--name", "THE-JOB")
    t = Target(job.pid)
    assert "THE-JOB" in t.cmdline() and t.alive()
    job.kill()
    job.wait()
    new = _reuse_pid(job.pid, "--name", "SOMEONE-ELSE")
    if new is None:
        pytest.skip("cannot steer PID allocation here (needs root and ns_last_pid)")
    try:
        time.sleep(0.2)
        assert t.reused()
        assert not t.alive() and "exited" in t.exit_reason
        assert "THE-JOB" in t.cmdline() and "SOMEONE-ELSE" not in t.cmdline()
    finally:
        new.kill()
        new.wait()


def test_a_reused_pid_never_reaches_the_json_stream():
    job = sleeper("--name", "THE-JOB")
    gw = subprocess.Popen(GW + ["--pid", str(job.pid), "--json", "--duration", "30", "--interval", "0.2"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    new = None
    try:
        first = gw.stdout.readline()
        assert "THE-JOB" in first
        job.kill()
        job.wait()
        new = _reuse_pid(job.pid, "--name", "SOMEONE-ELSE")
        if new is None:
            pytest.skip("cannot steer PID allocation here (needs root and ns_last_pid)")
        out, err = gw.communicate(timeout=30)
    finally:
        for p in (gw, new):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    assert gw.returncode == 0 and "Traceback" not in err, err
    ticks = [json.loads(x) for x in [first, *out.splitlines()]]
    assert "SOMEONE-ELSE" not in first + out
    assert ticks[-1]["frame"]["target"]["alive"] is False and "THE-JOB" in ticks[-1]["frame"]["target"]["cmdline"]


# -- item 12 ------------------------------------------------------------------------------------

@contextlib.contextmanager
def garbage_over(path: str, tmp_path: Path, text: str = "garbage\n"):
    """``text`` bind-mounted over a /proc file (root; skipped where mounting is not allowed)."""
    fake = tmp_path / "fake"
    fake.write_text(text)
    if subprocess.run(["mount", "--bind", str(fake), path], capture_output=True).returncode:
        pytest.skip("cannot bind-mount here")
    try:
        yield
    finally:
        subprocess.run(["umount", path], capture_output=True)


@pytest.mark.parametrize("name", ["stat", "status"])
def test_an_unparseable_proc_file_at_start_is_one_line(tmp_path, name):
    p = sleeper()
    try:
        with garbage_over(f"/proc/{p.pid}/{name}", tmp_path):
            r = run("--pid", str(p.pid), "--json", "--duration", "1")
    finally:
        p.kill()
        p.wait()
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr[-2000:]
    assert r.stderr.strip().splitlines() == [
        f"gpuwatch: error: cannot read process {p.pid}: its /proc files cannot be parsed (IndexError: list index out of range)"]


@pytest.mark.parametrize("name", ["stat", "status"])
def test_an_unparseable_proc_file_mid_run_is_a_reason_not_a_traceback(tmp_path, name):
    p = sleeper()
    gw = subprocess.Popen(GW + ["--pid", str(p.pid), "--json", "--duration", "3", "--interval", "0.3"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = gw.stdout.readline()
        with garbage_over(f"/proc/{p.pid}/{name}", tmp_path):
            out, err = gw.communicate(timeout=40)
    finally:
        for x in (gw, p):
            if x.poll() is None:
                x.kill()
                x.wait()
    assert gw.returncode == 0 and "Traceback" not in err, err[-2000:]
    ticks = [json.loads(x) for x in [first, *out.splitlines()]]
    assert len(ticks) >= 3
    if name == "stat":
        # The job's stat file is read through a descriptor opened before the mount (collectors/
        # procfd.py, the tree walk and the process table alike): the kernel's own file, so the
        # watch goes on with the job's real row rather than the garbage.
        (row,) = ticks[-1]["frame"]["procs"]["processes"]
        assert row["pid"] == p.pid and row["state"] == "S" and ticks[-1]["frame"]["target"]["alive"] is True
