"""The workers' CPU per worker with an idle set left out, read the same way by the evidence, the
drill-down chart and the straggler line.

A job with a persistent validation loader (or two loaders) keeps a set of workers idle beside the
set that works. Averaged in, the idle set halves the working set's CPU: on a real Lightning job
(tests/data/cpu_field/lightning_val_ckpt.jsonl.gz, a validation loader's 1 worker at 0.95 core
beside 2 idle training workers) the verdict read "use 0.32 core CPU each, with no stack sample of
them at work ... a reason gpuwatch does not measure" while the one worker at work used a core.
Sets of equal work are not told apart by taking the highest (review 40: each rank's loader of a
DDP job, forked 0.5 s apart, read 0.87 core where every worker's mean was 0.57, and "raise
num_workers from 2 toward 31" followed).
"""

from __future__ import annotations

import random
from dataclasses import replace

from gpuwatch.analysis import Analysis
from gpuwatch.diagnosis.worker_sets import sample_cpu, sample_sets
from gpuwatch.model import stacks as lb
from gpuwatch.model import verdict as v
from gpuwatch.model.procs import ProcsSample
from gpuwatch.ranks import rank_signals
from gpuwatch.replay import load_frames
from gpuwatch.straggler import RankSignals, _own
from gpuwatch.tui.stage_signals import SIGNALS
from tests.test_diagnosis_frames import Knobs, build, run
from tests.test_diagnosis_remedies import _two_loaders

LIGHTNING = "tests/data/cpu_field/lightning_val_ckpt.jsonl.gz"


def _workers(f):
    return [p for p in f.procs.processes if p.role == "worker"]


def _mean(ws) -> float:
    return sum(w.cpu_pct for w in ws) / 100 / len(ws)


def test_a_real_validation_workers_cpu_is_said_without_the_idle_training_workers():
    frames = load_frames(LIGHTNING)
    a = Analysis()
    verdicts = [a.update(f) for f in frames[:4]]
    # the first ticks: the validation loader's worker computes while the training workers idle
    for f in frames[:3]:
        ws = _workers(f)
        assert sorted(len(s) for s in sample_sets(ws)) == [1, 2]
        got = sample_cpu(ws)
        assert got.idle_out and got.working_set == 1 and got.cpu > 2 * _mean(ws)
    verdict = verdicts[2]
    assert "a reason gpuwatch does not measure" not in verdict.sentence, verdict.sentence
    assert verdict.stage == v.DECODE, verdict.sentence
    assert "compute (0.95 core CPU for the 1 worker at work)" in verdict.sentence, verdict.sentence
    row = next(e for e in verdict.evidence if e.signal == "worker_cpu")
    assert row.text.startswith("CPU per DataLoader worker of the sets at work: 0.95 core"), row.text


def test_the_chart_and_the_straggler_read_the_sets_at_work_as_the_evidence_does():
    """Two loaders of 4 workers forked a second apart, the first's at 0.9 and 0.45 core, the second's
    idle at 0.05: the evidence reads 0.68 core each in the sets at work (test_diagnosis_remedies);
    the drill-down's "CPU per worker" and a rank's worker CPU read the same, not 0.36 over both."""
    frames = _two_loaders(4, 4, 0.9, uneven=True)
    chart = next(s for s in SIGNALS[v.DECODE] if s.label == "CPU per worker")
    assert {round(chart.read(f), 3) for f in frames} == {0.675}
    ranked = [replace(f, procs=replace(f.procs, processes=tuple(
        replace(p, rank=0) if p.role == "main" else p for p in f.procs.processes))) for f in frames]
    got = rank_signals(ranked, 0)
    assert round(got.worker_cpu, 3) == 0.675 and got.idle_out
    assert "rank 0's DataLoader workers at work use 0.67 cores each" in " ".join(_own(got))
    assert "workers use 0.40 cores each" in " ".join(_own(RankSignals(0, 10, 0.5, 0.1, worker_cpu=0.4)))


def test_without_stacks_the_sets_at_work_are_said_as_such():
    """Review 40: "the 4 DataLoader workers in 2 sets of 2 (...) each use 0.90 core" while 2 used 0.05."""
    k = Knobs(gpu=None, cpu_count=4, usable=4, workers=4, main_cpu=0.12, worker_cpu=0.9,
              main_labels={lb.DATA_WAIT: 0.9, lb.DISPATCH: 0.1}, worker_labels={lb.W_BUSY: 1.0}, stacks=False,
              host_cpu=100 * (0.22 + 2 * 0.95) / 4)
    frames = []
    for f in build(k, 20):
        main, *ws = f.procs.processes
        ws = [replace(w, cpu_pct=(90.0 if i < 2 else 5.0), started=100.0 + (i >= 2)) for i, w in enumerate(ws)]
        frames.append(replace(f, procs=replace(f.procs, processes=(main, *ws))))
    verdict = run(frames)[-1]
    assert "use 0.90 core each in the sets at work" in verdict.sentence, verdict.sentence
    assert "each use 0.90" not in verdict.sentence


def _ranks(n: int, mean: float, spread: float, apart: float) -> list:
    """``n`` ranks of 2 workers each, every worker at ``mean`` core give or take ``spread`` (seeded),
    each rank's loader forked ``apart`` seconds after the last one's."""
    rng = random.Random(3)
    jobs = []
    for r in range(n):
        k = Knobs(gpu=None, cpu_count=32, usable=32, workers=2, main_cpu=0.12, worker_cpu=mean, rank=r,
                  pid=100 + 100 * r, main_labels={lb.DATA_WAIT: 0.9, lb.DISPATCH: 0.1},
                  worker_labels={lb.W_BUSY: 1.0}, stacks=False)
        fr = []
        for f in build(k, 30):
            main, *ws = f.procs.processes
            ws = [replace(w, cpu_pct=100 * max(0.0, rng.gauss(mean, spread)), started=100.0 + apart * r) for w in ws]
            fr.append(replace(f, procs=replace(f.procs, processes=(main, *ws))))
        jobs.append(fr)
    return [replace(parts[0], procs=ProcsSample(parts[0].t, tuple(p for f in parts for p in f.procs.processes),
                                                parts[0].procs.usable_cpus)) for parts in zip(*jobs)]


def test_sets_of_equal_work_read_every_workers_mean_not_the_highest():
    """Each rank's loader is its own set, and sets of equal work are all at work: the mean of every
    worker, not the highest set's (which picked 0.87 core of 0.57 and named CPU prep)."""
    frames = _ranks(8, 0.6, 0.25, 0.5)
    for f in frames:
        ws = _workers(f)
        assert len(sample_sets(ws)) == 8
        got = sample_cpu(ws)
        if not got.idle_out:
            assert abs(got.cpu - _mean(ws)) < 1e-9
    verdict = run(frames)[-1]
    row = next(e for e in verdict.evidence if e.signal == "worker_cpu")
    assert row.text.startswith("CPU per DataLoader worker: 0.5"), row.text
    assert verdict.stage != v.DECODE, verdict.sentence


def test_a_loader_whose_forks_were_slow_is_not_read_by_its_busiest_worker():
    """One loader of 8 workers forked 0.2 s apart (over SET_GAP_S) reads as 8 sets of one. The highest
    set was the busiest worker (0.83 core of a 0.45 mean, review 40); now a worker near zero in a tick
    is left out as an idle set, and the rest are averaged: within 0.1 core of every worker's mean."""
    rng = random.Random(1)
    k = Knobs(gpu=None, cpu_count=16, usable=16, workers=8, main_cpu=0.12, worker_cpu=0.45,
              main_labels={lb.DATA_WAIT: 0.9, lb.DISPATCH: 0.1}, worker_labels={lb.W_BUSY: 1.0}, stacks=False)
    over = []
    for f in build(k, 30):
        ws = [replace(w, cpu_pct=100 * max(0.0, rng.gauss(0.45, 0.25)), started=100.0 + i * 0.2)
              for i, w in enumerate(_workers(f))]
        assert len(sample_sets(ws)) == 8
        over.append(sample_cpu(ws).cpu - _mean(ws))
    assert -1e-9 <= min(over) and max(over) < 0.1, over


def test_workers_whose_sets_cannot_be_told_are_one_set():
    """Start times unknown (older recordings) or workers started by spawn (their start follows the
    interpreter's start-up): every worker's mean, as before sets were told apart."""
    frames = _two_loaders(4, 4, 0.9, uneven=True)
    ws = _workers(frames[0])
    unknown = [replace(w, started=None) if i == 0 else w for i, w in enumerate(ws)]
    assert sample_sets(unknown) == [frozenset(w.pid for w in ws)]
    spawned = [replace(w, cmdline="python -c from multiprocessing.spawn import spawn_main; spawn_main()")
               for w in ws]
    got = sample_cpu(spawned)
    assert not got.idle_out and got.working_set == 8 and abs(got.cpu - _mean(ws)) < 1e-9


def test_several_loaders_of_one_worker_at_work_are_not_said_as_one():
    """Review 41: two zipped training loaders of 1 worker each at work, beside a persistent validation
    loader's idle worker, read "for the 1 worker at work" (the largest set at work, not its count)."""
    k = Knobs(gpu=None, cpu_count=8, usable=8, workers=3, main_cpu=0.12, worker_cpu=0.9,
              main_labels={lb.DATA_WAIT: 0.8, lb.DISPATCH: 0.2}, worker_labels={lb.W_BUSY: 1.0},
              worker_detail={lb.W_BUSY: "Image.convert"})
    frames = []
    for f in build(k, 20):
        ps = tuple(replace(p, started=1.7e9 + 10 * (p.pid - 101), cpu_pct=0.0 if p.pid == 103 else p.cpu_pct)
                   if p.role == "worker" else p for p in f.procs.processes)
        frames.append(replace(f, procs=replace(f.procs, processes=ps)))
    got = sample_cpu(_workers(frames[-1]))
    assert (got.working_set, got.at_work, got.idle_out) == (1, 2, True)
    verdict = run(frames)[-1]
    assert "0.90 core CPU each in the sets at work" in verdict.sentence, verdict.sentence
    assert "1 worker at work" not in verdict.sentence
