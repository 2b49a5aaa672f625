"""What the overhead benchmarks share: the job's step counter, starting and stopping the job, the
observers they try, the alone/observer phase schedule, a process-tree CPU and memory sampler, and
markdown tables.

The step counter is an 8-byte file the job maps into memory and overwrites after every step (an
aligned store, no system call), so the benchmark reads the exact cumulative step count at any
instant without slowing the job or waiting for a log line.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import psutil

from bench.pty_run import Running, run_piped, run_pty

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COUNTER_BYTES = 8
TUI_SIZE = (200, 60)
"""Columns x lines of the pseudo-terminal a TUI observer draws into (the issue asks for 200x60: a
big terminal is the TUI's most expensive case)."""
SETTLE_S = 1.0
"""Pause after an observer's first frame before a measured phase starts (one default interval, so
its first collector round, e.g. py-spy's first attach, is behind it), and after stopping it before
the next alone phase starts (so its teardown counts in no phase)."""
ATTACH_TIMEOUT_S = 30.0
"""Longest wait for an observer's first frame; far above the 1.5 s target, so a slow start is
measured, not cut off, while a broken observer does not stall the benchmark."""


class StepCounter:
    """The job's side: ``set(n)`` after each step."""

    def __init__(self, path: str) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, COUNTER_BYTES)
            self._mm = mmap.mmap(fd, COUNTER_BYTES)
        finally:
            os.close(fd)

    def set(self, n: int) -> None:
        self._mm[:COUNTER_BYTES] = n.to_bytes(COUNTER_BYTES, "little")


class StepReader:
    """The benchmark's side: ``read()`` gives the job's cumulative steps (0 before the first)."""

    def __init__(self, path: str) -> None:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            os.ftruncate(fd, COUNTER_BYTES)
            self._mm = mmap.mmap(fd, COUNTER_BYTES, access=mmap.ACCESS_READ)
        finally:
            os.close(fd)

    def read(self) -> int:
        while True:  # two equal reads: never a value torn by a concurrent store
            a = int.from_bytes(self._mm[:COUNTER_BYTES], "little")
            if int.from_bytes(self._mm[:COUNTER_BYTES], "little") == a:
                return a

    def mark(self) -> tuple[float, int]:
        return time.monotonic(), self.read()


def rate(a: tuple[float, int], b: tuple[float, int]) -> float:
    """Steps per second between two ``mark()``s."""
    return (b[1] - a[1]) / (b[0] - a[0])


def start_job(device: str, workers: int, counter: str, log_path: str) -> subprocess.Popen:
    """bench/steady_job.py in its own session (so its DataLoader workers stop with it)."""
    argv = [sys.executable, "-m", "bench.steady_job", "--device", device, "--workers", str(workers),
            "--counter", counter]
    with open(log_path, "ab") as log:
        return subprocess.Popen(argv, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)


def add_job_options(p, workers: int) -> None:
    """The options both benchmarks give the steady job."""
    p.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    p.add_argument("--workers", type=int, default=workers, help=f"DataLoader workers of the job (default {workers})")
    p.add_argument("--warmup", type=float, default=None, help="seconds after the first step (default: 8 cuda, 3 cpu)")


def launch_job(ns) -> tuple[StepReader, subprocess.Popen]:
    """Start the steady job in ``ns.out`` with a fresh step counter; wait for it with wait_warm."""
    os.makedirs(ns.out, exist_ok=True)
    counter = os.path.join(ns.out, "steps.counter")
    if os.path.exists(counter):
        os.unlink(counter)
    reader = StepReader(counter)
    return reader, start_job(ns.device, ns.workers, counter, os.path.join(ns.out, "steady_job.log"))


def warmup_s(ns) -> float:
    return ns.warmup if ns.warmup is not None else (8.0 if ns.device == "cuda" else 3.0)


def wait_warm(reader: StepReader, job: subprocess.Popen, warmup_s: float, timeout: float = 300.0) -> None:
    """Wait for the first step, then ``warmup_s`` more (cuBLAS autotuning, clocks, worker start-up)."""
    deadline = time.monotonic() + timeout
    while reader.read() == 0:
        if job.poll() is not None:
            raise RuntimeError(f"the steady job exited with {job.returncode} before its first step")
        if time.monotonic() > deadline:
            raise RuntimeError(f"the steady job made no step within {timeout:g} s")
        time.sleep(0.1)
    time.sleep(warmup_s)
    if job.poll() is not None:
        raise RuntimeError(f"the steady job exited with {job.returncode} during warm-up")


def stop_job(job: subprocess.Popen) -> None:
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 5.0)):
        try:
            os.killpg(job.pid, sig)
        except (ProcessLookupError, PermissionError):
            break
        try:
            job.wait(wait)
            break
        except subprocess.TimeoutExpired:
            continue
    try:
        os.killpg(job.pid, signal.SIGKILL)  # workers that outlived the main process
    except (ProcessLookupError, PermissionError):
        pass


def find_tool(name: str) -> str | None:
    """``name`` on PATH, else next to this Python (a venv's bin/ that is not on PATH)."""
    found = shutil.which(name)
    if found:
        return found
    beside = os.path.join(os.path.dirname(sys.executable), name)
    return beside if os.access(beside, os.X_OK) else None


def gpuwatch_argv() -> list[str]:
    tool = find_tool("gpuwatch")
    return [tool] if tool else [sys.executable, "-m", "gpuwatch"]


@dataclass
class Observer:
    """One way of watching the job. ``argv`` is None when the tool is missing (``missing`` says so)."""

    name: str
    argv: list[str] | None
    pty: bool
    marker: str
    """Regular expression, matched on output without blanks and escapes (bench/pty_run.py): the
    first frame (TUI) or first sample (headless) that carries data."""
    missing: str = ""


def gpuwatch_tui(pid: int, *extra: str) -> Observer:
    # "PID <pid>" is drawn by the header only once a frame arrived (tui/panels/header.py; before,
    # it says "waiting for the first frame").
    return Observer("gpuwatch TUI" + (" " + " ".join(extra) if extra else ""),
                    [*gpuwatch_argv(), "--pid", str(pid), *extra], True, re.escape(f"PID {pid}"))


def gpuwatch_headless(pid: int, *extra: str) -> Observer:
    # its stdout goes to a pipe that is read and dropped, not to /dev/null, so the first tick is seen
    # (the attach time); reading a few kB per second costs the reader, not gpuwatch
    return Observer("gpuwatch --json" + (" " + " ".join(extra) if extra else ""),
                    [*gpuwatch_argv(), "--pid", str(pid), "--json", *extra], False, '"type":"tick"')


def external(name: str, tool: str, args: Sequence[str], pty: bool, marker: str) -> Observer:
    path = find_tool(tool)
    if path is None:
        return Observer(name, None, pty, marker, missing="not installed")
    return Observer(name, [path, *args], pty, marker)


def start(o: Observer) -> Running:
    """Start an installed observer: a TUI under a TUI_SIZE pty, anything else on a drained pipe."""
    assert o.argv is not None, o.missing
    if o.pty:
        return run_pty(o.argv, *TUI_SIZE, o.marker)
    return run_piped(o.argv, o.marker)


def schedule(observers: Sequence[str], rounds: int) -> list[str | None]:
    """Phases in order: None is "alone"; every observer phase sits between two alone phases, so it
    is compared with its neighbours, not with a baseline taken minutes away."""
    out: list[str | None] = [None]
    for _ in range(rounds):
        for name in observers:
            out += [name, None]
    return out


def neighbours_ratio(rates: Sequence[float], i: int) -> float:
    """Steps/s of phase ``i`` over the mean of phases ``i-1`` and ``i+1`` (both alone)."""
    return rates[i] / ((rates[i - 1] + rates[i + 1]) / 2)


@dataclass
class TreeSample:
    t: float
    own_cpu: float
    """CPU seconds of the observer process itself (user + system)."""
    kids_cpu: float
    """CPU seconds of all its descendants: reaped ones (its children_user/system) plus live ones."""
    own_rss: int
    kids_rss: int


@dataclass
class TreeSampler:
    """Samples a process and its descendants every ``every`` seconds on a thread.

    psutil rather than hand-read /proc: it gives the reaped-children times and RSS portably.
    A descendant that exits is counted in its parent's children times once reaped, so a dump
    subprocess that lives 20 ms between two samples is still counted.
    """

    pid: int
    every: float = 0.5
    samples: list[TreeSample] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._stop = threading.Event()
        self._lock = threading.Lock()  # psutil's oneshot() cache is per Process object, not thread-safe
        self._proc = psutil.Process(self.pid)
        self._thread = threading.Thread(target=self._loop, name=f"sample-{self.pid}", daemon=True)
        self._thread.start()

    def sample(self) -> TreeSample | None:
        with self._lock:
            return self._sample()

    def _sample(self) -> TreeSample | None:
        try:
            with self._proc.oneshot():
                c = self._proc.cpu_times()
                own_rss = self._proc.memory_info().rss
                kids = self._proc.children(recursive=True)
        except psutil.Error:
            return None
        kids_cpu, kids_rss = c.children_user + c.children_system, 0
        for k in kids:
            try:
                with k.oneshot():
                    kc = k.cpu_times()
                    kids_rss += k.memory_info().rss
            except psutil.Error:
                continue  # exited between the listing and the read: counted once reaped
            kids_cpu += kc.user + kc.system + kc.children_user + kc.children_system
        s = TreeSample(time.monotonic(), c.user + c.system, kids_cpu, own_rss, kids_rss)
        self.samples.append(s)
        return s

    def _loop(self) -> None:
        while not self._stop.wait(self.every):
            self.sample()

    def finish(self) -> None:
        """Stop sampling, with one last sample (call before stopping the observer)."""
        self._stop.set()
        self._thread.join()
        self.sample()


def thread_ticks(pid: int) -> dict[int, tuple[str, int]]:
    """tid -> (OS thread name, utime + stime in clock ticks) of every thread of ``pid`` now; the
    main thread is named "main". gpuwatch names its collector threads (gpuwatch/threadname.py)."""
    from gpuwatch.collectors.procfs import read_stats  # noqa: PLC0415 - bench imports gpuwatch late

    return {st.tid: ("main" if st.tid == pid else st.name, st.cpu_ticks)
            for st in read_stats(f"/proc/{pid}/task") or ()}


def thread_cpu_pct(before: dict[int, tuple[str, int]], after: dict[int, tuple[str, int]],
                   dt: float) -> dict[str, float]:
    """CPU % of a core per thread name between two :func:`thread_ticks` readings (threads started
    in between count from zero; ones that ended in between are lost), busiest first."""
    from gpuwatch.collectors.procfs import CLK_TCK  # noqa: PLC0415

    out: dict[str, float] = {}
    for tid, (name, ticks) in after.items():
        start = before.get(tid, (name, 0))[1]
        out[name] = out.get(name, 0.0) + 100.0 * (ticks - start) / CLK_TCK / dt
    return dict(sorted(out.items(), key=lambda kv: -kv[1]))


def spread(xs: Sequence[float]) -> dict[str, float | None]:
    if not xs:
        return {"mean": None, "min": None, "max": None}
    return {"mean": statistics.fmean(xs), "min": min(xs), "max": max(xs)}


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def machine() -> dict[str, object]:
    """What the numbers were measured on."""
    return {"cpus": os.cpu_count(), "python": sys.version.split()[0], "platform": sys.platform,
            "load_avg": os.getloadavg(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def write_results(out: str, name: str, result: dict, title: str, md: str) -> None:
    """``<name>.json`` and ``<name>.md`` (``# title`` over ``md``) in ``out``; ``md`` to stdout too."""
    with open(os.path.join(out, f"{name}.json"), "w") as f:
        json.dump(result, f, indent=1)
    with open(os.path.join(out, f"{name}.md"), "w") as f:
        f.write(f"# {title}\n\n{md}")
    print("\n" + md)
