"""MetricRow's own drawing path against Textual's: the same segments, with colour and without (and the
header's state line, drawn the same way with its padding).

MetricRow.render_lines skips Textual's per-line styling pass and applies the app's line filters to
its few run styles instead of to every segment. These tests draw each row of the main screen both
ways (Textual's pass is ``Widget.render_lines``) and compare the segments, text and style."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.widget import Widget

from gpuwatch.tui.panels.header import StateLine
from gpuwatch.tui.panels.metric_row import MetricRow
from tests.test_tui_fixtures import ListSource, make_app, settle, synthetic_frames


def _segments(strips):
    return [[(seg.text, seg.style) for seg in strip] for strip in strips]


@pytest.mark.parametrize("no_color", [False, True], ids=["colour", "NO_COLOR"])
async def test_own_path_draws_what_textuals_pass_draws(monkeypatch, no_color):
    if no_color:
        monkeypatch.setenv("NO_COLOR", "1")
    else:
        monkeypatch.delenv("NO_COLOR", raising=False)
    app = make_app(ListSource(synthetic_frames(20)))
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        rows = list(app.query(MetricRow))
        assert len(rows) == 10
        for row in rows:
            w, h = row.size
            assert w > 60 and h >= 1
            for crop in (Region(0, 0, w, h), Region(3, 0, w - 10, h)):  # whole, and cut at both sides
                ours = row.render_lines(crop)
                textuals = Widget.render_lines(row, crop)
                assert _segments(ours) == _segments(textuals), row.id
        line = app.query_one("#header-state", StateLine)  # drawn the same way, its padding too
        w, h = line.outer_size
        assert "watched" in line._text and w == len(line._text) + 2  # its width follows the text
        for crop in (Region(0, 0, w, h), Region(2, 0, w - 4, h)):
            assert _segments(line.render_lines(crop)) == _segments(Widget.render_lines(line, crop))
        if no_color:  # the filter really ran: no colour left in any style
            assert all(seg.style.color is None or seg.style.color.is_system_defined or
                       seg.style.color.triplet is None or len(set(seg.style.color.triplet)) == 1
                       for row in rows for strip in row.render_lines(Region(0, 0, *row.size)) for seg in strip)


async def test_own_path_follows_a_new_background():
    """The row keeps what it worked out of its styles (background, border, opacity) between style
    updates: a theme switched under it must show on the next draw, as Textual's pass draws it."""
    app = make_app(ListSource(synthetic_frames(20)))
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        row = app.query_one("#m-sm", MetricRow)
        crop = Region(0, 0, *row.size)
        before = _segments(row.render_lines(crop))
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await settle(pilot, app)
        after = _segments(row.render_lines(crop))
        assert after == _segments(Widget.render_lines(row, crop))
        assert [s for _, s in after[0]] != [s for _, s in before[0]]

