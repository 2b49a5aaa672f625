"""The verdict says only what its evidence shows (trial report 2026-12-03, items 1, 4, 5, 6).

Frames come from real recordings (tests/data/cpu_demo.jsonl: the CPU demo on this project's 2-core
VM; tests/data/ddp_cpu_slow_rank1.jsonl: two CPU DDP ranks whose workers sleep), altered only where
a test says so (a job frozen by SIGSTOP: its main process in state T at 0 % CPU, the stack
collector's last sample left in place, as the live collector leaves it).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from gpuwatch.model import verdict as v
from gpuwatch.model.frame import Frame
from gpuwatch.replay import load_frames
from tests.test_diagnosis_frames import run

DATA = Path(__file__).parent / "data"
DECODING = 32
"""cpu_demo.jsonl frames up to here end in its decode phase (tests/test_diagnosis_recording.py)."""


def _frozen(f: Frame, k: int, state: str = "T") -> Frame:
    """Frame ``f`` moved ``k`` ticks later with the job frozen: the main process in ``state`` at 0 %,
    workers asleep, and the stack sample of ``f`` (now k ticks old) still in place."""
    procs = f.procs
    ps = tuple(replace(p, state=state if p.role == "main" else "S", cpu_pct=0.0,
                       threads=tuple(replace(t, cpu_pct=0.0) for t in p.threads)) for p in procs.processes)
    dt = k * f.interval
    return replace(f, seq=f.seq + k, t=f.t + dt, wall=f.wall + dt,
                   procs=replace(procs, t=procs.t + dt, processes=ps))


@pytest.fixture(scope="module")
def demo() -> list[Frame]:
    return load_frames(str(DATA / "cpu_demo.jsonl"))


@pytest.mark.parametrize("state", ["T", "t"])
def test_a_stopped_job_is_said_stopped_with_no_speedup(demo, state):
    base = demo[:DECODING]
    frames = base + [_frozen(base[-1], k, state) for k in range(1, 9)]
    verdicts = run(frames)
    assert verdicts[DECODING - 1].stage in (v.DECODE, v.CONTENTION)  # running: a real verdict
    for x in verdicts[DECODING:]:
        assert x.stage == v.IDLE
        assert "stopped" in x.sentence
        assert x.speedup is None


def test_a_stale_stack_sample_is_not_evidence(demo):
    """The stacks stop coming (py-spy stuck) while the process table still shows the job running:
    the old sample must not keep a stack-proved verdict alive."""
    base = demo[:DECODING]
    later = [replace(base[-1], seq=base[-1].seq + k, t=base[-1].t + k * base[-1].interval,
                     procs=replace(base[-1].procs, t=base[-1].procs.t + k * base[-1].interval))
             for k in range(1, 9)]
    from gpuwatch.diagnosis.stack_signals import stack_signals

    fresh = stack_signals(base, 3.0, None)
    stale = stack_signals(base + later, 3.0, None)
    assert fresh.available
    assert not stale.available and "no new stack sample" in (stale.reason or "")
    last = run(base + later)[-1]
    assert all(e.signal not in ("data_wait", "main_active") or e.value is None
               for e in last.evidence if e.stage == last.stage)


@pytest.fixture(scope="module")
def ddp() -> list:
    return run(load_frames(str(DATA / "ddp_cpu_slow_rank1.jsonl")))


def test_a_verdict_that_names_no_cause_gives_no_estimate(ddp):
    unknown = [x for x in ddp if x.stage == v.UNKNOWN]
    assert unknown, "the sleeping workers' waits should read as unknown (no cause measured)"
    assert all(x.speedup is None for x in unknown)


def test_sleeping_workers_are_no_storage_evidence(ddp):
    """ddp_cpu_slow_rank1.jsonl's workers sleep in __getitem__ (recorded as "io" before the "wait"
    label): no row may call those samples reads, and rows about the same share must agree."""
    for x in ddp:
        rows = {e.signal: e for e in x.evidence if e.stage == v.IO}
        if "worker_io" in rows:
            assert not rows["worker_io"].supports, rows["worker_io"].text
            assert "reads_in_stacks" not in rows  # one row for one share


def _one_main_sample(f: Frame) -> Frame:
    """``f`` as a slower stack sampler would give it: one main-thread sample a tick."""
    mains = [t for t in f.stacks.threads if t.role == "main"]
    rest = tuple(t for t in f.stacks.threads if t.role != "main")
    return replace(f, stacks=replace(f.stacks, threads=tuple(mains[-1:]) + rest))


def test_no_stage_is_named_before_its_stack_evidence_exists(demo):
    """Two ticks of the demo's decode phase with one main-thread sample each: two samples can only
    read 0, 50 or 100 %, so no stack-proved stage is named yet; the third tick names one."""
    frames = [_one_main_sample(f) for f in demo[30:34]]
    verdicts = run(frames)
    assert verdicts[1].stage == v.UNKNOWN and verdicts[1].speedup is None
    assert verdicts[1].sentence.startswith("Collecting evidence: 2 stack samples"), verdicts[1].sentence
    assert verdicts[3].stage in (v.DECODE, v.CONTENTION), verdicts[3].sentence


def test_cpu_bound_names_its_own_evidence_rows_and_gives_way_on_a_full_host(demo):
    verdicts = run(demo)
    bound = [(i, x) for i, x in enumerate(verdicts) if x.stage == v.CPU_BOUND]
    for _, x in bound:
        assert any(e.stage == v.CPU_BOUND and e.supports for e in x.evidence), x.sentence
    # The recording's VM was full (host CPU >= 90 %, others on >= 25 % of it): a main thread that
    # gets under 0.9 core there is held back by the host, never called CPU-bound.
    for i, x in bound:
        h = demo[i].host
        main = [e for e in x.evidence if e.stage == v.CPU_BOUND and e.signal == "main_cpu"]
        assert not (h.cpu_pct >= 90 and main and main[0].value < 0.9), (i, x.sentence)
    # Its last tick was called "CPU-bound (0.29 core CPU)" with the VM at 100 % (trial report item 5).
    assert verdicts[60].stage != v.CPU_BOUND, verdicts[60].sentence


def test_the_report_leads_with_the_straggler_that_holds_the_job():
    """diagnose --replay of the slow-rank DDP recording: rank 1 holds rank 0 back on most ticks
    (replay --json names it), so the report's headline names it, in Markdown, HTML and JSON."""
    import json

    from gpuwatch.model.values import Unsupported
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_json import render_json
    from gpuwatch.report.render_md import render_markdown

    got = from_frames(load_frames(str(DATA / "ddp_cpu_slow_rank1.jsonl")))
    assert got.rank_ticks and got.stragglers
    report = build_report(got, Unsupported("not probed"), "replay", path="ddp_cpu_slow_rank1.jsonl")
    lag = report.summary.straggler
    assert lag is not None and lag.rank == 1 and lag.leads and lag.ticks * 2 >= lag.of
    verdict = render_markdown(report).split("## Verdict", 1)[1].split("##", 1)[0]
    assert verdict.strip().startswith("**Rank 1 holds the other ranks back**"), verdict
    assert "Rank 1 holds rank 0 back" in verdict
    assert json.loads(render_json(report))["summary"]["straggler"]["rank"] == 1


def test_a_single_process_report_names_no_straggler(demo):
    from gpuwatch.model.values import Unsupported
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames

    report = build_report(from_frames(demo[:20]), Unsupported("not probed"), "replay", path="cpu_demo.jsonl")
    assert report.summary.straggler is None


def test_the_hottest_stacks_do_not_call_a_sleep_a_read():
    """The same recording's workers sleep in Items.__getitem__ (recorded as "io"): the report's
    hottest stacks say what the evidence rows say, no read."""
    from gpuwatch.model import stacks as lb
    from gpuwatch.report.stacks import hot_stacks

    hot = [h for h in hot_stacks(load_frames(str(DATA / "ddp_cpu_slow_rank1.jsonl"))) if h.role == lb.ROLE_WORKER]
    sleeping = [h for h in hot if "__getitem__" in (h.detail or "")]
    assert sleeping and all(h.label == lb.W_WAIT for h in sleeping), [(h.label, h.detail) for h in hot]
