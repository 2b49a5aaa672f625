"""The TUI's terminal input thread (tui/input_thread.py) sleeps until a key comes, still ends a
lone Escape on its own, and lets the app quit at once; run under a real pseudo-terminal, where
Textual uses its Linux driver (the Pilot tests run the headless one)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
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
        # Measured once the app has drawn its screen and settled: its start-up (the terminal's
        # replies to the driver's queries) wakes the thread too, later on a loaded host (CI at -n 2
        # counted 3 wakeups in the first 2 s after the thread appeared).
        deadline = time.monotonic() + 60
        while "Quit" not in tui.text and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(1.0)
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


def _driver(fileno: int, got: list):
    """The sleeping driver's input loop alone, reading ``fileno``: no app, no terminal set-up."""
    from textual.drivers.linux_driver import LinuxDriver

    from gpuwatch.tui.input_thread import WakingEvent, sleeping_input

    driver = sleeping_input(LinuxDriver).__new__(sleeping_input(LinuxDriver))
    driver.fileno, driver._debug, driver.exit_event = fileno, False, WakingEvent()
    driver.process_message = got.append
    return driver


def _thread_cpu_s(native_id: int) -> float:
    return int(Path(f"/proc/self/task/{native_id}/schedstat").read_text().split()[0]) / 1e9


def test_the_input_thread_sleeps_once_stdin_is_at_its_end():
    # gpuwatch's TUI runs with stdin from /dev/null or a closed pipe too (a script, nohup): each
    # select() then returns at once with a read of nothing. A loop that kept watching stdin spun a
    # whole core until the app quit (Textual's own loop too).
    r, w = os.pipe()
    os.write(w, b"q")
    os.close(w)
    got: list = []
    driver = _driver(r, got)
    thread = threading.Thread(target=driver.run_input_thread)
    thread.start()
    try:
        time.sleep(0.3)
        cpu = _thread_cpu_s(thread.native_id)
        time.sleep(1.0)
        assert _thread_cpu_s(thread.native_id) - cpu < 0.05
        assert [getattr(m, "key", None) for m in got] == ["q"]  # what came before the end was read
    finally:
        driver.exit_event.set()
        thread.join(5)
        driver.exit_event.close()
        os.close(r)
    assert not thread.is_alive()  # and the exit flag still ends it at once


def test_the_exit_flag_leaves_descriptors_alone_once_closed():
    # Textual's SIGTSTP and SIGCONT handlers stay installed after the app has closed its driver,
    # and a stop then sets the exit flag again: its pipe's numbers may belong to another file by
    # then (the recording, py-spy's pipes), which must get no byte and stay open.
    from gpuwatch.tui.input_thread import WakingEvent

    event = WakingEvent()
    numbers = (event.read_fd, event.write_fd)
    event.close()
    r, w = os.pipe()
    try:
        os.dup2(r, numbers[0])
        os.dup2(w, numbers[1])
        os.set_blocking(numbers[0], False)
        event.set()
        event.close()
        os.write(numbers[1], b"ok")  # still open
        assert os.read(numbers[0], 16) == b"ok"
    finally:
        for fd in (r, w, *numbers):
            with contextlib.suppress(OSError):
                os.close(fd)


def test_bytes_that_are_not_utf8_are_read_as_replacement_characters_not_an_exit():
    # A terminal that sends Alt+key as an 8-bit byte (xterm's eightBitInput, a Latin-1 locale) or
    # a stray byte in a paste: a strict UTF-8 decode raised in the input thread, and Textual ended
    # the app with a traceback (and exit code 0). The bytes around it are still the keys they were.
    r, w = os.pipe()
    os.write(w, b"a\xff\xe1b")
    got: list = []
    driver = _driver(r, got)
    thread = threading.Thread(target=driver.run_input_thread)
    thread.start()
    try:
        deadline = time.monotonic() + 5
        while len(got) < 4 and thread.is_alive() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert thread.is_alive()
        assert [getattr(m, "character", None) for m in got] == ["a", "\ufffd", "\ufffd", "b"]
    finally:
        driver.exit_event.set()
        thread.join(5)
        driver.exit_event.close()
        os.close(r)
        os.close(w)
    assert not thread.is_alive()


def _input_threads(pid: int) -> int:
    return sum(1 for t in Path(f"/proc/{pid}/task").iterdir() if t.joinpath("comm").read_text().strip() == THREAD_NAME)


def test_a_sigcont_without_a_stop_starts_no_second_input_loop_and_q_still_quits():
    # A hung-up terminal (an SSH drop) sends SIGHUP and SIGCONT; `kill -CONT` the same. Textual
    # restarts its application mode on every SIGCONT: a second input loop beside the running one,
    # sharing its exit pipe. On quitting, the loop Textual joins could sleep on after the other had
    # drained the pipe: `q` hung (2 of 3 tries in tmux) and SIGTERM no longer ended it; two such
    # gpuwatch processes were left running after their tmux sessions closed.
    argv = [sys.executable, "-m", "gpuwatch", "replay", str(RECORDING), "--speed", "0.5"]
    for _ in range(3):
        with pty_session(argv) as tui:
            _input_thread(tui.proc.pid, time.monotonic() + 60)
            os.kill(tui.proc.pid, signal.SIGCONT)
            time.sleep(1.0)
            assert _input_threads(tui.proc.pid) == 1
            tui.type(b"q")
            tui.proc.wait(timeout=20)
            assert tui.proc.returncode == 0, tui.text[-500:]


def test_a_stop_and_continue_resumes_the_input_loop():
    # SIGTSTP (kill -TSTP, a shell's job control) then SIGCONT (fg): Textual stops application mode
    # and closes the driver, which closed the exit pipe; the resumed loop then registered fd -1 and
    # the app ended with a ValueError traceback.
    argv = [sys.executable, "-m", "gpuwatch", "replay", str(RECORDING), "--speed", "0.5"]
    with pty_session(argv) as tui:
        _input_thread(tui.proc.pid, time.monotonic() + 60)
        os.kill(tui.proc.pid, signal.SIGTSTP)
        deadline = time.monotonic() + 10
        while Path(f"/proc/{tui.proc.pid}/stat").read_text().split()[2] != "T" and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(tui.proc.pid, signal.SIGCONT)
        _input_thread(tui.proc.pid, time.monotonic() + 10)  # the loop runs again
        time.sleep(0.5)
        assert tui.proc.poll() is None and "Traceback" not in tui.text, tui.text[-1500:]
        tui.type(b"q")
        tui.proc.wait(timeout=20)
        assert tui.proc.returncode == 0 and "Traceback" not in tui.text, tui.text[-1500:]


CONT_AFTER_THE_APP = """
import os, signal, sys
import gpuwatch.tui.app as tui_app
rearm = tui_app.rearm
def rearm_then_continue():  # run_app's first step once the app has closed
    rearm()
    os.kill(os.getpid(), signal.SIGCONT)
tui_app.rearm = rearm_then_continue
from gpuwatch.cli import main
sys.exit(main(sys.argv[1:]))
"""


def test_a_sigcont_after_the_app_closed_restarts_nothing():
    # Textual's SIGCONT handler outlives the app: a SIGCONT after it closed (kill -CONT, fg after a
    # Ctrl+Z while gpuwatch was ending) restarted application mode with no event loop to run it,
    # and gpuwatch ended with a RuntimeError traceback and exit code 1 instead of 0.
    argv = [sys.executable, "-c", CONT_AFTER_THE_APP, "replay", str(RECORDING), "--speed", "0.5"]
    with pty_session(argv) as tui:
        _input_thread(tui.proc.pid, time.monotonic() + 60)
        tui.type(b"q")
        tui.proc.wait(timeout=20)
        assert tui.proc.returncode == 0 and "Traceback" not in tui.text, tui.text[-1500:]
