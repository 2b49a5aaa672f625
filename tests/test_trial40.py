"""Trial 40 (2026-12-07, the 2-core CPU VM, no GPU): new CPU training jobs with their own clocks,
watched by an adversarial tester (tests/data/cpu_field/README.md for those kept as recordings)."""

from __future__ import annotations

from gpuwatch.model.evaluation import imported_through, pass_sites

# The main thread of a Lightning job (num_sanity_val_steps=0, its first validation 61 s later) at
# fit's start, importing its logger connector: the dozen frames its sample kept, then, beyond them,
# the import chain through Lightning's loop modules (as Trainer.fit imports them) to the script.
IMPORTING = (
    "_ResultCollection (lightning/pytorch/trainer/connectors/logger_connector/result.py:328)",
    "<module> (lightning/pytorch/trainer/connectors/logger_connector/result.py:312)",
    "_call_with_frames_removed (<frozen importlib._bootstrap>:241)",
    "_LoaderBasics.exec_module (<frozen importlib._bootstrap_external>:940)",
    "_load_unlocked (<frozen importlib._bootstrap>:690)",
    "_find_and_load_unlocked (<frozen importlib._bootstrap>:1147)",
    "_find_and_load (<frozen importlib._bootstrap>:1176)",
    "<module> (lightning/pytorch/trainer/connectors/logger_connector/logger_connector.py:26)",
    "_call_with_frames_removed (<frozen importlib._bootstrap>:241)",
    "_LoaderBasics.exec_module (<frozen importlib._bootstrap_external>:940)",
    "_load_unlocked (<frozen importlib._bootstrap>:690)",
    "_find_and_load_unlocked (<frozen importlib._bootstrap>:1147)",
    "_find_and_load (<frozen importlib._bootstrap>:1176)",
    "<module> (lightning/pytorch/loops/evaluation_loop.py:43)",
    "_call_with_frames_removed (<frozen importlib._bootstrap>:241)",
    "_find_and_load (<frozen importlib._bootstrap>:1176)",
    "<module> (lightning/pytorch/loops/__init__.py:17)",
    "_find_and_load (<frozen importlib._bootstrap>:1176)",
    "<module> (job_lit_steps.py:3)",
)


def test_a_module_being_imported_is_not_an_evaluation_pass():
    """One sample of it carried "evaluating": Lightning's evaluation_loop.py (a pass's file) was being
    imported, and the verdict said "A validation pass was seen once in 19 s" for six ticks; the report
    kept it."""
    assert imported_through(IMPORTING) == len(IMPORTING) - 1  # all but the script
    assert not pass_sites(IMPORTING, kept=12)
    # a pass that imports something lazily is still a pass: its frames are root-ward of the import
    lazy = ("<module> (torchmetrics/functional/__init__.py:5)", "_find_and_load (<frozen importlib._bootstrap>:1176)",
            "validation_step (job.py:40)", "_EvaluationLoop.run (lightning/pytorch/loops/evaluation_loop.py:145)",
            "<module> (job.py:90)")
    assert pass_sites(lazy, kept=12) == {"validation_step (job.py", "_EvaluationLoop.run (lightning/pytorch/loops/evaluation_loop.py"}
    # no import: as before
    assert pass_sites(lazy[2:], kept=12) == pass_sites(lazy, kept=12)


def test_a_stage_that_meets_its_cuts_beside_the_verdict_most_of_the_run_has_its_remedies_listed():
    """t40_sqlite (tests/data/cpu_field/README.md): workers doing an unindexed SQLite lookup per item,
    the job waiting for them 81 % of its time by its own clock, on a host whose other work used 0.8-1.7
    of its 2 cores. Contention is the verdict; CPU prep, which met its own cuts beside it 95 % of the
    run, stood "at warning level ... it meets its thresholds too" with no remedy, and no word of what it
    met them on. An index ran the job 38x faster."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown

    path = "tests/data/cpu_field/t40_sqlite.jsonl.gz"
    got = from_frames(load_frames(path))
    report = build_report(got, NOT_RECORDED, "replay", path=path)
    text = render_markdown(report)
    assert report.summary.stage == "contention"
    beside = [r for r in report.remedies if r.stage == "decode"]
    assert beside and all(r.beside is not None and r.beside > 0.9 and r.speedup_run is None for r in beside)
    assert ("**CPU prep** (met its own thresholds beside the verdict 95% of the time; no run figure for that time: "
            "each fix's own figure below is from its latest such tick)") in text
    # no "at most 1.00x" left for it (a share of 0 read as a figure)
    assert report.figures is None or report.figures.speedup_left is None or report.figures.speedup_left.stage != "decode"
    assert "the workers are most often in Store.\\_\\_getitem\\_\\_" in text
    # what it meets its cuts on, then why it is not the verdict
    warn = text.split("At warning level beside the verdict: ", 1)[1].split("\n", 1)[0]
    assert warn.startswith("CPU prep 95% of the time (at its latest: main thread waiting for a batch "), warn
    assert "while the workers compute; it meets its thresholds too, but the stage the verdict names takes precedence" in warn


def test_a_thread_of_the_job_that_holds_the_gil_is_named_as_contention_with_its_remedy():
    """t40_gil_thread (tests/data/cpu_field/README.md): a pure-Python "dashboard" thread in the training
    process held the GIL in 55 of the main thread's 79 samples. Only the outside processes were named
    (0.77-1.08 core of 2 CPUs); without the dashboard the job ran 1.4x (under load) to 10x faster."""
    from gpuwatch.analysis import Analysis
    from gpuwatch.replay import load_frames

    a = Analysis()
    got = [a.update(f) for f in load_frames("tests/data/cpu_field/t40_gil_thread.jsonl.gz")]
    named = [x for x in got if x.stage == "contention" and "holds the GIL" in x.sentence]
    assert len(named) >= len(got) // 2
    last = named[-1]
    assert "a thread of its own (dashboard, in job_gil_thread.dashboard) holds the GIL in " in last.sentence
    assert any(r.startswith("A thread of the training process (dashboard, in job_gil_thread.dashboard) holds the GIL ")
               and "a process of its own" in r for r in last.remedies)
    rows = [e for e in last.evidence if e.signal == "gil_elsewhere"]
    assert rows and rows[0].supports and rows[0].value >= 0.25


def test_threads_parked_in_waits_are_not_gil_holders():
    """py-spy reads a queue's feeder thread as the GIL's holder as it wakes (12-33 % of the main
    thread's samples on the H200 Lightning and benchmark jobs, which run no thread of their own): no
    contention cause there, nor where the job's own threads make its batches (trial 35's thread pool
    of JPEG decoders, judged as its input)."""
    from gpuwatch.analysis import Analysis
    from gpuwatch.replay import load_frames

    from gpuwatch.diagnosis.stack_signals import WAIT_FILES, _in_wait
    from gpuwatch.model.stacks import ThreadStack

    for path in ("tests/data/h200/field_lightning_persistent.jsonl.gz", "tests/data/h200/healthy.jsonl",
                 "tests/data/cpu_field/t35_threadpool.jsonl.gz"):
        a = Analysis()
        read = []
        for f in load_frames(path):
            v = a.update(f)
            assert "holds the GIL" not in v.sentence and not any("holds the GIL" in r for r in v.remedies), path
            read += [e.value for e in v.evidence if e.signal == "gil_elsewhere" and e.value is not None]
        assert read and max(read) < 0.25, (path, max(read, default=None))
    # the feeders' leaf frames are in the waits left out; a thread at work in the job's own code is not
    feeder = ThreadStack(pid=1, tid=2, role="other", rank=None, thread_name="QueueFeederThread", label="other",
                         detail="Condition.wait", active=True, owns_gil=True,
                         frames=("Condition.wait (threading.py:355)", "Queue._feed (multiprocessing/queues.py:251)"))
    worker = ThreadStack(pid=1, tid=3, role="other", rank=None, thread_name="dashboard", label="other",
                         detail="job.dashboard", active=True, owns_gil=True, frames=("dashboard (job.py:30)",))
    assert _in_wait(feeder) and not _in_wait(worker) and "concurrent/futures/thread.py" in WAIT_FILES


def test_a_stage_met_beside_the_verdict_gives_no_speed_up_left():
    """Review 49: a beside stage's remedies carry share 0 and no run figure; under a CPU-bound headline
    speedup_left read them as "at most 1.00x" for CPU prep, whose fix ran the trial's job 38x faster."""
    from gpuwatch.report.measure import speedup_left
    from gpuwatch.report.model import Remedy

    bound = Remedy(text="Make it cheaper", stage="cpu_bound", check=None, share=0.8, speedup_while=None,
                   speedup_run=None)
    beside = Remedy(text="Make each item cheaper", stage="decode", check=None, share=0.0, speedup_while=None,
                    speedup_run=None, beside=0.95)
    assert speedup_left([bound, beside]) is None
    held = Remedy(text="Raise num_workers", stage="decode", check=None, share=0.3, speedup_while=None,
                  speedup_run=None)
    left = speedup_left([bound, held])
    assert left is not None and left.stage == "decode" and left.upper_bound


def test_worker_readings_after_the_workers_exited_say_so_not_that_none_was_seen():
    """The demo's drill-down, once its loader's worker had exited: "does not apply (no DataLoader worker
    seen (num_workers=0, or no DataLoader))" beside "the workers are not computing", seconds after the
    worker computed. Where the minute held workers, the rows say none is alive now."""
    from gpuwatch.analysis import Analysis
    from gpuwatch.diagnosis.input_stages import NO_WORKER_NOW
    from gpuwatch.model.procs import NO_WORKER_SEEN
    from gpuwatch.replay import load_frames

    a = Analysis()
    after = []
    for f in load_frames("tests/data/cpu_demo.jsonl"):
        v = a.update(f)
        procs = getattr(f.procs, "processes", None)
        if procs is not None and not any(p.role == "worker" for p in procs) and v.stage == "idle":
            after.append(v)
    assert after
    rows = [e.text for v in after[:5] for e in v.evidence if e.stage == "decode"]
    assert any(NO_WORKER_NOW in t for t in rows), rows
    assert not any(NO_WORKER_SEEN in t for t in rows)
    assert "the workers are not computing" not in rows
