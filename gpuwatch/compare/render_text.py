"""``gpuwatch compare`` as plain text for the terminal (the default format)."""

from __future__ import annotations

from gpuwatch.compare.diff import Comparison
from gpuwatch.compare.fmt import cells, change
from gpuwatch.untrusted import clean


def render_text(c: Comparison) -> str:
    b, a = c.before, c.after
    lines = [
        f"gpuwatch compare: before {clean(c.before_path)} ({b.ticks} ticks, {b.covered_s:.0f} s)",
        f"                  after  {clean(c.after_path)} ({a.ticks} ticks, {a.covered_s:.0f} s)",
    ]
    lines += [f"note: {clean(n)}" for n in c.notes]
    table = [("", "before", "after", "change", "")]
    group = None
    for r in c.rows:
        if r.group != group:
            group = r.group
            table.append((f"{group}:", "", "", "", ""))
        table.append((f"  {clean(r.label)}", *cells(r), change(r), r.verdict))
    widths = [max(len(row[i]) for row in table) for i in range(5)]
    lines.append("")
    for row in table:
        parts = [row[0].ljust(widths[0])] + [row[i].rjust(widths[i]) for i in (1, 2, 3)] + [row[4]]
        lines.append("  ".join(parts).rstrip())
    sp = c.rows[-1]
    if sp.note:
        lines += ["", f"speed-up left: {clean(sp.note)}"]
    return "\n".join(lines) + "\n"
