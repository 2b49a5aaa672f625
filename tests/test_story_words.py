"""Every user-facing string the report and the TUI produce for the demo and H200 recordings, scanned.

No section marks or internal keys (a signal's or check's id, a stack label, a stage id), no "1
samples" plurals or "(s)", no empty reasons, no share over 100 %, no raw float dumps, no rate in
binary units. The report is
built from each recording (Markdown and the JSON's text fields); the TUI's words are the verdict
line, evidence lines and remedies of every tick, and the committed screen snapshots of the same
recordings (tests/snapshots, drawn by tests/test_tui_snapshots.py).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

import pytest

from gpuwatch.model import stacks as lb
from gpuwatch.model.values import Unsupported
from gpuwatch.model.verdict import STAGES, Verdict
from gpuwatch.replay import load_frames
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_json import render_json
from gpuwatch.report.render_md import render_markdown
from gpuwatch.tui.panels.evidence import evidence_line
from gpuwatch.tui.panels.pipeline import verdict_text

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data"
RECORDINGS = {
    "cpu_demo": DATA / "cpu_demo.jsonl",
    "h200_healthy": DATA / "h200" / "healthy.jsonl",
    "cpu_train_w2": DATA / "report" / "cpu_train_w2.jsonl",
    "h200_switch": ROOT / "bench" / "results" / "2026-12-02-h200" / "acc" / "switch.jsonl",
}
"""The demo, the H200 and CPU recordings of tests/data, and the H200 job that switches through every
stage (bench/results, 2026-12-02: decode, launch, pageable copies, GPU-bound in turn)."""
SNAPSHOTS = ROOT / "tests" / "snapshots" / "test_tui_snapshots"

API_WORDS = {"pin_memory", "num_workers", "persistent_workers", "prefetch_factor", "non_blocking", "channels_last"}
"""PyTorch's own names, which remedies rightly quote."""
ID_FIELDS = {"stage", "signal", "id", "check", "role", "label", "op", "status", "kind", "unit", "frames", "detail",
             "cmdline", "path", "source", "mountpoint", "fstype", "name", "what", "hostname", "kernel", "type",
             "stage_shares"}
"""JSON fields that hold identifiers or the job's own strings, not gpuwatch's sentences."""

PLURAL_ONE = re.compile(r"(?<![\d.,])\b1 (?!GiB|MiB|GB|MB|kB)([A-Za-z]+[^s\W]s)\b")
MAYBE_PLURAL = re.compile(r"[a-z]\(s\)")
EMPTY = re.compile(r":\s*\.(?![.\w])|(?<!\w)\(\s*\)|,\s*\.(?![.\w])|:\s*;|up to not estimated|not estimated while|: $")
"""Nothing between a colon or comma and the full stop, empty brackets (a call such as .item() is
code, not an empty reason), an estimate that is not a number."""
OVER_100 = re.compile(r"(?<![\d.])(\d{3,}(?:\.\d+)?) ?%")
RAW_FLOAT = re.compile(r"(?<![\w.])\d+\.\d{4,}\b|\d[eE][-+]\d+\b")
BINARY_RATE = re.compile(r"\b[KMGT]iB/s\b")
"""Rates are said in decimal units everywhere (the TUI, the evidence, the report: "59.3 GB/s"), so one
sentence never quotes a copy in GB/s beside a reference in GiB/s. Sizes stay binary ("45.1 GiB")."""


def _internal_keys(verdicts: list[Verdict], report: dict) -> set[str]:
    keys = {e.signal for vd in verdicts for e in vd.evidence}
    keys |= {c["id"] for c in report["checks"]}
    keys |= set(lb.MAIN_LABELS + lb.WORKER_LABELS + lb.PIN_LABELS) | set(STAGES)
    return {k for k in keys if "_" in k} - API_WORDS


def _problems(text: str, keys: set[str]) -> list[str]:
    out = []
    if "§" in text or re.search(r"\bTF\b", text):
        out.append("section mark")
    out += [f"internal key {k!r}" for k in keys if re.search(rf"(?<![\w.`/]){re.escape(k)}(?![\w(])", text)]
    out += [f"plural {m.group(0)!r}" for m in PLURAL_ONE.finditer(text)]
    out += [f"'(s)' in {m.group(0)!r}" for m in MAYBE_PLURAL.finditer(text)]
    out += [f"empty reason {m.group(0)!r}" for m in EMPTY.finditer(text)]
    out += [f"share over 100: {m.group(0)!r}" for m in OVER_100.finditer(text) if float(m.group(1)) > 100]
    out += [f"raw float {m.group(0)!r}" for m in RAW_FLOAT.finditer(text)]
    out += [f"binary rate unit {m.group(0)!r}" for m in BINARY_RATE.finditer(text)]
    return out


def _json_texts(obj: object, key: str = "") -> list[str]:
    if isinstance(obj, dict):
        if "unsupported" in obj:
            return [str(obj["unsupported"])]
        return [t for k, x in obj.items() if k not in ID_FIELDS for t in _json_texts(x, k)]
    if isinstance(obj, list):
        return [t for x in obj for t in _json_texts(x, key)]
    return [obj] if isinstance(obj, str) else []


def _svg_lines(path: Path) -> list[str]:
    rows: dict[float, list[tuple[float, str]]] = {}
    for m in re.finditer(r'<text class="[^"]*" x="([\d.]+)" y="([\d.]+)"[^>]*>(.*?)</text>', path.read_text()):
        rows.setdefault(float(m[2]), []).append((float(m[1]), html.unescape(m[3])))
    return ["".join(t for _, t in sorted(r)).replace("\xa0", " ") for _, r in sorted(rows.items())]


@pytest.fixture(scope="module", params=sorted(RECORDINGS))
def built(request):
    frames = load_frames(str(RECORDINGS[request.param]), lambda bad: None)
    got = from_frames(frames)
    report = build_report(got, Unsupported("a recording holds frames only"), "replay", path=request.param)
    return request.param, got.verdicts, report


def test_the_report_says_it_in_plain_words(built):
    name, verdicts, report = built
    data = json.loads(render_json(report))
    keys = _internal_keys(verdicts, data)
    md = render_markdown(report)
    md_words = [line for line in md.splitlines() if not line.startswith("- **") or "`" not in line]  # stack frames are code
    found = {p for line in md_words for p in _problems(re.sub(r"`[^`]*`", "code", line), keys)}
    found |= {p for t in _json_texts(data) for p in _problems(t, keys)}
    assert not found, f"{name}: {sorted(found)}"


def test_the_tuis_verdict_evidence_and_remedies_say_it_in_plain_words(built):
    name, verdicts, report = built
    keys = _internal_keys(verdicts, json.loads(render_json(report)))
    found = set()
    for vd in verdicts:
        texts = [verdict_text(vd), *vd.remedies, *(evidence_line(e) for e in vd.evidence)]
        found |= {p for t in texts for p in _problems(t, keys)}
    assert not found, f"{name}: {sorted(found)}"


def test_the_tui_snapshots_of_the_recordings_say_it_in_plain_words():
    keys = {e for e in (set(lb.MAIN_LABELS + lb.WORKER_LABELS + lb.PIN_LABELS) | set(STAGES)) if "_" in e}
    keys |= {"gpu_tenants", "cgroup_throttled", "worker_d", "worker_cpu", "run_delay", "psi_cpu", "host_cpu",
             "no_wait", "data_wait", "inline_load", "workers_vs_cores", "gpu_active", "main_cpu"}
    keys -= API_WORDS
    snaps = sorted(SNAPSHOTS.glob("*.svg"))
    assert snaps
    found = set()
    for path in snaps:
        for line in _svg_lines(path):
            if re.search(r"\([\w/.<>-]+\.py:\d+\)", line):
                continue  # a stack table row: the job's own code
            found |= {f"{path.name}: {p}" for p in _problems(line, keys)}
    assert not found, sorted(found)


GPU_BUSY_NUMBER = re.compile(r"\bGPU is busy\b[ (]*\d|\bGPU busy ━")
""""busy" beside a number names two metrics: the sentence's kernel-active time (GPM GR engine, a median
over the evidence window) and the charts' NVML utilization at the latest tick (copies count too). The
sentence says "has work", the charts "GPU util" (the GPU panel's word), so 99 % and 69 % side by side
do not read as one number contradicted."""


def test_the_verdict_and_the_charts_name_their_gpu_numbers_apart(built):
    name, verdicts, report = built
    said = {verdict_text(vd) for vd in verdicts} | {t for t in _json_texts(json.loads(render_json(report)))}
    assert {t for t in said if GPU_BUSY_NUMBER.search(t)} == set(), name
    if name.startswith("h200"):  # the sentence still says its number
        assert any(re.search(r"GPU has work (only )?\d", t) for t in said), name


def test_the_snapshot_charts_label_nvml_utilization_apart_from_the_verdict():
    lines = [(p.name, line) for p in sorted(SNAPSHOTS.glob("*.svg")) for line in _svg_lines(p)]
    assert [n for n, line in lines if GPU_BUSY_NUMBER.search(line)] == []
    assert any("GPU util ━" in line for _, line in lines)
