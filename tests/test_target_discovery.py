"""Which process is the job, on real processes (review 32, items 2, 3 and 7):

- gpuwatch run from the shell it is given (``--pid $$``) is not the job's Python process: a shell
  with no other Python below it is refused, and with one, that one is watched, never gpuwatch or
  its py-spy children (at the start check and in every walk of the tree during the watch).
- a Python process whose argv[0] was changed (``exec -a``, setproctitle) is Python by its executable.
- a RANK that is no plain number ("²", 5000 digits) is no rank, and stops nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import psutil
import pytest

from gpuwatch.collectors.target import (
    PYTHON_EXE,
    Target,
    _is_python,
    _read_rank,
    job_children,
)
from tests.test_target import wait_for

pytestmark = pytest.mark.timeout(120)
GW = f"{sys.executable} -m gpuwatch"
SLEEP_PY = "import time; time.sleep(60)"


def bash(script: str, env: dict | None = None) -> subprocess.CompletedProcess:
    """``bash -c script`` from "/" (only installed names resolve, as for a user)."""
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60, cwd="/",
                          env={**os.environ, **(env or {})})


def kill_tree(proc: subprocess.Popen) -> None:
    try:
        below = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        below = []
    for p in below:
        try:
            p.kill()
        except psutil.Error:
            pass
    proc.kill()
    proc.wait(10)


# -- gpuwatch below the process it is given --------------------------------------------------------
def test_pid_of_the_shell_gpuwatch_runs_in_is_refused():
    # `; true` keeps bash from exec'ing gpuwatch in its place: gpuwatch is the shell's child, as
    # from an interactive shell. Before the fix: rc 0, gpuwatch watched itself as the "main" process.
    r = bash(f"{GW} --pid $$ --json --duration 2; echo rc=$?")
    assert r.stdout == "rc=2\n", (r.stdout[:500], r.stderr)
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gpuwatch: error: process "), r.stderr
    assert "(bash) is not a Python process and runs no Python process below it" in lines[0], lines[0]


def test_a_shell_running_python_beside_gpuwatch_is_watched_without_gpuwatch_or_its_pyspy():
    # The watch with stacks on: gpuwatch's py-spy children are below the shell too, at every tick.
    r = bash(f"{sys.executable} -c '{SLEEP_PY}' & sleep 0.3; {GW} --pid $$ --json --duration 3; "
             "echo rc=$? shell=$$ sibling=$! >&2; kill $!")
    said = dict(w.split("=") for w in r.stderr.strip().splitlines()[-1].split())
    assert said["rc"] == "0", r.stderr
    shell, sibling = int(said["shell"]), int(said["sibling"])
    frames = [t["frame"] for line in r.stdout.splitlines() if (t := json.loads(line)).get("type") == "tick"]
    assert len(frames) >= 2, r.stdout[:500]
    for f in frames:
        roles = sorted((p["pid"], p["role"]) for p in f["procs"]["processes"])
        assert roles == sorted([(shell, "launcher"), (sibling, "main")]), roles
    stacks = frames[-1]["stacks"]
    if "unsupported" not in stacks:  # py-spy here: it sampled the sibling, not gpuwatch
        assert {t["pid"] for t in stacks["threads"]} == {sibling}, stacks


WALKER = """
import json, os, subprocess, sys
import psutil
from gpuwatch.collectors.target import Target, job_children
shell = os.getppid()
kid = subprocess.Popen(["sleep", "30"])  # stands for gpuwatch's py-spy child
try:
    out = {"me": os.getpid(), "kid": kid.pid, "shell": shell}
    out["children_files"] = sorted(Target(shell, refresh_s=0).tree().pids())
    exists = os.path.exists  # the fallback walk: psutil's host-wide scan, as on a kernel without them
    os.path.exists = lambda p: False if p.endswith("/children") else exists(p)
    t = Target(shell, refresh_s=0)
    out["psutil"] = sorted(t.tree().pids())
    out["psutil_again"] = sorted(t.tree().pids())  # a later walk, as during the watch
    os.path.exists = exists
    out["job_children"] = sorted(c.pid for c in job_children(psutil.Process(shell)))
    print(json.dumps(out))
finally:
    kid.kill()
"""


def test_every_walk_of_the_tree_leaves_out_gpuwatch_and_its_children():
    # The walker is a Python child of the shell it walks, with a child of its own, beside a sibling.
    r = bash(f"{sys.executable} -c '{SLEEP_PY}' & sibling=$!; sleep 0.3; "
             f"{sys.executable} -c \"$WALKER\"; echo sibling=$sibling >&2; kill $sibling", env={"WALKER": WALKER})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    sibling = int(r.stderr.strip().splitlines()[-1].split("=")[1])
    want = sorted({out["shell"], sibling})
    for key in ("children_files", "psutil", "psutil_again"):
        assert out[key] == want, (key, out)
    assert out["job_children"] == [sibling], out


# -- a Python process with another argv[0] ---------------------------------------------------------
def test_a_retitled_python_process_is_python_and_is_watched():
    # As `exec -a train-rank0 python ...`: argv[0] is the title, the executable is the interpreter.
    job = subprocess.Popen(["train-rank0", "-c", SLEEP_PY], executable=sys.executable)
    try:
        proc = psutil.Process(job.pid)
        assert wait_for(lambda: proc.cmdline()[:1] == ["train-rank0"])
        argv = tuple(proc.cmdline())
        assert not _is_python(argv)  # argv alone cannot tell
        assert _is_python(argv, proc)
        from gpuwatch.cli import _not_a_job

        assert _not_a_job(proc) is None
        tree = Target(job.pid).tree()
        assert [n.pid for n in tree.mains()] == [job.pid]
        r = subprocess.run([sys.executable, "-m", "gpuwatch", "--pid", str(job.pid), "--json", "--duration", "1",
                            "--no-stacks"], capture_output=True, text=True, timeout=60, cwd="/")
        assert r.returncode == 0, r.stderr
        last = json.loads(r.stdout.splitlines()[-1])
        assert [p["pid"] for p in last["frame"]["procs"]["processes"] if p["role"] == "main"] == [job.pid]
    finally:
        kill_tree(job)


def test_a_retitled_python_child_of_a_shell_is_its_main_and_the_shell_its_launcher():
    job = subprocess.Popen(["bash", "-c", f"(exec -a train-rank0 {sys.executable} -c '{SLEEP_PY}') & wait"])
    try:
        kid = wait_for(lambda: next((c for c in psutil.Process(job.pid).children()
                                     if c.cmdline()[:1] == ["train-rank0"]), None))
        assert kid is not None
        from gpuwatch.cli import _not_a_job

        assert _not_a_job(psutil.Process(job.pid)) is None
        tree = Target(job.pid).tree()
        assert tree.get(job.pid).role == "launcher"
        assert [n.pid for n in tree.mains()] == [kid.pid]
    finally:
        kill_tree(job)


def test_a_retitled_program_that_is_not_python_is_still_refused():
    job = subprocess.Popen(["train-rank0", "60"], executable="/bin/sleep")
    try:
        proc = psutil.Process(job.pid)
        assert wait_for(lambda: proc.cmdline()[:1] == ["train-rank0"])
        assert not _is_python(tuple(proc.cmdline()), proc)
        from gpuwatch.cli import _not_a_job

        assert _not_a_job(proc) == "is not a Python process and runs no Python process below it"
    finally:
        kill_tree(job)


@pytest.mark.parametrize("name, expected", [
    ("python", True), ("python3", True), ("python3.11", True), ("python3.13t", True), ("python3.11d", True),
    ("pythonw", True), ("pypy", True), ("pypy3.10", True),
    ("python-config", False), ("python3.11-config", False), ("ipython", False), ("mypython", False),
    ("pythonista", False), ("bash", False), ("", False),
])
def test_interpreter_names(name, expected):
    assert bool(PYTHON_EXE.fullmatch(name)) is expected


# -- RANK that is no plain number ------------------------------------------------------------------
@pytest.mark.parametrize("rank", ["²", "9" * 5000, "٣", "1e3", "-1"],
                         ids=["superscript", "5000-digits", "arabic-indic", "float", "negative"])
def test_a_rank_that_is_no_plain_number_is_no_rank_and_stops_nothing(rank):
    # "²" and "٣" (Arabic-Indic 3) pass str.isdigit() and int() raises on "²" and on 5000 digits
    # (past Python's 4300-digit limit): before the fix the walk raised and the process and stack
    # collectors stayed off for the whole watch.
    job = subprocess.Popen([sys.executable, "-c", SLEEP_PY], env={**os.environ, "RANK": rank, "LOCAL_RANK": "x"})
    ok = subprocess.Popen([sys.executable, "-c", SLEEP_PY], env={**os.environ, "RANK": rank, "LOCAL_RANK": " 3 "})
    try:
        assert wait_for(lambda: "RANK" in psutil.Process(job.pid).environ()
                        and "RANK" in psutil.Process(ok.pid).environ())
        assert _read_rank(job.pid) is None
        assert _read_rank(ok.pid) == 3  # the next variable still counts
        tree = Target(job.pid).tree()
        assert [(n.pid, n.rank) for n in tree.mains()] == [(job.pid, None)]
    finally:
        kill_tree(job)
        kill_tree(ok)


def test_a_superscript_rank_leaves_the_watch_its_processes_and_stacks():
    job = subprocess.Popen([sys.executable, "-c", SLEEP_PY], env={**os.environ, "RANK": "²"})
    try:
        r = subprocess.run([sys.executable, "-m", "gpuwatch", "--pid", str(job.pid), "--json", "--duration", "2"],
                           capture_output=True, text=True, timeout=60, cwd="/")
        assert r.returncode == 0, r.stderr
        frame = json.loads(r.stdout.splitlines()[-1])["frame"]
        assert "unsupported" not in frame["procs"], frame["procs"]
        assert [p["pid"] for p in frame["procs"]["processes"] if p["role"] == "main"] == [job.pid]
        assert "int()" not in json.dumps(frame["stacks"]), frame["stacks"]
    finally:
        kill_tree(job)
