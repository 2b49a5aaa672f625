"""A run that trained only part of the time says both sides in the report's verdict.

tests/data/cpu_field/upload_pause.jsonl.gz (trial 27): a CPU job that computes ~30 s, then sleeps 20 s
in ``upload()``. Its report read only "Idle held the verdict 61% of the time ... in upload", the
training time's CPU-bound verdict unsaid; cut to its first 20 ticks (10 training, 8 asleep), only
"CPU-bound held the verdict", the pause unsaid.
"""

from __future__ import annotations

from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.render_md import render_markdown

RECORDING = "tests/data/cpu_field/upload_pause.jsonl.gz"


def _verdict(frames) -> str:
    md = render_markdown(build_report(from_frames(frames), NOT_RECORDED, "replay", path=RECORDING))
    return md.split("## Verdict", 1)[1].split("\n## ", 1)[0]


def test_an_idle_headline_says_what_held_while_the_job_trained():
    text = _verdict(load_frames(RECORDING))
    assert text.lstrip().startswith("**Idle** held the verdict"), text
    assert "in upload (j6_pause.py:14)" in text
    assert ("For 32% of the time, while the job trained, the verdict was CPU-bound: the job's own compute on the CPU "
            "is the limit" in text), text


def test_a_stage_headline_says_the_time_not_training():
    text = _verdict(load_frames(RECORDING)[:20])
    assert text.lstrip().startswith("**CPU-bound**"), text
    assert "the verdict was Idle, with no pipeline stage to fix. Not training, as far as its samples show: " in text, text
    assert "in upload (j6_pause.py:14)" in text


def test_an_idle_headline_lists_the_advice_of_the_stage_that_held_while_it_trained():
    """Review 28: the same report said "Nothing to fix was found" beside "For 32% of the time, while
    the job trained, the verdict was CPU-bound": the stage its verdict names beside Idle has advice."""
    frames = load_frames(RECORDING)
    r = build_report(from_frames(frames), NOT_RECORDED, "replay", path=RECORDING)
    assert r.summary.stage == "idle" and r.summary.beside is not None and r.summary.beside.stage == "cpu_bound"
    staged = [x for x in r.remedies if x.stage is not None]
    assert staged and {x.stage for x in staged} == {"cpu_bound"}
    md = render_markdown(r)
    assert "Nothing to fix was found" not in md
    assert "1. **CPU-bound** (held 32% of the time" in md


def test_the_stage_held_most_leads_even_when_it_names_no_cause_and_the_start_is_said_beside():
    """Review 30: the two-rank job whose rank 1 waits on its input (tests/data/ddp_cpu_slow_rank1.jsonl)
    was Unknown ("Input-bound for a reason gpuwatch does not measure") for 10 of its 13 ticks and
    Idle for its first 3; the report led with "Idle ... Not training" and its only remedy was "lower
    num_workers", from workers at 0.01 core each. It now leads with what held most, lists that
    verdict's advice, says the start beside it, and the workers check passes, saying why."""
    path = "tests/data/ddp_cpu_slow_rank1.jsonl"
    md = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path))
    text = md.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert "Per process: Unknown held the verdict 77% of the time. Input-bound for a reason" in text, text
    assert "largest share" not in text and "mean confidence 0.00" not in text
    assert "For 23% of the time the verdict was Idle, with no pipeline stage to fix. Not training: " in text
    assert "holding this verdict" not in text  # the TUI's note on a held verdict is not the run's
    remedies = md.split("## Remedies", 1)[1].split("\n## ", 1)[0]
    assert "lower num_workers" not in remedies and "Look at where a DataLoader worker waits" in remedies
    assert "| PASS | DataLoader workers fit the CPUs | more workers than cores (4 DataLoader workers for 2 " in md


def _made(parts):
    """Verdicts of a made-up run: (stage, ticks, sentence, speed-up) in turn."""
    from gpuwatch.model.verdict import PIPELINE, Verdict

    out, t = [], 0.0
    for stage, n, sentence, up in parts:
        for _ in range(n):
            out.append(Verdict(t=t, stage=stage, confidence=0.0 if stage == "unknown" else 0.8, sentence=sentence,
                               evidence=(), secondary=(), speedup=up, remedies=(),
                               levels=tuple((s, "ok") for s in PIPELINE)))
            t += 1.0
    return [(v.t, v.stage, v.confidence) for v in out], out


def test_no_stage_named_for_most_of_the_run_is_said_beside_a_bottleneck_headline():
    """Review 31: Disk 25 % at 2x led, and the 70 % in which no stage could be named went unsaid."""
    from gpuwatch.report.sections import summary
    from gpuwatch.report.words import headline

    marks, verdicts = _made([("io", 25, "Input-bound on storage: X.", 2.0),
                             ("unknown", 70, "Input-bound for a reason gpuwatch does not measure: Y.", None),
                             ("gpu_bound", 5, "Healthy: Z.", None)])
    title, text = headline(summary(marks, verdicts))
    assert title == "I/O"
    assert "Most of the time (70%) no stage could be named. Input-bound for a reason gpuwatch does not measure" in text
    assert "less cost to the run" not in text


def test_an_unknown_headline_tells_the_story_it_held_most_and_the_stage_named_most():
    """Review 31: 40 ticks "input-bound, reason not measured" then 5 "not conclusive" read as the 5,
    and the 35 % GPU-bound beside them went unsaid."""
    from gpuwatch.report.sections import summary
    from gpuwatch.report.words import headline

    marks, verdicts = _made([("unknown", 40, "Input-bound for a reason gpuwatch does not measure: A.", None),
                             ("unknown", 5, "No stage's signals are conclusive: B.", None),
                             ("gpu_bound", 35, "Healthy, GPU-bound: C.", None),
                             ("idle", 20, "Not training: D.", None)])
    title, text = headline(summary(marks, verdicts))
    assert title == "Unknown" and "Input-bound for a reason gpuwatch does not measure: A." in text
    assert "conclusive" not in text
    assert "For 35% of the time the verdict was Healthy, GPU-bound: C." in text


def test_a_named_stage_held_longer_than_the_headline_is_said_and_epochs_are_said_once():
    """Review 32, tests/data/cpu_field/lightning_val_ckpt.jsonl.gz: Contention led (22 %, the largest
    cost) beside Unknown (33 %), and the CPU-bound 30 % that the TUI, the JSON stream and Prometheus
    ended on was never said; the verdict paragraph gave two "Epochs:" sentences of different ticks
    ("5 times in 48 s", "3 times in 29 s") beside the epoch section's own."""
    path = "tests/data/cpu_field/lightning_val_ckpt.jsonl.gz"
    md = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path))
    text = md.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    assert text.lstrip().startswith("**Contention** cost the job most of what was estimated: it held the verdict 22%"), text
    # CPU-bound held longest since two validation ticks read CPU prep on the validation worker's core
    # (test_worker_sets.py), and ticks of "batch transfer" on 2 of 6 samples are CPU-bound now that
    # receiving must lead the minute's waits (input_stages.receiving_leads): said, with its sentence
    assert ("For the largest share of the time (34%), at a cost not estimated, the verdict was CPU-bound: the job's "
            "own compute on the CPU is the limit" in text), text
    # said once, as the epoch section says them (the run's end), not a tick's "Epochs:" clause (review 44)
    assert text.count("Epochs:") == 0 and text.count("Over the last minute watched:") == 1, text
    section = md.split("## Epoch structure", 1)[1].split("\n## ", 1)[0].strip()
    assert section.split(". ")[0] in text
