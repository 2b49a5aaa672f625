"""The stack collector with real py-spy against real Python jobs (tests/jobs/stack_targets.py), its
failure paths with real subprocesses, and its per-tick schedule.

Live assertions are on the majority label over several dumps, never on one dump, so a loaded
2-core machine (where a worker may be descheduled at the moment py-spy looks) does not flip them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

from gpuwatch.collectors.pyspy import (
    PtraceFacts, Pyspy, explain_failure, find_pyspy, is_torn_read, permission_reason,
)
from gpuwatch.pace import FULL, RELAXED
from gpuwatch.collectors.stacks import PROBE_RETRIES, StackCollector, label_threads, thread_state
from gpuwatch.collectors.target import Node, Target, Tree
from gpuwatch.model import stacks as S
from gpuwatch.model.values import Unsupported

JOBS = Path(__file__).parent / "jobs" / "stack_targets.py"
PYSPY = find_pyspy()
READY_TIMEOUT_S = 60.0  # torch import plus worker start on a busy 2-core machine

pytestmark = [
    pytest.mark.skipif(PYSPY is None, reason="py-spy is not installed"),
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="py-spy attach tests need Linux /proc"),
]


@contextmanager
def job(scenario: str, workers: int = 2):
    """A running stack_targets.py job; yields its READY info; kills it and its workers after, and
    removes its files (a killed job leaves its JPEGs behind)."""
    files = tempfile.TemporaryDirectory(prefix="gw-stack-target-")
    proc = subprocess.Popen([sys.executable, str(JOBS), scenario, "--seconds", "60", "--workers", str(workers),
                             "--tmp", files.name], stdout=subprocess.PIPE, text=True)
    try:
        info = None
        deadline = time.monotonic() + READY_TIMEOUT_S
        while info is None and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if not line:
                pytest.fail(f"{scenario} job exited early (rc {proc.wait()})")
            if line.startswith("READY "):
                info = json.loads(line[6:])
        assert info is not None, f"{scenario} job not ready in {READY_TIMEOUT_S} s"
        yield info
    finally:
        kids = []
        try:
            kids = psutil.Process(proc.pid).children(recursive=True)
        except psutil.Error:
            pass
        proc.kill()
        proc.wait()
        for k in kids:
            try:
                k.kill()
                k.wait(5)
            except psutil.Error:
                pass
        files.cleanup()


def majority(counter: Counter) -> str:
    return counter.most_common(1)[0][0]


def worker_labels(spy: Pyspy, info: dict, rounds: int) -> list[S.ThreadStack]:
    out, failed = [], []
    for _ in range(rounds):
        for pid in info["workers"]:
            res = spy.dump(pid)
            if not res.ok:  # a --nonblocking read may race the running worker (a torn read)
                failed.append(res.error)
                continue
            node = Node(pid, info["pid"], "worker", None, info["pid"], "pt_data_worker", "")
            out += [t for t in label_threads(res, node) if t.role == S.ROLE_WORKER]
        time.sleep(0.1)
    assert len(failed) <= rounds * len(info["workers"]) // 2, failed
    return out


MAIN_SAMPLE_GAP_S = 0.25
"""Between two dumps of a main thread. On a loaded 2-core machine a descheduled process stays where
it was for 100 ms and more, and back-to-back dumps read that one instant again (measured: 13 of 15
back-to-back pairs gave the same stack under load, against 9 of 15 spaced 0.2 s apart, those mostly
the same Queue.get wait). So samples are spread out to be independent looks at the thread."""


def main_thread_samples(spy: Pyspy, info: dict, want: int, max_dumps: int | None = None) -> list[S.ThreadStack]:
    """``want`` labelled main-thread samples of the job's main process, one dump every
    MAIN_SAMPLE_GAP_S; torn reads are retried, up to ``max_dumps`` dumps in all (3 x want)."""
    node = Node(info["pid"], os.getpid(), "main", None, None, "python", "")
    out, failed = [], []
    for _ in range(max_dumps or 3 * want):
        if len(out) >= want:
            break
        res = spy.dump(info["pid"])
        if res.ok:
            out += [t for t in label_threads(res, node) if t.role == S.ROLE_MAIN_THREAD]
        else:  # a --nonblocking read may race the running thread (a torn read)
            failed.append(res.error)
        time.sleep(MAIN_SAMPLE_GAP_S)
    assert len(out) >= want, f"{len(out)} main-thread samples in {len(out) + len(failed)} dumps: {failed}"
    return out


def no_pyspy_children() -> bool:
    """No py-spy below this process, running or unreaped (a zombie py-spy is a leak too). Other
    tests' finished children can linger as zombies whose cmdline is gone, so go by name."""
    live = []
    for p in psutil.Process().children(recursive=True):
        try:
            if "py-spy" in p.name():
                live.append(p)
        except psutil.Error:
            continue
    return not live


# -- real jobs ---------------------------------------------------------------------------------------

@pytest.mark.slow
def test_collector_main_waits_for_slow_workers_that_read_files():
    """Workers read a file in a loop with sleeps (slow storage); the main thread starves."""
    with job("slow_read") as info:
        c = StackCollector(Target(info["pid"]), interval=1.0, rate_hz=4.0)
        try:
            assert c.probe() is None
            samples = [c.sample() for _ in range(2)]
            while len(samples) < 6 and sum(t.role == S.ROLE_WORKER for s in samples for t in s.threads) < 3:
                samples.append(c.sample())  # a loaded host gets fewer worker dumps a tick
        finally:
            c.close()
    threads = [t for s in samples for t in s.threads]
    main = Counter(t.label for t in threads if t.role == S.ROLE_MAIN_THREAD)
    assert sum(main.values()) >= 5 and majority(main) == S.DATA_WAIT, main
    workers = [t for t in threads if t.role == S.ROLE_WORKER]
    assert workers, "the collector dumped no worker in two ticks"
    # On a loaded host a worker back from its sleep waits for a CPU (kernel state R) and a sample
    # there is rightly busy (it wants a CPU): at least one of the dumps is in the read or sleep.
    labels = Counter(t.label for t in workers)
    assert labels[S.W_IO] >= 1 and set(labels) <= {S.W_IO, S.W_BUSY}, labels
    assert {t.detail for t in workers} == {"stack_targets.read_slowly"}
    dumps = [d for s in samples for d in s.dumps]
    assert sum(d.ok for d in dumps) >= len(dumps) - 2 and all(d.ms > 0 for d in dumps), dumps
    assert {d.pid for d in dumps} >= {info["pid"]}
    assert all(len(t.frames) <= 12 for t in threads)
    assert no_pyspy_children()


@pytest.mark.slow
def test_a_wait_for_the_validation_loader_is_flagged_from_frames_beyond_the_kept_dozen():
    """An evaluation loop reads its loader through four wrapping iterators (as Lightning's fetchers
    do): the loop's frame lies beyond the twelve frames a sample keeps, and the sample still says the
    main thread waits inside an evaluation pass."""
    with job("validation") as info:
        main = main_thread_samples(Pyspy(PYSPY), info, want=6)
    waits = [t for t in main if t.label == S.DATA_WAIT]
    assert len(waits) >= 4, Counter(t.label for t in main)
    assert all(t.evaluating for t in waits), [t.frames for t in waits if not t.evaluating]
    assert all(len(t.frames) == 12 and not any("evaluate" in f for f in t.frames) for t in waits)


@pytest.mark.slow
@pytest.mark.quiet  # workers busy needs the main thread to take batches as they come: on a 2-core host
# beside another test's load it falls behind, the workers' queue fills and they rightly read idle
def test_workers_decoding_jpegs_are_busy_in_pil():
    with job("jpeg") as info:
        spy = Pyspy(PYSPY)
        workers = worker_labels(spy, info, rounds=8)
        main = main_thread_samples(spy, info, want=12)
    labels = Counter(t.label for t in workers)
    assert majority(labels) == S.W_BUSY, labels
    busy = [t for t in workers if t.label == S.W_BUSY]
    # In PIL = any frame in a PIL source file: decode, convert, resize and the tobytes copy for numpy
    # all count, however PIL names its functions (a hand list missed JpegImagePlugin.APP and
    # Image.tobytes). The rest is the default collate and the result queue.
    in_pil = [t for t in busy if any("(PIL/" in f for f in t.frames)]  # frames read "name (PIL/x.py:n)"
    assert len(in_pil) >= 0.5 * len(busy), Counter(t.detail for t in busy)
    waiting = Counter(t.label for t in main)
    assert waiting[S.DATA_WAIT] + waiting[S.DATA_IPC] >= len(main) / 2, waiting


@pytest.mark.slow
def test_num_workers_0_is_inline_load():
    with job("inline", workers=0) as info:
        c = StackCollector(Target(info["pid"]), interval=1.0, rate_hz=5.0)
        try:
            samples = [c.sample() for _ in range(2)]
        finally:
            c.close()
    main = [t for s in samples for t in s.threads if t.role == S.ROLE_MAIN_THREAD]
    labels = Counter(t.label for t in main)
    assert sum(labels.values()) >= 6 and majority(labels) == S.INLINE_LOAD, labels
    assert not [t for s in samples for t in s.threads if t.role == S.ROLE_WORKER]


# -- failure paths with real subprocesses --------------------------------------------------------------

def test_probe_without_pyspy_says_how_to_install():
    c = StackCollector(Target(os.getpid()), pyspy="/nonexistent/py-spy")
    problem = c.probe()
    assert isinstance(problem, Unsupported) and "pip install py-spy" in problem.reason
    assert isinstance(c.sample(), Unsupported)


def test_probe_of_a_non_python_process():
    proc = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.2)
        problem = StackCollector(Target(proc.pid)).probe()
    finally:
        proc.kill()
        proc.wait()
    assert isinstance(problem, Unsupported)
    assert f"process {proc.pid} is not a Python process" in problem.reason, problem.reason


def test_probe_of_a_python_process_passes():
    # The test process itself: a Python 3.10+ interpreter that py-spy 0.4 reads.
    assert StackCollector(Target(os.getpid())).probe() is None


TORN = "Error: Failed to copy PyCodeObject: Bad address (os error 14)"
"""py-spy 0.4.3's torn-read error."""
NO_INTERPRETER = "Error: Failed to find a python interpreter in the .data section"
"""py-spy 0.4.3's error when its check of the interpreter failed (a CI probe of a busy pytest process)."""


class _TornFirst(Pyspy):
    """Real py-spy dumps, the first ``torn`` of them replaced by ``error``; the real ones stop the
    target while they read it, and are tried again where they fail all the same, so that no real
    race adds a torn read to the ones counted."""

    def __init__(self, path: str, torn: int, error: str = TORN) -> None:
        super().__init__(path)
        self.torn, self.calls, self.error = torn, 0, error

    def dump(self, pid: int, nonblocking: bool = True):
        from gpuwatch.collectors.pyspy import DumpOutcome

        self.calls += 1
        if self.calls <= self.torn:
            return DumpOutcome(pid, (), 5.0, self.error)
        out = super().dump(pid, False)
        for _ in range(REAL_TRIES):  # a loaded box failed even a blocking dump's interpreter check
            if out.ok:
                break
            out = super().dump(pid, False)
        return out


REAL_TRIES = 5
"""Tries of each real dump: what the test counts is the probe's retries after the replaced ones,
and a real read that fails under load (CI with two xdist workers beside other jobs: three in a row
once) must not count as one."""


@pytest.mark.parametrize("error", [TORN, NO_INTERPRETER])
@pytest.mark.parametrize("torn", [1, 3])
def test_a_torn_read_at_the_probe_does_not_turn_stacks_off(torn, error):
    # A --nonblocking dump that races the target fails now and then (1 in 300 on a loaded VM), as
    # torn frames or as an interpreter check that failed; the probe's answer holds for the whole
    # watch, so it reads again instead of giving up.
    c = StackCollector(Target(os.getpid()))
    c._spy = spy = _TornFirst(PYSPY, torn, error)
    try:
        assert c.probe() is None
    finally:
        c.close()
    assert spy.calls == torn + 1


def test_an_interpreter_never_found_turns_stacks_off_with_py_spys_words():
    # A build py-spy cannot read answers the same every time: after the retries the probe gives up,
    # and the reason is py-spy's own, not "the stack changed while it was read".
    c = StackCollector(Target(os.getpid()))
    c._spy = spy = _TornFirst(PYSPY, 99, NO_INTERPRETER)
    try:
        problem = c.probe()
    finally:
        c.close()
    assert spy.calls == 1 + PROBE_RETRIES
    assert isinstance(problem, Unsupported)
    assert "Failed to find a python interpreter" in problem.reason and "changed while" not in problem.reason


def test_torn_reads_at_every_try_of_the_probe_say_so():
    c = StackCollector(Target(os.getpid()))
    c._spy = _TornFirst(PYSPY, 99)
    problem = c.probe()
    assert isinstance(problem, Unsupported) and "changed while py-spy read it" in problem.reason


@contextmanager
def lone_python():
    """A Python process with no children: its own main. (The test process is not one when the
    session's shared jobs run below it: then it reads as their launcher, and the job is the main.)"""
    proc = subprocess.Popen([sys.executable, "-c", "import time\nprint(flush=True)\nwhile True:\n    time.sleep(0.01)"],
                            stdout=subprocess.PIPE)
    try:
        # Its interpreter is up once it prints: py-spy started before that (a loaded machine) found
        # no Python in it ("not a Python process py-spy can read").
        assert proc.stdout is not None and proc.stdout.readline() == b"\n"
        yield proc.pid
    finally:
        proc.kill()
        proc.wait()
        proc.stdout.close()


def test_first_sample_is_the_probes_dump_and_later_ones_follow_the_plan():
    # The first frame waits for every collector's first sample: the probe's dump of the main
    # process is that sample, instead of a tick's dumps spread over a whole interval.
    with lone_python() as pid:
        c = StackCollector(Target(pid), interval=0.5, rate_hz=4.0)
        try:
            assert c.probe() is None
            first, second = c.sample(), c.sample()
        finally:
            c.close()
    assert [d.pid for d in first.dumps] == [pid] and first.dumps[0].ok
    assert any(t.role == S.ROLE_MAIN_THREAD for t in first.threads)
    # 4 Hz x 0.5 s, spread over the tick. A --nonblocking dump that raced the running target (a
    # torn read, more likely on a loaded machine) is retried at once: it adds a result, not a slot.
    torn = [d for d in second.dumps if not d.ok and "changed while py-spy read it" in (d.error or "")]
    assert {d.pid for d in second.dumps} == {pid} and len(second.dumps) - len(torn) == 2


def test_timeout_kills_and_reaps_pyspy(tmp_path):
    # A stand-in py-spy that never answers. A real one with a timeout under its ~10 ms dump is a race:
    # on a loaded machine it finished its dump while Popen was still returning, and beat a 0.001 s timeout.
    spy = _fake_pyspy(tmp_path, "time.sleep(60)")
    started = time.monotonic()
    res = Pyspy(spy, timeout=0.5).dump(os.getpid())
    assert not res.ok and "did not answer within 0.5 s" in res.error
    assert time.monotonic() - started < 10
    assert no_pyspy_children()


def test_garbage_and_silent_failures_are_results_not_exceptions():
    echo = Pyspy("/bin/echo").dump(os.getpid())  # prints its arguments: not JSON
    assert not echo.ok and "not JSON" in echo.error
    false = Pyspy("/bin/false").dump(os.getpid())
    assert not false.ok and false.error == "py-spy failed without saying why"
    dead = Pyspy(PYSPY).dump(2**22 + 7)  # above the default pid_max: no such process
    assert not dead.ok and "exited" in explain_failure(dead.error, 2**22 + 7)


def test_close_kills_the_dump_in_flight(tmp_path):
    # A stand-in py-spy that never answers, to exercise kill + reap (a real one answers in ~10 ms).
    hang = tmp_path / "py-spy"
    hang.write_text(f"#!{sys.executable}\nimport time\ntime.sleep(60)\n")
    hang.chmod(0o755)
    spy = Pyspy(str(hang), timeout=30)
    result = {}
    t = threading.Thread(target=lambda: result.update(r=spy.dump(os.getpid())))
    t.start()
    deadline = time.monotonic() + 10
    while spy._proc is None and time.monotonic() < deadline:
        time.sleep(0.01)
    started = time.monotonic()
    spy.kill()
    t.join(10)
    assert not t.is_alive() and time.monotonic() - started < 5
    assert not result["r"].ok and "killed" in result["r"].error
    assert no_pyspy_children()
    assert spy.dump(os.getpid()).error == "stack sampling stopped"


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to run py-spy as another user")
def test_real_permission_error_explained(monkeypatch):
    # Real py-spy as `nobody` against this root-owned process: the kernel refuses. The reason is
    # worded as for a gpuwatch run as `nobody` (py-spy runs as gpuwatch's user).
    proc = subprocess.run([PYSPY, "dump", "--pid", str(os.getpid()), "--json", "--nonblocking"],
                          capture_output=True, text=True, user=65534, timeout=20,
                          env={"RUST_BACKTRACE": "0", "PATH": "/usr/bin:/bin"})
    assert proc.returncode != 0
    monkeypatch.setattr(os, "geteuid", lambda: 65534)
    reason = explain_failure(proc.stderr + proc.stdout, os.getpid(), "/opt/py-spy")
    assert "may not read process" in reason and "sudo setcap cap_sys_ptrace+ep /opt/py-spy" in reason


def test_permission_reason_names_cause_and_fix():
    facts = PtraceFacts(euid=1000, target_uid=1001, ptrace_scope=2, cap_sys_ptrace=False, container="kubernetes")
    r = permission_reason(42, facts, "/v/bin/py-spy")
    assert "uid 1001" in r and "ptrace_scope is 2" in r and "CAP_SYS_PTRACE" in r
    assert "sudo setcap cap_sys_ptrace+ep /v/bin/py-spy" in r and "securityContext" in r
    assert "kernel.yama.ptrace_scope=0" in r
    docker = permission_reason(42, PtraceFacts(0, 0, None, False, "docker"))
    assert "--cap-add SYS_PTRACE" in docker and "ptrace_scope" not in docker


def test_torn_nonblocking_read_is_recognised():
    # Verbatim from a real dump of a JPEG-decoding worker on the loaded test VM.
    err = ("Error: Failed to get stack traces Caused by: 0: Failed to call get_stack_trace for thread "
           "140229512104832 1: Failed to copy PyFrameObject 2: Bad address (os error 14) 3: Bad address (os error 14)")
    assert is_torn_read(err) and not is_torn_read("Error: Failed to find python version from target process")
    assert "changed while py-spy read it" in explain_failure(err, 7)


def test_unsupported_python_version_explained():
    r = explain_failure("Error: Unsupported version of Python: 3.15.0", os.getpid())
    assert "pip install -U py-spy" in r


def test_thread_state_of_a_running_thread():
    assert thread_state(os.getpid(), threading.get_native_id()) == "R"
    assert thread_state(os.getpid(), 2**22 + 7) is None


# -- the schedule (pure) ---------------------------------------------------------------------------------

def tree(mains: int, workers: int) -> Tree:
    nodes = []
    for m in range(mains):
        mp = 1000 * (m + 1)
        nodes.append(Node(mp, 1, "main", m, None, "python", ""))
        nodes += [Node(mp + w + 1, mp, "worker", m, mp, "pt_data_worker", "") for w in range(workers)]
    return Tree(1000, tuple(nodes))


def test_default_schedule_covers_every_worker_round_robin():
    c = StackCollector(Target(os.getpid()))
    t = tree(1, 8)
    plans = [c.plan(t) for _ in range(16)]
    assert all(sum(n.pid == 1000 for n in p) == 2 for p in plans)  # main: 2 Hz
    worker_dumps = Counter(n.pid for p in plans for n in p if n.role == "worker")
    assert worker_dumps == Counter({1000 + w + 1: 1 for w in range(8)})  # each worker once in 16 s


def test_worker_dumps_are_taken_together_with_a_dump_of_their_main():
    """Issue 20 item 2: a worker's stack is read right after one of its main's (no wait between the
    two), so what the worker does is known at the instant the main thread waits, or trains."""
    from gpuwatch.collectors.stacks import _follows

    c = StackCollector(Target(os.getpid()))
    t = tree(2, 4)
    plans = [c.plan(t) for _ in range(16)]
    paired = [(p, k) for p in plans for k, n in enumerate(p) if n.role == "worker"]
    assert len(paired) >= 8
    assert all(_follows(p, k) for p, k in paired)


def test_many_ranks_share_the_budget():
    c = StackCollector(Target(os.getpid()))
    t = tree(8, 2)
    plans = [c.plan(t) for _ in range(10)]
    total = sum(len(p) for p in plans)
    assert total == pytest.approx(10 * c.max_dumps_per_s, abs=2)
    assert {n.pid for p in plans for n in p if n.role == "main"} == {1000 * (m + 1) for m in range(8)}


def test_fractional_rates_accumulate():
    c = StackCollector(Target(os.getpid()), rate_hz=0.5)
    plans = [c.plan(tree(1, 0)) for _ in range(6)]
    assert [len(p) for p in plans] == [0, 1, 0, 1, 0, 1]


def test_relaxed_pace_slows_main_dumps_and_thins_worker_dumps_and_full_pace_restores_them():
    c = StackCollector(Target(os.getpid()))
    t = tree(1, 8)
    c.set_pace(*RELAXED)
    relaxed = [c.plan(t) for _ in range(32)]
    mains = [sum(n.role == "main" for n in p) for p in relaxed]
    assert mains[:30] == [0, 0, 1] * 10  # one every 3 s, on a tick of its own
    assert sum(n.role == "worker" for p in relaxed for n in p) == 2  # one every 16 s
    c.set_pace(0.5)  # one factor: both rates
    assert sum(n.role == "worker" for _ in range(16) for n in c.plan(t)) == 4  # one every 4 s
    c.set_pace(*FULL)
    assert sum(n.role == "main" for n in c.plan(t)) == 2


# -- issue 22 item 11: a py-spy that forks and hangs, or floods its output ------------------------

def _fake_pyspy(tmp_path, body: str):
    p = tmp_path / "py-spy"
    p.write_text(f"#!{sys.executable}\nimport os, sys, time\n{body}\n")
    p.chmod(0o755)
    return str(p)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _gone(pid: int) -> bool:
    """Whether ``pid`` ends within 10 s (it was SIGKILLed: its parent's reaping is what waits)."""
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


@pytest.mark.parametrize("parent", ["time.sleep(600)", "print('[]')"], ids=["parent hangs", "child holds the pipes"])
def test_a_pyspy_that_forks_and_hangs_is_killed_with_its_child(tmp_path, parent):
    # The child writes its PID and holds the pipes: before, it was left orphaned and each dump
    # waited on it with no reason shown.
    pidfile = tmp_path / "child.pid"
    spy = _fake_pyspy(tmp_path, f"""
if os.fork() == 0:
    open({str(pidfile)!r}, "w").write(str(os.getpid()))
    time.sleep(600)
{parent}
""")
    res = Pyspy(spy, timeout=1.0).dump(os.getpid())
    assert not res.ok and "did not answer within 1 s; killed it" in res.error
    assert _gone(int(pidfile.read_text())), "py-spy's child was left running"
    assert no_pyspy_children()


def test_a_pyspy_that_floods_stdout_is_cut_off_at_the_bound(tmp_path, monkeypatch):
    import resource

    import gpuwatch.collectors.pyspy as pyspy_mod

    monkeypatch.setattr(pyspy_mod, "MAX_OUTPUT", 4 * 1024 * 1024)
    spy = _fake_pyspy(tmp_path, """
chunk = b"x" * 65536
while True:
    sys.stdout.buffer.write(chunk)
""")
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    res = Pyspy(spy, timeout=30).dump(os.getpid())
    assert not res.ok and res.error == "py-spy printed more than 4 MiB; killed it"
    grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert grown_kib < 64 * 1024, f"RSS peak grew {grown_kib} KiB"
    assert no_pyspy_children()


def test_a_probe_or_read_after_close_starts_no_pyspy(tmp_path):
    """The watch closes its collectors without waiting for their threads (gpuwatch/engine.py): a probe
    or read that starts just as the stack collector closes (a stop during start-up) must not run
    py-spy, which nothing would then kill."""
    ran = tmp_path / "ran"
    c = StackCollector(Target(os.getpid()), pyspy=_fake_pyspy(tmp_path, f"open({str(ran)!r}, 'a').write('x')"))
    c.close()
    assert isinstance(c.probe(), Unsupported)
    assert isinstance(c.sample(), Unsupported)
    assert not ran.exists()
