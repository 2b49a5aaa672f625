"""Review 36: evidence and remedies only on what was seen, replayed from the real H200 recordings.

a. A missing pin-memory thread counts for PCIe only beside DataLoader workers: with num_workers=0
   (or no DataLoader) there is no such thread, pinned or not (the h2d job read "● no pin-memory
   thread: the DataLoader does not pin memory" with no worker at all).
b. No numactl remedy: nothing a verdict reads carries the host's NUMA layout (it closed every
   Contention verdict, another GPU tenant's included).
c. persistent_workers only where worker re-creation was seen, never as a condition with its fix's
   "gain not estimated: no set of workers was re-created" after it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from gpuwatch.analysis import Analysis
from gpuwatch.model import verdict as v
from gpuwatch.model.procs import ROLE_WORKER
from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

ROOT = Path(__file__).resolve().parents[1]
ACC = ROOT / "bench" / "results" / "2026-12-02-h200" / "acc"
RUN25_LIGHTNING = ROOT / "tests" / "data" / "h200" / "run25_lightning.jsonl.gz"


def _replay(path: Path) -> tuple[list, list[v.Verdict]]:
    frames = load_frames(str(path))
    analysis = Analysis()
    return frames, [analysis.update(f) for f in frames]


def _workers(frame) -> int:
    return sum(p.role == ROLE_WORKER for p in getattr(frame.procs, "processes", ()))


def _pin(verdict: v.Verdict) -> v.Evidence:
    return next(e for e in verdict.evidence if e.stage == v.H2D and e.signal == "pin_memory")


def test_no_pin_thread_proves_nothing_without_dataloader_workers():
    frames, verdicts = _replay(ACC / "h2d.jsonl")
    assert not any(_workers(f) for f in frames), "the h2d job copies without DataLoader workers"
    assert any(x.stage == v.H2D for x in verdicts)
    for x in verdicts:
        e = _pin(x)
        assert not e.supports and not e.applies, e.text
        assert "does not pin" not in e.text
    md = render_markdown(build_report(from_frames(frames), NOT_RECORDED, "replay", path=str(ACC / "h2d.jsonl")))
    assert "● no pin-memory thread" not in md
    assert "– pin-memory thread: does not apply (no DataLoader worker seen" in md
    # the remedy does not assume a DataLoader either
    pcie = [r for x in verdicts if x.stage == v.H2D for r in x.remedies if r.startswith("Pin host memory")]
    assert pcie and all(".pin_memory() on a host tensor" in r for r in pcie)


def test_a_missing_pin_thread_beside_workers_still_points_to_pcie():
    # The switch job: a GPU-bound phase with 2 workers and no pin thread, then pageable copies without workers.
    frames, verdicts = _replay(ACC / "switch.jsonl")
    said = [(_workers(f), _pin(x)) for f, x in zip(frames, verdicts)]
    beside = [e for w, e in said if e.supports]
    assert beside, "some tick had workers and no pin-memory thread"
    assert all("beside the DataLoader workers" in e.text for e in beside)
    # every PCIe verdict of the copies' phase, which had no worker: the fact does not apply
    for f, x in zip(frames, verdicts):
        if x.stage == v.H2D:
            assert not _pin(x).supports, _pin(x).text


@pytest.mark.parametrize("name", ["contention.jsonl", "launch.jsonl", "h2d.jsonl"])
def test_no_numactl_without_anything_seen_of_numa(name):
    _, verdicts = _replay(ACC / name)
    said = [r for x in verdicts for r in x.remedies]
    assert said
    assert not any("numactl" in r or "NUMA" in r for r in said), [r for r in said if "numactl" in r]
    if name == "contention.jsonl":
        tenant = [x for x in verdicts if x.stage == v.CONTENTION]
        assert tenant and all(any("Move the other GPU tenant" in r for r in x.remedies) for x in tenant)


@pytest.mark.parametrize("name", ["io.jsonl", "decode.jsonl"])
def test_no_persistent_workers_where_no_set_was_recreated(name):
    _, verdicts = _replay(ACC / name)
    input_bound = [x for x in verdicts if x.stage in (v.IO, v.DECODE)]
    assert input_bound
    for x in input_bound:
        if any(p.kind == v.RESPAWN for p in x.phases):
            continue
        text = " ".join(x.remedies)
        assert "persistent_workers" not in text, text
        assert "no set of workers was re-created" not in text and "no set was re-created" not in text


def test_persistent_workers_where_sets_were_recreated():
    _, verdicts = _replay(RUN25_LIGHTNING)
    seen = [x for x in verdicts if x.stage in (v.IO, v.DECODE) and any(p.kind == v.RESPAWN for p in x.phases)]
    assert seen
    for x in seen:
        keep = [r for r in x.remedies if r.startswith("persistent_workers=True")]
        assert len(keep) == 1, x.remedies
        assert "re-created" in keep[0] and "expected:" in keep[0], keep[0]  # said with what was seen, and its gain
        assert "gain not estimated: no set" not in keep[0]
