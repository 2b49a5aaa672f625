"""The stack collector: py-spy dumps of the training processes and their DataLoader workers, each
thread labelled (data wait, backward, busy decoding, ...), several dumps per tick.

Each tick dumps every main process ``rate_hz`` times, spread evenly over the tick, and its workers
round-robin, least recently dumped first, each right after one of its main's dumps: the two
samples are taken together, so the diagnosis sees what a worker does while the main thread is in
the state its dump shows (waiting for a batch, or training). Dumps are ``--nonblocking``: py-spy reads the target's
memory without stopping it (a blocking dump ptrace-stops every thread, which costs a torch process
with many threads milliseconds per dump; signals.md §4.4).
"""

from __future__ import annotations

import functools

import os
import threading
import time
from collections.abc import Sequence

from gpuwatch.collectors.base import Collector
from gpuwatch.collectors.pyspy import (
    DUMP_TIMEOUT_S, DumpOutcome, Pyspy, explain_failure, find_pyspy, is_torn_read, worth_retrying_probe,
)
from gpuwatch.collectors.stack_labels import classify, thread_role, waits_on_compiler
from gpuwatch.collectors.target import Node, Target, TargetGone, Tree
from gpuwatch.model.evaluation import pass_sites
from gpuwatch.model.stacks import (
    BACKWARD, OPTIMIZER, ROLE_MAIN_THREAD, ROLE_OTHER_THREAD, ROLE_WORKER, DumpResult, StackSample, ThreadStack,
)
from gpuwatch.model.values import JOB_EXITED, Unsupported

# How often to look. Measured on this project's 2-core CPU VM (Python 3.11.7, torch 2.13.0+cpu,
# py-spy 0.4.3, 2026-12-02) against a torch-importing job with DataLoader workers:
#   one `py-spy dump --json --nonblocking`: 9 ms wall, 8.5 ms CPU of the py-spy process (median of
#   30 per pid; p90 9.6 ms, max 10.8 ms; RUSAGE_CHILDREN), ~10 KB of JSON. Blocking: the same CPU.
#   Where it goes (2026-12-04, uprobes on py-spy's functions; bench/pyspy_cost.py splits it anywhere):
#   each dump is a new py-spy that learns the target from nothing. Of 9.7 ms: start-up 0.7 (exec,
#   arguments), ELF symbol tables 4.3 (this pyenv libpython keeps a 14,700-symbol .symtab and 36,000
#   relocations; Debian's stripped python3.11, 2,200 symbols: 0.7), a regex compile 0.8,
#   /proc/PID/maps 1.3 (475 lines, ~2.4 us each), finding and checking the interpreter 0.9,
#   thread names 0.8 (~200 names read: sys.modules up to threading, its dict, each thread's), the
#   stacks 0.5, JSON 0.1. The target decides all but start-up, and py-spy 0.4.3 keeps nothing
#   between runs (no flag for it; --subprocesses starts over for each child and is ignored with
#   --json), so only fewer dumps cost less.
#   Parsing and labelling one dump here: 0.1 ms CPU.
#   This collector at the defaults below, watching a job with 8 workers for 30 s: 2.5 dumps/s,
#   0.84 s of CPU in 30 s = 2.8 % of one core, children included (11.2 ms per dump all-in: py-spy,
#   starting it, the process-tree walk); at 1 worker dump/s, 3.3 %.
# Cost to the job: a nonblocking dump never stops it; it only competes for a CPU. On the H200
# (h200-signatures.md, "What observing costs") 25 nonblocking dumps/s (5 Hz, main + 4 workers) left
# the steps of a 3.1 ms/step bf16 job inside the no-observer range (1733 vs 1699-1738 in 6 s), so
# 2.5 dumps/s is far under 1 % of the job's steps. (Here, on a shared 2-core VM, step counts of a
# CPU job varied by +-40 % between 5 s phases with or without the collector: too noisy to add to that.)
# Cost to gpuwatch: the binding limit. Its budget is 5 % of one core in all (NVML, psutil, the TUI
# and this), so stacks take under 3 %.
DEFAULT_RATE = 2.0
"""Dumps per second of each main process: 60 main-thread samples per 30 s window, so a share is
known to about +-6 points (binomial standard error at 50 %)."""
DEFAULT_WORKER_RATE = 0.5
"""Worker dumps per second per main process, round-robin (least recently dumped first): with 8
workers each is seen every 16 s, 15 worker samples per 30 s window. Workers of one loader mostly do
the same thing (all busy, all waiting on storage, or all idle), so a rotating sample tells busy from
io from idle at a quarter of the cost of dumping every worker at the main's rate."""
MAX_DUMPS_PER_S = 4.0
"""Budget across all ranks (~4.5 % of a core at ~11 ms a dump). With several ranks the per-process
rates are scaled down to fit; asking for a higher ``rate_hz`` raises the budget in proportion."""
PROBE_RETRIES = 3
"""Dumps the probe tries again after a read that raced the target (a torn read, a failed interpreter
check: pyspy.worth_retrying_probe) before it gives up: its verdict disables stack sampling for the
whole watch, and one race must not."""
MAX_FRAMES = 12
"""Frames kept per thread (leaf-first), as the model promises."""


class StackCollector(Collector):
    field = "stacks"

    def __init__(
        self,
        target: Target,
        interval: float = 1.0,
        rate_hz: float = DEFAULT_RATE,
        worker_rate_hz: float | None = None,
        max_dumps_per_s: float | None = None,
        pyspy: str | None = None,
        dump_timeout: float = DUMP_TIMEOUT_S,
    ) -> None:
        self.target = target
        self.interval = interval
        self.rate_hz = rate_hz
        ratio = rate_hz / DEFAULT_RATE
        self.worker_rate_hz = DEFAULT_WORKER_RATE * ratio if worker_rate_hz is None else worker_rate_hz
        self.max_dumps_per_s = MAX_DUMPS_PER_S * max(1.0, ratio) if max_dumps_per_s is None else max_dumps_per_s
        self.dump_timeout = dump_timeout
        # A tick's dumps start within `interval`; the last may take dump_timeout; plus the tree walk.
        self.timeout = interval + dump_timeout + 3.0
        self._path = pyspy
        self._spy: Pyspy | None = None
        self._stop = threading.Event()
        self._main_credit: dict[int, float] = {}
        self._worker_credit: dict[int, float] = {}
        self._last_planned: dict[int, int] = {}  # worker pid -> plan number it was last picked in
        self._plans = 0
        self._probed: tuple[DumpOutcome, Node] | None = None
        """The probe's dump of the main process, handed out as the first sample."""
        self.pace = 1.0
        """Factor on the main processes' rate, set by the watch from the verdict (gpuwatch/pace.py)."""
        self.worker_pace = 1.0
        """Factor on the workers' rate, likewise."""

    # -- Collector -----------------------------------------------------------------------------
    def probe(self) -> Unsupported | None:
        problem = self._ensure_spy()
        if problem is not None:
            return problem
        assert self._spy is not None
        try:
            mains = self.target.tree().mains()
        except TargetGone as e:
            return Unsupported(f"stacks: {JOB_EXITED} ({e})")
        pid = mains[0].pid if mains else self.target.pid
        out = self._spy.dump(pid)
        for _ in range(PROBE_RETRIES):  # a race with the running target says nothing about whether stacks can be read
            if out.ok or not worth_retrying_probe(out.error):
                break
            out = self._spy.dump(pid)
        if out.ok and out.threads:
            if mains:
                self._probed = (out, mains[0])
            return None
        if not out.ok:
            reason = explain_failure(out.error or "", pid, self._spy.path)
            if not mains and "is not a Python process" in reason:
                return None  # a launcher that is not Python: its ranks are checked when they appear
            return Unsupported(f"stacks off: {reason}")
        return Unsupported(f"stacks off: py-spy found no Python threads in process {pid}")

    def sample(self) -> StackSample | Unsupported:
        problem = self._ensure_spy()
        if problem is not None:
            return problem
        assert self._spy is not None
        if self._probed is not None:
            # The first sample is the probe's dump, not a tick's worth spread over `interval`: the
            # first frame (which waits for every collector's first sample) comes half a second sooner.
            (out, node), self._probed = self._probed, None
            first = DumpResult(pid=node.pid, ok=True, ms=round(out.ms, 2), error=None)
            return StackSample(t=time.monotonic(), threads=tuple(label_threads(out, node)), dumps=(first,))
        try:
            tree = self.target.tree()
        except TargetGone as e:
            return Unsupported(f"stacks: {JOB_EXITED} ({e})")
        plan = self.plan(tree)
        start = time.monotonic()
        threads: list[ThreadStack] = []
        dumps: list[DumpResult] = []
        paced = [k for k, node in enumerate(plan) if not _follows(plan, k)]
        for k, node in enumerate(plan):
            if not _follows(plan, k):  # a worker right after its main is dumped at once: taken together
                due = start + paced.index(k) * self.interval / len(paced)
                if self._stop.wait(max(0.0, due - time.monotonic())):
                    break
            if time.monotonic() - start > self.interval:
                break  # slow dumps put us behind: the rest waits for the next tick
            out = self._dump(node.pid, dumps)
            if not out.ok and is_torn_read(out.error):
                out = self._dump(node.pid, dumps)  # skipping torn reads would under-count busy threads
            threads.extend(label_threads(out, node))
        return StackSample(t=time.monotonic(), threads=tuple(threads), dumps=tuple(dumps))

    def _dump(self, pid: int, results: list[DumpResult]) -> DumpOutcome:
        assert self._spy is not None
        out = self._spy.dump(pid)
        error = None if out.ok else explain_failure(out.error or "", pid, self._spy.path)
        results.append(DumpResult(pid=pid, ok=out.ok, ms=round(out.ms, 2), error=error))
        return out

    @staticmethod
    def merge(older: StackSample, newer: StackSample) -> StackSample:
        """Two samples taken between two frames, as one (the engine calls this)."""
        return StackSample(t=newer.t, threads=older.threads + newer.threads, dumps=older.dumps + newer.dumps)

    def set_pace(self, main: float, workers: float | None = None) -> None:
        """Rate factors (0..1) for the main processes and their workers (``workers`` None: as main)."""
        self.pace = max(0.0, min(1.0, main))
        self.worker_pace = self.pace if workers is None else max(0.0, min(1.0, workers))

    def close(self) -> None:
        self._stop.set()
        if self._spy is not None:
            self._spy.kill()

    # -- scheduling ------------------------------------------------------------------------------
    def plan(self, tree: Tree) -> list[Node]:
        """The processes to dump this tick, in order: mains at rate_hz, workers round-robin."""
        self._plans += 1
        mains = tree.mains()
        with_workers = [m for m in mains if tree.workers(m.pid)]
        want = len(mains) * self.rate_hz + len(with_workers) * self.worker_rate_hz
        budget = min(1.0, self.max_dumps_per_s / want) if want > 0 else 0.0
        slots: list[tuple[float, int, int, Node]] = []  # (due in the tick, main's index, 0 main / 1 worker, node)
        for j, m in enumerate(mains):
            for k, n in _take(self._main_credit, m.pid, self.rate_hz * self.interval * budget * self.pace):
                slots.append((k / n, j, 0, m))
            workers = tree.workers(m.pid)
            if not workers:
                self._worker_credit.pop(m.pid, None)
                continue
            due = list(_take(self._worker_credit, m.pid, self.worker_rate_hz * self.interval * budget * self.worker_pace))
            oldest = sorted(workers, key=lambda w: (self._last_planned.get(w.pid, 0), w.pid))
            main_at = sorted(t for t, jj, _, node in slots if jj == j and node is m)
            for (k, n), w in zip(due, oldest):  # least recently picked first; never twice in a tick
                # Right after one of its main's dumps (the latest due by then), so the worker's stack
                # shows what it does while the main thread is in the state its own dump shows.
                at = (k + 0.5) / n
                slots.append((max((t for t in main_at if t <= at), default=at), j, 1, w))
                self._last_planned[w.pid] = self._plans
        live = set(tree.pids())
        for d in (self._main_credit, self._worker_credit, self._last_planned):
            for pid in [p for p in d if p not in live]:
                del d[pid]
        slots.sort(key=lambda s: (s[0], s[1], s[2]))
        return [node for _, _, _, node in slots]

    def _ensure_spy(self) -> Unsupported | None:
        if self._stop.is_set():  # closed: the watch does not wait for this thread, nor kill a py-spy started now
            return Unsupported("stacks: stack sampling stopped")
        if self._spy is None:
            path = self._path or find_pyspy()
            if path is None or not os.access(path, os.X_OK):
                where = path or "next to this Python and on PATH"
                return Unsupported(f"stacks off: py-spy not found ({where}). Fix: pip install py-spy")
            self._spy = Pyspy(path, self.dump_timeout)
        return None


LABEL_MEMO = 4096
"""Labels kept by what decides them: the idle threads of a training loop show the same stack in
every dump, and its main thread cycles through a few dozen."""
_labels: dict[tuple, tuple[str, str, tuple[str, ...], frozenset[str]]] = {}
_drivers: dict[int, set[str]] = {}
"""Per training process, the pass-like sites (model/evaluation.py) seen under a backward or
optimizer sample: a function that trains is the job's driver (a ``def evaluate():`` that runs the
whole loop), and it no longer marks a sample as inside a pass."""
TRAINING_LABELS = (BACKWARD, OPTIMIZER)


SOURCE_ROLES = (ROLE_MAIN_THREAD, ROLE_WORKER)
"""Thread roles whose label may read the leaf line of their own source (stack_labels.classify)."""


def label_threads(out: DumpOutcome, node: Node) -> list[ThreadStack]:
    """Every thread of one dump, with its stack role, label and detail."""
    stacks = []
    for rec in out.threads:
        role = thread_role(rec, node.role)
        state = thread_state(rec.pid, rec.tid) if role != ROLE_OTHER_THREAD and rec.tid else None
        # A label is decided by the frames, the role, py-spy's activity flag and the kernel state;
        # a main thread's and a worker's also by their own source (a sync call, a read on the leaf
        # line), hence their PID.
        key = (rec.frames, role, state, rec.active, rec.pid if role in SOURCE_ROLES else 0)
        got = _labels.get(key)
        if got is None:
            if len(_labels) >= LABEL_MEMO:
                _labels.clear()
            label, detail = classify(rec, role, state, source_line=functools.partial(source_line, rec.pid))
            texts = tuple(f.text() for f in rec.frames)
            # Read from the whole stack: a wait for the validation loader's batch lies ten frames deep
            # in DataLoader internals, and the evaluation loop's frame is beyond the dozen kept.
            sites = pass_sites(texts, MAX_FRAMES) if role == ROLE_MAIN_THREAD else frozenset()
            got = _labels[key] = (label, detail, texts[:MAX_FRAMES], sites)
        label, detail, frames, sites = got
        evaluating = None
        if role == ROLE_MAIN_THREAD:
            drivers = _drivers.setdefault(rec.pid, set())
            if label in TRAINING_LABELS:  # a site under the training step is a driver, not a pass
                drivers.update(sites)
            evaluating = bool(sites - drivers)
            if len(_drivers) > LABEL_MEMO:
                _drivers.clear()
        stacks.append(ThreadStack(
            pid=rec.pid, tid=rec.tid, role=role, rank=node.rank, thread_name=rec.name, label=label,
            detail=detail, active=rec.active, owns_gil=rec.owns_gil, frames=frames, evaluating=evaluating,
        ))
    return waits_on_compiler(stacks)


@functools.lru_cache(maxsize=512)
def source_line(pid: int, filename: str, line: int) -> str | None:
    """Line ``line`` of the target's source file, read through /proc/PID/root so a job in a
    container is read from its own file system. Cached: a training loop hits the same few lines."""
    if line <= 0 or not filename.endswith(".py"):
        return None
    for path in (f"/proc/{pid}/root{filename}", filename):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                for n, text in enumerate(f, start=1):
                    if n == line:
                        return text.strip()
            return None
        except OSError:
            continue
    return None


def thread_state(pid: int, tid: int) -> str | None:
    """The kernel's one-letter state of a thread (R, S, D, ...), read right after the dump.

    Read by hand: psutil gives a process's status but not a thread's.
    """
    try:
        with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
            raw = f.read()
    except OSError:
        return None
    tail = raw[raw.rfind(b")") + 2:]  # the name may hold spaces and parentheses
    return tail[:1].decode("ascii", "replace") or None


def _follows(plan: Sequence[Node], k: int) -> bool:
    """A worker dump planned right after a dump of its own main process."""
    node = plan[k]
    return k > 0 and node.role == "worker" and plan[k - 1].role == "main" and plan[k - 1].pid == node.main_pid


def _take(credits: dict[int, float], pid: int, add: float) -> Sequence[tuple[int, int]]:
    """Add a tick's worth of dump credit; spend the whole dumps. Returns (k, n) for k in range(n)."""
    c = credits.get(pid, 0.0) + add
    n = int(c + 1e-9)
    credits[pid] = c - n
    return [(k, n) for k in range(n)]
