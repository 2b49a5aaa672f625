"""The command line says what it did not understand, and reads what it was given by its bytes
(trial report findings 12, 20): unknown commands named, every option explained, a plain recording
named .gz read, a launcher-less non-Python PID refused."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GW = [sys.executable, "-m", "gpuwatch"]
CPU_DEMO = ROOT / "tests" / "data" / "cpu_demo.jsonl"


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(GW + list(args), capture_output=True, text=True, timeout=timeout)


def test_a_plain_recording_named_gz_is_read_by_its_bytes(tmp_path):
    plain = tmp_path / "x.jsonl.gz"
    shutil.copy(CPU_DEMO, plain)
    r = run("replay", str(plain), "--json", "--speed", "0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() and len(r.stdout.splitlines()) == run(
        "replay", str(CPU_DEMO), "--json", "--speed", "0").stdout.count("\n")
