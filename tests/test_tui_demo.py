"""``gpuwatch demo``: the job starts in its own process group and is always stopped afterwards."""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from gpuwatch import demo

# A job that forks a grandchild (like a DataLoader worker) and then sleeps: both must be stopped.
FORKING_JOB = [sys.executable, "-c",
               "import os, time\n"
               "if os.fork() == 0:\n    time.sleep(120)\n    os._exit(0)\n"
               "time.sleep(120)\n"]


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def _wait_gone(pids, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if all(_gone(p) for p in pids):
            return True
        time.sleep(0.1)
    return False


def _family(proc: subprocess.Popen) -> list[int]:
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        kids = psutil.Process(proc.pid).children(recursive=True)
        if kids:
            return [proc.pid, *(k.pid for k in kids)]
        time.sleep(0.05)
    return [proc.pid]


def test_stop_job_stops_the_whole_process_group(tmp_path):
    with open(tmp_path / "log", "wb") as log:
        proc = demo.start_job(FORKING_JOB, log)
    try:
        pids = _family(proc)
        assert len(pids) == 2
        assert os.getpgid(proc.pid) == proc.pid != os.getpgid(0)  # its own group, not ours
        demo.stop_job(proc, wait_s=2)
        assert _wait_gone(pids)
    finally:
        demo._kill_group(proc.pid, signal.SIGKILL)


def test_a_job_that_fails_at_once_is_reported(monkeypatch, capsys):
    monkeypatch.setattr(demo, "demo_command", lambda cpu: [sys.executable, "-c",
                                                          "import sys; print('no torch here'); sys.exit(3)"])
    ns = argparse.Namespace(json=True, duration=2.0, cpu=True)
    assert demo.run_demo(ns) == 1
    err = capsys.readouterr().err
    assert "exited at once (code 3)" in err and "no torch here" in err


def test_json_demo_watches_the_job_and_stops_it(monkeypatch, capsys):
    started: list[subprocess.Popen] = []
    real_start = demo.start_job

    def start(cmd, log):
        p = real_start(cmd, log)
        started.append(p)
        return p

    monkeypatch.setattr(demo, "demo_command", lambda cpu: FORKING_JOB)
    monkeypatch.setattr(demo, "start_job", start)
    try:
        assert demo.run_demo(argparse.Namespace(json=True, duration=2.0, cpu=True)) == 0
        ticks = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
        assert ticks and all(t["frame"]["target"]["pid"] == started[0].pid for t in ticks)
        assert _gone(started[0].pid)
    finally:
        for p in started:
            demo._kill_group(p.pid, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_signals_to_gpuwatch_stop_the_real_demo_job(sig):
    gw = subprocess.Popen([sys.executable, "-m", "gpuwatch", "demo", "--cpu", "--json"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    job = None
    try:
        line = gw.stdout.readline()  # the first tick: the job runs and is watched
        assert line, gw.stderr.read()
        job = json.loads(line)["frame"]["target"]["pid"]
        family = [job, *(c.pid for c in psutil.Process(job).children(recursive=True))]
        gw.send_signal(sig)
        gw.wait(timeout=30)
        assert _wait_gone(family), "the demo job outlived gpuwatch"
    finally:
        if gw.poll() is None:
            gw.kill()
        if job is not None:
            demo._kill_group(job, signal.SIGKILL)


@pytest.mark.slow
def test_sigterm_to_the_tui_demo_stops_the_job_and_restores_the_terminal():
    import pty
    import threading

    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}
    gw = subprocess.Popen([sys.executable, "-m", "gpuwatch", "demo", "--cpu"], stdin=slave, stdout=slave,
                          stderr=slave, env=env, start_new_session=True)
    os.close(slave)
    out = bytearray()

    def drain() -> None:  # keep reading, or the TUI blocks on a full pty buffer
        while True:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO: the other side closed
                return
            if not chunk:
                return
            out.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    family: list[int] = []
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not family:
            for c in psutil.Process(gw.pid).children():
                if "gpuwatch.demo_job" in " ".join(c.cmdline()):
                    family = [c.pid]
            time.sleep(0.2)
        assert family, "the demo job did not start"
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and b"watched" not in out:  # the first frame is on screen
            time.sleep(0.2)
        assert b"\x1b[?1049h" in out and b"watched" in out
        gw.send_signal(signal.SIGTERM)
        assert gw.wait(timeout=30) == 0
        assert _wait_gone(family), "the demo job outlived gpuwatch"
        reader.join(timeout=5)
        assert b"\x1b[?1049l" in out  # back from the alternate screen: the terminal is restored
    finally:
        if gw.poll() is None:
            gw.kill()
        for p in family:
            demo._kill_group(p, signal.SIGKILL)
        reader.join(timeout=5)
        os.close(master)
