"""``gpuwatch compare --format md``: a Markdown table to paste into a ticket."""

from __future__ import annotations

from gpuwatch.compare.diff import Comparison
from gpuwatch.compare.fmt import change, clean
from gpuwatch.report.units import value


def render_markdown(c: Comparison) -> str:
    b, a = c.before, c.after
    out = [
        "# gpuwatch compare",
        "",
        f"- **Before**: `{_code(c.before_path)}`: {b.ticks} ticks over {b.covered_s:.0f} s",
        f"- **After**: `{_code(c.after_path)}`: {a.ticks} ticks over {a.covered_s:.0f} s",
        "",
    ]
    if c.notes:
        out += ["## Notes", ""] + [f"- {_md(n)}" for n in c.notes] + [""]
    out += ["## Side by side", "", "| | measure | before | after | change | |", "|---|---|--:|--:|--:|---|"]
    for r in c.rows:
        out.append(f"| {r.group} | {_md(r.label)} | {value(r.before, r.unit)} | {value(r.after, r.unit)} | "
                   f"{change(r)} | {r.verdict} |")
    sp = c.rows[-1]
    if sp.note:
        out += ["", f"Speed-up left: {_md(sp.note)}."]
    return "\n".join(out) + "\n"


def _md(s: str) -> str:
    """Untrusted text inside a Markdown table: no pipes, no markup, no HTML."""
    s = clean(s)
    for ch in "\\|*_`<>[]#":
        s = s.replace(ch, "\\" + ch)
    return s


def _code(s: str) -> str:
    return clean(s).replace("`", "'")
