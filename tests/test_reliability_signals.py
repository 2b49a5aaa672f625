"""Reliability: signals to gpuwatch and a target that dies, with real processes and real py-spy.

- SIGTERM and SIGHUP to ``gpuwatch --pid P`` headless and in the TUI under a real pty: exit code 0,
  no py-spy left behind, and the TUI's last output leaves the alternate screen and shows the cursor.
- The terminal closing under a TUI that has no controlling terminal (so no SIGHUP comes): it ends.
- The target SIGKILLed mid-sample (a torch job with DataLoader workers), headless: the last tick says
  the target exited, gpuwatch exits 0, no traceback, no py-spy left.

Each signal is sent the moment a py-spy child of gpuwatch is seen, so a dump is (almost always) in
flight: the case that would leave an orphan.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from gpuwatch.collectors.pyspy import find_pyspy

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(find_pyspy() is None, reason="py-spy is not installed"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="needs Linux /proc and ptys"),
]

GW = [sys.executable, "-m", "gpuwatch"]
# A Python target with a forked child (like a DataLoader worker) that wakes often.
TARGET = [sys.executable, "-c",
          "import os, time\n"
          "if os.fork() == 0:\n    time.sleep(120)\n    os._exit(0)\n"
          "while True:\n    time.sleep(0.005)\n"]
STACK_RATE = "20"
"""py-spy dumps per second: at ~10 ms a dump (pyspy.py), one is in flight ~20 % of the time."""
EXIT_S = 20.0
"""Generous: a clean exit takes ~0.5 s here, but other suites share the 2 cores."""


@contextlib.contextmanager
def target_process():
    proc = subprocess.Popen(TARGET, start_new_session=True)
    try:
        time.sleep(0.3)  # the fork has happened
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def pyspy_children(pid: int) -> list[psutil.Process]:
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []
    out = []
    for k in kids:
        with contextlib.suppress(psutil.Error):
            if "py-spy" in k.name() or any("py-spy" in a for a in k.cmdline()[:1]):
                out.append(k)
    return out


def signal_during_a_dump(gw: subprocess.Popen, sig: int, timeout: float = 30.0) -> list[psutil.Process]:
    """Send ``sig`` to gw as soon as one of its py-spy children is seen; returns every one seen."""
    seen: dict[int, psutil.Process] = {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = pyspy_children(gw.pid)
        for k in kids:
            seen.setdefault(k.pid, k)
        if kids:
            gw.send_signal(sig)
            return list(seen.values())
        assert gw.poll() is None, f"gpuwatch exited early with {gw.returncode}"
        time.sleep(0.001)
    pytest.fail("no py-spy child of gpuwatch seen: stacks are not being sampled")


def assert_gone(procs: list[psutil.Process], timeout: float = 10.0) -> None:
    """Every process has ended (``is_running`` also checks the create time, so a reused PID is gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        left = [p for p in procs if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        if not left:
            return
        time.sleep(0.05)
    pytest.fail(f"py-spy outlived gpuwatch: {[p.pid for p in left]}")


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGHUP, 0), (signal.SIGINT, 130)],
                         ids=["SIGTERM", "SIGHUP", "SIGINT"])
def test_signal_ends_a_headless_watch_cleanly(sig, code):
    with target_process() as target:
        gw = subprocess.Popen([*GW, "--pid", str(target.pid), "--json", "--interval", "0.5",
                               "--stack-rate", STACK_RATE],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        try:
            first = json.loads(gw.stdout.readline())
            assert first["frame"]["target"]["alive"] is True
            spies = signal_during_a_dump(gw, sig)
            out, err = gw.communicate(timeout=EXIT_S)
        finally:
            if gw.poll() is None:
                gw.kill()
                gw.wait()
        assert gw.returncode == code, err  # SIGINT is Ctrl-C: 128 + 2, as shells report it
        assert "Traceback" not in err
        assert all(json.loads(x)["type"] == "tick" for x in out.splitlines())  # whole lines only
        assert_gone(spies)
        assert target.poll() is None  # gpuwatch never signals the job it watches


def _run_tui_in_pty(argv: list[str], controlling_tty: bool):
    """Start argv on a new pty; returns (process, master fd, output buffer, reader thread)."""
    import fcntl
    import termios

    master, slave = pty.openpty()
    env = {**os.environ, "TERM": "xterm-256color", "COLUMNS": "80", "LINES": "24"}

    def make_ctty() -> None:  # as a login shell's job: the pty is the controlling terminal
        os.setsid()
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    kw = {"preexec_fn": make_ctty} if controlling_tty else {"start_new_session": True}
    gw = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, **kw)  # noqa: PLW1509
    os.close(slave)
    out = bytearray()

    def drain() -> None:  # keep reading, or the TUI blocks on a full pty buffer
        while True:
            try:
                chunk = os.read(master, 1 << 16)
            except OSError:  # EIO once the other side has closed
                return
            if not chunk:
                return
            out.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    return gw, master, out, reader


def _wait_for(out: bytearray, marker: bytes, gw: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while marker not in out and time.monotonic() < deadline:
        assert gw.poll() is None, f"gpuwatch exited with {gw.returncode}: {bytes(out[-2000:])!r}"
        time.sleep(0.1)
    assert marker in out, f"{marker!r} never drawn: {bytes(out[-2000:])!r}"


@pytest.mark.parametrize("how", ["SIGTERM", "SIGHUP", "SIGINT", "terminal closed"])
def test_tui_ends_cleanly_and_restores_the_terminal(how):
    with target_process() as target:
        argv = [*GW, "--pid", str(target.pid), "--interval", "0.5", "--stack-rate", STACK_RATE]
        # "terminal closed": the pty goes away while gpuwatch is in its own session (started with
        # setsid, say), so no SIGHUP comes: its next write fails (EIO) and that must end it.
        gw, master, out, reader = _run_tui_in_pty(argv, controlling_tty=how != "terminal closed")
        closed = False
        try:
            _wait_for(out, b"watched", gw)  # the header of the first frame is on screen
            assert b"\x1b[?1049h" in out  # the alternate screen is in use
            if how == "terminal closed":
                spies = pyspy_children(gw.pid)
                os.close(master)
                closed = True
            else:
                spies = signal_during_a_dump(gw, getattr(signal, how))
            assert gw.wait(timeout=EXIT_S) == 0
            assert_gone(spies)
            reader.join(timeout=5)
            if how != "terminal closed":  # nobody could read the goodbye of a closed terminal
                tail = bytes(out[-400:])
                assert b"\x1b[?1049l" in tail and b"\x1b[?25h" in tail, tail
                assert b"Traceback" not in out
        finally:
            if gw.poll() is None:
                gw.kill()
                gw.wait()
            reader.join(timeout=5)
            if not closed:
                os.close(master)


def test_target_killed_mid_sample_ends_a_headless_watch(cpu_job):
    job = cpu_job(workers=2, slow="sleep", item_ms=5)
    family = [psutil.Process(job.pid), *psutil.Process(job.pid).children(recursive=True)]
    assert len(family) >= 3  # the main process and its two DataLoader workers
    gw = subprocess.Popen([*GW, "--pid", str(job.pid), "--json", "--interval", "0.5", "--stack-rate", STACK_RATE],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert json.loads(gw.stdout.readline())["frame"]["target"]["alive"] is True
        spies = signal_during_a_dump(gw, 0)  # signal 0: only wait until a dump is in flight
        for p in family:  # SIGKILL the job (workers first, as a crash or the OOM killer would)
            with contextlib.suppress(psutil.Error):
                p.kill()
        out, err = gw.communicate(timeout=EXIT_S)
    finally:
        if gw.poll() is None:
            gw.kill()
            gw.wait()
    assert gw.returncode == 0, err
    assert "Traceback" not in err
    ticks = [json.loads(x) for x in out.splitlines()]
    last = ticks[-1]["frame"]["target"]
    assert last["alive"] is False and last["exit_reason"], last
    assert_gone(spies)


def test_workers_respawning_every_epoch_keep_every_collector_going(respawn_job):
    """Non-persistent DataLoader workers die and are re-forked about every 0.3 s (tests/conftest.py
    RESPAWN): dumps and /proc reads of workers that vanish mid-read must stay plain results."""
    import asyncio
    import re

    from gpuwatch.assemble import WatchOptions, build_collectors
    from gpuwatch.collectors.target import Target
    from gpuwatch.engine import FIELDS, Watch
    from gpuwatch.model.procs import ProcsSample
    from gpuwatch.model.stacks import StackSample
    from gpuwatch.model.values import Unsupported

    async def watch() -> list:
        target = Target(respawn_job.pid)
        opts = WatchOptions(interval=0.5, gpus=None, stack_rate=10.0)
        return [f async for f in Watch(target, build_collectors(target, opts), interval=opts.interval).frames(6.0)]

    frames = asyncio.run(watch())
    assert len(frames) >= 8 and all(f.target.alive for f in frames)
    crash = re.compile(r"^\w+: [A-Z]\w*(Error|Exception)\b")  # how the engine words an escaped exception
    for f in frames:
        for field in FIELDS:
            value = getattr(f, field)
            if isinstance(value, Unsupported):
                assert not crash.match(value.reason) and "stalled" not in value.reason, (field, value.reason)
    procs = [f.procs for f in frames if isinstance(f.procs, ProcsSample)]
    assert len(procs) >= len(frames) - 1  # the first frame may come before the first read
    workers = {p.pid for s in procs for p in s.processes if p.role == "worker"}
    assert len(workers) >= 4, f"only {len(workers)} distinct workers in 6 s: no respawn seen"
    stacks = [f.stacks for f in frames if isinstance(f.stacks, StackSample)]
    assert len(stacks) >= len(frames) // 2
    dumped = {d.pid for s in stacks for d in s.dumps}
    assert dumped & workers, "no worker was ever dumped"
    for s in stacks:
        for d in s.dumps:
            assert d.ok or d.error, d  # a worker gone mid-dump is a failed dump with a reason


def test_pyspy_killed_by_someone_else_is_a_failed_dump_not_a_crash(tmp_path):
    """The OOM killer or an admin SIGKILLs py-spy mid-dump: that dump fails with the signal named,
    and the next one runs (a stand-in py-spy that kills itself; the real one answers in ~10 ms)."""
    from gpuwatch.collectors.pyspy import Pyspy

    suicidal = tmp_path / "py-spy"
    suicidal.write_text(f"#!{sys.executable}\nimport os, signal\nos.kill(os.getpid(), signal.SIGKILL)\n")
    suicidal.chmod(0o755)
    spy = Pyspy(str(suicidal), timeout=10)
    for _ in range(2):
        out = spy.dump(os.getpid())
        assert not out.ok and out.error == "py-spy was killed (signal 9)"
    assert not pyspy_children(os.getpid())


class _CancelDeaf:
    """A live-like source of SYNTHETIC frames that does not end when cancelled, as a watch did when
    Python < 3.12 lost asyncio's Ctrl-C cancel in ``asyncio.wait_for``; it gives up by itself after
    DEAF_S. Only a stop of gpuwatch's own (the event its signal handlers set) ends it sooner."""

    live = True
    DEAF_S = 6.0

    def describe(self) -> str:
        return "cancel-deaf test source"

    async def frames(self):
        import asyncio

        from tests.test_tui_fixtures import synthetic_frame

        deadline, i = time.monotonic() + self.DEAF_S, 0
        while time.monotonic() < deadline:
            try:
                await asyncio.sleep(0.05)
            except asyncio.CancelledError:
                pass  # the lost cancel
            i += 1
            yield synthetic_frame(i)


def test_ctrl_c_ends_a_headless_watch_even_when_a_cancel_is_lost(capsys):
    from gpuwatch.headless import run_headless

    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    started = time.monotonic()
    timer.start()
    try:
        rc = run_headless(_CancelDeaf(), None)
    finally:
        timer.cancel()
    took = time.monotonic() - started
    assert rc == 130 and took < _CancelDeaf.DEAF_S / 2, (rc, took)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # asyncio.run put Python's back
    assert all(json.loads(x)["type"] == "tick" for x in capsys.readouterr().out.splitlines())
