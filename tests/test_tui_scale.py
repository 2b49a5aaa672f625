"""A job on 8 GPUs with 8 ranks and 64 workers: the GPU panels fold into a one-line-per-GPU list,
the ranks line groups ranks by verdict, a table lists them where there is room.

The Pilot tests replay tests/data/scale_8gpu_8ranks.jsonl.gz, a real recording made by
``python -m bench.scale``: 8 CPU gloo ranks with 8 DataLoader workers each (tests/jobs/ddp_cpu.py)
watched live on the 2-core CPU VM, GPU and PCIe from the fake NVML of 8 GPUs replaying the real
H200 capture (tests/fake_nvml.py), one rank per GPU. Snapshots of it at 80x24 and 200x60 are in
tests/test_tui_snapshots.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.model.verdict import DECODE, GPU_BOUND
from gpuwatch.model.frame import TargetInfo
from gpuwatch.multirank import RankTick
from gpuwatch.replay import load_frames
from gpuwatch.source import ReplaySource
from gpuwatch.tui.panels.gpu import GpuArea
from gpuwatch.tui.panels.gpu_list import GpuList, layout
from gpuwatch.tui.panels.rank_table import RankTable
from gpuwatch.tui.panels.ranks import ranks_text, spans
from tests.test_tui_fixtures import ListSource, make_app, screen_text, settle, synthetic_frame, synthetic_verdict

SCALE = Path(__file__).resolve().parent / "data" / "scale_8gpu_8ranks.jsonl.gz"
needs_recording = pytest.mark.skipif(not SCALE.exists(), reason=f"no recording at {SCALE}")


def test_the_list_drops_the_least_telling_columns_first_as_it_narrows():
    wide, bar_w = layout(120)
    assert wide == ["gpu", "bar", "util", "sm", "mem", "rx", "tx", "power", "temp", "job"] and bar_w >= 6
    assert layout(38)[0] == ["gpu", "bar", "util", "sm", "mem"]  # two GPUs a line at 80 columns
    assert layout(60)[0] == ["gpu", "bar", "util", "sm", "mem", "rx", "job"]
    assert layout(4)[0] == []


def test_rank_spans_and_the_grouped_ranks_line():
    assert spans([0, 1, 2, 4, 5, 6, 7]) == "0-2,4-7" and spans([3]) == "3" and spans([1, 3, 5]) == "1,3,5"
    v = synthetic_verdict(synthetic_frame(0))
    verdicts = tuple((r, dataclasses.replace(v, stage=DECODE if r == 3 else GPU_BOUND)) for r in range(8))
    tick = RankTick(verdicts=verdicts, signals=(), straggler=None)
    assert ranks_text(tick, None) == "Ranks (8): [all] · GPU-bound 0-2,4-7 · CPU prep 3"
    assert ranks_text(tick, 3) == "Ranks (8): all · GPU-bound 0-2,4-7 · CPU prep 3 · [3 CPU prep]"
    two = RankTick(verdicts=verdicts[:2], signals=(), straggler=None)
    assert ranks_text(two, 1) == "Ranks: all · 0 GPU-bound · [1 GPU-bound]"  # few ranks: one each


def scale_app():
    return make_app(ReplaySource(str(SCALE), speed=0), analysis=Analysis())


@needs_recording
@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_every_gpu_and_rank_is_on_screen(size):
    app = scale_app()
    async with app.run_test(size=size) as pilot:
        await settle(pilot, app)
        text = screen_text(app)
        gpu_list = app.screen.query_one(GpuList)
        assert gpu_list.region.height == (1 + 4 if size[0] < 120 else 1 + 8)  # two a line when narrow
        for i in range(8):
            assert f"GPU {i} " in text
        # ... and in view, with the verdict as long as a verdict gets (its height only grows over
        # a run; this recording's Contention sentence took six lines at 80x24 live and pushed GPUs
        # 6 and 7 behind a scrollbar): the verdict is cut to make room, the list stays whole
        app.screen.pipeline.verdict_line.update(" ".join(["Contention slows the job 33 %"] * 40))
        await pilot.pause()
        await pilot.pause()
        gpu_area = app.screen.query_one(GpuArea)
        assert gpu_area.max_scroll_y == 0 and gpu_area.region.height >= gpu_list.region.height
        assert "Ranks (8):" in text
        table = app.screen.query_one(RankTable)
        if size == (200, 60):  # wide and tall: the ranks as a table beside the processes
            rows = str(table.content).splitlines()
            assert len(rows) == 1 + 8 and table.region.height >= len(rows)
            assert [row.split()[0] for row in rows[1:]] == [str(r) for r in range(8)]
        else:
            assert table.region.height == 0  # no room for the table: the grouped line says it


@needs_recording
async def test_given_one_ranks_pid_the_tui_says_the_whole_job_is_watched():
    """The recording watched the launcher; its frames given as if rank 3's PID had been typed (the
    walk then takes the launcher in, collectors/target.py): a notice says why every rank shows."""
    frames = load_frames(str(SCALE))
    rank3 = next(p for p in frames[-1].procs.processes if p.role == "main" and p.rank == 3)
    moved = [dataclasses.replace(f, target=TargetInfo(rank3.pid, "rank 3", True)) for f in frames]
    app = make_app(ListSource(moved), analysis=Analysis())
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot, app)
        said = [n.message for n in app._notifications if "is rank 3 of 8 ranks" in n.message]
        assert said == [f"PID {rank3.pid} is rank 3 of 8 ranks: the whole job is watched, from its launcher "
                        f"(PID {rank3.ppid}); k shows one rank."]
