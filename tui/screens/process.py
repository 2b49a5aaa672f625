"""One process of the job (htop's Enter, nvitop's process screen): its role and why, command
line, CPU and state over time, I/O, memory, threads, GPU use and hottest stacks."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll

from gpuwatch.diagnosis.evidence import count
from gpuwatch.model.stacks import LABEL_WORDS
from gpuwatch.model.values import known
from gpuwatch.tui import format as fmt
from gpuwatch.tui.hot import counted, label_shares, stack_samples, threads
from gpuwatch.tui.panels.footer import KeysFooter
from gpuwatch.tui.panels.header import HeaderBar
from gpuwatch.tui.chart_draw import Plot, Series, ticks_span
from gpuwatch.tui.chart_series import nice, stages
from gpuwatch.tui.panels.chart import TimeChart
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.panels.stack_table import StackTable
from gpuwatch.tui.proc_facts import find, gpu_uses, history, role_reason, state_line, state_shares
from gpuwatch.tui.screens.base import WatchScreen
from gpuwatch.tui.view import View



def _values(seen: list, key: str) -> list[float | None]:
    out: list[float | None] = []
    for p in seen:
        if p is None:
            out.append(None)
        elif key == "cpu":
            out.append(p.cpu_pct)
        elif key == "rss":
            out.append(float(p.rss))
        else:
            v = p.read_bps if key == "read" else p.write_bps
            out.append(float(v) if known(v) else None)
    return out


class ProcessScreen(WatchScreen):
    """The process with PID ``pid``; ``outside`` for a GPU process that is not the job's."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back", tooltip="Back to the main screen.")]

    def __init__(self, pid: int, outside: bool = False) -> None:
        super().__init__()
        self.pid = pid
        self.outside = outside

    def compose(self) -> ComposeResult:
        yield HeaderBar()
        with VerticalScroll(id="process-body"):
            yield Plain("", id="proc-title")
            yield Plain("Role", classes="section")
            yield Plain("", id="proc-role")
            yield Plain("Command line (secrets redacted)", classes="section", id="proc-cmd-title")
            yield Plain("", id="proc-cmd")
            yield Plain("CPU, I/O and memory over time", classes="section", id="proc-history-title")
            yield TimeChart(id="proc-history")
            yield Plain("", id="proc-states")
            yield Plain("Threads", classes="section", id="proc-threads-title")
            yield Plain("", id="proc-threads")
            yield Plain("GPU", classes="section", id="proc-gpu-title")
            yield Plain("", id="proc-gpu")
            yield Plain("Hottest stacks", classes="section", id="proc-stacks-title")
            yield Plain("", id="proc-shares")
            yield StackTable(id="proc-stacks")
        yield KeysFooter()

    def show(self, view: View) -> None:
        self.query_one(HeaderBar).show(view)
        if self.outside:
            self._show_outside(view)
            return
        p = find(view.frame, self.pid)
        seen = history(view.frames, self.pid)
        last = p or next((q for q in reversed(seen) if q is not None), None)
        title = self.query_one("#proc-title", Plain)
        if last is None:
            title.update(f"PID {self.pid}: not in the job's process list (exited, or not read yet)")
            return
        gone = "" if p is not None else " — no longer listed (exited?); its last reading"
        rank = f" r{last.rank}" if last.rank is not None else ""
        title.update(f"PID {last.pid} · {last.role}{rank} · {last.name} · parent {last.ppid}{gone}")
        self.query_one("#proc-role", Plain).update(role_reason(last, view.frame) if p is not None
                                                   else f"{last.role} (when last seen)")
        self.query_one("#proc-cmd", Plain).update(last.cmdline or "(not readable)")
        width = self.app.size.width
        self._show_history(view, seen)
        # The mean number of the process's threads runnable with no CPU free (summed over threads,
        # so above 1 when several wait: not a share of the time).
        delay = f" · on average {last.run_delay_frac:.2f} threads wait for a CPU" \
            if known(last.run_delay_frac) else ""
        self.query_one("#proc-states", Plain).update(
            f"State {'now' if p is not None else 'when last seen'}: {last.state or '?'} · "
            f"over {count(len([s for s in seen if s]), 'tick')}: {state_shares(seen)}{delay}\n"
            f"{state_line(seen, max(10, width - 4))}")
        threads_text = "\n".join(f"{t.tid:>8}  {t.name:<18} {t.cpu_pct:5.0f} %  {t.state}" for t in last.threads)
        self._section("threads", threads_text or "")
        self._show_gpu(view)
        self._show_stacks(view)

    def _show_history(self, view: View, seen: list) -> None:
        """CPU, reads and writes, and RSS on one time axis, with the verdict's band under them."""
        chart = self.query_one("#proc-history", TimeChart)
        n = ticks_span(chart.size.width or self.app.size.width)
        seen, band = seen[-n:], stages(view.verdicts[-n:])
        cpu, read, write, rss = (tuple(_values(seen, key)) for key in ("cpu", "read", "write", "rss"))

        def now(values: tuple, show) -> str:  # noqa: ANN001 - a formatter
            return show(values[-1]) if values and values[-1] is not None else fmt.NA

        def peak(*series: tuple) -> float:
            return max((x for values in series for x in values if x is not None), default=0.0)

        io_top, rss_top = nice(peak(read, write)), nice(peak(rss), 1024.0**2)
        plots = [
            Plot((Series("CPU", cpu, now(cpu, lambda x: f"{x:.0f} %")),), max(100.0, nice(peak(cpu))),
                 f"0-{max(100.0, nice(peak(cpu))):.0f} % of a core"),
            Plot((Series("read", read, now(read, fmt.rate)), Series("write", write, now(write, fmt.rate))),
                 io_top, f"0-{fmt.rate(io_top)}"),
            Plot((Series("RSS", rss, now(rss, lambda x: fmt.size(int(x)))),), rss_top, f"0-{fmt.size(int(rss_top))}"),
        ]
        chart.set_data(plots, band, view.frames[-n:])

    def _section(self, name: str, text: str) -> None:
        self.query_one(f"#proc-{name}", Plain).update(text)
        shown = bool(text)
        self.query_one(f"#proc-{name}", Plain).display = shown
        self.query_one(f"#proc-{name}-title", Plain).display = shown

    def _show_gpu(self, view: View) -> None:
        uses = gpu_uses(view.frame, self.pid)
        lines = []
        for index, g in uses:
            mem = fmt.size(g.used_memory) if known(g.used_memory) else fmt.NA
            sm = f"{g.sm_util:.0f} %" if known(g.sm_util) else fmt.NA
            lines.append(f"GPU {index}: {mem} of GPU memory, SM {sm}")
        self._section("gpu", "\n".join(lines))

    def _show_stacks(self, view: View) -> None:
        mine = threads(stack_samples(view.frames), lambda t: t.pid == self.pid and counted(t))
        shares = self.query_one("#proc-shares", Plain)
        reason = fmt.reason(view.frame.stacks)
        if mine:
            # In words, as the stacks screen and the report say them ("waiting for a batch", not "data_wait").
            top = ", ".join(f"{LABEL_WORDS.get(label, label)} {share:.0%}" for label, share in label_shares(mine)[:6])
            shares.update(f"{count(len(mine), 'thread sample')}: {top}")
        elif reason is not None:
            shares.update(f"Stacks N/A: {reason}")
        else:
            shares.update("No stack sample of this process yet (workers are sampled in turn).")
        table = self.query_one("#proc-stacks", StackTable)
        table.show(mine)
        table.display = bool(mine)

    def _show_outside(self, view: View) -> None:
        uses = gpu_uses(view.frame, self.pid)
        self.query_one("#proc-title", Plain).update(
            f"PID {self.pid} · outside the watched job" + (f" · {uses[0][1].name}" if uses else " — no longer on a GPU"))
        user = next((g.user for _, g in uses if g.user), "?")
        self.query_one("#proc-role", Plain).update(
            f"Outside: NVML lists it on the GPU, but it is not in the watched job's process tree (user {user}). "
            "It shares the GPU with the job: the Contention stage counts its use.")
        for name in ("cmd", "history"):
            self.query_one(f"#proc-{name}-title").display = False
        self.query_one("#proc-cmd").display = False
        self.query_one("#proc-history").display = False
        self.query_one("#proc-states").display = False
        self._section("threads", "")
        self._show_gpu(view)
        for name in ("#proc-stacks-title", "#proc-shares", "#proc-stacks"):
            self.query_one(name).display = False
