"""The command line: bad input is one line and exit 2; a target that exits ends a headless watch."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

GW = [sys.executable, "-m", "gpuwatch"]


def run(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(GW + list(args), capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize("args, fragment", [
    (["--pid", "abc"], "must be a process ID"),
    (["--pid", "-5"], "must be a process ID"),
    (["--pid", "0"], "not a valid process ID"),
    (["--pid", "4194000"], "no process with PID"),
    (["--pid", "1", "--interval", "0"], "--interval must be between"),
    (["--pid", "1", "--interval", "fast"], "--interval must be a number"),
    (["--pid", "1", "--duration", "-1"], "--duration must be between"),
    (["--pid", "1", "--gpu", "x"], "--gpu takes GPU indexes"),
    (["--pid", "1", "--stack-rate", "1000"], "--stack-rate must be between"),
    (["--pid", "1", "--prometheus", "host:99999"], "--prometheus takes"),
    (["--pid"], "expected one argument"),
    ([], "give --pid PID"),
    (["--pid", "1", "--bogus"], "unrecognized arguments"),
    (["--bogus"], "required: --pid"),
    (["replay", "/nonexistent/rec.jsonl"], "no recording at"),
    (["replay", "x.jsonl", "--speed", "-2"], "--speed must be between"),
    (["diagnose"], "either --pid PID or --replay FILE"),
    (["diagnose", "--replay", "x", "--format", "pdf"], "invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(args, fragment):
    r = run(*args)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("gpuwatch: error:") and fragment in lines[0], lines[0]
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("args, says", [
    (["--pid", "5", "--record", ""], "--record needs a file name"),
    (["replay", " "], "replay needs a file name"),
    (["diagnose", "--replay", ""], "--replay needs a file name"),
    (["diagnose", "--replay", "x.jsonl", "-o", ""], "-o needs a file name"),
    (["compare", "", "x.jsonl"], "compare needs a file name"),
])
def test_an_empty_file_name_is_refused(args, says):
    """``--record "$OUT"`` with OUT unset recorded nothing and said nothing (exit 0)."""
    from gpuwatch.cli import UsageError, parse_args

    with pytest.raises(UsageError, match=says):
        parse_args(args)


def test_own_pid_is_refused():
    from gpuwatch.cli import UsageError, check_pid

    with pytest.raises(UsageError, match="gpuwatch itself"):
        check_pid(os.getpid())


def test_other_users_process_is_refused_for_non_root():
    if os.geteuid() == 0:
        # Drop to 'nobody' after importing (its uid cannot read this venv), then ask about PID 1.
        code = ("import os, sys, psutil; from gpuwatch.cli import UsageError, check_pid; os.setuid(65534)\n"
                "try:\n    check_pid(1)\nexcept UsageError as e:\n    print(e, file=sys.stderr); sys.exit(2)")
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    else:
        r = run("--pid", "1", "--json")
    assert r.returncode == 2
    assert "not yours" in r.stderr or "another user" in r.stderr


def test_headless_ends_with_exit_0_when_the_target_exits():
    # The target exits when its stdin closes, which happens once gpuwatch has printed a tick: on a
    # loaded machine gpuwatch's own start can take longer than any fixed lifetime given to the target.
    target = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    gw = subprocess.Popen(GW + ["--pid", str(target.pid), "--json", "--no-stacks", "--duration", "30"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first = gw.stdout.readline()
        target.stdin.close()
        rest, err = gw.communicate(timeout=60)
    finally:
        target.kill()
        target.wait()
        gw.kill()
        gw.wait()
    assert gw.returncode == 0, err
    ticks = [json.loads(line) for line in (first + rest).splitlines()]
    assert ticks, "no ticks printed"
    assert all(t["schema"] == 1 and t["type"] == "tick" for t in ticks)
    last = ticks[-1]["frame"]["target"]
    assert last["alive"] is False and "exited" in last["exit_reason"]
    assert all(t["frame"]["target"]["alive"] for t in ticks[:-1])


def test_duration_and_record_then_replay(tmp_path):
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    rec = tmp_path / "rec.jsonl"
    try:
        r = run("--pid", str(target.pid), "--json", "--no-stacks", "--duration", "2.5", "--record", str(rec))
    finally:
        target.kill()
        target.wait()
    assert r.returncode == 0, r.stderr
    n = len(r.stdout.splitlines())
    assert 2 <= n <= 4
    assert len(rec.read_text().splitlines()) == n + 1  # header + ticks
    rep = run("replay", str(rec), "--json")
    assert rep.returncode == 0, rep.stderr
    assert [json.loads(x)["frame"]["seq"] for x in rep.stdout.splitlines()] == list(range(1, n + 1))


def test_record_to_unwritable_path_is_a_usage_error():
    target = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        r = run("--pid", str(target.pid), "--json", "--record", "/nonexistent-dir/x.jsonl")
    finally:
        target.kill()
        target.wait()
    assert r.returncode == 2 and "cannot write recording" in r.stderr


HOSTILE_NAME = "x\x1b]0;TITLE\x07\x1b[2J\u202e[bold]b.jsonl"
"""A file name that sets the terminal's title (OSC 0 ... BEL), clears the screen and flips the text
that follows (U+202E), as a recording named by someone else may be."""


@pytest.mark.parametrize("case", ["garbage", "missing", "exists"])
def test_an_error_line_writes_the_users_file_name_out(tmp_path, case):
    """`gpuwatch: error:` lines quote the file the user named: cleaned, as the reports' are (review
    32, item 9: the escapes reached the terminal raw)."""
    from tests.test_reliability_outputs import DEMO

    path = tmp_path / HOSTILE_NAME
    if case == "garbage":
        path.write_text("garbage\n")
        r, says = run("replay", "--json", str(path)), "line 1 is not a gpuwatch record"
    elif case == "missing":
        r, says = run("replay", str(path)), "no recording at"
    else:
        path.write_text("my notes\n")
        r, says = run("diagnose", "--replay", str(DEMO), "-o", str(path)), "exists: give --force"
    assert r.returncode == 2, r.stderr
    (line,) = r.stderr.strip().splitlines()
    assert line.startswith("gpuwatch: error:") and says in line, line
    assert "x\\x1b]0;TITLE\\x07\\x1b[2J\\u202e[bold]b.jsonl" in line, line
    assert not any(c in line for c in ("\x1b", "\x07", "\u202e")), line
