"""The metric rows' own drawing path against Textual's: the same segments, with colour and without
(and the header's state line, drawn the same way with its padding).

MetricRows.render_lines skips Textual's per-line styling pass and applies the app's line filters to
its few run styles instead of to every segment. These tests draw the rows of the main screen both
ways (Textual's pass is ``Widget.render_lines``) and compare the segments, text and style."""

from __future__ import annotations

import pytest
from textual.geometry import Region
from textual.widget import Widget

from gpuwatch.tui.panels.header import StateLine
from gpuwatch.tui.panels.metric_rows import MetricRows
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
        rows = list(app.query(MetricRows))
        assert len(rows) == 1
        for row in rows:
            w, h = row.size
            assert w > 60 and h == 10
            for crop in (Region(0, 0, w, h), Region(3, 0, w - 10, h)):  # whole, and cut at both sides
                ours = row.render_lines(crop)
                textuals = Widget.render_lines(row, crop)
                assert _segments(ours) == _segments(textuals)
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
        row = app.query_one(MetricRows)
        crop = Region(0, 0, *row.size)
        before = _segments(row.render_lines(crop))
        app.theme = "textual-light" if app.theme != "textual-light" else "nord"
        await settle(pilot, app)
        after = _segments(row.render_lines(crop))
        assert after == _segments(Widget.render_lines(row, crop))
        assert [s for _, s in after[0]] != [s for _, s in before[0]]



async def test_two_columns_on_a_narrow_screen_as_the_grid_laid_them_out():
    """Below 120 columns the rows stand two a line, the stylesheet's grid gutter between them:
    each row as wide as Textual's grid made its cell (an odd width gives the first column the
    cell less), drawn as Textual's pass draws it."""
    app = make_app(ListSource(synthetic_frames(20)))
    async with app.run_test(size=(81, 40)) as pilot:
        await settle(pilot, app)
        rows = app.query_one(MetricRows)
        w, h = rows.size
        assert h == 5
        assert rows._columns() == [(0, (w - 2) // 2), ((w - 2) // 2 + 2, w - (w - 2) // 2 - 2)]
        lines = rows.render_lines(Region(0, 0, w, h))
        assert _segments(lines) == _segments(Widget.render_lines(rows, Region(0, 0, w, h)))
        text = ["".join(seg.text for seg in strip) for strip in lines]
        left, right = rows._columns()
        assert text[0][: len("util")] == "util" and text[0][right[0]:].startswith("SM")
        assert text[4][right[0]:].startswith("temp") and all(len(t) == w for t in text)
        assert text[0][left[1]:right[0]] == "  "  # the gutter


async def test_the_tooltip_names_the_metric_under_the_mouse():
    app = make_app(ListSource(synthetic_frames(20)))
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot, app)
        rows = app.query_one(MetricRows)
        await pilot.hover(MetricRows, offset=(2, 1))  # the second row
        assert rows.tooltip == rows.row_tooltip("sm")
        await pilot.hover(MetricRows, offset=(2, 9))
        assert rows.tooltip == rows.row_tooltip("temp") == "GPU temperature."


async def test_the_tooltip_goes_with_the_mouse_and_stays_gone_over_the_gutter():
    """Leaving the rows clears the tooltip: coming back over the gutter between the columns, where
    no row is, shows none rather than the last row's."""
    app = make_app(ListSource(synthetic_frames(20)))
    async with app.run_test(size=(81, 40)) as pilot:
        await settle(pilot, app)
        rows = app.query_one(MetricRows)
        left, right = rows._columns()
        await pilot.hover(MetricRows, offset=(2, 0))
        assert rows.tooltip == rows.row_tooltip("util")
        await pilot.hover(MetricRows, offset=(2, -1))  # off the rows
        await pilot.hover(MetricRows, offset=(left[1], 0))  # the gutter
        assert rows.tooltip is None
