"""Label counts from the labelled py-spy samples: what the main thread, workers and pin thread do.

Each sample once (gpuwatch/diagnosis/stack_counts.py), counted per role over the verdict's own
window, widened per role until it holds enough samples: so the verdict's window and its stack
window are the same thing.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from gpuwatch.diagnosis.sample_memo import SampleMemo
from gpuwatch.diagnosis.timeline import WAIT_LABELS
from gpuwatch.diagnosis.stack_counts import each_sample
from gpuwatch.diagnosis.thresholds import (
    MIN_STACK_SAMPLES,
    MIN_WORKER_SAMPLES,
    STACK_STALE_S,
    STALE_TICKS,
    moderate_cut,
)
from gpuwatch.diagnosis.window import latest_reason
from gpuwatch.model import stacks as lb
from gpuwatch.model.evaluation import in_evaluation
from gpuwatch.model.frame import Frame
from gpuwatch.model.stacks import StackSample, ThreadStack

ACTIVE_LABELS = (lb.DISPATCH, lb.SYNC, lb.BACKWARD, lb.OPTIMIZER)
"""The main thread doing the training step itself (launch-bound: dispatch work, or spinning in a sync)."""
LAYOUT_WORDS = ("permute", "contiguous", "transpose", ".t()", "index_select", "channels_last",
                "memory_format", "torch.cat", "cat (", "copy_", "clone")
"""Layout and copy ops in a main-thread frame or user line: the memory-bound stage's supporting stacks."""


@dataclass(frozen=True, slots=True)
class StackSignals:
    available: bool
    reason: str | None = None
    main: Counter = field(default_factory=Counter)
    worker: Counter = field(default_factory=Counter)
    pin: Counter = field(default_factory=Counter)
    details: dict[tuple[str, str], Counter] = field(default_factory=dict)
    """(role, label) -> Counter of details (the hot function or user line)."""
    layout: int = 0
    """Main-thread samples whose frames name a layout/copy op."""
    blocked_outside: int = 0
    """Main-thread samples outside every training frame (OTHER) that py-spy read as idle: the thread
    was blocked (a sleep, a lock, a socket), not running nor ready to run."""
    validation_wait: int = 0
    """Main-thread samples waiting for a batch (DATA_WAIT, DATA_IPC) inside an evaluation pass: the
    validation loader's waits, which the training loader's workers do nothing for."""
    validation_load: int = 0
    """Main-thread samples loading data itself (INLINE_LOAD) inside an evaluation pass: a validation
    loader with num_workers=0, whatever the training loader has."""
    gil_elsewhere: int = 0
    """Main-thread samples, outside its waits for a batch, taken while another thread of its process
    (not a DataLoader worker or the pin-memory thread: one of the job's own, a logger, a dashboard)
    held the GIL, as py-spy reads it: the training loop's Python, between its ops, waits for it then.
    Where, by thread and function: details under GIL_KEY."""
    span_s: float = 0.0
    newest_main: tuple[str, ...] = ()
    """The labels of the main thread in the newest sample that holds it: what it does now, where a
    phase (torch.compile's compiler) is over once the thread has left it, however many older samples
    the window still counts."""
    n_main: int = field(init=False, compare=False, repr=False)
    """Main-thread samples counted (``main``'s total), as are ``n_worker`` and ``n_pin``: worked
    out once as the counts are made, not on each of the hundred-odd reads of a tick's decisions."""
    n_worker: int = field(init=False, compare=False, repr=False)
    n_pin: int = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:  # the counts are complete when made (replace() makes them again)
        object.__setattr__(self, "n_main", sum(self.main.values()))
        object.__setattr__(self, "n_worker", sum(self.worker.values()))
        object.__setattr__(self, "n_pin", sum(self.pin.values()))

    def share(self, *labels: str) -> float | None:
        n = self.n_main
        return sum([self.main.get(x, 0) for x in labels]) / n if n else None

    def wshare(self, *labels: str) -> float | None:
        n = self.n_worker
        return sum([self.worker.get(x, 0) for x in labels]) / n if n else None

    def pshare(self, *labels: str) -> float | None:
        n = self.n_pin
        return sum([self.pin.get(x, 0) for x in labels]) / n if n else None

    @property
    def wait(self) -> float | None:
        """Main thread waiting for a batch (DATA_WAIT + DATA_IPC): the TensorFlow profiler's "input %", seen from outside."""
        return self.share(lb.DATA_WAIT, lb.DATA_IPC)

    @property
    def moderate(self) -> float:
        """The main-thread share that counts as moderate over this window's sample count."""
        return moderate_cut(self.n_main)

    @property
    def active(self) -> float | None:
        return self.share(*ACTIVE_LABELS)

    @property
    def blocked_outside_share(self) -> float | None:
        """Share of the main thread's samples blocked in the job's own code, outside the step and
        the data wait: time no free CPU or GPU would give back (it bounds contention's gain)."""
        return self.blocked_outside / self.n_main if self.n_main else None

    def top(self, role: str, *labels: str) -> str | None:
        """The most frequent detail behind ``labels`` for ``role`` (e.g. the worker's hot function):
        one seen in at least two samples, or None. A one-sample detail won a 1-1-1 tie by the order the
        samples came in, and a remedy said "most often in JSONDecoder.raw_decode" beside another
        function's four samples in the minute (trial 30)."""
        c: Counter = Counter()
        for label in labels:
            d = self.details.get((role, label))
            if d:  # no empty Counter made for a label never seen
                c.update(d)
        c.pop("", None)
        best = c.most_common(1)
        # the labeller's network mark is for counting (lb.on_network); the sentences say it in words
        if not best or best[0][1] < 2:
            return None
        top = best[0][0]
        for mark in lb.NETWORK_DETAILS:
            top = top.removesuffix(mark)
        return top


BLOCKED = "blocked_outside"
"""Not a label: the key (with the main thread's role) of the details of its samples blocked outside
every training frame (``StackSignals.blocked_outside``), so where it blocks is read from those samples
alone, not from all its "other" samples, the running ones included."""
BLOCKED_KEY = (lb.ROLE_MAIN_THREAD, BLOCKED)
GIL_KEY = (lb.ROLE_MAIN_THREAD, "gil_elsewhere")
"""Not a label: the key of the details of the threads that held the GIL in the main thread's samples
(StackSignals.gil_elsewhere), ``thread name, in function``."""


def stack_signals(frames: Sequence[Frame], short_s: float, rank: int | None, factor: int = 1) -> StackSignals:
    """Counts over the last ``short_s`` seconds, each role's window widened back through ``frames``
    until it has enough samples (MIN_STACK_SAMPLES main, MIN_WORKER_SAMPLES worker/pin), so a slow
    sampler still gives a usable share and the main thread's share stays as recent as it can."""
    if not frames:
        return StackSignals(available=False, reason="no frames")
    now = frames[-1].t
    samples = [(f.t, s) for f, s in each_sample(reversed(frames))]  # newest first
    if not samples:
        return StackSignals(available=False, reason=latest_reason(frames, "stacks") or "no stack sample")
    age = now - samples[0][1].t
    if age > max(STACK_STALE_S, STALE_TICKS * frames[-1].interval):
        return StackSignals(available=False, reason=f"no new stack sample for {age:.0f} s")
    # A sample is as recent as it was taken, not as the newest frame that still carries it.
    samples = [(s.t, s) for _, s in samples]
    need = {lb.ROLE_MAIN_THREAD: MIN_STACK_SAMPLES * factor, lb.ROLE_WORKER: MIN_WORKER_SAMPLES * factor,
            lb.ROLE_PIN: MIN_WORKER_SAMPLES * factor}
    got = dict.fromkeys(need, 0)
    counts = {role: Counter() for role in need}
    details: dict[tuple[str, str], Counter] = {}
    layout = blocked = in_pass = in_load = gil = 0
    newest: tuple[str, ...] = ()
    for ft, s in samples:  # newest first
        parts = _PARTS.get(s, (id(s), rank), lambda s=s: _parts(s, rank))
        if not newest:
            newest = tuple(p[0] for p in parts[lb.ROLE_MAIN_THREAD])
        for role in need:
            if now - ft >= short_s and got[role] >= need[role]:
                continue  # this role has enough recent samples: older ones would only add lag
            labels = counts[role]
            for label, detail, in_layout, asleep, pass_wait, pass_load, holder in parts[role]:
                labels[label] += 1
                if holder:
                    gil += 1
                    h = details.get(GIL_KEY)
                    if h is None:
                        h = details[GIL_KEY] = Counter()
                    h[holder] += 1
                in_load += pass_load
                layout += in_layout
                blocked += asleep
                in_pass += pass_wait
                key = (role, label)
                d = details.get(key)
                if d is None:
                    d = details[key] = Counter()
                d[detail] += 1
                if asleep:
                    b = details.get(BLOCKED_KEY)
                    if b is None:
                        b = details[BLOCKED_KEY] = Counter()
                    b[detail] += 1
            got[role] += len(parts[role])
    main, worker, pin = counts[lb.ROLE_MAIN_THREAD], counts[lb.ROLE_WORKER], counts[lb.ROLE_PIN]
    span = max(0.0, samples[0][1].t - samples[-1][1].t)
    if not main:
        reason = _dump_errors(samples) or "no main-thread stack in the samples"
        return StackSignals(available=False, reason=reason, worker=worker, pin=pin, details=details, span_s=span)
    return StackSignals(available=True, main=main, worker=worker, pin=pin, details=details, layout=layout,
                        blocked_outside=blocked, validation_wait=in_pass, validation_load=in_load, span_s=span,
                        gil_elsewhere=gil,
                        newest_main=newest)


def _parts(s: StackSample, rank: int | None) -> dict[str, tuple[tuple[str, str, bool, bool, bool, bool, str], ...]]:
    """One sample's counted threads of ``rank``, by role, in the sample's order: (label, detail,
    whether a main thread's frames name a layout op, whether a main thread is blocked outside every
    training frame, whether a main thread waits for a batch inside an evaluation pass, whether it
    loads data itself inside one, and for a main thread without the GIL the thread of its process
    that held it, ``name, in function``, else ""). Worked out
    once per sample (sample_memo.py): a sample is counted in every window of the next minute, four
    windows a tick."""
    main = lb.ROLE_MAIN_THREAD
    # Threads the job started from Python hold a name; the autograd engine's (a C++ thread: "Dummy-N"
    # or none) runs the main thread's own backward, which it waits for, and is no rival for the GIL.
    holders = {t.pid: f"{t.thread_name}, in {t.detail}" if t.detail else t.thread_name
               for t in s.threads if t.role == lb.ROLE_OTHER_THREAD and t.owns_gil and t.thread_name
               and not t.thread_name.startswith("Dummy-") and t.label != lb.COMPILE and not _in_wait(t)}
    return {role: tuple((lb.pin_activity(t.label, t.detail, t.active) if role == lb.ROLE_PIN else t.label,
                         t.detail or "", role == main and _is_layout(t),
                         role == main and t.label == lb.OTHER and not t.active,
                         role == main and t.label in WAIT_LABELS and in_evaluation(t),
                         role == main and t.label == lb.INLINE_LOAD and in_evaluation(t),
                         holders.get(t.pid, "") if role == main and not t.owns_gil and t.label not in WAIT_LABELS
                         else "")
                        for t in s.threads if t.role == role and _mine(t, rank))
            for role in (lb.ROLE_MAIN_THREAD, lb.ROLE_WORKER, lb.ROLE_PIN)}


_PARTS: SampleMemo[dict[str, tuple[tuple[str, str, bool, bool, bool, bool, str], ...]]] = SampleMemo(512)
"""Each stack sample's threads by role, by sample and rank. Only the stack windows (up to WINDOW_S)
read them: 512 entries are minutes of a job's ticks (an 8-rank job's: a minute), and no sample is
held long after the history lets its frame go."""


WAIT_FILES = frozenset({"threading.py", "selectors.py", "queue.py", "socket.py", "ssl.py", "subprocess.py",
                        "multiprocessing/connection.py", "multiprocessing/queues.py", "multiprocessing/pool.py",
                        "multiprocessing/synchronize.py", "concurrent/futures/thread.py"})
"""Standard-library modules whose functions a thread waits in (a condition, a poll, a queue, a
socket). py-spy reads such a thread as the GIL's holder at the instant it wakes or parks: the
queues' feeder threads "held" it in 12-33 % of the main thread's samples on jobs with no thread of
their own at work (H200 benchmark and Lightning jobs); a thread in them is no rival for the GIL."""


def _in_wait(t: ThreadStack) -> bool:
    leaf = t.frames[0] if t.frames else ""
    return leaf.rpartition(" (")[2].rsplit(":", 1)[0] in WAIT_FILES


def _mine(t: ThreadStack, rank: int | None) -> bool:
    return rank is None or t.rank is None or t.rank == rank


def _is_layout(t: ThreadStack) -> bool:
    text = " ".join((t.detail or "",) + tuple(t.frames[:3])).lower()
    return any(w in text for w in LAYOUT_WORDS)


def _dump_errors(picked: list[tuple[float, StackSample]]) -> str | None:
    for _, s in picked:
        for d in s.dumps:
            if not d.ok and d.error:
                return f"py-spy failed: {d.error}"
    return None
