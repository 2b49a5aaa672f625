"""The tick pipeline (gpuwatch/pipeline.py): every front end gets the same Tick for a frame."""

from __future__ import annotations

import asyncio

from gpuwatch.analysis import Analysis
from gpuwatch.pipeline import Follows, Pipeline
from tests.test_ranks import ddp_frame
from tests.test_tui_fixtures import ListSource, QueueSource, synthetic_frames


async def test_every_sink_gets_each_tick_in_order_with_the_analysis_verdict():
    frames = synthetic_frames(12)
    first, second = [], []
    reference = Analysis()
    last = await Pipeline(ListSource(frames), sinks=(first.append, None, second.append)).run()
    assert [t.frame.seq for t in first] == [f.seq for f in frames]
    assert first == second  # the same Tick objects, in the same order
    assert [t.verdict for t in first] == [reference.update(f) for f in frames]
    assert last is first[-1]
    assert all(t.ranks is None and t.straggler is None for t in first)  # a single process has no ranks


async def test_a_multi_rank_job_gets_ranks_and_the_straggler():
    frames = [ddp_frame(i + 1, float(i + 1)) for i in range(12)]
    seen = []
    await Pipeline(ListSource(frames), sinks=(seen.append,)).run()
    assert seen[-1].ranks is not None and seen[-1].ranks.ranks == (0, 1)
    assert seen[-1].straggler is not None and seen[-1].straggler.rank == 1


class Following(ListSource):
    def __init__(self, frames) -> None:
        super().__init__(frames)
        self.calls: list[tuple[int, int]] = []

    def follow(self, verdicts, frames) -> None:
        self.calls.append((len(verdicts), frames[-1].seq))


async def test_a_live_source_follows_the_verdicts_before_the_sinks_see_the_tick():
    source = Following(synthetic_frames(5))
    assert isinstance(source, Follows) and not isinstance(ListSource([]), Follows)
    order = []
    await Pipeline(source, sinks=(lambda t: order.append(len(source.calls)),)).run()
    assert source.calls == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 5)]
    assert order == [1, 2, 3, 4, 5]


async def test_stop_ends_a_source_that_waits_for_its_next_frame():
    source = QueueSource()
    frames = synthetic_frames(2)
    for f in frames:
        source.put(f)
    stop = asyncio.Event()
    seen = []

    def sink(tick) -> None:
        seen.append(tick.frame.seq)
        if len(seen) == 2:
            stop.set()  # the queue is empty now: without stop the next step would wait for ever

    await asyncio.wait_for(Pipeline(source, sinks=(sink,)).run(stop), timeout=30)
    assert seen == [1, 2]
