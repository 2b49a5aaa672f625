"""``gpuwatch demo``: start the bundled training job, watch it, and always stop it afterwards.

The job runs in its own process group (so a Ctrl-C in the terminal reaches gpuwatch, not the job,
and one signal stops the job and any DataLoader workers it forked). It is stopped on every way
out: normal exit, an exception, Ctrl-C, SIGTERM or SIGHUP (both end the watch cleanly and the
``finally`` below runs), and, through PR_SET_PDEATHSIG, even if gpuwatch itself is killed.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import signal
import subprocess
import sys
import tempfile
import time

STARTUP_GRACE_S = 1.5
"""How long the job gets to fail fast (bad import, no torch) before we start watching it."""
STOP_WAIT_S = 5.0
"""How long the job gets to exit on SIGTERM before it is killed."""
PR_SET_PDEATHSIG = 1
"""prctl option (linux/prctl.h): the kernel signals the child when its parent dies."""


def demo_command(cpu: bool) -> list[str]:
    cmd = [sys.executable, "-m", "gpuwatch.demo_job"]
    if cpu:
        cmd += ["--device", "cpu"]
    return cmd


def _die_with_parent() -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):
        pass  # not Linux: the finally clause in run_demo still stops the job


def start_job(cmd: list[str], log) -> subprocess.Popen:  # noqa: ANN001 - a binary file object
    return subprocess.Popen(
        cmd,
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=_die_with_parent if sys.platform.startswith("linux") else None,  # noqa: PLW1509
    )


def stop_job(proc: subprocess.Popen, wait_s: float = STOP_WAIT_S) -> None:
    """SIGTERM the job's process group, then SIGKILL what is left after ``wait_s``."""
    if proc.poll() is not None:
        _kill_group(proc.pid, signal.SIGKILL)  # the leader is gone; stray workers may not be
        return
    _kill_group(proc.pid, signal.SIGTERM)
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        pass
    _kill_group(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=wait_s)


def _kill_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _tail(path: str, lines: int = 15) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return "".join(f.readlines()[-lines:])
    except OSError:
        return ""


def run_demo(ns: argparse.Namespace) -> int:
    from gpuwatch.assemble import WatchOptions
    from gpuwatch.headless import run_headless
    from gpuwatch.source import live_source

    log = tempfile.NamedTemporaryFile(prefix="gpuwatch-demo-", suffix=".log", delete=False)  # noqa: SIM115
    proc = start_job(demo_command(getattr(ns, "cpu", False)), log)
    log.close()  # the child holds its own descriptor
    try:
        deadline = time.monotonic() + STARTUP_GRACE_S
        while time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.05)
        if proc.poll() is not None:
            print(f"gpuwatch: the demo job exited at once (code {proc.returncode}); its output:\n"
                  f"{_tail(log.name)}", file=sys.stderr)
            return 1
        source = live_source(proc.pid, WatchOptions(), ns.duration)  # the watch defaults: the demo has no watch flags
        if ns.json:
            return run_headless(source, None)
        from gpuwatch.tui.app import run_app

        return run_app(source)
    except KeyboardInterrupt:
        return 130
    finally:
        stop_job(proc)
        with contextlib.suppress(OSError):
            os.unlink(log.name)
