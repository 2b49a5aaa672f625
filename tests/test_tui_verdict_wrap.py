"""The verdict line keeps a number with the word after it ("33 %", "2 DataLoader workers") when it
wraps: Textual breaks at any whitespace, so "waits for data 33" / "% of the time" came apart at
80 columns on most H200 replays (trial of session 14)."""

from __future__ import annotations

import re
from pathlib import Path

from textual.app import App, ComposeResult

from gpuwatch.replay import load_frames
from gpuwatch.report.gather import from_frames
from gpuwatch.tui.panels.pipeline import verdict_text
from gpuwatch.tui.panels.verdict_line import VerdictLine

RECORDING = Path(__file__).resolve().parent / "data" / "h200" / "field_checkpoint.jsonl.gz"
NUMBER = re.compile(r"[(\[~<>+-]*\d[\d.,]*")


class _One(App):
    def compose(self) -> ComposeResult:
        yield VerdictLine("", classes="verdict")


def _texts() -> list[str]:
    verdicts = from_frames(load_frames(str(RECORDING), lambda bad: None)).verdicts
    return sorted({verdict_text(v) for v in verdicts})


async def test_a_number_stays_on_the_line_of_its_unit_at_every_width():
    texts = _texts()
    assert any(re.search(r"\d %", t) for t in texts)
    split = []
    app = _One()
    async with app.run_test(size=(80, 40)) as pilot:
        line = app.query_one(VerdictLine)
        for width in (60, 72, 80, 96, 120):
            await pilot.resize_terminal(width, 40)
            await pilot.pause()
            for text in texts:
                line.update(text)
                await pilot.pause()
                shown = [s.text.rstrip() for s in line.render_lines(line.region.reset_offset)]
                shown = [s for s in shown if s]
                assert all(len(s) <= width for s in shown)
                assert "".join(shown).replace(" ", "") == re.sub(r"\[/?b\]| ", "", text)  # nothing lost
                split += [(width, a, b) for a, b in zip(shown, shown[1:]) if NUMBER.fullmatch(a.split(" ")[-1])]
    assert split == []
