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


def test_record_to_a_fifo_without_a_reader_is_refused_not_a_hang(tmp_path, sleeper):
    fifo = tmp_path / "rec.fifo"
    os.mkfifo(fifo)
    one_line(run("--pid", str(sleeper), "--json", "--duration", "1", "--record", str(fifo), timeout=30), 2,
             "a FIFO with no reader")
    got: list[bytes] = []
    reader = threading.Thread(target=lambda: got.append(open(fifo, "rb").read()), daemon=True)
    reader.start()
    r = run("--pid", str(sleeper), "--json", "--duration", "1.5", "--record", str(fifo), timeout=30)
    reader.join(10)
    assert r.returncode == 0 and got and json.loads(got[0].splitlines()[0])["type"] == "header"


def test_a_report_on_a_full_disk_leaves_no_partial_file(tmp_path):
    # -o on a full disk left a 4096-byte partial file. A 16 KiB tmpfs holds less than the report.
    mnt = tmp_path / "small"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=16k", "tmpfs", str(mnt)], capture_output=True).returncode:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "filler").write_bytes(b"x" * 12 * 1024)
        out = mnt / "report.md"
        r = run("diagnose", "--replay", str(DEMO), "-o", str(out))
        assert r.returncode == 1 and "No space left on device" in r.stderr and "Traceback" not in r.stderr
        assert r.stdout.startswith("# gpuwatch diagnosis")  # the report is not lost
        assert sorted(p.name for p in mnt.iterdir()) == ["filler"]
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_stdout_closed_or_full_is_one_line_exit_2_and_the_report_kept():
    # item 9: closed stdout gave an AttributeError traceback; /dev/full an OSError traceback.
    closed = subprocess.run(GW + ["diagnose", "--replay", str(DEMO)], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True, timeout=60,
                            preexec_fn=lambda: os.close(1))
    with open("/dev/full", "w") as full:
        to_full = subprocess.run(GW + ["diagnose", "--replay", str(DEMO), "--format", "json"], stdout=full,
                                 stderr=subprocess.PIPE, text=True, timeout=60)
    for r, why in ((closed, "stdout is closed"), (to_full, "No space left on device")):
        line = one_line(r, 2, f"cannot write the report to stdout: {why}; it was saved to ")
        kept = Path(re.search(r"saved to (\S+)$", line).group(1))
        assert "gpuwatch diagnosis" in kept.read_text() or json.loads(kept.read_text())["type"] == "report"
        kept.unlink()
