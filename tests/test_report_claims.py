"""Report sentences that claim only what was measured: the headline names a best fix only where one is
expected to gain something measurable (an adversarial trial's Lightning job read "persistent workers
is expected to gain most: about 1.01x"), and stalls are not reported absent where none could be seen."""

from __future__ import annotations

from gpuwatch.diagnosis.thresholds import MIN_GAIN
from gpuwatch.model.verdict import MORE_WORKERS, PERSISTENT_WORKERS, FixGain
from gpuwatch.report.model import Summary
from gpuwatch.report.words import headline


def _text(fix: FixGain) -> str:
    m = Summary(stage="decode", title="CPU prep", share=0.4, confidence=0.8, sentence="Input-bound.",
                speedup_run=1.1, speedup_while=1.2, best_fix=fix)
    return headline(m)[1]


def test_a_fix_under_the_noise_is_not_said_to_gain_most():
    text = _text(FixGain(PERSISTENT_WORKERS, 1.01, "re-created 2 times"))
    assert "expected to gain most" not in text
    assert "None of the fixes proposed is expected to gain much: the largest estimate, for persistent workers, " \
           "is about 1.01x while the stage holds" in text


def test_a_fix_above_the_noise_is_said_to_gain_most():
    text = _text(FixGain(MORE_WORKERS, MIN_GAIN + 0.25, "workers at a core each"))
    assert "Of the fixes proposed, more workers is expected to gain most: about 1.30x while the stage holds" in text


def test_a_partial_figure_is_not_called_no_gain():
    # a measured part only: the fix may gain more where no signal shows it (FixGain.partial)
    text = _text(FixGain(PERSISTENT_WORKERS, 1.02, "first batches", partial=True, more="warm-up"))
    assert "expected to gain most: about 1.02x from what was measured, maybe more," in text


def test_a_run_without_a_gpu_reading_says_stalls_were_not_looked_for():
    """A trial's CPU-only job read "The verdicts reported no periodic GPU stall": none could be seen."""
    from gpuwatch.report import NOT_RECORDED, build_report, from_frames, render_markdown
    from gpuwatch.replay import load_frames

    def stalls(path: str) -> str:
        text = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path))
        return text.split("## Periodic stalls", 1)[1].split("\n## ", 1)[0].strip()

    assert stalls("tests/data/demo/demo_cpu_exit.jsonl.gz") == (
        "Not looked for: no tick read the GPU's utilization, which periodic stalls are found in.")
    assert stalls("tests/data/h200/field_checkpoint.jsonl.gz").startswith("The GPU idled about")


def test_a_save_seen_earlier_in_the_run_is_not_said_unseen():
    """tests/data/cpu_field/accum_ckpt.jsonl.gz (README there): a job saving a 184 MB checkpoint every
    ~22 s, 0.5 s each. The JSON showed the first save as 3 % of its minute; by the end of the
    recording it was under the 2 % cut, and the report said "no ... checkpoint save was seen"."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown

    got = from_frames(load_frames("tests/data/cpu_field/accum_ckpt.jsonl.gz"))
    assert not got.verdicts[-1].phases and any(p.kind == "checkpoint" for v in got.verdicts for p in v.phases)
    text = render_markdown(build_report(got, NOT_RECORDED, "replay", path="accum_ckpt.jsonl.gz"))
    section = text.split("## Epoch structure", 1)[1].split("##", 1)[0]
    assert "was seen in the last minute" not in section.replace("No worker re-creation was seen in the last minute", "")
    assert "checkpoint save was named in it (one under 2% of the minute is left out" in section
    # one save is said as one, with no share of the time beside it (sentence.epochs), and no duration:
    # one stack sample fell in it, which a 0.05 s save gives as well as a 0.5 s one (trial 27)
    assert 'the verdict said: "A checkpoint save was seen once in 25 s."' in section
    # the run is 44 s: all of it is its last minute, so "or before it" could not be (review 28)
    assert "The run's last verdict no longer names it: under 2% of the 44 s watched." in section
    assert "before it" not in section


def test_a_remedy_quoting_a_hostile_frame_is_escaped_in_the_markdown_report():
    """Remedies quote the job's own frames ("the workers are most often in X"): rendered raw, a crafted
    function name made a link or HTML (trial 24 saw the verdict escaped and the remedy not)."""
    from markdown_it import MarkdownIt

    from gpuwatch.model import stacks as lb
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown
    from tests.test_diagnosis_frames import Knobs, build

    evil = "[x](http://evil.example) <img src=x onerror=alert(1)> _raw_fft"
    k = Knobs(gpu=None, cpu_count=2, usable=2, workers=2, main_cpu=0.05, worker_cpu=0.95,
              main_labels={lb.DATA_WAIT: 1.0}, worker_labels={lb.W_BUSY: 1.0}, worker_detail={lb.W_BUSY: evil})
    got = from_frames(build(k, 20))
    text = render_markdown(build_report(got, NOT_RECORDED, "replay", path="x.jsonl.gz"))
    remedies = text.split("## Remedies", 1)[1].split("\n## ", 1)[0]
    assert "onerror" in remedies and "--pid WORKER_PID" in remedies, remedies  # the remedy quoting it is there
    tokens = []
    for t in MarkdownIt("commonmark").enable("table").parse(remedies):
        tokens += [t, *(t.children or [])]
    assert not [t for t in tokens if t.type in ("html_inline", "html_block", "link_open")], \
        [t for t in tokens if t.type in ("html_inline", "html_block", "link_open")]


def test_a_re_creation_that_left_the_minute_is_said_to_be_before_it():
    """Review: H100 run 37's switch job (102 s) read "At 84 s into the run ... 'A new set of DataLoader
    workers replaced the last one (once in 60 s).' Over the run's last minute, which holds that
    moment, that is under 2% of the time", while re-creations are named at any share: it had left
    the minute."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown

    path = "bench/results/2026-12-05-h100/run37/accuracy/switch.jsonl.gz"
    text = render_markdown(build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path))
    section = text.split("## Epoch structure", 1)[1].split("##", 1)[0]
    assert "replaced the last one" in section and "That was before the last minute watched." in section, section
    assert "under 2% of that minute" not in section


def test_a_largest_share_under_half_is_not_called_most_of_the_time():
    """Review 28: H100 run 37's switch job read "Most of the time (25%) the verdict was GPU-bound",
    beside PCIe and CPU prep at 25 % each."""
    from gpuwatch.replay import load_frames
    from gpuwatch.report import NOT_RECORDED
    from gpuwatch.report.build import build_report
    from gpuwatch.report.gather import from_frames
    from gpuwatch.report.render_md import render_markdown

    path = "bench/results/2026-12-05-h100/run37/accuracy/switch.jsonl.gz"
    r = build_report(from_frames(load_frames(path)), NOT_RECORDED, "replay", path=path)
    assert r.summary.most_held is not None and r.summary.most_held.share < 0.5
    verdict = render_markdown(r).split("## Verdict", 1)[1].split("\n## ", 1)[0]
    # healthy costs the run nothing: no cost is said of it (review 40: "at less cost to the run")
    assert (f"For the largest share of the time ({r.summary.most_held.share:.0%}) the verdict was Healthy, "
            "GPU-bound: ") in verdict, verdict
    assert "Most of the time" not in verdict


def test_a_stage_held_most_at_the_same_figure_is_not_said_to_cost_less():
    """Trial 28: "Contention cost the job most: ... about 1.12x faster ... Most of the time (66%) the
    verdict was Disk, which cost the run less", with Disk's own line at "up to 1.12x over this run":
    the ranking read unrounded costs the words do not show."""
    from gpuwatch.report.model import StageShare, Summary
    from gpuwatch.report.words import headline

    def said(disk: float | None) -> str:
        m = Summary(stage="contention", title="Contention", share=0.34, confidence=0.8, sentence="",
                    speedup_run=1.1249, speedup_while=1.4,
                    most_held=StageShare("io", "I/O", 0.66, "Input-bound on storage: reads.", speedup_run=disk))
        return headline(m)[1]

    assert ("Most of the time (66%), at about the same cost to the run (fixing it: 1.12x over the run), the verdict "
            "was I/O. Input-bound on storage: reads.") in said(1.1201)
    assert "Most of the time (66%), at less cost to the run, the verdict was I/O. Input-bound on storage: reads." \
        in said(1.05)
    # no figure: its cost is said to have none, and the headline's "most" is among the figures (review 48)
    assert "Most of the time (66%), at a cost not estimated, the verdict was I/O. Input-bound on storage: reads." \
        in said(None)
    assert said(None).startswith("cost the job most of what was estimated: it held the verdict 34%")
    assert said(1.05).startswith("cost the job most: it held")
    # nor where the headline's own cost has no figure (review 41)
    m = Summary(stage="contention", title="Contention", share=0.34, confidence=0.8, sentence="", speedup_run=None,
                speedup_while=None, most_held=StageShare("io", "I/O", 0.66, "Input-bound on storage: reads.",
                                                         speedup_run=1.3))
    assert "Most of the time (66%) the verdict was I/O. Input-bound on storage: reads." in headline(m)[1]


def test_a_run_figure_counted_on_some_ticks_is_no_ceiling():
    """Review 44: "fixing it could make the whole run up to 1.75x faster" for CPU prep held 55 % of
    t35_blas_workers, whose workers, unoversubscribed, ran 5.4x: the figure counts the held ticks
    alone, so it is said as such, with the ceiling while it holds."""
    part = Summary(stage="decode", title="CPU prep", share=0.55, confidence=0.8, sentence="Input-bound.",
                   speedup_run=1.75, speedup_while=4.7)
    text = headline(part)[1]
    assert "up to 1.75x" not in text
    assert ("fixing it could make the whole run 1.75x faster, counting only the ticks it held; up to 4.70x "
            "while it holds, and its cause may weigh on the other ticks too (mean confidence 0.80).") in text
    whole = Summary(stage="decode", title="CPU prep", share=1.0, confidence=0.8, sentence="Input-bound.",
                    speedup_run=4.7, speedup_while=4.7)
    assert "fixing it could make the whole run up to 4.70x faster (mean" in headline(whole)[1]
    contended = Summary(stage="contention", title="Contention", share=0.42, confidence=0.8, sentence="Slow.",
                        speedup_run=1.27, speedup_while=2.0)
    assert "1.27x faster, counting only the ticks it held; about 2.00x while it holds" in headline(contended)[1]
