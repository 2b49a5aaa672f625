"""The busiest set's CPU per worker, read the same way by the evidence, the drill-down chart and the
straggler line.

A job with a persistent validation loader (or two loaders) keeps a set of workers idle beside the
set that works. Averaged in, the idle set halves the working set's CPU: on a real Lightning job
(tests/data/cpu_field/lightning_val_ckpt.jsonl.gz, a validation loader's 1 worker at 0.95 core
beside 2 idle training workers) the verdict read "use 0.32 core CPU each, with no stack sample of
them at work ... a reason gpuwatch does not measure" while the one worker at work used a core.
"""

from __future__ import annotations

from dataclasses import replace

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis.worker_sets import busiest_set_cpu, sample_sets
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from gpuwatch.ranks import rank_signals
from gpuwatch.tui.stage_signals import SIGNALS
from tests.test_diagnosis_remedies import _two_loaders

LIGHTNING = "tests/data/cpu_field/lightning_val_ckpt.jsonl.gz"


def test_a_real_validation_workers_cpu_is_said_as_the_busiest_sets():
    frames = load_frames(LIGHTNING)
    a = Analysis()
    verdicts = [a.update(f) for f in frames[:4]]
    # the first ticks: the validation loader's worker computes while the training workers idle
    for f in frames[:3]:
        ws = [p for p in f.procs.processes if p.role == "worker"]
        assert sorted(len(s) for s in sample_sets(ws)) == [1, 2]
        cpu, size = busiest_set_cpu(ws)
        assert size == 1 and cpu > 2 * sum(w.cpu_pct for w in ws) / 100 / len(ws)
    verdict = verdicts[2]
    assert "a reason gpuwatch does not measure" not in verdict.sentence, verdict.sentence
    assert verdict.stage == v.DECODE, verdict.sentence
    assert "compute (0.95 core CPU for the busiest set's 1 worker)" in verdict.sentence, verdict.sentence
    row = next(e for e in verdict.evidence if e.signal == "worker_cpu")
    assert row.text.startswith("CPU per DataLoader worker of the busiest set: 0.95 core"), row.text


def test_the_chart_and_the_straggler_read_the_busiest_set_as_the_evidence_does():
    """Two loaders of 4 workers forked a second apart, the first's at 0.9 and 0.45 core, the second's
    idle at 0.05: the evidence reads 0.68 core each in the busiest set (test_diagnosis_remedies);
    the drill-down's "CPU per worker" and a rank's worker CPU read the same, not 0.36 over both."""
    frames = _two_loaders(4, 4, 0.9, uneven=True)
    chart = next(s for s in SIGNALS[v.DECODE] if s.label == "CPU per worker")
    assert {round(chart.read(f), 3) for f in frames} == {0.675}
    ranked = [replace(f, procs=replace(f.procs, processes=tuple(
        replace(p, rank=0) if p.role == "main" else p for p in f.procs.processes))) for f in frames]
    assert round(rank_signals(ranked, 0).worker_cpu, 3) == 0.675


def test_workers_whose_sets_cannot_be_told_are_one_set():
    """Start times unknown (older recordings) or workers started by spawn (their start follows the
    interpreter's start-up): every worker's mean, as before sets were told apart."""
    frames = _two_loaders(4, 4, 0.9, uneven=True)
    ws = [p for p in frames[0].procs.processes if p.role == "worker"]
    unknown = [replace(w, started=None) if i == 0 else w for i, w in enumerate(ws)]
    assert sample_sets(unknown) == [frozenset(w.pid for w in ws)]
    spawned = [replace(w, cmdline="python -c from multiprocessing.spawn import spawn_main; spawn_main()")
               for w in ws]
    cpu, size = busiest_set_cpu(spawned)
    assert size == 8 and round(cpu, 4) == round(sum(w.cpu_pct for w in ws) / 100 / 8, 4)
