"""``gpuwatch compare BEFORE AFTER``: what changed after a fix, side by side.

Each side is a recording or a JSON report of ``gpuwatch diagnose``. The two runs' figures (stage
time shares, GPU busy and SM active, data wait, worker CPU, PCIe, host pressure, stalls and the
estimated speed-up left) are set side by side as text, Markdown, JSON or HTML.
"""

from __future__ import annotations

import argparse

from gpuwatch.compare.diff import compare
from gpuwatch.compare.load import Unreadable, load_side
from gpuwatch.errors import UsageError
from gpuwatch.output import check_writable, write_text


def run_compare(ns: argparse.Namespace) -> int:
    """Entry point (arguments checked by cli.py). Returns the exit code; bad input raises
    :class:`~gpuwatch.errors.UsageError` with one line."""
    if ns.output:
        check_writable(ns.output, getattr(ns, "force", False), (ns.before, ns.after))
    try:
        before, after = load_side(ns.before), load_side(ns.after)
    except Unreadable as e:
        raise UsageError(str(e)) from None
    c = compare(before.figures, after.figures, ns.before, ns.after, (before.bad_lines, after.bad_lines))
    if ns.format == "json":
        from gpuwatch.compare.render_json import render_json

        text = render_json(c)
    elif ns.format == "md":
        from gpuwatch.compare.render_md import render_markdown

        text = render_markdown(c)
    elif ns.format == "html":
        from gpuwatch.compare.render_html import render_html

        text = render_html(c, before.series, after.series)
    else:
        from gpuwatch.compare.render_text import render_text

        text = render_text(c)
    return write_text(text, ns.output, "comparison", suffix=".txt" if ns.format == "text" else f".{ns.format}")
