"""Nothing recorded is lost or overwritten (issue 22 items 8-9, issue 23 item 6): outputs refuse
the file being read and, without --force, any existing file; a report is written whole or not at
all; a closed or full stdout is one line and exit 2 with the report kept."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path

import pytest

GW = [sys.executable, "-m", "gpuwatch"]
DEMO = Path(__file__).parent / "data" / "cpu_demo.jsonl"


def run(*args: str, timeout: float = 60, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(GW + list(args), capture_output=True, text=True, timeout=timeout, **kw)


def one_line(r: subprocess.CompletedProcess, code: int, fragment: str) -> str:
    assert r.returncode == code, (r.returncode, r.stderr[-2000:])
    assert "Traceback" not in r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], lines
    return lines[0]


@pytest.fixture
def sleeper():
    p = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    yield p.pid
    p.kill()
    p.wait()


def test_diagnose_never_writes_over_the_recording_it_reads(tmp_path):
    rec = tmp_path / "run.jsonl"
    rec.write_bytes(DEMO.read_bytes())
    for extra in ([], ["--force"]):
        one_line(run("diagnose", "--replay", str(rec), "-o", str(rec), *extra), 2, "it is the file being read")
        link = tmp_path / "link.jsonl"
        link.unlink(missing_ok=True)
        link.symlink_to(rec)
        one_line(run("diagnose", "--replay", str(rec), "-o", str(link), *extra), 2, "it is the file being read")
    assert rec.read_bytes() == DEMO.read_bytes()


def test_an_existing_output_needs_force(tmp_path):
    out = tmp_path / "report.md"
    out.write_text("my notes\n")
    one_line(run("diagnose", "--replay", str(DEMO), "-o", str(out)), 2, "exists: give --force")
    assert out.read_text() == "my notes\n"
    r = run("diagnose", "--replay", str(DEMO), "-o", str(out), "--force")
    assert r.returncode == 0 and out.read_text().startswith("# gpuwatch diagnosis")
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]  # no temporary file left beside it


def test_record_onto_an_existing_file_is_refused_without_force(tmp_path, sleeper):
    # issue 23 item 6: an 820 KB recording became 23 KB.
    rec = tmp_path / "old.jsonl"
    rec.write_bytes(DEMO.read_bytes())
    one_line(run("--pid", str(sleeper), "--json", "--duration", "1", "--record", str(rec)), 2,
             "exists: give --force to overwrite it, or another name")
    assert rec.read_bytes() == DEMO.read_bytes()
    r = run("--pid", str(sleeper), "--json", "--duration", "1.5", "--record", str(rec), "--force")
    assert r.returncode == 0, r.stderr
    assert rec.read_bytes() != DEMO.read_bytes() and json.loads(rec.read_text().splitlines()[0])["type"] == "header"
    # On the way out it says where the recording is and how many ticks it holds.
    ticks = len(rec.read_text().splitlines()) - 1
    assert ticks == len(r.stdout.splitlines()) >= 1
    assert r.stderr.strip().splitlines()[-1] == f"gpuwatch: recording {rec}: {ticks} tick{'s' if ticks != 1 else ''}"


def test_quitting_the_tui_says_where_the_recording_is(tmp_path, sleeper):
    import time

    from tests.pty_session import pty_session

    rec = tmp_path / "tui.jsonl"
    with pty_session(GW + ["--pid", str(sleeper), "--record", str(rec)]) as tui:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not rec.exists() or len(rec.read_text().splitlines()) < 3):
            time.sleep(0.1)  # two ticks recorded
        tui.type(b"q")
        tui.proc.wait(timeout=30)
    ticks = len(rec.read_text().splitlines()) - 1
    assert tui.proc.returncode == 0 and ticks >= 2
    assert f"gpuwatch: recording {rec}: {ticks} ticks" in tui.text, tui.text[-500:]


@pytest.mark.parametrize("command", ["watch", "replay"])
def test_json_stream_to_a_closed_or_full_stdout_is_one_line_exit_2(sleeper, command):
    # item 9: `--json >/dev/full` ended in an OSError traceback, a closed stdout in AttributeError.
    argv = (["--pid", str(sleeper), "--json", "--duration", "3"] if command == "watch"
            else ["replay", str(DEMO), "--json"])
    closed = subprocess.run(GW + argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=60,
                            preexec_fn=lambda: os.close(1))
    one_line(closed, 2, "stdout is closed: --json has nowhere to write")
    with open("/dev/full", "w") as full:
        to_full = subprocess.run(GW + argv, stdout=full, stderr=subprocess.PIPE, text=True, timeout=60)
    one_line(to_full, 2, "cannot write the JSON stream to stdout: No space left on device; watching stopped")


@pytest.mark.parametrize("command", ["diagnose", "compare"])
def test_an_output_file_that_cannot_take_the_text_is_one_line_exit_2(command):
    """`-o /dev/full`: the write fails after the work is done. One line, exit 2 as every other bad
    output is (it was 1), and the text goes to stdout instead of being lost."""
    argv = (["diagnose", "--replay", str(DEMO)] if command == "diagnose"
            else ["compare", str(DEMO), str(DEMO)]) + ["-o", "/dev/full"]
    r = run(*argv)
    what = "report" if command == "diagnose" else "comparison"
    line = one_line(r, 2, f"cannot write /dev/full: No space left on device; the {what} went to stdout")
    assert line.startswith("gpuwatch: error: ")
    assert r.stdout.startswith("# gpuwatch diagnosis" if command == "diagnose" else "gpuwatch compare: before ")
