"""Render the TUI from a recording to SVG (and PNG where rsvg-convert is installed).

For each terminal size: the main screen, every stage's drill-down, the stacks view and the help.
The frames are the recording's own, replayed as fast as possible and stopped after ``--frames``;
the verdicts come from the current diagnosis. gpuwatch's own CPU is left out of the header (it
would measure the replay, not a watch).

    .venv/bin/python bench/make_screenshots.py tests/data/cpu_demo.jsonl --frames 30
    .venv/bin/python bench/make_screenshots.py run.jsonl --sizes 200x60 --out screenshots/h200

PNG: ``apt-get install librsvg2-bin fonts-firacode`` (rsvg-convert, and the font the SVGs name);
without rsvg-convert only SVGs are written.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from gpuwatch.analysis import Analysis
from gpuwatch.model.verdict import PIPELINE
from gpuwatch.source import FirstFrames, ReplaySource
from gpuwatch.tui.app import GpuwatchApp

VIEWS: dict[str, tuple[str, ...]] = {
    "main": (),
    **{f"stage-{stage}": (str(i + 1), "enter") for i, stage in enumerate(PIPELINE)},
    "stacks": ("s",),
    "help": ("question_mark",),
}
"""View name -> keys that open it from the main screen."""


async def render(recording: str, frames: int | None, size: tuple[int, int], keys: Sequence[str], svg: Path) -> None:
    source = FirstFrames(ReplaySource(recording, speed=0), frames)
    app = GpuwatchApp(source, analysis=Analysis(), self_cpu=lambda: None)
    async with app.run_test(size=size) as pilot:
        await app.workers.wait_for_complete()
        await pilot.pause()
        for key in keys:
            await pilot.press(key)
            await pilot.pause()
        await pilot.pause(0.2)
        app.save_screenshot(filename=svg.name, path=str(svg.parent))


_TEXT = re.compile(r'<text([^>]*?) x="([0-9.]+)"([^>]*?) textLength="([0-9.]+)"([^>]*)>([^<]*)</text>')
_NBSP = "&#160;"


def _split_runs(m: re.Match) -> str:
    """One ``<text>`` per run of visible characters, each at its own cell's x."""
    pre, x, mid, length, post, body = m.groups()
    cells = re.findall(r"&#?\w+;|.", body)  # an entity is one cell
    if not cells or _NBSP not in cells:
        return m.group(0)
    cell_w = float(length) / len(cells)
    out, start = [], None
    for i, c in enumerate([*cells, _NBSP]):
        if c != _NBSP and start is None:
            start = i
        elif c == _NBSP and start is not None:
            run = "".join(cells[start:i])
            out.append(f'<text{pre} x="{float(x) + start * cell_w:.1f}"{mid} '
                       f'textLength="{(i - start) * cell_w:.1f}"{post}>{run}</text>')
            start = None
    return "".join(out)


def rsvg_friendly(svg_text: str) -> str:
    """Textual's SVG places each run of cells with ``x`` + ``textLength``; browsers honour that, but
    rsvg-convert shrinks runs of non-breaking spaces, which shifts plots left. Splitting every run at
    the spaces gives each visible piece its own x, so the PNG matches the terminal."""
    return _TEXT.sub(_split_runs, svg_text)


def to_png(svg: Path) -> Path | None:
    exe = shutil.which("rsvg-convert")
    if exe is None:
        return None
    png = svg.with_suffix(".png")
    fixed = svg.with_suffix(".rsvg.svg")
    fixed.write_text(rsvg_friendly(svg.read_text(encoding="utf-8")), encoding="utf-8")
    try:
        subprocess.run([exe, "--format", "png", "--output", str(png), str(fixed)], check=True)
    finally:
        fixed.unlink()
    return png


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("recording")
    p.add_argument("--frames", type=int, default=None, help="stop the replay after N frames (default: all)")
    p.add_argument("--sizes", default="80x24,200x60", help="terminal sizes, e.g. 80x24,200x60")
    p.add_argument("--out", default="screenshots", help="folder for the images (default: screenshots)")
    p.add_argument("--views", default=",".join(VIEWS), help=f"which views (default: all of {', '.join(VIEWS)})")
    p.add_argument("--no-png", action="store_true")
    ns = p.parse_args(argv)
    out = Path(ns.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = Path(ns.recording).stem
    sizes = [tuple(int(x) for x in s.split("x")) for s in ns.sizes.split(",")]
    made = []
    for w, h in sizes:
        for view in ns.views.split(","):
            svg = out / f"{stem}-{w}x{h}-{view}.svg"
            asyncio.run(render(ns.recording, ns.frames, (w, h), VIEWS[view], svg))
            made.append(svg)
            png = None if ns.no_png else to_png(svg)
            print(f"{svg}" + (f"  {png}" if png else ""))
    if not ns.no_png and shutil.which("rsvg-convert") is None:
        print("rsvg-convert not found: SVG only (apt-get install librsvg2-bin for PNG)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
