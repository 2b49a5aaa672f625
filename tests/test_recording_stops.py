"""Nothing recorded is lost, however a recording stops (field trial: Ctrl-C 0.6 s into
``gpuwatch --pid P --record X.jsonl.gz`` left a header-only gzip that failed to replay).

A recording stopped before its first tick keeps no file, as the TUI's ``r`` key already did; one
with ticks is complete gzip (``gzip.decompress`` reads it whole, trailer and all) even where a stop
signal or Ctrl-C breaks into a write or into the close itself. A report that neither its file nor
stdout can take is kept in a temporary file named with its format's suffix.
"""

from __future__ import annotations

import asyncio
import gzip
import json
import os
import signal
import sys
from dataclasses import replace

import pytest

from gpuwatch import recording
from gpuwatch.recording import Recorder, Tick, read_recording
from tests.test_codec import full_frame


def _frame(i: int):
    return replace(full_frame(), seq=i + 1, t=10.0 + i)


@pytest.mark.parametrize("name", ["r.jsonl.gz", "r.jsonl"])
def test_a_recording_closed_before_its_first_tick_keeps_no_file(tmp_path, name):
    p = tmp_path / name
    rec = Recorder(str(p), note="test")
    assert p.exists()  # the name is taken (and checked) from the start
    rec.close()
    assert not p.exists() and list(tmp_path.iterdir()) == []
    assert rec.summary().endswith(": stopped before its first tick, no file kept")


def test_a_recording_with_ticks_is_kept_and_says_how_many(tmp_path):
    p = tmp_path / "r.jsonl.gz"
    rec = Recorder(str(p), note="test")
    rec.write(_frame(0), None)
    rec.close()
    assert [i.frame.seq for i in read_recording(str(p))] == [1]
    assert rec.summary().endswith(": 1 tick")


def test_a_file_put_in_the_recordings_place_is_never_removed(tmp_path):
    """Only the file the Recorder created goes: one that replaced it since is someone else's."""
    p = tmp_path / "r.jsonl"
    rec = Recorder(str(p), note="test")
    os.unlink(p)
    p.write_text("my notes\n")
    rec.close()
    assert p.read_text() == "my notes\n" and not rec.removed


class _StopSource:
    """A live-like source: gives ``n`` frames, then a stop signal reaches gpuwatch (sent to itself)
    while it waits for the next frame."""

    live = True

    def __init__(self, n: int, sig: int) -> None:
        self.n = n
        self.sig = sig

    def describe(self) -> str:
        return "frames, then a stop signal"

    async def frames(self):
        for i in range(self.n):
            await asyncio.sleep(0)
            yield _frame(i)
        os.kill(os.getpid(), self.sig)
        await asyncio.sleep(60)  # the signal ends the watch long before this


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 0)], ids=["INT", "TERM"])
def test_a_headless_watch_stopped_before_its_first_tick_keeps_no_recording(tmp_path, capsys, sig, code):
    from gpuwatch.headless import run_headless

    p = tmp_path / "r.jsonl.gz"
    assert run_headless(_StopSource(0, sig), Recorder(str(p), note="test")) == code
    assert not p.exists()
    assert capsys.readouterr().err.strip().endswith("stopped before its first tick, no file kept")


def test_a_headless_watch_stopped_after_ticks_leaves_complete_gzip(tmp_path, capsys):
    from gpuwatch.headless import run_headless

    p = tmp_path / "r.jsonl.gz"
    assert run_headless(_StopSource(3, signal.SIGINT), Recorder(str(p), note="test")) == 130
    lines = gzip.decompress(p.read_bytes()).decode().splitlines()  # strict: the trailer must be there
    assert [json.loads(x)["type"] for x in lines] == ["header", "tick", "tick", "tick"]
    assert capsys.readouterr().err.strip().endswith(": 3 ticks")


async def test_quitting_the_tui_before_its_first_tick_keeps_no_recording(tmp_path):
    """``gpuwatch --pid P --record X`` quit (q, or a stop signal that ends the app) before a frame
    came: the same rule as the ``r`` key stopped early."""
    from tests.test_tui_fixtures import QueueSource, make_app

    p = tmp_path / "r.jsonl.gz"
    rec = Recorder(str(p), note="test")
    app = make_app(QueueSource(), recorder=rec)
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("q")
    app.close_recorder()  # as run_app does once the app ends
    assert not p.exists() and rec.removed


class _BreakingFile:
    """The recording's file, whose next write raises KeyboardInterrupt once ``armed`` (Ctrl-C
    landing in the middle of gpuwatch writing to it)."""

    armed = False

    def __init__(self, f) -> None:
        self._f = f

    def write(self, b: bytes) -> int:
        if _BreakingFile.armed:
            _BreakingFile.armed = False
            raise KeyboardInterrupt
        return self._f.write(b)

    def __getattr__(self, name: str):
        return getattr(self._f, name)


@pytest.fixture
def breaking(monkeypatch):
    opened = recording._open_for_recording
    monkeypatch.setattr(recording, "_open_for_recording", lambda path, force: _BreakingFile(opened(path, force)))
    _BreakingFile.armed = False
    yield
    _BreakingFile.armed = False


def _ticks_on_disk(p) -> list[int]:
    """The seqs of the ticks in the gzip file as it is now (no close: what an exit now leaves),
    read strictly: a missing or damaged trailer raises."""
    lines = gzip.decompress(p.read_bytes()).decode().splitlines()
    assert json.loads(lines[0])["type"] == "header"
    return [json.loads(x)["frame"]["seq"] for x in lines[1:]]


def test_ctrl_c_during_the_close_leaves_complete_gzip_with_every_tick(tmp_path, breaking):
    p = tmp_path / "r.jsonl.gz"
    rec = Recorder(str(p), note="test")
    for i in range(3):
        rec.write(_frame(i), None)
    _BreakingFile.armed = True  # lands in the trailer's write
    with pytest.raises(KeyboardInterrupt):
        rec.close()
    assert _ticks_on_disk(p) == [1, 2, 3]
    assert [i.frame.seq for i in read_recording(str(p)) if isinstance(i, Tick)] == [1, 2, 3]


def test_ctrl_c_during_a_tick_write_keeps_the_ticks_before_as_complete_gzip(tmp_path, breaking):
    p = tmp_path / "r.jsonl.gz"
    rec = Recorder(str(p), note="test")
    for i in range(2):
        rec.write(_frame(i), None)
    _BreakingFile.armed = True
    with pytest.raises(KeyboardInterrupt):
        rec.write(_frame(2), None)
    assert _ticks_on_disk(p) == [1, 2]  # the line cut in mid-write is not there, the two before are
    assert not rec.active  # and the recording stopped there


def test_ctrl_c_during_the_first_tick_write_keeps_no_file(tmp_path, breaking):
    p = tmp_path / "r.jsonl.gz"
    rec = Recorder(str(p), note="test")
    _BreakingFile.armed = True
    with pytest.raises(KeyboardInterrupt):
        rec.write(_frame(0), None)
    assert not p.exists()


def test_ctrl_c_during_a_plain_tick_write_keeps_whole_lines(tmp_path, breaking):
    p = tmp_path / "r.jsonl"
    rec = Recorder(str(p), note="test")
    rec.write(_frame(0), None)
    _BreakingFile.armed = True
    with pytest.raises(KeyboardInterrupt):
        rec.write(_frame(1), None)
    lines = p.read_text().splitlines()
    assert p.read_bytes().endswith(b"\n") and [json.loads(x)["type"] for x in lines] == ["header", "tick"]


class _FullStdout:
    """A stdout that takes nothing (a full disk)."""

    def write(self, text: str) -> int:
        raise OSError(28, "No space left on device")

    def flush(self) -> None:
        pass


@pytest.mark.parametrize("fmt", ["json", "md", "html"])
def test_a_report_nothing_could_take_is_kept_with_its_formats_suffix(monkeypatch, capsys, fmt):
    from gpuwatch.cli import main

    monkeypatch.setattr(sys, "stdout", _FullStdout())
    assert main(["diagnose", "--replay", "tests/data/cpu_demo.jsonl", "--format", fmt]) == 2
    err = capsys.readouterr().err
    assert "cannot write the report to stdout: No space left on device; it was saved to " in err, err
    kept = err.strip().rsplit("it was saved to ", 1)[1]
    try:
        assert kept.endswith(f".{fmt}"), kept
        text = open(kept, encoding="utf-8").read()
        if fmt == "json":
            assert json.loads(text)["type"] == "report"
        else:
            assert text.startswith("# gpuwatch diagnosis" if fmt == "md" else "<!DOCTYPE html>")
    finally:
        os.unlink(kept)


def test_a_stop_before_the_watch_starts_keeps_no_header_only_file(tmp_path, monkeypatch):
    """``--record`` opens the file before the collectors' first readings; Ctrl-C in that moment (0.3 s
    into a headless run, over a second into a TUI's on a busy host) left a 110-byte header-only gzip
    that replay refused. The watch command closes the recorder on every way out."""
    import argparse

    from gpuwatch import commands

    class _Watch:
        def prestart(self):
            raise KeyboardInterrupt

    class _Source:
        watch = _Watch()

    monkeypatch.setattr(commands, "live_source", lambda *a, **k: _Source())
    monkeypatch.setattr(commands.WatchOptions, "from_args", staticmethod(lambda ns: None))
    p = tmp_path / "r.jsonl.gz"
    ns = argparse.Namespace(json=True, pid=1, duration=None, record=str(p), force=False, prometheus=None)
    with pytest.raises(KeyboardInterrupt):
        commands.watch(ns)
    assert not p.exists()


def test_a_recording_with_a_header_and_no_tick_is_called_one(tmp_path, capsys):
    """Trial 32: a watch that ended before its first tick leaves a header alone; replay called it
    "not a gpuwatch recording". It is one, with nothing to replay: one line, exit 2."""
    from gpuwatch.cli import main

    path = tmp_path / "empty_watch.jsonl.gz"
    with gzip.open(path, "wt") as f:  # the header line as the recorder writes it (trial 32's file)
        f.write(json.dumps({"schema": 1, "type": "header", "gpuwatch": "0.1.0", "created": "2026-12-07T05:38:16+0000",
                            "host": "vm", "note": ""}) + "\n")
    assert main(["replay", "--speed", "0", "--json", str(path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "a gpuwatch recording with a header and no tick" in err[0], err
    assert "not a gpuwatch recording" not in err[0]
