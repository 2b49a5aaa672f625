"""The time charts: braille drawing, the verdict band, the series read from frames, and the charts
on the main screen and the drill-down as the terminal resizes."""

from __future__ import annotations

import dataclasses
import math

from gpuwatch.model.stacks import StackSample
from gpuwatch.model.verdict import CPU_BOUND, DECODE, GPU_BOUND, IO, STAGES, UNKNOWN
from gpuwatch.tui.chart_draw import (
    OVERLAP, SERIES, Plot, Series, SpanCache, band_line, chart_lines, frames_span, plot_rows, span_text, ticks_span,
)
from gpuwatch.tui.chart_series import ChartSeries, nice
from gpuwatch.tui.panels.chart import TimeChart
from gpuwatch.tui.panels.job_charts import JobCharts
from tests.test_tui_fixtures import ListSource, make_app, screen_text, settle, synthetic_frames

BLANK = " "


def text(parts) -> str:
    return "".join(t for t, _ in parts)


def one(values, top=100.0, label="x") -> Plot:
    return Plot((Series(label, tuple(values), "now"),), top, "0-100 %")


def test_a_full_scale_value_fills_the_top_dots_and_zero_the_bottom_ones():
    rows = plot_rows(one([100.0, 100.0]), width=1, rows=2)
    assert text(rows[0]) == "⠉"  # both columns' top dots
    assert text(rows[1]) == BLANK
    rows = plot_rows(one([0.0, 0.0]), width=1, rows=2)
    assert text(rows[0]) == BLANK and text(rows[1]) == "⣀"


def test_the_newest_tick_is_at_the_right_edge_and_missing_ticks_draw_nothing():
    rows = plot_rows(one([None, None, None, 50.0]), width=3, rows=1)
    line = text(rows[0])
    assert len(line) == 3 and line[:2] == BLANK * 2 and line[2] != BLANK
    # only the right column of the last cell has dots (braille right-column bits: 0x08 0x10 0x20 0x80)
    assert (ord(line[2]) - 0x2800) & 0x47 == 0


def test_a_jump_is_joined_halfway_so_the_line_stays_connected():
    rows = plot_rows(one([0.0, 100.0]), width=1, rows=2)
    column_dots = [ord(text(r)[0]) - 0x2800 for r in rows]
    left = [bool(d & b) for d in column_dots for b in (0x01, 0x02, 0x04, 0x40)]  # top to bottom
    right = [bool(d & b) for d in column_dots for b in (0x08, 0x10, 0x20, 0x80)]
    lit_left = [i for i, on in enumerate(left) if on]  # dot rows, 0 at the top
    lit_right = [i for i, on in enumerate(right) if on]
    assert lit_left == list(range(lit_left[0], 8))  # from the bottom up to about the middle
    assert lit_right == list(range(0, lit_right[-1] + 1))  # from the top down to about the middle
    assert 2 <= lit_left[0] <= lit_right[-1] + 1 <= 6  # they meet


def test_cells_drawn_by_two_series_are_marked_as_overlap():
    p = Plot((Series("a", (50.0, 50.0), ""), Series("b", (50.0, 50.0), ""), Series("c", (0.0, 0.0), "")),
             100.0, "")
    rows = plot_rows(p, width=1, rows=1)
    assert [c for _, c in rows[0]] == [OVERLAP]
    q = Plot((Series("a", (100.0, 100.0), ""), Series("b", (0.0, 0.0), "")), 100.0, "")
    rows = plot_rows(q, width=1, rows=2)
    assert rows[0][0][1] == SERIES[0] and rows[1][0][1] == SERIES[1]


def test_the_span_cache_draws_what_a_full_draw_does_as_the_window_moves():
    n = 500
    a = [50 + 45 * math.sin(i / 9) for i in range(n)]
    b = [30 + 25 * math.cos(i / 5) if i % 37 else None for i in range(n)]
    stages = [GPU_BOUND if (i // 40) % 2 else DECODE for i in range(n)]
    cache = SpanCache()
    for end in [*range(1, 12), *range(150, 175), *range(300, 330)]:
        lo = max(0, end - 120)  # grows to the window, then moves
        p = Plot((Series("a", tuple(a[lo:end]), ""), Series("b", tuple(b[lo:end]), "")), 100.0, "")
        assert chart_lines([p, p], stages[lo:end], 60, 9, cache) == chart_lines([p, p], stages[lo:end], 60, 9)


def test_the_cell_cache_works_out_only_the_ends_as_the_window_moves(monkeypatch):
    """With two ticks a cell, a draw reuses the cells of the draw two ticks back, one cell on, and
    works out the first cell and the last two; a new scale or height draws the plot whole."""
    from gpuwatch.tui import chart_draw

    worked = []
    cell_rows = chart_draw._cell_rows
    monkeypatch.setattr(chart_draw, "_cell_rows", lambda s, r, lo, hi: worked.append(hi - lo) or cell_rows(s, r, lo, hi))
    n = 400
    a = [50 + 45 * math.sin(i / 9) for i in range(n)]
    b = [30 + 25 * math.cos(i / 5) if i % 37 else None for i in range(n)]
    cache = SpanCache()
    for end in range(100, 160):
        lo = max(0, end - 80)
        top = 100.0 if end < 130 else 120.0  # the scale changes once
        p = Plot((Series("a", tuple(a[lo:end]), ""), Series("b", tuple(b[lo:end]), "")), top, "")
        height = 9 if end < 145 else 7
        worked.clear()
        drawn = chart_lines([p, p], [GPU_BOUND] * (end - lo), 40, height, cache)
        whole = end in (100, 101, 130, 131, 145, 146)  # nothing two ticks back to build on
        assert worked == ([40, 40] if whole else [1, 2, 1, 2]), end
        assert drawn == chart_lines([p, p], [GPU_BOUND] * (end - lo), 40, height)


def test_the_band_names_each_verdict_where_it_fits_and_marks_it_by_stage_number_where_not():
    stages = [None] * 4 + [IO] * 4 + [GPU_BOUND] * 40
    parts = band_line(stages, width=24)
    assert text(parts) == "  11──── GPU-bound ─────"
    assert [c for _, c in parts] == [None, "time-chart--band-io", "time-chart--band-gpu_bound"]


def test_every_verdict_has_its_own_band_mark_and_colour():
    """A stage missing from the band's table would read "?", which the legend says is Unknown: a
    CPU-bound job's band claimed the verdict was unknown while the line above it said CPU-bound."""
    from gpuwatch.tui.chart_draw import BAND_MARK
    from gpuwatch.tui.panels.chart import _BAND_COLOURS

    assert set(BAND_MARK) == set(STAGES) == set(_BAND_COLOURS)
    assert len(set(BAND_MARK.values())) == len(STAGES)
    marks = text(band_line([UNKNOWN] * 2 + [CPU_BOUND] * 6, width=4))
    assert marks == "?CCC"


def test_a_short_chart_keeps_the_first_plots_and_the_band():
    plots = [one([10.0] * 80, label=f"p{i}") for i in range(3)]
    band = [GPU_BOUND] * 80
    for height, shown in ((3, 1), (4, 1), (7, 2), (10, 3), (16, 3)):
        lines = chart_lines(plots, band, 40, height)
        assert len(lines) == height
        titles = [text(line) for line in lines if text(line).startswith("p")]
        assert [t.split()[0] for t in titles] == [f"p{i}" for i in range(shown)]
        assert "GPU-bound" in text(lines[-1])
    assert ticks_span(40) == 80  # two ticks a cell


def test_the_title_says_the_time_the_frames_cover_not_the_axis_width():
    """80 ticks of axis are 80 s at --interval 1 but 400 s at 5, and a 26 s replay holds 26 s."""
    plots = [one([10.0] * 26)]
    assert text(chart_lines(plots, [GPU_BOUND] * 26, 40, 4, span_s=frames_span(0.0, 25.0, 1.0))[0]).endswith(
        "0-100 % · last 26s")
    assert span_text(frames_span(100.0, 495.0, 5.0)) == "6m40s"  # 80 frames, 5 s apart
    assert span_text(frames_span(0.0, 1.0, 0.5)) == "1.5s"
    assert text(chart_lines(plots, [GPU_BOUND] * 26, 40, 4)[0]).endswith("0-100 %")  # no frames: no span said


def test_nice_scales_round_up_to_one_two_or_five():
    assert [nice(x) for x in (0.0, 0.7, 1.0, 3.1, 7.0, 99.9, 120.0, 4.2e9)] == [1, 1, 1, 5, 10, 100, 200, 5e9]


def test_series_read_the_gpu_and_the_rolling_data_wait_once_per_frame():
    frames = synthetic_frames(20)
    series = ChartSeries()
    rows = series.readings(frames)
    g = frames[-1].gpus[0]
    assert rows[-1].busy == g.util_gpu and rows[-1].sm == g.gpm.sm_active
    assert abs(rows[-1].mem - 100 * g.mem_used / g.mem_total) < 1e-9
    # every synthetic main-thread sample waits for data: 100 % over the window
    assert rows[-1].wait_share == 100.0 and rows[-1].main == 1
    # a stalled stack collector repeats its sample in the next frame: counted once
    stale = dataclasses.replace(frames[-1], seq=99, t=frames[-1].t + 1)
    assert isinstance(stale.stacks, StackSample)
    again = series.readings([*frames, stale])
    assert again[-1].main == 0 and again[-1].wait_share == 100.0
    assert again[:-1] == rows  # the frames read before are not read again
    plots = series.plots(frames)
    assert [s.label for s in plots[0].series] == ["GPU util", "SM active", "memory"]
    assert [s.label for s in plots[1].series] == ["input", "worker CPU"]
    assert [s.label for s in plots[2].series] == ["PCIe RX", "TX"]
    no_gpu = series.plots(synthetic_frames(5, gpus=False))  # nothing to plot for the GPU: it goes last
    assert [p.series[0].label for p in no_gpu] == ["input", "GPU util", "PCIe RX"]


async def test_the_main_screen_chart_fills_the_width_and_shows_more_plots_when_taller():
    app = make_app(ListSource(synthetic_frames(30)))
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        chart = app.screen.query_one(JobCharts)
        assert chart.size.width == 78  # the width less its margins
        text_80 = screen_text(app)
        assert "GPU util" in text_80 and "input ━" not in text_80
        assert "0-100 % · last 30s" in text_80  # the 30 frames held, not the 156 ticks the axis could hold
        assert "CPU prep" in text_80.splitlines()[app.screen.query_one(JobCharts).region.bottom - 1]
        await pilot.resize_terminal(200, 60)
        await pilot.pause()
        await pilot.pause()
        assert chart.size.width == 198
        text_200 = screen_text(app)
        assert all(label in text_200 for label in ("GPU util", "input ━", "worker CPU", "PCIe RX"))


async def test_the_drill_down_plots_its_signals_and_evidence_as_charts():
    app = make_app(ListSource(synthetic_frames(30)))
    async with app.run_test(size=(120, 60)) as pilot:
        await settle(pilot, app)
        await pilot.press("2", "enter")
        await pilot.pause()
        history = app.screen.query_one("#history", TimeChart)
        evidence = app.screen.query_one("#evidence-history", TimeChart)
        assert history.size.height == 4 * 3 + 1  # the decode stage's four signals, and the band
        assert evidence.size.height == 3 * 3 + 1  # the three decode evidence items
        shown = screen_text(app)
        assert "CPU per worker" in shown and "workers busy" in shown and "cut" in shown


def test_chart_columns_kept_as_the_window_slides_equal_the_plots_built_afresh():
    import glob

    from gpuwatch.replay import load_frames

    frames = [f for p in sorted(glob.glob("tests/data/h200/*.jsonl.gz"))[:3] for f in load_frames(p)]
    # readings are kept by frame in both (a frame's data-wait share looks back over the window it was
    # first seen in), so the reference is a second series whose columns are dropped before each tick
    kept, afresh = ChartSeries(), ChartSeries()
    checked = 0
    for width in (200, 80, 30):  # a resize changes the window's length
        ends = [*range(1, len(frames) + 1), 40, len(frames) // 2, 5, len(frames)]  # seeks back and forth
        for end in ends:
            w = frames[max(0, end - 2 * width):end]
            afresh._cols = {}
            assert kept.plots(w) == afresh.plots(w), (width, end)
            checked += 1
    assert checked > 3


def test_a_job_without_workers_says_so_on_the_worker_cpu_line_not_na():
    """The CPU demo's first phase (num_workers=0) read "data wait ━ 0 %  worker CPU ━ N/A", and the
    help says N/A is a value that could not be read, its reason shown next to it: here there is
    simply no worker. Unread processes stay N/A."""
    def main_only(f):  # noqa: ANN001, ANN202
        return dataclasses.replace(f, procs=dataclasses.replace(
            f.procs, processes=tuple(p for p in f.procs.processes if p.role != "worker")))

    series = ChartSeries()
    feed = series.plots([main_only(f) for f in synthetic_frames(5)])[1]
    assert [(s.label, s.now) for s in feed.series][1] == ("worker CPU", "no workers")
    unread = ChartSeries().plots(synthetic_frames(5, procs=False))[1]
    assert [(s.label, s.now) for s in unread.series][1] == ("worker CPU", "N/A")
    with_workers = ChartSeries().plots(synthetic_frames(5))[1]
    assert with_workers.series[1].now == "98 %"


def test_a_chart_whose_name_does_not_fit_is_named_still_cut_with_an_ellipsis():
    """Review 30: at 80x24 a drill-down chart with a long name showed "0-0.90 · last 32s" alone."""
    from gpuwatch.tui.chart_draw import Plot, Series, title_line

    label = "SM active / graphics-engine active (GPM; tiny kernels read low)"
    plot = Plot((Series(label, (0.88,), "0.88 ≰ 0.25"),), 0.9, "0-0.90")
    for width in (78, 60, 40):
        text = "".join(t for t, _ in title_line(plot, width, 32.0))
        assert text.startswith("SM active") and "…" in text and "0.88 ≰ 0.25" in text, (width, text)
        assert len(text) <= width, (width, text)
    assert "0-0.90 · last 32s" in "".join(t for t, _ in title_line(plot, 78, 32.0))


def test_the_input_line_counts_the_loops_own_data_preparation():
    """tests/data/cpu_field/loop_aug.jsonl.gz: the loop transformed its batches itself 63.6 % of the
    time by its own clock and waited for them 11 %; under a CPU-prep verdict the chart read "data
    wait 0 %". The input line counts the main thread waiting for, loading or preparing a batch."""
    from gpuwatch.replay import load_frames

    frames = load_frames("tests/data/cpu_field/loop_aug.jsonl.gz")
    feed = ChartSeries().plots(frames[-30:])
    line = next(s for p in feed for s in p.series if s.label == "input")
    late = [x for x in line.values[-10:] if x is not None]
    assert late and min(late) >= 40.0, late
