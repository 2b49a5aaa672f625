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
