"""The processes table: the job's main processes, DataLoader workers and other children.

Rows are keyed by PID and updated in place, so the cursor stays on its process across ticks.
A process missing from the latest stack sample (workers are dumped in turn, one every few seconds)
keeps the hottest frame of its last sample, dimmed, instead of a blank that would flicker.
"""

from __future__ import annotations

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical

from gpuwatch.model.frame import Frame
from gpuwatch.model.procs import ProcInfo
from gpuwatch.model.stacks import StackSample, ThreadStack
from gpuwatch.model.values import Unsupported, known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.panels.keyed_table import KeyedTable
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.view import View

CPU_STEP = 1.0
"""A process's CPU % cell changes when the value moves at least this far from the one on show:
idle DataLoader workers read 0.4-1.2 % from tick to tick on the H200 benchmark job, and redrawing
their rows for a 0/1 flicker was most of what the table cost to draw."""

COLUMNS = (
    ("pid", "PID"),
    ("role", "Role"),
    ("cpu", "CPU %"),
    ("state", "St"),
    ("read", "Read MB/s"),
    ("rss", "RSS"),
    ("hot", "Hottest frame"),
)


def role_text(p: ProcInfo) -> str:
    if p.rank is not None and p.role in ("main", "worker"):
        return f"{p.role} r{p.rank}"
    return p.role


def hottest(stacks: object, pid: int) -> str:
    """What the process's most telling thread was doing in the latest stack sample."""
    if not isinstance(stacks, StackSample):
        return fmt.NA
    threads = [t for t in stacks.threads if t.pid == pid]
    if not threads:
        return ""
    pick = next((t for t in threads if t.role == "main"), None) or next(
        (t for t in threads if t.active), threads[0]
    )
    return thread_summary(pick)


def thread_summary(t: ThreadStack) -> str:
    """``label: detail`` or the leaf frame when there is no detail."""
    where = t.detail or (t.frames[0] if t.frames else "")
    return f"{t.label}: {where}" if where else t.label


class ProcessPanel(Vertical):
    """Processes of the watched job with CPU, state, reads, memory and what they run."""

    def compose(self) -> ComposeResult:
        yield Plain("", classes="procs-notice")
        yield KeyedTable(COLUMNS, id="procs")
        yield Plain("", classes="stacks-note")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._last_hot: dict[int, str] = {}
        """PID -> the hottest frame of its latest stack sample."""
        self._shown_cpu: dict[int, float] = {}
        """PID -> the CPU % on show (see CPU_STEP)."""
        self._absorbed: Frame | None = None
        """The newest frame folded into the two memos above. Every frame is folded in,
        drawn or not (a frame can come before the screen is ready, or while paused), so what the
        table shows depends on the frames alone, not on which of them were drawn."""

    def on_mount(self) -> None:
        self.border_title = "Processes"  # shown where the layout gives the panel a border
        self.query_one(".procs-notice", Plain).display = False
        self.query_one(".stacks-note", Plain).display = False

    def show(self, view: View) -> None:
        procs = view.frame.procs
        notice = self.query_one(".procs-notice", Plain)
        table = self.query_one("#procs", KeyedTable)
        if isinstance(procs, Unsupported):
            notice.update(f"Processes: unavailable — {procs.reason}")
            notice.display = True
            table.display = False
            return
        notice.display = False
        table.display = True
        stacks_note = self.query_one(".stacks-note", Plain)
        reason = fmt.reason(view.frame.stacks)
        stacks_note.display = reason is not None
        if reason is not None:
            stacks_note.update(f"Hottest frame N/A: {reason}")
        self._absorb(view)
        rows = {str(p.pid): self._cells(p, self._shown_cpu.get(p.pid, p.cpu_pct), self._hot(p.pid, view.frame.stacks))
                for p in procs.processes}
        live = {p.pid for p in procs.processes}
        for memo in (self._last_hot, self._shown_cpu):
            for pid in [pid for pid in memo if pid not in live]:
                del memo[pid]
        table.set_rows(rows)  # repaints the rows whose cells changed

    def _absorb(self, view: View) -> None:
        """Fold the frames not seen yet (oldest first) into the last-hot and CPU memos."""
        frame, last = view.frame, self._absorbed
        if frame is last:
            return
        new: list[Frame] = []
        for f in reversed(view.frames):
            if f is last:
                break
            new.append(f)
        else:  # the last one folded is not in this history (a rank view, a restarted replay)
            new = new if last is None else [frame]
        if not new or new[0] is not frame:
            new.insert(0, frame)  # a history without the frame on show (tests)
        for f in reversed(new):
            if isinstance(f.procs, Unsupported):
                continue
            for p in f.procs.processes:
                shown = self._shown_cpu.get(p.pid)
                if shown is None or abs(p.cpu_pct - shown) >= CPU_STEP:
                    self._shown_cpu[p.pid] = p.cpu_pct
                now = hottest(f.stacks, p.pid)
                if now and now != fmt.NA:
                    self._last_hot[p.pid] = now
        self._absorbed = frame

    def _hot(self, pid: int, stacks: object) -> Text:
        """This sample's hottest frame of the process, else its last one dimmed."""
        now = hottest(stacks, pid)
        if now:
            return Text(now)
        older = Text(self._last_hot.get(pid, ""))
        older.stylize("dim")  # a span, not a base style: Text equality (set_rows) compares spans
        return older

    @staticmethod
    def _cells(p: ProcInfo, cpu: float, hot: Text) -> tuple[Text, ...]:
        # Text, not markup: frames may hold [brackets].
        return tuple(Text(cell) for cell in (
            str(p.pid),
            role_text(p),
            f"{cpu:.0f}",
            p.state[:1].upper() if p.state else "?",
            fmt.mbps(p.read_bps) if known(p.read_bps) else fmt.NA,
            fmt.size(p.rss),
        )) + (hot,)
