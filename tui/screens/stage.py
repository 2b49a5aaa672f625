"""A stage's drill-down: evidence against thresholds, remedies, signal history as time charts, top stacks."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.reactive import reactive

from gpuwatch.model import verdict as v
from gpuwatch.diagnosis.evidence import count, cut, said
from gpuwatch.diagnosis.evidence import fmt as fmt_value
from gpuwatch.diagnosis.thresholds import WINDOW_S
from gpuwatch.model.stacks import LABEL_WORDS, ROLE_MAIN_THREAD, ROLE_OTHER_THREAD, ROLE_PIN, ROLE_TITLES, ROLE_WORKER
from gpuwatch.model.values import known
from gpuwatch.model.verdict import PIPELINE, STAGE_TITLES, Evidence, Verdict
from gpuwatch.tui import format as fmt
from gpuwatch.tui.hot import STACK_WINDOW, counted, label_shares, stack_samples, threads
from gpuwatch.tui.levels import LEVEL_GLYPHS, LEVEL_WORDS, set_level
from gpuwatch.tui.panels.evidence import EvidenceList
from gpuwatch.tui.panels.footer import KeysFooter
from gpuwatch.tui.panels.header import HeaderBar
from gpuwatch.tui.chart_draw import Plot, Series, ticks_span
from gpuwatch.tui.chart_series import nice, stages
from gpuwatch.tui.panels.chart import TimeChart
from gpuwatch.tui.panels.metric_parts import VALUE_W
from gpuwatch.tui.panels.plain import Plain
from gpuwatch.tui.panels.stack_table import StackTable
from gpuwatch.tui.screens.base import WatchScreen
from gpuwatch.tui.stage_signals import SIGNALS, series
from gpuwatch.tui.view import View

STACK_ROLES = {
    v.IO: (ROLE_WORKER, ROLE_MAIN_THREAD),
    v.DECODE: (ROLE_WORKER, ROLE_MAIN_THREAD),
    v.H2D: (ROLE_MAIN_THREAD, ROLE_PIN),
    v.GPU_MEMORY: (ROLE_MAIN_THREAD,),
    v.LAUNCH: (ROLE_MAIN_THREAD,),
    v.CONTENTION: (ROLE_MAIN_THREAD, ROLE_WORKER, ROLE_PIN, ROLE_OTHER_THREAD),
}
"""Whose stacks tell about each stage: workers decode and read, the main thread dispatches."""

PLOT_LINES = 3
"""Lines of each plot in the history charts: its title and two rows (eight dots) of plot."""


def evidence_history(verdicts: tuple[Verdict, ...], stage: str, signal: str) -> list[float | None]:
    out: list[float | None] = []
    for vd in verdicts:
        e = next((e for e in vd.evidence if e.stage == stage and e.signal == signal), None)
        out.append(e.value if e is not None else None)
    return out


class StageScreen(WatchScreen):
    """Why a stage has its level, and what to do about it."""

    BINDINGS = [
        Binding("escape", "app.pop_screen", "Back", tooltip="Back to the main screen."),
        Binding("left", "move_stage(-1)", "Stage", key_display="←→", priority=True,
                tooltip="Show the previous stage."),
        Binding("right", "move_stage(1)", "Stage", show=False, priority=True, tooltip="Show the next stage."),
    ]

    stage: reactive[str] = reactive(v.IO, init=False)
    """The stage on show."""

    def __init__(self, stage: str) -> None:
        super().__init__()
        self.set_reactive(StageScreen.stage, stage)
        self._history_shape: tuple | None = None

    def compose(self) -> ComposeResult:
        yield HeaderBar()
        with VerticalScroll(id="stage-body"):
            yield Plain("", id="stage-title")
            yield Plain("", id="stage-verdict")
            yield Plain(f"Evidence (over the verdict's last {WINDOW_S:.0f} s)", classes="section")
            yield EvidenceList(id="evidence")
            # what to do comes before the history: the charts below take a screen's height
            yield Plain("Remedies", classes="section")
            yield Plain("", id="remedies")
            yield Plain("Signals over time (the value is the latest tick's)", classes="section")
            yield TimeChart(id="history")
            yield Plain("", classes="na-note", id="history-na")
            yield Plain("Evidence over time (against its threshold)", classes="section", id="evidence-history-title")
            yield TimeChart(id="evidence-history")
            yield Plain("Top stacks", classes="section")
            yield Plain("", id="shares")
            yield StackTable(id="stage-stacks")
        yield KeysFooter()

    def watch_stage(self) -> None:
        view = self.watch_app.view
        if view is not None:
            self.show(view)

    def action_move_stage(self, step: int) -> None:
        self.stage = PIPELINE[(PIPELINE.index(self.stage) + step) % len(PIPELINE)]

    def show(self, view: View) -> None:
        stage, verdict = self.stage, view.verdict
        self.query_one(HeaderBar).show(view)
        level = verdict.level(stage)
        title = self.query_one("#stage-title", Plain)
        title.update(f"{PIPELINE.index(stage) + 1} · {STAGE_TITLES[stage]} — "
                     f"{LEVEL_GLYPHS.get(level, '?')} {LEVEL_WORDS.get(level, level)}")
        set_level(title, level)
        if verdict.stage == stage:
            about = f"This is the verdict: {verdict.sentence} (confidence {verdict.confidence_word})"
        else:
            about = "Verdict: {} — {}".format(*verdict.headed)
            why = verdict.why_warned(stage)
            if why:  # the warning's own cut is not among those listed below: say which reading crossed it
                about = f"Warning: {why}.\n{about}"
        self.query_one("#stage-verdict", Plain).update(about)
        self._show_evidence(verdict)
        self._show_history(view)
        self._show_stacks(view)
        self._show_remedies(verdict)

    def _show_evidence(self, verdict: Verdict) -> None:
        self.query_one(EvidenceList).show([e for e in verdict.evidence if e.stage == self.stage])

    def _show_history(self, view: View) -> None:
        signals = SIGNALS[self.stage]
        evidence = [e for e in view.verdict.evidence if e.stage == self.stage and e.value is not None]
        signal_chart = self.query_one("#history", TimeChart)
        evidence_chart = self.query_one("#evidence-history", TimeChart)
        shape = (len(signals), len(evidence))
        if shape != self._history_shape:  # another stage or other evidence: other heights
            self._history_shape = shape
            signal_chart.styles.height = len(signals) * PLOT_LINES + 1
            evidence_chart.styles.height = len(evidence) * PLOT_LINES + 1
            evidence_chart.display = bool(evidence)
            self.query_one("#evidence-history-title").display = bool(evidence)
        n = ticks_span(signal_chart.size.width or self.app.size.width)
        frames, verdicts = view.frames[-n:], view.verdicts[-n:]
        band = stages(verdicts)
        reasons: dict[str, list[str]] = {}
        plots = []
        for s in signals:
            latest = s.read(view.frame)
            rate, cores = s.unit == "B/s", s.unit == "cores"
            text = fmt.NA if not known(latest) else (fmt.rate(latest) if rate else
                                                     fmt_value(latest, "cores") if cores else f"{latest:.1f} %")
            reason = fmt.reason(latest)
            if reason is not None:
                reasons.setdefault(reason, []).append(s.label)
            values = tuple(series(s, frames))
            top = s.top or nice(max((x for x in values if x is not None), default=0.0))
            plots.append(Plot((Series(s.label, values, text),), top,
                              f"0-{fmt.rate(top)}" if rate else f"0-{fmt_value(top, 'cores')}" if cores else f"0-{top:.0f} %"))
        signal_chart.set_data(plots, band, frames)
        note = self.query_one("#history-na", Plain)
        note.update("\n".join(f"N/A {', '.join(labels)}: {r}" for r, labels in reasons.items()))
        note.display = bool(reasons)
        plots = []
        for e in evidence:  # each against its threshold, drawn as a second line
            values = tuple(evidence_history(verdicts, self.stage, e.signal))
            seen = [x for x in values if x is not None]
            top = max([abs(e.threshold) * 1.5 if e.threshold else 0.0, *seen, 1e-9])
            if e.unit == "%":
                top = max(1.0, *seen)  # a share's full scale is 100 %
            line = [Series(e.what or e.text.split(":")[0], values, _against(e))]
            if e.threshold is not None:
                line.append(Series("cut", tuple(e.threshold for _ in values), cut(e.threshold, e.unit)))
            plots.append(Plot(tuple(line), top, f"0-{fmt_value(top, e.unit)}"))
        evidence_chart.set_data(plots, band, frames)

    def _show_stacks(self, view: View) -> None:
        roles = STACK_ROLES[self.stage]
        picked = threads(stack_samples(view.frames), lambda t: t.role in roles and counted(t))
        shares = self.query_one("#shares", Plain)
        reason = fmt.reason(view.frame.stacks)
        if reason is not None and not picked:
            shares.update(f"Stacks N/A: {reason}")
        elif not picked:
            shares.update(f"No samples of the {' or '.join(ROLE_TITLES.get(r, r) for r in roles)} yet.")
        else:
            by_role = []
            for role in roles:
                mine = [t for t in picked if t.role == role]
                if mine:
                    top = ", ".join(f"{LABEL_WORDS.get(label, label)} {share:.0%}"
                                    for label, share in label_shares(mine)[:4])
                    by_role.append(f"{ROLE_TITLES.get(role, role)} ({count(len(mine), 'thread sample')} "
                                   f"from the last {STACK_WINDOW} frames): {top}")
            if len(by_role) > 1:  # the table's shares are of them all, not of the first role's
                by_role.append(f"Hottest frames of these {count(len(picked), 'thread sample')} together:")
            shares.update("\n".join(by_role))
        self.query_one("#stage-stacks", StackTable).show(picked)

    def _show_remedies(self, verdict: Verdict) -> None:
        box = self.query_one("#remedies", Plain)
        if verdict.stage == self.stage and verdict.remedies:
            box.update("\n".join(f"• {r}" for r in verdict.remedies))
        elif verdict.stage == self.stage:
            box.update("The diagnosis gave no remedy for this verdict.")
        else:
            box.update("Remedies are given for the stage the verdict names; this stage is not it.")


OP_SIGNS = {">=": "≥", ">": ">", "<=": "≤", "<": "<"}
NOT_SIGNS = {">=": "≱", ">": "≯", "<=": "≰", "<": "≮"}
"""The comparison an item fails, so the pair stays a true statement ("99 % ≮ 90 %", not "99 % < 90 %")."""


def _against(e: Evidence) -> str:
    """``62 % ≥ 20 %`` in the item's unit, as the evidence list says it (``≱`` where it is not met);
    the reading alone where the pair would not fit the value column (the cut is drawn as the plot's
    second line)."""
    if e.threshold is None:
        return fmt_value(e.value, e.unit)
    value = said(e.value, e.threshold, e.op, e.unit)
    sign = (OP_SIGNS if e.supports else NOT_SIGNS).get(e.op, e.op)
    both = f"{value} {sign} {cut(e.threshold, e.unit)}"
    return both if len(both) <= VALUE_W else value
