"""Review 44 (2026-12-07): the reports of real CPU recordings read as an ML engineer would, every
figure set against the job's own clock and the other sections of the same report."""

from __future__ import annotations

from gpuwatch.replay import load_frames
from gpuwatch.report import NOT_RECORDED
from gpuwatch.report.build import build_report
from gpuwatch.report.gather import from_frames
from gpuwatch.report.model import WARN

DATA = "tests/data/cpu_field"


def _report(name: str):
    path = f"{DATA}/{name}.jsonl.gz"
    return build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path)


def test_an_epoch_fix_under_two_stages_is_said_once_with_the_latest_figures():
    """init_restarts listed persistent_workers=True under Contention ("re-created 15 times in 44 s",
    no estimate) and under CPU prep ("23 times in 59 s", with one): one fix, two sets of figures."""
    r = _report("init_restarts")
    keep = [x for x in r.remedies if x.text.startswith("persistent_workers=True")]
    assert len(keep) == 1, [x.stage for x in keep]
    assert keep[0].stage == r.remedies[0].stage  # where it first came: the headline stage's list
    assert "re-created 23 times in 59 s" in keep[0].text and "expected:" in keep[0].text


def test_the_oversubscription_remedy_says_what_the_busiest_worker_would_use():
    """t35_blas_workers: "(the busiest wants 2.01 cores, its CPU with its threads waiting for one:
    several threads at once)" did not parse."""
    r = _report("t35_blas_workers")
    said = [x.text for x in r.remedies if x.text.startswith("Stop thread oversubscription")]
    assert len(said) == 1
    assert said[0].startswith("Stop thread oversubscription in workers (the busiest worker would use 2.01 cores, "
                              "its CPU plus the time its threads queue for one: several threads at once): "), said


def test_a_check_whose_fix_the_stage_remedy_gives_is_not_listed_again():
    """t37_kv_socket: "Data on local storage (a failed or warned check): cache it on local storage, or
    fetch it in fewer, larger requests" repeated the I/O stage's first remedy. The check itself stays."""
    r = _report("t37_kv_socket")
    assert any(x.stage is not None and "cache it on local storage" in x.text for x in r.remedies)
    assert not [x for x in r.remedies if x.check == "network_fs"]
    assert [c.status for c in r.checks if c.id == "network_fs"] == [WARN]


def test_a_cheaper_decode_is_said_as_the_bound_it_is():
    """t36_taskset_prep: "expected: about 1.88x faster, because ... with it free each batch is built
    1.9x faster, the most a cheaper decode gives": an estimate and a bound at once. Decoding made
    free is the most the fix gives: "up to"."""
    from gpuwatch.replay import load_frames as frames_of

    path = "tests/data/h200/run25_imagefolder_few.jsonl.gz"  # workers beside a GPU step, CPUs to spare
    r = build_report(from_frames(frames_of(path)), NOT_RECORDED, "replay", path=path)
    said = [x.text for x in r.remedies if x.text.startswith("Use a faster decoder")]
    assert len(said) == 1 and "; expected: up to 1.56x faster: decoding is 4 of 9 worker samples" in said[0], said
    # t36_taskset_prep's workers fill the one CPU its step runs on too: the decode's CPU, freed, also
    # goes to the step, so the figure is no bound (trial 39, speedup.shares_cpus)
    said = [x.text for x in _report("t36_taskset_prep").remedies if x.text.startswith("Use a faster decoder")]
    assert len(said) == 1 and ("; expected: about 1.88x from what was measured, because decoding is 14 of 30 worker "
                               "samples") in said[0], said
    assert said[0].endswith("more where the CPU the decode frees goes to the step too: the workers fill the CPUs "
                            "the step runs on")


def test_a_run_shorter_than_a_minute_is_not_called_the_last_minute():
    """h100/lightning_restarts, a 21 s recording: "the main thread spent 21 % of the last minute
    starting and stopping DataLoader workers" beside its epoch section's "Over the whole run (21 s)"."""
    path = "tests/data/h100/lightning_restarts.jsonl.gz"
    r = build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path)
    said = " ".join(x.text for x in r.remedies)
    assert "of the last minute" not in said
    assert "the main thread spent 21 % of the last 19 s starting and stopping DataLoader workers" in said


def test_the_headline_says_the_epochs_as_the_epoch_section_does():
    """t36_lightning_epochs: the headline's "10 times in 58 s" (its tick's clause) above the epoch
    section's "11 times in 59 s". The headline's sentence leaves its tick's clause out and says the
    run's end's, with the span, as the section does."""
    from gpuwatch.report.render_md import render_markdown

    md = render_markdown(_report("t36_lightning_epochs"))
    verdict = md.split("## Verdict", 1)[1].split("\n## ", 1)[0]
    section = md.split("## Epoch structure", 1)[1].split("\n## ", 1)[0].strip()
    assert "Epochs:" not in verdict and "10 times in 58 s" not in verdict
    assert section.startswith("Over the last minute watched: the DataLoader workers are re-created at uneven "
                              "intervals (11 times in 59 s")
    assert section.split(";")[0] in verdict


def test_a_main_thread_loading_itself_under_contention_is_not_cpu_prep_ok():
    """t35_stop_validation: the validation loader (num_workers=0) loads 66-81 % of the main thread's
    samples while 1.5 cores of outside load queue its threads (0.19 core CPU): CPU prep read "ok",
    since the loading was required to run at half a core. A queue for a CPU shows the loading would
    compute too: CPU prep warns beside Contention."""
    from gpuwatch.analysis import Analysis
    from gpuwatch.model import verdict as v

    a = Analysis()
    verdicts = [a.update(f) for f in load_frames(f"{DATA}/t35_stop_validation.jsonl.gz")]
    contended = [x for x in verdicts if x.stage == v.CONTENTION]
    assert len(contended) > len(verdicts) // 2
    beside = [x for x in contended if v.DECODE in x.secondary]
    assert len(beside) > len(contended) // 2
    assert dict(beside[-1].levels)[v.DECODE] == v.LEVEL_WARNING
    r = _report("t35_stop_validation")
    assert [w.stage for w in r.summary.warnings] == [v.DECODE]


def test_the_remedies_say_a_run_figure_counted_on_some_ticks_as_the_headline_does():
    """Review 45: the headline's "1.75x faster, counting only the ticks it held" beside the remedies'
    "fixing it: up to 1.75x over this run"."""
    from gpuwatch.report.render_md import render_markdown

    # t35_blas_workers' workers fill the CPUs its step runs on: its figures are floors (trial 39,
    # speedup.shares_cpus; OPENBLAS_NUM_THREADS=1 ran it 5.4x faster by its clock, past the "up to
    # 4.70x" once said), and both places say the run figure is counted on the ticks it held
    md = render_markdown(_report("t35_blas_workers"))
    assert ("could make the whole run 1.49x faster or more, as its input takes the CPUs the step runs on too, so a "
            "cheaper input gives the step CPU as well (the figures count only the wait it removes); 2.50x or more "
            "while it holds") in md
    assert ("(held 55% of the time; fixing it: 1.49x or more over this run (counted on the ticks it held; 2.50x or "
            "more while it holds, as the input takes the step's CPUs too))") in md
    assert "up to 1.49x" not in md and "up to 2.50x" not in md
