"""The processes table: the job's main processes, DataLoader workers and other children.

Rows are keyed by PID and updated in place, so the cursor stays on its process across ticks.
A process missing from the latest stack sample (workers are dumped in turn, one every few seconds)
keeps the hottest frame of its last sample, dimmed, instead of a blank that would flicker.
Sort, filter and tree are htop's (``proc_order.py``). GPU processes that are not the job's (other
users, other jobs: NVML's list) come last, marked ``outside``, as nvitop lists them.
"""

from __future__ import annotations

from functools import cached_property

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Input

from gpuwatch.model.frame import Frame
from gpuwatch.model.gpu import GpuProcess
from gpuwatch.model.procs import ProcInfo
from gpuwatch.model.stacks import LABEL_WORDS, ROLE_MAIN_THREAD, ROLE_WORKER, StackSample, ThreadStack, activity
from gpuwatch.model.values import Unsupported, known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.panels.keyed_table import KeyedTable
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.panels.steady import SteadyLines
from gpuwatch.tui.proc_order import SORT_COLUMN, SORT_WORDS, SORTS, matches, order
from gpuwatch.tui.view import View

OUTSIDE = "outside"
"""The Role cell of a GPU process that is not part of the watched job."""
OUTSIDE_KEY = "gpu-"
"""Row key prefix of those processes (a host PID may not exist in our PID namespace)."""

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
    ("hot", "Latest frame"),  # the latest stack sample (panels.processes.hottest), not a count over time
)


def role_text(p: ProcInfo) -> str:
    if p.rank is not None and p.role in ("main", "worker"):
        return f"{p.role} r{p.rank}"
    return p.role


def hottest(stacks: object, pid: int) -> str:
    """What the process's most telling thread was doing in the latest stack sample: its own
    training or worker thread where one was sampled (an idle persistent worker's resource-sharer
    thread, parked in ``socket.accept``, says nothing of the worker), else a thread on the CPU."""
    by_pid = hottest_by_pid(stacks)
    return fmt.NA if by_pid is None else by_pid.get(pid, "")


def hottest_by_pid(stacks: object) -> dict[int, str] | None:
    """:func:`hottest` of every process the sample holds, worked out in one pass over its threads
    (None: no sample, :func:`hottest` says N/A; a process not in the dict: "")."""
    if not isinstance(stacks, StackSample):
        return None
    by_pid: dict[int, list[ThreadStack]] = {}
    for t in stacks.threads:
        by_pid.setdefault(t.pid, []).append(t)
    out = {}
    for pid, threads in by_pid.items():
        pick = next((t for t in threads if t.role in (ROLE_MAIN_THREAD, ROLE_WORKER)), None) or next(
            (t for t in threads if t.active), threads[0]
        )
        out[pid] = thread_summary(pick)
    return out


def thread_summary(t: ThreadStack) -> str:
    """``label: detail`` or the leaf frame when there is no detail."""
    where = t.detail or (t.frames[0] if t.frames else "")
    said = activity(t.role, t.label, t.detail, t.active)
    label = LABEL_WORDS.get(said, said)
    return f"{label}: {where}" if where else label


def outside_processes(gpus: object) -> list[tuple[int, GpuProcess]]:
    """(GPU index, process) for every GPU process NVML lists that is not the job's."""
    if not isinstance(gpus, tuple):
        return []
    return [(g.index, p) for g in gpus for p in g.processes if not p.is_target]


def outside_cells(index: int, p: GpuProcess) -> tuple[Text, ...]:
    mem = fmt.size(p.used_memory) if known(p.used_memory) else fmt.NA
    sm = f", SM {p.sm_util:.0f} %" if known(p.sm_util) else ""
    user = p.user or "?"
    pid = p.local_pid if p.local_pid is not None else p.pid
    return tuple(Text(c) for c in (str(pid), OUTSIDE, "", "", "", "",
                                   f"GPU {index}: {mem}{sm} · {p.name} (user {user})"))


def _last_seen(view: View | None) -> bool:
    """True when the job is gone and the table still lists processes: no frame comes after this
    one, so the rows are what the last frame saw (a main process 'R 12 %' beside a verdict saying it
    exited). Without rows (the last read found the job gone) there is nothing to mark."""
    return view is not None and not view.frame.target.alive and not isinstance(view.frame.procs, Unsupported)


class ProcessPanel(SteadyLines, Vertical):
    """Processes of the watched job with CPU, state, reads, memory and what they run."""

    sort: str | None = None
    """The sort column (:data:`SORTS`); None: the job's order."""
    tree = False
    """List as a tree (children under their parent)."""
    query = ""
    """Filter: only rows whose PID, role, name, command line or hottest frame hold this."""

    def compose(self) -> ComposeResult:
        yield Plain("", classes="procs-notice")
        yield KeyedTable(COLUMNS, id="procs")
        yield Plain("", classes="procs-state")
        yield Input(placeholder="filter: PID, role, name, command line or frame (Enter keeps, Esc clears)",
                    id="procs-filter", compact=True)
        yield Plain("", classes="stacks-note")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._last_hot: dict[int, str] = {}
        """PID -> the hottest frame of its latest stack sample."""
        self._shown_cpu: dict[int, float] = {}
        """PID -> the CPU % on show (see CPU_STEP)."""
        self._view: View | None = None
        """The view on show, kept to redraw at once when the sort, tree or filter changes."""
        self._hot_memo: tuple[object, dict[int, str] | None] | None = None
        """(A stack sample, :func:`hottest_by_pid` of it): the latest one asked about."""
        self._texts: dict[tuple[str, bool], Text] = {}
        """The cells' Texts made this frame, by (text, dimmed) (see :meth:`_text`)."""
        self._texts_last: dict[tuple[str, bool], Text] = {}
        """Those of the frame before."""
        self._matched = True
        """Whether the filter kept a row in the last draw (the state line says when it kept none)."""
        self._absorbed: Frame | None = None
        """The newest frame folded into the two memos above. Every frame is folded in,
        drawn or not (a frame can come before the screen is ready, or while paused), so what the
        table shows depends on the frames alone, not on which of them were drawn."""

    @cached_property
    def _notes(self) -> tuple[Plain, Plain, Plain]:
        """The notice, the stacks note and the state line: each looked up once (composed once, never
        removed), not a DOM query a frame."""
        return (self.query_one(".procs-notice", Plain), self.query_one(".stacks-note", Plain),
                self.query_one(".procs-state", Plain))

    @cached_property
    def table(self) -> KeyedTable:
        return self.query_one("#procs", KeyedTable)

    def on_mount(self) -> None:
        self.border_title = "Processes"  # shown where the layout gives the panel a border
        self.query_one(".procs-notice", Plain).display = False
        self.query_one(".stacks-note", Plain).display = False
        self.query_one(".procs-state", Plain).display = False
        self.query_one("#procs-filter", Input).display = False

    def open_filter(self) -> None:
        box = self.query_one("#procs-filter", Input)
        box.display = True
        self.screen.set_focus(box)  # at once: the next keys typed are the filter's

    def close_filter(self, clear: bool) -> bool:
        """Hide the filter box (and empty the filter if ``clear``); False when there was nothing to close."""
        box = self.query_one("#procs-filter", Input)
        had = box.display or bool(self.query)
        box.display = False
        if clear and self.query:
            box.value = ""
            self.set_order(query="")
        if had:
            self.screen.set_focus(self.table)
        return had

    @on(Input.Changed, "#procs-filter")
    def _filter_changed(self, event: Input.Changed) -> None:
        self.set_order(query=event.value.strip())

    @on(Input.Submitted, "#procs-filter")
    def _filter_kept(self) -> None:
        self.close_filter(clear=False)

    def set_order(self, *, sort: str | None | bool = False, tree: bool | None = None,
                  query: str | None = None) -> None:
        """Change sort (False: keep), tree or filter and redraw from the last view at once."""
        if sort is not False:
            self.sort = sort  # type: ignore[assignment]
        if tree is not None:
            self.tree = tree
        if query is not None:
            self.query = query
        labels = [label + ("▼" if SORT_COLUMN.get(self.sort or "") == key else "") for key, label in COLUMNS]
        self.table.set_header(labels)
        self._draw_state()
        if self._view is not None:
            self.show(self._view)

    def _draw_state(self) -> None:
        """The line under the table: filter, sort, tree, and whether the rows are the last ones seen."""
        state = self._notes[2]
        parts = []
        if _last_seen(self._view):
            parts.append("last seen before the job exited")
        if self.query:
            matched = "" if self._matched else "no process matches "
            parts.append(f"{matched}filter “{self.query}” (Esc clears)")
        if self.sort:
            parts.append(f"sorted by {SORT_WORDS[self.sort]}")
        if self.tree:
            parts.append("tree")
        state.update(" · ".join(parts))
        state.display = bool(parts)

    def step_sort(self, step: int) -> str | None:
        """The next (``step`` 1) or previous sort column; returns the new one."""
        self.set_order(sort=SORTS[(SORTS.index(self.sort) + step) % len(SORTS)])
        return self.sort

    def show(self, view: View) -> None:
        was = _last_seen(self._view)
        self._view = view
        if was != _last_seen(view):
            self._draw_state()
        procs = view.frame.procs
        notice, stacks_note, _ = self._notes
        table = self.table
        if isinstance(procs, Unsupported):
            notice.update(f"Processes: unavailable — {fmt.unprefixed(procs.reason)}")
            notice.display = True
            table.display = False
            return
        notice.display = False
        table.display = True
        reason = fmt.reason(view.frame.stacks)
        stacks_note.display = reason is not None
        if reason is not None:
            stacks_note.update(f"Latest frame N/A: {reason}")
        self._absorb(view)
        self._texts_last, self._texts = self._texts, {}  # this frame's cells, from the last frame's
        cells = {p.pid: self._cells(p, self._shown_cpu.get(p.pid, p.cpu_pct), self._hot(p.pid, view.frame.stacks))
                 for p in procs.processes}
        live = {p.pid for p in procs.processes}
        for memo in (self._last_hot, self._shown_cpu):
            for pid in [pid for pid in memo if pid not in live]:
                del memo[pid]
        outside = [(OUTSIDE_KEY + str(p.pid), outside_cells(i, p)) for i, p in outside_processes(view.frame.gpus)]
        keep = None
        if self.query:
            keep = {p.pid for p in procs.processes
                    if any(matches(t, self.query) for t in (p.name, p.cmdline, *(c.plain for c in cells[p.pid])))}
            outside = [(k, c) for k, c in outside if any(matches(t.plain, self.query) for t in c)]
        rows: dict[str, tuple[Text, ...]] = {}
        for listed in order(procs.processes, self.sort, self.tree, keep):
            row = cells[listed.proc.pid]
            if listed.prefix:
                row = (row[0], Text(listed.prefix + row[1].plain), *row[2:])
            rows[str(listed.proc.pid)] = row
        rows.update(outside)
        matched = bool(rows) or not self.query
        if matched != self._matched:
            self._matched = matched
            self._draw_state()
        table.set_rows(rows, ordered=True)  # repaints the rows whose cells changed

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
                now = self._hottest(f.stacks, p.pid)
                if now and now != fmt.NA:
                    self._last_hot[p.pid] = now
        self._absorbed = frame

    def _hottest(self, stacks: object, pid: int) -> str:
        """:func:`hottest`, from the sample's processes worked out once (the table asks for each
        process, twice a frame: a pass over the sample's threads for each was ~0.1 ms a frame)."""
        memo = self._hot_memo
        if memo is None or memo[0] is not stacks:
            memo = self._hot_memo = (stacks, hottest_by_pid(stacks))
        by_pid = memo[1]
        return fmt.NA if by_pid is None else by_pid.get(pid, "")

    def _hot(self, pid: int, stacks: object) -> Text:
        """This sample's hottest frame of the process, else its last one dimmed."""
        now = self._hottest(stacks, pid)
        if now:
            return self._text(now)
        return self._text(self._last_hot.get(pid, ""), dim=True)

    def _text(self, plain: str, dim: bool = False) -> Text:
        """A cell's Text, the one of the last frame when it says the same: most cells do from
        tick to tick, and the same object is equal at once where the table compares rows (Text
        equality compares text and spans; the rows are tuples, compared item by item, identity
        first). Cells are not changed after they are made (the table copies one to cut it)."""
        key = (plain, dim)
        text = self._texts.get(key)  # made for another cell of this frame ("0", "0.0")
        if text is None:
            text = self._texts_last.get(key)
        if text is None:
            text = Text(plain)
            if dim:
                text.stylize("dim")  # a span, not a base style: Text equality (set_rows) compares spans
        self._texts[key] = text
        return text

    def _cells(self, p: ProcInfo, cpu: float, hot: Text) -> tuple[Text, ...]:
        # Text, not markup: frames may hold [brackets].
        return tuple(self._text(cell) for cell in (
            str(p.pid),
            role_text(p),
            f"{cpu:.0f}",
            p.state[:1].upper() if p.state else "?",
            fmt.mbps(p.read_bps) if known(p.read_bps) else fmt.NA,
            fmt.size(p.rss),
        )) + (hot,)
