"""The drill-downs' charts plot what the verdict counts.

Review 30: on tests/data/field/cpu_job_neighbours_cpu.jsonl.gz (a CPU job beside CPU hogs on the
2-core VM) the Contention drill-down charted "CPU outside the job ━ 0.42 core", the one listed
outside process, under the verdict's "processes outside the job use 1.23 cores of 2 CPUs"."""

from __future__ import annotations

from statistics import median

from gpuwatch.analysis import Analysis
from gpuwatch.model import verdict as v
from gpuwatch.replay import load_frames
from gpuwatch.tui.stage_signals import SIGNALS, series

RECORDING = "tests/data/field/cpu_job_neighbours_cpu.jsonl.gz"


def test_cpu_outside_the_job_is_the_verdicts_count_not_the_listed_processes_alone():
    frames = load_frames(RECORDING)
    chart = next(s for s in SIGNALS[v.CONTENTION] if s.label == "CPU outside the job")
    points = [x for x in series(chart, frames) if x is not None]
    listed = [sum(o.cpu_pct for o in f.host.top_others) / 100 for f in frames]
    assert all(p >= q - 1e-9 for p, q in zip(points, listed))  # never under the listed processes
    analysis = Analysis()
    verdict = None
    for f in frames:
        verdict = analysis.update(f)
    said = next(e for e in verdict.evidence if e.stage == v.CONTENTION and e.signal == "others_cpu")
    usable = frames[-1].procs.usable_cpus
    # the verdict's reading is a share of the usable CPUs over its window (a median of ticks)
    window = points[-8:]
    assert abs(median(window) - said.value * usable) < 0.25, (window, said.value)
    assert median(listed[-8:]) < said.value * usable - 0.25  # the listed processes alone fell short


def test_cpu_prep_in_the_loop_charts_the_training_process_cpu_the_verdict_counts():
    """A loop that transforms its own batches (tests/data/cpu_field/loop_aug.jsonl.gz, CPU prep in
    its "loop" form) is judged on the training process's CPU, not the workers': the CPU-prep
    drill-down plots that CPU too, and its reading is the verdict's "training process CPU"."""
    frames = load_frames("tests/data/cpu_field/loop_aug.jsonl.gz")
    analysis = Analysis()
    verdict = None
    for f in frames:
        verdict = analysis.update(f)
    assert verdict.stage == v.DECODE
    said = next(e for e in verdict.evidence if e.stage == v.DECODE and e.signal == "process_cpu")
    chart = next(s for s in SIGNALS[v.DECODE] if s.label == "training process CPU")
    points = [x for x in series(chart, frames) if x is not None]
    assert abs(median(points[-8:]) - said.value) < 0.1, (points[-8:], said.value)
    workers = next(s for s in SIGNALS[v.DECODE] if s.label == "CPU per worker")
    assert median(x for x in series(workers, frames)[-8:] if x is not None) < 0.5  # the workers' chart alone showed no prep
