"""``gpuwatch diagnose --format html``: one self-contained file whose charts hold the recording's
numbers. The file is parsed (html.parser), each chart's shapes are turned back into values with
the scale the chart states, and those are checked against numbers read straight from the
recording's JSON lines (a real H200 run through five stages, bench/results/2026-12-02-h200/acc)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest

from gpuwatch.cli import main
from gpuwatch.diagnosis.thresholds import WINDOW_S
from gpuwatch.model.stacks import LABEL_WORDS
from gpuwatch.model.values import Unsupported
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_html import render_html
from gpuwatch.report.series import run_series
from gpuwatch.replay import load_frames

ROOT = Path(__file__).resolve().parents[1]
SWITCH = ROOT / "bench" / "results" / "2026-12-02-h200" / "acc" / "switch.jsonl"
CPU_ONLY = ROOT / "tests" / "data" / "report" / "cpu_train_w2.jsonl"
CHECKPOINT = ROOT / "tests" / "data" / "h200" / "field_checkpoint.jsonl.gz"


class Page(HTMLParser):
    """The parts of the page the tests read: charts and their shapes, tags, the embedded JSON."""

    def __init__(self) -> None:
        super().__init__()
        self.charts: dict[str, dict] = {}
        self.tags: list[tuple[str, dict]] = []
        self.json_text = ""
        self._chart: dict | None = None
        self._in_json = False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.append((tag, a))
        if tag == "svg":
            self._chart = {"attrs": a, "paths": {}, "band": [], "bars": [], "stalls": []}
            self.charts[a["data-chart"]] = self._chart
        elif self._chart is not None and tag == "path" and "data-series" in a:
            self._chart["paths"][a["data-series"]] = a["d"]
        elif self._chart is not None and tag == "rect":
            if a.get("class") == "band":  # a run of ticks with one stage: one entry per tick
                self._chart["band"] += [(float(a["data-t"]), a["data-state"])] * int(a["data-ticks"])
            elif a.get("class") == "bar":
                self._chart["bars"].append((float(a["data-t"]), a["data-series"], int(a["data-count"])))
            elif a.get("class") == "stall":
                self._chart["stalls"].append(float(a["data-t"]))
        elif tag == "script" and a.get("type") == "application/json":
            self._in_json = True

    def handle_endtag(self, tag):
        if tag == "svg":
            self._chart = None
        elif tag == "script":
            self._in_json = False

    def handle_data(self, data):
        if self._in_json:
            self.json_text += data


def parse(text: str) -> Page:
    p = Page()
    p.feed(text)
    p.close()
    return p


def values_of(chart: dict, series: str) -> list[tuple[float, float]]:
    """(t, value) for each point of a line, from its path and the chart's stated scale."""
    x0, y0, w, h = map(float, chart["attrs"]["data-box"].split())
    x_max, y_max = float(chart["attrs"]["data-x-max"]), float(chart["attrs"]["data-y-max"])
    out = []
    for x, y in re.findall(r"[ML]([\d.]+) ([\d.]+)", chart["paths"][series]):
        out.append(((float(x) - x0) / w * x_max, (y0 + h - float(y)) / h * y_max))
    return out


def raw_ticks(path: Path) -> list[dict]:
    return [r for r in map(json.loads, path.read_text().splitlines()) if r.get("type") == "tick"]


def read(r: dict, field: str) -> bool:
    """Whether the tick's collector sample was readable (else the frame holds {"unsupported": why})."""
    return "unsupported" not in r["frame"][field]


def gpm_mean(gpus: list[dict]) -> float | None:
    """GPM SM active over the GPUs that had a GPM reading (the first tick of a watch has none)."""
    vals = [g["gpm"]["sm_active"] for g in gpus if "sm_active" in g["gpm"] and num(g["gpm"]["sm_active"]) is not None]
    return sum(vals) / len(vals) if vals else None


def num(v):
    return v if isinstance(v, (int, float)) else None


@pytest.fixture(scope="module")
def switch_page(tmp_path_factory):
    out = tmp_path_factory.mktemp("html") / "r.html"
    assert main(["diagnose", "--replay", str(SWITCH), "--format", "html", "-o", str(out)]) == 0
    return out.read_text(encoding="utf-8")


def test_self_contained_no_network_no_javascript(switch_page):
    page = parse(switch_page)
    assert switch_page.startswith("<!DOCTYPE html>")
    for tag, a in page.tags:
        assert tag not in ("link", "img", "iframe", "object", "embed"), tag
        assert not any(k in ("src", "href") or k.startswith("on") for k in a), (tag, a)
        if tag == "script":
            assert a == {"type": "application/json", "id": "gpuwatch-series"}
    assert "url(" not in switch_page and "http://" not in switch_page.replace('xmlns="http://www.w3.org/2000/svg"', "")
    assert set(page.charts) == {"stage", "gpu", "data_wait", "worker_cpu", "workers", "pcie", "host"}


def test_charts_hold_the_recordings_numbers(switch_page):
    page = parse(switch_page)
    ticks = raw_ticks(SWITCH)
    t0 = ticks[0]["frame"]["t"]
    times = [r["frame"]["t"] - t0 for r in ticks]

    used = {g["index"] for r in ticks for g in r["frame"]["gpus"] if g["used_by_target"]}

    def mine(r):  # the GPUs the job used in the run, in every tick
        return [g for g in r["frame"]["gpus"] if g["index"] in used]

    expect = {
        ("gpu", "gpu_busy"): [sum(g["util_gpu"] for g in mine(r)) / len(mine(r)) for r in ticks],
        ("pcie", "pcie_rx"): [num(sum(s["rx_bps"] for s in r["frame"]["pcie"])) if all(
            num(s["rx_bps"]) is not None for s in r["frame"]["pcie"]) else None for r in ticks],
        ("worker_cpu", "worker_cpu"): [sum(p["cpu_pct"] for p in r["frame"]["procs"]["processes"]
                                           if p["role"] == "worker") if read(r, "procs") else None for r in ticks],
        ("host", "host_cpu"): [r["frame"]["host"]["cpu_pct"] if read(r, "host") else None for r in ticks],
        ("host", "io_pressure"): [r["frame"]["host"]["psi"]["io_some"] if read(r, "host") else None for r in ticks],
        ("host", "cpu_pressure"): [r["frame"]["host"]["psi"]["cpu_some"] if read(r, "host") else None for r in ticks],
        ("host", "memory_pressure"): [r["frame"]["host"]["psi"]["mem_some"] if read(r, "host") else None
                                      for r in ticks],
        ("pcie", "pcie_tx"): [num(sum(s["tx_bps"] for s in r["frame"]["pcie"])) if all(
            num(s["tx_bps"]) is not None for s in r["frame"]["pcie"]) else None for r in ticks],
        ("gpu", "sm_active"): [gpm_mean(mine(r)) for r in ticks],
    }
    for (chart, series), want in expect.items():
        got = values_of(page.charts[chart], series)
        want_pts = [(t, v) for t, v in zip(times, want) if v is not None]
        assert len(got) == len(want_pts) > 40, (chart, series)
        y_max = float(page.charts[chart]["attrs"]["data-y-max"])
        for (gt, gv), (wt, wv) in zip(got, want_pts):
            assert gt == pytest.approx(wt, abs=0.05)
            assert gv == pytest.approx(wv, abs=y_max * 0.001), (chart, series, wt)


def test_worker_states_and_the_stage_band(switch_page):
    page = parse(switch_page)
    ticks = raw_ticks(SWITCH)
    t0 = ticks[0]["frame"]["t"]
    codes = {"R": "running", "S": "sleeping", "I": "sleeping", "D": "disk"}
    want = {}
    for r in ticks:
        for p in r["frame"]["procs"]["processes"] if read(r, "procs") else ():
            if p["role"] == "worker":
                key = (round(r["frame"]["t"] - t0, 1), codes.get(p["state"], "other"))
                want[key] = want.get(key, 0) + 1
    got = {(round(t, 1), s): n for t, s, n in page.charts["workers"]["bars"]}
    assert got == want and got
    # the band: one cell per tick, the verdict replay recomputes (the same the Markdown timeline shows)
    got_stages = [s for _, s in page.charts["stage"]["band"]]
    assert got_stages == [v.stage for v in from_frames(load_frames(str(SWITCH))).verdicts]
    assert {"gpu_bound", "decode", "h2d", "launch"} <= set(got_stages)


def test_data_wait_is_the_main_threads_waiting_share(switch_page):
    """Over the distinct stack samples of the ticks less than the window before each tick (the
    ticks the verdict reads, and the TUI's input line's count), each sample counted once."""
    page = parse(switch_page)
    ticks = raw_ticks(SWITCH)
    brought, seen = {}, set()  # tick index -> main-thread labels of the sample first seen in it
    for i, r in enumerate(ticks):
        st = r["frame"]["stacks"]
        if "threads" in st and st["t"] not in seen:
            seen.add(st["t"])
            brought[i] = [th["label"] for th in st["threads"] if th["role"] == "main"]
    want = []
    for i, r in enumerate(ticks):
        t = r["frame"]["t"]
        labels = [lab for j, labs in brought.items() if j <= i and t - ticks[j]["frame"]["t"] < WINDOW_S
                  for lab in labs]
        if labels:
            want.append(100.0 * sum(lab in ("data_wait", "data_ipc") for lab in labels) / len(labels))
    got = [v for _, v in values_of(page.charts["data_wait"], "data_wait")]
    assert got == pytest.approx(want, abs=0.1)
    assert max(got) > 90 and min(got) < 5  # the decode phase waits, the GPU-bound phase does not


def test_embedded_series_match_the_charts(switch_page):
    page = parse(switch_page)
    data = json.loads(page.json_text)
    assert len(data) == len(raw_ticks(SWITCH))
    busy = [(d["t_s"], d["gpu_busy"]) for d in data if d["gpu_busy"] is not None]
    assert [v for _, v in values_of(page.charts["gpu"], "gpu_busy")] == pytest.approx([v for _, v in busy], abs=0.1)


def test_stalls_are_marked_on_every_chart():
    """The H200 field job that saves a 1 GiB checkpoint every 3 s (tests/data/h200/README.md): the
    verdicts find the GPU idling periodically with the saves; each such tick is shaded on every chart."""
    got = from_frames(load_frames(str(CHECKPOINT)))
    report = build_report(got, Unsupported("test"), "replay", path=str(CHECKPOINT))
    series = run_series(got.frames, got.verdicts)
    stalled = [round(x.t_s, 3) for x, v in zip(series, got.verdicts) if v.stall is not None]
    assert len(stalled) >= 3, "the checkpoint job's stall was not found"
    page = parse(render_html(report, series))
    for name, chart in page.charts.items():
        assert [round(t, 3) for t in chart["stalls"]] == stalled, name
    assert report.figures is not None and report.figures.stall_share == pytest.approx(len(stalled) / len(series), abs=1e-3)
    assert report.figures.stall_period_s is not None


def test_a_cpu_only_recording_leaves_gpu_lines_empty_not_zero(tmp_path):
    out = tmp_path / "r.html"
    assert main(["diagnose", "--replay", str(CPU_ONLY), "--format", "html", "-o", str(out)]) == 0
    page = parse(out.read_text(encoding="utf-8"))
    assert page.charts["gpu"]["paths"]["gpu_busy"] == "" and page.charts["pcie"]["paths"]["pcie_rx"] == ""
    text = out.read_text(encoding="utf-8")
    gpu_svg = text[text.index('data-chart="gpu"'):text.index("</svg>", text.index('data-chart="gpu"'))]
    assert "not read in this run" in gpu_svg
    assert len(values_of(page.charts["worker_cpu"], "worker_cpu")) == len(raw_ticks(CPU_ONLY))


def test_strings_from_the_job_cannot_break_out(tmp_path):
    lines = SWITCH.read_text().splitlines()
    evil = '</script><script>alert(1)</script><img src=x onerror=alert(2)>"\''
    out_lines = []
    for line in lines[:12]:
        rec = json.loads(line)
        if rec.get("type") == "tick":
            rec["frame"]["target"]["cmdline"] = evil
        out_lines.append(json.dumps(rec))
    rec_path = tmp_path / "evil.jsonl"
    rec_path.write_text("\n".join(out_lines) + "\n")
    out = tmp_path / "r.html"
    assert main(["diagnose", "--replay", str(rec_path), "--format", "html", "-o", str(out)]) == 0
    page = parse(out.read_text(encoding="utf-8"))
    assert [t for t, _ in page.tags if t in ("img",)] == []
    assert [a for t, a in page.tags if t == "script"] == [{"type": "application/json", "id": "gpuwatch-series"}]
    assert json.loads(page.json_text)  # still valid JSON


def test_at_a_glance_means_match_the_charts(switch_page):
    page = parse(switch_page)
    keys = [a["data-key"] for tag, a in page.tags if tag == "tr" and "data-key" in a]
    assert keys[:3] == ["gpu_busy", "sm_active", "data_wait"] and "speedup_left" in keys
    busy = [v for _, v in values_of(page.charts["gpu"], "gpu_busy")]
    mean = sum(busy) / len(busy)
    row = re.search(r'<tr data-key="gpu_busy">.*?<td>([\d.]+) %</td><td>(\d+)</td></tr>', switch_page)
    assert row and float(row[1]) == pytest.approx(mean, abs=0.1) and int(row[2]) == len(busy)


class PreText(HTMLParser):
    """The text of each <pre> and the rows of the hottest-stacks table, as a browser shows them."""

    def __init__(self) -> None:
        super().__init__()
        self.pre: list[str] = []
        self.stack_rows: list[list[str]] = []
        self._in_pre = self._in_stacks = False
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "pre":
            self._in_pre = True
            self.pre.append("")
        elif tag == "table" and a.get("id") == "stacks":
            self._in_stacks = True
        elif self._in_stacks and tag == "tr" and "data-role" in a:
            self.stack_rows.append([a["data-role"]])
        elif self._in_stacks and tag == "td":
            self._cell = []
        elif self._cell is not None and tag == "br":
            self._cell.append("\n")

    def handle_endtag(self, tag):
        if tag == "pre":
            self._in_pre = False
        elif tag == "table":
            self._in_stacks = False
        elif tag == "td" and self._cell is not None:
            self.stack_rows[-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._in_pre:
            self.pre[-1] += data
        if self._cell is not None:
            self._cell.append(data)


def test_full_report_is_the_markdown_whole_and_hottest_stacks_are_shown(tmp_path):
    # trial finding 8: the <pre> held literal "\n" (each line escaped as a string from the job) and
    # was cut at 4 kB; the hottest stacks appeared nowhere in the HTML.
    rec = ROOT / "tests" / "data" / "cpu_demo.jsonl"
    out, md_out, js_out = tmp_path / "r.html", tmp_path / "r.md", tmp_path / "r.json"
    for fmt, path in (("html", out), ("md", md_out), ("json", js_out)):
        assert main(["diagnose", "--replay", str(rec), "--format", fmt, "-o", str(path)]) == 0
    page = PreText()
    page.feed(out.read_text(encoding="utf-8"))
    md = md_out.read_text(encoding="utf-8")
    assert len(md) > 4096 and "\\n" not in md
    assert page.pre == [md.rstrip("\n")]
    stacks = json.loads(js_out.read_text())["stacks"]
    assert stacks and len(page.stack_rows) == len(stacks)
    for row, h in zip(page.stack_rows, stacks):
        role, thread, share, samples, doing, frames = row
        assert role == h["role"] and thread and share == f"{h['share']:.0%}" and samples == str(h["count"])
        assert doing == LABEL_WORDS[h["label"]] + (f": {h['detail']}" if h["detail"] else "") and "_" not in doing.split(":")[0]  # words, not 'pin_busy'
        assert frames.split("\n") == [("← " if i else "") + f for i, f in enumerate(h["frames"])]


def test_at_a_glance_says_units_and_not_measured(tmp_path):
    # trial finding 21: "DataLoader workers 0.3" with no unit; "time with a periodic GPU stall 0% of
    # the ticks" on a run whose GPU was never read.
    out = tmp_path / "r.html"
    assert main(["diagnose", "--replay", str(CPU_ONLY), "--format", "html", "-o", str(out)]) == 0
    text = out.read_text(encoding="utf-8")
    cells = dict(re.findall(r'<tr data-key="(\w+)">(?:<td>[^<]*</td>){2}<td>([^<]*)</td>', text))
    assert re.fullmatch(r"\d+\.\d workers", cells["workers"]), cells["workers"]
    assert cells["gpu_busy"] == "not measured" and cells["stall_share"] == "not measured"
    for key, shown in cells.items():
        assert shown == "not measured" or re.search(r"[^\d.\s]", shown), (key, shown)  # a unit beside every number
