"""`gpuwatch diagnose --pid` against real processes: early exit, Ctrl-C, a real CPU training job."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from gpuwatch.cli import parse_args
from gpuwatch.report import run_diagnose

GPUWATCH = [sys.executable, "-m", "gpuwatch"]


def _kill(p: subprocess.Popen) -> None:
    if p.poll() is None:
        p.kill()
    p.wait(timeout=10)


def test_a_job_that_exits_early_is_reported_on_what_was_seen(tmp_path, capsys):
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(2.5)"])
    try:
        out = tmp_path / "r.md"
        started = time.monotonic()
        rc = run_diagnose(parse_args(["diagnose", "--pid", str(job.pid), "--duration", "30", "--no-stacks",
                                      "-o", str(out)]))
        took = time.monotonic() - started
    finally:
        _kill(job)
    assert rc == 0 and took < 20
    md = out.read_text()
    assert f"# gpuwatch diagnosis: PID {job.pid}" in md
    assert f"; the job exited (process {job.pid})." in md
    assert "**Watching ended early** (the job exited" in md and "of the 30 s asked for" in md
    assert "verdict so far" in capsys.readouterr().err  # plain progress lines: stderr is not a terminal here


def test_ctrl_c_stops_watching_and_still_prints_the_report(tmp_path):
    job = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    diag = subprocess.Popen([*GPUWATCH, "diagnose", "--pid", str(job.pid), "--duration", "60", "--no-stacks",
                             "--format", "json"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=str(tmp_path))
    try:
        line = diag.stderr.readline().decode()  # the first progress line: the watch is running
        assert "watched" in line, line
        diag.send_signal(signal.SIGINT)
        out, err = diag.communicate(timeout=30)
    finally:
        _kill(diag)
        _kill(job)
    assert diag.returncode == 0, err.decode()
    doc = json.loads(out)
    assert doc["source"]["ended"] == "stopped early (interrupted)" and doc["source"]["early"] is True
    assert doc["source"]["frames"] >= 1 and doc["environment"]["target"]["pid"] == job.pid


@pytest.mark.slow
def test_a_real_cpu_training_job_with_more_workers_than_cores(cpu_job, tmp_path):
    job = cpu_job(workers=3, slow="cpu")
    out = tmp_path / "r.json"
    rc = run_diagnose(parse_args(["diagnose", "--pid", str(job.pid), "--duration", "4", "--format", "json",
                                  "-o", str(out)]))
    assert rc == 0
    doc = json.loads(out.read_text())
    cpus = len(os.sched_getaffinity(job.pid))
    assert doc["environment"]["target"]["workers"] == 3
    assert doc["environment"]["cpus"]["logical_cpus"] == os.cpu_count()
    assert doc["source"]["ended"] == "duration reached" and doc["source"]["frames"] >= 3
    checks = {c["id"]: c for c in doc["checks"]}
    expected = "WARN" if 3 > cpus else "PASS"
    assert checks["workers_vs_cores"]["status"] == expected.lower()
    assert f"3 DataLoader workers for 1 training process on {cpus} usable CPUs" in checks["workers_vs_cores"]["reason"]
    assert checks["pcie_link"]["status"] == "not_checked"  # no NVIDIA driver here, or a GPU host the job does not use
    assert checks["pcie_link"]["reason"].startswith(("NVML", "the job used no GPU"))
    assert doc["environment"]["storage"][0]["kind"] == "cwd"
