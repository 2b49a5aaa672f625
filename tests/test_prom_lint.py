"""A lint over real scrapes: the exporter replays real recordings (an H200 job with GPM and PCIe;
a two-rank DDP job with a slow rank), is scraped over HTTP, parsed with prometheus_client's own
parser, and every family is checked against the Prometheus naming rules
(prometheus.io/docs/practices/naming) and the checks of promtool's ``check metrics``
(client_golang's promlint: counter/``_total``, base units, no abbreviated units, no type in the
name, no reserved histogram suffixes, snake_case, help text)."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families

from gpuwatch.analysis import Analysis
from gpuwatch.exporter import start_exporter
from gpuwatch.multirank import MultiRank
from gpuwatch.pipeline import Tick
from gpuwatch.prom_families import COUNTER, FAMILIES, GAUGE
from gpuwatch.replay import load_frames

pytestmark = pytest.mark.timeout(120)
ROOT = Path(__file__).resolve().parents[1]
RECORDINGS = {
    "h200_healthy": ROOT / "bench" / "results" / "2026-12-02-h200" / "acc" / "healthy.jsonl",
    "h200_io": ROOT / "bench" / "results" / "2026-12-02-h200" / "acc" / "io.jsonl",
    "ddp_slow_rank": ROOT / "tests" / "data" / "ddp_cpu_slow_rank1.jsonl",
}

NAME = re.compile(r"^gpuwatch_[a-z][a-z0-9]*(_[a-z0-9]+)*$")
LABEL = re.compile(r"^[a-z][a-z0-9_]*$")
UNITS = ("_seconds", "_bytes", "_ratio", "_celsius", "_watts", "_hertz", "_bytes_per_second", "_info", "_factor")
"""Base units (and the unitless suffixes the conventions name: _ratio, _info; _factor for x times)."""
NOT_BASE = ("milli", "micro", "nano", "kilo", "mega", "giga", "kibi", "mebi", "mibi", "gibi", "minutes", "hours",
            "days", "bits", "percent", "pct", "fahrenheit")
ABBREVIATED = ("s", "ms", "us", "ns", "sec", "b", "kb", "mb", "gb", "tb", "m", "h", "d", "mhz", "mib", "bps")
TYPE_WORDS = ("gauge", "counter", "histogram", "summary", "untyped")
RESERVED = ("_bucket", "_count", "_sum", "_created")
STATE_SETS = {"gpuwatch_verdict": ("stage",), "gpuwatch_rank_verdict": ("stage",),
              "gpuwatch_stage_level": ("level",)}
"""Families where, per group of the other labels, exactly one series is 1 (the current state)."""
UNITLESS_GAUGES = {
    # 0/1 flags
    "gpuwatch_target_up", "gpuwatch_collector_up", "gpuwatch_gpu_used_by_target", "gpuwatch_gpu_lost",
    "gpuwatch_gpu_clock_event_reason", "gpuwatch_straggler", "gpuwatch_rank_gpu", "gpuwatch_verdict_speedup_floor",
    # counts of things (the naming rules' units do not apply to countable things)
    "gpuwatch_processes", "gpuwatch_rank_stack_samples", "gpuwatch_pcie_link_generation",
    "gpuwatch_pcie_link_generation_max", "gpuwatch_pcie_link_width", "gpuwatch_pcie_link_width_max",
    "gpuwatch_host_load1", "gpuwatch_cgroup_cpu_quota_cores", "gpuwatch_straggler_rank",
} | set(STATE_SETS)
FLAGS = {"gpuwatch_target_up", "gpuwatch_collector_up", "gpuwatch_gpu_used_by_target", "gpuwatch_gpu_lost",
         "gpuwatch_gpu_clock_event_reason", "gpuwatch_straggler", "gpuwatch_rank_gpu",
         "gpuwatch_verdict_speedup_floor"} | set(STATE_SETS)


def scrape_text(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
        return r.read().decode()


def replay_scrapes(path: Path) -> list[str]:
    """Feed the recording as the tick pipeline does (gpuwatch/pipeline.py), scrape halfway and at the end."""
    frames = load_frames(str(path))
    analysis, ranks = Analysis(), MultiRank()
    e = start_exporter("127.0.0.1", 0)
    try:
        texts = []
        for i, f in enumerate(frames, start=1):
            e(Tick(f, analysis.update(f), ranks.update(f)))
            if i in (len(frames) // 2, len(frames)):
                texts.append(scrape_text(e.port))
        return texts
    finally:
        e.close()


@pytest.fixture(scope="module", params=sorted(RECORDINGS))
def scrapes(request):
    return request.param, replay_scrapes(RECORDINGS[request.param])


def families(text: str):
    return list(text_string_to_metric_families(text))


def full_name(fam) -> str:
    return fam.name + "_total" if fam.type == "counter" else fam.name  # the parser drops a counter's _total


def test_every_family_follows_the_naming_rules(scrapes):
    _, texts = scrapes
    problems = []
    for fam in families(texts[0]) + families(texts[-1]):
        name = full_name(fam)
        say = lambda msg, name=name: problems.append(f"{name}: {msg}")  # noqa: E731
        if name not in FAMILIES:
            say("not declared in gpuwatch/prom_families.py")
            continue
        kind, doc, labels = FAMILIES[name]
        if not NAME.match(name):
            say("not snake_case with the gpuwatch_ prefix")
        if not fam.documentation.strip() or fam.documentation != doc:
            say("help text missing or not the declared one")
        if fam.type not in (GAUGE, COUNTER) or fam.type != kind:
            say(f"type {fam.type}, declared {kind}")
        if (fam.type == COUNTER) != name.endswith("_total"):
            say("counters, and only counters, end in _total")
        words = name.split("_")[1:]
        if any(w.startswith(p) for w in words for p in NOT_BASE):
            say("not a base unit (seconds, bytes, ratio 0-1, ...)")
        if any(w in ABBREVIATED for w in words):
            say("abbreviated unit")
        if any(w in TYPE_WORDS for w in words):
            say("metric type in the name")
        if name.endswith(RESERVED) or name.removesuffix("_total").endswith(RESERVED):
            say("reserved histogram/summary suffix")
        if name.endswith("_timestamp_seconds") and fam.type != GAUGE:
            say("_timestamp_seconds on a non-gauge")
        base = name.removesuffix("_total")
        if fam.type == GAUGE and not base.endswith(UNITS) and name not in UNITLESS_GAUGES:
            say("a gauge without a unit suffix")
        for s in fam.samples:
            if s.name.endswith("_created"):
                continue
            if set(s.labels) != set(labels) or not all(LABEL.match(k) for k in s.labels):
                problems.append(f"{name}: labels {sorted(s.labels)}, declared {sorted(labels)}")
            if s.value != s.value or s.value < 0:
                problems.append(f"{name}{s.labels}: value {s.value}")
            if name.endswith("_ratio") and not 0.0 <= s.value <= 1.0:
                problems.append(f"{name}{s.labels}: a ratio of {s.value}, outside 0-1")
            if (name in FLAGS or name.endswith("_info")) and s.value not in (0.0, 1.0):
                problems.append(f"{name}{s.labels}: {s.value} where only 0 or 1 may be (no bitmasks)")
    assert problems == []


def test_state_sets_have_one_current_state(scrapes):
    _, texts = scrapes
    seen = 0
    for fam in families(texts[-1]):
        if fam.name not in STATE_SETS:
            continue
        state_labels = STATE_SETS[fam.name]
        groups: dict[tuple, list[float]] = {}
        for s in fam.samples:
            key = tuple(sorted((k, v) for k, v in s.labels.items() if k not in state_labels))
            groups.setdefault(key, []).append(s.value)
        for key, values in groups.items():
            assert sorted(values)[-1] == 1.0 and sum(values) == 1.0, (fam.name, key, values)
        seen += 1
    assert seen >= 2  # gpuwatch_verdict and gpuwatch_stage_level at least


def test_counters_only_go_up(scrapes):
    _, texts = scrapes
    first, last = ({(s.name, tuple(sorted(s.labels.items()))): s.value for fam in families(t) if fam.type == COUNTER
                    for s in fam.samples if not s.name.endswith("_created")} for t in texts)
    assert first
    for key, v in first.items():
        if key in last:
            assert last[key] >= v, key


def test_the_real_recordings_fill_the_families_they_hold(scrapes):
    """The lint must see the families it checks: GPU, GPM and PCIe on the H200; ranks on the DDP job."""
    which, texts = scrapes
    exposed = {full_name(f) for f in families(texts[0])}  # halfway: the job still runs
    if which.startswith("h200"):
        assert {"gpuwatch_gpu_utilization_ratio", "gpuwatch_gpm_sm_active_ratio", "gpuwatch_pcie_rx_bytes_total",
                "gpuwatch_cpu_seconds_total", "gpuwatch_host_pressure_ratio", "gpuwatch_disk_read_bytes_total",
                "gpuwatch_gpu_clock_event_reason", "gpuwatch_stage_level"} <= exposed
    else:
        assert {"gpuwatch_rank_verdict", "gpuwatch_rank_input_wait_ratio", "gpuwatch_straggler",
                "gpuwatch_thread_cpu_seconds_total"} <= exposed


def test_after_the_job_exits_its_process_series_are_gone():
    """The H200 recording ends with the job's exit (its last frame says alive: false)."""
    texts = replay_scrapes(RECORDINGS["h200_io"])
    live, ended = ({full_name(f) for f in families(t)} for t in texts)
    per_process = {"gpuwatch_processes", "gpuwatch_cpu_seconds_total", "gpuwatch_resident_memory_bytes",
                   "gpuwatch_read_bytes_total", "gpuwatch_target_read_bytes_total"}
    assert per_process <= live
    assert per_process & ended == set()
    assert "gpuwatch_target_up 0.0" in texts[-1] and "gpuwatch_gpu_utilization_ratio" in ended
