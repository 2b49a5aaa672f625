"""Stop signals from gpuwatch's first instruction (issue 22 item 13): SIGINT at 0.1 s gave a
KeyboardInterrupt traceback; SIGTERM/SIGHUP at 0.3-1.0 s killed it (-15/-1) instead of the clean
exit it makes later. Now every stop is clean: exit 0 for SIGTERM/SIGHUP, 130 for SIGINT, no
traceback, no py-spy left.

Timing does not depend on the machine's load: each signal is sent a fixed offset after gpuwatch's
first instruction, seen as the moment /proc/PID/status lists SIGTERM and SIGHUP as caught (Python
itself catches only SIGINT, so those two bits are gpuwatch's guard).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc")

GW = [sys.executable, "-m", "gpuwatch"]
GUARD_BITS = (1 << (signal.SIGTERM - 1)) | (1 << (signal.SIGHUP - 1))
OFFSETS = (0.0, 0.1, 0.3, 0.8)
EXPECT = {signal.SIGINT: 130, signal.SIGTERM: 0, signal.SIGHUP: 0}


@pytest.fixture(scope="module")
def target():
    p = subprocess.Popen([sys.executable, "-c", "import time\nwhile True: time.sleep(0.01)"])
    time.sleep(0.2)
    yield p.pid
    p.kill()
    p.wait()


def _caught(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("SigCgt:"):
                return int(line.split()[1], 16)
    return 0


def wait_for_guard(proc: subprocess.Popen, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"gpuwatch ended before its signal guard was seen (rc {proc.returncode})")
        with contextlib.suppress(OSError):
            if _caught(proc.pid) & GUARD_BITS == GUARD_BITS:
                return
        time.sleep(0.002)
    pytest.fail("gpuwatch never caught SIGTERM and SIGHUP")


def pyspy_of(target_pid: int) -> list[int]:
    """py-spy processes dumping ``target_pid`` (in a session of their own, so looked up by argv)."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        argv = p.info["cmdline"] or []
        if argv and "py-spy" in os.path.basename(argv[0]) and str(target_pid) in argv:
            out.append(p.pid)
    return out


@pytest.mark.parametrize("offset", OFFSETS)
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["INT", "TERM", "HUP"])
def test_a_stop_signal_at_any_moment_of_a_headless_start_is_clean(target, sig, offset):
    proc = subprocess.Popen(GW + ["--pid", str(target), "--json", "--duration", "20", "--stack-rate", "20"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_guard(proc)
        time.sleep(offset)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err[-3000:]
    assert proc.returncode == EXPECT[sig], (proc.returncode, err[-2000:])
    assert all(line.endswith("}") for line in out.splitlines())  # whole lines only
    deadline = time.monotonic() + 5  # a py-spy killed as gpuwatch closed may take a moment to go
    while pyspy_of(target) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert pyspy_of(target) == []


@pytest.mark.parametrize("offset", (0.0, 0.2, 0.6))
def test_sigterm_while_the_tui_starts_is_clean(target, offset):
    from tests.pty_session import pty_session

    with pty_session(GW + ["--pid", str(target)]) as tui:
        wait_for_guard(tui.proc)
        time.sleep(offset)
        tui.proc.send_signal(signal.SIGTERM)
        tui.proc.wait(timeout=30)
    assert tui.proc.returncode == 0 and "Traceback" not in tui.text, tui.text[-3000:]


def test_a_stop_wrapped_by_a_class_body_is_the_stop(monkeypatch):
    """Run under load, a SIGINT 0.1 s into a headless start landed while gpuwatch.source's dataclass
    was being made: Python re-raised it as RuntimeError("Error calling __set_name__ ...") from the
    Stopped, and the command printed that traceback. It is the stop, with its exit code."""
    from gpuwatch import cli
    from gpuwatch.stopping import Stopped, exit_code

    def interrupted(ns):
        try:
            raise Stopped(signal.SIGINT)
        except Stopped as e:
            raise RuntimeError("Error calling __set_name__ on 'Field' instance") from e

    monkeypatch.setattr(cli, "_dispatch", interrupted)
    assert cli._main(["--pid", "1"]) == exit_code(signal.SIGINT)
    monkeypatch.setattr(cli, "_dispatch", lambda ns: (_ for _ in ()).throw(RuntimeError("a bug")))
    with pytest.raises(RuntimeError, match="a bug"):
        cli._main(["--pid", "1"])
