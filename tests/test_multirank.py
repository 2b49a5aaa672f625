"""Per-rank verdicts and the straggler in the headless stream, Prometheus and the TUI.

- pure: :class:`MultiRank` on the SYNTHETIC 2-rank frames of tests/test_ranks.py (tick record keys,
  single-process jobs, exporter gauges);
- live: a real 2-rank CPU DDP job (tests/jobs/ddp_cpu.py, rank 1's workers sleep 50 ms per item)
  watched headless with stacks: both ranks' verdicts in the stream, rank 1 input-bound and named
  the straggler;
- Pilot: the TUI replaying a real recording of that job (tests/data/ddp_cpu_slow_rank1.jsonl):
  the rank key switches the view and the header names the straggler.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis.thresholds import STEAL
from gpuwatch.headless import stream_json
from gpuwatch.model.verdict import DECODE, IO, STAGE_TITLES
from gpuwatch.multirank import MultiRank, straggler_line
from gpuwatch.recording import tick_record
from gpuwatch.source import ReplaySource
from tests.test_ranks import ddp_frame, ddp_job
from tests.test_tui_fixtures import (
    ListSource,
    make_app,
    screen_text,
    settle,
    synthetic_frames,
)

pytestmark = pytest.mark.timeout(180)
RECORDING = Path(__file__).parent / "data" / "ddp_cpu_slow_rank1.jsonl"
TICKS = 10
"""Ticks of the live headless watch: the straggler rule needs 10 main-thread samples per rank
(straggler.MIN_SAMPLES), ~3 ticks at 4 dumps/s; 10 leaves room on a busy 2-core machine."""
INPUT_STAGES = (IO, DECODE)


def _input_unmeasured(verdict: dict) -> bool:
    """The verdict for an input wait with neither computing workers nor a storage sign (rank 1's
    workers sleep in __getitem__: no reads, no D state, so no storage to blame)."""
    return verdict["stage"] == "unknown" and verdict["sentence"].startswith("Input-bound")


# -- pure (SYNTHETIC frames from tests/test_ranks.py) ------------------------------------------------

def test_tick_record_carries_every_rank_and_the_straggler():
    ranks, analysis = MultiRank(), Analysis()
    for i in range(12):
        frame = ddp_frame(i + 1, float(i + 1))
        verdict, tick = analysis.update(frame), ranks.update(frame)
    rec = json.loads(json.dumps(tick_record(frame, verdict, tick)))
    assert [r["rank"] for r in rec["ranks"]] == [0, 1]
    assert all(r["verdict"]["rank"] == r["rank"] for r in rec["ranks"])
    assert rec["straggler"]["rank"] == 1 and rec["straggler"]["cause"] == "input"
    assert set(rec["straggler"]) == {"rank", "cause", "rule", "sentence", "evidence"}
    assert rec["verdict"]["rank"] is None  # the whole-job verdict stays as it was
    line = straggler_line(tick)
    assert line.startswith("straggler: rank 1 (input-bound: waits for input 100 %") and "rank 0 waits in" in line


def test_single_process_ticks_have_no_rank_keys():
    ranks = MultiRank()
    frame = synthetic_frames(1)[0]
    assert ranks.update(frame) is None
    assert "ranks" not in tick_record(frame, None, None) and "straggler" not in tick_record(frame, None)


async def test_headless_stream_and_exporter_get_the_ranks():
    from gpuwatch.exporter import start_exporter

    frames = [ddp_frame(i + 1, float(i + 1)) for i in range(12)]
    out = io.StringIO()
    exporter = start_exporter("127.0.0.1", 0)
    try:
        await stream_json(ListSource(frames), out=out, on_tick=exporter)
        metrics = {m.name: m for m in exporter.registry.collect()}
    finally:
        exporter.close()
    last = json.loads(out.getvalue().splitlines()[-1])
    assert [r["rank"] for r in last["ranks"]] == [0, 1] and last["straggler"]["rank"] == 1
    assert [s.value for s in metrics["gpuwatch_straggler_rank"].samples] == [1.0]
    named = {s.labels["rank"]: s.labels["stage"] for s in metrics["gpuwatch_rank_verdict"].samples if s.value == 1}
    assert named == {str(r["rank"]): r["verdict"]["stage"] for r in last["ranks"]}


# -- live: a real 2-rank DDP job, rank 1 slow --------------------------------------------------------

@pytest.mark.slow
def test_live_stream_names_rank_1_input_bound_and_the_straggler(quiet_host):
    with ddp_job("torchrun") as job:
        argv = [sys.executable, "-m", "gpuwatch", "--pid", str(job.pid), "--json", "--stack-rate", "4"]
        gw = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines: list[str] = []
        try:
            for line in gw.stdout:
                lines.append(line)
                if len(lines) == TICKS:
                    break
        finally:
            gw.terminate()
            try:
                gw.wait(timeout=15)
            except subprocess.TimeoutExpired:
                gw.kill()
                gw.wait()
    assert len(lines) == TICKS, gw.stderr.read()[-2000:]
    ticks = [json.loads(line) for line in lines]
    if not any("unsupported" not in t["frame"]["stacks"] for t in ticks):
        pytest.skip(f"no stacks in the headless run: {ticks[-1]['frame']['stacks']}")
    last = ticks[-1]
    by_rank = {r["rank"]: r["verdict"] for r in last["ranks"]}
    assert sorted(by_rank) == [0, 1]
    # The host's steal over the last ticks (the verdict's window), as /proc/stat counted it
    stolen = [t["frame"]["host"].get("steal_pct") for t in ticks[-8:] if isinstance(t["frame"].get("host"), dict)]
    stolen = [x for x in stolen if isinstance(x, (int, float))]
    steal = sum(stolen) / len(stolen) / 100 if stolen else 0.0
    if steal >= STEAL and by_rank[1]["stage"] == "contention":
        pytest.skip(f"the hypervisor stole {steal:.0%} of the CPUs (a contention cause from {STEAL:.0%}): "
                    f"rank 1's ground truth is not only input ({by_rank[1]['sentence']})")
    # rank 1's workers sleep in __getitem__: input-bound, with no storage sign to blame (no reads, no
    # D state), so the verdict says the input is slow for a reason it does not measure
    assert by_rank[1]["stage"] in INPUT_STAGES or _input_unmeasured(by_rank[1]), by_rank[1]["sentence"]
    assert by_rank[0]["stage"] not in INPUT_STAGES, by_rank[0]["sentence"]
    assert last["straggler"] is not None and last["straggler"]["rank"] == 1, last["straggler"]
    assert last["straggler"]["cause"] == "input"


# -- Pilot: the TUI on a real recording of that job ---------------------------------------------------

async def test_rank_key_switches_the_view_and_the_header_names_the_straggler():
    app = make_app(ReplaySource(str(RECORDING), speed=0), analysis=Analysis())
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(pilot, app)
        assert app.rank_tick is not None and app.rank_tick.ranks == (0, 1)
        whole = app.view.frame.target.pid  # torchrun, the watched PID
        text = screen_text(app)
        assert "All 2 ranks" in text and "straggler: rank 1 (input-bound: waits for input" in text
        assert "Rank" in text  # the footer offers the key
        await pilot.press("k")
        await pilot.pause()
        assert app.selected_rank == 0 and "Rank 0 of 2" in screen_text(app)
        await pilot.press("k")
        await pilot.pause()
        text = screen_text(app)
        rank1 = app.ranks.by_rank[1]
        assert app.selected_rank == 1 and "Rank 1 of 2" in text
        shown = app.view.verdict
        assert shown is rank1.latest
        assert shown.stage in INPUT_STAGES or _input_unmeasured({"stage": shown.stage, "sentence": shown.sentence})
        assert f"[1 {STAGE_TITLES[rank1.latest.stage]}]" in text  # the ranks line marks the rank on show
        assert app.view.frame.target.pid == rank1.frames[-1].target.pid != whole
        assert {p.rank for p in app.view.frame.procs.processes} == {1}  # the processes table: rank 1 only
        await pilot.press("2", "enter")  # drill-downs show the same rank
        await pilot.pause()
        assert "Rank 1 of 2" in screen_text(app)
        await pilot.press("escape", "k")
        await pilot.pause()
        assert app.selected_rank is None and app.view.frame.target.pid == whole


async def test_single_process_job_has_no_rank_key():
    app = make_app(ListSource(synthetic_frames(3)))
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot, app)
        assert app.rank_tick is None and "Rank" not in screen_text(app)
        await pilot.press("k")
        assert app.selected_rank is None


async def test_rank_key_redraws_the_threads_panel_from_the_ranks_own_stack_samples():
    # A rank's frames carry the job's stack sample cut down to its threads, with the job's sample
    # time: the threads panel, which knows a sample by its time, kept the whole job's counts (rank 0
    # "waiting for a batch" for rank 1's waits) until the samples left its window.
    from gpuwatch.model.stacks import LABEL_WORDS, activity
    from gpuwatch.tui.hot import stack_samples
    from gpuwatch.tui.panels.activity import ActivityPanel
    from gpuwatch.tui.roles import ROLES

    app = make_app(ReplaySource(str(RECORDING), speed=0), analysis=Analysis())
    async with app.run_test(size=(140, 42)) as pilot:
        await settle(pilot, app)
        panel = app.screen.query_one(ActivityPanel)
        def labels() -> set[str]:
            return {activity(t.role, t.label, t.detail) for s in stack_samples(app.view.frames) for t in s.threads}

        whole = labels()
        for rank in (0, 1):
            await pilot.press("k")
            await pilot.pause()
            assert app.selected_rank == rank
            mine = labels()
            text = str(panel.render())
            others = whole - mine
            assert others, rank  # the ranks' threads do differ from the job's
            shown = [LABEL_WORDS.get(label, label) for label in others if LABEL_WORDS.get(label, label) in text]
            assert not shown, (rank, shown, text)
            assert any(text.startswith(title) for _, title in ROLES), text
