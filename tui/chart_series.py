"""What the main screen's time charts plot, read once per frame: GPU util (NVML), SM active and memory;
the main thread's input time and worker CPU; PCIe RX and TX. Over the GPUs the job uses (several: their mean, and
the sum of their PCIe traffic).

Each frame's readings are kept by the frame's identity, so a tick reads only the new frame, not the
whole window again (the window holds the frames alive, so an id cannot stand for another frame).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from operator import attrgetter

from gpuwatch.diagnosis.thresholds import WINDOW_S
from gpuwatch.model.frame import Frame
from gpuwatch.model.stacks import INPUT_LABELS, ROLE_MAIN_THREAD, ROLE_WORKER, StackSample
from gpuwatch.model.values import known
from gpuwatch.model.verdict import Verdict
from gpuwatch.tui import format as fmt
from gpuwatch.tui.chart_draw import Plot, Series
from gpuwatch.tui.gpu_metrics import METRICS

_BY_KEY = {m.key: m for m in METRICS}


@dataclass(frozen=True, slots=True)
class Reading:
    """One frame's values for the charts (None: not readable in that frame)."""

    busy: float | None
    sm: float | None
    mem: float | None
    """Percent of the GPUs' memory in use."""
    rx: float | None
    tx: float | None
    gpus: int
    """GPUs the values are over."""
    stamp: float | None
    """The time of the frame's stack sample (a stalled collector repeats one: counted once)."""
    wait: int
    main: int
    """Main-thread stack samples new in this frame, and how many of them are on the input (INPUT_LABELS)."""
    wait_share: float | None
    """Percent of the main thread's samples over the diagnosis window on the input (INPUT_LABELS)."""
    worker_cpu: float | None
    workers: int | None = None
    """The job's DataLoader workers in the frame (None: its processes were not read)."""


def _mean(xs: list[float]) -> float | None:
    return sum(xs) / len(xs) if xs else None


def _read_gpus(frame: Frame) -> tuple[float | None, float | None, float | None, float | None, float | None, int]:
    gpus = frame.gpus if known(frame.gpus) else ()
    mine = [g for g in gpus if g.used_by_target] or list(gpus)  # type: ignore[union-attr]
    pcie = {p.index: p for p in frame.pcie} if known(frame.pcie) else {}  # type: ignore[union-attr]
    busy, sm, used, total, rx, tx = [], [], 0.0, 0.0, [], []
    for g in mine:
        p = pcie.get(g.index)
        for key, out in (("util", busy), ("sm", sm), ("rx", rx), ("tx", tx)):
            x = _BY_KEY[key].read(g, p)
            if known(x):
                out.append(float(x))  # type: ignore[arg-type]
        if known(g.mem_used) and known(g.mem_total) and g.mem_total:
            used += float(g.mem_used)  # type: ignore[arg-type]
            total += float(g.mem_total)  # type: ignore[arg-type]
    mem = 100.0 * used / total if total else None
    return _mean(busy), _mean(sm), mem, (sum(rx) if rx else None), (sum(tx) if tx else None), len(mine)


def _read_stacks(frame: Frame, previous: Reading | None) -> tuple[float | None, int, int]:
    s = frame.stacks
    if not isinstance(s, StackSample) or (previous is not None and previous.stamp == s.t):
        return (s.t if isinstance(s, StackSample) else None), 0, 0
    main = [t for t in s.threads if t.role == ROLE_MAIN_THREAD]
    return s.t, sum(1 for t in main if t.label in INPUT_LABELS), len(main)


def _worker_cpu(frame: Frame) -> tuple[float | None, int | None]:
    """The workers' mean CPU percent, and how many there are."""
    if not known(frame.procs):
        return None, None
    cpu = [p.cpu_pct for p in frame.procs.processes if p.role == ROLE_WORKER]  # type: ignore[union-attr]
    return _mean(cpu), len(cpu)


_COLS = ("busy", "sm", "mem", "wait_share", "worker_cpu", "rx", "tx")


class ChartSeries:
    """The charts' readings by frame, and the plots over a window of frames."""

    def __init__(self) -> None:
        self._rows: dict[int, Reading] = {}
        self._ids: list[int] = []
        self._cols: dict[str, tuple[float | None, ...]] = {}
        self._last_ids: list[int] = []
        self._before_ids: list[int] = []
        """The ids of the last two readings() calls: kept columns hold only if the one before was theirs."""
        self._held: tuple[tuple[Frame, ...], tuple[Frame, ...]] = ((), ())
        """The frames of the last two readings() calls, whose ids the caches hold, kept alive with
        them: a freed frame's id is the next new frame's (tests/test_tui_frame_caches.py)."""

    def readings(self, frames: Sequence[Frame]) -> list[Reading]:
        """A reading per frame, oldest first; frames not seen before are read now (in order: a
        reading looks at those of the frames before it). The known ones are looked up in bulk (the
        window is up to 400 frames at 200 columns, and one of them is new a tick)."""
        ids = list(map(id, frames))
        out: list[Reading | None] = list(map(self._rows.get, ids))
        for i in [i for i, row in enumerate(out) if row is None]:
            out[i] = self._read(frames[i], frames, i, out)
        self._rows = dict(zip(ids, out))
        self._held = (self._held[1], tuple(frames))
        self._before_ids, self._last_ids = self._last_ids, ids
        return out  # type: ignore[return-value] - every None was read

    def _read(self, f: Frame, frames: Sequence[Frame], i: int, rows: list[Reading | None]) -> Reading:
        """Frame ``i``'s reading; ``rows[:i]`` hold the readings of the frames before it."""
        busy, sm, mem, rx, tx, n = _read_gpus(f)
        stamp, wait, main = _read_stacks(f, rows[i - 1] if i else None)
        # the share over the diagnosis window: this frame's samples and those of the frames before
        # it inside WINDOW_S (their readings are in `rows`, in order)
        w, m = wait, main
        j = i - 1
        while j >= 0 and f.t - frames[j].t < WINDOW_S:
            before = rows[j]
            assert before is not None
            w += before.wait
            m += before.main
            j -= 1
        share = 100.0 * w / m if m else None
        return Reading(busy, sm, mem, rx, tx, n, stamp, wait, main, share, *_worker_cpu(f))

    def _columns(self, ids: list[int], rows: list[Reading]) -> dict[str, tuple[float | None, ...]]:
        """The plotted columns of ``rows``. When the window only slid (frames left at the start, new
        ones came at the end), the kept columns are cut and the new rows appended, instead of 7 columns
        of up to 400 values built again; any other window (a seek, a jump) builds them afresh."""
        old, cols = self._ids, self._cols
        d = -1
        if old and ids and cols and self._before_ids is old:
            try:
                d = old.index(ids[0])
            except ValueError:
                d = -1
            kept = len(old) - d
            if d >= 0 and not (kept <= len(ids) and old[d:] == ids[:kept]):
                d = -1
        if d >= 0:
            new = rows[len(old) - d:]
            cols = {name: cols[name][d:] + tuple(map(attrgetter(name), new)) for name in _COLS}
        else:
            cols = {name: tuple(map(attrgetter(name), rows)) for name in _COLS}
        self._ids, self._cols = ids, cols
        return cols

    def plots(self, frames: Sequence[Frame]) -> list[Plot]:
        """GPU (busy, SM, memory), input (the main thread's input time, worker CPU), PCIe (RX, TX), in that order of
        importance (a short terminal shows the first ones), those with readings first."""
        rows = self.readings(frames)
        last = rows[-1] if rows else None
        gpus = f" · mean of {last.gpus} GPUs" if last is not None and last.gpus > 1 else ""

        cols = self._columns(self._last_ids, rows)

        def col(name: str) -> tuple[float | None, ...]:
            return cols[name]

        def now_pct(name: str) -> str:
            return fmt.pct(getattr(last, name) if last is not None else None)

        gpu = Plot((Series("GPU util", col("busy"), now_pct("busy")), Series("SM active", col("sm"), now_pct("sm")),
                    Series("memory", col("mem"), now_pct("mem"))), 100.0, "0-100 %" + gpus)
        cpu = col("worker_cpu")
        cpu_top = max(100.0, nice(max((x for x in cpu if x is not None), default=0.0)))
        # A job without DataLoader workers (num_workers=0) has no worker CPU to read: said so, not "N/A"
        # (which the help explains as a value that could not be read).
        no_workers = last is not None and last.worker_cpu is None and last.workers == 0
        feed = Plot((Series("input", col("wait_share"), now_pct("wait_share")),
                     Series("worker CPU", cpu, "no workers" if no_workers else now_pct("worker_cpu"))),
                    cpu_top, f"0-{cpu_top:.0f} %")
        rx, tx = col("rx"), col("tx")
        top = nice(max((x for x in (*rx, *tx) if x is not None), default=0.0), floor=1e6)
        link = Plot((Series("PCIe RX", rx, fmt.rate(last.rx if last else None)),
                     Series("TX", tx, fmt.rate(last.tx if last else None))), top, f"0-{fmt.rate(top)}")
        plots = [gpu, feed, link]
        # a plot with nothing to draw (no GPU readable: no NVML, a CPU-only job) gives its place to
        # the next, so a short screen shows the input and worker CPU instead of an empty GPU plot
        return sorted(plots, key=lambda p: not any(x is not None for s in p.series for x in s.values))


def stages(verdicts: Sequence[Verdict]) -> list[str | None]:
    return [vd.stage for vd in verdicts]


def nice(x: float, floor: float = 1.0) -> float:
    """The next 1, 2 or 5 times a power of ten at or above ``x`` (at least ``floor``): a scale that
    stays put while the values move under it."""
    x = max(x, floor)
    p = 1.0
    while p * 10 <= x:
        p *= 10
    while p > x:
        p /= 10
    for m in (1, 2, 5, 10):
        if m * p >= x:
            return m * p
    return 10 * p
