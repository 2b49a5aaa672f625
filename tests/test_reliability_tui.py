"""Reliability of the TUI: a tiny terminal and back, a live target SIGKILLed under it, and a
recording started on a full disk. Pilot (``App.run_test``) drives the real app."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from gpuwatch.assemble import WatchOptions, build_collectors
from gpuwatch.collectors.pyspy import find_pyspy
from gpuwatch.collectors.target import Target
from gpuwatch.engine import Watch
from gpuwatch.replay import load_frames
from gpuwatch.source import LiveSource, ReplaySource
from gpuwatch.tui.app import GpuwatchApp
from gpuwatch.tui.screens.main import MainScreen
from gpuwatch.tui.screens.too_small import TooSmallScreen
from tests.test_tui_fixtures import ListSource, screen_text, settle

DATA = Path(__file__).parent / "data"
RECORDINGS = [DATA / "cpu_demo.jsonl", DATA / "h200" / "healthy.jsonl"]  # real recordings
TINY, NORMAL = (40, 12), (80, 24)
SCREENS = [(), ("s",), ("question_mark",), ("1", "enter")]


def _app(source) -> GpuwatchApp:
    return GpuwatchApp(source, self_cpu=lambda: 1.5)  # own CPU frozen: the header stays the same


def _fits(text: str, size: tuple[int, int]) -> None:
    lines = text.splitlines()
    assert len(lines) == size[1] and all(len(x) <= size[0] for x in lines), text


@pytest.mark.parametrize("recording", RECORDINGS, ids=lambda p: p.stem)
@pytest.mark.parametrize("keys", SCREENS, ids=lambda k: "+".join(k) or "main")
async def test_resize_to_40x12_and_back_redraws_everything(recording, keys):
    app = _app(ReplaySource(str(recording), speed=0))
    async with app.run_test(size=NORMAL) as pilot:
        await settle(pilot, app)
        await pilot.press(*keys)
        await pilot.pause()
        before = screen_text(app)
        _fits(before, NORMAL)
        await pilot.resize_terminal(*TINY)
        await pilot.pause()
        tiny = screen_text(app)
        _fits(tiny, TINY)
        assert tiny.strip(), "nothing drawn at 40x12"
        await pilot.resize_terminal(*NORMAL)
        await pilot.pause()
        await pilot.pause()
        after = screen_text(app)
        assert app.is_running
    assert after == before  # everything that was readable at 80x24 is back, unchanged


TARGET = [sys.executable, "-c",
          "import os, time\n"
          "if os.fork() == 0:\n    time.sleep(120)\n    os._exit(0)\n"
          "while True:\n    time.sleep(0.005)\n"]


@pytest.mark.slow
@pytest.mark.skipif(find_pyspy() is None, reason="py-spy is not installed")
async def test_live_target_sigkilled_under_the_tui():
    proc = subprocess.Popen(TARGET, start_new_session=True)
    try:
        time.sleep(0.3)
        target = Target(proc.pid)
        opts = WatchOptions(interval=0.5, gpus=None, stack_rate=10.0)
        source = LiveSource(Watch(target, build_collectors(target, opts), interval=opts.interval))
        app = _app(source)
        async with app.run_test(size=NORMAL) as pilot:
            deadline = time.monotonic() + 30
            while len(app.analysis.frames) < 3 and time.monotonic() < deadline:
                await pilot.pause(0.1)
            assert len(app.analysis.frames) >= 3, "no live frames"
            os.killpg(proc.pid, signal.SIGKILL)  # the job and its child, mid-sample
            while app.ended is None and time.monotonic() < deadline + 30:
                await pilot.pause(0.1)
            await pilot.pause()
            assert app.is_running  # stays up to show what happened
            assert app.ended and app.ended.startswith("job ended"), app.ended
            assert "job ended" in screen_text(app)
            await pilot.press("q")
        assert app.return_code == 0
        me = psutil.Process()
        deadline = time.monotonic() + 10
        while any("py-spy" in c.name() for c in me.children()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not [c.pid for c in me.children() if "py-spy" in c.name()]
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


def _can_mount_tmpfs(path: Path) -> bool:
    if os.geteuid() != 0:
        return False
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4k", "tmpfs", str(path)], capture_output=True)
    return r.returncode == 0


async def test_starting_a_recording_on_a_full_disk_notifies_and_watching_goes_on(tmp_path):
    full = tmp_path / "full"
    full.mkdir()
    if not _can_mount_tmpfs(full):
        pytest.skip("needs root and tmpfs mounts")
    try:
        filler = full / "filler"
        with contextlib.suppress(OSError), open(filler, "wb") as f:  # leave no room for a header
            f.write(b"x" * 65536)
        # frames of a real recording from a source that stays open: an ended one records nothing
        source = ListSource(load_frames(str(RECORDINGS[0])), hold=True)
        app = GpuwatchApp(source, self_cpu=lambda: 1.5, record_dir=str(full))
        async with app.run_test(size=NORMAL) as pilot:
            await pilot.pause(0.5)
            await pilot.press("r")
            await pilot.pause(0.2)
            assert app.is_running and app.recording_path is None
            assert any("Cannot record" in n.message and "No space left" in n.message for n in app._notifications)
    finally:
        subprocess.run(["umount", str(full)], check=False)


async def test_a_terminal_too_small_says_so_lets_only_quit_through_and_gives_the_screen_back():
    """At 20x10 the main screen ran the verdict three words a line and its footer kept only
    '^p palette'; now a notice says what size is needed, and only q acts (Escape would have taken
    the notice away, F1 opened a help nobody could read)."""
    app = _app(ReplaySource(str(RECORDINGS[0]), speed=0))
    async with app.run_test(size=(20, 10)) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        _fits(text, (20, 10))
        words = " ".join(text.split())
        assert "Terminal 20x10: gpuwatch needs at least 60x16." in words and "press q to quit" in words
        for key in ("escape", "f1", "ctrl+p", "s", "1", "enter"):
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, TooSmallScreen), key
        await pilot.resize_terminal(60, 15)
        await pilot.pause()
        assert "60x15" in " ".join(screen_text(app).split())
        await pilot.resize_terminal(*NORMAL)
        await pilot.pause()
        await pilot.pause()
        assert isinstance(app.screen, MainScreen) and len(app.screen_stack) == 1
        assert "I/O" in screen_text(app)  # the latest frame is drawn again
        await pilot.resize_terminal(59, 24)
        await pilot.pause()
        await pilot.press("q")
        await pilot.pause()
        assert not app.is_running and app.return_code == 0
