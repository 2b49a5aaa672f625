"""``gpuwatch compare --format html``: the side-by-side table and, where both sides are recordings,
each chart of the HTML report for the run before above the same chart for the run after, on one
scale. Self-contained like the report (inline CSS and SVG, no JavaScript, nothing fetched)."""

from __future__ import annotations

from collections.abc import Sequence
from html import escape

from gpuwatch.compare.diff import Comparison
from gpuwatch.compare.fmt import cells, change
from gpuwatch.report.render_html import STYLE, charts
from gpuwatch.report.series import Tick
from gpuwatch.report.svg import nice
from gpuwatch.untrusted import html

VERDICT_CLASS = {"better": "pass", "worse": "fail", "same": "not_checked", "changed": "warn",
                 "not comparable": "not_checked"}


def render_html(c: Comparison, before: Sequence[Tick] | None, after: Sequence[Tick] | None) -> str:
    out = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">', "<title>gpuwatch compare</title>",
           f"<style>{STYLE}</style></head><body>", "<h1>gpuwatch compare</h1>", "<ul>",
           f"<li><b>Before</b>: <code>{html(c.before_path)}</code>: {c.before.ticks} ticks over "
           f"{c.before.covered_s:.0f} s</li>",
           f"<li><b>After</b>: <code>{html(c.after_path)}</code>: {c.after.ticks} ticks over "
           f"{c.after.covered_s:.0f} s</li>", "</ul>"]
    if c.notes:
        out += ["<h2>Notes</h2>", "<ul>"] + [f"<li>{html(n)}</li>" for n in c.notes] + ["</ul>"]
    out += ['<h2>Side by side</h2><table id="compare"><tr><th></th><th>measure</th><th>before</th><th>after</th>'
            "<th>change</th><th></th></tr>"]
    for r in c.rows:
        out.append(f'<tr data-key="{escape(r.key)}"><td>{escape(r.group)}</td><td>{html(r.label)}</td>'
                   f"<td>{escape(cells(r)[0])}</td><td>{escape(cells(r)[1])}</td>"
                   f'<td>{escape(change(r))}</td><td class="{VERDICT_CLASS[r.verdict]}">{escape(r.verdict)}</td></tr>')
    out.append("</table>")
    sp = c.rows[-1]
    if sp.note:
        out.append(f"<p>Speed-up left: {html(sp.note)}.</p>")
    if before and after:
        tops = {"worker_cpu": nice(_top(before, after, "worker_cpu")),
                "pcie": nice(max(_top(before, after, "pcie_rx"), _top(before, after, "pcie_tx")))}
        out.append("<h2>Over time</h2>")
        b_charts = charts(before, c.before.covered_s, tops)
        a_charts = charts(after, c.after.covered_s, tops)
        for bc, ac in zip(b_charts, a_charts):
            out += ['<div class="pair" data-side="before"><b>Before</b>', bc, "</div>",
                    '<div class="pair" data-side="after"><b>After</b>', ac, "</div>"]
    else:
        out.append("<p>Charts side by side need both runs' recordings: a JSON report holds the run's figures, "
                   "not its ticks.</p>")
        for side, series, fig in (("before", before, c.before), ("after", after, c.after)):
            if series:
                out += [f"<h2>Over time, {side} only</h2>", f'<div class="pair" data-side="{side}">',
                        *charts(series, fig.covered_s), "</div>"]
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _top(a: Sequence[Tick], b: Sequence[Tick], name: str) -> float:
    return max((v for x in (*a, *b) if (v := getattr(x, name)) is not None), default=0.0)
