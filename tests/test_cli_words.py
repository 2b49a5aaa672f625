"""The command line says what it did not understand, and reads what it was given by its bytes
(trial report findings 12, 20): unknown commands named, every option explained, a plain recording
named .gz read, a launcher-less non-Python PID refused."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
GW = [sys.executable, "-m", "gpuwatch"]
CPU_DEMO = ROOT / "tests" / "data" / "cpu_demo.jsonl"


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    # Run from "/", not the source tree: only the installed names (gpuwatch.*) resolve, as for a user.
    return subprocess.run(GW + list(args), capture_output=True, text=True, timeout=timeout, cwd="/")


def test_a_plain_recording_named_gz_is_read_by_its_bytes(tmp_path):
    plain = tmp_path / "x.jsonl.gz"
    shutil.copy(CPU_DEMO, plain)
    r = run("replay", str(plain), "--json", "--speed", "0")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() and len(r.stdout.splitlines()) == run(
        "replay", str(CPU_DEMO), "--json", "--speed", "0").stdout.count("\n")


def test_pid_1_is_refused_naming_it():
    # trial finding 12: `--pid 1` watched unrelated orphans (other users' gpuwatch instances) as the job.
    import psutil

    if "python" in os.path.basename(psutil.Process(1).cmdline()[0] if psutil.Process(1).cmdline() else ""):
        pytest.skip("PID 1 is a Python process here (a container whose init is the job)")
    r = run("--pid", "1", "--json", "--duration", "2")
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "process 1 (" in lines[0] and "init process" in lines[0], r.stderr


def test_a_non_python_process_with_no_python_below_is_refused(tmp_path):
    sleeper = subprocess.Popen(["sleep", "60"])
    try:
        for args in (("--pid", str(sleeper.pid), "--json", "--duration", "2"),
                     ("diagnose", "--pid", str(sleeper.pid), "--duration", "1")):
            r = run(*args)
            assert r.returncode == 2 and r.stdout == "", r.stderr
            lines = r.stderr.strip().splitlines()
            assert len(lines) == 1 and f"process {sleeper.pid} (sleep)" in lines[0], r.stderr
            assert "not a Python process" in lines[0]
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_shell_that_runs_python_is_still_watched_as_a_launcher():
    job = subprocess.Popen(["sh", "-c", f"{sys.executable} -c 'import time; time.sleep(30)'; true"])
    try:
        import psutil

        deadline = 200
        while deadline and not any("python" in " ".join(c.cmdline()) for c in psutil.Process(job.pid).children()):
            deadline -= 1
            psutil.wait_procs([], timeout=0.05)
        r = run("--pid", str(job.pid), "--json", "--duration", "1", "--no-stacks")
        assert r.returncode == 0, r.stderr
        assert r.stdout.strip()
    finally:
        for p in psutil.Process(job.pid).children(recursive=True):
            p.kill()
        job.kill()
        job.wait()


def test_the_stacks_reason_quotes_pyspy_where_nothing_explains_the_refusal():
    # trial finding 12: as root, with nothing known to block ptrace, py-spy's "Failed to get process
    # executable name" was reported as "the kernel refused the attach. Fix: run gpuwatch with sudo".
    from gpuwatch.collectors.pyspy import PtraceFacts, permission_reason

    root = PtraceFacts(euid=0, target_uid=0, ptrace_scope=None, cap_sys_ptrace=True, container=None)
    err = "Error: Failed to get process executable name. Check that the process is running."
    r = permission_reason(1, root, "/usr/bin/py-spy", err)
    assert "kernel refused" not in r and "sudo" not in r
    assert "Failed to get process executable name" in r
    user = permission_reason(42, PtraceFacts(1000, 1000, 1, False, None), "/p", "Error: Permission denied (os error 13)")
    assert "ptrace_scope is 1" in user and "sudo" in user


@pytest.mark.parametrize("args, says", [
    (["foo"], "unknown command 'foo'"),
    (["diagnos", "--replay", "x"], "unknown command 'diagnos' (did you mean 'diagnose'?)"),
    (["replya", "x"], "did you mean 'replay'?"),
    (["1234"], "give --pid 1234"),
])
def test_an_unknown_command_is_named(args, says):
    # trial finding 20: these said "the following arguments are required: --pid".
    r = run(*args)
    assert r.returncode == 2 and r.stdout == ""
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and "--pid" in lines[0], r.stderr


def _ticks_covered(report: dict) -> float:
    return report["source"]["covered_s"]


def test_diagnose_replay_duration_limits_the_replayed_span(tmp_path):
    # trial finding 20: --duration was ignored with --replay.
    import json

    whole, first = tmp_path / "whole.json", tmp_path / "first.json"
    assert run("diagnose", "--replay", str(CPU_DEMO), "--format", "json", "-o", str(whole)).returncode == 0
    r = run("diagnose", "--replay", str(CPU_DEMO), "--duration", "10", "--format", "json", "-o", str(first))
    assert r.returncode == 0, r.stderr
    w, f = json.loads(whole.read_text()), json.loads(first.read_text())
    ticks = [json.loads(ln) for ln in CPU_DEMO.read_text().splitlines()]
    ts = [t["frame"]["t"] for t in ticks if t.get("type") == "tick"]
    within = [t for t in ts if t - ts[0] < 10]
    assert f["source"]["frames"] == len(within) < w["source"]["frames"] == len(ts)
    assert f"--duration 10 s reached, {len(ts) - len(within)} later ticks left out" == f["source"]["ended"]


def test_every_option_has_help():
    # trial finding 20: no help for diagnose --duration, replay's file, demo --json, compare --format.
    from gpuwatch.cli import build_parser

    parser = build_parser()
    subs = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    missing = [f"{name} {a.dest}" for name, p in subs.choices.items() for a in p._actions
               if a.help in (None, "") and a.dest != "help"]
    assert missing == []


@pytest.mark.parametrize("path, unreadable", [
    (("host", "iowait_pct"), ("host", "iowait_pct")),   # a reading that may be missing: that reading
    (("host", "cpu_pct"), ("host",)),                   # a reading every host sample has: that sample
    (("disk", "target_read_bps"), ("disk", "target_read_bps")),
])
def test_one_out_of_range_field_is_unreadable_not_the_whole_tick(tmp_path, path, unreadable):
    # trial finding 20: a one-tick file with a single 1e999 field was rejected whole ("no readable
    # tick"). The field (or the collector sample it belongs to) now reads "unsupported", with why.
    import json

    header, tick = CPU_DEMO.read_text().splitlines()[:2]
    rec = json.loads(tick)
    rec["frame"][path[0]][path[1]] = "INF"
    p = tmp_path / "one.jsonl"
    p.write_text(header + "\n" + json.dumps(rec).replace('"INF"', "1e999") + "\n")
    r = run("replay", str(p), "--json", "--speed", "0")
    assert r.returncode == 0, r.stderr
    out = [json.loads(ln) for ln in r.stdout.splitlines()]
    assert len(out) == 1
    got = out[0]["frame"]
    for k in unreadable:
        got = got[k]
    assert "out of range" in got["unsupported"] and ".".join(path) in got["unsupported"], got
    other = "procs"
    assert "unsupported" not in out[0]["frame"][other]


def test_an_out_of_range_frame_time_is_still_a_bad_line(tmp_path):
    import json

    header, tick = CPU_DEMO.read_text().splitlines()[:2]
    rec = json.loads(tick)
    rec["frame"]["t"] = "INF"
    p = tmp_path / "one.jsonl"
    p.write_text(header + "\n" + json.dumps(rec).replace('"INF"', "1e999") + "\n")
    r = run("replay", str(p), "--json", "--speed", "0")
    assert r.returncode == 2 and "Frame.t: inf is out of range" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_range_error_writes_its_bounds_as_plain_numbers():
    # trial14: `gpuwatch --pid P --duration -3` said "must be between 0.1 and 1e+07".
    import argparse

    from gpuwatch.cli import _positive

    with pytest.raises(argparse.ArgumentTypeError) as e:
        _positive("--duration", 0.1, 10**7)("-3")
    assert str(e.value) == "--duration must be between 0.1 and 10000000, not -3"
