"""The report's input line: the main thread on its input, counted as the TUI's "input" chart line is.

On tests/data/cpu_field/loop_aug.jsonl.gz (a CPU job that transforms its batches in the training
loop; its own clock said 63.6 % transforms) the verdict is CPU prep, while the HTML report's only
input chart, "main thread waiting for data", stood near 0 % and so did the run figure compare
reads. The input line counts the wait, a load and preparing in the loop (model.stacks.INPUT_LABELS).
"""

from __future__ import annotations

import json
from statistics import mean

import pytest

from gpuwatch.cli import main
from gpuwatch.compare.load import load_side
from gpuwatch.model.stacks import INPUT_LABELS, ROLE_MAIN_THREAD
from gpuwatch.model.values import Unsupported
from gpuwatch.replay import load_frames
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_html import render_html
from gpuwatch.report.series import run_series
from gpuwatch.tui.chart_series import ChartSeries
from tests.test_report_html import parse, values_of

LOOP = "tests/data/cpu_field/loop_aug.jsonl.gz"


@pytest.fixture(scope="module")
def loop_report():
    got = from_frames(load_frames(LOOP))
    return got, build_report(got, Unsupported("not probed in this test"), "replay", path=LOOP)


def test_the_input_line_counts_preparing_in_the_loop_where_the_wait_reads_little(loop_report):
    got, report = loop_report
    assert report.summary.stage == "decode"
    ticks = run_series(got.frames, got.verdicts)
    late = [t for t in ticks if t.input is not None][-20:]
    assert mean(t.input for t in late) > 40  # the verdict's "prepares batches itself 58 %"
    assert mean(t.data_wait for t in late) < 10  # the wait alone says little
    assert all(t.input >= t.data_wait for t in ticks if t.input is not None)  # the wait is one of the three
    assert report.figures.input.value > report.figures.data_wait.value + 30


def test_the_html_chart_plots_both_lines_and_the_tui_reads_the_same_share(loop_report):
    got, report = loop_report
    page = parse(render_html(report, run_series(got.frames, got.verdicts)))
    chart = page.charts["data_wait"]
    assert set(chart["paths"]) == {"input", "data_wait"}
    html_input = [v for _, v in values_of(chart, "input")]
    # the TUI's "input" line over the same frames and window: the same numbers
    tui = [r.wait_share for r in ChartSeries().readings(got.frames) if r.wait_share is not None]
    assert html_input == pytest.approx(tui, abs=0.2)
    # and by hand from the stack samples: the share of main-thread samples with an input label
    last = got.frames[-1]
    window = {s.t: s for f in got.frames if (s := f.stacks) is not None and hasattr(s, "threads")
              and last.t - 8.0 < s.t <= last.t}
    labels = [th.label for s in window.values() for th in s.threads if th.role == ROLE_MAIN_THREAD]
    assert html_input[-1] == pytest.approx(100.0 * sum(lab in INPUT_LABELS for lab in labels) / len(labels), abs=0.2)


def test_compare_has_the_input_row_and_an_older_report_reads_it_as_not_measured(tmp_path, capsys):
    rep = tmp_path / "loop.json"
    assert main(["diagnose", "--replay", LOOP, "--format", "json", "-o", str(rep)]) == 0
    doc = json.loads(rep.read_text())
    assert doc["figures"]["input"]["value"] > doc["figures"]["data_wait"]["value"]
    del doc["figures"]["input"]  # a report written before the input figure
    old = tmp_path / "old.json"
    old.write_text(json.dumps(doc))
    assert load_side(str(old)).figures.input.value is None
    capsys.readouterr()
    assert main(["compare", str(old), LOOP, "--format", "json"]) == 0
    rows = {r["key"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["input"]["before"] is None and rows["input"]["after"] > 40
    assert rows["input"]["verdict"] == "not comparable"
