"""Replays of `gpuwatch demo`'s CPU job, recorded on the 2-core VM (tests/data/demo/README.md): what
its verdicts say of its epoch structure and of its end."""

from __future__ import annotations

from pathlib import Path

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis.timeline import timeline
from gpuwatch.model.verdict import EPOCH_START, RESPAWN
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED, gather
from gpuwatch.report.build import build_report
from gpuwatch.report.render_md import render_markdown
from tests.test_tui_fixtures import ListSource

DATA = Path(__file__).parent / "data" / "demo"


def _replay(name: str):
    frames = load_frames(str(DATA / name))
    analysis = Analysis()
    return frames, [analysis.update(f) for f in frames]


def test_a_decode_bound_worker_is_no_first_batch_wait():
    """The demo's second decode phase: a new DataLoader worker decodes for 20 s while the main
    thread waits for it in most ticks. Its first-batch wait ends in the first tick after the worker
    showed in which the main thread trains (a stack sample out of the data wait); the waits after
    that are the input's steady pace. It read "each new set of workers makes the main thread wait
    ~17.0 s for its first batches (28 % of the time)"."""
    frames, verdicts = _replay("demo_cpu_decode_again.jsonl.gz")
    ticks = timeline(frames, None)
    new = next(i for i, t in enumerate(ticks) if t.workers and not t.workers & ticks[0].workers)
    life = [t for t in ticks[new:] if t.workers & ticks[new].workers]
    served = next(i for i in range(new + 1, len(ticks)) if ticks[i].stacks and (ticks[i].wait or 0.0) < 1.0)
    first_batch_s = sum(t.dt for t in ticks[new:served + 1])
    # The premise: the main thread waits in most of the worker's ticks, as a decode-bound job does.
    assert sum((t.wait or 0.0) >= 0.5 for t in life) > 0.75 * len(life)
    by_t = {f.t: v for f, v in zip(frames, verdicts)}
    # The verdicts that see the new worker replace the old one (the old one stays in the minute).
    seen = [v for v in (by_t[t.t] for t in life) if any(p.kind == RESPAWN for p in v.phases)]
    assert len(seen) >= len(life) - 2
    for v in seen:
        for p in v.phases:
            if p.kind == EPOCH_START:
                assert p.each_s is not None and p.each_s <= first_batch_s, v.sentence
                assert p.share * p.span_s <= first_batch_s + 1e-6, v.sentence
    # Once the main thread has gone on waiting through the worker's later ticks, none is named.
    assert not any(p.kind == EPOCH_START for v in seen[len(seen) // 2:] for p in v.phases)
    assert not any("first batches" in v.sentence for v in seen[len(seen) // 2:])


async def test_the_job_s_exit_is_said_with_one_exited():
    """The demo job's last ticks: it exits on its --duration. The report and the verdict say that
    the job exited once ("the job exited (process N exited)" before)."""
    frames = load_frames(str(DATA / "demo_cpu_exit.jsonl.gz"))
    pid = frames[-1].target.pid
    assert not frames[-1].target.alive and frames[-1].target.exit_reason == f"process {pid} exited"
    got = await gather.watch_live(ListSource(frames))
    assert got.early and got.ended == f"the job exited (process {pid})"
    md = render_markdown(build_report(got, NOT_RECORDED, "live", pid=pid, requested_s=60))
    assert f"; the job exited (process {pid})." in md
    assert f"**Watching ended early** (the job exited (process {pid}))" in md
    assert md.count("exited") == md.count("the job exited (process"), md
    assert got.verdicts[-1].sentence == f"Not training: the job exited (process {pid})."


def test_other_exit_reasons_keep_their_words():
    from gpuwatch.model.values import job_exited

    assert job_exited(None) == job_exited("the job exited") == "the job exited"
    assert job_exited("process 7 exited (its PID now belongs to another process)") == \
        "the job exited (process 7; its PID now belongs to another process)"
    # psutil's own words in older recordings read as ours (review 46: "(process no longer exists (pid=1733))")
    assert job_exited("process no longer exists (pid=1)") == "the job exited (process 1)"
    assert job_exited("some other reason") == "the job exited (some other reason)"


def test_a_replayed_report_of_a_job_that_exited_says_so():
    """A replay ended with the file and with the job: its report said only "end of the recording"
    for a job whose worker had crashed (a trial), where a live watch says the job exited."""
    from gpuwatch.report import NOT_RECORDED, build_report, from_frames, render_markdown

    frames = load_frames(str(DATA / "demo_cpu_exit.jsonl.gz"))
    pid = frames[-1].target.pid
    got = from_frames(frames)
    assert got.ended == f"end of the recording; the job exited (process {pid})"
    md = render_markdown(build_report(got, NOT_RECORDED, "replay", path="x.jsonl"))
    assert f"end of the recording; the job exited (process {pid})." in md
