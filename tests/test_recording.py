"""Recordings: written whole line by line, read back with bad lines named and skipped."""

from __future__ import annotations

import json
import os

import pytest

from gpuwatch.model.codec import SCHEMA_VERSION
from gpuwatch.recording import MAX_LINE, BadLine, Recorder, RecordingError, Tick, read_recording
from gpuwatch.replay import load_frames
from tests.test_codec import full_frame


def _write(path, n=3):
    rec = Recorder(str(path), note="test")
    for i in range(n):
        from dataclasses import replace

        rec.write(replace(full_frame(), seq=i + 1, t=10.0 + i), None)
    rec.close()


def test_written_recording_reads_back(tmp_path):
    p = tmp_path / "r.jsonl"
    _write(p, 3)
    items = list(read_recording(str(p)))
    assert [type(i) for i in items] == [Tick, Tick, Tick]
    assert [i.frame.seq for i in items] == [1, 2, 3]
    header = json.loads(p.read_text().splitlines()[0])
    assert header["type"] == "header" and header["schema"] == SCHEMA_VERSION


def test_truncated_and_foreign_lines_are_named_and_the_rest_replays(tmp_path):
    p = tmp_path / "r.jsonl"
    _write(p, 3)
    lines = p.read_text().splitlines()
    lines[2] = lines[2][: len(lines[2]) // 2]  # a truncated tick
    lines.insert(3, json.dumps({"schema": 99, "type": "tick", "frame": {}}))
    lines.insert(4, "[1, 2]")
    p.write_text("\n".join(lines) + "\n")
    items = list(read_recording(str(p)))
    bad = [i for i in items if isinstance(i, BadLine)]
    good = [i for i in items if isinstance(i, Tick)]
    assert [b.line for b in bad] == [3, 4, 5]
    assert "not valid JSON" in bad[0].reason
    assert "schema version 99" in bad[1].reason
    assert [g.frame.seq for g in good] == [1, 3]


def test_huge_line_is_skipped_without_reading_it_whole(tmp_path):
    p = tmp_path / "r.jsonl"
    _write(p, 3)
    lines = p.read_text().splitlines()
    # the third tick after the huge line: a tick later in time than the ones before it
    p.write_text("\n".join(lines[:3]) + "\n" + "x" * (MAX_LINE + 10) + "\n" + lines[3] + "\n")
    items = list(read_recording(str(p)))
    assert [type(i).__name__ for i in items] == ["Tick", "Tick", "BadLine", "Tick"]
    assert "longer than" in items[2].reason


def test_bad_frame_content_names_the_field(tmp_path):
    p = tmp_path / "r.jsonl"
    _write(p, 2)
    lines = p.read_text().splitlines()
    rec = json.loads(lines[1])
    rec["frame"]["gpus"][0]["index"] = "zero"
    p.write_text(lines[0] + "\n" + json.dumps(rec) + "\n" + lines[2] + "\n")
    item, good = list(read_recording(str(p)))
    assert isinstance(item, BadLine) and "gpus[0].index" in item.reason
    assert isinstance(good, Tick)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_disk_full_stops_recording_with_a_message():
    import threading

    rec = Recorder.__new__(Recorder)  # the header would fail in __init__ already
    rec.path = "/dev/full"
    rec._lock = threading.Lock()
    rec.lines = 0
    rec.error = None
    rec._f = rec._raw = open("/dev/full", "wb")
    with pytest.raises(RecordingError, match="recording stopped"):
        rec.write(full_frame(), None)
    assert not rec.active
    rec.write(full_frame(), None)  # further writes are no-ops, not crashes


def test_load_frames_reports_bad_lines(tmp_path):
    p = tmp_path / "r.jsonl"
    _write(p, 2)
    with open(p, "a") as f:
        f.write('{"schema": 1, "type": "tick", "frame": {"seq"\n')
    seen = []
    frames = load_frames(str(p), seen.append)
    assert len(frames) == 2 and len(seen) == 1 and seen[0].line == 4


def test_gzipped_recording_reads_back_and_a_cut_one_keeps_its_good_ticks(tmp_path):
    import gzip

    p = tmp_path / "r.jsonl"
    _write(p, 40)
    packed = gzip.compress(p.read_bytes())
    whole, cut = tmp_path / "r.jsonl.gz", tmp_path / "cut.jsonl.gz"
    whole.write_bytes(packed)
    cut.write_bytes(packed[: len(packed) * 2 // 3])
    assert [i.frame.seq for i in read_recording(str(whole))] == list(range(1, 41))
    items = list(read_recording(str(cut)))
    assert isinstance(items[-1], BadLine) and "damaged" in items[-1].reason
    ticks = [i for i in items if isinstance(i, Tick)]
    assert 0 < len(ticks) < 40 and [t.frame.seq for t in ticks] == list(range(1, len(ticks) + 1))


async def test_json_stream_and_its_recording_hold_the_same_lines(tmp_path):
    """--json --record writes each tick's line once for both: the recording's ticks are the stream."""
    import io

    from gpuwatch.headless import stream_json
    from tests.test_tui_fixtures import ListSource, synthetic_frames

    frames = synthetic_frames(5)
    out = io.StringIO()
    rec = Recorder(str(tmp_path / "r.jsonl"), note="test")
    await stream_json(ListSource(frames), out=out, recorder=rec)
    rec.close()
    streamed = out.getvalue().splitlines()
    recorded = (tmp_path / "r.jsonl").read_text().splitlines()[1:]
    assert recorded == streamed and len(streamed) == len(frames)
    assert json.loads(streamed[-1])["frame"]["seq"] == frames[-1].seq


def test_a_gz_name_records_real_gzip_that_zcat_reads(tmp_path):
    import gzip
    import shutil
    import subprocess

    p = tmp_path / "r.jsonl.gz"
    _write(p, 5)
    assert p.read_bytes()[:2] == b"\x1f\x8b"
    lines = gzip.decompress(p.read_bytes()).decode().splitlines()
    assert len(lines) == 6 and json.loads(lines[0])["type"] == "header"
    assert [i.frame.seq for i in read_recording(str(p))] == [1, 2, 3, 4, 5]
    if shutil.which("zcat"):
        out = subprocess.run(["zcat", str(p)], capture_output=True, check=True).stdout.decode()
        assert out.splitlines() == lines


def test_a_gz_recording_killed_mid_watch_keeps_every_tick_written(tmp_path):
    """Each line is sync-flushed whole to disk: a gpuwatch killed before close leaves no gzip
    trailer, and the reader takes that as the end, not as damage."""
    from dataclasses import replace

    p = tmp_path / "r.jsonl.gz"
    rec = Recorder(str(p), note="test")
    for i in range(4):
        rec.write(replace(full_frame(), seq=i + 1, t=10.0 + i), None)
    on_disk = p.read_bytes()  # what a kill -9 now leaves: no close, no trailer
    rec.close()
    killed = tmp_path / "killed.jsonl.gz"
    killed.write_bytes(on_disk)
    items = list(read_recording(str(killed)))
    assert [type(i).__name__ for i in items] == ["Tick"] * 4
    assert [i.frame.seq for i in items] == [1, 2, 3, 4]
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(on_disk[:-9])  # cut inside the last line: that line is named, the others kept
    items = list(read_recording(str(cut)))
    assert isinstance(items[-1], BadLine) and [i.frame.seq for i in items[:-1]] == [1, 2, 3]


def test_a_close_while_a_tick_is_being_written_waits_for_that_line(tmp_path, monkeypatch):
    """The TUI writes each tick on its recording thread (gw-record) and closes the recording on the
    main thread (q, the watch's end): a close in the middle of a line's write wrote the gzip trailer
    before that line (CRC error, the line lost) or left the writer without its file."""
    import threading
    from dataclasses import replace

    from gpuwatch import recording

    entered, release = threading.Event(), threading.Event()
    opened = recording._open_for_recording

    class SlowFile:
        """The recording's file, whose next write waits (a slow disk) once ``armed``."""

        armed = False

        def __init__(self, f) -> None:
            self._f = f

        def write(self, b: bytes) -> int:
            if SlowFile.armed:
                SlowFile.armed = False
                entered.set()
                release.wait(10)
            return self._f.write(b)

        def __getattr__(self, name: str):
            return getattr(self._f, name)

    monkeypatch.setattr(recording, "_open_for_recording", lambda path, force: SlowFile(opened(path, force)))
    failed: list[BaseException] = []
    for name in ("r.jsonl.gz", "r.jsonl"):
        entered.clear()
        release.clear()
        p = tmp_path / name
        rec = Recorder(str(p), note="test")
        rec.write(replace(full_frame(), seq=1, t=10.0), None)
        SlowFile.armed = True

        def write_second(rec: Recorder = rec) -> None:
            try:
                rec.write(replace(full_frame(), seq=2, t=11.0), None)
            except BaseException as e:  # noqa: BLE001 - the writer thread's failure is the finding
                failed.append(e)

        writer = threading.Thread(target=write_second)
        writer.start()
        assert entered.wait(10)
        closer = threading.Thread(target=rec.close)
        closer.start()
        closer.join(0.3)  # time for the close to run while the line is on its way
        release.set()
        writer.join(10)
        closer.join(10)
        assert not failed, (name, failed)
        assert [i.frame.seq for i in read_recording(str(p))] == [1, 2], name
