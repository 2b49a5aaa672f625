"""The TUI's terminal input thread (tui/input_thread.py) sleeps until a key comes, still ends a
lone Escape on its own, and lets the app quit at once; run under a real pseudo-terminal, where
Textual uses its Linux driver (the Pilot tests run the headless one)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from gpuwatch.tui.input_thread import THREAD_NAME
from tests.pty_session import pty_session

ROOT = Path(__file__).resolve().parents[1]
RECORDING = ROOT / "tests" / "data" / "h200" / "field_lightning_persistent.jsonl.gz"

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads thread names from /proc")


def _input_thread(pid: int, deadline: float) -> Path:
    while time.monotonic() < deadline:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                if task.joinpath("comm").read_text().strip() == THREAD_NAME:
                    return task
            except OSError:  # a thread that ended between listing and reading
                continue
        time.sleep(0.1)
    raise AssertionError(f"no {THREAD_NAME} thread in gpuwatch")


def _wakeups(task: Path) -> int:
    status = task.joinpath("status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("voluntary_ctxt_switches")).split()[1])


def test_the_input_thread_sleeps_ends_a_lone_escape_and_quits_at_once():
    argv = [sys.executable, "-m", "gpuwatch", "replay", str(RECORDING), "--speed", "0.5"]
    with pty_session(argv) as tui:
        task = _input_thread(tui.proc.pid, time.monotonic() + 60)
        first = _wakeups(task)
        time.sleep(2.0)
        # Textual's own loop wakes ten times a second; this one only for input (none was typed).
        assert _wakeups(task) - first <= 2
        # A lone Escape is ended by the parser's timeout: typed alone, then "q" after it, the
        # "q" is a key of its own and quits. An Escape left waiting would make it Alt+q.
        tui.type(b"\x1b")
        time.sleep(0.5)
        typed = time.monotonic()
        tui.type(b"q")
        tui.proc.wait(timeout=20)
        assert tui.proc.returncode == 0, tui.text[-500:]
        assert time.monotonic() - typed < 10
    assert not os.path.exists(f"/proc/{tui.proc.pid}")
