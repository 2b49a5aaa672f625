"""``gpuwatch compare --format md``: a Markdown table to paste into a ticket."""

from __future__ import annotations

from gpuwatch.compare.diff import Comparison
from gpuwatch.compare.fmt import cells, change
from gpuwatch.untrusted import markdown, markdown_code


def render_markdown(c: Comparison) -> str:
    b, a = c.before, c.after
    out = [
        "# gpuwatch compare",
        "",
        f"- **Before**: {markdown_code(c.before_path)}: {b.ticks} ticks over {b.covered_s:.0f} s",
        f"- **After**: {markdown_code(c.after_path)}: {a.ticks} ticks over {a.covered_s:.0f} s",
        "",
    ]
    if c.notes:
        out += ["## Notes", ""] + [f"- {markdown(n)}" for n in c.notes] + [""]
    out += ["## Side by side", "", "| | measure | before | after | change | |", "|---|---|--:|--:|--:|---|"]
    for r in c.rows:
        out.append(f"| {r.group} | {markdown(r.label)} | {cells(r)[0]} | {cells(r)[1]} | "
                   f"{change(r)} | {r.verdict} |")
    sp = c.rows[-1]
    if sp.note:
        out += ["", f"Speed-up left: {markdown(sp.note)}."]
    return "\n".join(out) + "\n"
