"""The sentences issue #21 found wrong, each rebuilt and checked: one story, in plain words.

Each test first builds what produced the bad sentence (a verdict state, frames, a run's marks) and
then checks what is said now. Frames come from tests/test_diagnosis_frames.py (H200 presets).
"""

from __future__ import annotations

from dataclasses import replace

from gpuwatch.diagnosis.evidence import (
    EVIDENCE_MARKS, MET, NOT_APPLICABLE, NOT_MEASURED, NOT_MET, Checks, count, status,
)
from gpuwatch.diagnosis.remedies import remedies, worker_target
from gpuwatch.diagnosis.sentence import sentence
from gpuwatch.diagnosis.signals import Signals, extract
from gpuwatch.diagnosis.stages import StageResult
from gpuwatch.diagnosis.thresholds import RX_PAGEABLE_MAX
from gpuwatch.model import verdict as v
from gpuwatch.model.values import Unsupported
from gpuwatch.report.model import PASS, WARN, CheckResult
from gpuwatch.report.model import Summary as ReportSummary
from gpuwatch.report.ranking import stage_costs
from gpuwatch.report.render_md import _remedies as md_remedies
from gpuwatch.report.sections import remedies as report_remedies
from gpuwatch.report.sections import summary
from gpuwatch.report.words import headline
from tests.test_diagnosis_frames import GEN5_X16_BPS, H200, MIB, build, last, run
from tests.test_diagnosis_stages import DECODE, IO, PAGEABLE


def _signals(knobs) -> Signals:  # noqa: ANN001
    frames = build(knobs, 8)
    return extract(frames, frames, None)


def _verdict(t: float, stage: str, speedup: float | None, remedies_: tuple[str, ...] = (), sentence_: str = "x",
             levels: tuple = ()) -> v.Verdict:
    return v.Verdict(t=t, stage=stage, confidence=0.8, sentence=sentence_, evidence=(), secondary=(),
                     speedup=speedup, remedies=remedies_, levels=levels)


def _run(parts: list[tuple[str, int, float | None, tuple[str, ...]]]):
    """Marks and verdicts of a run made of (stage, ticks, speed-up, remedies) parts."""
    marks, verdicts, t = [], [], 0.0
    for stage, ticks, up, rems in parts:
        for _ in range(ticks):
            marks.append((t, stage, 0.8))
            verdicts.append(_verdict(t, stage, up, rems, f"{stage} sentence"))
            t += 1.0
    return marks, verdicts


# -- "Contention slows the job: ." -------------------------------------------------------------

def test_a_contention_verdict_held_after_its_causes_eased_still_says_something():
    held = StageResult(stage=v.CONTENTION, fires=False, warn=False, strength=0.5, weight=0.0, evidence=(),
                       sub="", facts={"causes": (), "values": {}})
    text = sentence(v.CONTENTION, held, _signals(DECODE), None)
    assert "slows the job: ." not in text and ": ." not in text
    assert "no outside cause is above its cut" in text


def test_neighbours_queueing_is_said_as_threads_not_a_share_over_100():
    r = StageResult(stage=v.CONTENTION, fires=True, warn=True, strength=1.0, weight=1.27, evidence=(), sub="neighbours",
                    facts={"causes": ("neighbours",), "values": {"neighbours": 1.27}, "others_cpu": 1.4,
                           "usable": 2, "delay": 1.27})
    text = sentence(v.CONTENTION, r, _signals(DECODE), None)
    assert "127 %" not in text and "1.27 threads ready to run" in text and "2 CPUs" in text


def test_a_job_that_exited_has_its_gpu_stall_said_in_the_past():
    """run25_lightning's last ticks read "Not training: the job exited (process 1680). The GPU also
    idles ~0.2 s every ~0.6 s.": a GPU said to idle now, beside a job that is gone."""
    exited = StageResult(stage=v.IDLE, fires=True, warn=False, strength=1.0, weight=0.0, evidence=(), sub="exited")
    text = sentence(v.IDLE, exited, _signals(DECODE), v.Stall(period_s=0.61, idle_s=0.2, coincides_with=None))
    assert "also idles" not in text
    assert "While it ran, the GPU idled ~0.2 s every ~0.6 s." in text
    running = StageResult(stage=v.GPU_BOUND, fires=True, warn=False, strength=1.0, weight=0.0, evidence=())
    assert "The GPU also idles ~0.2 s every ~0.6 s." in \
        sentence(v.GPU_BOUND, running, _signals(DECODE), v.Stall(period_s=0.61, idle_s=0.2, coincides_with=None))


# -- "decode" only where a decoder was seen ---------------------------------------------------------

def test_the_cpu_prep_sentences_say_decode_only_on_a_decoder_seen():
    """An inline load (no workers to sample) and a worker stage seen without stacks said 'CPU decode'
    with no decoder frame behind it; a tokenising job's workers decode nothing."""
    inline = StageResult(stage=v.DECODE, fires=True, warn=True, strength=1.0, weight=0.6, evidence=(), sub="inline",
                         facts={"inline": 0.6, "main_detail": "Documents.__getitem__"})
    blind = StageResult(stage=v.DECODE, fires=True, warn=True, strength=1.0, weight=0.6, evidence=(), sub="no_stacks",
                        facts={"worker_cpu": 0.95, "workers": 2})
    for r in (inline, blind):
        text = sentence(v.DECODE, r, _signals(DECODE), None)
        assert "decod" not in text.lower(), text
    assert "main thread loads and prepares each batch itself 60 % of the time (most often in Documents.__getitem__)" in \
        sentence(v.DECODE, inline, _signals(DECODE), None)


def test_the_worker_busy_evidence_does_not_claim_decoding():
    """Its share counts every computing worker sample, a tokeniser's too: it read 'worker samples
    decoding or transforming' on jobs that decode nothing."""
    from gpuwatch.diagnosis.input_stages import decode

    busy = next(e for e in decode(_signals(DECODE)).evidence if e.signal == "worker_busy")
    assert busy.what.startswith("stack samples of the workers computing")


# -- remedies that suggest what is already true ---------------------------------------------------

def test_no_raise_num_workers_from_1_toward_1():
    r = StageResult(stage=v.DECODE, fires=True, warn=True, strength=1.0, weight=0.9, evidence=(), sub="",
                    facts={"workers": 1.0, "usable": 2, "worker_cpu": 0.95})
    text = " ".join(remedies(v.DECODE, r, _signals(DECODE)))
    assert "toward 1" not in text and "from 1" not in text
    # one worker fills the 2 CPUs only with the training process beside it, and the sentence says so
    assert ("The 2 usable CPUs are already full (the 1 worker uses 0.95 core, the training process and any other "
            "processes the rest)") in text, text


def test_a_worker_count_is_never_raised_to_itself_and_plurals_agree():
    r = StageResult(stage=v.DECODE, fires=True, warn=True, strength=1.0, weight=0.9, evidence=(), sub="",
                    facts={"workers": 2.0, "usable": 4, "worker_cpu": 0.95})
    text = " ".join(remedies(v.DECODE, r, _signals(DECODE)))
    assert "Raise num_workers from 2 toward 3: 1 usable CPU is free" in text
    assert worker_target(2) == 1 and worker_target(16) == 15 and worker_target(None) is None


def test_the_report_suggests_the_same_worker_count_as_the_verdict_and_says_it_once():
    verdict = last(replace(DECODE, workers=2, usable=16, cpu_count=16))
    stage_text = " ".join(verdict.remedies)
    assert "toward 15" in stage_text
    marks, verdicts = _run([(v.DECODE, 10, 5.0, verdict.remedies)])
    check = CheckResult("workers_vs_cores", "DataLoader workers fit the CPUs", WARN, "far fewer workers",
                        "raise num_workers toward 15")
    got = report_remedies(marks, verdicts, [check])
    assert [r.check for r in got if r.check] == []  # the stage remedy already says it
    assert not any("`" in line for line in md_remedies(_report(got)))


def test_idle_is_not_a_remedy_and_speed_ups_are_never_not_estimated_numbers():
    marks, verdicts = _run([(v.GPU_MEMORY, 8, None, ("Use channels_last",)), (v.IDLE, 2, None, ()),
                            (v.LAUNCH, 3, 8.6, ("Capture the step in CUDA graphs",))])
    got = report_remedies(marks, verdicts, [])
    assert {r.stage for r in got} == {v.GPU_MEMORY, v.LAUNCH}
    md = "\n".join(md_remedies(_report(got)))
    assert "not estimated while" not in md and "up to not estimated" not in md
    assert "Nothing to fix" not in md
    assert "speed-up not estimated" in md  # said once, in words, for the stage without one
    idle = last(replace(DECODE, gpu="idle", main_labels={"other": 1.0}, main_cpu=0.0, workers=0))
    assert all("Nothing to fix" not in r for r in idle.remedies)


def _report(rems):
    from types import SimpleNamespace

    return SimpleNamespace(remedies=rems, summary=SimpleNamespace(snapshot=False))


# -- the headline: the stage that cost the job most ---------------------------------------------

def test_the_headline_is_the_costliest_stage_and_the_first_remedy_is_for_it():
    """Issue #21: Contention held 52 % at 1.1x, Disk 48 % at 20x; the report led with Contention
    while its remedies ranked Disk first."""
    marks, verdicts = _run([(v.CONTENTION, 13, 1.1, ("Move the other processes",)),
                            (v.IO, 12, 20.0, ("Test the storage",))])
    costs = stage_costs(marks, verdicts)
    m = summary(marks, verdicts, costs)
    assert m.stage == v.IO
    rems = report_remedies(marks, verdicts, [], costs)
    assert rems[0].stage == v.IO
    assert m.most_held is not None and m.most_held.stage == v.CONTENTION
    title, rest = headline(m)
    assert title == "I/O" and "cost the job most" in rest and "Most of the time (52%), at less cost to the run, the verdict was Contention" in rest
    assert f"{rems[0].speedup_run:.2f}x" in rest  # the headline's number is the remedy's number


def test_a_healthy_run_with_a_warm_up_tick_is_headlined_healthy():
    marks, verdicts = _run([(v.LAUNCH, 1, 20.0, ("Capture the step in CUDA graphs",)),
                            (v.GPU_BOUND, 19, None, ("Healthy: the GPU is the limit",))])
    m = summary(marks, verdicts)
    assert m.stage == v.GPU_BOUND and m.speedup_run is None


def test_an_unestimated_bottleneck_that_held_most_of_the_run_is_not_outranked_by_a_tick():
    marks, verdicts = _run([(v.H2D, 16, None, ("Pin host memory",)), (v.LAUNCH, 3, 20.0, ("CUDA graphs",))])
    assert summary(marks, verdicts).stage == v.H2D


def test_a_stage_the_tui_showed_at_warning_is_named_in_the_report():
    warn = ((v.DECODE, v.LEVEL_WARNING),)
    marks = [(float(t), v.CONTENTION, 0.8) for t in range(10)]
    verdicts = [_verdict(float(t), v.CONTENTION, 1.2, ("x",), levels=warn) for t in range(10)]
    m = summary(marks, verdicts)
    assert [w.stage for w in m.warnings] == [v.DECODE]
    assert "CPU prep 100% of the time" in headline(m)[1]


def test_the_headline_sentence_is_one_whose_readings_held_the_stage():
    marks, verdicts = _run([(v.CONTENTION, 5, 1.2, ())])
    held = "Contention slows the job: steal 4 % (the latest readings are weaker; holding this verdict until another stage clearly wins)"
    verdicts[3:] = [replace(x, sentence=held) for x in verdicts[3:]]
    verdicts[:2] = [replace(x, sentence="Contention slows the job: the hypervisor steals 5 % of the CPU.")
                    for x in verdicts[:2]]
    verdicts[2] = replace(verdicts[2], sentence="Contention slows the job: the hypervisor steals 6 % of the CPU.")
    assert summary(marks, verdicts).sentence == "Contention slows the job: the hypervisor steals 6 % of the CPU."


def test_an_empty_run_says_so():
    m = summary([], [])
    assert isinstance(m, ReportSummary) and "nothing to judge" in m.sentence


# -- one pageable cut for the verdict and the report ---------------------------------------------

def test_copies_at_35_percent_of_the_link_are_pageable_for_the_verdict_too():
    """The H200 capture of 2026-12-02 read pageable copies at 31-35 % of the link; the verdict's old
    0.30 cut called them pinned while the report's 0.60 said pin your memory."""
    H200["pageable_fast"] = (39, 0, 0.0, 0.0, 0.0, 0.0, 0.4, 0.35 * GEN5_X16_BPS / MIB)
    try:
        verdict = last(replace(PAGEABLE, gpu="pageable_fast"))
    finally:
        del H200["pageable_fast"]
    assert verdict.stage == v.H2D
    assert "look pageable" in verdict.sentence and "Pin host memory" in " ".join(verdict.remedies)
    assert 0.35 < RX_PAGEABLE_MAX < 0.94


# -- evidence marks: met / not met / not measured / does not apply -------------------------------

def test_evidence_marks_tell_the_four_states_apart_and_never_show_a_key():
    c = Checks(v.IO)
    c.check("steal", 0.06, 0.05, ">=", "CPU steal")
    c.check("psi_io", 0.01, 0.10, ">=", "I/O pressure")
    c.check("disk_busy", None, 0.8, ">=", "disk busy")
    c.check("worker_cpu", None, 0.5, "<", "CPU per DataLoader worker", unit="cores", na="num_workers=0")
    got = [status(e) for e in c.items]
    assert got == [MET, NOT_MET, NOT_MEASURED, NOT_APPLICABLE]
    assert len({EVIDENCE_MARKS[s] for s in got}) == 4 and "✓" not in EVIDENCE_MARKS.values()
    assert c.items[0].text == "CPU steal: 6 % (needs at least 5 %)"
    assert c.items[3].text == "CPU per DataLoader worker: does not apply (num_workers=0)"


def test_a_job_without_workers_shows_worker_signals_as_not_applying():
    verdict = last(replace(IO, workers=0, main_labels={"inline_load": 0.9, "dispatch": 0.1}))
    items = [e for e in verdict.evidence if e.signal.startswith("worker_")]
    assert items and all(status(e) == NOT_APPLICABLE for e in items if e.value is None)


def test_a_hysteresis_eased_cut_says_both_numbers():
    c = Checks(v.CONTENTION, relax=1.0)
    from gpuwatch.diagnosis.evidence import REQ

    c.check("steal", 0.04, 0.05, ">=", "CPU steal", kind=REQ)
    # The second cut repeats its comparison: "; 3.8 % while this stage holds" read as a measured value
    # ("GPU kernel-active time: 33 % (needs under 90 %; 95 % while this stage holds the verdict)").
    assert c.items[0].text == "CPU steal: 4 % (needs at least 5 %; at least 3.8 % while this stage holds the verdict)"
    challenger = Checks(v.CONTENTION, relax=-1.0)
    challenger.check("gpu_busy", 0.33, 0.90, "<", "GPU kernel-active time", kind=REQ)
    assert challenger.items[0].text == \
        "GPU kernel-active time: 33 % (needs under 90 %; under 85 % to take the verdict over)"


def test_a_reading_that_rounds_onto_its_cut_says_the_decimals_that_tell_them_apart():
    """The reading is said in whole percent and the cut to a tenth: a reading just under or over its
    cut could read on the wrong side of it. On the H200 replays "GPU utilization (NVML, copies
    included): 2 % (needs under 2 %)" was marked met, "main thread waiting for a batch: 22 % (needs
    under 22.2 %)" not met, and the drill-down's legend read "22 % ≮ 22.2 %"."""
    c = Checks(v.IDLE)
    c.check("util", 0.0196, 0.02, "<", "GPU utilization")
    c.check("wait", 0.2226, 2 / 9, "<", "main thread waiting for a batch")
    c.check("sm", 0.6999, 0.70, ">=", "SMs active")
    c.check("cpu", 0.4996, 0.50, "<", "CPU per DataLoader worker", unit="cores")
    c.check("busy", 0.90, 0.90, ">=", "GPU kernel-active time")  # equal: nothing to tell apart
    c.check("tensor", 0.31, 0.20, "<=", "tensor pipes active")  # far from the cut: as before
    assert [e.text for e in c.items] == [
        "GPU utilization: 1.96 % (needs under 2 %)",
        "main thread waiting for a batch: 22.3 % (needs under 22.2 %)",
        "SMs active: 69.99 % (needs at least 70 %)",
        "CPU per DataLoader worker: 0.4996 core (needs under 0.50 core)",
        "GPU kernel-active time: 90 % (needs at least 90 %)",
        "tensor pipes active: 31 % (needs at most 20 %)",
    ]


def test_every_reading_of_the_h200_replays_compares_with_its_cut_as_the_evidence_says():
    """Over two H200 replays, each item's reading and cut, read back as numbers from its text, compare
    as the item does (met or not); some of them needed the decimals (the check is not idle)."""
    import operator
    import re
    from pathlib import Path

    from gpuwatch.diagnosis.evidence import fmt
    from gpuwatch.replay import load_frames
    from gpuwatch.report.gather import from_frames

    ops = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt}
    # the reading, the cut, and the cut in force where hysteresis moved it ("; under 95 % while ...")
    said_cut = re.compile(r": (-?[\d.]+)[^(]*\(needs [a-z ]+ (-?[\d.]+)[^;)]*(?:; [a-z ]+ (-?[\d.]+))?")
    of_them = re.compile(r": (\d+) of (\d+) samples? \(needs [a-z ]+ (\d+)[;)]")
    wrong, finer = [], 0
    for name in ("run25_lightning_persistent", "field_checkpoint"):
        path = Path(__file__).parent / "data" / "h200" / f"{name}.jsonl.gz"
        for vd in from_frames(load_frames(str(path), lambda bad: None)).verdicts:
            for e in vd.evidence:
                if e.value is None or e.threshold is None or e.op not in ops or e.unit in ("B/s", ""):
                    continue
                finer += fmt(e.value, e.unit) not in e.text
                by_samples = of_them.search(e.text)
                if by_samples:  # a cut that is a count of the samples the share is of: counts compared
                    got, need = int(by_samples[1]), int(by_samples[3])
                    if ops[e.op](got, need) != e.supports:
                        wrong.append((name, e.text, e.supports))
                    continue
                m = said_cut.search(e.text)
                assert m, e.text
                if ops[e.op](float(m[1]), float(m[3] or m[2])) != e.supports:
                    wrong.append((name, e.text, e.supports))
    assert wrong == []
    assert finer > 0


def test_counts_are_plural_only_when_they_should_be():
    assert count(1, "sample") == "1 sample" and count(14, "sample") == "14 samples"
    assert count(1, "training process", "training processes") == "1 training process"
    assert count(1.0, "CPU") == "1 CPU" and count(0, "worker") == "0 workers"


def test_the_report_workers_check_says_one_worker_in_the_singular():
    from gpuwatch.report.checks_host import check_workers

    frames = build(replace(DECODE, workers=1, usable=2, cpu_count=2), 4)
    c = check_workers(frames, run(frames), Unsupported("not probed"))
    assert c.status in (PASS, WARN) and "1 DataLoader worker for 1 training process on 2 usable CPUs" in c.reason


def test_no_stage_is_named_beside_collecting_evidence():
    """field_tokenize's second tick, 1 main-thread stack sample: the line read "Unknown: Collecting
    evidence: 1 stack sample of the main thread so far, 3 needed before a stage is named. Also: CPU
    prep, PCIe." with both boxes at warning: the stages the sentence says it cannot name yet, named
    on that one sample. A stage proved by the stacks waits for the samples as the verdict does."""
    from pathlib import Path

    from gpuwatch.analysis import Analysis
    from gpuwatch.replay import load_frames

    analysis = Analysis()
    path = Path(__file__).parent / "data" / "h200" / "field_tokenize.jsonl.gz"
    collecting = [vd for vd in (analysis.update(f) for f in load_frames(str(path)))
                  if "stack sample of the main thread so far" in vd.sentence]
    assert collecting, "the recording starts with too few stack samples"
    for vd in collecting:
        assert vd.stage == v.UNKNOWN and vd.secondary == ()
        assert dict(vd.levels) == dict.fromkeys(v.PIPELINE, v.LEVEL_OK)


def test_a_share_s_eased_cut_is_never_below_zero():
    """field_checkpoint's first saves, Disk drill-down: "main thread saving checkpoints: 33 % (needs
    at least 20 %; at least -12.7 % while this stage holds the verdict)". The checkpoint share's
    hold band is two standard errors over few samples, wider than the cut; a share is never
    negative, so the eased cut is 0 (the same verdicts: any share met it already)."""
    from pathlib import Path

    from gpuwatch.analysis import Analysis
    from gpuwatch.diagnosis.evidence import REQ
    from gpuwatch.replay import load_frames

    c = Checks(v.IO, relax=1.0)
    assert c.check("checkpoint", 0.33, 0.20, ">=", "main thread saving checkpoints", kind=REQ, band=0.33) is True
    assert c.items[0].threshold == 0.0
    assert c.items[0].text == \
        "main thread saving checkpoints: 33 % (needs at least 20 %; at least 0 % while this stage holds the verdict)"
    analysis = Analysis()
    path = Path(__file__).parent / "data" / "h200" / "field_checkpoint.jsonl.gz"
    shares = [e for f in load_frames(str(path)) for e in analysis.update(f).evidence
              if e.unit == "%" and e.threshold is not None]
    assert [e for e in shares if e.signal == "checkpoint"]
    assert not [e.text for e in shares if e.threshold < 0 or "-" in e.text.split("(needs", 1)[-1]]


def test_a_stage_that_fires_while_another_holds_the_verdict_is_a_warning_not_ok():
    """field_checkpoint at 00:08: the verdict stays Mostly GPU-bound (a new stage must hold for
    a while), and the Disk drill-down showed every item met ("GPU kernel-active time: 81 % (needs
    under 90 %)", "main thread saving checkpoints: 25 % (needs at least 20 %)", the saves) under
    "1 · Disk — ✓ ok", with no "Also: Disk": the stage the evidence picks was left out of the
    warnings because it was the evidence's pick, not the verdict's."""
    from pathlib import Path

    from gpuwatch.analysis import Analysis
    from gpuwatch.replay import load_frames

    analysis = Analysis()
    path = Path(__file__).parent / "data" / "h200" / "field_checkpoint.jsonl.gz"
    hidden = []
    for f in load_frames(str(path)):
        vd = analysis.update(f)
        disk = [e for e in vd.evidence if e.stage == v.IO]
        if vd.stage not in (v.IO, v.IDLE) and len(disk) >= 3 and all(status(e) == MET for e in disk):
            hidden.append((f.seq, vd.stage, dict(vd.levels)[v.IO], vd.secondary))
    assert hidden, "the recording has a tick where Disk's evidence is all met under another verdict"
    assert all(level == v.LEVEL_WARNING and v.IO in sec for _, _, level, sec in hidden), hidden


def test_a_stall_during_checkpoint_saves_says_what_each_of_its_two_timings_is_read_from():
    """Review 46, field_checkpoint (H200): "the GPU also idles ~1.6 s every ~4.2 s, during
    checkpoint saves ... Epochs: Checkpoint saves take 33 % of the time (~1.5 s every ~4.0 s)": one
    pattern, two figures, and saves under an "Epochs" lead. The GPU's figure now says it comes from
    its utilization samples and that the stack samples time the saves too; saves and passes alone
    take no "Epochs:" lead."""
    from pathlib import Path

    from gpuwatch.replay import load_frames
    from gpuwatch.report.gather import from_frames

    path = Path(__file__).parent / "data" / "h200" / "field_checkpoint.jsonl.gz"
    said = [vd.sentence for vd in from_frames(load_frames(str(path))).verdicts]
    both = [x for x in said if "during checkpoint saves" in x and "Checkpoint saves take" in x]
    assert both
    for x in both:
        assert ("during checkpoint saves (that from the GPU's utilization samples; the saves' own timing, from the "
                "stack samples, follows). Checkpoint saves take") in x, x
    assert not any("epochs: checkpoint" in x.lower() or "epochs: a checkpoint" in x.lower() for x in said)


def test_an_input_verdict_on_workers_that_have_since_exited_says_so():
    """Review 46, the demo: "while the 1 DataLoader worker computes" stood for three ticks beside a
    process table and a chart with no worker, once the demo's loader had ended: the verdict reads the
    last seconds. Said where the newest tick has no worker and the job does not re-create its sets
    (between two sets, the epochs clause says what happens)."""
    from pathlib import Path

    from gpuwatch.analysis import Analysis
    from gpuwatch.replay import load_frames

    analysis = Analysis()
    frames = load_frames(str(Path(__file__).parent / "data" / "demo" / "demo_cpu_decode_again.jsonl.gz"))
    gone = []
    for f in frames:
        vd = analysis.update(f)
        workers = [p for p in f.procs.processes if p.role == "worker"]
        if "The workers have exited since" in vd.sentence:
            gone.append(vd)
            assert not workers and vd.stage == v.DECODE and "DataLoader worker computes" in vd.sentence
        elif vd.stage == v.DECODE and "DataLoader worker" in vd.sentence:
            assert workers, vd.sentence
    assert gone
    restarts = Path(__file__).parent / "data" / "cpu_field" / "init_restarts.jsonl.gz"
    analysis = Analysis()
    assert not any("have exited since" in analysis.update(f).sentence for f in load_frames(str(restarts)))
