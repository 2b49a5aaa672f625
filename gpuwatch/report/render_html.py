"""``gpuwatch diagnose --format html``: one self-contained HTML file (inline CSS and SVG, nothing
fetched at view time, no JavaScript) with the verdict, the remedies, the checks and charts over
time; the full Markdown report is inside it too. The per-tick series are also embedded as inert
JSON (``<script type="application/json" id="gpuwatch-series">``) for tools.

Every string from the job (command line, stack frames) goes through gpuwatch.untrusted.html.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from gpuwatch.diagnosis.evidence import count
from gpuwatch.model.codec import to_dict
from gpuwatch.model.stacks import LABEL_WORDS
from gpuwatch.model.verdict import STAGE_TITLES
from gpuwatch.report.figures import MEASURES
from gpuwatch.report.model import STATUSES, Report
from gpuwatch.report.render_md import render_markdown
from gpuwatch.report.series import DATA_WAIT_WINDOW_S, WORKER_STATES, Tick
from gpuwatch.report.svg import Axis, Line, band_chart, line_chart, stacked_bars
from gpuwatch.report.units import rate, value
from gpuwatch.report.words import REMEDIES_READ_AT, headline, no_remedy_words, stage_gain, too_short
from gpuwatch.untrusted import html

STAGE_COLOURS = {
    "io": "#8c564b", "decode": "#ff7f0e", "h2d": "#9467bd", "gpu_memory": "#e377c2", "launch": "#bcbd22",
    "contention": "#d62728", "cpu_bound": "#17becf", "gpu_bound": "#2ca02c", "idle": "#c7c7c7", "unknown": "#7f7f7f",
}
STYLE = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;max-width:960px;margin:24px auto;
padding:0 16px;color:#222}
h1{font-size:22px}h2{font-size:17px;margin-top:28px;border-bottom:1px solid #ddd}
code,pre{font:12px ui-monospace,Menlo,Consolas,monospace}pre{white-space:pre-wrap;background:#f6f6f6;padding:8px}
table{border-collapse:collapse;width:100%}td,th{border:1px solid #ddd;padding:3px 6px;text-align:left;
vertical-align:top}
.verdict{font-size:16px;padding:8px 12px;background:#f3f7ff;border-left:4px solid #1f77b4}
figure.chart{margin:10px 0}figcaption{font-weight:600}svg{width:100%;height:auto;font-size:11px}
.fail{color:#b00020}.warn{color:#a05a00}.pass{color:#207020}.not_checked{color:#666}
"""
PERCENT = lambda v: f"{v:.0f} %"  # noqa: E731


def render_html(r: Report, series: Sequence[Tick]) -> str:
    s, m = r.source, r.summary
    who = f"PID {s.pid}" if s.pid is not None else "unknown job"
    started = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s.started_wall)) if s.started_wall else "n/a"
    what = f"replay of {s.path}" if s.kind == "replay" else "live watch"
    out = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f"<title>gpuwatch diagnosis: {html(who)}</title>", f"<style>{STYLE}</style></head><body>",
        f"<h1>gpuwatch diagnosis: {html(who)}</h1>",
    ]
    if s.cmdline:
        out.append(f"<p><code>{html(s.cmdline)}</code></p>")
    out.append(f"<p>{html(what)}, started {html(started)}, {s.covered_s:.0f} s over {count(s.frames, 'tick')}; "
               f"{html(s.ended)}.</p>")
    if s.scope:
        out.append(f"<p>{html(s.scope)}.</p>")
    if m.snapshot:
        out.append(f"<p>{html(too_short(r.source))}</p>")
    title, rest = headline(m)
    out.append(f'<p class="verdict"><b>{html(title)}</b> {html(rest)}</p>')
    out += _glance(r) + _remedies(r) + ["<h2>Over time</h2>"] + charts(series, r.source.covered_s) + _checks(r)
    out += _stacks(r)
    out.append("<h2>Full report</h2><details><summary>The Markdown report (the same as "
               "<code>--format md</code>)</summary>")
    out.append(f"<pre>{_block(render_markdown(r))}</pre></details>")
    out.append(series_json(series))
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def charts(series: Sequence[Tick], span: float, tops: dict[str, float] | None = None) -> list[str]:
    """The charts of one run: stage band, GPU, data wait, workers, PCIe, host pressure. ``tops``:
    the y-axis top of the auto-scaled charts ("worker_cpu", "pcie"), to draw two runs on one scale."""
    tops = tops or {}
    if not series:
        return ["<p>No ticks were collected: nothing to chart.</p>"]
    tick = span / len(series) if span > 0 else 1.0
    axis = Axis(t=[x.t_s for x in series], span=max(span, tick), stalls=[x.stall_period_s is not None for x in series],
                tick_s=tick)
    col = lambda name: [getattr(x, name) for x in series]  # noqa: E731
    titles = {k: v for k, v in STAGE_TITLES.items()}
    out = [
        band_chart("stage", "The verdict's stage", axis, col("stage"), STAGE_COLOURS, titles),
        line_chart("gpu", "GPU util and SM active (percent, mean over the job's GPUs)", axis,
                   [Line("gpu_busy", "GPU util (NVML)", col("gpu_busy")),
                    Line("sm_active", "SM active (GPM)", col("sm_active"))], PERCENT, 100.0),
        # the wait alone stood at 0 under a CPU-prep verdict on a loop that prepares its own batches:
        # "input" counts what the TUI's input line does (the wait, a load, preparing in the loop)
        line_chart("data_wait", "Main thread on its input: waiting for a batch, loading one or preparing one in "
                   f"the training loop (percent of stack samples, last {DATA_WAIT_WINDOW_S:g} s)", axis,
                   [Line("input", "on its input", col("input")),
                    Line("data_wait", "waiting for a batch", col("data_wait"))], PERCENT, 100.0),
        line_chart("worker_cpu", "DataLoader workers' CPU (percent of one core, summed)", axis,
                   [Line("worker_cpu", "worker CPU", col("worker_cpu"))], PERCENT, tops.get("worker_cpu")),
        stacked_bars("workers", "DataLoader workers by process state", axis,
                     [(k, k) for k, _ in WORKER_STATES] + [("other", "other")], col("workers")),
        line_chart("pcie", "PCIe traffic (bytes per second, summed over the job's GPUs)", axis,
                   [Line("pcie_rx", "host to device", col("pcie_rx")),
                    Line("pcie_tx", "device to host", col("pcie_tx"))], rate, tops.get("pcie")),
        line_chart("host", "Host CPU and pressure (percent; PSI some avg10)", axis,
                   [Line("host_cpu", "host CPU busy", col("host_cpu")),
                    Line("cpu_pressure", "CPU pressure", col("cpu_pressure")),
                    Line("io_pressure", "I/O pressure", col("io_pressure")),
                    Line("memory_pressure", "memory pressure", col("memory_pressure"))], PERCENT, 100.0),
    ]
    stalls = sum(axis.stalls)
    if stalls:
        out.append(f"<p>The dark strip along the top of each chart marks the {stalls} tick{'s' if stalls != 1 else ''} "
                   "whose verdict saw the GPU idle periodically (a stall).</p>")
    return out


def series_json(series: Sequence[Tick]) -> str:
    data = json.dumps([to_dict(x) for x in series], separators=(",", ":"), allow_nan=False)
    data = data.replace("<", "\\u003c")  # nothing inside can close the element
    return f'<script type="application/json" id="gpuwatch-series">{data}</script>'


def _glance(r: Report) -> list[str]:
    """The run's means (the figures ``gpuwatch compare`` sets side by side)."""
    f = r.figures
    if f is None:
        return []
    out = ['<h2>At a glance</h2><table id="glance"><tr><th></th><th>measure</th><th>mean over the run</th>'
           "<th>ticks read</th></tr>"]
    for group, key, label, unit, _ in MEASURES:
        m = getattr(f, key)
        out.append(f'<tr data-key="{key}"><td>{html(group)}</td><td>{html(label)}</td>'
                   f"<td>{html(value(m.value, unit))}</td><td>{m.ticks}</td></tr>")
    stall = "not measured" if f.stall_measured is None else (
        f"{f.stall_measured:.0%} of the ticks" + (f", every {f.stall_period_s:.1f} s" if f.stall_period_s else ""))
    out.append(f'<tr data-key="stall_share"><td>stalls</td><td>time with a periodic GPU stall</td>'
               f"<td>{html(stall)}</td><td>{f.gpu_busy.ticks}</td></tr>")
    if f.speedup_left is not None:
        title = STAGE_TITLES.get(f.speedup_left.stage, f.speedup_left.stage)
        factor = (("at most " if f.speedup_left.upper_bound else "") + value(f.speedup_left.factor, "x")
                  + (" or more" if f.speedup_left.floor else ""))
        out.append(f'<tr data-key="speedup_left"><td>speed-up left</td><td>fixing {html(title)}</td>'
                   f"<td>{html(factor)}</td><td></td></tr>")
    return out + ["</table>"]


def _remedies(r: Report) -> list[str]:
    if not r.remedies:
        return ["<h2>What to do</h2>", f"<p>{html(no_remedy_words(r))}</p>"]
    out = ["<h2>What to do</h2>"]
    if any(x.stage is not None for x in r.remedies):
        out.append(f"<p>{html(REMEDIES_READ_AT)}</p>")
    out.append("<ol>")
    for x in r.remedies:
        about = STAGE_TITLES.get(x.stage, x.stage) if x.stage else (x.title or "check")
        why = f" <i>({html(stage_gain(x, r.summary.snapshot))})</i>" if x.stage else " <i>(a failed or warned check)</i>"
        out.append(f"<li><b>{html(about)}</b>: {html(x.text)}{why}</li>")
    return out + ["</ol>"]


def _block(text: str) -> str:
    """gpuwatch's own multi-line text (the Markdown report, whose strings from the job were made
    harmless as they went in) for a <pre>: its newlines kept, each line cleaned and escaped whole."""
    return "\n".join(html(line, max(len(line), 1)) for line in text.rstrip("\n").split("\n"))


ROLE_WORDS = {"main": "main thread", "worker": "DataLoader worker", "pin": "pin-memory thread"}


def _stacks(r: Report) -> list[str]:
    """The hottest stacks per thread role, leaf first, one frame a line."""
    out = ["<h2>Hottest stacks</h2>"]
    if not r.stacks:
        return out + ["<p>No stack samples (see the checks).</p>"]
    out.append('<table id="stacks"><tr><th>thread</th><th>share of its samples</th><th>samples</th>'
               "<th>doing</th><th>stack (innermost first)</th></tr>")
    for h in r.stacks:
        frames = "<br>".join(("← " if i else "") + html(f) for i, f in enumerate(h.frames)) or "(no frames)"
        words = LABEL_WORDS.get(h.label, h.label)  # the label in words, as the Markdown report says it
        doing = f"{words}: {h.detail}" if h.detail else words
        out.append(f'<tr data-role="{html(h.role)}"><td>{html(ROLE_WORDS.get(h.role, h.role))}</td>'
                   f"<td>{h.share:.0%}</td><td>{h.count}</td><td>{html(doing)}</td>"
                   f"<td><code>{frames}</code></td></tr>")
    return out + ["</table>"]


def _checks(r: Report) -> list[str]:
    out = ["<h2>Checks</h2>", "<table><tr><th>status</th><th>check</th><th>why</th></tr>"]
    for status in STATUSES:
        for c in r.checks:
            if c.status == status:
                out.append(f'<tr><td class="{status}">{html(status.replace("_", " "))}</td>'
                           f"<td>{html(c.title)}</td><td>{html(c.reason)}</td></tr>")
    return out + ["</table>"]
